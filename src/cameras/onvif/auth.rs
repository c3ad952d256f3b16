//! Signing in to a camera: WS-Security's UsernameToken with PasswordDigest in
//! the SOAP header (ONVIF Core 5.12.2), and HTTP Digest (RFC 7616 with MD5)
//! for the cameras that want it besides.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use ring::rand::{SecureRandom, SystemRandom};

use super::Credentials;
use super::md5::md5_hex;

/// `N` random bytes from the system's generator (ring's, which rustls uses).
pub fn random<const N: usize>() -> [u8; N] {
    let mut bytes = [0; N];
    // getrandom(2) does not fail on Linux once the pool is initialised; were
    // it to, a zero nonce only weakens replay protection for this one call.
    let _ = SystemRandom::new().fill(&mut bytes);
    bytes
}

/// `text` fit for XML content or an attribute value.
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// base64(SHA-1(nonce ++ created ++ password)).
pub fn password_digest(nonce: &[u8], created: &str, password: &str) -> String {
    let mut context = ring::digest::Context::new(&ring::digest::SHA1_FOR_LEGACY_USE_ONLY);
    context.update(nonce);
    context.update(created.as_bytes());
    context.update(password.as_bytes());
    STANDARD.encode(context.finish())
}

/// The SOAP header's element signing the message as `credentials`, with this nonce and
/// creation time (UTC, RFC 3339 with Z).
pub fn security_header(credentials: &Credentials, nonce: &[u8], created: &str) -> String {
    format!(
        concat!(
            "<wsse:Security xmlns:wsse=\"http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd\" ",
            "xmlns:wsu=\"http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd\">",
            "<wsse:UsernameToken><wsse:Username>{}</wsse:Username>",
            "<wsse:Password Type=\"http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordDigest\">{}</wsse:Password>",
            "<wsse:Nonce EncodingType=\"http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-soap-message-security-1.0#Base64Binary\">{}</wsse:Nonce>",
            "<wsu:Created>{}</wsu:Created></wsse:UsernameToken></wsse:Security>"
        ),
        escape(&credentials.username),
        password_digest(nonce, created, &credentials.password),
        STANDARD.encode(nonce),
        escape(created),
    )
}

/// An HTTP Digest challenge this client can answer.
#[derive(Debug, PartialEq, Eq)]
pub struct Challenge {
    realm: String,
    nonce: String,
    opaque: Option<String>,
    /// The server offers qop=auth (else RFC 2069's form is used).
    qop_auth: bool,
    /// algorithm=MD5-sess.
    session: bool,
}

/// The Digest challenge in a `WWW-Authenticate` value, if it is one with MD5.
pub fn challenge(header: &str) -> Option<Challenge> {
    let (scheme, rest) = header.trim().split_once(' ')?;
    if !scheme.eq_ignore_ascii_case("digest") {
        return None;
    }
    let mut challenge = Challenge {
        realm: String::new(),
        nonce: String::new(),
        opaque: None,
        qop_auth: false,
        session: false,
    };
    for (name, value) in parameters(rest) {
        match name.to_ascii_lowercase().as_str() {
            "realm" => challenge.realm = value,
            "nonce" => challenge.nonce = value,
            "opaque" => challenge.opaque = Some(value),
            "qop" => challenge.qop_auth = value.split(',').any(|q| q.trim() == "auth"),
            "algorithm" => match value.to_ascii_uppercase().as_str() {
                "MD5" => {}
                "MD5-SESS" => challenge.session = true,
                _ => return None,
            },
            _ => {}
        }
    }
    (!challenge.nonce.is_empty()).then_some(challenge)
}

/// The `name=value` pairs of an auth header, values unquoted.
fn parameters(mut rest: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    loop {
        rest = rest.trim_start_matches(|c: char| c == ',' || c.is_whitespace());
        let Some((name, after)) = rest.split_once('=') else {
            return out;
        };
        let after = after.trim_start();
        let mut value = String::new();
        rest = match after.strip_prefix('"') {
            Some(quoted) => {
                let mut chars = quoted.char_indices();
                let mut end = quoted.len();
                while let Some((i, c)) = chars.next() {
                    match c {
                        '"' => {
                            end = i + 1;
                            break;
                        }
                        '\\' => value.extend(chars.next().map(|(_, c)| c)),
                        c => value.push(c),
                    }
                }
                &quoted[end..]
            }
            None => {
                let end = after.find(',').unwrap_or(after.len());
                value.push_str(after[..end].trim());
                &after[end..]
            }
        };
        out.push((name.trim().to_owned(), value));
    }
}

/// `text` as a quoted-string.
fn quoted(text: &str) -> String {
    format!("\"{}\"", text.replace('\\', "\\\\").replace('"', "\\\""))
}

