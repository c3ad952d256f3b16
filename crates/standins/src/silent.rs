//! A "camera" that accepts TCP connections and never says a word: a hung
//! camera, whose readers wait until their own time runs out. It holds every
//! connection it takes until it stops.

use std::net::TcpStream;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use crate::Acceptor;

pub struct SilentCamera {
    pub port: u16,
    acceptor: Acceptor,
    accepted: Arc<AtomicUsize>,
}

impl SilentCamera {
    /// Starts on a free port of 127.0.0.1. It stops by itself after 2 minutes.
    pub fn start() -> SilentCamera {
        SilentCamera::start_with(Some(Duration::from_secs(120)), |_| {})
    }

    /// Starts on a free port of 127.0.0.1, stopping by itself after
    /// `stop_after` if given; `on_accept` is told the count of connections
    /// taken each time it takes one.
    pub fn start_with(
        stop_after: Option<Duration>,
        on_accept: impl Fn(usize) + Send + 'static,
    ) -> SilentCamera {
        let accepted = Arc::new(AtomicUsize::new(0));
        let counted = accepted.clone();
        // Dropped, with the connections it holds, when the accept loop ends.
        let mut held: Vec<TcpStream> = Vec::new();
        let acceptor = Acceptor::start(stop_after, move |stream| {
            held.push(stream);
            on_accept(counted.fetch_add(1, Ordering::SeqCst) + 1);
        });
        SilentCamera {
            port: acceptor.port,
            acceptor,
            accepted,
        }
    }

    /// How many connections it has taken.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for SilentCamera {
    fn drop(&mut self) {
        self.acceptor.stop();
    }
}
