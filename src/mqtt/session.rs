//! The connection to the MQTT broker: one thread owns it, connects with a
//! last will, subscribes, sends what the node publishes, answers the
//! broker's pings, hands incoming messages on, and reconnects with backoff
//! (1 s doubling to 60 s) when the broker is down, drops the connection or
//! stops answering. Nothing here blocks a caller: [`Session::publish`] only
//! puts a message in the outbox, whose size is bounded.

use std::collections::{BTreeMap, VecDeque};
use std::io::{self, ErrorKind, Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use super::codec::{Connect, ConnectReturn, Decoded, Packet, Publish, Will};
use super::limit::{Throttle, held_back, shorten};

const FIRST_RETRY: Duration = Duration::from_secs(1);
const LAST_RETRY: Duration = Duration::from_secs(60);
pub const KEEP_ALIVE: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the thread waits on the socket before looking at the outbox.
const TICK: Duration = Duration::from_millis(100);
/// Messages that are not states (events) kept while the broker is away.
const MAX_QUEUED_EVENTS: usize = 64;
/// At most one log line a second for messages passed over.
const LOG_EVERY: Duration = Duration::from_secs(1);

/// Where and as whom to connect.
#[derive(Clone, Debug)]
pub struct Settings {
    pub host: String,
    pub port: u16,
    /// TLS to the broker (`mqtts://`), with the authorities it trusts.
    pub tls: Option<Arc<rustls::ClientConfig>>,
    pub client_id: String,
    pub user: Option<String>,
    pub password: Option<String>,
    /// Retained `offline` here when the connection dies; `online` after each connect.
    pub availability_topic: String,
    /// Filters subscribed at QoS 1 after each connect.
    pub subscriptions: Vec<String>,
}

/// One message to send. Retained messages are states: only the newest of
/// each topic is kept while it waits.
#[derive(Clone, Debug, PartialEq)]
pub struct Message {
    pub topic: String,
    pub payload: Vec<u8>,
    pub retain: bool,
}

impl Message {
    pub fn state(topic: impl Into<String>, payload: impl Into<Vec<u8>>) -> Message {
        Message {
            topic: topic.into(),
            payload: payload.into(),
            retain: true,
        }
    }

    pub fn event(topic: impl Into<String>, payload: impl Into<Vec<u8>>) -> Message {
        Message {
            topic: topic.into(),
            payload: payload.into(),
            retain: false,
        }
    }
}

/// The connection's state, as status shows it; never carries a secret.
#[derive(Clone, Debug, PartialEq)]
pub enum State {
    Connecting,
    Connected,
    Error(String),
}

/// What the node does with the session: what to send after each connect
/// (discovery and every state), and what to do with a message received
/// (a command; or Home Assistant back online, answered with everything again).
pub trait Handler: Send + 'static {
    fn on_connect(&mut self) -> Vec<Message>;
    /// `retained`: the broker sent a message it kept, because the node
    /// subscribed (never set on a message passed on live: MQTT 3.1.1,
    /// 3.3.1.3).
    fn on_message(&mut self, topic: &str, payload: &[u8], retained: bool) -> Vec<Message>;
}

#[derive(Default)]
struct Outbox {
    states: BTreeMap<String, Message>,
    events: VecDeque<Message>,
}

impl Outbox {
    fn put(&mut self, message: Message) {
        if message.retain {
            self.states.insert(message.topic.clone(), message);
        } else {
            if self.events.len() == MAX_QUEUED_EVENTS {
                self.events.pop_front();
            }
            self.events.push_back(message);
        }
    }

    fn take(&mut self) -> Vec<Message> {
        let states = std::mem::take(&mut self.states).into_values();
        states.chain(self.events.drain(..)).collect()
    }
}

struct Shared {
    outbox: Mutex<Outbox>,
    wake: Condvar,
    state: Mutex<State>,
    stop: AtomicBool,
}

