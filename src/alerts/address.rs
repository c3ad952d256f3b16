//! Where alerts may go. Any device on the LAN can set a destination (the API
//! has no accounts), so the node must never become its way to the node's
//! own services: go2rtc's API on 127.0.0.1:1984 would run an `exec:` stream
//! for whoever could post to it. A destination is an http or https URL
//! whose host is none of the node's own addresses, nor loopback,
//! link-local, unspecified or multicast; a name is checked once at the API
//! and again, at every connection, on each address it resolves to (a name
//! may be pointed elsewhere later), and redirects are not followed.

use std::io;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use url::{Host, Url};

use crate::error::Error;
use crate::sys::net;

/// A destination's URL: http or https, with a host and no user name or
/// password (an access token goes in a field of its own).
pub fn checked_url(field: &str, text: &str) -> Result<Url, Error> {
    let bad = |what: &str| Error::bad_request(format!("{field} {what}"));
    let text = text.trim();
    if !text.is_ascii() {
        return Err(bad(
            "must be in ASCII (an internationalized host name in its xn-- form)",
        ));
    }
    let url = Url::parse(text).map_err(|_| bad("must be an http:// or https:// URL"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(bad("must be an http:// or https:// URL"));
    }
    if url.host().is_none() {
        return Err(bad("must name a host"));
    }
    if !url.username().is_empty() || url.password().is_some() {
        return Err(bad("must not carry a user name or password"));
    }
    if url.fragment().is_some() {
        return Err(bad("must not have a #fragment"));
    }
    Ok(url)
}

/// Refuses a URL whose host is, or resolves to, an address the node must
/// not send to: 400 naming `field`. A name that does not resolve now is
/// let through (the server may be down): each connection checks again.
pub fn check_host(field: &str, url: &Url) -> Result<(), Error> {
    let own = net::own_addresses().unwrap_or_default();
    let addresses: Vec<IpAddr> = match url.host() {
        Some(Host::Ipv4(ip)) => vec![ip.into()],
        Some(Host::Ipv6(ip)) => vec![ip.into()],
        Some(Host::Domain(name)) => (name, 0)
            .to_socket_addrs()
            .map(|all| all.map(|a| a.ip()).collect())
            .unwrap_or_default(),
        None => Vec::new(),
    };
    for ip in addresses {
        if let Some(why) = forbidden(ip, &own) {
            let host = url.host_str().unwrap_or_default();
            let named = match host.trim_matches(['[', ']']) == ip.to_string() {
                true => String::new(),
                false => format!("{host} is "),
            };
            return Err(Error::bad_request(format!(
                "{field} must not point at {why} ({named}{ip})"
            )));
        }
    }
    Ok(())
}

/// Why the node does not send to `ip`, or None when it may.
pub fn forbidden(ip: IpAddr, own: &[IpAddr]) -> Option<&'static str> {
    let ip = ip.to_canonical();
    let why = match ip {
        IpAddr::V4(v4) => {
            if v4.is_loopback() {
                "a loopback address"
            } else if v4.octets()[0] == 0 {
                "an unspecified address"
            } else if v4.is_link_local() {
                "a link-local address"
            } else if v4.is_multicast() || v4.is_broadcast() {
                "a multicast or broadcast address"
            } else {
                return own.contains(&ip).then_some("the node itself");
            }
        }
        IpAddr::V6(v6) => {
            if v6.is_loopback() {
                "a loopback address"
            } else if v6.is_unspecified() {
                "an unspecified address"
            } else if v6.segments()[0] & 0xffc0 == 0xfe80 {
                "a link-local address"
            } else if v6.is_multicast() {
                "a multicast or broadcast address"
            } else {
                return own.contains(&ip).then_some("the node itself");
            }
        }
    };
    Some(why)
}

/// The HTTP client's name lookups: every address a name resolves to is
/// checked at each connection, and a forbidden one is never connected to.
pub struct Resolver;

