//! Configuration from environment variables, each with a default that works
//! on a developer's laptop.

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cameras::rtsp_url::http_host;
use crate::mqtt;
use crate::sys::net;

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
    /// The interfaces ONVIF discovery probes (`DISCOVERY_INTERFACES`,
    /// comma-separated); empty: every IPv4 interface up and not loopback.
    pub discovery_interfaces: Vec<String>,
    /// The ffmpeg program that records cameras.
    pub ffmpeg: PathBuf,
    /// The classifier program (`nvr-classify`) and its model's folder.
    pub classifier: PathBuf,
    pub model_dir: PathBuf,
    /// Where recordings go: one folder per camera, one per hour inside it.
    pub recordings_dir: PathBuf,
    /// The most bytes recordings may take; None: only the free-space reserve limits them.
    pub recordings_max_bytes: Option<u64>,
    /// Free space kept on the recordings' file system; None: 1 GiB or 10 %
    /// of the file system, whichever is larger.
    pub recordings_keep_free: Option<u64>,
    /// The most bytes events' clips and thumbnails may take; past it the
    /// oldest events go with their files.
    pub clips_max_bytes: u64,
    /// Free space kept on the clips' file system; None: 512 MiB or 5 % of
    /// the file system, whichever is larger.
    pub clips_keep_free: Option<u64>,
    /// The MQTT broker for Home Assistant; None: MQTT is off.
    pub mqtt: Option<mqtt::config::Config>,
    /// `NODE_URL`, the address Home Assistant reaches the node at, without
    /// a trailing slash; None: `http://<host name>:<port>`.
    pub node_url: Option<String>,
}

/// Clips' budget when none is set: about 500 clips of 15 s from a 2 Mbit/s
/// camera, an eighth of a 16 GB card.
const DEFAULT_CLIPS_MAX_BYTES: u64 = 2 << 30;

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
  FFMPEG      ffmpeg program used to record cameras (default ffmpeg from PATH)
  CLASSIFIER  the classifier program (default nvr-classify beside this program)
  MODEL_DIR   the classifier's model (default ../share/nvr-node/model from
              this program's folder); motion events are classified (person,
              vehicle, animal, package) only when both are there
  RECORDINGS_DIR
              folder of the recordings (default DATA_DIR/recordings)
  RECORDINGS_MAX_BYTES
              the most space recordings may take, like 200G or 500MiB
              (default: no limit but RECORDINGS_KEEP_FREE)
  RECORDINGS_KEEP_FREE
              free space always left on the recordings' disk, the oldest
              recordings deleted to keep it (default 1G or 10 % of the
              disk, the larger)
  CLIPS_MAX_BYTES
              the most space events' clips and thumbnails (in DATA_DIR/clips)
              may take, the oldest events deleted with them (default 2G)
  CLIPS_KEEP_FREE
              free space always left on the clips' disk, the oldest events
              deleted with their clips to keep it (default 512M or 5 % of
              the disk, the larger)
  CAMERA_CHECK_INTERVAL
              how often each camera's liveness is checked (default 30s)
  CLOUD_URL   the cloud service for remote access (default: none, the node never calls out)
  MAX_EVENTS  events kept, the oldest dropped with their clips (default 10000)
  WWW_DIR     serve the browser UI from this folder, not the built-in copy
  ALLOWED_HOSTS
              host names, comma-separated, that browsers may use besides IP
              addresses, localhost, .local names and the host name
  DISCOVERY_INTERFACES
              network interfaces, comma-separated, that camera discovery
              searches (default: every IPv4 interface up and not loopback)
  LOG_LEVEL   error, warn, info or debug (default info)

