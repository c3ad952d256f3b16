//! # Simple usage
//!
//! ## Creating the server
//!
//! The easiest way to create a server is to call `Server::http()`.
//!
//! The `http()` function returns an `IoResult<Server>` which will return an error
//! in the case where the server creation fails (for example if the listening port is already
//! occupied).
//!
//! ```no_run
//! let server = tiny_http::Server::http("0.0.0.0:0").unwrap();
//! ```
//!
//! A newly-created `Server` will immediately start listening for incoming connections and HTTP
//! requests.
//!
//! ## Receiving requests
//!
//! Calling `server.recv()` will block until the next request is available.
//! This function returns an `IoResult<Request>`, so you need to handle the possible errors.
//!
//! ```no_run
//! # let server = tiny_http::Server::http("0.0.0.0:0").unwrap();
//!
//! loop {
//!     // blocks until the next request is received
//!     let request = match server.recv() {
//!         Ok(rq) => rq,
//!         Err(e) => { println!("error: {}", e); break }
//!     };
//!
//!     // do something with the request
//!     // ...
//! }
//! ```
//!
//! In a real-case scenario, you will probably want to spawn multiple worker tasks and call
//! `server.recv()` on all of them. Like this:
//!
//! ```no_run
//! # use std::sync::Arc;
//! # use std::thread;
//! # let server = tiny_http::Server::http("0.0.0.0:0").unwrap();
//! let server = Arc::new(server);
//! let mut guards = Vec::with_capacity(4);
//!
//! for _ in (0 .. 4) {
//!     let server = server.clone();
//!
//!     let guard = thread::spawn(move || {
//!         loop {
//!             let rq = server.recv().unwrap();
//!
//!             // ...
//!         }
//!     });
//!
//!     guards.push(guard);
//! }
//! ```
//!
//! If you don't want to block, you can call `server.try_recv()` instead.
//!
//! ## Handling requests
//!
//! The `Request` object returned by `server.recv()` contains informations about the client's request.
//! The most useful methods are probably `request.method()` and `request.url()` which return
//! the requested method (`GET`, `POST`, etc.) and url.
//!
//! To handle a request, you need to create a `Response` object. See the docs of this object for
//! more infos. Here is an example of creating a `Response` from a file:
//!
//! ```no_run
//! # use std::fs::File;
//! # use std::path::Path;
//! let response = tiny_http::Response::from_file(File::open(&Path::new("image.png")).unwrap());
//! ```
//!
//! All that remains to do is call `request.respond()`:
//!
//! ```no_run
//! # use std::fs::File;
//! # use std::path::Path;
//! # let server = tiny_http::Server::http("0.0.0.0:0").unwrap();
//! # let request = server.recv().unwrap();
//! # let response = tiny_http::Response::from_file(File::open(&Path::new("image.png")).unwrap());
//! let _ = request.respond(response);
//! ```
// `deny` rather than upstream's `forbid`: one function, `send_vectored`
// (src/connection.rs), is allowed its two calls (an nvr-node patch).
#![deny(unsafe_code)]
#![deny(rust_2018_idioms)]
#![allow(clippy::match_like_matches_macro)]

use std::error::Error;
use std::io::Error as IoError;
use std::io::ErrorKind as IoErrorKind;
use std::io::Result as IoResult;
use std::net::{Shutdown, TcpStream, ToSocketAddrs};
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering::Relaxed;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use client::ClientConnection;
use connection::Connection;
use util::MessagesQueue;

pub use common::{HTTPVersion, Header, HeaderField, Method, StatusCode};
pub use connection::{ConfigListenAddr, ListenAddr, Listener};
pub use request::{ReadWrite, Request};
pub use response::{Response, ResponseBox};
pub use test::TestRequest;

mod client;
mod common;
mod connection;
mod request;
mod response;
mod ssl;
mod test;
mod util;

/// The main class of this library.
///
/// Destroying this object will immediately close the listening socket and the reading
///  part of all the client's connections. Requests that have already been returned by
///  the `recv()` function will not close and the responses will be transferred to the client.
pub struct Server {
    // should be false as long as the server exists
    // when set to true, all the subtasks will close within a few hundreds ms
    close: Arc<AtomicBool>,

    // queue for messages received by child threads
    messages: Arc<MessagesQueue<Message>>,

    // result of TcpListener::local_addr(), for each listener
    listening_addrs: Vec<ListenAddr>,
}

enum Message {
    Error(IoError),
    NewRequest(Request),
}

