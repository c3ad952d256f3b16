//! Camera addresses: which ones the node accepts, their endpoint, and their
//! redaction for logs; and the host of an http address (a camera's ONVIF
//! service, `NODE_URL`).
//!
//! Only plain RTSP addresses reach ffprobe and the relay: go2rtc runs commands
//! for `exec:`-like sources and reads `#` fragments as options, and ffprobe
//! would open `file:` URLs. Those the relay's URL parser (Go's `url.Parse`)
//! refuses are refused too: they could never play, and go2rtc repeats such an
//! address, password included, in its answer and its log. The scheme is
//! stored in lowercase, because go2rtc refuses `RTSP://`.

use std::net::Ipv6Addr;

use crate::error::Error;

const MAX_URL_BYTES: usize = 2048;

/// Characters Go allows unescaped in a user name or password (`validUserinfo`).
const USERINFO_MARKS: &str = "-._:~!$&'()*+,;=%@";
/// ASCII characters besides letters and digits that a host name may hold.
const HOST_MARKS: &str = "-._~!$&'()*+,;=";

/// `url` checked for the field `field`, with its scheme in lowercase; each
/// refusal names the field and never repeats the address.
pub fn checked(field: &str, url: &str) -> Result<String, Error> {
    let bad = |why: &str| Err(Error::bad_request(format!("{field} {why}")));
    if url.len() > MAX_URL_BYTES {
        return bad(&format!("must be at most {MAX_URL_BYTES} bytes"));
    }
    if url.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return bad("must not contain spaces or control characters");
    }
    if url.contains('#') {
        return bad("must not contain a # fragment");
    }
    let Some((scheme, rest)) = url.split_once("://") else {
        return bad("must be an rtsp:// or rtsps:// URL");
    };
    if !scheme.eq_ignore_ascii_case("rtsp") && !scheme.eq_ignore_ascii_case("rtsps") {
        return bad("must be an rtsp:// or rtsps:// URL");
    }
    if host(authority(rest)).is_empty() {
        return bad("must name a host");
    }
    if let Some(why) = go_parse_problem(rest) {
        return bad(why);
    }
    Ok(with_lowercase_scheme(url))
}

/// `url` with its scheme in lowercase (cameras stored before the scheme was
/// lowered still register).
pub fn with_lowercase_scheme(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => format!("{}://{rest}", scheme.to_ascii_lowercase()),
        None => url.to_owned(),
    }
}

/// Why Go's `url.Parse` would refuse what follows `scheme://`, if it would
/// (stricter in places where no camera address could be meant).
fn go_parse_problem(rest: &str) -> Option<&'static str> {
    let authority = authority(rest);
    let path = rest[authority.len()..].split('?').next().unwrap_or("");
    let (userinfo, host_port) = match authority.rsplit_once('@') {
        Some((userinfo, host_port)) => (Some(userinfo), host_port),
        None => (None, authority),
    };
    const BAD_ESCAPE: &str = "has a % that is not followed by two hexadecimal digits";
    if let Some(userinfo) = userinfo {
        if !userinfo
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || USERINFO_MARKS.contains(c))
        {
            return Some(
                "must %-encode characters other than letters, digits and -._~!$&'()*+,;= \
                 in its user name and password",
            );
        }
        if escaped_bytes(userinfo).is_none() {
            return Some(BAD_ESCAPE);
        }
    }
    let port = match host_port.strip_prefix('[') {
        Some(literal) => {
            const V6: &str = "must write an IPv6 host as [address], as in rtsp://[fe80::1]:554/";
            let Some((inside, after)) = literal.rsplit_once(']') else {
                return Some(V6);
            };
            if !valid_ipv6_literal(inside) {
                return Some(V6);
            }
            if !after.is_empty() && !after.starts_with(':') {
                return Some("has a port that is not a number from 1 to 65535");
            }
            after.strip_prefix(':')
        }
        None => {
            let (host, port) = match host_port.split_once(':') {
                Some((host, port)) => (host, Some(port)),
                None => (host_port, None),
            };
            if host.contains(['[', ']']) {
                return Some("must write an IPv6 host as [address], as in rtsp://[fe80::1]:554/");
            }
            let plain =
                |c: char| !c.is_ascii() || c.is_ascii_alphanumeric() || HOST_MARKS.contains(c);
            if !host.chars().all(|c| plain(c) || c == '%') {
                return Some("has a character a host name cannot have");
            }
            // Go allows %-escapes in a host name only for non-ASCII bytes.
            match escaped_bytes(host) {
                None => return Some(BAD_ESCAPE),
                Some(bytes) if bytes.iter().any(|b| b.is_ascii()) => {
                    return Some("has a character a host name cannot have");
                }
                Some(_) => {}
            }
            port
        }
    };
    if let Some(port) = port
        && !port.is_empty()
        && !(port.bytes().all(|b| b.is_ascii_digit()) && port.parse::<u16>().is_ok_and(|p| p > 0))
    {
        return Some("has a port that is not a number from 1 to 65535");
    }
    if escaped_bytes(path).is_none() {
        return Some(BAD_ESCAPE);
    }
    None
}