/// The handle the node keeps.
pub struct Session {
    shared: Arc<Shared>,
    thread: Option<thread::JoinHandle<()>>,
}

impl Session {
    pub fn spawn(settings: Settings, handler: impl Handler) -> Session {
        let shared = Arc::new(Shared {
            outbox: Mutex::new(Outbox::default()),
            wake: Condvar::new(),
            state: Mutex::new(State::Connecting),
            stop: AtomicBool::new(false),
        });
        let running = shared.clone();
        let thread = crate::spawn::spawn(thread::Builder::new().name("mqtt".into()), move || {
            run(&settings, &running, handler)
        })
        .expect("spawn the MQTT thread");
        Session {
            shared,
            thread: Some(thread),
        }
    }

    /// Queues `message`; sent as soon as the broker is there.
    pub fn publish(&self, message: Message) {
        lock(&self.shared.outbox).put(message);
        self.shared.wake.notify_one();
    }

    pub fn state(&self) -> State {
        lock(&self.shared.state).clone()
    }
}

impl Drop for Session {
    /// Disconnects cleanly; the availability goes `offline` through the will
    /// only when the node dies without this.
    fn drop(&mut self) {
        self.shared.stop.store(true, Ordering::Relaxed);
        self.shared.wake.notify_one();
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(|e| e.into_inner())
}

fn run(settings: &Settings, shared: &Shared, mut handler: impl Handler) {
    let mut retry = FIRST_RETRY;
    while !shared.stop.load(Ordering::Relaxed) {
        *lock(&shared.state) = State::Connecting;
        let outcome = connect(settings).and_then(|(stream, reader)| {
            *lock(&shared.state) = State::Connected;
            retry = FIRST_RETRY;
            log::info!("mqtt: connected to {}:{}", settings.host, settings.port);
            serve(stream, reader, settings, shared, &mut handler)
        });
        if shared.stop.load(Ordering::Relaxed) {
            break;
        }
        let why = match outcome {
            Ok(()) => "the broker closed the connection".to_owned(),
            Err(e) => e.to_string(),
        };
        log::warn!(
            "mqtt: {why}; trying again in {}",
            humantime::format_duration(retry)
        );
        *lock(&shared.state) = State::Error(why);
        // Sleep, but wake at once on stop.
        let outbox = lock(&shared.outbox);
        let _ = shared.wake.wait_timeout(outbox, retry);
        retry = (retry * 2).min(LAST_RETRY);
    }
}

/// The connection, in the clear or through TLS.
enum Conn {
    Plain(TcpStream),
    Tls(Box<rustls::StreamOwned<rustls::ClientConnection, TcpStream>>),
}

impl Conn {
    fn tcp(&self) -> &TcpStream {
        match self {
            Conn::Plain(tcp) => tcp,
            Conn::Tls(tls) => tls.get_ref(),
        }
    }
}

impl Read for Conn {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(tcp) => tcp.read(buf),
            Conn::Tls(tls) => tls.read(buf),
        }
    }
}

impl Write for Conn {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Conn::Plain(tcp) => tcp.write(buf),
            Conn::Tls(tls) => tls.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            Conn::Plain(tcp) => tcp.flush(),
            Conn::Tls(tls) => tls.flush(),
        }
    }
}

