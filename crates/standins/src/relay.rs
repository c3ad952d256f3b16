//! A stand-in for the stream relay, go2rtc, speaking the part of its HTTP API
//! the node uses, as go2rtc 1.9 does (internal/streams/api.go, internal/webrtc):
//! - `GET /api`: 200 with a JSON object carrying `version`.
//! - `GET /api/streams`: 200, a JSON object of stream name to `{"producers": [{"url": src}]}`.
//! - `PUT /api/streams?name=N&src=S`: adds or replaces stream N; 200, empty body.
//! - `DELETE /api/streams?src=N`: removes stream N; 200, empty body, known or not.
//! - `POST /api/webrtc?src=N` with an SDP offer: 201 `application/sdp` answer; 404 with
//!   "stream not found" for an unknown stream; 500 with the error text on failure.
//!
//! Only for the faults the real go2rtc (`tests/common/go2rtc.rs`) cannot be made to show:
//! a fixed delay on each offer (`Slow`), a session `Location` in a WHEP answer
//! (`WithSession`: go2rtc 1.9.14 names one only for WHIP), and an error text
//! with the camera's password (`Fail`: go2rtc's carries it only for addresses
//! Go cannot parse, which the node refuses). It does no real WebRTC (the answer
//! is a fixed SDP) and records every request it receives. The benchmark runs
//! it too (`nvr-standin relay`), to measure the node alone: there it keeps no
//! record of requests (`Options::program`), and go2rtc's own time would be
//! part of what it measures.
//!
//! Where go2rtc 1.9.14 behaves otherwise: it answers PUT and DELETE with 400
//! "config file disabled" when it has no configuration file it can write, yet
//! makes the change; it refuses an upper-case scheme (`RTSP://`) with 400; it
//! refuses an offer without ICE credentials with 500; and neither a DELETE nor
//! a PUT of a new source ends the current viewers of a stream.

use std::collections::{BTreeMap, HashMap};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpStream};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use crate::Acceptor;

/// How the stand-in answers WHEP offers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WebrtcMode {
    Answer,
    /// 500, as go2rtc answers when it cannot reach the camera.
    Fail,
    /// Waits this long before answering.
    Slow(Duration),
    /// Answers with a `Location` for the session and ends it on `DELETE /api/webrtc?id=`,
    /// as go2rtc does for WHIP sessions (not for WHEP ones).
    WithSession,
}

/// A request it received (and one the tests read from go2rtc's log: the
/// same three parts).
#[derive(Clone, Debug)]
pub struct Received {
    pub method: String,
    pub path: String,
    pub query: Vec<(String, String)>,
}

impl Received {
    pub fn param(&self, name: &str) -> Option<&str> {
        self.query
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }
}

/// How a relay stand-in runs: for a test (`Options::default()`) or for a
/// program (`Options::program()`).
#[derive(Clone, Copy, Debug)]
pub struct Options {
    /// Stops taking connections this long after its start, so that one a test
    /// leaks does not listen for ever; `None` for a program, which its own end stops.
    pub stop_after: Option<Duration>,
    /// Keeps every request it receives, for `Relay::received`; a program's
    /// would grow with every request of a benchmark.
    pub keep_received: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            stop_after: Some(Duration::from_secs(300)),
            keep_received: true,
        }
    }
}

impl Options {
    /// For a program that runs it until it ends.
    pub fn program() -> Options {
        Options {
            stop_after: None,
            keep_received: false,
        }
    }
}

#[derive(Default)]
struct State {
    streams: BTreeMap<String, String>,
    received: Vec<Received>,
    keep_received: bool,
    mode: Option<WebrtcMode>,
    sessions: Vec<String>,
    next_session: u32,
}

/// The connections being served, by number, so that dropping the stand-in
/// closes them; each leaves when its client closes it.
#[derive(Default)]
struct Connections {
    open: HashMap<u64, TcpStream>,
    next: u64,
}

