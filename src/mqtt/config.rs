//! The MQTT settings from the environment: `MQTT_URL` (unset: MQTT is off),
//! `MQTT_USER`, `MQTT_PASSWORD` or `MQTT_PASSWORD_FILE`, the two topic
//! prefixes and `MQTT_CA_FILE`.

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

/// Reads the settings through `var` (which gives a variable's value if set
/// and not blank). None when `MQTT_URL` is unset.
pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Option<Config>, String> {
    let Some(url) = var("MQTT_URL") else {
        return Ok(None);
    };
    let (tls, host, port) = parse_url(url.trim())?;
    let password = match (var("MQTT_PASSWORD"), var("MQTT_PASSWORD_FILE")) {
        (Some(_), Some(_)) => {
            return Err("set MQTT_PASSWORD or MQTT_PASSWORD_FILE, not both".into());
        }
        (Some(password), None) => Some(password),
        (None, Some(file)) => Some(
            std::fs::read_to_string(file.trim())
                .map_err(|e| format!("cannot read MQTT_PASSWORD_FILE {file:?}: {e}"))?
                .trim_end_matches(['\r', '\n'])
                .to_owned(),
        ),
        (None, None) => None,
    };
    let user = var("MQTT_USER").map(|u| u.trim().to_owned());
    if password.is_some() && user.is_none() {
        return Err("MQTT_PASSWORD needs MQTT_USER".into());
    }
    Ok(Some(Config {
        tls,
        host,
        port,
        user,
        password,
        topic_prefix: prefix("MQTT_TOPIC_PREFIX", var("MQTT_TOPIC_PREFIX"), "nvr")?,
        discovery_prefix: prefix(
            "MQTT_DISCOVERY_PREFIX",
            var("MQTT_DISCOVERY_PREFIX"),
            "homeassistant",
        )?,
        ca_file: var("MQTT_CA_FILE").map(|f| PathBuf::from(f.trim())),
    }))
}

/// `mqtt://host[:port]` or `mqtts://host[:port]` (an IPv6 address in brackets).
fn parse_url(url: &str) -> Result<(bool, String, u16), String> {
    let bad = |why: &str| format!("MQTT_URL {why}, like mqtt://broker.lan:1883, not {url:?}");
    let (tls, rest) = if let Some(rest) = url.strip_prefix("mqtts://") {
        (true, rest)
    } else if let Some(rest) = url.strip_prefix("mqtt://") {
        (false, rest)
    } else {
        return Err(bad("must start with mqtt:// or mqtts://"));
    };
    let rest = rest.strip_suffix('/').unwrap_or(rest);
    if rest.contains('@') {
        // It would sit in the logs with the URL: the password has its own variable.
        return Err(
            "MQTT_URL must not carry a user or password: set MQTT_USER and MQTT_PASSWORD".into(),
        );
    }
    if rest.contains(['/', '?', '#']) || !rest.is_ascii() {
        return Err(bad("must be a scheme, an ASCII host and a port only"));
    }
    let (host, port) = match rest.strip_prefix('[') {
        Some(v6) => {
            let (host, after) = v6.split_once(']').ok_or_else(|| bad("has an unclosed ["))?;
            (host, after.strip_prefix(':'))
        }
        None => match rest.rsplit_once(':') {
            Some((host, port)) => (host, Some(port)),
            None => (rest, None),
        },
    };
    if host.is_empty() {
        return Err(bad("needs a host"));
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
            .ok_or_else(|| bad("has a bad port"))?,
    };
    Ok((tls, host.to_owned(), port))
}

/// A topic prefix: one or more levels, with no wildcard and no empty level.
fn prefix(name: &str, value: Option<String>, default: &str) -> Result<String, String> {
    let Some(value) = value else {
        return Ok(default.to_owned());
    };
    let value = value.trim();
    if value.split('/').any(str::is_empty) || value.contains(['+', '#', '\0']) {
        return Err(format!(
            "{name} must be topic levels like {default} or home/{default}, without + # or empty levels, not {value:?}"
        ));
    }
    Ok(value.to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Option<Config>, String> {
        from_vars(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

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
    fn settings() {
        assert_eq!(config(&[]), Ok(None));
        let c = config(&[("MQTT_URL", "mqtt://b")]).unwrap().unwrap();
        assert_eq!((c.user, c.password), (None, None));
        assert_eq!(
            (c.topic_prefix.as_str(), c.discovery_prefix.as_str()),
            ("nvr", "homeassistant")
        );
        let dir = std::env::temp_dir().join(format!("nvr-mqtt-config-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("password");
        std::fs::write(&file, "s3cret\n").unwrap();
        let c = config(&[
            ("MQTT_URL", "mqtts://b"),
            ("MQTT_USER", "nvr"),
            ("MQTT_PASSWORD_FILE", file.to_str().unwrap()),
            ("MQTT_TOPIC_PREFIX", "home/nvr"),
            ("MQTT_CA_FILE", "/etc/ca.pem"),
        ])
        .unwrap()
        .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!(c.password.as_deref(), Some("s3cret"));
        assert_eq!(c.topic_prefix, "home/nvr");
        assert_eq!(c.ca_file, Some(PathBuf::from("/etc/ca.pem")));
        for bad in [
            vec![("MQTT_URL", "mqtt://b"), ("MQTT_PASSWORD", "p")],
            vec![
                ("MQTT_URL", "mqtt://b"),
                ("MQTT_USER", "u"),
                ("MQTT_PASSWORD", "p"),
                ("MQTT_PASSWORD_FILE", "/x"),
            ],
            vec![
                ("MQTT_URL", "mqtt://b"),
                ("MQTT_USER", "u"),
                ("MQTT_PASSWORD_FILE", "/nonexistent/x"),
            ],
            vec![("MQTT_URL", "mqtt://b"), ("MQTT_TOPIC_PREFIX", "nvr/#")],
            vec![("MQTT_URL", "mqtt://b"), ("MQTT_TOPIC_PREFIX", "nvr/")],
            vec![("MQTT_URL", "mqtt://b"), ("MQTT_DISCOVERY_PREFIX", "a//b")],
        ] {
            assert!(config(&bad).is_err(), "{bad:?}");
        }
    }
}
