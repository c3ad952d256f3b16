//! An RTSP port that is not a camera: it answers every request with 401
//! and a Basic challenge, as a camera that wants a password does, and
//! records each connection and whether a request carried an Authorization
//! header. It stands in for a host that must never be given a camera's
//! password, to tell whether the node sent it.

use std::io::{BufRead, BufReader, Write};
use std::net::{Ipv4Addr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

#[derive(Default)]
struct Seen {
    connections: usize,
    authorized: usize,
}

pub struct Trap {
    pub port: u16,
    seen: Arc<Mutex<Seen>>,
    stop: Arc<AtomicBool>,
}

impl Trap {
    /// Listens on `host`:`port` (0: a free one).
    pub fn start(host: Ipv4Addr, port: u16) -> Trap {
        let listener =
            TcpListener::bind((host, port)).unwrap_or_else(|e| panic!("bind {host}:{port}: {e}"));
        listener.set_nonblocking(true).unwrap();
        let trap = Trap {
            port: listener.local_addr().unwrap().port(),
            seen: Arc::default(),
            stop: Arc::default(),
        };
        let (seen, stop) = (trap.seen.clone(), trap.stop.clone());
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        seen.lock().unwrap().connections += 1;
                        let seen = seen.clone();
                        thread::spawn(move || answer(stream, &seen));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        trap
    }

    /// Connections accepted so far.
    pub fn connections(&self) -> usize {
        self.seen.lock().unwrap().connections
    }

    /// Requests that carried an Authorization header.
    pub fn authorized(&self) -> usize {
        self.seen.lock().unwrap().authorized
    }
}

impl Drop for Trap {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Answers each request on `stream` with 401 until the client goes.
fn answer(stream: TcpStream, seen: &Mutex<Seen>) {
    stream.set_nonblocking(false).unwrap();
    let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let (mut cseq, mut authorization) = (String::from("1"), false);
        let mut any = false;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            if line.trim().is_empty() {
                if any {
                    break;
                }
                continue;
            }
            any = true;
            let lower = line.to_ascii_lowercase();
            if let Some(value) = lower.strip_prefix("cseq:") {
                cseq = value.trim().to_owned();
            }
            authorization |= lower.starts_with("authorization:");
        }
        if authorization {
            seen.lock().unwrap().authorized += 1;
        }
        let response = format!(
            "RTSP/1.0 401 Unauthorized\r\nCSeq: {cseq}\r\nWWW-Authenticate: Basic realm=\"trap\"\r\n\r\n"
        );
        if writer.write_all(response.as_bytes()).is_err() {
            return;
        }
    }
}
