//! The real go2rtc (v1.9.14), which `tests/run.sh` builds into
//! `target/go2rtc` and names in `GO2RTC`, run for one test on free ports of
//! 127.0.0.1: its API, RTSP server and WebRTC (TCP and UDP) stay on loopback,
//! it asks no STUN server (`ice_servers: []`) and runs no program
//! (`exec`/`echo` `allow_paths: []`). Its trace log, JSON lines on stdout,
//! tells what it received: every API request and every WHEP offer.
//! It is killed on drop, and its log printed if the test failed; nothing it
//! starts outlives the test. [`Go2rtc::start_at`] puts its API (and so its
//! ONVIF device service, `/onvif/device_service`) and RTSP server on another
//! address, the test network's (`netns.rs`), WebRTC staying on loopback.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader};
use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::{HeldPort, TempDir, wait_for};

/// The go2rtc binary: `GO2RTC`, else the one `tests/run.sh` builds.
pub fn binary() -> PathBuf {
    let path = std::env::var_os("GO2RTC").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("target/go2rtc/go2rtc"),
        PathBuf::from,
    );
    assert!(
        path.is_file(),
        "go2rtc is missing at {}: build it with `bash tests/run.sh` (or ../shared/go2rtc/build.sh) \
         or set GO2RTC",
        path.display()
    );
    path
}

/// A full WHEP offer (aiortc's, video and audio receive-only), as go2rtc needs
/// one: it refuses an offer without ICE credentials.
pub const OFFER: &str = "v=0\r\no=- 4004390987 4004390987 IN IP4 0.0.0.0\r\ns=-\r\nt=0 0\r\n\
a=group:BUNDLE 0\r\na=msid-semantic:WMS *\r\nm=video 53380 UDP/TLS/RTP/SAVPF 97 98 99 100 101 102\r\n\
c=IN IP4 192.0.2.2\r\na=recvonly\r\na=extmap:1 urn:ietf:params:rtp-hdrext:sdes:mid\r\n\
a=extmap:3 http://www.webrtc.org/experiments/rtp-hdrext/abs-send-time\r\na=mid:0\r\n\
a=msid:f62f99f6-7c1f-4cce-854b-2213ada7b267 327ed7bb-8e92-4da8-8de5-401c7e72f405\r\n\
a=rtcp:9 IN IP4 0.0.0.0\r\na=rtcp-mux\r\na=ssrc-group:FID 1565622222 3646851467\r\n\
a=ssrc:1565622222 cname:940f2d4b-d1a9-46cb-90fb-6c89ca354c0e\r\n\
a=ssrc:3646851467 cname:940f2d4b-d1a9-46cb-90fb-6c89ca354c0e\r\n\
a=rtpmap:97 VP8/90000\r\na=rtcp-fb:97 nack\r\na=rtcp-fb:97 nack pli\r\na=rtcp-fb:97 goog-remb\r\n\
a=rtpmap:98 rtx/90000\r\na=fmtp:98 apt=97\r\na=rtpmap:99 H264/90000\r\na=rtcp-fb:99 nack\r\n\
a=rtcp-fb:99 nack pli\r\na=rtcp-fb:99 goog-remb\r\n\
a=fmtp:99 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42001f\r\n\
a=rtpmap:100 rtx/90000\r\na=fmtp:100 apt=99\r\na=rtpmap:101 H264/90000\r\na=rtcp-fb:101 nack\r\n\
a=rtcp-fb:101 nack pli\r\na=rtcp-fb:101 goog-remb\r\n\
a=fmtp:101 level-asymmetry-allowed=1;packetization-mode=1;profile-level-id=42e01f\r\n\
a=rtpmap:102 rtx/90000\r\na=fmtp:102 apt=101\r\n\
a=candidate:f957a2332b1715da3b0ef8ba684454eb 1 udp 2130706431 192.0.2.2 53380 typ host\r\n\
a=end-of-candidates\r\na=ice-ufrag:fpsw\r\na=ice-pwd:5gDsBKwY1TfupDl9X5zp7T\r\n\
a=fingerprint:sha-256 C5:2E:6F:50:A3:B7:6A:9C:C7:CC:A0:5D:86:1D:FA:D3:0C:3C:05:2F:93:84:5B:52:51:64:F7:77:67:CD:A0:DC\r\n\
a=setup:actpass\r\n";

