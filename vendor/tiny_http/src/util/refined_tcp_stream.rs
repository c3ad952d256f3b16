use std::io::Result as IoResult;
use std::io::{Error as IoError, ErrorKind, IoSlice, Read, Write};
use std::net::{Shutdown, SocketAddr};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::connection::Connection;
#[cfg(feature = "ssl-rustls")]
use crate::ssl::SslStream;

pub(crate) enum Stream {
    Http(TimedSocket),
    #[cfg(feature = "ssl-rustls")]
    Https(SslStream),
}

impl Stream {
    /// A second handle on the stream, a second descriptor for plain TCP:
    /// an error rather than a panic when the process has none left (an
    /// nvr-node patch).
    fn try_clone(&self) -> IoResult<Stream> {
        match self {
            Stream::Http(socket) => socket.try_clone().map(Stream::Http),
            #[cfg(feature = "ssl-rustls")]
            Stream::Https(ssl_stream) => Ok(Stream::Https(ssl_stream.clone())),
        }
    }

    fn secure(&self) -> bool {
        match self {
            Stream::Http(_) => false,
            #[cfg(feature = "ssl-rustls")]
            Stream::Https(_) => true,
        }
    }

    fn peer_addr(&mut self) -> IoResult<Option<SocketAddr>> {
        match self {
            Stream::Http(socket) => socket.peer_addr(),
            #[cfg(feature = "ssl-rustls")]
            Stream::Https(ssl_stream) => ssl_stream.peer_addr(),
        }
    }

    fn shutdown(&mut self, how: Shutdown) -> IoResult<()> {
        match self {
            Stream::Http(socket) => socket.shutdown(how),
            #[cfg(feature = "ssl-rustls")]
            Stream::Https(ssl_stream) => ssl_stream.shutdown(how),
        }
    }
}

impl Read for Stream {
    fn read(&mut self, buf: &mut [u8]) -> IoResult<usize> {
        match self {
            Stream::Http(socket) => socket.read(buf),
            #[cfg(feature = "ssl-rustls")]
            Stream::Https(ssl_stream) => ssl_stream.read(buf),
        }
    }
}

impl Write for Stream {
    fn write(&mut self, buf: &[u8]) -> IoResult<usize> {
        match self {
            Stream::Http(socket) => socket.write(buf),
            #[cfg(feature = "ssl-rustls")]
            Stream::Https(ssl_stream) => ssl_stream.write(buf),
        }
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> IoResult<usize> {
        match self {
            Stream::Http(socket) => socket.write_vectored(bufs),
            #[cfg(feature = "ssl-rustls")]
            Stream::Https(ssl_stream) => ssl_stream.write_vectored(bufs),
        }
    }

    fn flush(&mut self) -> IoResult<()> {
        match self {
            Stream::Http(socket) => socket.flush(),
            #[cfg(feature = "ssl-rustls")]
            Stream::Https(ssl_stream) => ssl_stream.flush(),
        }
    }
}

/// A connection's socket, each of whose blocking reads waits at most until
/// the request deadline (an nvr-node patch). The deadline is kept here, under
/// TLS, because rustls reads the socket as many times as a record or the
/// handshake takes within one read of the stream: a client sending a byte
/// of its handshake every few seconds, or none, is let go at the deadline
/// as a plain one is.
pub(crate) struct TimedSocket {
    connection: Connection,
    deadline: Option<Arc<Deadline>>,
    /// The receive timeout last set on the socket.
    read_timeout: Option<Duration>,
}

impl TimedSocket {
    fn new(connection: Connection, deadline: Option<Arc<Deadline>>) -> TimedSocket {
        TimedSocket {
            connection,
            deadline,
            read_timeout: None,
        }
    }

    fn try_clone(&self) -> IoResult<TimedSocket> {
        let connection = self.connection.try_clone()?;
        Ok(TimedSocket::new(connection, self.deadline.clone()))
    }

    pub(crate) fn peer_addr(&mut self) -> IoResult<Option<SocketAddr>> {
        self.connection.peer_addr()
    }