impl ureq::Resolver for Resolver {
    fn resolve(&self, netloc: &str) -> io::Result<Vec<SocketAddr>> {
        let own = net::own_addresses()?;
        let all: Vec<SocketAddr> = netloc.to_socket_addrs()?.collect();
        let allowed: Vec<SocketAddr> = all
            .iter()
            .copied()
            .filter(|a| forbidden(a.ip(), &own).is_none())
            .collect();
        match (allowed.is_empty(), all.first()) {
            (true, Some(first)) => Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                Refused(forbidden(first.ip(), &own).unwrap_or("a forbidden address")),
            )),
            _ => Ok(allowed),
        }
    }
}

/// A connection refused because of where it would go.
#[derive(Debug)]
pub struct Refused(pub &'static str);

impl std::fmt::Display for Refused {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "the host resolves to {}", self.0)
    }
}

impl std::error::Error for Refused {}

#[cfg(test)]
mod tests {
    use super::*;
    use ureq::Resolver as _;

    #[test]
    fn urls_are_http_or_https_with_a_host_and_no_credentials() {
        for good in [
            "https://ntfy.sh",
            "http://192.168.1.5:8080/ntfy",
            "https://hooks.example.com/a/b?c=d",
            "http://[fd00::5]:80/",
        ] {
            checked_url("url", good).unwrap_or_else(|e| panic!("{good}: {}", e.message));
        }
        let refused = [
            ("ftp://h/x", "url must be an http:// or https:// URL"),
            ("h/x", "url must be an http:// or https:// URL"),
            (
                "https://user:pw@h/x",
                "url must not carry a user name or password",
            ),
            (
                "https://tok@h/x",
                "url must not carry a user name or password",
            ),
            ("https://h/x#y", "url must not have a #fragment"),
            ("https://hö.de/", "url must be in ASCII"),
            (
                "file:///etc/passwd",
                "url must be an http:// or https:// URL",
            ),
        ];
        for (text, message) in refused {
            let e = checked_url("url", text).unwrap_err();
            assert!(e.message.starts_with(message), "{text}: {}", e.message);
        }
    }

    #[test]
    fn the_node_itself_and_special_addresses_are_forbidden() {
        let own: Vec<IpAddr> = vec!["192.168.1.20".parse().unwrap()];
        let table = [
            ("127.0.0.1", Some("a loopback address")),
            ("127.8.9.10", Some("a loopback address")),
            ("::1", Some("a loopback address")),
            ("::ffff:127.0.0.1", Some("a loopback address")),
            ("0.0.0.0", Some("an unspecified address")),
            ("0.1.2.3", Some("an unspecified address")),
            ("::", Some("an unspecified address")),
            ("169.254.169.254", Some("a link-local address")),
            ("fe80::1", Some("a link-local address")),
            ("224.0.0.251", Some("a multicast or broadcast address")),
            ("255.255.255.255", Some("a multicast or broadcast address")),
            ("ff02::1", Some("a multicast or broadcast address")),
            ("192.168.1.20", Some("the node itself")),
            ("::ffff:192.168.1.20", Some("the node itself")),
            ("192.168.1.21", None),
            ("10.0.0.8", None),
            ("fd00::8", None),
            ("93.184.216.34", None),
        ];
        for (ip, want) in table {
            assert_eq!(forbidden(ip.parse().unwrap(), &own), want, "{ip}");
        }
    }

    #[test]
    fn names_are_checked_at_the_api_and_at_each_connection() {
        let url = checked_url("url", "http://localhost:1984/api/streams").unwrap();
        let e = check_host("url", &url).unwrap_err();
        assert!(
            e.message
                .starts_with("url must not point at a loopback address (localhost is "),
            "{}",
            e.message
        );
        let literal = checked_url("server", "http://127.0.0.1:1984").unwrap();
        let e = check_host("server", &literal).unwrap_err();
        assert_eq!(
            e.message,
            "server must not point at a loopback address (127.0.0.1)"
        );
        let e = Resolver.resolve("localhost:1984").unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::PermissionDenied);
        assert_eq!(e.to_string(), "the host resolves to a loopback address");
        let lan = checked_url("url", "http://10.213.99.7:8080/hook").unwrap();
        check_host("url", &lan).expect("a LAN address is a destination");
        assert_eq!(
            Resolver.resolve("10.213.99.7:8080").unwrap(),
            ["10.213.99.7:8080".parse().unwrap()]
        );
    }
}
