//! The node's configuration, from environment variables, each with a
//! default that works on a developer's laptop.
//!
//! Each variable is written once, in `table.rs`: its name, default, help
//! and parser. `nvr-node --help` is written from the table (`help.rs`),
//! `Config::from_vars` reads each variable through its entry, and the tests
//! in `docs.rs` check the settings file installed on boards
//! (`deploy/nvr-node.default`) and `docs/configuration.md` against it.

mod help;
mod table;

#[cfg(test)]
mod docs;

use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::cameras::rtsp_url::http_host;
use crate::mqtt;
use crate::sys::net;

use table::*;

pub use table::{IN_UI, InUi};

pub struct Config {
    pub listen_address: IpAddr,
    pub port: u16,
    pub data_dir: PathBuf,
    pub node_name: String,
    pub relay_url: String,
    pub ffprobe: PathBuf,
    pub camera_check_interval: Duration,
    pub max_cameras: usize,
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
    pub recordings_reserve: Option<u64>,
    /// The most bytes events' clips and thumbnails may take; past it the
    /// oldest events go with their files.
    pub clips_max_bytes: u64,
    /// Free space kept on the clips' file system; None: 512 MiB or 5 % of
    /// the file system, whichever is larger.
    pub clips_reserve: Option<u64>,
    /// The most bytes kept events' clips and thumbnails may take.
    pub clips_keep_max_bytes: u64,
    /// Events older than this many days are deleted (kept ones aside).
    pub events_retain_days: Option<u64>,
    /// The MQTT broker for Home Assistant; None: MQTT is off.
    pub mqtt: Option<mqtt::config::Config>,
    /// `NODE_URL`, the address Home Assistant reaches the node at, without
    /// a trailing slash; None: `http://<host name>:<port>`.
    pub node_url: Option<String>,
    /// HTTPS (`HTTPS_PORT`); None: off.
    pub https: Option<Https>,
}

pub struct Https {
    pub port: u16,
    /// `TLS_CERT_FILE` and `TLS_KEY_FILE`; None: the node's own certificate.
    pub files: Option<CertificateFiles>,
}

pub struct CertificateFiles {
    pub certificate: PathBuf,
    pub key: PathBuf,
}

/// `nvr-node --help`.
pub fn help() -> &'static str {
    help::HELP
}

/// The environment: a variable's value, if it is set.
type Env<'a> = &'a dyn Fn(&str) -> Option<String>;

/// The environment the node started with, kept to read it again with the
/// settings changed in the UI over it.
pub type Environment = Box<dyn Fn(&str) -> Option<String> + Send + Sync>;

/// `env` with the settings a person set in the UI (`stored`: name, text)
/// over it; a setting set there hides what its value replaces in `env`.
pub fn overlay<'a>(
    stored: &'a [(String, String)],
    env: Env<'a>,
) -> impl Fn(&str) -> Option<String> + 'a {
    move |name| {
        let set = |wanted: &str| stored.iter().find(|(n, _)| n == wanted);
        if let Some((_, text)) = set(name) {
            return Some(text.clone());
        }
        let hidden = IN_UI
            .iter()
            .any(|s| s.shadows == Some(name) && set(s.name).is_some());
        if hidden { None } else { env(name) }
    }
}

/// The setting of the UI called `name`.
pub fn in_ui(name: &str) -> Result<&'static InUi, String> {
    IN_UI
        .iter()
        .find(|s| s.name == name)
        .ok_or_else(|| format!("{name} is not a setting changed here: see docs/configuration.md"))
}

impl InUi {
    /// What is wrong with `text` as a value of the setting, naming it (a
    /// secret's text is never repeated).
    pub fn check_text(&self, text: &str) -> Result<(), String> {
        (self.check)(text).map_err(|wrong| match self.secret {
            true => format!("{} {wrong}", self.name),
            false => invalid(self.name, wrong, text),
        })
    }
}

// Inlined, the methods leave at each call only the constants they pass
// on (the name, the old name, the default and the parser), not the rest of
// the variable's documentation.
impl<T> Var<T> {
    /// The value set, or None when the variable is unset or blank.
    #[inline(always)]
    fn set(&self, env: Env) -> Result<Option<T>, String> {
        parse_set(self.doc.name, self.text(env)?, self.parse)
    }

