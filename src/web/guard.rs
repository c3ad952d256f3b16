//! Protections against browsers used as attackers on the LAN: DNS rebinding
//! (a page on another site whose name now points at the node) and cross-site
//! requests (a form or script on another site posting to the node).

use std::net::IpAddr;

/// Whether a request with this `Host` may be served: an IP address,
/// `localhost`, a `.local` name, the machine's host name, or a name listed in
/// `ALLOWED_HOSTS`. Requests without a Host header come from no browser.
pub fn host_allowed(host: Option<&str>, host_name: &str, allowed: &[String]) -> bool {
    let Some(host) = host else {
        return true;
    };
    let name = strip_port(host.trim())
        .trim_end_matches('.')
        .to_ascii_lowercase();
    if name.is_empty() {
        return false;
    }
    let literal = name
        .strip_prefix('[')
        .and_then(|n| n.strip_suffix(']'))
        .unwrap_or(&name);
    literal.parse::<IpAddr>().is_ok()
        || name == "localhost"
        || (name.ends_with(".local") && name.len() > ".local".len())
        || name.eq_ignore_ascii_case(host_name)
        || allowed.iter().any(|a| a.eq_ignore_ascii_case(&name))
}

/// Whether a state-changing request's `Origin` (if any) is the node itself.
pub fn origin_allowed(origin: Option<&str>, host: Option<&str>) -> bool {
    let Some(origin) = origin else {
        return true;
    };
    let Some(authority) = origin
        .strip_prefix("http://")
        .or_else(|| origin.strip_prefix("https://"))
    else {
        // "null" (sandboxed frames, file: pages) and anything else foreign.
        return false;
    };
    host.is_some_and(|host| {
        authority
            .trim_end_matches('/')
            .eq_ignore_ascii_case(host.trim())
    })
}

/// `name:port` -> `name`; `[v6]:port` -> `[v6]`.
fn strip_port(host: &str) -> &str {
    if host.starts_with('[') {
        return host.split_inclusive(']').next().unwrap_or(host);
    }
    match host.rsplit_once(':') {
        Some((name, port)) if port.chars().all(|c| c.is_ascii_digit()) => name,
        _ => host,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hosts() {
        let allowed = vec!["nvr.example.com".to_owned()];
        let table = [
            (Some("192.168.1.20:8080"), true),
            (Some("192.168.1.20"), true),
            (Some("[fe80::1]:8080"), true),
            (Some("[::1]"), true),
            (Some("localhost:8080"), true),
            (Some("LOCALHOST"), true),
            (Some("nvr-board.local:8080"), true),
            (Some("nvr-board.local."), true),
            (Some("board7"), true),
            (Some("Board7:8080"), true),
            (Some("nvr.example.com:8080"), true),
            (None, true),
            (Some("evil.example"), false),
            (Some("evil.example:8080"), false),
            (Some(".local"), false),
            (Some("localhost.evil.example"), false),
            (Some("192.168.1.20.evil.example"), false),
            (Some(""), false),
            (Some(":8080"), false),
        ];
        for (host, want) in table {
            assert_eq!(host_allowed(host, "board7", &allowed), want, "{host:?}");
        }
    }

    #[test]
    fn origins() {
        let host = Some("192.168.1.20:8080");
        let table = [
            (None, true),
            (Some("http://192.168.1.20:8080"), true),
            (Some("HTTP://192.168.1.20:8080/"), false),
            (Some("http://192.168.1.20:8080/"), true),
            (Some("https://192.168.1.20:8080"), true),
            (Some("http://192.168.1.20"), false),
            (Some("http://evil.example"), false),
            (Some("null"), false),
            (Some(""), false),
        ];
        for (origin, want) in table {
            assert_eq!(origin_allowed(origin, host), want, "{origin:?}");
        }
        assert!(!origin_allowed(Some("http://a"), None));
    }
}
