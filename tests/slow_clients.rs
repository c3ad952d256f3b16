//! Slow, idle, oversized and many clients: each is let go or refused, and
//! none starves the others.

mod common;

use std::io::{BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Node, TempDir, closed_port};

/// A node with `extra` settings whose relay is not there (these tests need none).
fn start_node(dir: &TempDir, extra: &[(&str, &str)]) -> Node {
    let relay = format!("http://127.0.0.1:{}", closed_port());
    Node::start(dir.path(), &relay, extra)
}

/// Time within which a client must have sent a whole request.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// How a test client behaves once connected.
#[derive(Clone, Copy, PartialEq, Debug)]
enum Manner {
    /// Sends nothing.
    Silent,
    /// Sends a request's head one byte a second, never finishing it.
    Dribbling,
    /// Sends a whole head, then its body one byte a second, never finishing it.
    DribblingBody,
}

/// Connects and behaves in `manner` until the node hangs up; returns how
/// long the connection lasted and what the node sent before hanging up.
fn linger(port: u16, manner: Manner) -> (Duration, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    let started = Instant::now();
    let mut dribble = b"GET /api/status HTTP/1.1\r\nX-Slow: "
        .iter()
        .chain(std::iter::repeat(&b'a'));
    if manner == Manner::DribblingBody {
        let head = "POST /api/cameras HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                    Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{";
        stream.write_all(head.as_bytes()).unwrap();
    }
    let mut received = Vec::new();
    stream
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    while started.elapsed() < REQUEST_TIMEOUT + Duration::from_secs(10) {
        if manner != Manner::Silent && stream.write_all(&[*dribble.next().unwrap()]).is_err() {
            break;
        }
        let mut buf = [0; 512];
        match stream.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => received.extend_from_slice(&buf[..n]),
            Err(e) if e.kind() == ErrorKind::WouldBlock => {}
            Err(_) => break,
        }
    }
    (
        started.elapsed(),
        String::from_utf8_lossy(&received).into_owned(),
    )
}

#[test]
fn silent_and_dribbling_clients_are_answered_408_and_let_go_within_30_s_and_starve_no_one() {
    let dir = TempDir::new("slow");
    let node = start_node(&dir, &[]);
    let port = node.port;
    let clients: Vec<_> = (0..210)
        .map(|i| {
            let manner = [Manner::Silent, Manner::Dribbling, Manner::DribblingBody][i % 3];
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || (manner, linger(port, manner)))
                .unwrap()
        })
        .collect();
    std::thread::sleep(Duration::from_secs(2));
    for _ in 0..5 {
        let started = Instant::now();
        let status = node.get("/api/status");
        let took = started.elapsed();
        assert_eq!(status.status, 200, "{status}");
        assert!(
            took < Duration::from_secs(1),
            "status took {took:?} beside 210 silent and dribbling connections"
        );
    }
    let mut longest = Duration::ZERO;
    for client in clients {
        let (manner, (lasted, received)) = client.join().unwrap();
        assert!(
            lasted <= REQUEST_TIMEOUT + Duration::from_secs(1),
            "a {manner:?} client was let go only after {lasted:?}"
        );
        assert!(
            received.starts_with("HTTP/1.1 408 "),
            "a {manner:?} client was sent {received:?}, not a 408"
        );
        longest = longest.max(lasted);
    }
    eprintln!("210 silent and dribbling clients let go after at most {longest:?}");
    assert_eq!(node.get("/api/status").status, 200);
}

#[test]
fn an_idle_keep_alive_connection_is_closed_after_30_s() {
    let dir = TempDir::new("idle");
    let node = start_node(&dir, &[]);
    let mut connection = TcpStream::connect(("127.0.0.1", node.port)).unwrap();
    connection
        .write_all(b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .unwrap();
    let mut reader = BufReader::new(connection.try_clone().unwrap());
    let answered = common::http::read_response(&mut reader, false);
    assert_eq!(answered.status, 200, "{answered}");
    let idle_from = Instant::now();
    connection
        .set_read_timeout(Some(REQUEST_TIMEOUT + Duration::from_secs(10)))
        .unwrap();
    let mut rest = String::new();
    let _ = reader.read_to_string(&mut rest);
    let idle = idle_from.elapsed();
    assert!(
        idle > REQUEST_TIMEOUT - Duration::from_secs(1)
            && idle <= REQUEST_TIMEOUT + Duration::from_secs(1),
        "the idle connection was closed after {idle:?}"
    );
    assert!(rest.starts_with("HTTP/1.1 408 "), "sent {rest:?}");
}

/// Sends `head` (which need not end), then reads what the node answers.
fn send_head(port: u16, head: &[u8]) -> String {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let _ = stream.write_all(head);
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer);
    String::from_utf8_lossy(&answer).into_owned()
}