    /// The value set, or the default's.
    #[inline(always)]
    fn value(&self, env: Env) -> Result<T, String> {
        let Fallback::Value(default) = self.doc.default else {
            unreachable!("{} has no default value", self.doc.name)
        };
        parse_value(self.doc.name, self.text(env)?, default, self.parse)
    }

    /// The text set, if any; for a renamed variable, else its old name's.
    #[inline(always)]
    fn text(&self, env: Env) -> Result<Option<String>, String> {
        match self.doc.old_name {
            None => Ok(text(env, self.doc.name)),
            Some(old_name) => renamed(env, self.doc.name, old_name),
        }
    }
}

type Parse<T> = fn(&str) -> Result<T, &'static str>;

fn parse_set<T>(name: &str, text: Option<String>, parse: Parse<T>) -> Result<Option<T>, String> {
    match text {
        None => Ok(None),
        Some(text) => parse(&text).map(Some).map_err(|e| invalid(name, e, &text)),
    }
}

fn parse_value<T>(
    name: &str,
    text: Option<String>,
    default: &str,
    parse: Parse<T>,
) -> Result<T, String> {
    let text = text.as_deref().unwrap_or(default);
    parse(text).map_err(|e| invalid(name, e, text))
}

/// What is wrong with `text`, set as `name`; the text is shown unless it
/// may hold a password (a URL's user:password@).
fn invalid(name: &str, wrong: &str, text: &str) -> String {
    if text.contains('@') {
        format!("{name} {wrong}")
    } else {
        format!("{name} {wrong}, not {text:?}")
    }
}

/// The text of `name`, if set and not blank.
fn text(env: Env, name: &str) -> Option<String> {
    env(name).filter(|v| !v.trim().is_empty())
}

/// The text of `name`, else of its old name, which a settings file kept by
/// an upgrade may still set; both set to different values are refused.
fn renamed(env: Env, name: &str, old_name: &str) -> Result<Option<String>, String> {
    let Some(old) = text(env, old_name) else {
        return Ok(text(env, name));
    };
    match text(env, name) {
        Some(value) if value.trim() != old.trim() => Err(format!(
            "{name} is {value:?} and {old_name}, its old name, is {old:?}: keep only {name}"
        )),
        value => {
            log::warn!(
                "{old_name} is the old name of {name}: read as {name}; rename it in the \
                 settings (/etc/default/nvr-node on a board)"
            );
            Ok(value.or(Some(old)))
        }
    }
}

impl Config {
    /// Reads the configuration through `env`, which returns a variable's value if set.
    /// `env` is not generic: one copy of this serves every caller.
    pub fn from_vars(env: Env) -> Result<Config, String> {
        // The values that own nothing first: an error among them has
        // nothing to free (less code).
        let port = PORT.value(env)?;
        let listen_address = LISTEN_ADDRESS.value(env)?;
        let camera_check_interval = CAMERA_CHECK_INTERVAL.value(env)?;
        let max_cameras = MAX_CAMERAS.value(env)?;
        let max_events = MAX_EVENTS.value(env)?;
        let recordings_max_bytes = RECORDINGS_MAX_BYTES.set(env)?;
        let recordings_reserve = RECORDINGS_RESERVE.set(env)?;
        let clips_max_bytes = CLIPS_MAX_BYTES.value(env)?;
        let clips_reserve = CLIPS_RESERVE.set(env)?;
        let clips_keep_max_bytes = CLIPS_KEEP_MAX_BYTES.value(env)?;
        let events_retain_days = EVENTS_RETAIN_DAYS.set(env)?;
        let data_dir = DATA_DIR.value(env)?;
        let node_url = NODE_URL.set(env)?;
        let mut allowed_hosts = ALLOWED_HOSTS.set(env)?.unwrap_or_default();
        // Home Assistant fetches thumbnails by NODE_URL: its host must pass
        // the browser protections.
        if let Some(host) = node_url.as_deref().and_then(http_host) {
            allowed_hosts.push(host.to_owned());
        }
        // Host names compare without case.
        allowed_hosts
            .iter_mut()
            .for_each(|h| h.make_ascii_lowercase());
        let host_name = host_name();
        Ok(Config {
            recordings_dir: RECORDINGS_DIR
                .set(env)?
                .unwrap_or_else(|| data_dir.join("recordings")),
            ffmpeg: FFMPEG.value(env)?,
            classifier: CLASSIFIER
                .set(env)?
                .unwrap_or_else(|| beside_program("nvr-classify")),
            model_dir: MODEL_DIR
                .set(env)?
                .unwrap_or_else(|| beside_program("../share/nvr-node/model")),
            node_name: NODE_NAME.set(env)?.unwrap_or_else(|| host_name.clone()),
            discovery_interfaces: DISCOVERY_INTERFACES.set(env)?.unwrap_or_default(),
            mqtt: mqtt_settings(env)?,
            https: https_settings(env)?,
            relay_url: RELAY_URL.value(env)?,
            ffprobe: FFPROBE.value(env)?,
            www_dir: WWW_DIR.set(env)?,
            cloud_url: CLOUD_URL.set(env)?,
            port,
            listen_address,
            camera_check_interval,
            max_cameras,
            max_events,
            recordings_max_bytes,
            recordings_reserve,
            clips_max_bytes,
            clips_reserve,
            clips_keep_max_bytes,
            events_retain_days,
            data_dir,
            node_url,
            allowed_hosts,
            host_name,
        })
    }
}