/// A connected, accepted session with the broker, and what it sent after
/// accepting.
fn connect(settings: &Settings) -> io::Result<(Conn, PacketReader)> {
    let address = (settings.host.as_str(), settings.port)
        .to_socket_addrs()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot find the broker's address: {e}")))?
        .next()
        .ok_or_else(|| io::Error::new(ErrorKind::NotFound, "the broker's name has no address"))?;
    let tcp = TcpStream::connect_timeout(&address, CONNECT_TIMEOUT).map_err(|e| {
        let why = match e.kind() {
            ErrorKind::ConnectionRefused => "refused (is the broker running, on that port?)".into(),
            ErrorKind::TimedOut | ErrorKind::WouldBlock => {
                format!("no answer within {} s", CONNECT_TIMEOUT.as_secs())
            }
            _ => e.to_string(),
        };
        io::Error::new(e.kind(), format!("cannot connect to the broker: {why}"))
    })?;
    tcp.set_nodelay(true)?;
    tcp.set_read_timeout(Some(CONNECT_TIMEOUT))?;
    // A broker that stops reading must not hold the thread for ever.
    tcp.set_write_timeout(Some(CONNECT_TIMEOUT))?;
    let mut stream = match &settings.tls {
        None => Conn::Plain(tcp),
        Some(config) => {
            let name =
                rustls::pki_types::ServerName::try_from(settings.host.clone()).map_err(|_| {
                    io::Error::new(
                        ErrorKind::InvalidInput,
                        "the broker's host name cannot be checked against a certificate",
                    )
                })?;
            let tls = rustls::ClientConnection::new(config.clone(), name)
                .map_err(|e| io::Error::other(format!("TLS: {e}")))?;
            Conn::Tls(Box::new(rustls::StreamOwned::new(tls, tcp)))
        }
    };
    let connect = Packet::Connect(Connect {
        client_id: settings.client_id.clone(),
        keep_alive_s: KEEP_ALIVE.as_secs() as u16,
        // Commands are not kept for the node while it is away: a stale
        // "record off" must not arrive hours later.
        clean_session: true,
        will: Some(Will {
            topic: settings.availability_topic.clone(),
            payload: b"offline".to_vec(),
            retain: true,
        }),
        user: settings.user.clone(),
        password: settings.password.clone().map(String::into_bytes),
    });
    stream.write_all(&connect.encode()).map_err(tls_error)?;
    let mut reader = PacketReader::default();
    // A broker that sends a byte at a time waits no longer than a silent one.
    let deadline = Instant::now() + CONNECT_TIMEOUT;
    let answer = loop {
        if let Some(answer) = reader.next()? {
            break Some(answer);
        }
        if !reader.fill(&mut stream).map_err(tls_error)? || Instant::now() > deadline {
            break None;
        }
    };
    match answer {
        Some(Decoded::Packet(Packet::ConnAck {
            code: ConnectReturn::Accepted,
            ..
        })) => Ok((stream, reader)),
        Some(Decoded::Packet(Packet::ConnAck { code, .. })) => {
            Err(io::Error::new(ErrorKind::PermissionDenied, refusal(code)))
        }
        _ => Err(io::Error::new(
            ErrorKind::InvalidData,
            "the broker did not answer CONNECT",
        )),
    }
}

/// Says a handshake failure is TLS's (rustls names the certificate's fault).
fn tls_error(e: io::Error) -> io::Error {
    match e
        .get_ref()
        .and_then(|inner| inner.downcast_ref::<rustls::Error>())
    {
        Some(tls) => io::Error::new(e.kind(), format!("TLS: {tls}")),
        None => e,
    }
}

fn refusal(code: ConnectReturn) -> &'static str {
    match code {
        ConnectReturn::BadUserOrPassword => "the broker refused the user name or password",
        // Mosquitto 2 answers a wrong password with this code, not 4.
        ConnectReturn::NotAuthorized => {
            "the broker refused the node: not authorized (check the user name and password)"
        }
        ConnectReturn::ClientIdRejected => "the broker refused the node's client id",
        ConnectReturn::ServerUnavailable => "the broker is unavailable",
        ConnectReturn::BadProtocolVersion => "the broker does not speak MQTT 3.1.1",
        ConnectReturn::Accepted => "accepted",
    }
}