/// The `Authorization` value answering `challenge` for `method` `uri`, with
/// this client nonce (nc is 1: each challenge is answered once).
pub fn authorization(
    challenge: &Challenge,
    credentials: &Credentials,
    method: &str,
    uri: &str,
    cnonce: &str,
) -> String {
    let Challenge {
        realm,
        nonce,
        opaque,
        qop_auth,
        session,
    } = challenge;
    let mut ha1 =
        md5_hex(format!("{}:{realm}:{}", credentials.username, credentials.password).as_bytes());
    if *session {
        ha1 = md5_hex(format!("{ha1}:{nonce}:{cnonce}").as_bytes());
    }
    let ha2 = md5_hex(format!("{method}:{uri}").as_bytes());
    let nc = "00000001";
    let response = match qop_auth {
        true => md5_hex(format!("{ha1}:{nonce}:{nc}:{cnonce}:auth:{ha2}").as_bytes()),
        false => md5_hex(format!("{ha1}:{nonce}:{ha2}").as_bytes()),
    };
    let mut header = format!(
        "Digest username={}, realm={}, nonce={}, uri={}, response=\"{response}\"",
        quoted(&credentials.username),
        quoted(realm),
        quoted(nonce),
        quoted(uri),
    );
    if *session {
        header.push_str(", algorithm=MD5-sess");
    }
    if *qop_auth {
        header.push_str(&format!(", qop=auth, nc={nc}, cnonce=\"{cnonce}\""));
    }
    if let Some(opaque) = opaque {
        header.push_str(&format!(", opaque={}", quoted(opaque)));
    }
    header
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cameras::onvif::xml;

    fn mufasa() -> Credentials {
        Credentials {
            username: "Mufasa".into(),
            password: "Circle Of Life".into(),
        }
    }

    #[test]
    fn password_digest_matches_sha1sum() {
        // Expected: printf '0123456789abcdef2026-11-25T01:02:03Zs3cr&t' | sha1sum | xxd -r -p | base64
        // (the nonce here is the 16 ASCII bytes "0123456789abcdef").
        assert_eq!(
            password_digest(b"0123456789abcdef", "2026-11-25T01:02:03Z", "s3cr&t"),
            "uMcGOsZeZi94SEkOmQEd4c3Tozk="
        );
    }

    #[test]
    fn security_header_escapes_and_parses() {
        let credentials = Credentials {
            username: "a<b>&\"c'".into(),
            password: "pw".into(),
        };
        let header = security_header(&credentials, b"0123456789abcdef", "2026-11-25T01:02:03Z");
        assert!(!header.contains("pw"), "{header}");
        let doc = format!(
            "<s:Envelope xmlns:s=\"http://www.w3.org/2003/05/soap-envelope\">{header}</s:Envelope>"
        );
        let root = xml::parse(&doc).unwrap();
        let wsse =
            "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd";
        let token = root.find(wsse, "UsernameToken").unwrap();
        assert_eq!(token.child(wsse, "Username").unwrap().text(), "a<b>&\"c'");
        assert_eq!(
            token.child(wsse, "Nonce").unwrap().text(),
            "MDEyMzQ1Njc4OWFiY2RlZg=="
        );
        assert_eq!(
            token.child(wsse, "Password").unwrap().text(),
            password_digest(b"0123456789abcdef", "2026-11-25T01:02:03Z", "pw")
        );
        let wsu =
            "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd";
        assert_eq!(
            token.child(wsu, "Created").unwrap().text(),
            "2026-11-25T01:02:03Z"
        );
    }

    #[test]
    fn random_bytes_differ() {
        assert_ne!(random::<16>(), random::<16>());
    }

    #[test]
    fn digest_rfc_2617_example() {
        // RFC 2617 section 3.5.
        let header = r#"Digest realm="testrealm@host.com", qop="auth,auth-int", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093", opaque="5ccc069c403ebaf9f0171e9517f40e41""#;
        let challenge = challenge(header).unwrap();
        let answer = authorization(&challenge, &mufasa(), "GET", "/dir/index.html", "0a4f113b");
        assert_eq!(
            answer,
            "Digest username=\"Mufasa\", realm=\"testrealm@host.com\", \
             nonce=\"dcd98b7102dd2f0e8b11d0f600bfb0c093\", uri=\"/dir/index.html\", \
             response=\"6629fae49393a05397450978507c4ef1\", qop=auth, nc=00000001, \
             cnonce=\"0a4f113b\", opaque=\"5ccc069c403ebaf9f0171e9517f40e41\""
        );
    }

    #[test]
    fn digest_without_qop_is_rfc_2069() {
        // HA1 = md5("Mufasa:testrealm@host.com:Circle Of Life"), HA2 = md5("GET:/dir/index.html"),
        // response = md5(HA1:nonce:HA2); expected from
        // printf '%s:dcd98b7102dd2f0e8b11d0f600bfb0c093:%s' 939e7578ed9e3c518a452acee763bce9 39aff3a2bab6126f332b942af96d3366 | md5sum
        let challenge = challenge(
            r#"digest realm="testrealm@host.com", nonce="dcd98b7102dd2f0e8b11d0f600bfb0c093""#,
        )
        .unwrap();
        let answer = authorization(&challenge, &mufasa(), "GET", "/dir/index.html", "x");
        assert!(
            answer.contains("response=\"670fd8c2df070c60b045671b8b24ff02\""),
            "{answer}"
        );
        assert!(!answer.contains("qop"), "{answer}");
    }

    #[test]
    fn challenges_parsed_and_refused() {
        let parsed = challenge(
            r#"Digest realm="a \"b\"",nonce=abc, algorithm=MD5-sess, qop="auth-int, auth", stale=FALSE"#,
        )
        .unwrap();
        assert_eq!(
            parsed,
            Challenge {
                realm: "a \"b\"".into(),
                nonce: "abc".into(),
                opaque: None,
                qop_auth: true,
                session: true,
            }
        );
        assert_eq!(challenge(r#"Basic realm="x""#), None);
        assert_eq!(
            challenge(r#"Digest realm="x", nonce="n", algorithm=SHA-256"#),
            None
        );
        assert_eq!(challenge(r#"Digest realm="x""#), None);
        assert_eq!(challenge("Digest"), None);
        assert_eq!(challenge(r#"Digest realm="unterminated"#), None);
        assert!(challenge(r#"Digest nonce="n", qop="auth-int""#).is_some_and(|c| !c.qop_auth));
    }
}