/// The bytes of the `%XX` escapes in `s`, or None if a `%` lacks its two hex digits.
fn escaped_bytes(s: &str) -> Option<Vec<u8>> {
    let bytes = s.as_bytes();
    let mut escaped = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes.get(i + 1..i + 3)?;
            let hex = std::str::from_utf8(hex).ok()?;
            if !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
                return None;
            }
            escaped.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            i += 1;
        }
    }
    Some(escaped)
}

/// What Go accepts between `[` and `]`: an IPv6 address (not an IPv4 one),
/// optionally with a `%25`-introduced zone.
fn valid_ipv6_literal(inside: &str) -> bool {
    let (address, zone) = match inside.split_once("%25") {
        Some((address, zone)) => (address, Some(zone)),
        None => (inside, None),
    };
    let zone_ok = zone.is_none_or(|zone| {
        !zone.is_empty()
            && zone
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-._~".contains(c))
    });
    zone_ok && address.parse::<Ipv6Addr>().is_ok()
}

/// The authority part of what follows `scheme://`.
fn authority(rest: &str) -> &str {
    rest.split(['/', '?']).next().unwrap_or("")
}

/// The host of an authority: after any user info, before any port.
fn host(authority: &str) -> &str {
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    if let Some(v6) = host_port.strip_prefix('[') {
        return v6.split(']').next().unwrap_or("");
    }
    host_port.split(':').next().unwrap_or("")
}

/// Host, port (554 for rtsp, 322 for rtsps unless given) and whether TLS is used.
pub fn rtsp_endpoint(url: &str) -> Option<(String, u16, bool)> {
    let (scheme, rest) = url.split_once("://")?;
    let tls = scheme.eq_ignore_ascii_case("rtsps");
    let authority = authority(rest);
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let host = host(authority);
    let after_host = match host_port.strip_prefix('[') {
        Some(v6) => v6.split_once(']').map_or("", |(_, after)| after),
        None => &host_port[host.len()..],
    };
    let port = match after_host.strip_prefix(':') {
        Some(port) if !port.is_empty() => port.parse().ok()?,
        _ if tls => 322,
        _ => 554,
    };
    (!host.is_empty()).then(|| (host.to_owned(), port, tls))
}

/// The host of an `http://` or `https://` URL without user info (brackets
/// kept for IPv6).
pub fn http_host(url: &str) -> Option<&str> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"))?;
    let authority = rest.split(['/', '?', '#']).next()?;
    if authority.contains('@') {
        return None;
    }
    let host = match authority.strip_prefix('[') {
        Some(v6) => &authority[..v6.find(']')? + 2],
        None => authority.split(':').next()?,
    };
    (!host.is_empty()).then_some(host)
}

/// Whether the node may call `host` (an http URL's or an RTSP URL's host,
/// IPv6 in brackets or not) for a device: not an address of this machine's
/// own (loopback, where go2rtc's API listens; unspecified), nor one that is
/// no single device on the LAN (link-local, multicast, broadcast). A name
/// counts unless it is `localhost`.
pub fn reachable_host(host: &str) -> bool {
    let bare = unbracketed(host);
    let bare = bare.split("%25").next().unwrap_or(bare);
    if let Ok(v4) = bare.parse::<std::net::Ipv4Addr>() {
        return !(v4.is_loopback()
            || v4.is_unspecified()
            || v4.is_link_local()
            || v4.is_multicast()
            || v4.is_broadcast());
    }
    if let Ok(v6) = bare.parse::<Ipv6Addr>() {
        if let Some(v4) = v6.to_ipv4_mapped() {
            return reachable_host(&v4.to_string());
        }
        return !(v6.is_loopback()
            || v6.is_unspecified()
            || v6.is_multicast()
            || v6.is_unicast_link_local());
    }
    let name = bare.trim_end_matches('.').to_ascii_lowercase();
    name != "localhost" && !name.ends_with(".localhost")
}

