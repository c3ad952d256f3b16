//! A stand-in for the stream relay, go2rtc, speaking the part of its HTTP API
//! the node uses, as go2rtc 1.9 does (internal/streams/api.go, internal/webrtc):
//! - `GET /api`: 200 with a JSON object carrying `version`.
//! - `GET /api/streams`: 200, a JSON object of stream name to `{"producers": [{"url": src}]}`.
//! - `PUT /api/streams?name=N&src=S`: adds or replaces stream N; 200, empty body.
//! - `DELETE /api/streams?src=N`: removes stream N; 200, empty body, known or not.
//! - `POST /api/webrtc?src=N` with an SDP offer: 201 `application/sdp` answer; 404 with
//!   "stream not found" for an unknown stream; 500 with the error text on failure.
//!
//! Only for the faults the real go2rtc (`go2rtc.rs`) cannot be made to show:
//! a fixed delay on each offer (`Slow`), a session `Location` in a WHEP answer
//! (`WithSession`: go2rtc 1.9.14 names one only for WHIP), and an error text
//! with the camera's password (`Fail`: go2rtc's carries it only for addresses
//! Go cannot parse, which the node refuses). It does no real WebRTC (the answer
//! is a fixed SDP) and records every request it receives.
//!
//! Where go2rtc 1.9.14 behaves otherwise: it answers PUT and DELETE with 400
//! "config file disabled" when it has no configuration file it can write, yet
//! makes the change; it refuses an upper-case scheme (`RTSP://`) with 400; it
//! refuses an offer without ICE credentials with 500; and neither a DELETE nor
//! a PUT of a new source ends the current viewers of a stream.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

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

#[derive(Default)]
struct State {
    streams: BTreeMap<String, String>,
    received: Vec<Received>,
    mode: Option<WebrtcMode>,
    sessions: Vec<String>,
    next_session: u32,
}

/// Runs on its own accept loop, a thread per connection, so slow answers
/// never hold up other requests; dropping it closes every connection.
pub struct Relay {
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    connections: Arc<Mutex<Vec<TcpStream>>>,
    pub port: u16,
}

pub const ANSWER_BODY: &str =
    "v=0\r\no=- 1 1 IN IP4 127.0.0.1\r\ns=go2rtc stand-in answer\r\nt=0 0\r\n";

impl Relay {
    /// Starts on a free port of 127.0.0.1. It stops by itself after 5 minutes.
    pub fn start() -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").expect("relay stand-in binds");
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let relay = Relay {
            state: Arc::default(),
            stop: Arc::default(),
            connections: Arc::default(),
            port,
        };
        let (state, stop, connections) = (
            relay.state.clone(),
            relay.stop.clone(),
            relay.connections.clone(),
        );
        thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(300);
            while !stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                let Ok((stream, _)) = listener.accept() else {
                    thread::sleep(Duration::from_millis(10));
                    continue;
                };
                stream.set_nonblocking(false).unwrap();
                connections
                    .lock()
                    .unwrap()
                    .push(stream.try_clone().unwrap());
                let state = state.clone();
                thread::spawn(move || serve_connection(stream, &state));
            }
        });
        relay
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
        self.stop.store(true, Ordering::Relaxed);
        for connection in self.connections.lock().unwrap().drain(..) {
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
        state.lock().unwrap().received.push(received);
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
        if writer
            .write_all(head.as_bytes())
            .and_then(|_| writer.write_all(answer.body.as_bytes()))
            .is_err()
        {
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
        query: query
            .split('&')
            .filter(|p| !p.is_empty())
            .map(|pair| {
                let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
                (percent_decode(k), percent_decode(v))
            })
            .collect(),
    })
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
            let streams: serde_json::Map<String, serde_json::Value> = state
                .streams
                .iter()
                .map(|(name, src)| {
                    (
                        name.clone(),
                        serde_json::json!({ "producers": [{ "url": src }], "consumers": null }),
                    )
                })
                .collect();
            Answer::new(
                200,
                "application/json",
                serde_json::Value::Object(streams).to_string(),
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