#[test]
fn oversized_request_lines_and_heads_get_414_and_431() {
    let dir = TempDir::new("heads");
    let node = start_node(&dir, &[]);
    let head = |lines: &str| format!("GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n{lines}\r\n");
    let big_line = format!("X-Big: {}\r\n", "a".repeat(7 * 1024));
    let many = (0..101)
        .map(|i| format!("X-{i}: a\r\n"))
        .collect::<String>();
    let cases = [
        (
            "a 9 KiB request line",
            format!("GET /{} HTTP/1.1\r\n", "a".repeat(9 * 1024)),
            414,
        ),
        (
            "a 9 KiB header",
            head(&format!("X-Big: {}\r\n", "a".repeat(9 * 1024))),
            431,
        ),
        ("102 headers", head(&many), 431),
        ("a 35 KiB head", head(&big_line.repeat(5)), 431),
        (
            "a 21 KiB head",
            head(&format!("Connection: close\r\n{}", big_line.repeat(3))),
            200,
        ),
    ];
    for (what, request, status) in cases {
        let answer = send_head(node.port, request.as_bytes());
        assert!(
            answer.starts_with(&format!("HTTP/1.1 {status} ")),
            "{what} got {answer:?}, not {status}"
        );
    }
}

#[test]
fn a_flood_of_endless_headers_leaves_memory_bounded() {
    let dir = TempDir::new("flood");
    let node = start_node(&dir, &[("LOG_LEVEL", "warn")]);
    let port = node.port;
    let before = resident_kib(node.pid());
    // 50 clients each try to send a 100 MiB header line.
    let floods: Vec<_> = (0..50)
        .map(|_| {
            std::thread::spawn(move || {
                let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
                stream
                    .write_all(b"GET /api/status HTTP/1.1\r\nX-Flood: ")
                    .unwrap();
                let chunk = vec![b'a'; 64 * 1024];
                let mut sent = 0usize;
                while sent < 100 << 20 {
                    match stream.write(&chunk) {
                        Ok(n) => sent += n,
                        Err(_) => break,
                    }
                }
                sent
            })
        })
        .collect();
    let mut peak = before;
    let mut most_sent = 0;
    for flood in floods {
        peak = peak.max(resident_kib(node.pid()));
        most_sent = most_sent.max(flood.join().unwrap());
    }
    peak = peak.max(resident_kib(node.pid()));
    eprintln!(
        "50 floods of header bytes: at most {most_sent} bytes taken from one; resident {before} KiB before, {peak} KiB peak"
    );
    assert!(most_sent < 16 << 20, "a flood got {most_sent} bytes in");
    assert!(
        peak < before + 16 * 1024,
        "resident memory went from {before} KiB to {peak} KiB"
    );
    assert_eq!(node.get("/api/status").status, 200);
}

fn resident_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let line = status
        .lines()
        .find(|l| l.starts_with("VmRSS:"))
        .unwrap_or("VmRSS: 0 kB");
    line.split_whitespace()
        .nth(1)
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

#[test]
fn five_hundred_keep_alive_clients_get_answers_or_503() {
    let dir = TempDir::new("hammer");
    let node = start_node(&dir, &[("LOG_LEVEL", "warn")]);
    let port = node.port;
    let before = resident_kib(node.pid());
    let stop = Instant::now() + Duration::from_secs(30);
    let clients: Vec<_> = (0..500)
        .map(|_| {
            std::thread::Builder::new()
                .stack_size(128 * 1024)
                .spawn(move || {
                    let (mut ok, mut busy, mut other) = (0u64, 0u64, Vec::new());
                    let mut connection = common::http::Connection::open(port);
                    while Instant::now() < stop {
                        let response = connection.get("/api/status");
                        match response.status {
                            200 => ok += 1,
                            503 => busy += 1,
                            s => other.push(s),
                        }
                        if response.header("Connection") == Some("close") {
                            connection = common::http::Connection::open(port);
                        }
                    }
                    (ok, busy, other)
                })
                .unwrap()
        })
        .collect();
    let mut peak = 0;
    while Instant::now() < stop {
        peak = peak.max(resident_kib(node.pid()));
        std::thread::sleep(Duration::from_millis(200));
    }
    let (mut ok, mut busy) = (0, 0);
    for client in clients {
        let (o, b, other) = client.join().expect("a client failed (connection error)");
        assert!(
            other.is_empty(),
            "statuses other than 200 and 503: {other:?}"
        );
        ok += o;
        busy += b;
    }
    eprintln!(
        "500 clients, 30 s: {ok} answered, {busy} busy (503); resident {before} KiB idle, {peak} KiB peak"
    );
    assert!(ok > 0);
    assert!(peak < 256 * 1024, "resident memory peaked at {peak} KiB");
    let started = Instant::now();
    assert_eq!(node.get("/api/status").status, 200);
    assert!(
        started.elapsed() < Duration::from_millis(500),
        "recovery took {:?}",
        started.elapsed()
    );
}

