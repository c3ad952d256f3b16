//! The MQTT settings, and the parsers of the broker's address and the topic
//! prefixes (the variables themselves are in the node's configuration).

use std::path::PathBuf;

#[derive(Clone, Debug, PartialEq)]
pub struct Config {
    /// `mqtts://`: TLS to the broker.
    pub tls: bool,
    pub host: String,
    pub port: u16,
    pub user: Option<String>,
    /// Never logged, never shown.
    pub password: Option<String>,
    pub topic_prefix: String,
    pub discovery_prefix: String,
    /// The certificate authorities trusted for `mqtts://`; None: the system's.
    pub ca_file: Option<PathBuf>,
}

/// `mqtt://host[:port]` or `mqtts://host[:port]` (an IPv6 address in
/// brackets): TLS or not, the host, the port. The error goes after the
/// variable's name.
pub fn parse_url(url: &str) -> Result<(bool, String, u16), &'static str> {
    let url = url.trim();
    let (tls, rest) = if let Some(rest) = url.strip_prefix("mqtts://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("mqtt://") {
        (false, rest)
    } else {
        return Err("must start with mqtt:// or mqtts://, like mqtt://broker.lan:1883");
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.contains('@') {
        // It would sit in the logs with the URL: the password has its own variable.
        return Err("must not carry a user or password: set MQTT_USER and MQTT_PASSWORD");
    }
    if rest.contains(['/', '?', '#']) || !rest.is_ascii() {
        return Err("must be a scheme, an ASCII host and a port only, like mqtt://broker.lan:1883");
    }
    let (host, port) = match rest.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']').ok_or("has an unclosed [")?;
            (host, after.strip_prefix(':'))
        }
        None => match rest.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (rest, None),
        },
    };
    if host.is_empty() {
        return Err("needs a host, like mqtt://broker.lan:1883");
    }
    let port = match port {
        None => {
            if tls {
                8883
            } else {
                1883
            }
        }
        Some(port) => port
            .parse()
            .ok()
            .filter(|p| *p > 0)
            .ok_or("has a bad port")?,
    };
    Ok((tls, host.to_owned(), port))
}

/// A topic prefix: one or more levels, with no wildcard and no empty level.
/// The error goes after the variable's name.
pub fn topic_prefix(text: &str) -> Result<String, &'static str> {
    let value = text.trim();
    if value.split('/').any(str::is_empty) || value.contains(['+', '#', '\0']) {
        return Err("must be topic levels like nvr or home/nvr, without + # or empty levels");
    }
    Ok(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let table = [
            ("mqtt://broker.lan", Ok((false, "broker.lan", 1883))),
            ("mqtts://broker.lan", Ok((true, "broker.lan", 8883))),
            ("mqtt://10.0.0.2:1884/", Ok((false, "10.0.0.2", 1884))),
            ("mqtts://[fd00::2]:8884", Ok((true, "fd00::2", 8884))),
            ("mqtt://[fd00::2]", Ok((false, "fd00::2", 1883))),
            ("tcp://broker:1883", Err(())),
            ("mqtt://user:pw@broker", Err(())),
            ("mqtt://broker:0", Err(())),
            ("mqtt://broker:x", Err(())),
            ("mqtt://:1883", Err(())),
            ("mqtt://broker/topic", Err(())),
            ("mqtt://[fd00::2", Err(())),
            ("mqtt://brökér", Err(())),
        ];
        for (url, want) in table {
            let got = parse_url(url);
            match want {
                Ok((tls, host, port)) => {
                    assert_eq!(got, Ok((tls, host.to_owned(), port)), "{url}")
                }
                Err(()) => assert!(got.is_err(), "{url}: {got:?}"),
            }
        }
    }

    #[test]
    fn topic_prefixes() {
        assert_eq!(topic_prefix(" home/nvr "), Ok("home/nvr".to_owned()));
        for bad in ["nvr/#", "nvr/", "a//b", "+", ""] {
            assert!(topic_prefix(bad).is_err(), "{bad:?}");
        }
    }
}