/// Runs on its own accept loop, a thread per connection, so slow answers
/// never hold up other requests; dropping it closes every connection.
pub struct Relay {
    state: Arc<Mutex<State>>,
    acceptor: Acceptor,
    connections: Arc<Mutex<Connections>>,
    pub port: u16,
}

pub const ANSWER_BODY: &str =
    "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=go2rtc stand-in answer\r\nt=0 0\r\n";

impl Relay {
    /// Starts on a free port of 127.0.0.1. It stops by itself after 5 minutes.
    pub fn start() -> Relay {
        Relay::start_with(Options::default())
    }

    pub fn start_with(options: Options) -> Relay {
        let state = Arc::new(Mutex::new(State {
            keep_received: options.keep_received,
            ..State::default()
        }));
        let connections: Arc<Mutex<Connections>> = Arc::default();
        let (served, open) = (state.clone(), connections.clone());
        let acceptor = Acceptor::start(options.stop_after, move |stream| {
            // Each answer goes out in one write; without this, Nagle's
            // algorithm could hold the next request's answer for the client's
            // delayed acknowledgement.
            let _ = stream.set_nodelay(true);
            let Ok(clone) = stream.try_clone() else {
                return;
            };
            let id = {
                let mut connections = open.lock().unwrap();
                connections.next += 1;
                let id = connections.next;
                connections.open.insert(id, clone);
                id
            };
            let (state, open) = (served.clone(), open.clone());
            thread::spawn(move || {
                serve_connection(stream, &state);
                open.lock().unwrap().open.remove(&id);
            });
        });
        Relay {
            state,
            port: acceptor.port,
            acceptor,
            connections,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn set_webrtc_mode(&self, mode: WebrtcMode) {
        self.state.lock().unwrap().mode = Some(mode);
    }

    pub fn streams(&self) -> BTreeMap<String, String> {
        self.state.lock().unwrap().streams.clone()
    }

    pub fn received(&self) -> Vec<Received> {
        self.state.lock().unwrap().received.clone()
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.acceptor.stop();
        for (_, connection) in self.connections.lock().unwrap().open.drain() {
            let _ = connection.shutdown(Shutdown::Both);
        }
    }
}

/// HTTP/1.1 keep-alive: requests with Content-Length bodies, one after another.
fn serve_connection(stream: TcpStream, state: &Mutex<State>) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    while let Some(received) = read_request(&mut reader) {
        let answer = answer(&received, state);
        {
            let mut state = state.lock().unwrap();
            if state.keep_received {
                state.received.push(received);
            }
        }
        thread::sleep(answer.delay);
        let mut head = format!(
            "HTTP/1.1 {} {}\r\nContent-Length: {}\r\nContent-Type: {}\r\n",
            answer.status,
            reason(answer.status),
            answer.body.len(),
            answer.content_type,
        );
        if let Some(location) = &answer.location {
            head.push_str(&format!("Location: {location}\r\n"));
        }
        head.push_str("\r\n");
        head.push_str(&answer.body);
        if writer.write_all(head.as_bytes()).is_err() {
            return;
        }
    }
}

fn read_request(reader: &mut BufReader<TcpStream>) -> Option<Received> {
    let mut line = String::new();
    reader.read_line(&mut line).ok().filter(|n| *n > 0)?;
    let mut parts = line.split_whitespace();
    let (method, target) = (parts.next()?.to_owned(), parts.next()?.to_owned());
    let mut length = 0;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok().filter(|n| *n > 0)?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        let (name, value) = header.split_once(':')?;
        if name.trim().eq_ignore_ascii_case("content-length") {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    let (path, query) = target.split_once('?').unwrap_or((&target, ""));
    Some(Received {
        method,
        path: path.to_owned(),
        query: form_decode(query),
    })
}

/// A query string's pairs, each name and value `+`- and %-decoded: `a=1&b=%20x`
/// as Go's `Query()` reads it, and so go2rtc.
pub fn form_decode(query: &str) -> Vec<(String, String)> {
    query
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|pair| {
            let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
            (percent_decode(k), percent_decode(v))
        })
        .collect()
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        201 => "Created",
        400 => "Bad Request",
        404 => "Not Found",
        _ => "Internal Server Error",
    }
}

