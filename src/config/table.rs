//! Every environment variable the node reads, written once: its name, its
//! default, what it does and its parser, under the section `--help`, the
//! settings file and the docs list it in.
//!
//! Only the name, the default, the old name and the parser are read at run
//! time; `--help` is written from the rest when the program is compiled
//! (`help.rs`), and the examples and notes are read only by the tests that
//! check the settings file and the docs (`docs.rs`), so they take no room
//! in the binary.

use std::net::IpAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::cameras::rtsp_url::http_host;
use crate::mqtt;

/// One variable, and how its text becomes a value.
pub struct Var<T> {
    pub doc: Doc,
    /// The value of a text set (or of a literal default), or what is
    /// wrong with the text, said after the variable's name ("must be ...").
    pub parse: fn(&str) -> Result<T, &'static str>,
}

/// A variable as people read it.
pub struct Doc {
    pub name: &'static str,
    pub default: Fallback,
    /// What it does, in a phrase: all of `--help`, and the start of the
    /// settings file's and the docs' text.
    pub help: &'static str,
    /// The name it had before, still read so that a settings file kept by
    /// an upgrade keeps working.
    pub old_name: Option<&'static str>,
    /// More for the settings file and the docs, in sentences.
    #[cfg_attr(not(test), allow(dead_code))]
    pub notes: &'static str,
    /// A value for the settings file's example.
    #[cfg_attr(not(test), allow(dead_code))]
    pub example: &'static str,
    /// The value the settings file installed on boards sets; None: the
    /// example, commented out.
    #[cfg_attr(not(test), allow(dead_code))]
    pub installed: Option<&'static str>,
}

