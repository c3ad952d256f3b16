//! A WS-Discovery responder standing in for a camera's, in the root
//! namespace on the test network's host end (`netns.rs`).
//!
//! What it does: one UDP socket bound to 0.0.0.0:3702 (SO_REUSEADDR) joined
//! to 239.255.255.250 on 10.213.77.1 only, with IP_MULTICAST_ALL off so it
//! hears that membership alone, never a probe on the machine's real
//! interfaces. Each datagram is parsed as XML by namespace (`crates/standins/src/xml.rs`); a SOAP
//! 1.2 Envelope whose Body holds a WS-Discovery (2005/04) Probe whose Types
//! include dn:NetworkVideoTransmitter (dn =
//! http://www.onvif.org/ver10/network/wsdl, whatever the prefix) is recorded
//! (source address) and answered by unicast to its sender with one
//! ProbeMatches: RelatesTo = the probe's MessageID, a fixed EndpointReference
//! (`urn:uuid:…`, one per responder), Types dn:NetworkVideoTransmitter,
//! Scopes name/hardware/mfr, XAddrs (changeable while it runs) and
//! MetadataVersion. Anything else is not answered.
//!
//! How it differs from a real camera: it answers only Probe (no Hello or Bye
//! announcements, no Resolve), ignores the probe's Scopes filter, answers at
//! once rather than after a random delay of up to 500 ms, and answers from an
//! ephemeral port of the address it is told to answer from (a camera answers
//! from 3702 of its own address) so that a camera that moved answers from its
//! new address. It can also send one garbage datagram before each answer,
//! as a printer or a broken device on the same network might.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::os::fd::FromRawFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use nvr_standins::xml;

const SOAP: &str = "http://www.w3.org/2003/05/soap-envelope";
const WSA: &str = "http://schemas.xmlsoap.org/ws/2004/08/addressing";
const WSD: &str = "http://schemas.xmlsoap.org/ws/2005/04/discovery";
const DN: &str = "http://www.onvif.org/ver10/network/wsdl";
const GROUP: Ipv4Addr = Ipv4Addr::new(239, 255, 255, 250);

/// What the responder says of its device, and what it saw.
struct State {
    /// The address answers come from.
    from: Ipv4Addr,
    xaddrs: String,
    garbage: bool,
    probes: Vec<SocketAddr>,
}

pub struct Responder {
    /// `urn:uuid:…`, the device's EndpointReference Address.
    pub endpoint: String,
    pub name: String,
    pub hardware: String,
    pub mfr: String,
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<thread::JoinHandle<()>>,
}

/// A UDP socket on 0.0.0.0:3702 that other listeners may share (a real
/// discovery daemon on the machine, or another test binary's responder).
fn shared_socket() -> UdpSocket {
    // SAFETY: plain socket calls on a descriptor this function owns; the
    // option values are c_ints that live across the calls.
    unsafe {
        let fd = libc::socket(libc::AF_INET, libc::SOCK_DGRAM | libc::SOCK_CLOEXEC, 0);
        assert!(fd >= 0, "socket: {}", std::io::Error::last_os_error());
        let socket = UdpSocket::from_raw_fd(fd);
        let one: libc::c_int = 1;
        let zero: libc::c_int = 0;
        let size = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
        let set = |level, name, value: &libc::c_int| {
            let done =
                libc::setsockopt(fd, level, name, (value as *const libc::c_int).cast(), size);
            assert_eq!(
                done,
                0,
                "setsockopt {name}: {}",
                std::io::Error::last_os_error()
            );
        };
        set(libc::SOL_SOCKET, libc::SO_REUSEADDR, &one);
        // Without it Linux hands the socket every group joined on the machine.
        set(libc::IPPROTO_IP, libc::IP_MULTICAST_ALL, &zero);
        let address = libc::sockaddr_in {
            sin_family: libc::AF_INET as libc::sa_family_t,
            sin_port: 3702u16.to_be(),
            sin_addr: libc::in_addr { s_addr: 0 },
            sin_zero: [0; 8],
        };
        let bound = libc::bind(
            fd,
            (&address as *const libc::sockaddr_in).cast(),
            std::mem::size_of::<libc::sockaddr_in>() as libc::socklen_t,
        );
        assert_eq!(
            bound,
            0,
            "bind 0.0.0.0:3702: {}",
            std::io::Error::last_os_error()
        );
        socket
    }
}

impl Responder {
    /// Answers probes heard on `interface` (the host end's address) for a
    /// device named `name` (percent-encoded as in a scope) whose device
    /// service is `xaddrs`, answering from `interface`.
    pub fn start(interface: Ipv4Addr, name: &str, xaddrs: &str) -> Responder {
        let endpoint = format!("urn:uuid:{}", uuid::Uuid::new_v4());
        Responder::start_as(interface, name, xaddrs, &endpoint)
    }

