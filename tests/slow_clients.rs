//! Clients that connect and go silent do not starve the others.

mod common;

use std::net::TcpStream;
use std::time::{Duration, Instant};

use common::{Node, TempDir, closed_port};

#[test]
fn two_hundred_silent_connections_starve_no_one() {
    let dir = TempDir::new("slow");
    let node = Node::start(
        dir.path(),
        &format!("http://127.0.0.1:{}", closed_port()),
        &[],
    );
    let _silent: Vec<TcpStream> = (0..200)
        .map(|_| TcpStream::connect(("127.0.0.1", node.port)).expect("connect"))
        .collect();
    let mut partial = TcpStream::connect(("127.0.0.1", node.port)).unwrap();
    std::io::Write::write_all(&mut partial, b"GET /api/sta").unwrap();
    std::thread::sleep(Duration::from_millis(500));
    for _ in 0..5 {
        let started = Instant::now();
        let status = node.get("/api/status");
        let took = started.elapsed();
        assert_eq!(status.status, 200, "{status}");
        assert!(
            took < Duration::from_secs(1),
            "status took {took:?} beside 200 silent connections"
        );
    }
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
    let node = Node::start(
        dir.path(),
        &format!("http://127.0.0.1:{}", closed_port()),
        &[("LOG_LEVEL", "warn")],
    );
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