/// Where go2rtc keeps its configuration.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Config {
    /// A YAML file, into which go2rtc saves the streams added through its API.
    File,
    /// `-config '{…}'` and no file: go2rtc makes each change asked through its
    /// API yet answers 400 "config file disabled".
    Inline,
}

/// What a restart does to the configuration file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Restart {
    /// As go2rtc left it: the streams it saved come back.
    KeepFile,
    /// Back to the settings alone: go2rtc comes back with no streams.
    EmptyFile,
}

/// A request go2rtc logged: what the stand-in records of one it receives.
pub use super::relay::Received as Request;

#[derive(Clone, Copy)]
struct Ports {
    api: u16,
    rtsp: u16,
    webrtc: u16,
}

pub struct Go2rtc {
    config: Config,
    /// Where its API and its RTSP server listen (WebRTC stays on 127.0.0.1).
    api_host: String,
    rtsp_host: String,
    /// Streams in the configuration at start (foreign ones, say), in order.
    streams: Vec<(String, String)>,
    dir: TempDir,
    ports: Ports,
    child: Option<Child>,
    /// Everything go2rtc printed, over all its runs.
    log: Arc<Mutex<String>>,
    /// Where the current run's output starts in `log`.
    run_start: usize,
    /// Its TCP ports while it is stopped.
    held: Vec<HeldPort>,
}

impl Go2rtc {
    /// go2rtc with a configuration file and no streams.
    pub fn start() -> Go2rtc {
        Go2rtc::start_with(Config::File, &[])
    }

    /// go2rtc with `streams` in its configuration, as someone might have set up.
    pub fn start_with(config: Config, streams: &[(&str, &str)]) -> Go2rtc {
        Go2rtc::start_full(config, "127.0.0.1", "127.0.0.1", None, streams)
    }

    /// go2rtc with its API on `api_host` and its RTSP server on `rtsp_host`
    /// (on `rtsp_port` if given, as a camera that comes back elsewhere keeps
    /// its port), `streams` in its configuration file.
    pub fn start_at(
        api_host: &str,
        rtsp_host: &str,
        rtsp_port: Option<u16>,
        streams: &[(&str, &str)],
    ) -> Go2rtc {
        Go2rtc::start_full(Config::File, api_host, rtsp_host, rtsp_port, streams)
    }

    fn start_full(
        config: Config,
        api_host: &str,
        rtsp_host: &str,
        rtsp_port: Option<u16>,
        streams: &[(&str, &str)],
    ) -> Go2rtc {
        let pick = || {
            let mut ports = free_ports();
            ports.rtsp = rtsp_port.unwrap_or(ports.rtsp);
            ports
        };
        let mut go2rtc = Go2rtc {
            config,
            api_host: api_host.to_owned(),
            rtsp_host: rtsp_host.to_owned(),
            streams: streams
                .iter()
                .map(|(n, s)| (n.to_string(), s.to_string()))
                .collect(),
            dir: TempDir::new("go2rtc"),
            ports: pick(),
            child: None,
            log: Arc::default(),
            run_start: 0,
            held: Vec::new(),
        };
        // A port taken between picking and binding: go2rtc only logs it, so try others.
        for _ in 0..5 {
            go2rtc.write_config();
            if go2rtc.run() {
                return go2rtc;
            }
            go2rtc.stop();
            go2rtc.ports = pick();
        }
        panic!(
            "go2rtc did not come up on {api_host} and {rtsp_host} in 5 tries:\n{}",
            go2rtc.log()
        );
    }

    pub fn url(&self) -> String {
        format!("http://{}:{}", self.api_host, self.ports.api)
    }

    /// Its ONVIF device service.
    pub fn onvif_address(&self) -> String {
        format!("{}/onvif/device_service", self.url())
    }

    pub fn rtsp_port(&self) -> u16 {
        self.ports.rtsp
    }