    /// As [`Responder::start`], answering with `endpoint` as its endpoint
    /// reference: another device's, to pass itself off as that device.
    pub fn start_as(interface: Ipv4Addr, name: &str, xaddrs: &str, endpoint: &str) -> Responder {
        let socket = shared_socket();
        socket
            .join_multicast_v4(&GROUP, &interface)
            .unwrap_or_else(|e| panic!("join {GROUP} on {interface}: {e}"));
        socket
            .set_read_timeout(Some(Duration::from_millis(100)))
            .unwrap();
        let state = Arc::new(Mutex::new(State {
            from: interface,
            xaddrs: xaddrs.to_owned(),
            garbage: false,
            probes: Vec::new(),
        }));
        let stop = Arc::new(AtomicBool::new(false));
        let mut responder = Responder {
            endpoint: endpoint.to_owned(),
            name: name.to_owned(),
            hardware: "X1".to_owned(),
            mfr: "Acme".to_owned(),
            state: state.clone(),
            stop: stop.clone(),
            thread: None,
        };
        let scopes = format!(
            "onvif://www.onvif.org/type/video_encoder onvif://www.onvif.org/Profile/Streaming \
             onvif://www.onvif.org/name/{} onvif://www.onvif.org/hardware/{} \
             onvif://www.onvif.org/mfr/{} onvif://www.onvif.org/location/garden",
            responder.name, responder.hardware, responder.mfr
        );
        let endpoint = responder.endpoint.clone();
        responder.thread = Some(thread::spawn(move || {
            let mut buffer = vec![0u8; 65536];
            while !stop.load(Ordering::Relaxed) {
                let Ok((n, sender)) = socket.recv_from(&mut buffer) else {
                    continue;
                };
                let text = String::from_utf8_lossy(&buffer[..n]);
                let Some(message_id) = probe_for_cameras(&text) else {
                    continue;
                };
                let (from, xaddrs, garbage) = {
                    let mut state = state.lock().unwrap();
                    state.probes.push(sender);
                    (state.from, state.xaddrs.clone(), state.garbage)
                };
                let reply = UdpSocket::bind((from, 0))
                    .unwrap_or_else(|e| panic!("bind {from}:0 to answer a probe: {e}"));
                if garbage {
                    let _ = reply.send_to(b"\x00\x01 not XML at all <<<", sender);
                }
                let answer = probe_matches(&message_id, &endpoint, &scopes, &xaddrs);
                let _ = reply.send_to(answer.as_bytes(), sender);
            }
        }));
        responder
    }

    /// Now answers from `from`, with `xaddrs`: the camera moved.
    pub fn move_to(&self, from: Ipv4Addr, xaddrs: &str) {
        let mut state = self.state.lock().unwrap();
        state.from = from;
        state.xaddrs = xaddrs.to_owned();
    }

    /// Sends a datagram that is not XML before each answer.
    pub fn send_garbage(&self, on: bool) {
        self.state.lock().unwrap().garbage = on;
    }

    /// The senders of the probes it answered, in order.
    pub fn probes(&self) -> Vec<SocketAddr> {
        self.state.lock().unwrap().probes.clone()
    }
}

impl Drop for Responder {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// The MessageID of `text` if it is a Probe for NetworkVideoTransmitters.
fn probe_for_cameras(text: &str) -> Option<String> {
    let envelope = xml::parse(text).ok()?;
    if (envelope.ns.as_str(), envelope.name.as_str()) != (SOAP, "Envelope") {
        return None;
    }
    let header = envelope.child(SOAP, "Header")?;
    let action = header.child(WSA, "Action")?.text.trim();
    if action != format!("{WSD}/Probe") {
        return None;
    }
    let message_id = header.child(WSA, "MessageID")?.text.trim().to_owned();
    let probe = envelope.child(SOAP, "Body")?.child(WSD, "Probe")?;
    let types = probe.child(WSD, "Types")?.qnames().ok()?;
    let wanted = (DN.to_owned(), "NetworkVideoTransmitter".to_owned());
    (!message_id.is_empty() && types.contains(&wanted)).then_some(message_id)
}

/// A ProbeMatches as the ONVIF Core specification's example writes it.
fn probe_matches(relates_to: &str, endpoint: &str, scopes: &str, xaddrs: &str) -> String {
    let e = xml::escape;
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<SOAP-ENV:Envelope xmlns:SOAP-ENV="{SOAP}" xmlns:wsa="{WSA}" xmlns:d="{WSD}" xmlns:dn="{DN}">
<SOAP-ENV:Header>
<wsa:MessageID>urn:uuid:{id}</wsa:MessageID>
<wsa:RelatesTo>{relates}</wsa:RelatesTo>
<wsa:To SOAP-ENV:mustUnderstand="true">http://schemas.xmlsoap.org/ws/2004/08/addressing/role/anonymous</wsa:To>
<wsa:Action SOAP-ENV:mustUnderstand="true">{WSD}/ProbeMatches</wsa:Action>
<d:AppSequence SOAP-ENV:mustUnderstand="true" MessageNumber="3" InstanceId="1"/>
</SOAP-ENV:Header>
<SOAP-ENV:Body>
<d:ProbeMatches>
<d:ProbeMatch>
<wsa:EndpointReference><wsa:Address>{endpoint}</wsa:Address></wsa:EndpointReference>
<d:Types>dn:NetworkVideoTransmitter</d:Types>
<d:Scopes>{scopes}</d:Scopes>
<d:XAddrs>{xaddrs}</d:XAddrs>
<d:MetadataVersion>1</d:MetadataVersion>
</d:ProbeMatch>
</d:ProbeMatches>
</SOAP-ENV:Body>
</SOAP-ENV:Envelope>"#,
        id = uuid::Uuid::new_v4(),
        relates = e(relates_to),
        endpoint = e(endpoint),
        scopes = e(scopes),
        xaddrs = e(xaddrs),
    )
}
