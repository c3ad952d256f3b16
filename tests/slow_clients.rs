//! Slow, idle, oversized and many clients: each is let go or refused, and
//! none starves the others.

use std::io::{BufReader, ErrorKind, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use crate::common;
use crate::common::{Node, TempDir, closed_port};

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
    let dribble = b"GET /api/status HTTP/1.1\r\nX-Slow: "
        .iter()
        .chain(std::iter::repeat(&b'a'));
    if manner == Manner::DribblingBody {
        let head = "POST /api/cameras HTTP/1.1\r\nHost: 127.0.0.1\r\n\
                    Content-Type: application/json\r\nContent-Length: 1000\r\n\r\n{";
        stream.write_all(head.as_bytes()).unwrap();
    }
    let dribble = (manner != Manner::Silent).then_some(dribble.copied());
    common::http::linger_on(
        &mut stream,
        dribble,
        started,
        REQUEST_TIMEOUT + Duration::from_secs(10),
    )
}

#[test]
fn silent_and_dribbling_clients_are_answered_408_and_let_go_within_30_s_and_starve_no_one() {
    let dir = TempDir::new("slow");
    let node = start_node(&dir, &[]);
    let port = node.port;
    let idle = common::settled_threads(&node);
    let clients: Vec<_> = (0..210)
        .map(|i| {
            let manner = [Manner::Silent, Manner::Dribbling, Manner::DribblingBody][i % 3];
            std::thread::Builder::new()
                .stack_size(64 * 1024)
                .spawn(move || (manner, linger(port, manner)))
                .unwrap()
        })
        .collect();
    hold(&node, idle, 210);
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
        // LIMITS.max_line_bytes is 8,224: a header line of that length, CRLF
        // not counted, is read; one byte more is not.
        (
            "a header line of 8,224 bytes",
            head(&format!(
                "Connection: close\r\nX-Big: {}\r\n",
                "a".repeat(8224 - 7)
            )),
            200,
        ),
        (
            "a header line of 8,225 bytes",
            head(&format!("X-Big: {}\r\n", "a".repeat(8225 - 7))),
            431,
        ),
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

/// Connections the node serves at once (`MAX_CONNECTIONS`).
const MAX_CONNECTIONS: usize = 512;

/// Waits until the node, which had `idle` threads, holds `n` connections
/// more (a loaded machine takes seconds): a thread each, but for the 4
/// idle ones tiny_http keeps (`MIN_THREADS`).
fn hold(node: &Node, idle: usize, n: usize) {
    let held = || common::thread_names(node.pid()).len() + 4 >= idle + n;
    assert!(
        common::wait_for(Duration::from_secs(20), held),
        "the node does not hold {n} connections: {} threads, {idle} idle",
        common::thread_names(node.pid()).len()
    );
}

/// Opens `n` connections that send nothing (each holds a node thread for
/// the 30 s a client has to send its request).
fn idle_connections(port: u16, n: usize) -> Vec<TcpStream> {
    (0..n)
        .map(|_| TcpStream::connect(("127.0.0.1", port)).expect("connect"))
        .collect()
}

/// Polls status until it is 200; returns how long that took.
fn until_served(node: &Node, what: &str) -> Duration {
    let started = Instant::now();
    let served = common::wait_for(Duration::from_secs(10), || {
        common::http::request(node.port, "GET", "/api/status", &[], b"").status == 200
    });
    assert!(served, "the node answers no status {what}");
    started.elapsed()
}

/// Raises this process's soft limit of open files to its hard limit: the
/// tests of this file run side by side and together hold more than the
/// usual 1024 connections, and the node (which inherits it) takes two
/// descriptors for each of its 512.
fn allow_many_open_files() {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit with a valid struct.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur = limit.rlim_max;
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
    }
    assert!(
        limit.rlim_max >= 4096,
        "this test needs a hard limit of at least 4096 open files (ulimit -Hn), not {}",
        limit.rlim_max
    );
}

#[test]
fn past_512_connections_a_new_one_is_answered_503_and_the_node_goes_on() {
    allow_many_open_files();
    let dir = TempDir::new("connection-cap");
    // Under the usual soft limit of 1024 open files, which the node raises
    // for its 512 connections of two descriptors each ($0 is the node
    // binary, appended by start_wrapped).
    let wrapper = ["sh", "-c", "ulimit -Sn 1024 && exec \"$0\""];
    let relay = format!("http://127.0.0.1:{}", closed_port());
    let node = Node::start_wrapped(&wrapper, dir.path(), &relay, &[("LOG_LEVEL", "info")]);
    let before = resident_kib(node.pid());
    let idle_threads = common::settled_threads(&node);
    let opened = Instant::now();
    let idle = idle_connections(node.port, MAX_CONNECTIONS);
    // The node takes them in order: once it holds them all, the next is
    // past the cap.
    hold(&node, idle_threads, MAX_CONNECTIONS);
    let refused = send_head(
        node.port,
        b"GET /api/status HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
    );
    // Past the 30 s a connection has to send its request, the first idle
    // ones are let go: the elapsed time tells that from a cap not kept.
    assert!(
        refused.starts_with("HTTP/1.1 503 ") && refused.contains("Retry-After: 1\r\n"),
        "the connection past {MAX_CONNECTIONS}, {:?} after the first, with the node at {} \
         threads ({idle_threads} before), got {refused:?}",
        opened.elapsed(),
        common::thread_names(node.pid()).len()
    );
    let busy = node.get("/api/status");
    assert_eq!(busy.status, 503, "{busy}");
    let (threads, resident) = (
        common::thread_names(node.pid()).len(),
        resident_kib(node.pid()),
    );
    drop(idle);
    let took = until_served(&node, "once the connections are closed");
    eprintln!(
        "{MAX_CONNECTIONS} idle connections: {threads} threads, resident {before} KiB before, \
         {resident} KiB with them; served again {took:?} after they closed"
    );
    assert!(!node.logs().contains("panicked"), "{}", node.logs());
}