impl From<IoError> for Message {
    fn from(e: IoError) -> Message {
        Message::Error(e)
    }
}

impl From<Request> for Message {
    fn from(rq: Request) -> Message {
        Message::NewRequest(rq)
    }
}

// this trait is to make sure that Server implements Share and Send
#[doc(hidden)]
#[allow(dead_code)]
trait MustBeShareDummy: Sync + Send {}
#[doc(hidden)]
impl MustBeShareDummy for Server {}

pub struct IncomingRequests<'a> {
    server: &'a Server,
}

/// Represents the parameters required to create a server.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The addresses to try to listen to.
    pub addr: ConfigListenAddr,

    /// If `Some`, then the server will use SSL to encode the communications.
    pub ssl: Option<SslConfig>,
}

/// Bounds on what one client can make the server wait for or hold in memory
/// (an nvr-node patch). The default sets none, as upstream.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Time a client has to send each request in full (line, headers and
    /// body), counted from the connection's start or from the last response
    /// written to it; past it the connection gets 408 and is closed. It also
    /// bounds how long an idle keep-alive connection stays open, and under
    /// TLS how long the handshake may take.
    pub request_timeout: Option<Duration>,
    /// The longest request line or header line, in bytes: past it the
    /// connection gets 414 (request line) or 431 (header) and is closed.
    pub max_line_bytes: usize,
    /// The most bytes of request line and headers together (431 past it).
    pub max_head_bytes: usize,
    /// The most header lines in one request (431 past it).
    pub max_headers: usize,
    /// The most connections served at once, each on a thread of its own;
    /// past it, a new connection is answered 503 with `Retry-After: 1` and
    /// closed, as it is when the system cannot create a thread.
    pub max_connection_threads: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            request_timeout: None,
            max_line_bytes: usize::MAX,
            max_head_bytes: usize::MAX,
            max_headers: usize::MAX,
            max_connection_threads: usize::MAX,
        }
    }
}

/// Configuration of the server for TLS: rustls's, ready, with its
/// certificate, key and crypto provider (an nvr-node patch; upstream took
/// PEM files).
#[cfg(feature = "ssl-rustls")]
pub type SslConfig = Arc<rustls::ServerConfig>;

/// Without the `ssl-rustls` feature there is no TLS to configure.
#[cfg(not(feature = "ssl-rustls"))]
#[derive(Debug, Clone)]
pub enum SslConfig {}

impl Server {
    /// Shortcut for a simple server on a specific address.
    #[inline]
    pub fn http<A>(addr: A) -> Result<Server, Box<dyn Error + Send + Sync + 'static>>
    where
        A: ToSocketAddrs,
    {
        Server::new(ServerConfig {
            addr: ConfigListenAddr::from_socket_addrs(addr)?,
            ssl: None,
        })
    }

    /// Shortcut for an HTTPS server on a specific address.
    #[cfg(feature = "ssl-rustls")]
    #[inline]
    pub fn https<A>(
        addr: A,
        config: SslConfig,
    ) -> Result<Server, Box<dyn Error + Send + Sync + 'static>>
    where
        A: ToSocketAddrs,
    {
        Server::new(ServerConfig {
            addr: ConfigListenAddr::from_socket_addrs(addr)?,
            ssl: Some(config),
        })
    }