/// Requests the node handles at once (`MAX_IN_FLIGHT`).
const MAX_IN_FLIGHT: usize = 64;

/// A request for `path` whose client reads the answer's head and then
/// reads no more until told to, so the node's send of the body waits.
struct SlowReader {
    stream: TcpStream,
    head: String,
}

impl SlowReader {
    fn start(port: u16, path: &str) -> SlowReader {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        let request =
            format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
        stream.write_all(request.as_bytes()).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        let mut head = vec![0; 1024];
        let n = stream.read(&mut head).unwrap_or(0);
        head.truncate(n);
        let head = String::from_utf8_lossy(&head).into_owned();
        SlowReader { stream, head }
    }

    /// Reads the rest of the answer; returns how many bytes that was.
    fn finish(mut self) -> usize {
        let mut rest = Vec::new();
        let _ = self.stream.read_to_end(&mut rest);
        rest.len()
    }
}

#[test]
fn a_download_keeps_its_place_among_the_64_in_flight_until_its_body_ends() {
    let dir = TempDir::new("slow-downloads");
    let node = start_node(&dir, &[("LOG_LEVEL", "info")]);
    let camera = node.add_camera(serde_json::json!({
        "name": "Door", "rtspUrl": format!("rtsp://127.0.0.1:{}/x", closed_port()),
    }));
    // A clip far larger than what the sockets between a reader and the node
    // hold (a sparse file: no disk), so a reader that stops keeps its
    // download going.
    const CLIP_BYTES: u64 = 32 << 20;
    std::fs::create_dir_all(dir.path().join("clips")).unwrap();
    let clip = std::fs::File::create(dir.path().join("clips/big.mp4")).unwrap();
    clip.set_len(CLIP_BYTES).unwrap();
    let body = serde_json::json!({
        "cameraId": camera["id"], "kind": "person", "score": 0.9,
        "startedAt": "2026-11-22T10:00:00.000Z", "endedAt": "2026-11-22T10:00:01.000Z",
        "clipPath": "clips/big.mp4",
    });
    let event = node.post_json("/api/events", &body.to_string());
    assert_eq!(event.status, 201, "{event}");
    let clip_url = event.json()["clipUrl"].as_str().unwrap().to_owned();

    let port = node.port;
    let readers: Vec<SlowReader> = (0..MAX_IN_FLIGHT)
        .map(|_| {
            std::thread::spawn({
                let clip_url = clip_url.clone();
                move || SlowReader::start(port, &clip_url)
            })
        })
        .collect::<Vec<_>>()
        .into_iter()
        .map(|reader| reader.join().unwrap())
        .collect();
    for reader in &readers {
        assert!(
            reader.head.starts_with("HTTP/1.1 200 "),
            "a download was answered {:?}",
            reader.head
        );
    }
    for path in ["/api/status", clip_url.as_str()] {
        let busy = node.get(path);
        assert_eq!(
            busy.status, 503,
            "{path} beside {MAX_IN_FLIGHT} downloads in flight: {busy}"
        );
        assert_eq!(busy.header("Retry-After"), Some("1"), "{busy}");
    }
    let started = Instant::now();
    let finished: Vec<_> = readers
        .into_iter()
        .map(|reader| std::thread::spawn(move || reader.finish()))
        .collect();
    for reader in finished {
        let read = reader.join().unwrap() as u64;
        assert!(
            read + 1024 >= CLIP_BYTES,
            "a download ended after {read} bytes"
        );
    }
    eprintln!(
        "{MAX_IN_FLIGHT} downloads of {} MiB read to their end in {:?}",
        CLIP_BYTES >> 20,
        started.elapsed()
    );
    let status = node.get("/api/status");
    assert_eq!(status.status, 200, "once the downloads ended: {status}");
}
