//! A small namespace-aware XML tree on the `xmlparser` tokenizer, for what
//! cameras answer: elements are matched by namespace URI and local name,
//! because each vendor binds its own prefixes (`tt:`, `ns2:`, a default
//! namespace). Bounded for untrusted input: no DTDs (so no entity expansion),
//! nesting and element count capped.

use xmlparser::{ElementEnd, Token, Tokenizer};

/// The deepest nesting accepted; its error message says the number.
const MAX_DEPTH: usize = 64;
/// The most elements accepted in one document (a GetProfiles answer with
/// 32 profiles holds about 2,000); its error message says the number.
const MAX_ELEMENTS: usize = 20_000;

const XML_NAMESPACE: &str = "http://www.w3.org/XML/1998/namespace";

#[derive(Debug, Default)]
pub struct Element {
    /// The namespace URI ("" for none).
    pub namespace: String,
    pub name: String,
    /// Unprefixed attributes, namespace declarations excluded: (name, value).
    attributes: Vec<(String, String)>,
    /// Namespace declarations made on this element: (prefix, URI).
    declared: Vec<(String, String)>,
    /// Text and CDATA directly inside, entities decoded.
    text: String,
    pub children: Vec<Element>,
}

impl Element {
    pub fn is(&self, namespace: &str, name: &str) -> bool {
        self.name == name && self.namespace == namespace
    }

    /// The first child element `namespace`:`name`.
    pub fn child(&self, namespace: &str, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.is(namespace, name))
    }

    /// Each child element `namespace`:`name`.
    pub fn children_named<'a>(
        &'a self,
        namespace: &'a str,
        name: &'a str,
    ) -> impl Iterator<Item = &'a Element> {
        self.children.iter().filter(move |c| c.is(namespace, name))
    }

    /// The element reached by following `path` from here, child by child.
    pub fn path(&self, path: &[(&str, &str)]) -> Option<&Element> {
        path.iter()
            .try_fold(self, |element, (ns, name)| element.child(ns, name))
    }

    #[cfg(test)]
    /// The first descendant `namespace`:`name`, depth first.
    pub fn find(&self, namespace: &str, name: &str) -> Option<&Element> {
        self.children
            .iter()
            .find_map(|c| match c.is(namespace, name) {
                true => Some(c),
                false => c.find(namespace, name),
            })
    }

    /// An unprefixed attribute's value.
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The namespace URI this element binds `prefix` to, if it declares it.
    #[cfg(test)]
    pub fn declares(&self, prefix: &str) -> Option<&str> {
        self.declared
            .iter()
            .find(|(p, _)| p == prefix)
            .map(|(_, u)| u.as_str())
    }

    /// Its text, surrounding white space trimmed.
    pub fn text(&self) -> &str {
        self.text.trim()
    }
}

/// A start tag whose attributes are still being read.
struct Open<'a> {
    prefix: &'a str,
    local: &'a str,
    attributes: Vec<(&'a str, &'a str, String)>,
}