    #[cfg(unix)]
    #[inline]
    /// Shortcut for a UNIX socket server at a specific path
    pub fn http_unix(
        path: &std::path::Path,
    ) -> Result<Server, Box<dyn Error + Send + Sync + 'static>> {
        Server::new(ServerConfig {
            addr: ConfigListenAddr::unix_from_path(path),
            ssl: None,
        })
    }

    /// Builds a new server that listens on the specified address.
    pub fn new(config: ServerConfig) -> Result<Server, Box<dyn Error + Send + Sync + 'static>> {
        let listener = config.addr.bind()?;
        Self::from_listener(listener, config.ssl)
    }

    /// Builds a new server using the specified TCP listener.
    ///
    /// This is useful if you've constructed TcpListener using some less usual method
    /// such as from systemd. For other cases, you probably want the `new()` function.
    pub fn from_listener<L: Into<Listener>>(
        listener: L,
        ssl_config: Option<SslConfig>,
    ) -> Result<Server, Box<dyn Error + Send + Sync + 'static>> {
        Self::from_listener_with_limits(listener, ssl_config, Limits::default())
    }

    /// Like [`Server::from_listener`], with bounds on what each client may
    /// make the server wait for or hold (an nvr-node patch).
    pub fn from_listener_with_limits<L: Into<Listener>>(
        listener: L,
        ssl_config: Option<SslConfig>,
        limits: Limits,
    ) -> Result<Server, Box<dyn Error + Send + Sync + 'static>> {
        Self::start(vec![(listener.into(), ssl_config)], limits, queue_requests)
    }

    /// Serves by calling `handler` for each request on the thread of the
    /// connection that sent it, rather than passing requests through
    /// [`Server::recv`], which then returns only accept errors (an nvr-node
    /// patch). This saves two thread switches per request; a slow handler
    /// holds up only its own connection's later requests, as HTTP/1.1
    /// ordering would anyway. Each listener speaks TLS if it has an
    /// [`SslConfig`]; all share the one bound on connection threads
    /// ([`Limits::max_connection_threads`]).
    pub fn from_listeners_with_handler<L, F>(
        listeners: Vec<(L, Option<SslConfig>)>,
        limits: Limits,
        handler: F,
    ) -> Result<Server, Box<dyn Error + Send + Sync + 'static>>
    where
        L: Into<Listener>,
        F: Fn(Request) + Send + Sync + 'static,
    {
        let listeners = listeners.into_iter().map(|(l, tls)| (l.into(), tls));
        let handle_requests = move |client: ClientConnection, _: &MessagesQueue<Message>| {
            for rq in client {
                handler(rq);
            }
        };
        Self::start(listeners.collect(), limits, handle_requests)
    }

    /// The server of `listeners`; `requests` takes each connection's
    /// requests, on the connection's thread, either handling them or
    /// passing them to [`Server::recv`] through the queue it is given
    /// (generic, so that a program has only the way it uses: an nvr-node
    /// patch).
    fn start<F>(
        listeners: Vec<(Listener, Option<SslConfig>)>,
        limits: Limits,
        requests: F,
    ) -> Result<Server, Box<dyn Error + Send + Sync + 'static>>
    where
        F: Fn(ClientConnection, &MessagesQueue<Message>) + Send + Sync + 'static,
    {
        // building the "close" variable
        let close_trigger = Arc::new(AtomicBool::new(false));

        let mut listening_addrs = Vec::with_capacity(listeners.len());
        for (listener, _) in &listeners {
            let local_addr = listener.local_addr()?;
            log::debug!("Server listening on {}", local_addr);
            listening_addrs.push(local_addr);
        }

        // creating a task where server.accept() is continuously called
        // and ClientConnection objects are pushed in the messages queue
        let messages = MessagesQueue::with_capacity(8);

        let pool_messages = messages.clone();
        // Each connection is set up (TLS included) and read on a thread of
        // the pool, so the accept thread only accepts (an nvr-node patch).
        let serve = move |(sock, tls): (Connection, Option<SslConfig>)| {
            let halves = util::RefinedTcpStream::new(sock, tls.as_ref(), limits.request_timeout);
            // Out of file descriptors: the connection is closed (upstream
            // panicked, on the accept thread).
            let (read_closable, write_closable) = match halves {
                Ok(halves) => halves,
                Err(e) => {
                    log::error!("Cannot serve a new client: {}", e);
                    return;
                }
            };
            let client = ClientConnection::new(write_closable, read_closable, limits);
            requests(client, &pool_messages);
        };
        // a tasks pool is used to dispatch the connections into threads
        let tasks_pool = Arc::new(util::TaskPool::new(limits.max_connection_threads, serve));
        for (server, tls) in listeners {
            let inside_close_trigger = close_trigger.clone();
            let inside_messages = messages.clone();
            let tasks_pool = tasks_pool.clone();
            util::spawn(Box::new(move || {
                log::debug!("Running accept thread");
                while !inside_close_trigger.load(Relaxed) {
                    match server.accept() {
                        Ok((sock, _)) => match tasks_pool.spawn((sock, tls.clone())) {
                            Ok(()) => {}
                            Err((sock, None)) => refuse_busy(sock),
                            // A TLS client could not read a plain answer:
                            // it is closed without one.
                            Err((_, Some(_))) => {}
                        },
                        Err(e) => {
                            log::error!("Error accepting new client: {}", e);
                            inside_messages.push(e.into());
                            break;
                        }
                    }
                }
                log::debug!("Terminating accept thread");
            }))
            .expect("failed to spawn thread");
        }

        // result
        Ok(Server {
            messages,
            close: close_trigger,
            listening_addrs,
        })
    }

    /// Returns an iterator for all the incoming requests.
    ///
    /// The iterator will return `None` if the server socket is shutdown.
    #[inline]
    pub fn incoming_requests(&self) -> IncomingRequests<'_> {
        IncomingRequests { server: self }
    }

    /// Returns the address the server is listening to.
    #[inline]
    pub fn server_addr(&self) -> ListenAddr {
        self.listening_addrs[0].clone()
    }

    /// Returns the number of clients currently connected to the server.
    pub fn num_connections(&self) -> usize {
        unimplemented!()
        //self.requests_receiver.lock().len()
    }

    /// Blocks until an HTTP request has been submitted and returns it.
    pub fn recv(&self) -> IoResult<Request> {
        match self.messages.pop() {
            Some(Message::Error(err)) => Err(err),
            Some(Message::NewRequest(rq)) => Ok(rq),
            None => Err(IoError::new(IoErrorKind::Other, "thread unblocked")),
        }
    }

    /// Same as `recv()` but doesn't block longer than timeout
    pub fn recv_timeout(&self, timeout: Duration) -> IoResult<Option<Request>> {
        match self.messages.pop_timeout(timeout) {
            Some(Message::Error(err)) => Err(err),
            Some(Message::NewRequest(rq)) => Ok(Some(rq)),
            None => Ok(None),
        }
    }

    /// Same as `recv()` but doesn't block.
    pub fn try_recv(&self) -> IoResult<Option<Request>> {
        match self.messages.try_pop() {
            Some(Message::Error(err)) => Err(err),
            Some(Message::NewRequest(rq)) => Ok(Some(rq)),
            None => Ok(None),
        }
    }

    /// Unblock thread stuck in recv() or incoming_requests().
    /// If there are several such threads, only one is unblocked.
    /// This method allows graceful shutdown of server.
    pub fn unblock(&self) {
        self.messages.unblock();
    }
}