/// Runs one connection until it fails, the broker closes it, or the node
/// stops. Reading and sending take turns: each turn handles what one read
/// brought, then sends what waits and the keep-alive, so a broker that is
/// never silent for long holds back neither.
fn serve(
    mut stream: Conn,
    mut reader: PacketReader,
    settings: &Settings,
    shared: &Shared,
    handler: &mut impl Handler,
) -> io::Result<()> {
    stream.tcp().set_read_timeout(Some(TICK))?;
    let mut packet_id = 0u16;
    let mut next_id = || {
        packet_id = packet_id.wrapping_add(1).max(1);
        packet_id
    };
    if !settings.subscriptions.is_empty() {
        let subscribe = Packet::Subscribe {
            packet_id: next_id(),
            filters: settings
                .subscriptions
                .iter()
                .map(|f| (f.clone(), 1))
                .collect(),
        };
        stream.write_all(&subscribe.encode())?;
    }
    let mut first = vec![Message::state(
        settings.availability_topic.clone(),
        "online",
    )];
    first.extend(handler.on_connect());
    send(&mut stream, &first)?;
    let mut last_sent = Instant::now();
    let mut ping_sent: Option<Instant> = None;
    let mut passed_over = Throttle::new(LOG_EVERY);
    while !shared.stop.load(Ordering::Relaxed) {
        reader.fill(&mut stream)?;
        while let Some(decoded) = reader.next()? {
            match decoded {
                Decoded::Packet(Packet::Publish(publish)) => {
                    if let Some(id) = publish.packet_id {
                        stream.write_all(&Packet::PubAck(id).encode())?;
                    }
                    let answer =
                        handler.on_message(&publish.topic, &publish.payload, publish.retain);
                    send(&mut stream, &answer)?;
                }
                Decoded::Packet(Packet::PingResp) => ping_sent = None,
                Decoded::Packet(Packet::SubAck { granted, .. }) if granted.contains(&None) => {
                    log::warn!("mqtt: the broker refused a subscription: commands may not arrive");
                }
                Decoded::Packet(_) => {}
                Decoded::TooLarge {
                    size,
                    topic,
                    packet_id,
                } => {
                    if let Some(id) = packet_id {
                        stream.write_all(&Packet::PubAck(id).encode())?;
                    }
                    if let Some(held) = passed_over.pass(Instant::now()) {
                        let on = topic.map(|t| format!(" on {}", shorten(&t)));
                        log::info!(
                            "mqtt: ignored a {size}-byte message{}: larger than the node takes{}",
                            on.unwrap_or_default(),
                            held_back(held)
                        );
                    }
                }
            }
        }
        if reader.closed {
            return Ok(());
        }
        let pending = lock(&shared.outbox).take();
        if !pending.is_empty() {
            send(&mut stream, &pending)?;
            last_sent = Instant::now();
        }
        if let Some(sent) = ping_sent {
            if sent.elapsed() > KEEP_ALIVE {
                return Err(io::Error::new(
                    ErrorKind::TimedOut,
                    "the broker stopped answering",
                ));
            }
        } else if last_sent.elapsed() >= KEEP_ALIVE / 2 {
            stream.write_all(&Packet::PingReq.encode())?;
            ping_sent = Some(Instant::now());
            last_sent = Instant::now();
        }
    }
    // A clean stop sends no will: say so before leaving.
    let offline = Message::state(settings.availability_topic.clone(), "offline");
    let _ = send(&mut stream, &[offline]);
    let _ = stream.write_all(&Packet::Disconnect.encode());
    Ok(())
}

fn send(stream: &mut impl Write, messages: &[Message]) -> io::Result<()> {
    let mut bytes = Vec::new();
    for m in messages {
        bytes.extend(
            Packet::Publish(Publish {
                topic: m.topic.clone(),
                payload: m.payload.clone(),
                qos: 0,
                retain: m.retain,
                dup: false,
                packet_id: None,
            })
            .encode(),
        );
    }
    stream.write_all(&bytes)
}

/// Bytes from the broker, cut into packets.
#[derive(Default)]
struct PacketReader {
    buf: Vec<u8>,
    closed: bool,
    /// Bytes of a packet too large to take, still to pass over: a 1 MiB
    /// message on a command topic must not cost the connection.
    skipping: usize,
}