/// What a variable unset or blank stands for.
pub enum Fallback {
    /// A text parsed as if it were set.
    Value(&'static str),
    /// What the node does instead, in words (the node works it out).
    Words(&'static str),
}

impl Fallback {
    /// As `--help`, the settings file and the docs show it.
    pub const fn text(&self) -> &'static str {
        match self {
            Value(text) | Words(text) => text,
        }
    }
}

use Fallback::{Value, Words};

/// A group of variables, under a heading.
pub struct Section {
    pub heading: &'static str,
    /// Before the variables, in the settings file and the docs.
    #[cfg_attr(not(test), allow(dead_code))]
    pub about: &'static str,
    pub vars: &'static [Doc],
}

/// The table, in the order people read it.
pub const SECTIONS: &[Section] = &[
    Section {
        heading: "The node",
        about: "",
        vars: &[
            PORT.doc,
            LISTEN_ADDRESS.doc,
            DATA_DIR.doc,
            NODE_NAME.doc,
            LOG_LEVEL.doc,
        ],
    },
    Section {
        heading: "Cameras",
        about: "",
        vars: &[
            RELAY_URL.doc,
            FFPROBE.doc,
            FFMPEG.doc,
            CAMERA_CHECK_INTERVAL.doc,
            MAX_CAMERAS.doc,
            DISCOVERY_INTERFACES.doc,
            CLASSIFIER.doc,
            MODEL_DIR.doc,
        ],
    },
    Section {
        heading: "Footage",
        about: "A size is written like 500M, 200G or 1T (powers of 1024, with or without \
                a trailing B or iB), or 500MB for powers of 1000.",
        vars: &[
            RECORDINGS_DIR.doc,
            RECORDINGS_MAX_BYTES.doc,
            RECORDINGS_RESERVE.doc,
            CLIPS_MAX_BYTES.doc,
            CLIPS_RESERVE.doc,
            CLIPS_KEEP_MAX_BYTES.doc,
            MAX_EVENTS.doc,
            EVENTS_RETAIN_DAYS.doc,
        ],
    },
    Section {
        heading: "Browsers and the cloud",
        about: "",
        vars: &[
            ALLOWED_HOSTS.doc,
            HTTPS_PORT.doc,
            TLS_CERT_FILE.doc,
            TLS_KEY_FILE.doc,
            WWW_DIR.doc,
            CLOUD_URL.doc,
        ],
    },
    Section {
        heading: "Home Assistant (MQTT discovery; off unless MQTT_URL is set)",
        about: "Through an MQTT broker (Home Assistant's Mosquitto add-on, say): set \
                MQTT_URL, MQTT_USER and MQTT_PASSWORD, and the node's cameras, motion, \
                switches and events appear in Home Assistant by MQTT discovery.",
        vars: &[
            MQTT_URL.doc,
            MQTT_USER.doc,
            MQTT_PASSWORD.doc,
            MQTT_PASSWORD_FILE.doc,
            MQTT_TOPIC_PREFIX.doc,
            MQTT_DISCOVERY_PREFIX.doc,
            MQTT_CA_FILE.doc,
            NODE_URL.doc,
        ],
    },
];

/// A setting a person may change in the UI (Settings, This node): kept in
/// the database, over the environment's and the settings file's value.
pub struct InUi {
    pub name: &'static str,
    pub help: &'static str,
    pub default: &'static str,
    /// What is wrong with a text, as the variable's parser says it.
    pub check: fn(&str) -> Result<(), &'static str>,
    /// Taken in at the next start only.
    pub restart: bool,
    /// Never shown back, like camera passwords.
    pub secret: bool,
    /// The variable of the environment a value set in the UI hides: the
    /// old name, or another way to set the same.
    pub shadows: Option<&'static str>,
}

macro_rules! in_ui {
    ($var:ident, $restart:expr) => {
        in_ui!($var, $restart, false, $var.doc.old_name)
    };
    ($var:ident, $restart:expr, $secret:expr, $shadows:expr) => {
        InUi {
            name: $var.doc.name,
            help: $var.doc.help,
            default: $var.doc.default.text(),
            check: |text| ($var.parse)(text).map(drop),
            restart: $restart,
            secret: $secret,
            shadows: $shadows,
        }
    };
}

/// The settings a person may change in the UI, in the form's order. The
/// rest are needed to start (ports, folders, files, programs) or are for
/// whoever runs the board, and stay in the settings file.
pub const IN_UI: &[InUi] = &[
    in_ui!(NODE_NAME, false),
    in_ui!(EVENTS_RETAIN_DAYS, false),
    in_ui!(MAX_EVENTS, false),
    in_ui!(CLIPS_MAX_BYTES, false),
    in_ui!(CLIPS_KEEP_MAX_BYTES, false),
    in_ui!(RECORDINGS_MAX_BYTES, false),
    in_ui!(RECORDINGS_RESERVE, false),
    in_ui!(NODE_URL, true),
    in_ui!(MQTT_URL, true),
    in_ui!(MQTT_USER, true),
    in_ui!(MQTT_PASSWORD, true, true, Some(MQTT_PASSWORD_FILE.doc.name)),
];

// ---- The node ----

pub const PORT: Var<u16> = Var {
    doc: Doc {
        name: "PORT",
        default: Value("8080"),
        help: "port to listen on; 0 picks a free one",
        old_name: None,
        notes: "The TCP port of the API and the browser UI; the port picked is \
                printed in the log.",
        example: "8081",
        installed: Some("8080"),
    },
    parse: port,
};

pub const LISTEN_ADDRESS: Var<IpAddr> = Var {
    doc: Doc {
        name: "LISTEN_ADDRESS",
        default: Value("0.0.0.0"),
        help: "address to listen on; 0.0.0.0 is the whole LAN",
        old_name: None,
        notes: "127.0.0.1 is this machine only.",
        example: "127.0.0.1",
        installed: None,
    },
    parse: |text| text.trim().parse().map_err(|_| "must be an IP address"),
};

pub const DATA_DIR: Var<PathBuf> = Var {
    doc: Doc {
        name: "DATA_DIR",
        default: Value("./data"),
        help: "folder of the database and the events' clips",
        old_name: None,
        notes: "The SQLite database is nvr-node.db. It holds camera passwords: \
                keep the folder owned by the nvr user, mode 0750. The settings \
                file installed on boards sets the systemd unit's \
                StateDirectory; under systemd another folder must also be made \
                writable with ReadWritePaths= (systemctl edit nvr-node).",
        example: "/srv/nvr-node",
        installed: Some("/var/lib/nvr-node"),
    },
    parse: path,
};

pub const NODE_NAME: Var<String> = Var {
    doc: Doc {
        name: "NODE_NAME",
        default: Words("the host name"),
        help: "name shown in the status and the UI",
        old_name: None,
        notes: "At most 64 characters. Home Assistant's device takes a new name at \
                the node's next start.",
        example: "garage",
        installed: None,
    },
    parse: |text| {
        let name = text.trim();
        if name.chars().count() <= 64 && !name.contains(char::is_control) {
            Ok(name.to_owned())
        } else {
            Err("must be at most 64 characters, with no control characters")
        }
    },
};

pub const LOG_LEVEL: Var<log::LevelFilter> = Var {
    doc: Doc {
        name: "LOG_LEVEL",
        default: Value("info"),
        help: "how much it logs: error, warn, info or debug",
        old_name: None,
        notes: "",
        example: "debug",
        installed: None,
    },
    parse: |text| {
        text.trim()
            .parse()
            .map_err(|_| "must be error, warn, info or debug")
    },
};

// ---- Cameras ----

pub const RELAY_URL: Var<String> = Var {
    doc: Doc {
        name: "RELAY_URL",
        default: Value("http://127.0.0.1:1984"),
        help: "the stream relay's (go2rtc's) API",
        old_name: None,
        notes: "http:// or https://; the default is go2rtc on the same \
                machine.",
        example: "http://192.168.1.20:1984",
        installed: Some("http://127.0.0.1:1984"),
    },
    parse: http_url,
};

pub const FFPROBE: Var<PathBuf> = Var {
    doc: Doc {
        name: "FFPROBE",
        default: Value("ffprobe"),
        help: "program that probes cameras",
        old_name: None,
        notes: "Found in PATH unless a path is given; Debian's package ffmpeg \
                has it.",
        example: "/opt/ffmpeg/bin/ffprobe",
        installed: None,
    },
    parse: path,
};

pub const FFMPEG: Var<PathBuf> = Var {
    doc: Doc {
        name: "FFMPEG",
        default: Value("ffmpeg"),
        help: "program that records cameras",
        old_name: None,
        notes: "Found in PATH unless a path is given; Debian's package ffmpeg \
                has it.",
        example: "/opt/ffmpeg/bin/ffmpeg",
        installed: None,
    },
    parse: path,
};

pub const CAMERA_CHECK_INTERVAL: Var<Duration> = Var {
    doc: Doc {
        name: "CAMERA_CHECK_INTERVAL",
        default: Value("30s"),
        help: "how often each camera's liveness is checked",
        old_name: None,
        notes: "A duration of 1s or more, in s, m and h; in the settings file \
                one with a space, like \"1m 30s\", needs the quotes.",
        example: "1m",
        installed: None,
    },
    parse: |text| {
        humantime::parse_duration(text.trim())
            .ok()
            .filter(|d| *d >= Duration::from_secs(1))
            .ok_or("must be a duration of 1s or more, like 30s")
    },
};

/// A board of 1 GB: a camera's recorder and motion decoder take up to
/// 25 MiB (the benchmark's `memory_children_per_camera`), so 16 leave room
/// for the classifier, the relay and the system.
pub const MAX_CAMERAS: Var<usize> = Var {
    doc: Doc {
        name: "MAX_CAMERAS",
        default: Value("16"),
        help: "the most cameras the node takes; past it, adding one is refused",
        old_name: None,
        notes: "A whole number from 1 to 256. Each camera costs the node threads, \
                an ffmpeg recorder and a motion decoder (up to 25 MiB together) and \
                a stream in the relay: raise it on a board with the memory for more.",
        example: "32",
        installed: None,
    },
    parse: |text| {
        text.trim()
            .parse()
            .ok()
            .filter(|n| (1..=256).contains(n))
            .ok_or("must be a whole number from 1 to 256")
    },
};

pub const DISCOVERY_INTERFACES: Var<Vec<String>> = Var {
    doc: Doc {
        name: "DISCOVERY_INTERFACES",
        default: Words("every IPv4 interface up, not loopback"),
        help: "network interfaces, comma-separated, that camera discovery \
               searches",
        old_name: None,
        notes: "Finding cameras (ONVIF WS-Discovery) and the search for a \
                camera that moved send their probe there; it never leaves the \
                local subnet (TTL 1).",
        example: "eth0",
        installed: None,
    },
    parse: list,
};

pub const CLASSIFIER: Var<PathBuf> = Var {
    doc: Doc {
        name: "CLASSIFIER",
        default: Words("nvr-classify beside this program"),
        help: "program that tells what moved, if it and MODEL_DIR are there",
        old_name: None,
        notes: "nvr-classify, built with the node, tells a person, a vehicle, \
                an animal or a package; without it or its model, motion events \
                are not classified.",
        example: "/usr/local/bin/nvr-classify",
        installed: None,
    },
    parse: path,
};

pub const MODEL_DIR: Var<PathBuf> = Var {
    doc: Doc {
        name: "MODEL_DIR",
        default: Words("../share/nvr-node/model from this program's folder"),
        help: "the classifier's model",
        old_name: None,
        notes: "The folder deploy/model/install-model.sh makes (model.tflite, \
                labels.txt, LICENSE, SOURCE); for /usr/local/bin/nvr-node the \
                default is /usr/local/share/nvr-node/model.",
        example: "/opt/nvr-model",
        installed: None,
    },
    parse: path,
};

// ---- Footage ----

pub const RECORDINGS_DIR: Var<PathBuf> = Var {
    doc: Doc {
        name: "RECORDINGS_DIR",
        default: Words("DATA_DIR/recordings"),
        help: "the folder of the recordings",
        old_name: None,
        notes: "One folder per camera, one per hour inside it, 10 s files. \
                Better on a USB disk than on the SD card. Under systemd a \
                folder outside DATA_DIR must also be made writable with \
                ReadWritePaths= (systemctl edit nvr-node), and owned by the \
                nvr user.",
        example: "/mnt/usb/nvr",
        installed: None,
    },
    parse: path,
};

pub const RECORDINGS_MAX_BYTES: Var<u64> = Var {
    doc: Doc {
        name: "RECORDINGS_MAX_BYTES",
        default: Words("none"),
        help: "the most space recordings may take, the oldest deleted past it",
        old_name: None,
        notes: "A size like 200G; unset, only RECORDINGS_RESERVE limits the \
                recordings, of all cameras together.",
        example: "200G",
        installed: None,
    },
    parse: size,
};

pub const RECORDINGS_RESERVE: Var<u64> = Var {
    doc: Doc {
        name: "RECORDINGS_RESERVE",
        default: Words("1G or 10 % of the disk, the larger"),
        help: "free space always left on the recordings' disk, the oldest \
               deleted to keep it",
        old_name: Some("RECORDINGS_KEEP_FREE"),
        notes: "A size like 5G. It is kept whatever else fills the disk.",
        example: "5G",
        installed: None,
    },
    parse: size,
};

pub const CLIPS_MAX_BYTES: Var<u64> = Var {
    doc: Doc {
        name: "CLIPS_MAX_BYTES",
        default: Value("2G"),
        help: "the most space events' clips may take, the oldest events \
               deleted past it",
        old_name: None,
        notes: "A size like 10G, for the clips and thumbnails in \
                DATA_DIR/clips. The default holds about 500 clips of 15 s from \
                a 2 Mbit/s camera, an eighth of a 16 GB card.",
        example: "10G",
        installed: None,
    },
    parse: size,
};

pub const CLIPS_RESERVE: Var<u64> = Var {
    doc: Doc {
        name: "CLIPS_RESERVE",
        default: Words("512M or 5 % of the disk, the larger"),
        help: "free space always left on the clips' disk, the oldest events \
               deleted to keep it",
        old_name: Some("CLIPS_KEEP_FREE"),
        notes: "A size like 1G, on DATA_DIR's disk (often the SD card). Keep \
                it below RECORDINGS_RESERVE when both are on one disk, so that \
                the recordings give way first.",
        example: "1G",
        installed: None,
    },
    parse: size,
};

pub const CLIPS_KEEP_MAX_BYTES: Var<u64> = Var {
    doc: Doc {
        name: "CLIPS_KEEP_MAX_BYTES",
        default: Value("1G"),
        help: "the most space kept events' clips may take; keeping one more \
               past it is refused",
        old_name: None,
        notes: "A size like 4G. Kept events are deleted by no rule, and count \
                apart from CLIPS_MAX_BYTES: the default holds about 250 clips \
                of 15 s from a 2 Mbit/s camera, a sixteenth of a 16 GB card, \
                so that with the clips' 2G the events take under a fifth of it.",
        example: "4G",
        installed: None,
    },
    parse: size,
};

pub const EVENTS_RETAIN_DAYS: Var<u64> = Var {
    doc: Doc {
        name: "EVENTS_RETAIN_DAYS",
        default: Words("none"),
        help: "days events are kept, older ones deleted with their clips \
               (kept events aside)",
        old_name: None,
        notes: "A whole number from 1 to 3650; unset, events go by MAX_EVENTS \
                and the clips' space only. Nothing is deleted by age while the \
                node's clock is not believed (nor, not synchronised, ahead of the \
                newest recording at start-up), nor for 10 minutes after it jumped \
                ahead (docs/design/recording.md).",
        example: "30",
        installed: None,
    },
    parse: |text| {
        text.trim()
            .parse()
            .ok()
            .filter(|n| (1..=3650).contains(n))
            .ok_or("must be a whole number from 1 to 3650")
    },
};

pub const MAX_EVENTS: Var<u64> = Var {
    doc: Doc {
        name: "MAX_EVENTS",
        default: Value("10000"),
        help: "events kept, the oldest deleted with their clips",
        old_name: None,
        notes: "A whole number above 0.",
        example: "2000",
        installed: None,
    },
    parse: |text| {
        text.trim()
            .parse()
            .ok()
            .filter(|n| *n > 0)
            .ok_or("must be a whole number above 0")
    },
};

// ---- Browsers and the cloud ----

pub const ALLOWED_HOSTS: Var<Vec<String>> = Var {
    doc: Doc {
        name: "ALLOWED_HOSTS",
        default: Words("none"),
        help: "more host names, comma-separated, that browsers may use",
        old_name: None,
        notes: "IP addresses, localhost, .local names and the host name are \
                always allowed; any other name gets 403, against DNS \
                rebinding.",
        example: "nvr.home.arpa,nvr.lan",
        installed: None,
    },
    parse: list,
};

pub const HTTPS_PORT: Var<u16> = Var {
    doc: Doc {
        name: "HTTPS_PORT",
        default: Words("none, no HTTPS"),
        help: "port to serve the same API and UI on over HTTPS; 0 picks a free one",
        old_name: None,
        notes: "TLS 1.3, on LISTEN_ADDRESS like PORT. With TLS_CERT_FILE and \
                TLS_KEY_FILE the node shows their certificate; without them, \
                its own, for its host name, HOST.local and its private \
                addresses, signed by a certificate authority it makes once in \
                DATA_DIR/tls. Install that authority (/api/tls/ca.crt) on a \
                phone and the UI opens there in a secure context; it may \
                vouch for no other sites (docs/security.md).",
        example: "8443",
        installed: None,
    },
    parse: port,
};

pub const TLS_CERT_FILE: Var<PathBuf> = Var {
    doc: Doc {
        name: "TLS_CERT_FILE",
        default: Words("none, the node's own"),
        help: "the HTTPS certificate, then the rest of its chain (PEM)",
        old_name: None,
        notes: "Set with TLS_KEY_FILE, or neither; the nvr user must be able to \
                read both.",
        example: "/etc/nvr-node/tls/cert.pem",
        installed: None,
    },
    parse: path,
};

pub const TLS_KEY_FILE: Var<PathBuf> = Var {
    doc: Doc {
        name: "TLS_KEY_FILE",
        default: Words("none, the node's own"),
        help: "its private key (PEM, PKCS#8 or SEC1), ECDSA on P-256 or P-384",
        old_name: None,
        notes: "RSA and Ed25519 keys are refused: make a key with openssl \
                ecparam -name prime256v1 -genkey -noout -out key.pem, or \
                mkcert -ecdsa.",
        example: "/etc/nvr-node/tls/key.pem",
        installed: None,
    },
    parse: path,
};

pub const WWW_DIR: Var<PathBuf> = Var {
    doc: Doc {
        name: "WWW_DIR",
        default: Words("none"),
        help: "serve the browser UI from this folder, not the built-in copy",
        old_name: None,
        notes: "For UI development. Its files are sent as they are, \
                uncompressed; the nvr user must be able to read them.",
        example: "/home/pi/nvr-node/www",
        installed: None,
    },
    parse: path,
};

pub const CLOUD_URL: Var<String> = Var {
    doc: Doc {
        name: "CLOUD_URL",
        default: Words("none, the node never calls out"),
        help: "the cloud service for remote access",
        old_name: None,
        notes: "https:// or http://. https:// speaks TLS 1.3 and trusts the \
                system's certificate authorities \
                (/etc/ssl/certs/ca-certificates.crt, from the package \
                ca-certificates). An internationalized host name goes in its \
                xn-- form.",
        example: "https://cloud.example.com",
        installed: None,
    },
    parse: http_url,
};

// ---- Home Assistant ----

pub const MQTT_URL: Var<(bool, String, u16)> = Var {
    doc: Doc {
        name: "MQTT_URL",
        default: Words("none, MQTT is off"),
        help: "the broker, mqtt://host:1883 or mqtts://host:8883",
        old_name: None,
        notes: "mqtts:// speaks TLS 1.3.",
        example: "mqtt://homeassistant.local:1883",
        installed: None,
    },
    parse: mqtt::config::parse_url,
};

pub const MQTT_USER: Var<String> = Var {
    doc: Doc {
        name: "MQTT_USER",
        default: Words("none"),
        help: "the node's user name on the broker",
        old_name: None,
        notes: "",
        example: "nvr",
        installed: None,
    },
    parse: trimmed,
};

pub const MQTT_PASSWORD: Var<String> = Var {
    doc: Doc {
        name: "MQTT_PASSWORD",
        default: Words("none"),
        help: "its password, never logged or shown",
        old_name: None,
        notes: "",
        example: "correct-horse",
        installed: None,
    },
    // As it is: spaces may be part of it.
    parse: |text| Ok(text.to_owned()),
};

pub const MQTT_PASSWORD_FILE: Var<PathBuf> = Var {
    doc: Doc {
        name: "MQTT_PASSWORD_FILE",
        default: Words("none"),
        help: "a file holding the password instead",
        old_name: None,
        notes: "Set this or MQTT_PASSWORD, not both; the nvr user must be able \
                to read it.",
        example: "/etc/nvr-node/mqtt-password",
        installed: None,
    },
    parse: path,
};

pub const MQTT_TOPIC_PREFIX: Var<String> = Var {
    doc: Doc {
        name: "MQTT_TOPIC_PREFIX",
        default: Value("nvr"),
        help: "the first levels of the node's topics",
        old_name: None,
        notes: "",
        example: "home/nvr",
        installed: None,
    },
    parse: mqtt::config::topic_prefix,
};

pub const MQTT_DISCOVERY_PREFIX: Var<String> = Var {
    doc: Doc {
        name: "MQTT_DISCOVERY_PREFIX",
        default: Value("homeassistant"),
        help: "Home Assistant's discovery prefix",
        old_name: None,
        notes: "",
        example: "homeassistant",
        installed: None,
    },
    parse: mqtt::config::topic_prefix,
};

pub const MQTT_CA_FILE: Var<PathBuf> = Var {
    doc: Doc {
        name: "MQTT_CA_FILE",
        default: Words("the system's"),
        help: "certificate authorities (PEM) for mqtts://",
        old_name: None,
        notes: "The system's are in /etc/ssl/certs/ca-certificates.crt.",
        example: "/etc/nvr-node/broker-ca.pem",
        installed: None,
    },
    parse: path,
};

pub const NODE_URL: Var<String> = Var {
    doc: Doc {
        name: "NODE_URL",
        default: Words("http://HOST NAME:PORT"),
        help: "where people and Home Assistant reach the node, for the links \
               in alerts and Home Assistant's pictures and clips",
        old_name: None,
        notes: "Its host name is allowed like those of ALLOWED_HOSTS.",
        example: "http://nvr.lan:8080",
        installed: None,
    },
    parse: |text| {
        let url = text.trim().trim_end_matches('/');
        match http_host(url) {
            Some(_) if url.is_ascii() => Ok(url.to_owned()),
            _ => Err(
                "must be an http:// or https:// address with an ASCII host, like http://nvr.lan:8080",
            ),
        }
    },
};

// ---- Parsers shared by several variables ----

fn port(text: &str) -> Result<u16, &'static str> {
    text.trim()
        .parse()
        .map_err(|_| "must be a number from 0 to 65535")
}

fn trimmed(text: &str) -> Result<String, &'static str> {
    Ok(text.trim().to_owned())
}

fn path(text: &str) -> Result<PathBuf, &'static str> {
    Ok(PathBuf::from(text.trim()))
}

/// Comma-separated items; empty ones are dropped.
fn list(text: &str) -> Result<Vec<String>, &'static str> {
    Ok(text
        .split(',')
        .map(|i| i.trim().to_owned())
        .filter(|i| !i.is_empty())
        .collect())
}

/// The HTTP client is built without Unicode host names (idna_adapter 1.0:
/// no IDNA tables in the binary), so an internationalized name must come in
/// its ASCII form.
fn http_url(text: &str) -> Result<String, &'static str> {
    let url = text.trim();
    if (url.starts_with("http://") || url.starts_with("https://")) && url.is_ascii() {
        Ok(url.to_owned())
    } else {
        Err(
            "must be an http:// or https:// address in ASCII (an internationalized host \
             name in its xn-- form)",
        )
    }
}

fn size(text: &str) -> Result<u64, &'static str> {
    parse_size(text).ok_or("must be a size like 500M, 200G or 1T")
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

#[cfg(test)]
mod tests {
    use super::*;

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
}