/// The root element of `text`, or why it is not a document this reads.
pub fn parse(text: &str) -> Result<Element, &'static str> {
    let text = text.trim_start_matches('\u{feff}').trim_start();
    // Each element on the stack; the scopes' namespace declarations, in order.
    let mut stack: Vec<Element> = Vec::new();
    let mut scopes: Vec<(String, String)> = Vec::new();
    let mut open: Option<Open> = None;
    let mut root: Option<Element> = None;
    let mut count = 0;
    for token in Tokenizer::from(text) {
        let token = token.map_err(|_| "not XML")?;
        match token {
            Token::DtdStart { .. } | Token::EmptyDtd { .. } | Token::EntityDeclaration { .. } => {
                return Err("it has a DTD");
            }
            Token::ElementStart { prefix, local, .. } => {
                count += 1;
                if count > MAX_ELEMENTS {
                    return Err("over 20,000 elements");
                }
                if stack.len() >= MAX_DEPTH {
                    return Err("nested deeper than 64");
                }
                open = Some(Open {
                    prefix: prefix.as_str(),
                    local: local.as_str(),
                    attributes: Vec::new(),
                });
            }
            Token::Attribute {
                prefix,
                local,
                value,
                ..
            } => {
                let Some(open) = open.as_mut() else {
                    return Err("not XML");
                };
                let value = decode(value.as_str())?;
                open.attributes
                    .push((prefix.as_str(), local.as_str(), value));
            }
            Token::ElementEnd { end, .. } => match end {
                ElementEnd::Open | ElementEnd::Empty => {
                    let Some(Open {
                        prefix,
                        local,
                        attributes,
                    }) = open.take()
                    else {
                        return Err("not XML");
                    };
                    let mut element = Element {
                        name: local.to_owned(),
                        ..Element::default()
                    };
                    for (p, l, value) in attributes {
                        match (p, l) {
                            ("xmlns", _) => element.declared.push((l.to_owned(), value)),
                            ("", "xmlns") => element.declared.push((String::new(), value)),
                            ("", _) => element.attributes.push((l.to_owned(), value)),
                            // Prefixed attributes (xml:lang, s:mustUnderstand)
                            // are nothing ONVIF's answers need.
                            _ => {}
                        }
                    }
                    scopes.extend(element.declared.iter().cloned());
                    element.namespace = resolve(&scopes, prefix)?;
                    if end == ElementEnd::Empty {
                        scopes.truncate(scopes.len() - element.declared.len());
                        close(&mut stack, &mut root, element);
                    } else {
                        stack.push(element);
                    }
                }
                ElementEnd::Close(prefix, local) => {
                    let Some(element) = stack.pop() else {
                        return Err("not XML");
                    };
                    // The tokenizer does not pair tags: a mismatch is caught here.
                    let namespace = resolve(&scopes, prefix.as_str())?;
                    if element.name != local.as_str() || element.namespace != namespace {
                        return Err("not XML (an end tag closes another element)");
                    }
                    scopes.truncate(scopes.len() - element.declared.len());
                    close(&mut stack, &mut root, element);
                }
            },
            Token::Text { text } | Token::Cdata { text, .. } => {
                let decoded = match token {
                    Token::Cdata { .. } => text.as_str().to_owned(),
                    _ => decode(text.as_str())?,
                };
                match stack.last_mut() {
                    Some(element) => element.text.push_str(&decoded),
                    None if decoded.trim().is_empty() => {}
                    None => return Err("not XML (text outside the root element)"),
                }
            }
            Token::Declaration { .. }
            | Token::ProcessingInstruction { .. }
            | Token::Comment { .. }
            | Token::DtdEnd { .. } => {}
        }
    }
    match root {
        Some(root) if stack.is_empty() => Ok(root),
        _ if count == 0 => Err("not XML (no element)"),
        _ => Err("not XML (it ends before its last element closes)"),
    }
}

/// Hangs a complete element on its parent, or makes it the root.
fn close(stack: &mut [Element], root: &mut Option<Element>, element: Element) {
    match stack.last_mut() {
        Some(parent) => parent.children.push(element),
        None => *root = Some(element),
    }
}

/// The namespace URI `prefix` is bound to in `scopes` (innermost last).
fn resolve(scopes: &[(String, String)], prefix: &str) -> Result<String, &'static str> {
    if prefix == "xml" {
        return Ok(XML_NAMESPACE.into());
    }
    match scopes.iter().rev().find(|(p, _)| p == prefix) {
        Some((_, uri)) => Ok(uri.clone()),
        None if prefix.is_empty() => Ok(String::new()),
        None => Err("a namespace prefix is not declared"),
    }
}