/// How much the node logs, read before the rest so that the rest can log.
pub fn log_level(var: impl Fn(&str) -> Option<String>) -> Result<log::LevelFilter, String> {
    LOG_LEVEL.value(&var)
}

/// The MQTT settings; None when `MQTT_URL` is unset (the rest then unread).
fn mqtt_settings(env: Env) -> Result<Option<mqtt::config::Config>, String> {
    let Some((tls, host, port)) = MQTT_URL.set(env)? else {
        return Ok(None);
    };
    let password = match (MQTT_PASSWORD.set(env)?, MQTT_PASSWORD_FILE.set(env)?) {
        (Some(_), Some(_)) => {
            return Err("set MQTT_PASSWORD or MQTT_PASSWORD_FILE, not both".into());
        }
        (Some(password), None) => Some(password),
        (None, Some(file)) => Some(
            std::fs::read_to_string(&file)
                .map_err(|e| format!("cannot read MQTT_PASSWORD_FILE {file:?}: {e}"))?
                .trim_end_matches(['\r', '\n'])
                .to_owned(),
        ),
        (None, None) => None,
    };
    let user = MQTT_USER.set(env)?;
    if password.is_some() && user.is_none() {
        return Err("MQTT_PASSWORD needs MQTT_USER".into());
    }
    Ok(Some(mqtt::config::Config {
        tls,
        host,
        port,
        user,
        password,
        topic_prefix: MQTT_TOPIC_PREFIX.value(env)?,
        discovery_prefix: MQTT_DISCOVERY_PREFIX.value(env)?,
        ca_file: MQTT_CA_FILE.set(env)?,
    }))
}

/// The HTTPS settings; None when `HTTPS_PORT` is unset. The certificate's
/// files come both or neither, and only with a port.
fn https_settings(env: Env) -> Result<Option<Https>, String> {
    let port = HTTPS_PORT.set(env)?;
    let files = match (TLS_CERT_FILE.set(env)?, TLS_KEY_FILE.set(env)?) {
        (Some(certificate), Some(key)) => Some(CertificateFiles { certificate, key }),
        (None, None) => None,
        (Some(_), None) => {
            return Err(
                "TLS_CERT_FILE is set without TLS_KEY_FILE: set both, or neither for \
                        the node's own certificate"
                    .into(),
            );
        }
        (None, Some(_)) => {
            return Err(
                "TLS_KEY_FILE is set without TLS_CERT_FILE: set both, or neither for \
                        the node's own certificate"
                    .into(),
            );
        }
    };
    match port {
        Some(port) => Ok(Some(Https { port, files })),
        None if files.is_some() => Err(
            "TLS_CERT_FILE and TLS_KEY_FILE are set without HTTPS_PORT: set the port \
                 to serve HTTPS on"
                .into(),
        ),
        None => Ok(None),
    }
}