    /// `rtsp://HOST:PORT/name`, its stream `name`.
    pub fn rtsp_url(&self, name: &str) -> String {
        format!("rtsp://{}:{}/{name}", self.rtsp_host, self.ports.rtsp)
    }

    pub fn pid(&self) -> u32 {
        self.child.as_ref().expect("go2rtc is running").id()
    }

    /// The configuration file (for [`Config::File`]).
    pub fn config_path(&self) -> PathBuf {
        assert_eq!(self.config, Config::File, "go2rtc runs without a file");
        self.dir.path().join("go2rtc.yaml")
    }

    /// The configuration file's text, once it holds the streams go2rtc serves.
    pub fn config_text(&self) -> String {
        self.wait_saved();
        std::fs::read_to_string(self.config_path()).unwrap()
    }

    /// Waits until the configuration file names the streams go2rtc serves,
    /// and no other: go2rtc saves a change after serving it, by truncating
    /// the file and writing it.
    pub fn wait_saved(&self) {
        let saved = wait_for(Duration::from_secs(10), || {
            let file = std::fs::read_to_string(self.config_path()).unwrap_or_default();
            saved_streams(&file) == self.stream_sources()
        });
        assert!(saved, "go2rtc did not save its streams:\n{}", self.log());
    }

    /// The settings, with the streams given at start.
    fn settings(&self) -> Value {
        let Ports { api, rtsp, webrtc } = self.ports;
        json!({
            "log": { "format": "json", "level": "info", "api": "trace", "webrtc": "trace" },
            "api": { "listen": format!("{}:{api}", self.api_host) },
            "rtsp": { "listen": format!("{}:{rtsp}", self.rtsp_host) },
            "webrtc": {
                "listen": format!("127.0.0.1:{webrtc}"),
                "candidates": [format!("127.0.0.1:{webrtc}")],
                "ice_servers": [],
                "filters": { "loopback": true, "candidates": ["127.0.0.1"], "networks": ["udp4", "tcp4"] },
            },
            "exec": { "allow_paths": [] },
            "echo": { "allow_paths": [] },
        })
    }

    /// The file: each setting on a line of its own (JSON is YAML), and the
    /// streams in block style, as go2rtc writes them.
    fn write_config(&self) {
        if self.config == Config::Inline {
            return;
        }
        let mut text = String::new();
        for (key, value) in self.settings().as_object().unwrap() {
            text.push_str(&format!("{key}: {value}\n"));
        }
        if !self.streams.is_empty() {
            text.push_str("streams:\n");
            for (name, src) in &self.streams {
                text.push_str(&format!("  {}:\n    - {}\n", json!(name), json!(src)));
            }
        }
        std::fs::write(self.config_path(), text).unwrap();
    }

