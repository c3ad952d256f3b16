//! HTTP plumbing: the listening sockets (HTTP, and HTTPS if on), handling
//! each request on its connection's thread, request bodies, the limit on
//! requests handled at once ([`MAX_IN_FLIGHT`]) and responses.

use std::io::{self, Read};
use std::net::{IpAddr, TcpListener};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use tiny_http::{Limits, Request, Server};

use crate::app::App;
use crate::error::{Error, Kind};
use crate::sys::{net, process};
use crate::tls::ServerTls;
use crate::web::api;
use crate::web::api::tls::Https;
use crate::web::guard;
use crate::web::reply::Reply;
use crate::web::routes::{self, BodyKind};
use crate::web::static_files::Ui;

/// Requests handled at once, each from when its body is in until its answer
/// (a download's whole body) is sent; past this the node answers 503.
pub const MAX_IN_FLIGHT: usize = 64;
/// The longest URL accepted.
pub const MAX_URL_BYTES: usize = 8 * 1024;
/// The largest request body (JSON or SDP) accepted.
pub const MAX_BODY_BYTES: usize = 64 * 1024;

/// Connections the kernel may queue before the node accepts them (capped by
/// `net.core.somaxconn`).
const LISTEN_BACKLOG: i32 = 1024;

/// How long a client may leave a response unread.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(30);

/// Connections served at once, HTTP and HTTPS together, each on a thread
/// of its own; past this a new connection is answered 503 (`Retry-After:
/// 1`; over HTTPS, just closed). A connection's
/// thread holds 20-30 KiB resident (measured) besides the kernel's stack,
/// and 2 MiB of address space for its stack: 512 of them are about 25 MiB
/// of a 512 MiB board and 1.3 GiB of a 32-bit board's 3 GiB. Their 1,024
/// descriptors are made room for by [`allow_open_files`].
pub const MAX_CONNECTIONS: usize = 512;

/// What one connection may make the node wait for or hold: 30 s to send each
/// request (so silent, dribbling and idle keep-alive clients are let go), and
/// a head of at most 100 lines and 32 KiB, no line longer than a maximal URL;
/// and what all of them may: [`MAX_CONNECTIONS`] threads. (tiny_http is
/// patched for these: see vendor/tiny_http/PATCHES.md.)
pub const LIMITS: Limits = Limits {
    request_timeout: Some(Duration::from_secs(30)),
    max_line_bytes: MAX_URL_BYTES + 32,
    max_head_bytes: 32 * 1024,
    max_headers: 100,
    max_connection_threads: MAX_CONNECTIONS,
};

/// Binds `address`:`port` with options that Linux passes on to every accepted
/// socket, since tiny_http gives no access to those: TCP_NODELAY (a streamed
/// body, a recording, leaves in pieces, and with Nagle's algorithm its last
/// would wait ~40 ms for a delayed ACK), and a send timeout, so a client that
/// stops reading frees its thread after 30 s. (Reads are bounded by
/// [`LIMITS`] instead: a receive timeout on the listener would also end
/// `accept`, and tiny_http's accept loop with it.)
pub fn bind(address: IpAddr, port: u16) -> io::Result<TcpListener> {
    let listener = TcpListener::bind((address, port))?;
    net::set_no_delay(&listener)?;
    net::set_send_timeout(&listener, SEND_TIMEOUT)?;
    // std listens with a backlog of 128; past it Linux drops the handshake's
    // last ACK and a burst of clients waits a second or more for a retry.
    net::set_backlog(&listener, LISTEN_BACKLOG)?;
    Ok(listener)
}

/// Open files the node asks for: each connection takes two descriptors
/// (tiny_http reads and writes through one each), so [`MAX_CONNECTIONS`]
/// need 1,024 besides those of the database, the recordings and ffmpeg,
/// while the usual soft limit is 1,024 (its hard limit 4,096, or 524,288
/// under systemd). No more than this, for children that close every
/// descriptor up to the limit.
const OPEN_FILES: u64 = 4096;

/// Raises the soft limit of open files towards [`OPEN_FILES`], as far as the
/// hard limit allows; says so when that leaves too few for
/// [`MAX_CONNECTIONS`] (the node then runs out, and exits to be restarted,
/// before it answers 503).
fn allow_open_files() {
    let Ok(open_files) = process::raise_open_files(OPEN_FILES) else {
        return;
    };
    let needed = 2 * MAX_CONNECTIONS as u64 + 256;
    if open_files < needed {
        log::warn!(
            "open files are limited to {open_files} (ulimit -n); {MAX_CONNECTIONS} connections need about {needed}"
        );
    }
}