/// A host without the brackets of an IPv6 literal.
pub fn unbracketed(host: &str) -> &str {
    host.trim_start_matches('[').trim_end_matches(']')
}

/// The port of an `http://` or `https://` URL (80 or 443 unless given).
pub fn http_port(url: &str) -> Option<u16> {
    let (default, rest) = match url.strip_prefix("http://") {
        Some(rest) => (80, rest),
        None => (443, url.strip_prefix("https://")?),
    };
    let host = http_host(url)?;
    let authority = rest.split(['/', '?', '#']).next()?;
    match authority[host.len()..].strip_prefix(':') {
        Some(port) if !port.is_empty() => port.parse().ok(),
        _ => Some(default),
    }
}

/// The user name and password in `url`'s user info, `%`-decoded; None
/// without user info.
pub fn credentials(url: &str) -> Option<(String, String)> {
    let (_, rest) = url.split_once("://")?;
    let (userinfo, _) = authority(rest).rsplit_once('@')?;
    let decoded = |text: &str| {
        let mut bytes = Vec::with_capacity(text.len());
        let mut rest = text.as_bytes();
        while let Some((&b, after)) = rest.split_first() {
            let hex = after.get(..2).and_then(|h| std::str::from_utf8(h).ok());
            match (b, hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
                (b'%', Some(byte)) => {
                    bytes.push(byte);
                    rest = &after[2..];
                }
                _ => {
                    bytes.push(b);
                    rest = after;
                }
            }
        }
        String::from_utf8_lossy(&bytes).into_owned()
    };
    let (user, password) = userinfo.split_once(':').unwrap_or((userinfo, ""));
    Some((decoded(user), decoded(password)))
}

/// The URL without its user name and password, its path and query as they
/// are (what the camera itself is sent).
pub fn without_userinfo(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    match authority(rest).rsplit_once('@') {
        Some((userinfo, _)) => format!("{scheme}://{}", &rest[userinfo.len() + 1..]),
        None => url.to_owned(),
    }
}

/// `url` with `user` and `password` as its user info, replacing any it had;
/// each byte but letters, digits and `-._~` percent-encoded (as ffmpeg and
/// go2rtc decode it).
pub fn with_userinfo(url: &str, user: &str, password: &str) -> String {
    let bare = without_userinfo(url);
    let Some((scheme, rest)) = bare.split_once("://") else {
        return bare;
    };
    let encode = |text: &str| {
        let mut out = String::with_capacity(text.len());
        for b in text.bytes() {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                out.push(b as char);
            } else {
                out.push_str(&format!("%{b:02X}"));
            }
        }
        out
    };
    let password = if password.is_empty() {
        String::new()
    } else {
        format!(":{}", encode(password))
    };
    format!("{scheme}://{}{password}@{rest}", encode(user))
}

/// `url` with its host `old` replaced by `new` (user info, port, path and
/// query kept); None when its host is not `old`.
pub fn with_host(url: &str, old: &str, new: &str) -> Option<String> {
    let (scheme, rest) = url.split_once("://")?;
    let authority = authority(rest);
    if !host(authority).eq_ignore_ascii_case(old) || old.contains(':') {
        return None;
    }
    let userinfo_len = authority.rsplit_once('@').map_or(0, |(u, _)| u.len() + 1);
    let after_host = &rest[userinfo_len + old.len()..];
    Some(format!(
        "{scheme}://{}{new}{after_host}",
        &rest[..userinfo_len]
    ))
}

/// Parameter names whose values are secrets, compared ignoring case: what
/// cameras put in a path (`/user=admin&password=...&channel=1`) or a query
/// (`?usr=admin&pwd=...`).
const SECRET_PARAMETERS: [&str; 8] = [
    "password", "passwd", "pass", "pwd", "psw", "loginpas", "secret", "token",
];

/// A URL fit for a log line: user name and password replaced by `***`, and
/// so is the value of each secret parameter (see [`SECRET_PARAMETERS`]).
pub fn redact(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return "***".to_owned();
    };
    let authority = authority(rest);
    let host = match authority.rsplit_once('@') {
        Some((_, host)) => format!("***@{host}"),
        None => authority.to_owned(),
    };
    format!(
        "{scheme}://{host}{}",
        redact_parameters(&rest[authority.len()..])
    )
}