struct Answer {
    status: u16,
    content_type: &'static str,
    body: String,
    delay: Duration,
    location: Option<String>,
}

impl Answer {
    fn new(status: u16, content_type: &'static str, body: impl Into<String>) -> Answer {
        Answer {
            status,
            content_type,
            body: body.into(),
            delay: Duration::ZERO,
            location: None,
        }
    }

    fn plain(status: u16, body: impl Into<String>) -> Answer {
        Answer::new(status, "text/plain; charset=utf-8", body)
    }

    fn sdp() -> Answer {
        Answer::new(201, "application/sdp", ANSWER_BODY)
    }
}

fn answer(r: &Received, state: &Mutex<State>) -> Answer {
    let mut state = state.lock().unwrap();
    match (r.method.as_str(), r.path.as_str()) {
        ("GET", "/api") => Answer::new(
            200,
            "application/json",
            r#"{"version":"1.9.9","rtsp":{"listen":":8554"}}"#,
        ),
        ("GET", "/api/streams") => {
            let streams: Vec<String> = (state.streams.iter())
                .map(|(name, src)| {
                    format!(
                        r#"{}:{{"producers":[{{"url":{}}}],"consumers":null}}"#,
                        json_string(name),
                        json_string(src)
                    )
                })
                .collect();
            Answer::new(
                200,
                "application/json",
                format!("{{{}}}", streams.join(",")),
            )
        }
        ("PUT", "/api/streams") => match (r.param("name").or(r.param("src")), r.param("src")) {
            (Some(name), Some(src)) => {
                state.streams.insert(name.to_owned(), src.to_owned());
                Answer::plain(200, "")
            }
            _ => Answer::plain(400, ""),
        },
        ("DELETE", "/api/streams") => {
            if let Some(name) = r.param("src") {
                state.streams.remove(name);
            }
            Answer::plain(200, "")
        }
        ("POST", "/api/webrtc") => {
            let Some(src) = r.param("src").and_then(|name| state.streams.get(name)) else {
                return Answer::plain(404, "stream not found");
            };
            match state.mode.unwrap_or(WebrtcMode::Answer) {
                WebrtcMode::Fail => {
                    Answer::plain(500, format!("streams: dial tcp: {src}: i/o timeout"))
                }
                WebrtcMode::Answer => Answer::sdp(),
                WebrtcMode::Slow(delay) => Answer {
                    delay,
                    ..Answer::sdp()
                },
                WebrtcMode::WithSession => {
                    state.next_session += 1;
                    let id = state.next_session.to_string();
                    state.sessions.push(id.clone());
                    Answer {
                        location: Some(format!("webrtc?id={id}")),
                        ..Answer::sdp()
                    }
                }
            }
        }
        ("DELETE", "/api/webrtc") => {
            let known = state
                .sessions
                .iter()
                .position(|s| Some(s.as_str()) == r.param("id"));
            match known {
                Some(index) => {
                    state.sessions.remove(index);
                    Answer::plain(200, "")
                }
                None => Answer::plain(404, ""),
            }
        }
        _ => Answer::plain(404, "404 page not found"),
    }
}

fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'+' => out.push(b' '),
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).unwrap_or("");
                match u8::from_str_radix(hex, 16) {
                    Ok(b) => {
                        out.push(b);
                        i += 2;
                    }
                    Err(_) => out.push(b'%'),
                }
            }
            b => out.push(b),
        }
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `text` as a JSON string (std only: no serde_json in this crate).
fn json_string(text: &str) -> String {
    let mut out = String::with_capacity(text.len() + 2);
    out.push('"');
    for c in text.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