    /// Starts a run; true once it serves and listens on all its ports.
    fn run(&mut self) -> bool {
        self.held.clear();
        let mut command = Command::new(binary());
        match self.config {
            Config::File => command.arg("-config").arg(self.config_path()),
            Config::Inline => {
                let mut settings = self.settings();
                let streams: serde_json::Map<String, Value> = (self.streams.iter())
                    .map(|(n, s)| (n.clone(), json!([s])))
                    .collect();
                settings["streams"] = Value::Object(streams);
                command.arg("-config").arg(settings.to_string())
            }
        };
        let mut child = command
            .current_dir(self.dir.path())
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {}: {e}", binary().display()));
        self.run_start = self.log.lock().unwrap().len();
        for pipe in [
            Box::new(child.stdout.take().unwrap()) as Box<dyn std::io::Read + Send>,
            Box::new(child.stderr.take().unwrap()),
        ] {
            let log = self.log.clone();
            thread::spawn(move || {
                for line in BufReader::new(pipe).lines().map_while(Result::ok) {
                    log.lock().unwrap().push_str(&format!("{line}\n"));
                }
            });
        }
        self.child = Some(child);
        let rtsp = format!("{}:{}", self.rtsp_host, self.ports.rtsp);
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            let messages = self.messages();
            let listening = |what: &str| messages.iter().any(|m| m.0 == "info" && m.1 == what);
            let serves = get_json(&format!("{}/api", self.url()))
                .is_some_and(|info| info["rtsp"]["listen"] == rtsp.as_str());
            if serves
                && listening("[rtsp] listen")
                && listening("[webrtc] listen tcp")
                && listening("[webrtc] listen udp")
            {
                return true;
            }
            if messages
                .iter()
                .any(|m| m.0 == "error" && m.1.contains("listen"))
            {
                return false;
            }
            thread::sleep(Duration::from_millis(20));
        }
        false
    }

    /// Kills it, as a crash would (the relay is then down), and holds its
    /// ports until it starts again: a node still pointed at them must find
    /// nothing there, not another test's go2rtc to reconcile with.
    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
            let Ports { api, rtsp, webrtc } = self.ports;
            let hosts = [
                (self.api_host.as_str(), api),
                (self.rtsp_host.as_str(), rtsp),
                ("127.0.0.1", webrtc),
            ];
            self.held = hosts
                .into_iter()
                .filter_map(|(host, port)| HeldPort::hold(host, port))
                .collect();
        }
    }

    /// Starts it again on the same ports after [`Go2rtc::stop`].
    pub fn start_again(&mut self, restart: Restart) {
        assert!(self.child.is_none(), "go2rtc is still running");
        if restart == Restart::EmptyFile {
            self.streams.clear();
            self.write_config();
        }
        assert!(
            self.run(),
            "go2rtc did not come back on its ports:\n{}",
            self.log()
        );
    }

    /// Kills it and starts it again; keeping its file, once saved: a kill
    /// while go2rtc saves would leave the file empty, not the one the test
    /// means to keep.
    pub fn restart(&mut self, restart: Restart) {
        if restart == Restart::KeepFile {
            self.wait_saved();
        }
        self.stop();
        self.start_again(restart);
    }

    /// SIGSTOP: a truly hung relay, which accepts connections and never answers.
    pub fn pause(&self) {
        self.signal(libc::SIGSTOP);
    }

    pub fn resume(&self) {
        self.signal(libc::SIGCONT);
    }

    fn signal(&self, signal: libc::c_int) {
        // SAFETY: kill has no memory-safety preconditions.
        let sent = unsafe { libc::kill(self.pid() as libc::pid_t, signal) };
        assert_eq!(sent, 0, "signal {signal} to go2rtc");
    }

    /// Everything go2rtc printed, over all its runs.
    pub fn log(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    /// The current run's log records as (level, message).
    fn messages(&self) -> Vec<(String, String)> {
        let log = self.log.lock().unwrap();
        log[self.run_start.min(log.len())..]
            .lines()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .map(|record| {
                let field = |name: &str| record[name].as_str().unwrap_or_default().to_owned();
                (field("level"), field("message"))
            })
            .collect()
    }

    /// The API requests of the current run, in order, up to now: a request
    /// of the harness's own marks now in go2rtc's log, which its threads
    /// read from a pipe until the mark shows (a running go2rtc's; the marks
    /// are left out).
    pub fn requests(&self) -> Vec<Request> {
        static MARKS: AtomicUsize = AtomicUsize::new(0);
        let mark = format!("harness-mark-{}", MARKS.fetch_add(1, Ordering::Relaxed));
        if self.child.is_some() && get_json(&format!("{}/api?{mark}", self.url())).is_some() {
            wait_for(Duration::from_secs(5), || {
                self.messages().iter().any(|(_, m)| m.contains(&mark))
            });
        }
        self.messages()
            .into_iter()
            .filter_map(|(_, message)| {
                let line = message.strip_prefix("[api] ")?;
                let mut parts = line.split(' ');
                let (method, target) = (parts.next()?, parts.next()?);
                let (path, query) = target.split_once('?').unwrap_or((target, ""));
                Some(Request {
                    method: method.to_owned(),
                    path: path.to_owned(),
                    query: super::relay::form_decode(query),
                })
            })
            .filter(|r| r.path.starts_with('/'))
            .filter(|r| {
                !r.query
                    .iter()
                    .any(|(key, _)| key.starts_with("harness-mark-"))
            })
            .collect()
    }

    /// The WHEP offers of the current run, as go2rtc read them.
    pub fn offers(&self) -> Vec<String> {
        self.messages()
            .into_iter()
            .filter_map(|(_, m)| m.strip_prefix("[webrtc] offer:\n").map(str::to_owned))
            .collect()
    }

    /// `GET /api`'s `version`.
    pub fn version(&self) -> String {
        let info = get_json(&format!("{}/api", self.url())).expect("go2rtc answers GET /api");
        info["version"].as_str().expect("a version").to_owned()
    }

    /// Its streams and their sources, as `GET /api/streams` lists them.
    pub fn streams(&self) -> BTreeMap<String, Vec<String>> {
        let listing = get_json(&format!("{}/api/streams", self.url()))
            .expect("go2rtc answers GET /api/streams");
        let sources = |stream: &Value| -> Vec<String> {
            let producers = stream["producers"].as_array().cloned().unwrap_or_default();
            producers
                .iter()
                .filter_map(|p| p["url"].as_str().map(str::to_owned))
                .collect()
        };
        listing
            .as_object()
            .expect("a JSON object")
            .iter()
            .map(|(name, stream)| (name.clone(), sources(stream)))
            .collect()
    }

    /// Its streams with one source each, for comparisons.
    pub fn stream_sources(&self) -> BTreeMap<String, String> {
        self.streams()
            .into_iter()
            .map(|(name, mut sources)| {
                assert_eq!(sources.len(), 1, "stream {name}: {sources:?}");
                (name, sources.remove(0))
            })
            .collect()
    }

    /// Sets a stream as someone other than the node would; returns the status.
    pub fn put(&self, name: &str, src: &str) -> u16 {
        let request = ureq::put(&format!("{}/api/streams", self.url()));
        status_of(request.query("name", name).query("src", src).call())
    }

    /// Removes a stream as someone other than the node would; returns the status.
    pub fn delete(&self, name: &str) -> u16 {
        let request = ureq::delete(&format!("{}/api/streams", self.url()));
        status_of(request.query("src", name).call())
    }
}