/// `raw` with its entity and character references replaced.
fn decode(raw: &str) -> Result<String, &'static str> {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let Some(end) = rest[at..].find(';') else {
            return Err("not XML");
        };
        let name = &rest[at + 1..at + end];
        let c = match name {
            "lt" => Some('<'),
            "gt" => Some('>'),
            "amp" => Some('&'),
            "quot" => Some('"'),
            "apos" => Some('\''),
            _ => match name.strip_prefix('#') {
                Some(hex) if hex.starts_with('x') => u32::from_str_radix(&hex[1..], 16).ok(),
                Some(decimal) => decimal.parse().ok(),
                None => None,
            }
            .and_then(char::from_u32),
        };
        let Some(c) = c else {
            return Err("not XML (an unknown reference)");
        };
        out.push(c);
        rest = &rest[at + end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn namespaces_resolve_by_uri_not_prefix() {
        let doc = r#"<?xml version="1.0"?>
            <a:Root xmlns:a="urn:a" xmlns="urn:default">
              <Child id="1">one</Child>
              <b:Child xmlns:b="urn:a" id="2"> two </b:Child>
              <a:Other xmlns:a="urn:other"><a:Deep/></a:Other>
              <Plain xmlns="">x</Plain>
            </a:Root>"#;
        let root = parse(doc).unwrap();
        assert!(root.is("urn:a", "Root"));
        assert_eq!(root.child("urn:default", "Child").unwrap().text(), "one");
        let both: Vec<_> = root.children_named("urn:a", "Child").collect();
        assert_eq!(both.len(), 1);
        assert_eq!(both[0].attribute("id"), Some("2"));
        assert_eq!(both[0].text(), "two");
        assert!(
            root.path(&[("urn:other", "Other"), ("urn:other", "Deep")])
                .is_some()
        );
        assert!(root.find("urn:other", "Deep").is_some());
        assert!(root.find("urn:a", "Deep").is_none());
        assert!(root.child("", "Plain").is_some());
        assert_eq!(root.declares("a"), Some("urn:a"));
    }

    #[test]
    fn references_and_cdata_decode() {
        let root =
            parse("<r a='&lt;&gt;&amp;&quot;&apos;&#65;&#x42;'>x &amp; y<![CDATA[ <&amp;> ]]></r>")
                .unwrap();
        assert_eq!(root.attribute("a"), Some("<>&\"'AB"));
        assert_eq!(root.text, "x & y <&amp;> ");
    }

    #[test]
    fn bad_input_is_an_error_not_a_panic() {
        let deep = "<a>".repeat(MAX_DEPTH + 1) + &"</a>".repeat(MAX_DEPTH + 1);
        let deep_enough = "<a>".repeat(MAX_DEPTH) + &"</a>".repeat(MAX_DEPTH);
        assert!(parse(&deep_enough).is_ok());
        let many = format!("<r>{}</r>", "<e/>".repeat(MAX_ELEMENTS));
        let cases: &[(&str, &str)] = &[
            ("", "no element"),
            ("   ", "no element"),
            ("garbage", "not XML"),
            ("HTTP/1.1 200 OK", "not XML"),
            ("{\"json\": true}", "not XML"),
            ("<a><b></a></b>", "closes another"),
            ("<a><b>", "ends before"),
            ("<s:Envelope xmlns:s=\"urn:s\"><s:Body>", "ends before"),
            ("<a>", "ends before"),
            ("<a/><b/>", "not XML"),
            ("<a/>text", "not XML"),
            ("<p:a/>", "not declared"),
            ("<a>&bogus;</a>", "unknown reference"),
            ("<a>&#xD800;</a>", "unknown reference"),
            ("<a>&amp</a>", "not XML"),
            ("<!DOCTYPE a [<!ENTITY x \"yyyy\">]><a>&x;</a>", "DTD"),
            ("<!DOCTYPE a SYSTEM \"file:///etc/passwd\"><a/>", "DTD"),
            ("<a>\u{0}</a>", "not XML"),
            (&deep, "deeper than 64"),
            (&many, "elements"),
        ];
        for (input, expected) in cases {
            let error = parse(input).unwrap_err();
            assert!(
                error.contains(expected),
                "{:?}: {error:?} lacks {expected:?}",
                &input[..input.len().min(40)]
            );
        }
        // Every prefix of a real answer is an error, never a panic.
        let doc = "<s:E xmlns:s=\"urn:s\"><s:B a=\"1\">t&amp;<![CDATA[c]]></s:B></s:E>";
        for end in 0..doc.len() - 1 {
            assert!(parse(&doc[..end]).is_err(), "{:?}", &doc[..end]);
        }
        assert!(parse(doc).is_ok());
    }
}