impl PacketReader {
    /// Reads once, waiting at most the socket's read timeout; returns
    /// whether bytes came (if not, the broker may have closed the
    /// connection: see `closed`).
    fn fill(&mut self, stream: &mut impl Read) -> io::Result<bool> {
        let mut chunk = [0u8; 4096];
        let n = match stream.read(&mut chunk) {
            Ok(0) => {
                self.closed = true;
                return Ok(false);
            }
            Ok(n) => n,
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {
                return Ok(false);
            }
            Err(e) => return Err(e),
        };
        let passed = self.skipping.min(n);
        self.skipping -= passed;
        self.buf.extend_from_slice(&chunk[passed..n]);
        Ok(true)
    }

    /// The next packet among the bytes read, if they hold its whole (or,
    /// for one too large, its head: the rest is passed over as it comes).
    fn next(&mut self) -> io::Result<Option<Decoded>> {
        let decoded = Packet::decode(&self.buf)
            .map_err(|e| io::Error::new(ErrorKind::InvalidData, e.to_string()))?;
        let Some((decoded, size)) = decoded else {
            return Ok(None);
        };
        let taken = size.min(self.buf.len());
        self.buf.drain(..taken);
        self.skipping = size - taken;
        Ok(Some(decoded))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mqtt::codec::MAX_INCOMING;

    #[test]
    fn the_outbox_keeps_the_newest_state_per_topic_and_a_bounded_tail_of_events() {
        let mut outbox = Outbox::default();
        for i in 0..1000 {
            outbox.put(Message::state(
                "a/motion",
                if i % 2 == 0 { "ON" } else { "OFF" },
            ));
            outbox.put(Message::event("a/event", format!("{i}")));
        }
        let sent = outbox.take();
        assert_eq!(sent.len(), 1 + MAX_QUEUED_EVENTS);
        assert_eq!(sent[0], Message::state("a/motion", "OFF"));
        assert_eq!(sent[1].payload, b"936");
        assert_eq!(sent.last().unwrap().payload, b"999");
        assert!(outbox.take().is_empty());
    }

    #[test]
    fn packets_too_large_are_passed_over_however_they_follow_each_other() {
        let publish = |topic: &str, size: usize, packet_id: Option<u16>| Publish {
            topic: topic.into(),
            payload: vec![7; size],
            qos: u8::from(packet_id.is_some()),
            retain: true,
            dup: false,
            packet_id,
        };
        let large = |topic: &str, size, packet_id| {
            let packet = Packet::Publish(publish(topic, size, packet_id)).encode();
            let passed = Decoded::TooLarge {
                size: packet.len(),
                topic: Some(topic.into()),
                packet_id,
            };
            (packet, passed)
        };
        let fits = |topic: &str, size| {
            let packet = Packet::Publish(publish(topic, size, None));
            (packet.encode(), Decoded::Packet(packet))
        };
        let small = |topic| fits(topic, 2);
        // As retained messages come on subscribing: one after the other,
        // so that a skip ends inside a read and the next one starts there.
        let table = [
            vec![large("a/1", 1 << 20, None), small("a/2")],
            vec![
                large("b/1", 100_000, Some(1)),
                large("b/2", 100_000, Some(2)),
                small("b/3"),
            ],
            vec![
                small("c/1"),
                large("c/2", 70_000, None),
                fits("c/3", 4090),
                large("c/4", MAX_INCOMING, Some(3)),
                small("c/5"),
            ],
        ];
        for messages in table {
            let (bytes, want): (Vec<Vec<u8>>, Vec<Decoded>) = messages.into_iter().unzip();
            // Read 4 KiB at a time, as from a socket.
            let mut stream = io::Cursor::new(bytes.concat());
            let mut reader = PacketReader::default();
            let mut got = Vec::new();
            while !reader.closed {
                reader.fill(&mut stream).unwrap();
                while let Some(decoded) = reader.next().unwrap() {
                    got.push(decoded);
                }
            }
            assert_eq!(got, want);
        }
    }
}
