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
