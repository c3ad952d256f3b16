//! Camera liveness: every enabled camera gets an RTSP `OPTIONS` request on a
//! timer, all in parallel; any RTSP status line means it is online. The state
//! lives in memory only, so an idle node writes nothing to its flash.

use std::collections::HashSet;
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use crate::app::App;
use uuid::Uuid;

use crate::cameras::rtsp_url::{rtsp_endpoint, without_userinfo};

/// How long one check may take, connection included.
const CHECK_TIMEOUT: Duration = Duration::from_secs(5);

/// Starts the monitor: a round at once, then one every `interval`. Each check
/// runs on its own thread; a camera still being checked is skipped in the
/// next round, so a slow camera never delays the others.
pub fn spawn(app: Arc<App>, interval: Duration) {
    let spawned = thread::Builder::new()
        .name("monitor".into())
        // Reads the cameras (SQLite) and starts the checks.
        .stack_size(256 * 1024)
        .spawn(move || {
            let checking = Arc::new(Mutex::new(HashSet::new()));
            loop {
                let started = Instant::now();
                start_round(&app, &checking);
                thread::sleep(interval.saturating_sub(started.elapsed()));
            }
        });
    if let Err(e) = spawned {
        log::error!("cannot start the camera monitor: {e}");
    }
}

fn start_round(app: &Arc<App>, checking: &Arc<Mutex<HashSet<Uuid>>>) {
    let Ok(cameras) = app.db(|s| s.cameras()) else {
        return;
    };
    app.retain_online(|id| cameras.iter().any(|c| c.id == *id));
    for camera in cameras.iter() {
        if !camera.settings.enabled {
            app.set_online(camera.id, false);
            continue;
        }
        if !checking
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(camera.id)
        {
            continue;
        }
        let (app, checks) = (app.clone(), checking.clone());
        let (id, url) = (camera.id, camera.settings.rtsp_url.clone());
        let check = move || {
            let online = answers_options(&url, CHECK_TIMEOUT);
            app.set_online(id, online);
            checks.lock().unwrap_or_else(|e| e.into_inner()).remove(&id);
        };
        // One a camera, for at most 5 s: a name lookup (getaddrinfo), a
        // small request and a 256-byte buffer on the stack.
        let spawned = thread::Builder::new()
            .name("check".into())
            .stack_size(128 * 1024)
            .spawn(check);
        if let Err(e) = spawned {
            log::warn!("cannot check camera {id}: {e}");
            checking
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .remove(&id);
        }
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpListener;

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
}
