//! A raw HTTP/1.1 client, so tests control every byte they send.

use std::fmt;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

pub struct Response {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Response {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {self}"))
    }

    /// The body of a gzip-encoded answer, decompressed by the system's
    /// `gzip -dc`, after checking the answer says it is gzip.
    pub fn gunzipped(&self) -> Vec<u8> {
        assert_eq!(self.header("Content-Encoding"), Some("gzip"), "{self}");
        let mut gzip = Command::new("gzip")
            .arg("-dc")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("run gzip -dc (install gzip): {e}"));
        let mut stdin = gzip.stdin.take().unwrap();
        let body = self.body.clone();
        let writer = std::thread::spawn(move || stdin.write_all(&body));
        let output = gzip.wait_with_output().unwrap();
        writer.join().unwrap().unwrap();
        assert!(
            output.status.success(),
            "gzip -dc of the body: {}: {}\n{self}",
            output.status,
            String::from_utf8_lossy(&output.stderr)
        );
        output.stdout
    }

    /// The message of an error response, after checking its shape.
    pub fn error(&self) -> String {
        assert_eq!(
            self.header("Content-Type"),
            Some("application/json"),
            "{self}"
        );
        let body = self.json();
        let object = body
            .as_object()
            .unwrap_or_else(|| panic!("not an object: {self}"));
        assert_eq!(object.len(), 1, "{self}");
        object["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error message: {self}"))
            .to_owned()
    }
}

impl fmt::Display for Response {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "HTTP {}", self.status)?;
        for (k, v) in &self.headers {
            writeln!(f, "{k}: {v}")?;
        }
        write!(f, "\n{}", self.text())
    }
}

/// Sends one request on a new connection.
pub fn request(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    request_at("127.0.0.1", port, method, path, headers, body)
}

/// Sends one request to `host` (a node in a test network) on a new connection.
pub fn request_at(
    host: &str,
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let stream = TcpStream::connect((host, port)).expect("connect to the node");
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    exchange(
        stream,
        &format!("{host}:{port}"),
        method,
        path,
        headers,
        body,
    )
}

/// Sends one request on `stream` (a connection to the node, plain or TLS),
/// with `Host: authority` unless `headers` has one, and reads the answer.
pub fn exchange(
    mut stream: impl Read + Write,
    authority: &str,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let mut head = format!("{method} {path} HTTP/1.1\r\nConnection: close\r\n");
    if !headers.iter().any(|(k, _)| k.eq_ignore_ascii_case("Host")) {
        head.push_str(&format!("Host: {authority}\r\n"));
    }
    for (k, v) in headers {
        head.push_str(&format!("{k}: {v}\r\n"));
    }
    if !body.is_empty() || method == "POST" {
        head.push_str(&format!("Content-Length: {}\r\n", body.len()));
    }
    head.push_str("\r\n");
    stream.write_all(head.as_bytes()).unwrap();
    // The node may answer (413, 415) and close before reading all of a body.
    let _ = stream.write_all(body);
    read_response(&mut BufReader::new(stream), method == "HEAD")
}

/// Reads one response; the body by Content-Length, else to the end.
pub fn read_response(reader: &mut impl BufRead, head_only: bool) -> Response {
    let mut line = String::new();
    reader.read_line(&mut line).expect("read the status line");
    let status = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("bad status line {line:?}"));
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        reader.read_line(&mut line).expect("read a header");
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        let (k, v) = line.split_once(':').expect("header has a colon");
        headers.push((k.trim().to_owned(), v.trim().to_owned()));
    }
    let mut response = Response {
        status,
        headers,
        body: Vec::new(),
    };
    if head_only {
        return response;
    }
    match response
        .header("Content-Length")
        .map(|n| n.parse::<usize>().unwrap())
    {
        Some(n) => {
            response.body.resize(n, 0);
            reader
                .read_exact(&mut response.body)
                .expect("read the body");
        }
        None => {
            reader
                .read_to_end(&mut response.body)
                .expect("read the body");
        }
    }
    response
}

/// A keep-alive connection for several requests in a row.
pub struct Connection {
    reader: BufReader<TcpStream>,
    port: u16,
}

impl Connection {
    pub fn open(port: u16) -> Connection {
        let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect to the node");
        stream
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        Connection {
            reader: BufReader::new(stream),
            port,
        }
    }

    pub fn get(&mut self, path: &str) -> Response {
        let head = format!(
            "GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
            self.port
        );
        self.reader.get_mut().write_all(head.as_bytes()).unwrap();
        read_response(&mut self.reader, false)
    }
}

/// Holds `stream` open until the node hangs up or `give_up` has passed
/// since `started`, writing a byte of `dribble` (if any) each second
/// between reads; returns how long that was and what the node sent.
pub fn linger_on(
    stream: &mut TcpStream,
    mut dribble: Option<impl Iterator<Item = u8>>,
    started: Instant,
    give_up: Duration,
) -> (Duration, String) {
    stream
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let mut received = Vec::new();
    while started.elapsed() < give_up {
        if let Some(bytes) = &mut dribble {
            let byte = bytes.next().expect("more bytes to dribble");
            if stream.write_all(&[byte]).is_err() {
                break;
            }
        }
        let mut buf = [0; 512];
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => received.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => break,
        }
    }
    (
        started.elapsed(),
        String::from_utf8_lossy(&received).into_owned(),
    )
}

/// How many lines of a UI `file` the node `served` changed, checking that
/// each is the line without its indentation, or empty where the line was a
/// comment (`//`, or `/* */` over one or more lines): what build.rs leaves
/// out of the embedded UI.
pub fn served_as(served: &[u8], file: &[u8]) -> usize {
    let (served, file) = (
        String::from_utf8_lossy(served),
        String::from_utf8_lossy(file),
    );
    assert_eq!(served.lines().count(), file.lines().count(), "{served}");
    let (mut changed, mut in_comment) = (0, false);
    for (n, (served, line)) in served.lines().zip(file.lines()).enumerate() {
        let code = line.trim_start_matches([' ', '\t']);
        let comment = in_comment || code.starts_with("//") || code.starts_with("/*");
        in_comment = (in_comment || code.contains("/*")) && !code.contains("*/");
        if served != line {
            assert!(
                served == code || (served.is_empty() && comment),
                "line {}: {served:?} served for {line:?}",
                n + 1
            );
            changed += 1;
        }
    }
    changed
}