impl Drop for Go2rtc {
    fn drop(&mut self) {
        self.stop();
        if thread::panicking() {
            eprintln!("--- go2rtc output ---\n{}", self.log());
        }
    }
}

/// Three ports free on 127.0.0.1 just now.
fn free_ports() -> Ports {
    let listeners: Vec<TcpListener> = (0..3)
        .map(|_| TcpListener::bind("127.0.0.1:0").unwrap())
        .collect();
    let port = |i: usize| listeners[i].local_addr().unwrap().port();
    Ports {
        api: port(0),
        rtsp: port(1),
        webrtc: port(2),
    }
}

fn get_json(url: &str) -> Option<Value> {
    let response = ureq::get(url).timeout(Duration::from_secs(2)).call().ok()?;
    serde_json::from_reader(response.into_reader()).ok()
}

fn status_of(result: Result<ureq::Response, ureq::Error>) -> u16 {
    match result {
        Ok(response) => response.status(),
        Err(ureq::Error::Status(code, _)) => code,
        Err(e) => panic!("go2rtc did not answer: {e}"),
    }
}

/// The first source of each stream in a configuration file, as go2rtc
/// writes it (`streams:`, then `  NAME:` and `    - SOURCE`) or as
/// [`Go2rtc::write_config`] does (the same, quoted).
fn saved_streams(file: &str) -> BTreeMap<String, String> {
    let mut streams = BTreeMap::new();
    let mut name = None;
    let section = file.split_once("\nstreams:\n").map_or("", |(_, rest)| rest);
    for line in section.lines().take_while(|l| l.starts_with(' ')) {
        let unquoted = |s: &str| s.trim().trim_matches('"').to_owned();
        if let Some(source) = line.trim_start().strip_prefix("- ") {
            if let Some(name) = name.take() {
                streams.insert(name, unquoted(source));
            }
        } else if let Some(key) = line.trim().strip_suffix(':') {
            name = Some(unquoted(key));
        }
    }
    streams
}