/// How long requests in flight may take to finish after a stop.
const DRAIN: Duration = Duration::from_secs(5);
/// How often the serving loop looks at the stop flag.
const STOP_CHECK: Duration = Duration::from_millis(250);

/// Serves `http`, and `https` with its TLS, until `stop` is set (then calls
/// `on_stop`, stops accepting, lets requests in flight finish for at most
/// 5 s and returns Ok), or until accepting fails (then returns the error, so
/// the process exits and its supervisor restarts it rather than it running
/// on deaf). Both serve the same handlers under the same guards and limits.
pub fn serve(
    http: TcpListener,
    https: Option<(TcpListener, ServerTls)>,
    app: Arc<App>,
    ui: Ui,
    stop: &AtomicBool,
    on_stop: impl FnOnce(),
) -> io::Result<()> {
    allow_open_files();
    let mut listeners = vec![(http, None)];
    let https = match https {
        Some((listener, tls)) => {
            let port = listener.local_addr()?.port();
            listeners.push((listener, Some(tls.config.clone())));
            Some(Https { port, tls })
        }
        None => None,
    };
    let site = Site { app, ui, https };
    let in_flight = Arc::new(AtomicUsize::new(0));
    let stopping = Arc::new(AtomicBool::new(false));
    let handler = {
        let (in_flight, stopping) = (in_flight.clone(), stopping.clone());
        move |request: Request| {
            if stopping.load(Ordering::Acquire) {
                // A keep-alive connection outlives the listener by the drain.
                let stopping = Error::new(Kind::Unavailable, "the node is stopping");
                let _ = request.respond(Reply::error(&stopping).into_response());
                return;
            }
            handle(&site, &in_flight, request);
        }
    };
    let server = Server::from_listeners_with_handler(listeners, LIMITS, handler)
        .map_err(io::Error::other)?;
    while !stop.load(Ordering::Relaxed) {
        // Requests go to the handler on their connection's thread; `recv`
        // only reports accept errors.
        server.recv_timeout(STOP_CHECK)?;
    }
    on_stop();
    stopping.store(true, Ordering::Release);
    drop(server);
    let deadline = Instant::now() + DRAIN;
    while in_flight.load(Ordering::Acquire) > 0 && Instant::now() < deadline {
        thread::sleep(Duration::from_millis(20));
    }
    Ok(())
}

/// A place among the requests handled at once, freed when dropped however
/// the request ends.
struct InFlight<'a>(&'a AtomicUsize);

impl InFlight<'_> {
    fn take(in_flight: &AtomicUsize) -> Result<InFlight<'_>, Error> {
        if in_flight.fetch_add(1, Ordering::AcqRel) >= MAX_IN_FLIGHT {
            in_flight.fetch_sub(1, Ordering::AcqRel);
            return Err(Error::new(
                Kind::Unavailable,
                "the node is busy; retry in a second",
            ));
        }
        Ok(InFlight(in_flight))
    }
}

impl Drop for InFlight<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// What requests are answered from: the node, its UI's files, its HTTPS.
struct Site {
    app: Arc<App>,
    ui: Ui,
    https: Option<Https>,
}

fn handle(site: &Site, in_flight: &AtomicUsize, mut request: Request) {
    let outcome = catch_unwind(AssertUnwindSafe(|| answer(site, in_flight, &mut request)));
    let (reply, place) = match outcome {
        Ok(Ok((reply, place))) => (reply, Some(place)),
        Ok(Err(error)) => (Reply::error(&error), None),
        Err(_) => {
            log::error!("handler for {} panicked", named(&request));
            let error = Error::new(Kind::Internal, "internal error");
            (Reply::error(&error), None)
        }
    };
    let status = reply.status;
    // Copied only for the debug log, which outlives the request.
    let what = log::log_enabled!(log::Level::Debug).then(|| named(&request));
    if let Err(e) = request.respond(reply.into_response()) {
        log::debug!(
            "{}: client went away: {e}",
            what.as_deref().unwrap_or_default()
        );
    }
    // Only now: a download holds its place for as long as its body streams.
    drop(place);
    log::debug!("{} -> {status}", what.unwrap_or_default());
}

/// The request's method and path, for the log.
fn named(request: &Request) -> String {
    format!("{} {}", request.method().as_str(), path_of(request.url()))
}

/// The URL before `?`.
fn path_of(url: &str) -> &str {
    url.split_once('?').map_or(url, |(path, _)| path)
}