/// `path` relative to the folder of the running program.
fn beside_program(path: &str) -> PathBuf {
    let program = std::env::current_exe().unwrap_or_default();
    program.parent().unwrap_or(Path::new(".")).join(path)
}

fn host_name() -> String {
    match net::host_name() {
        Ok(name) if !name.trim().is_empty() => name.trim().to_owned(),
        _ => "nvr-node".to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;
    use std::collections::BTreeSet;

    use super::*;

    fn config(vars: &[(&str, &str)]) -> Result<Config, String> {
        Config::from_vars(&|name| {
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
        assert_eq!((c.recordings_max_bytes, c.recordings_reserve), (None, None));
        assert_eq!((c.clips_max_bytes, c.clips_reserve), (2 << 30, None));
        assert_eq!(c.clips_keep_max_bytes, 1 << 30);
        assert_eq!(c.events_retain_days, None);
        assert_eq!(c.max_events, 10_000);
        assert_eq!(c.max_cameras, 16);
        assert!(c.mqtt.is_none());
        assert_eq!(log_level(|_| None), Ok(log::LevelFilter::Info));
    }

    /// Every variable the node reads is in the table, and every one in the
    /// table is read: the help, the settings file and the docs list what
    /// the node does.
    #[test]
    fn the_table_is_what_the_node_reads() {
        let asked = RefCell::new(BTreeSet::new());
        let env = |name: &str| {
            asked.borrow_mut().insert(name.to_owned());
            // Set, the MQTT variables are read too.
            (name == "MQTT_URL").then(|| "mqtt://broker".to_owned())
        };
        Config::from_vars(&env).unwrap();
        log_level(env).unwrap();
        let table: BTreeSet<String> = SECTIONS
            .iter()
            .flat_map(|s| s.vars)
            .flat_map(|v| [Some(v.name), v.old_name])
            .flatten()
            .map(str::to_owned)
            .collect();
        assert_eq!(asked.into_inner(), table);
    }

    /// The settings set in the UI win over the environment's, and hide
    /// what they replace there (an old name, a password's file).
    #[test]
    fn the_ui_over_the_environment() {
        let stored = [("EVENTS_RETAIN_DAYS", "3"), ("RECORDINGS_RESERVE", "5G")]
            .into_iter()
            .chain([("MQTT_PASSWORD", "pw")])
            .map(|(n, t)| (n.to_owned(), t.to_owned()))
            .collect::<Vec<_>>();
        let env = |name: &str| {
            let text = match name {
                "EVENTS_RETAIN_DAYS" => "30",
                "RECORDINGS_KEEP_FREE" => "1G",
                "MAX_EVENTS" => "7",
                "MQTT_URL" => "mqtt://broker",
                "MQTT_USER" => "nvr",
                "MQTT_PASSWORD_FILE" => "/nonexistent",
                _ => return None,
            };
            Some(text.to_owned())
        };
        let c = Config::from_vars(&overlay(&stored, &env)).unwrap();
        assert_eq!(c.events_retain_days, Some(3));
        assert_eq!(c.recordings_reserve, Some(5 << 30));
        assert_eq!(c.max_events, 7);
        assert_eq!(c.mqtt.unwrap().password.as_deref(), Some("pw"));
        fn check(name: &str, text: &str) -> Result<(), String> {
            in_ui(name).and_then(|s| s.check_text(text))
        }
        assert_eq!(check("EVENTS_RETAIN_DAYS", " 12 "), Ok(()));
        assert_eq!(
            check("EVENTS_RETAIN_DAYS", "0"),
            Err("EVENTS_RETAIN_DAYS must be a whole number from 1 to 3650, not \"0\"".into())
        );
        assert!(check("NODE_NAME", &"x".repeat(65)).is_err());
        assert!(check("PORT", "80").unwrap_err().starts_with("PORT is not"));
    }

    #[test]
    fn clips() {
        let c = config(&[
            ("CLIPS_MAX_BYTES", "500M"),
            ("CLIPS_RESERVE", "1G"),
            ("CLIPS_KEEP_MAX_BYTES", "4G"),
            ("EVENTS_RETAIN_DAYS", "3650"),
        ])
        .unwrap();
        assert_eq!(
            (c.clips_max_bytes, c.clips_reserve, c.clips_keep_max_bytes),
            (500 << 20, Some(1 << 30), 4 << 30)
        );
        assert_eq!(c.events_retain_days, Some(3650));
    }

    #[test]
    fn recordings() {
        let c = config(&[
            ("DATA_DIR", "/var/lib/nvr"),
            ("FFMPEG", "/opt/ffmpeg"),
            ("RECORDINGS_MAX_BYTES", "200G"),
            ("RECORDINGS_RESERVE", "512MiB"),
        ])
        .unwrap();
        assert_eq!(c.recordings_dir, PathBuf::from("/var/lib/nvr/recordings"));
        assert_eq!(c.ffmpeg, PathBuf::from("/opt/ffmpeg"));
        assert_eq!(c.recordings_max_bytes, Some(200 << 30));
        assert_eq!(c.recordings_reserve, Some(512 << 20));
        let c = config(&[("RECORDINGS_DIR", "/mnt/disk/nvr")]).unwrap();
        assert_eq!(c.recordings_dir, PathBuf::from("/mnt/disk/nvr"));
    }

    /// A settings file kept by an upgrade may still use the reserves' old
    /// names; set with a new name to another value, it is refused.
    #[test]
    fn old_names() {
        let reserves =
            |vars: &[(&str, &str)]| config(vars).map(|c| (c.recordings_reserve, c.clips_reserve));
        let table = [
            (
                vec![("RECORDINGS_KEEP_FREE", "5G")],
                Ok((Some(5 << 30), None)),
            ),
            (vec![("CLIPS_KEEP_FREE", "1G")], Ok((None, Some(1 << 30)))),
            (
                vec![("CLIPS_KEEP_FREE", "1G"), ("CLIPS_RESERVE", " 1G")],
                Ok((None, Some(1 << 30))),
            ),
            (
                vec![("CLIPS_KEEP_FREE", ""), ("CLIPS_RESERVE", "2G")],
                Ok((None, Some(2 << 30))),
            ),
            (
                vec![("RECORDINGS_KEEP_FREE", "lots")],
                Err("RECORDINGS_RESERVE must be a size".to_owned()),
            ),
            (
                vec![("RECORDINGS_KEEP_FREE", "5G"), ("RECORDINGS_RESERVE", "6G")],
                Err(
                    "RECORDINGS_RESERVE is \"6G\" and RECORDINGS_KEEP_FREE, its old name, \
                     is \"5G\": keep only RECORDINGS_RESERVE"
                        .to_owned(),
                ),
            ),
        ];
        for (vars, want) in table {
            let got = reserves(&vars);
            match want {
                Ok(want) => assert_eq!(got, Ok(want), "{vars:?}"),
                Err(start) => assert!(
                    got.as_ref().is_err_and(|e| e.starts_with(&start)),
                    "{vars:?}: {got:?}"
                ),
            }
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
            ("MAX_EVENTS", "2000"),
            ("MAX_CAMERAS", "32"),
        ])
        .unwrap();
        assert_eq!(c.camera_check_interval, Duration::from_secs(90));
        assert_eq!(c.max_cameras, 32);
        assert_eq!(
            (
                c.port,
                c.data_dir,
                c.node_name.as_str(),
                c.relay_url.as_str(),
                c.ffprobe,
                c.max_events
            ),
            (
                0,
                "/var/lib/nvr".into(),
                "garage",
                "http://10.0.0.5:1984",
                "/opt/ffprobe".into(),
                2000
            )
        );
        assert_eq!(
            log_level(|_| Some("debug".into())),
            Ok(log::LevelFilter::Debug)
        );
        assert_eq!(log_level(|_| Some(" ".into())), Ok(log::LevelFilter::Info));
    }

    #[test]
    fn node_url() {
        let c = config(&[
            ("NODE_URL", "http://NVR.lan:8080/"),
            ("ALLOWED_HOSTS", "a.lan, B.lan"),
            ("DISCOVERY_INTERFACES", "eth0, wlan0,"),
        ])
        .unwrap();
        assert_eq!(c.node_url.as_deref(), Some("http://NVR.lan:8080"));
        assert_eq!(c.allowed_hosts, ["a.lan", "b.lan", "nvr.lan"]);
        assert_eq!(c.discovery_interfaces, ["eth0", "wlan0"]);
        assert_eq!(config(&[]).unwrap().node_url, None);
    }

    #[test]
    fn mqtt() {
        assert!(config(&[]).unwrap().mqtt.is_none());
        let c = config(&[("MQTT_URL", "mqtt://b")]).unwrap().mqtt.unwrap();
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
        .mqtt
        .unwrap();
        std::fs::remove_dir_all(&dir).unwrap();
        assert_eq!((c.tls, c.host.as_str(), c.port), (true, "b", 8883));
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

    #[test]
    fn https() {
        assert!(config(&[]).unwrap().https.is_none());
        let own = config(&[("HTTPS_PORT", "8443")]).unwrap().https.unwrap();
        assert_eq!(own.port, 8443);
        assert!(own.files.is_none());
        let given = config(&[
            ("HTTPS_PORT", "0"),
            ("TLS_CERT_FILE", "/etc/nvr/cert.pem"),
            ("TLS_KEY_FILE", " /etc/nvr/key.pem "),
        ])
        .unwrap()
        .https
        .unwrap();
        let files = given.files.unwrap();
        assert_eq!(given.port, 0);
        assert_eq!(files.certificate, PathBuf::from("/etc/nvr/cert.pem"));
        assert_eq!(files.key, PathBuf::from("/etc/nvr/key.pem"));
        let refused = [
            (
                vec![("HTTPS_PORT", "443"), ("TLS_CERT_FILE", "/c")],
                "TLS_CERT_FILE is set without TLS_KEY_FILE",
            ),
            (
                vec![("HTTPS_PORT", "443"), ("TLS_KEY_FILE", "/k")],
                "TLS_KEY_FILE is set without TLS_CERT_FILE",
            ),
            (
                vec![("TLS_CERT_FILE", "/c"), ("TLS_KEY_FILE", "/k")],
                "TLS_CERT_FILE and TLS_KEY_FILE are set without HTTPS_PORT",
            ),
            (vec![("HTTPS_PORT", "https")], "HTTPS_PORT must be a number"),
        ];
        for (vars, said) in refused {
            let error = config(&vars).err();
            assert!(
                error.as_ref().is_some_and(|e| e.starts_with(said)),
                "{vars:?}: {error:?}"
            );
        }
    }

    #[test]
    fn bad_values() {
        for (name, value) in [
            ("PORT", "http"),
            ("PORT", "70000"),
            ("HTTPS_PORT", "-1"),
            ("RELAY_URL", "exec:x"),
            ("CAMERA_CHECK_INTERVAL", "often"),
            ("CAMERA_CHECK_INTERVAL", "10ms"),
            ("LISTEN_ADDRESS", "localhost"),
            ("MAX_EVENTS", "0"),
            ("MAX_CAMERAS", "0"),
            ("MAX_CAMERAS", "257"),
            ("CLOUD_URL", "ftp://cloud"),
            ("CLOUD_URL", "https://bücher.example"),
            ("RELAY_URL", "http://relä:1984"),
            ("RECORDINGS_MAX_BYTES", "lots"),
            ("RECORDINGS_RESERVE", "-5G"),
            ("CLIPS_MAX_BYTES", "a lot"),
            ("CLIPS_KEEP_MAX_BYTES", "all"),
            ("EVENTS_RETAIN_DAYS", "0"),
            ("EVENTS_RETAIN_DAYS", "3651"),
            ("CLIPS_RESERVE", "5Q"),
            ("NODE_URL", "nvr.lan:8080"),
            ("NODE_URL", "http://"),
            ("NODE_URL", "http://u:p@nvr.lan"),
            ("MQTT_URL", "tcp://broker"),
            ("MQTT_URL", "mqtt://nvr:s3cret@broker"),
        ] {
            let error = config(&[(name, value)]).err();
            // The message names the variable and shows the value, unless
            // it may hold a password.
            let shown = format!("{value:?}");
            assert!(
                error
                    .as_ref()
                    .is_some_and(|e| e.starts_with(&format!("{name} must "))
                        && e.contains(&shown) != value.contains('@')),
                "{name}={value}: {error:?}"
            );
        }
        assert!(log_level(|_| Some("loud".into())).is_err());
    }
}
