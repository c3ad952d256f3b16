use crate::util::refined_tcp_stream::TimedSocket;
use std::io::{Error as IoError, ErrorKind, IoSlice, Read, Result as IoResult, Write};
use std::net::{Shutdown, SocketAddr};
use std::sync::{Arc, Mutex, MutexGuard};

type Tls = rustls::StreamOwned<rustls::ServerConnection, TimedSocket>;

/// A server's TLS connection over its socket (an nvr-node patch: rustls
/// 0.23, over a socket whose every read ends at the request deadline).
///
/// Uses an internal Mutex to permit disparate reader & writer threads to access the stream independently.
pub(crate) struct RustlsStream(Arc<Mutex<Tls>>);

impl RustlsStream {
    /// The handshake is made by the first read, on the connection's thread.
    pub(crate) fn new(
        config: Arc<rustls::ServerConfig>,
        socket: TimedSocket,
    ) -> IoResult<RustlsStream> {
        let connection = rustls::ServerConnection::new(config).map_err(IoError::other)?;
        Ok(Self(Arc::new(Mutex::new(rustls::StreamOwned::new(
            connection, socket,
        )))))
    }

    fn lock(&self) -> MutexGuard<'_, Tls> {
        self.0.lock().expect("Failed to lock SSL stream mutex")
    }

    /// The stream, to write to once the handshake is done. Before, rustls
    /// would wait to read the rest of the handshake, so the answers to a
    /// client that never finished it (408, 400) are not sent: the
    /// connection just closes.
    fn handshaken(&self) -> IoResult<MutexGuard<'_, Tls>> {
        let stream = self.lock();
        if stream.conn.is_handshaking() {
            return Err(IoError::new(ErrorKind::NotConnected, "TLS handshake not done"));
        }
        Ok(stream)
    }

    pub(crate) fn peer_addr(&mut self) -> IoResult<Option<SocketAddr>> {
        self.lock().sock.peer_addr()
    }

    /// Closing the writing side says so in TLS first (close_notify), so the
    /// client can tell the end of the connection from a cut.
    pub(crate) fn shutdown(&mut self, how: Shutdown) -> IoResult<()> {
        let mut stream = self.lock();
        if how != Shutdown::Read && !stream.conn.is_handshaking() {
            stream.conn.send_close_notify();
            let _ = stream.flush();
        }
        stream.sock.shutdown(how)
    }
}

impl Clone for RustlsStream {
    fn clone(&self) -> Self {
        Self(self.0.clone())
    }
}

impl Read for RustlsStream {
    fn read(&mut self, buf: &mut [u8]) -> IoResult<usize> {
        self.lock().read(buf)
    }
}

impl Write for RustlsStream {
    fn write(&mut self, buf: &[u8]) -> IoResult<usize> {
        self.handshaken()?.write(buf)
    }

    fn write_vectored(&mut self, bufs: &[IoSlice<'_>]) -> IoResult<usize> {
        self.handshaken()?.write_vectored(bufs)
    }

    fn flush(&mut self) -> IoResult<()> {
        self.handshaken()?.flush()
    }
}