/// Checks and reads the request, then hands it to its handler; returns the
/// answer with the request's place among those in flight, to be held until
/// the answer is sent. The request counts as in flight only once its body is
/// in, so clients sending slowly (for at most [`LIMITS`]'s 30 s) cannot take
/// all the places.
fn answer<'a>(
    site: &Site,
    in_flight: &'a AtomicUsize,
    request: &mut Request,
) -> Result<(Reply, InFlight<'a>), Error> {
    if request.url().len() > MAX_URL_BYTES {
        return Err(Error::new(Kind::UriTooLong, "the URL is longer than 8 KiB"));
    }
    let method = request.method().as_str();
    let host = header(request, "Host");
    let app = &site.app;
    if !guard::host_allowed(host, &app.host_name, &app.allowed_hosts) {
        return Err(Error::new(
            Kind::Forbidden,
            "this host name is not allowed: use the node's address, or add the name to ALLOWED_HOSTS",
        ));
    }
    let changes_state = matches!(method, "POST" | "PUT" | "PATCH" | "DELETE");
    if changes_state && !guard::origin_allowed(header(request, "Origin"), host) {
        return Err(Error::new(
            Kind::Forbidden,
            "requests from other sites are not allowed",
        ));
    }
    let route = routes::route(method, path_of(request.url()))?;
    let body = match route.body_kind() {
        Some(kind) => read_body(request, kind)?,
        None => Vec::new(),
    };
    // Borrowed again, the body read (the URL is not copied).
    let request: &Request = request;
    let query = request.url().split_once('?').map_or("", |(_, query)| query);
    let peer = request.remote_addr().map(|a| a.ip());
    let range = header(request, "Range").map(str::to_owned);
    let accept_encoding = list_header(request, "Accept-Encoding");
    let if_none_match = list_header(request, "If-None-Match");
    let place = InFlight::take(in_flight)?;
    let call = api::Call {
        query,
        body,
        peer,
        range,
        accept_encoding,
        if_none_match,
    };
    let https = site.https.as_ref();
    let reply = api::dispatch(&site.app, &site.ui, https, route, call)
        .unwrap_or_else(|error| Reply::error(&error));
    Ok((reply, place))
}

/// Reads a body of `kind`: a declared size over the limit, or the wrong
/// content type, is refused before a byte of it is read.
fn read_body(request: &mut Request, kind: BodyKind) -> Result<Vec<u8>, Error> {
    let too_large = || {
        Error::new(
            Kind::PayloadTooLarge,
            format!("request body is larger than {} KiB", MAX_BODY_BYTES / 1024),
        )
    };
    let missing = || {
        Error::bad_request(match kind {
            BodyKind::Json => "missing request body: send a JSON object",
            BodyKind::Sdp => "missing or empty SDP offer",
        })
    };
    match request.body_length() {
        Some(n) if n > MAX_BODY_BYTES as u64 => return Err(too_large()),
        Some(0) => return Err(missing()),
        _ => {}
    }
    if !has_media_type(request, kind.content_type()) {
        return Err(Error::new(
            Kind::UnsupportedMediaType,
            format!("Content-Type must be {}", kind.content_type()),
        ));
    }
    let mut body = Vec::new();
    request
        .as_reader()
        .take(MAX_BODY_BYTES as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|e| match e.kind() {
            io::ErrorKind::TimedOut => Error::new(
                Kind::RequestTimeout,
                "the request body did not arrive within 30 s",
            ),
            _ => Error::bad_request("the request body could not be read"),
        })?;
    if body.len() > MAX_BODY_BYTES {
        return Err(too_large());
    }
    if body.is_empty() {
        return Err(missing());
    }
    Ok(body)
}

/// Whether the Content-Type is `wanted`, ignoring case and parameters such as charset.
fn has_media_type(request: &Request, wanted: &str) -> bool {
    header(request, "Content-Type")
        .and_then(|value| value.split(';').next())
        .is_some_and(|media_type| media_type.trim().eq_ignore_ascii_case(wanted))
}

fn header<'a>(request: &'a Request, name: &'static str) -> Option<&'a str> {
    let found = request.headers().iter().find(|h| h.field.equiv(name));
    found.map(|h| h.value.as_str())
}

/// Every line of a header whose value is a list, joined by commas (RFC 9110,
/// section 5.3), or `None` when there is no such line.
fn list_header(request: &Request, name: &'static str) -> Option<String> {
    let mut lines = request.headers().iter().filter(|h| h.field.equiv(name));
    let first = lines.next()?.value.as_str().to_owned();
    Some(lines.fold(first, |list, h| list + "," + h.value.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::TcpStream;

    #[test]
    fn accepted_sockets_inherit_nodelay_and_the_send_timeout() {
        let listener = bind(IpAddr::from([127, 0, 0, 1]), 0).unwrap();
        let _client = TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        assert!(accepted.nodelay().unwrap(), "TCP_NODELAY not inherited");

        assert_eq!(accepted.write_timeout().unwrap(), Some(SEND_TIMEOUT));
    }
}