    pub(crate) fn shutdown(&self, how: Shutdown) -> IoResult<()> {
        self.connection.shutdown(how)
    }
}

impl Read for TimedSocket {
    fn read(&mut self, buf: &mut [u8]) -> IoResult<usize> {
        let Some(deadline) = &self.deadline else {
            return self.connection.read(buf);
        };
        // A blocking read waits at most until the deadline, so neither a
        // silent client nor one dribbling a byte at a time outlasts it.
        loop {
            let left = deadline.remaining()?;
            // Linux's timer wheel may fire a long timeout up to 1/8 late:
            // wait 7/8 of what is left, then look again.
            let wait = if left > Duration::from_secs(1) {
                left - left / 8
            } else {
                left
            };
            // Keep the timeout already set while a read that uses all of it
            // (and fires 1/8 late) still ends before the deadline: on a busy
            // keep-alive connection that saves a system call per request.
            if self.read_timeout.is_none_or(|set| set + set / 8 > left) {
                self.connection.set_read_timeout(wait)?;
                self.read_timeout = Some(wait);
            }
            match self.connection.read(buf) {
                Err(e) if e.kind() == ErrorKind::WouldBlock => continue,
                result => return result,
            }
        }
    }
}

impl Write for TimedSocket {
    fn write(&mut self, buf: &[u8]) -> IoResult<usize> {
        self.connection.write(buf)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> IoResult<usize> {
        self.connection.write_vectored(bufs)
    }

    fn flush(&mut self) -> IoResult<()> {
        self.connection.flush()
    }
}

pub struct RefinedTcpStream {
    stream: Stream,
    close_read: bool,
    close_write: bool,
    /// Restarted by each response written.
    deadline: Option<Arc<Deadline>>,
}

/// When the client must have sent its next request in full: restarted each
/// time a response is written, shared by the two halves of a connection
/// (an nvr-node patch). Once missed it stays missed, so a connection that
/// timed out is closed after its 408 rather than given another round.
pub(crate) struct Deadline {
    origin: Instant,
    timeout: Duration,
    /// Milliseconds after `origin`; [`MISSED`] once missed.
    at: AtomicU64,
}

const MISSED: u64 = 0;

impl Deadline {
    fn new(timeout: Duration) -> Deadline {
        Deadline {
            origin: Instant::now(),
            timeout,
            at: AtomicU64::new(timeout.as_millis().max(1) as u64),
        }
    }

    fn restart(&self) {
        let at = (self.origin.elapsed() + self.timeout).as_millis() as u64;
        let _ = self
            .at
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |old| {
                (old != MISSED).then_some(at)
            });
    }

    /// The time left, or a `TimedOut` error once there is none.
    fn remaining(&self) -> IoResult<Duration> {
        let at = Duration::from_millis(self.at.load(Ordering::Relaxed));
        match at.checked_sub(self.origin.elapsed()) {
            Some(left) if !left.is_zero() => Ok(left),
            _ => {
                self.at.store(MISSED, Ordering::Relaxed);
                Err(IoError::new(ErrorKind::TimedOut, "request timeout"))
            }
        }
    }
}

impl RefinedTcpStream {
    /// The reading and the writing half of `connection`, through TLS with
    /// `tls` if given.
    pub(crate) fn new(
        connection: Connection,
        tls: Option<&crate::SslConfig>,
        request_timeout: Option<Duration>,
    ) -> IoResult<(RefinedTcpStream, RefinedTcpStream)> {
        let deadline = request_timeout.map(|t| Arc::new(Deadline::new(t)));
        let socket = TimedSocket::new(connection, deadline.clone());
        let stream = match tls {
            None => Stream::Http(socket),
            #[cfg(feature = "ssl-rustls")]
            Some(config) => Stream::Https(SslStream::new(config.clone(), socket)?),
            #[cfg(not(feature = "ssl-rustls"))]
            Some(config) => match *config {},
        };

        let (read, write) = (stream.try_clone()?, stream);

        let read = RefinedTcpStream {
            stream: read,
            close_read: true,
            close_write: false,
            deadline: deadline.clone(),
        };

        let write = RefinedTcpStream {
            stream: write,
            close_read: false,
            close_write: true,
            deadline,
        };

        Ok((read, write))
    }

    /// Returns true if this struct wraps around a secure connection.
    #[inline]
    pub(crate) fn secure(&self) -> bool {
        self.stream.secure()
    }

    pub(crate) fn peer_addr(&mut self) -> IoResult<Option<SocketAddr>> {
        self.stream.peer_addr()
    }
}

impl Drop for RefinedTcpStream {
    fn drop(&mut self) {
        if self.close_read {
            self.stream.shutdown(Shutdown::Read).ok();
        }

        if self.close_write {
            self.stream.shutdown(Shutdown::Write).ok();
        }
    }
}

impl Read for RefinedTcpStream {
    fn read(&mut self, buf: &mut [u8]) -> IoResult<usize> {
        self.stream.read(buf)
    }
}

impl Write for RefinedTcpStream {
    fn write(&mut self, buf: &[u8]) -> IoResult<usize> {
        let written = self.stream.write(buf)?;
        if let Some(deadline) = &self.deadline {
            deadline.restart();
        }
        Ok(written)
    }

    /// One vectored write (an nvr-node patch: upstream's default wrote the first
    /// slice only).
    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> IoResult<usize> {
        let written = self.stream.write_vectored(bufs)?;
        if let Some(deadline) = &self.deadline {
            deadline.restart();
        }
        Ok(written)
    }

    fn flush(&mut self) -> IoResult<()> {
        self.stream.flush()
    }
}