/// A pids cgroup of the test's own (cgroup v1's `pids` hierarchy, or v2
/// with the pids controller): the threads of the processes put in it are
/// capped at its `pids.max`. Removed on drop.
struct PidsCgroup(std::path::PathBuf);

impl PidsCgroup {
    fn new() -> PidsCgroup {
        let v1 = std::path::Path::new("/sys/fs/cgroup/pids");
        let v2 = std::path::Path::new("/sys/fs/cgroup");
        let root = if v1.join("cgroup.procs").exists() {
            v1
        } else {
            let controllers = std::fs::read_to_string(v2.join("cgroup.controllers"));
            assert!(
                controllers.is_ok_and(|c| c.split_whitespace().any(|c| c == "pids")),
                "no pids cgroup controller (cgroup v1 /sys/fs/cgroup/pids, or v2 with pids)"
            );
            let _ = std::fs::write(v2.join("cgroup.subtree_control"), "+pids");
            v2
        };
        let dir = root.join(format!("nvr-node-test-{}", std::process::id()));
        std::fs::create_dir(&dir).unwrap_or_else(|e| {
            panic!("cannot make the cgroup {} (needs root): {e}", dir.display())
        });
        PidsCgroup(dir)
    }

    /// Puts process `pid`, all its threads, in the group, and caps the group
    /// at `max` threads.
    fn confine(&self, pid: u32, max: usize) {
        std::fs::write(self.0.join("cgroup.procs"), pid.to_string()).unwrap();
        std::fs::write(self.0.join("pids.max"), max.to_string()).unwrap();
    }
}

impl Drop for PidsCgroup {
    fn drop(&mut self) {
        // Once its processes are reaped.
        common::wait_for(Duration::from_secs(5), || {
            std::fs::remove_dir(&self.0).is_ok()
        });
    }
}

#[test]
fn a_connection_no_thread_can_be_made_for_is_answered_503_and_the_node_goes_on() {
    let dir = TempDir::new("no-threads");
    let cgroup = PidsCgroup::new();
    let node = start_node(&dir, &[("LOG_LEVEL", "info")]);
    assert_eq!(node.get("/api/status").status, 200);
    // Room for 16 threads more than the node has once started: its 4 idle
    // connection threads and 16 new ones take 20 connections; no thread can
    // be made for the others.
    let threads = common::settled_threads(&node);
    cgroup.confine(node.pid(), threads + 16);
    let mut connections = idle_connections(node.port, 40);
    let (mut held, mut refused) = (0, 0);
    for connection in &mut connections {
        connection
            .set_read_timeout(Some(Duration::from_millis(500)))
            .unwrap();
        let mut answer = Vec::new();
        match connection.read_to_end(&mut answer) {
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                assert!(answer.is_empty(), "an idle connection was sent {answer:?}");
                held += 1;
            }
            _ => {
                let answer = String::from_utf8_lossy(&answer);
                assert!(
                    answer.starts_with("HTTP/1.1 503 ") && answer.contains("Retry-After: 1\r\n"),
                    "a connection no thread took got {answer:?}"
                );
                refused += 1;
            }
        }
    }
    eprintln!(
        "{threads} threads and room for 16 more: of 40 connections {held} held, {refused} answered 503"
    );
    assert!(held >= 16 && refused > 0, "{held} held, {refused} refused");
    drop(connections);
    until_served(&node, "once the connections are closed");
    // And it serves new connections beside others.
    let more = idle_connections(node.port, 8);
    let status = node.get("/api/status");
    assert_eq!(status.status, 200, "beside 8 new connections: {status}");
    drop(more);
    // Stopped while no thread can be made, it still stops cleanly.
    let held = idle_connections(node.port, 40);
    node.terminate();
    let exited = common::wait_for_exit(node.pid(), Duration::from_secs(20));
    drop(held);
    // Its last line read from its pipe.
    common::wait_for(Duration::from_secs(5), || node.logs().contains("] stopped"));
    let logs = node.logs();
    assert!(exited, "SIGTERM did not stop a node out of threads: {logs}");
    assert!(logs.contains("] stopped"), "{logs}");
    let code = node.wait();
    assert_eq!(code, Some(0), "{logs}");
    assert!(!logs.contains("panicked"), "{logs}");
}