Home Assistant (MQTT discovery; off unless MQTT_URL is set):
  MQTT_URL    the broker, mqtt://host:1883 or mqtts://host:8883
  MQTT_USER, MQTT_PASSWORD (or MQTT_PASSWORD_FILE)
              the node's account on the broker
  MQTT_TOPIC_PREFIX
              the node's topics begin with it (default nvr)
  MQTT_DISCOVERY_PREFIX
              Home Assistant's discovery prefix (default homeassistant)
  MQTT_CA_FILE
              certificate authorities (PEM) for mqtts:// (default: the system's)
  NODE_URL    the address Home Assistant reaches the node at, for snapshot
              and clip links (default http://HOST NAME:PORT)
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
        ascii_url("RELAY_URL", &relay_url)?;
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
        if let Some(url) = &cloud_url {
            ascii_url("CLOUD_URL", url)?;
        }
        let size = |name: &str, value: Option<String>| -> Result<Option<u64>, String> {
            value
                .map(|text| {
                    parse_size(&text).ok_or_else(|| {
                        format!("{name} must be a size like 500M, 200G or 1T, not {text:?}")
                    })
                })
                .transpose()
        };
        let data_dir: PathBuf = var("DATA_DIR").unwrap_or_else(|| "./data".into()).into();
        let machine_name = host_name();
        let node_url = var("NODE_URL")
            .map(|url| {
                let url = url.trim().trim_end_matches('/').to_owned();
                match http_host(&url) {
                    Some(_) if url.is_ascii() => Ok(url),
                    _ => Err(format!(
                        "NODE_URL must be an http:// or https:// address with an ASCII host, like http://nvr.lan:8080, not {url:?}"
                    )),
                }
            })
            .transpose()?;
        let list = |value: Option<String>| -> Vec<String> {
            value
                .map(|items| {
                    items
                        .split(',')
                        .map(|i| i.trim().to_owned())
                        .filter(|i| !i.is_empty())
                        .collect()
                })
                .unwrap_or_default()
        };
        let mut allowed_hosts: Vec<String> = list(var("ALLOWED_HOSTS"))
            .into_iter()
            .map(|h| h.to_ascii_lowercase())
            .collect();
        // Home Assistant fetches thumbnails by NODE_URL: its host must pass
        // the browser protections.
        if let Some(host) = node_url.as_deref().and_then(http_host) {
            allowed_hosts.push(host.to_ascii_lowercase());
        }
        Ok(Config {
            listen_address,
            port,
            recordings_dir: var("RECORDINGS_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| data_dir.join("recordings")),
            recordings_max_bytes: size("RECORDINGS_MAX_BYTES", var("RECORDINGS_MAX_BYTES"))?,
            recordings_keep_free: size("RECORDINGS_KEEP_FREE", var("RECORDINGS_KEEP_FREE"))?,
            clips_max_bytes: size("CLIPS_MAX_BYTES", var("CLIPS_MAX_BYTES"))?
                .unwrap_or(DEFAULT_CLIPS_MAX_BYTES),
            clips_keep_free: size("CLIPS_KEEP_FREE", var("CLIPS_KEEP_FREE"))?,
            ffmpeg: var("FFMPEG").unwrap_or_else(|| "ffmpeg".into()).into(),
            classifier: var("CLASSIFIER")
                .map(PathBuf::from)
                .unwrap_or_else(|| beside_program("nvr-classify")),
            model_dir: var("MODEL_DIR")
                .map(PathBuf::from)
                .unwrap_or_else(|| beside_program("../share/nvr-node/model")),
            data_dir,
            node_name: var("NODE_NAME").unwrap_or_else(|| machine_name.clone()),
            host_name: machine_name,
            allowed_hosts,
            discovery_interfaces: list(var("DISCOVERY_INTERFACES")),
            mqtt: mqtt::config::from_vars(var)?,
            node_url,
            relay_url,
            ffprobe: var("FFPROBE").unwrap_or_else(|| "ffprobe".into()).into(),
            camera_check_interval,
            www_dir: var("WWW_DIR").map(PathBuf::from),
            max_events,
            cloud_url,
        })
    }
}

/// `path` relative to the folder of the running program.
fn beside_program(path: &str) -> PathBuf {
    let program = std::env::current_exe().unwrap_or_default();
    program.parent().unwrap_or(Path::new(".")).join(path)
}

/// Bytes from `123`, `500K`, `500M`, `1.5G`, `2T` (powers of 1024, with or
/// without a trailing `B` or `iB`), or `500MB`-style powers of 1000 when
/// spelt `KB`, `MB`, `GB`, `TB`.
fn parse_size(text: &str) -> Option<u64> {
    let text = text.trim();
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let number: f64 = number.parse().ok()?;
    let unit = unit.trim();
    let power = |letter: char| "KMGT".find(letter).map(|i| i as i32 + 1);
    let multiplier = match unit.len() {
        0 => 1.0,
        1 if unit == "B" => 1.0,
        1 => 1024f64.powi(power(unit.chars().next()?.to_ascii_uppercase())?),
        2 if unit.ends_with('B') => 1000f64.powi(power(unit.chars().next()?.to_ascii_uppercase())?),
        3 if unit.ends_with("iB") => {
            1024f64.powi(power(unit.chars().next()?.to_ascii_uppercase())?)
        }
        _ => return None,
    };
    let bytes = number * multiplier;
    (bytes.is_finite() && bytes >= 0.0 && bytes < u64::MAX as f64).then_some(bytes.round() as u64)
}

