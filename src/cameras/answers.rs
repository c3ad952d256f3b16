//! Whether a camera answers: an RTSP `OPTIONS` request, which needs no
//! credentials; any RTSP status line is an answer. The node's online check
//! (`background/monitor.rs`) asks it on a timer; a recorder waiting to start
//! again asks it, to start as soon as a camera back from a reboot answers.

use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::{Duration, Instant};

use crate::cameras::rtsp_url::{rtsp_endpoint, without_userinfo};

/// Whether the camera at `url` answers an RTSP `OPTIONS` request within `timeout`.
/// For `rtsps` the TLS handshake is not attempted: an accepted connection counts.
pub fn answers_options(url: &str, timeout: Duration) -> bool {
    let Some((host, port, tls)) = rtsp_endpoint(url) else {
        return false;
    };
    let deadline = Instant::now() + timeout;
    let Some(address) = (host.as_str(), port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
    else {
        return false;
    };
    let Ok(mut stream) = TcpStream::connect_timeout(&address, timeout) else {
        return false;
    };
    if tls {
        return true;
    }
    // The request names the URL without credentials; OPTIONS needs none.
    let request = format!(
        "OPTIONS {} RTSP/1.0\r\nCSeq: 1\r\nUser-Agent: nvr-node\r\n\r\n",
        without_userinfo(url)
    );
    if stream.write_all(request.as_bytes()).is_err() {
        return false;
    }
    let mut answer = Vec::new();
    let mut buf = [0u8; 256];
    while answer.len() < 16 {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return false;
        }
        match stream.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => answer.extend_from_slice(&buf[..n]),
        }
    }
    answer.starts_with(b"RTSP/")
}

/// How long a camera has to answer, each second of a wait to start again
/// (on the LAN a camera answers in milliseconds).
const COMEBACK_TIMEOUT: Duration = Duration::from_secs(1);

/// Whether a camera came back, for a task waiting to start again (its
/// recorder, its motion watcher): it answers after not answering, in this
/// wait or an earlier one (a camera may come back just as a wait begins).
/// One that answers all along (it rejects the password, has no such
/// stream, sends nothing) is not back: its task waits its time, rather
/// than hammer it.
#[derive(Default)]
pub struct Comeback {
    silent: bool,
}

impl Comeback {
    /// A wait begins; `silent`: the run just ended saw the camera not answer.
    pub fn wait(&mut self, silent: bool) {
        self.silent |= silent;
    }

    /// Asked each second of a wait.
    pub fn back(&mut self, url: &str) -> bool {
        let answers = answers_options(url, COMEBACK_TIMEOUT);
        let back = answers && self.silent;
        self.silent = !answers;
        back
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;
    use std::thread;

    /// A one-shot server that reads the request and answers `reply` (or nothing).
    fn server(reply: Option<&'static [u8]>) -> (u16, thread::JoinHandle<String>) {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let handle = thread::spawn(move || {
            let (mut stream, _) = listener.accept().unwrap();
            let mut request = [0u8; 1024];
            let n = stream.read(&mut request).unwrap();
            match reply {
                Some(reply) => stream.write_all(reply).unwrap(),
                None => thread::sleep(Duration::from_millis(600)),
            }
            String::from_utf8_lossy(&request[..n]).into_owned()
        });
        (port, handle)
    }

    #[test]
    fn any_rtsp_status_line_is_online() {
        for reply in [
            &b"RTSP/1.0 200 OK\r\nCSeq: 1\r\n\r\n"[..],
            b"RTSP/1.0 401 Unauthorized\r\n\r\n",
        ] {
            let (port, request) = server(Some(reply));
            let url = format!("rtsp://admin:pw@127.0.0.1:{port}/main");
            assert!(answers_options(&url, Duration::from_secs(2)));
            let request = request.join().unwrap();
            assert!(
                request.starts_with(&format!(
                    "OPTIONS rtsp://127.0.0.1:{port}/main RTSP/1.0\r\n"
                )),
                "{request}"
            );
            assert!(!request.contains("pw"), "credentials sent: {request}");
        }
    }

    #[test]
    fn silence_refusal_and_other_protocols_are_offline() {
        let (port, _) = server(None);
        let started = Instant::now();
        assert!(!answers_options(
            &format!("rtsp://127.0.0.1:{port}/"),
            Duration::from_millis(300)
        ));
        assert!(started.elapsed() < Duration::from_secs(2));
        let (port, _) = server(Some(b"HTTP/1.1 400 Bad Request\r\n\r\n"));
        assert!(!answers_options(
            &format!("rtsp://127.0.0.1:{port}/"),
            Duration::from_secs(2)
        ));
        let closed = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        assert!(!answers_options(
            &format!("rtsp://127.0.0.1:{closed}/"),
            Duration::from_secs(2)
        ));
    }

    #[test]
    fn a_camera_is_back_when_it_answers_after_it_did_not() {
        let answering = || {
            let (port, _) = server(Some(b"RTSP/1.0 200 OK\r\n\r\n"));
            format!("rtsp://127.0.0.1:{port}/")
        };
        let closed = {
            let listener = TcpListener::bind("127.0.0.1:0").unwrap();
            format!(
                "rtsp://127.0.0.1:{}/",
                listener.local_addr().unwrap().port()
            )
        };
        let mut comeback = Comeback::default();
        // It answered the run that ended, and answers: it waits its time.
        comeback.wait(false);
        assert!(!comeback.back(&answering()));
        // Silent, then it answers: back.
        assert!(!comeback.back(&closed));
        assert!(comeback.back(&answering()));
        // Once back, it is not back again while it answers.
        assert!(!comeback.back(&answering()));
        // Silent at the end of one wait, answering from the start of the
        // next: back.
        assert!(!comeback.back(&closed));
        comeback.wait(false);
        assert!(comeback.back(&answering()));
        // It did not answer the run: back at its first answer.
        comeback.wait(true);
        assert!(comeback.back(&answering()));
    }
}
