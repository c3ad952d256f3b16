//! A namespace-aware XML tree for the ONVIF stand-ins (`onvif_device.rs`,
//! and the tests' `tests/common/wsd.rs`), on `xmlparser`: they match what
//! the node sends by (namespace URI, local name), as a camera's parser does,
//! never by prefix. Written for the stand-ins, apart from the node's own
//! reader, so a mistake in one is not copied into the other.

/// An element: namespace URI, local name, attributes (namespace URI, local
/// name, value), text (the concatenated character data directly inside),
/// children, and the prefixes in scope (for QName values such as WS-Discovery
/// Types).
#[derive(Debug, Clone, Default)]
pub struct Element {
    pub ns: String,
    pub name: String,
    pub attributes: Vec<(String, String, String)>,
    pub text: String,
    pub children: Vec<Element>,
    pub scope: Vec<(String, String)>,
}

impl Element {
    pub fn child(&self, ns: &str, name: &str) -> Option<&Element> {
        self.children.iter().find(|c| c.ns == ns && c.name == name)
    }

    /// The first element (this one or below, depth first) named so.
    pub fn find(&self, ns: &str, name: &str) -> Option<&Element> {
        if self.ns == ns && self.name == name {
            return Some(self);
        }
        self.children.iter().find_map(|c| c.find(ns, name))
    }

    /// An attribute without a namespace.
    pub fn attribute(&self, name: &str) -> Option<&str> {
        self.attributes
            .iter()
            .find(|(ns, n, _)| ns.is_empty() && n == name)
            .map(|(_, _, v)| v.as_str())
    }

    /// The URI bound to `prefix` ("" for the default namespace) here.
    pub fn namespace_of(&self, prefix: &str) -> Option<&str> {
        (self.scope.iter().rev())
            .find(|(p, _)| p == prefix)
            .map(|(_, uri)| uri.as_str())
    }

    /// This element's text read as a list of QNames, each as (namespace URI,
    /// local name); an unbound prefix fails.
    pub fn qnames(&self) -> Result<Vec<(String, String)>, String> {
        (self.text.split_whitespace())
            .map(|qname| {
                let (prefix, local) = qname.split_once(':').unwrap_or(("", qname));
                let ns = self
                    .namespace_of(prefix)
                    .ok_or_else(|| format!("prefix {prefix:?} of {qname:?} is not bound"))?;
                Ok((ns.to_owned(), local.to_owned()))
            })
            .collect()
    }
}

const XMLNS: &str = "http://www.w3.org/2000/xmlns/";
const XML: &str = "http://www.w3.org/XML/1998/namespace";

/// An element being read: its raw prefix and attributes until its start tag ends.
struct Open {
    element: Element,
    prefix: String,
    raw: Vec<(String, String, String)>,
}

/// Parses a whole document into its root element.
pub fn parse(text: &str) -> Result<Element, String> {
    use xmlparser::{ElementEnd, Token};
    let mut stack: Vec<Open> = Vec::new();
    let mut root = None;
    for token in xmlparser::Tokenizer::from(text) {
        let token = token.map_err(|e| e.to_string())?;
        match token {
            Token::ElementStart { prefix, local, .. } => {
                if root.is_some() {
                    return Err("content after the root element".into());
                }
                let scope = stack.last().map(|o| o.element.scope.clone());
                stack.push(Open {
                    element: Element {
                        name: local.to_string(),
                        scope: scope.unwrap_or_else(|| vec![("xml".into(), XML.into())]),
                        ..Element::default()
                    },
                    prefix: prefix.to_string(),
                    raw: Vec::new(),
                });
            }
            Token::Attribute {
                prefix,
                local,
                value,
                ..
            } => {
                let open = stack.last_mut().ok_or("an attribute outside an element")?;
                let value = unescape(&value)?;
                match (prefix.as_str(), local.as_str()) {
                    ("xmlns", p) => open.element.scope.push((p.into(), value)),
                    ("", "xmlns") => open.element.scope.push((String::new(), value)),
                    (p, l) => open.raw.push((p.into(), l.into(), value)),
                }
            }
            Token::ElementEnd { end, .. } => {
                if let ElementEnd::Open | ElementEnd::Empty = end {
                    let open = stack.last_mut().ok_or("an end outside an element")?;
                    let element = &mut open.element;
                    element.ns = (element.namespace_of(&open.prefix))
                        .ok_or_else(|| format!("prefix {:?} is not bound", open.prefix))?
                        .to_owned();
                    for (p, l, v) in std::mem::take(&mut open.raw) {
                        let ns = match p.as_str() {
                            "" => String::new(),
                            p => (element.namespace_of(p))
                                .ok_or_else(|| format!("prefix {p:?} is not bound"))?
                                .to_owned(),
                        };
                        debug_assert_ne!(ns, XMLNS);
                        element.attributes.push((ns, l, v));
                    }
                }
                if let ElementEnd::Close(prefix, local) = end {
                    let open = stack.last().ok_or("an end tag without a start")?;
                    if open.prefix != prefix.as_str() || open.element.name != local.as_str() {
                        return Err(format!("</{}> closes <{}>", local, open.element.name));
                    }
                }
                if let ElementEnd::Close(..) | ElementEnd::Empty = end {
                    let done = stack.pop().unwrap().element;
                    match stack.last_mut() {
                        Some(parent) => parent.element.children.push(done),
                        None => root = Some(done),
                    }
                }
            }
            Token::Text { text } | Token::Cdata { text, .. } => {
                if let Some(open) = stack.last_mut() {
                    open.element.text.push_str(&unescape(&text)?);
                } else if !text.trim().is_empty() {
                    return Err("text outside the root element".into());
                }
            }
            Token::DtdStart { .. } | Token::EmptyDtd { .. } | Token::EntityDeclaration { .. } => {
                return Err("a DTD".into());
            }
            _ => {}
        }
    }
    root.ok_or_else(|| "no root element".into())
}

/// Decodes the five entities and character references.
fn unescape(text: &str) -> Result<String, String> {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find('&') {
        out.push_str(&rest[..at]);
        let end = rest[at..].find(';').ok_or("an unterminated reference")? + at;
        let name = &rest[at + 1..end];
        let c = match name {
            "lt" => '<',
            "gt" => '>',
            "amp" => '&',
            "quot" => '"',
            "apos" => '\'',
            _ => {
                let code = match name.strip_prefix("#x") {
                    Some(hex) => u32::from_str_radix(hex, 16),
                    None => name.strip_prefix('#').unwrap_or(name).parse(),
                };
                (code.ok().and_then(char::from_u32))
                    .ok_or_else(|| format!("an unknown reference &{name};"))?
            }
        };
        out.push(c);
        rest = &rest[end + 1..];
    }
    out.push_str(rest);
    Ok(out)
}

/// Escapes text for an element or an attribute value.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&apos;")
}