/// `path_and_query` with each secret parameter's value replaced by `***`.
/// A parameter starts anywhere a secret name and `=` follow something other
/// than a letter or digit (so `_` separates too, as in
/// `/user=admin_password=..._channel=1`, and `bypass=` is no `pass=`). Its
/// value runs to the next `&` or `;`, and in the path also to `/` or `?`;
/// in the query `/` and `?` are part of it.
fn redact_parameters(path_and_query: &str) -> String {
    let bytes = path_and_query.as_bytes();
    let query_start = path_and_query.find('?').unwrap_or(bytes.len());
    let mut redacted = String::with_capacity(path_and_query.len());
    let (mut copied, mut i) = (0, 0);
    while i < bytes.len() {
        let starts_name = i == 0 || !bytes[i - 1].is_ascii_alphanumeric();
        let secret = SECRET_PARAMETERS.iter().find(|name| {
            let end = i + name.len();
            starts_name
                && bytes.get(end) == Some(&b'=')
                && bytes[i..end].eq_ignore_ascii_case(name.as_bytes())
        });
        let Some(name) = secret else {
            i += 1;
            continue;
        };
        let value = i + name.len() + 1;
        let end = (value..bytes.len())
            .find(|&j| match bytes[j] {
                b'&' | b';' => true,
                // In the path, up to the `?` that starts the query.
                b'/' | b'?' => j <= query_start,
                _ => false,
            })
            .unwrap_or(bytes.len());
        redacted.push_str(&path_and_query[copied..value]);
        redacted.push_str("***");
        (copied, i) = (end, end);
    }
    redacted.push_str(&path_and_query[copied..]);
    redacted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts_of_http_addresses() {
        let cases = [
            ("http://10.0.0.5/onvif/device_service", Some("10.0.0.5")),
            ("http://10.0.0.5:8080/onvif", Some("10.0.0.5")),
            ("https://cam.lan", Some("cam.lan")),
            ("https://[fd00::1]:8080/x", Some("[fd00::1]")),
            ("http://u:p@10.0.0.5/", None),
            ("http:///x", None),
            ("ftp://h/", None),
        ];
        for (address, want) in cases {
            assert_eq!(http_host(address), want, "{address}");
        }
    }

    #[test]
    fn only_hosts_of_the_lan_are_called() {
        for host in [
            "127.0.0.1",
            "127.8.9.1",
            "0.0.0.0",
            "169.254.1.2",
            "224.0.0.1",
            "239.255.255.250",
            "255.255.255.255",
            "[::1]",
            "[::]",
            "[fe80::1]",
            "[fe80::1%25eth0]",
            "[ff02::1]",
            "[::ffff:127.0.0.1]",
            "localhost",
            "LocalHost.",
            "cam.localhost",
        ] {
            assert!(!reachable_host(host), "{host}");
        }
        for host in [
            "10.0.0.5",
            "192.168.1.64",
            "[fd00::1]",
            "cam.lan",
            "localhost.lan",
        ] {
            assert!(reachable_host(host), "{host}");
        }
        assert_eq!(http_port("http://10.0.0.5/onvif"), Some(80));
        assert_eq!(http_port("https://10.0.0.5/onvif"), Some(443));
        assert_eq!(http_port("http://10.0.0.5:8000/onvif"), Some(8000));
        assert_eq!(http_port("http://[fd00::1]:8000"), Some(8000));
        assert_eq!(http_port("http://10.0.0.5:x/"), None);
    }

    #[test]
    fn credentials_come_out_decoded() {
        let url = with_userinfo("rtsp://10.0.0.5/main", "ad min", "p@ss:w/rd%");
        assert_eq!(
            credentials(&url),
            Some(("ad min".to_owned(), "p@ss:w/rd%".to_owned()))
        );
        assert_eq!(
            credentials("rtsp://u@h/"),
            Some(("u".to_owned(), String::new()))
        );
        assert_eq!(credentials("rtsp://h/x@y"), None);
    }

    #[test]
    fn credentials_and_hosts_are_put_in() {
        let cases = [
            (
                "rtsp://10.0.0.5:554/main",
                "admin",
                "p@ss:w/rd",
                "rtsp://admin:p%40ss%3Aw%2Frd@10.0.0.5:554/main",
            ),
            ("rtsp://old:pw@cam/x?a=1", "u", "", "rtsp://u@cam/x?a=1"),
            ("rtsps://h", "é", "ü", "rtsps://%C3%A9:%C3%BC@h"),
        ];
        for (url, user, password, want) in cases {
            assert_eq!(with_userinfo(url, user, password), want, "{url}");
            assert!(checked("f", want).is_ok(), "{want}");
        }
        let moves = [
            (
                "rtsp://a:b@10.0.0.5:554/main",
                "10.0.0.5",
                Some("rtsp://a:b@10.0.0.9:554/main"),
            ),
            (
                "rtsp://10.0.0.5/sub?x=10.0.0.5",
                "10.0.0.5",
                Some("rtsp://10.0.0.9/sub?x=10.0.0.5"),
            ),
            ("rtsp://10.0.0.50/main", "10.0.0.5", None),
            ("rtsp://u:10.0.0.5@10.0.0.6/", "10.0.0.5", None),
            ("rtsp://[::1]:554/", "::1", None),
        ];
        for (url, old, want) in moves {
            assert_eq!(with_host(url, old, "10.0.0.9").as_deref(), want, "{url}");
        }
    }

    #[test]
    fn what_go_accepts_is_accepted_with_a_lowercase_scheme() {
        let table = [
            (
                "rtsp://u:p@10.0.0.2:554/main",
                "rtsp://u:p@10.0.0.2:554/main",
            ),
            ("RTSP://cam/x", "rtsp://cam/x"),
            ("Rtsps://cam:322/x", "rtsps://cam:322/x"),
            ("rtsp://[::1]:8554/x", "rtsp://[::1]:8554/x"),
            ("rtsp://[fe80::1%25eth0]/x", "rtsp://[fe80::1%25eth0]/x"),
            ("rtsp://[::ffff:10.0.0.2]/x", "rtsp://[::ffff:10.0.0.2]/x"),
            ("rtsp://a:p@ss@cam/x", "rtsp://a:p@ss@cam/x"),
            (
                "rtsp://a:p%40ss%2F@cam/x%20y",
                "rtsp://a:p%40ss%2F@cam/x%20y",
            ),
            ("rtsp://a:!$&'()*+,;=~@cam/x", "rtsp://a:!$&'()*+,;=~@cam/x"),
            ("rtsp://cam:/x", "rtsp://cam:/x"),
            (
                "rtsp://cam:65535/x?channel=1&subtype=%zz",
                "rtsp://cam:65535/x?channel=1&subtype=%zz",
            ),
            ("rtsp://caméra.local/x", "rtsp://caméra.local/x"),
            ("rtsp://cam%C3%A9ra/x", "rtsp://cam%C3%A9ra/x"),
        ];
        for (url, stored) in table {
            assert_eq!(checked("rtspUrl", url).as_deref(), Ok(stored), "{url}");
        }
    }

    #[test]
    fn what_go_refuses_is_refused_without_repeating_the_address() {
        let table = [
            (
                "rtsp://admin:s3cret@127.0.0.1:abc/x",
                "port that is not a number",
            ),
            (
                "rtsp://admin:s3cret@cam:65536/x",
                "port that is not a number",
            ),
            ("rtsp://admin:s3cret@cam:0/x", "port that is not a number"),
            ("rtsp://admin:s3cret@cam:1:2/x", "port that is not a number"),
            ("rtsp://admin:s3cret@[::1]x/x", "port that is not a number"),
            ("rtsp://admin:s3cret%zz@cam/x", "a % that is not followed"),
            ("rtsp://admin:s3cret%4@cam/x", "a % that is not followed"),
            ("rtsp://admin:s3cret@cam/x%g1", "a % that is not followed"),
            ("rtsp://admin:s3cret@ca%zzm/x", "a % that is not followed"),
            ("rtsp://admin:s3cret@ca%41m/x", "a host name cannot have"),
            ("rtsp://admin:s3cret@ca^m/x", "a host name cannot have"),
            ("rtsp://admin:s3cret@[::1/x", "IPv6 host as [address]"),
            ("rtsp://admin:s3cret@cam]/x", "IPv6 host as [address]"),
            ("rtsp://admin:s3cret@cam[::1]/x", "IPv6 host as [address]"),
            ("rtsp://admin:s3cret@[10.0.0.2]/x", "IPv6 host as [address]"),
            ("rtsp://admin:s3cret@[cam]/x", "IPv6 host as [address]"),
            (
                "rtsp://admin:s3cret@[fe80::1%25]/x",
                "IPv6 host as [address]",
            ),
            ("rtsp://admin:s3c\"ret@cam/x", "user name and password"),
            ("rtsp://admin:s3cret[@cam/x", "user name and password"),
            ("rtsp://admin:s3crét@cam/x", "user name and password"),
        ];
        for (url, why) in table {
            let err = checked("rtspUrl", url).expect_err(url);
            assert!(
                err.message.starts_with("rtspUrl "),
                "{url}: {}",
                err.message
            );
            assert!(err.message.contains(why), "{url}: {}", err.message);
            assert!(!err.message.contains("s3c"), "{url}: {}", err.message);
        }
    }

    #[test]
    fn endpoints() {
        let table = [
            (
                "rtsp://u:p@10.0.0.2:8554/main",
                Some(("10.0.0.2", 8554, false)),
            ),
            ("rtsp://cam.local/main", Some(("cam.local", 554, false))),
            ("RTSPS://cam/x", Some(("cam", 322, true))),
            ("rtsp://[fe80::1]:1554/x", Some(("fe80::1", 1554, false))),
            ("rtsp://[fe80::1]/x", Some(("fe80::1", 554, false))),
            ("rtsp://cam:/x", Some(("cam", 554, false))),
            ("rtsp://cam:99999/x", None),
            ("rtsp:///x", None),
        ];
        for (url, want) in table {
            let got = rtsp_endpoint(url);
            let got = got.as_ref().map(|(h, p, t)| (h.as_str(), *p, *t));
            assert_eq!(got, want, "{url}");
        }
        assert_eq!(without_userinfo("rtsp://a:b@h:1/x?y"), "rtsp://h:1/x?y");
        assert_eq!(without_userinfo("rtsp://h/x"), "rtsp://h/x");
    }

    #[test]
    fn redaction() {
        let table = [
            (
                "rtsp://admin:s3cret@10.0.0.2:554/main",
                "rtsp://***@10.0.0.2:554/main",
            ),
            ("rtsp://admin@cam/x?a=b@c", "rtsp://***@cam/x?a=b@c"),
            ("rtsp://a:p@ss@cam/x", "rtsp://***@cam/x"),
            ("rtsp://cam/x?u=a@b", "rtsp://cam/x?u=a@b"),
            ("rtsp://cam:554/x", "rtsp://cam:554/x"),
            ("no-scheme:secret@host", "***"),
            // Parameters in the path, separated by &, ; or /, up to a ?.
            (
                "rtsp://cam/user=admin&password=s3cret&channel=1",
                "rtsp://cam/user=admin&password=***&channel=1",
            ),
            (
                "rtsp://cam/pwd=s3cret;channel=1",
                "rtsp://cam/pwd=***;channel=1",
            ),
            (
                "rtsp://cam/password=s3cret/stream1",
                "rtsp://cam/password=***/stream1",
            ),
            (
                "rtsp://cam/pass=s3cret?channel=1",
                "rtsp://cam/pass=***?channel=1",
            ),
            (
                "rtsp://cam/user=admin_password=s3cret_channel=1_stream=0.sdp?real_stream",
                "rtsp://cam/user=admin_password=***?real_stream",
            ),
            // Parameters in the query, separated by & or ;, any case.
            (
                "rtsp://cam:554/x?user=admin&PassWord=s3cret",
                "rtsp://cam:554/x?user=admin&PassWord=***",
            ),
            (
                "rtsp://cam/x?PASSWD=s3/cr?et;c=1&psw=s3cret&loginpas=s3cret",
                "rtsp://cam/x?PASSWD=***;c=1&psw=***&loginpas=***",
            ),
            (
                "rtsp://cam/x?token=s3cret&secret=s3cret",
                "rtsp://cam/x?token=***&secret=***",
            ),
            ("rtsp://cam/x?pwd=", "rtsp://cam/x?pwd=***"),
            ("rtsp://cam/x?pwd=a=b&c=d", "rtsp://cam/x?pwd=***&c=d"),
            // Both user info and parameters; a parameter again.
            (
                "rtsp://admin:s3cret@cam/x?pwd=s3cret&pwd=s3cret",
                "rtsp://***@cam/x?pwd=***&pwd=***",
            ),
            // Names that merely contain a secret name are not secrets.
            (
                "rtsp://cam/bypass=1?compass=n&passes=2&password2=x",
                "rtsp://cam/bypass=1?compass=n&passes=2&password2=x",
            ),
            ("rtsp://cam/x?pass", "rtsp://cam/x?pass"),
        ];
        for (url, want) in table {
            assert_eq!(redact(url), want, "{url}");
        }
    }
}
