//! Stand-ins for what the node talks to, written once for the integration
//! tests (which link this library: `tests/common`) and the benchmark (which
//! runs its program, `nvr-standin`: `benches/harness/standins.py`): a go2rtc
//! API (`relay`), a camera that accepts connections and never answers
//! (`silent`), each on a free port of 127.0.0.1, and an ONVIF device with
//! its Event service (`onvif_device`, on the address it is given, with the
//! XML reader it shares with the tests' WS-Discovery responder: `xml`).

pub mod onvif_device;
pub mod relay;
pub mod silent;
pub mod xml;

use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::Duration;

/// A listener on a free port of 127.0.0.1 whose accept loop, on a thread of
/// its own, hands each connection to `each` until it is stopped (by
/// `stop`, or `stop_after` from its start when given). The loop blocks in
/// `accept` rather than polling, so that a connection is taken at once:
/// the benchmark times requests on new connections through it.
struct Acceptor {
    port: u16,
    stopped: Arc<AtomicBool>,
}

impl Acceptor {
    fn start(
        stop_after: Option<Duration>,
        mut each: impl FnMut(TcpStream) + Send + 'static,
    ) -> Acceptor {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a stand-in binds 127.0.0.1");
        let port = listener.local_addr().unwrap().port();
        let stopped = Arc::new(AtomicBool::new(false));
        let seen = stopped.clone();
        // `each` (with whatever it holds) and the listener are dropped when the
        // loop ends. The flag is read only after an accept, so the listener is
        // still there for the connection that wakes the loop (`stop`).
        thread::spawn(move || {
            for stream in listener.incoming() {
                if seen.load(Ordering::SeqCst) {
                    break;
                }
                match stream {
                    Ok(stream) => each(stream),
                    // Out of descriptors, say: wait rather than spin.
                    Err(_) => thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        let acceptor = Acceptor { port, stopped };
        if let Some(after) = stop_after {
            let (port, stopped) = (port, acceptor.stopped.clone());
            thread::spawn(move || {
                thread::sleep(after);
                wake_to_stop(port, &stopped);
            });
        }
        acceptor
    }

    /// Ends the accept loop (once: a port let go may be someone else's by now).
    fn stop(&self) {
        wake_to_stop(self.port, &self.stopped);
    }
}

/// Sets the flag and connects to the loop blocked in `accept`, which then
/// sees it; only the first call connects, while the listener is surely still
/// there.
fn wake_to_stop(port: u16, stopped: &AtomicBool) {
    if !stopped.swap(true, Ordering::SeqCst) {
        let _ = TcpStream::connect(("127.0.0.1", port));
    }
}