fn host_name() -> String {
    match net::host_name() {
        Ok(name) if !name.trim().is_empty() => name.trim().to_owned(),
        _ => "nvr-node".to_owned(),
    }
}

/// The HTTP client is built without Unicode host names (idna_adapter 1.0:
/// no IDNA tables in the binary), so an internationalized name must come in
/// its ASCII form.
fn ascii_url(name: &str, url: &str) -> Result<(), String> {
    if url.is_ascii() {
        Ok(())
    } else {
        Err(format!(
            "{name} must be ASCII: write an internationalized host name in its xn-- form, not {url:?}"
        ))
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
        assert_eq!(c.ffmpeg, PathBuf::from("ffmpeg"));
        assert_eq!(c.recordings_dir, PathBuf::from("./data/recordings"));
        assert_eq!(
            (c.recordings_max_bytes, c.recordings_keep_free),
            (None, None)
        );
        assert_eq!((c.clips_max_bytes, c.clips_keep_free), (2 << 30, None));
    }

    #[test]
    fn clips() {
        let c = config(&[("CLIPS_MAX_BYTES", "500M"), ("CLIPS_KEEP_FREE", "1G")]).unwrap();
        assert_eq!(
            (c.clips_max_bytes, c.clips_keep_free),
            (500 << 20, Some(1 << 30))
        );
    }

    #[test]
    fn recordings() {
        let c = config(&[
            ("DATA_DIR", "/var/lib/nvr"),
            ("FFMPEG", "/opt/ffmpeg"),
            ("RECORDINGS_MAX_BYTES", "200G"),
            ("RECORDINGS_KEEP_FREE", "512MiB"),
        ])
        .unwrap();
        assert_eq!(c.recordings_dir, PathBuf::from("/var/lib/nvr/recordings"));
        assert_eq!(c.ffmpeg, PathBuf::from("/opt/ffmpeg"));
        assert_eq!(c.recordings_max_bytes, Some(200 << 30));
        assert_eq!(c.recordings_keep_free, Some(512 << 20));
        let c = config(&[("RECORDINGS_DIR", "/mnt/disk/nvr")]).unwrap();
        assert_eq!(c.recordings_dir, PathBuf::from("/mnt/disk/nvr"));
    }

    #[test]
    fn sizes() {
        let table = [
            ("0", Some(0)),
            ("123", Some(123)),
            ("123B", Some(123)),
            ("4k", Some(4096)),
            ("500M", Some(500 << 20)),
            ("500MiB", Some(500 << 20)),
            ("500MB", Some(500_000_000)),
            ("1.5G", Some(3 << 29)),
            (" 2T ", Some(2 << 40)),
            ("10 GiB", Some(10 << 30)),
            ("", None),
            ("G", None),
            ("-1", None),
            ("5X", None),
            ("5MiBs", None),
            ("1e3", None),
            ("1.2.3", None),
        ];
        for (text, want) in table {
            assert_eq!(parse_size(text), want, "{text:?}");
        }
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
    fn node_url() {
        let c = config(&[
            ("NODE_URL", "http://NVR.lan:8080/"),
            ("ALLOWED_HOSTS", "a.lan"),
            ("DISCOVERY_INTERFACES", "eth0, wlan0,"),
        ])
        .unwrap();
        assert_eq!(c.node_url.as_deref(), Some("http://NVR.lan:8080"));
        assert_eq!(c.allowed_hosts, ["a.lan", "nvr.lan"]);
        assert_eq!(c.discovery_interfaces, ["eth0", "wlan0"]);
        assert_eq!(config(&[]).unwrap().node_url, None);
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
            [("CLOUD_URL", "https://bücher.example")],
            [("RELAY_URL", "http://relä:1984")],
            [("RECORDINGS_MAX_BYTES", "lots")],
            [("RECORDINGS_KEEP_FREE", "-5G")],
            [("CLIPS_MAX_BYTES", "a lot")],
            [("CLIPS_KEEP_FREE", "5Q")],
            [("NODE_URL", "nvr.lan:8080")],
            [("NODE_URL", "http://")],
            [("NODE_URL", "http://u:p@nvr.lan")],
            [("MQTT_URL", "tcp://broker")],
        ] {
            assert!(config(&vars).is_err(), "{vars:?}");
        }
    }
}
