//! Configuration from environment variables, each with a default that works
//! on a developer's laptop.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

pub struct Config {
    pub listen_address: IpAddr,
    pub port: u16,
    pub data_dir: PathBuf,
    pub node_name: String,
    pub relay_url: String,
    pub ffprobe: PathBuf,
    pub camera_check_interval: Duration,
    /// Serve the UI from this folder instead of the embedded copy (development).
    pub www_dir: Option<PathBuf>,
    /// Events kept; the oldest go first, with their clips.
    pub max_events: u64,
    /// The cloud service; None: the link is disabled and the node never calls out.
    pub cloud_url: Option<String>,
    /// The machine's host name, which browsers may use to reach the node.
    pub host_name: String,
    /// More host names browsers may use (`ALLOWED_HOSTS`, comma-separated).
    pub allowed_hosts: Vec<String>,
}

pub const HELP: &str = "\
nvr-node: the local node of a network video recorder.

Serves the Local Node API and the browser UI on http://LISTEN_ADDRESS:PORT.

Usage: nvr-node [--help | --version]

Environment:
  PORT        port to listen on (default 8080; 0 picks a free port)
  LISTEN_ADDRESS
              address to listen on (default 0.0.0.0: the whole LAN)
  DATA_DIR    folder for the SQLite database (default ./data)
  NODE_NAME   name shown in status (default: the host name)
  RELAY_URL   stream relay (go2rtc) API address (default http://127.0.0.1:1984)
  FFPROBE     ffprobe program used to probe cameras (default ffprobe from PATH)
  CAMERA_CHECK_INTERVAL
              how often each camera's liveness is checked (default 30s)
      CLOUD_URL   the cloud service for remote access (default: none, the node never calls out)
  MAX_EVENTS  events kept, the oldest dropped with their clips (default 10000)
  WWW_DIR     serve the browser UI from this folder, not the built-in copy
    ALLOWED_HOSTS
              host names, comma-separated, that browsers may use besides IP
              addresses, localhost, .local names and the host name
  LOG_LEVEL   error, warn, info or debug (default info)
";

impl Config {
    /// Reads the configuration through `var`, which returns a variable's value if set.
    pub fn from_vars(var: impl Fn(&str) -> Option<String>) -> Result<Config, String> {
        let var = |name: &str| var(name).filter(|v| !v.trim().is_empty());
        let port = match var("PORT") {
            None => 8080,
            Some(p) => p
                .trim()
                .parse()
                .map_err(|_| format!("PORT must be a number from 0 to 65535, not {p:?}"))?,
        };
        let listen_address = match var("LISTEN_ADDRESS") {
            None => IpAddr::from([0, 0, 0, 0]),
            Some(a) => a
                .trim()
                .parse()
                .map_err(|_| format!("LISTEN_ADDRESS must be an IP address, not {a:?}"))?,
        };
        let relay_url = var("RELAY_URL").unwrap_or_else(|| "http://127.0.0.1:1984".into());
        if !(relay_url.starts_with("http://") || relay_url.starts_with("https://")) {
            return Err(format!(
                "RELAY_URL must start with http://, not {relay_url:?}"
            ));
        }
        let camera_check_interval = match var("CAMERA_CHECK_INTERVAL") {
            None => Duration::from_secs(30),
            Some(text) => humantime::parse_duration(text.trim())
                .ok()
                .filter(|d| *d >= Duration::from_secs(1))
                .ok_or_else(|| {
                    format!("CAMERA_CHECK_INTERVAL must be a duration of 1s or more, like 30s, not {text:?}")
                })?,
        };
        let max_events =
            match var("MAX_EVENTS") {
                None => 10_000,
                Some(n) => n.trim().parse().ok().filter(|n| *n > 0).ok_or_else(|| {
                    format!("MAX_EVENTS must be a whole number above 0, not {n:?}")
                })?,
            };
        let cloud_url = var("CLOUD_URL").map(|url| url.trim().to_owned());
        if let Some(url) = &cloud_url
            && !(url.starts_with("http://") || url.starts_with("https://"))
        {
            return Err(format!(
                "CLOUD_URL must start with https:// or http://, not {url:?}"
            ));
        }
        let machine_name = host_name();
        Ok(Config {
            listen_address,
            port,
            data_dir: var("DATA_DIR").unwrap_or_else(|| "./data".into()).into(),
            node_name: var("NODE_NAME").unwrap_or_else(|| machine_name.clone()),
            host_name: machine_name,
            allowed_hosts: var("ALLOWED_HOSTS")
                .map(|hosts| {
                    hosts
                        .split(',')
                        .map(|h| h.trim().to_ascii_lowercase())
                        .filter(|h| !h.is_empty())
                        .collect()
                })
                .unwrap_or_default(),
            relay_url,
            ffprobe: var("FFPROBE").unwrap_or_else(|| "ffprobe".into()).into(),
            camera_check_interval,
            www_dir: var("WWW_DIR").map(PathBuf::from),
            max_events,
            cloud_url,
        })
    }
}

fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes within it.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    let len = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    match String::from_utf8_lossy(&buf[..len]).trim() {
        name if rc == 0 && !name.is_empty() => name.to_owned(),
        _ => "nvr-node".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Config, String> {
        Config::from_vars(|name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        })
    }

    #[test]
    fn defaults() {
        let c = config(&[]).unwrap();
        assert_eq!(c.port, 8080);
        assert_eq!(c.listen_address.to_string(), "0.0.0.0");
        assert_eq!(c.data_dir, PathBuf::from("./data"));
        assert_eq!(c.relay_url, "http://127.0.0.1:1984");
        assert_eq!(c.ffprobe, PathBuf::from("ffprobe"));
        assert!(!c.node_name.is_empty());
        assert_eq!(c.camera_check_interval, Duration::from_secs(30));
    }

    #[test]
    fn overrides() {
        let c = config(&[
            ("PORT", "0"),
            ("DATA_DIR", "/var/lib/nvr"),
            ("NODE_NAME", "garage"),
            ("RELAY_URL", "http://10.0.0.5:1984"),
            ("FFPROBE", "/opt/ffprobe"),
            ("CAMERA_CHECK_INTERVAL", "1m 30s"),
        ])
        .unwrap();
        assert_eq!(c.camera_check_interval, Duration::from_secs(90));
        assert_eq!(
            (
                c.port,
                c.data_dir,
                c.node_name.as_str(),
                c.relay_url.as_str(),
                c.ffprobe
            ),
            (
                0,
                "/var/lib/nvr".into(),
                "garage",
                "http://10.0.0.5:1984",
                "/opt/ffprobe".into()
            )
        );
    }

    #[test]
    fn bad_values() {
        for vars in [
            [("PORT", "http")],
            [("PORT", "70000")],
            [("RELAY_URL", "exec:x")],
            [("CAMERA_CHECK_INTERVAL", "often")],
            [("CAMERA_CHECK_INTERVAL", "10ms")],
            [("LISTEN_ADDRESS", "localhost")],
            [("MAX_EVENTS", "0")],
            [("CLOUD_URL", "ftp://cloud")],
        ] {
            assert!(config(&vars).is_err(), "{vars:?}");
        }
    }
}