/// Passes each request of `client` to [`Server::recv`] through `messages`,
/// as upstream does.
fn queue_requests(client: ClientConnection, messages: &MessagesQueue<Message>) {
    // Synchronization is needed for HTTPS requests to avoid a deadlock
    if client.secure() {
        let (sender, receiver) = mpsc::channel();
        for rq in client {
            messages.push(rq.with_notify_sender(sender.clone()).into());
            receiver.recv().unwrap();
        }
    } else {
        for rq in client {
            messages.push(rq.into());
        }
    }
}

/// Answers a connection no thread can take (past
/// `Limits::max_connection_threads`, or when the system cannot create one)
/// 503 with `Retry-After: 1`, on the accept thread, and closes it (an
/// nvr-node patch). The answer is a few bytes into an empty socket buffer,
/// so it never blocks.
fn refuse_busy(mut sock: Connection) {
    use std::io::{Read, Write};
    let answer = b"HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\n\
                   Connection: close\r\nContent-Length: 0\r\n\r\n";
    if sock.write_all(answer).is_err() {
        return;
    }
    let _ = sock.shutdown(Shutdown::Write);
    // What the client sent already is read away without waiting, so the
    // close is a FIN, not a reset that could discard the answer before the
    // client reads it.
    if sock.set_nonblocking(true).is_ok() {
        let mut buf = [0; 4096];
        for _ in 0..16 {
            if !matches!(sock.read(&mut buf), Ok(n) if n > 0) {
                break;
            }
        }
    }
}

impl Iterator for IncomingRequests<'_> {
    type Item = Request;
    fn next(&mut self) -> Option<Request> {
        self.server.recv().ok()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.close.store(true, Relaxed);
        for addr in &self.listening_addrs {
            // Connect briefly to ourselves to unblock the accept thread
            let maybe_stream = match addr {
                ListenAddr::IP(addr) => TcpStream::connect(addr).map(Connection::from),
                #[cfg(unix)]
                ListenAddr::Unix(addr) => {
                    // TODO: use connect_addr when its stabilized.
                    let path = addr.as_pathname().unwrap();
                    std::os::unix::net::UnixStream::connect(path).map(Connection::from)
                }
            };
            if let Ok(stream) = maybe_stream {
                let _ = stream.shutdown(Shutdown::Both);
            }

            #[cfg(unix)]
            if let ListenAddr::Unix(addr) = addr {
                if let Some(path) = addr.as_pathname() {
                    let _ = std::fs::remove_file(path);
                }
            }
        }
    }
}
