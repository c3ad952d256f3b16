//! Finding ONVIF cameras on the LAN: a WS-Discovery Probe multicast from each
//! chosen interface, and the ProbeMatches that answer it.

use std::net::{Ipv4Addr, SocketAddr, UdpSocket};
use std::time::{Duration, Instant};

use super::auth::{escape, random};
use super::soap::SOAP_ENVELOPE;
use super::xml::{self, Element};
use crate::sys::net;
use crate::sys::poll::{PollFd, poll};

const WSA: &str = "http://schemas.xmlsoap.org/ws/2004/08/addressing";
const WSD: &str = "http://schemas.xmlsoap.org/ws/2005/04/discovery";
const DN: &str = "http://www.onvif.org/ver10/network/wsdl";
const MULTICAST: (Ipv4Addr, u16) = (Ipv4Addr::new(239, 255, 255, 250), 3702);
/// The most devices kept from one probe.
const MAX_DEVICES: usize = 256;
/// The largest answer read; a bigger one is skipped.
const MAX_DATAGRAM: usize = 64 * 1024;
/// The most service addresses kept for one device, over all its answers.
const MAX_SERVICES: usize = 8;
/// The longest endpoint reference or service address kept (a device's are
/// tens of bytes): with the bounds above, what one probe keeps is bounded.
const MAX_ADDRESS_LEN: usize = 256;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Interface {
    pub name: String,
    pub address: Ipv4Addr,
}

#[derive(Debug, PartialEq, Eq)]
pub struct Found {
    /// Its WS-Addressing EndpointReference Address (stays when it moves).
    pub endpoint: String,
    /// Where the answer came from.
    pub address: Ipv4Addr,
    /// Its XAddrs: device service URLs, over all its answers from `address`.
    pub services: Vec<String>,
    pub name: Option<String>,
    pub make: Option<String>,
    pub model: Option<String>,
}

#[derive(Debug)]
pub struct Discovery {
    pub devices: Vec<Found>,
    /// Answers dropped: not XML, not a ProbeMatch for this probe, too big, no XAddrs.
    pub skipped: u32,
    /// More than 256 devices answered.
    pub truncated: bool,
    /// Where the probe went.
    pub interfaces: Vec<Interface>,
}

/// The IPv4 interfaces that are up and not loopback, in name order; only
/// those named in `only` when it is not empty.
pub fn interfaces(only: &[String]) -> Vec<Interface> {
    let mut found = Vec::new();
    for (name, address) in net::ipv4_interfaces().unwrap_or_default() {
        if only.is_empty() || only.contains(&name) {
            // Inserted in order: no sort code for a handful of entries.
            let at = found.partition_point(|i: &Interface| (&i.name, i.address) < (&name, address));
            found.insert(at, Interface { name, address });
        }
    }
    found
}

/// The Probe for NetworkVideoTransmitters, with this MessageID.
fn probe(message_id: &str) -> String {
    format!(
        concat!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
            "<s:Envelope xmlns:s=\"{}\" xmlns:a=\"{}\" xmlns:d=\"{}\">",
            "<s:Header><a:Action s:mustUnderstand=\"1\">http://schemas.xmlsoap.org/ws/2005/04/discovery/Probe</a:Action>",
            "<a:MessageID>{}</a:MessageID>",
            "<a:To s:mustUnderstand=\"1\">urn:schemas-xmlsoap-org:ws:2005:04:discovery</a:To></s:Header>",
            "<s:Body><d:Probe><d:Types xmlns:dn=\"{}\">dn:NetworkVideoTransmitter</d:Types></d:Probe></s:Body>",
            "</s:Envelope>"
        ),
        SOAP_ENVELOPE,
        WSA,
        WSD,
        escape(message_id),
        DN
    )
}

/// A fresh urn:uuid MessageID.
fn message_id() -> String {
    format!(
        "urn:uuid:{}",
        uuid::Builder::from_random_bytes(random::<16>()).into_uuid()
    )
}

/// Probes from each of `interfaces` and gathers the answers for `listen`;
/// the devices in address order.
pub fn discover(interfaces: &[Interface], listen: Duration) -> Discovery {
    let id = message_id();
    let message = probe(&id);
    let mut discovery = Discovery {
        devices: Vec::new(),
        skipped: 0,
        truncated: false,
        interfaces: Vec::new(),
    };
    let mut sockets = Vec::new();
    for interface in interfaces {
        match probe_from(interface.address, &message) {
            Ok(socket) => {
                sockets.push(socket);
                discovery.interfaces.push(interface.clone());
            }
            Err(e) => log::warn!("discovery: cannot probe from {}: {e}", interface.name),
        }
    }
    gather(&sockets, &id, listen, &mut discovery);
    discovery
}

/// Reads the answers arriving on `sockets` for `listen` into `discovery`.
fn gather(sockets: &[UdpSocket], id: &str, listen: Duration, discovery: &mut Discovery) {
    let deadline = Instant::now() + listen;
    let mut buffer = vec![0; MAX_DATAGRAM + 1];
    let mut polled: Vec<PollFd> = sockets.iter().map(PollFd::readable).collect();
    while !sockets.is_empty() {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() {
            break;
        }
        match poll(&mut polled, left) {
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => break,
            Ok(_) => {}
        }
        for (socket, p) in sockets.iter().zip(&polled) {
            if !p.ready() {
                continue;
            }
            let Ok((length, SocketAddr::V4(from))) = socket.recv_from(&mut buffer) else {
                continue;
            };
            let answer = std::str::from_utf8(&buffer[..length]).ok();
            match answer.filter(|_| length <= MAX_DATAGRAM) {
                Some(text) => add(discovery, text, id, *from.ip()),
                None => discovery.skipped += 1,
            }
        }
    }
}

/// A socket bound to `address` that has sent `message` to the WS-Discovery
/// group through that interface only.
fn probe_from(address: Ipv4Addr, message: &str) -> std::io::Result<UdpSocket> {
    let socket = UdpSocket::bind((address, 0))?;
    net::set_multicast_interface(&socket, address)?;
    // The probe stays on the link, and this node hears no echo of it.
    socket.set_multicast_ttl_v4(1)?;
    socket.set_multicast_loop_v4(false)?;
    socket.send_to(message.as_bytes(), MULTICAST)?;
    // poll() says when to read; a read never waits.
    socket.set_nonblocking(true)?;
    Ok(socket)
}

/// Adds the devices in one answer from `from` to `discovery`, or counts it skipped.
fn add(discovery: &mut Discovery, answer: &str, message_id: &str, from: Ipv4Addr) {
    let Some(found) = probe_matches(answer, message_id, from) else {
        discovery.skipped += 1;
        return;
    };
    for device in found {
        // Per address too: a device that answers with another's endpoint
        // reference is listed apart, not merged into it.
        let known = discovery
            .devices
            .iter()
            .position(|d| d.endpoint == device.endpoint && d.address == device.address);
        match known {
            Some(at) => {
                let known = &mut discovery.devices[at];
                for service in device.services {
                    if known.services.len() < MAX_SERVICES && !known.services.contains(&service) {
                        known.services.push(service);
                    }
                }
            }
            None if discovery.devices.len() >= MAX_DEVICES => discovery.truncated = true,
            None => {
                // Kept in address order as they come: no sort code.
                let key = (device.address, &device.endpoint);
                let devices = &discovery.devices;
                let at = devices.partition_point(|d| (d.address, &d.endpoint) < key);
                discovery.devices.insert(at, device);
            }
        }
    }
}

/// The devices in a ProbeMatches answering `message_id`, received from
/// `from`; None when it is not one or names no device with an address.
fn probe_matches(answer: &str, message_id: &str, from: Ipv4Addr) -> Option<Vec<Found>> {
    let root = xml::parse(answer).ok()?;
    if !root.is(SOAP_ENVELOPE, "Envelope") {
        return None;
    }
    let relates = root.path(&[(SOAP_ENVELOPE, "Header"), (WSA, "RelatesTo")])?;
    if relates.text() != message_id {
        return None;
    }
    let matches = root.path(&[(SOAP_ENVELOPE, "Body"), (WSD, "ProbeMatches")])?;
    let found: Vec<Found> = matches
        .children_named(WSD, "ProbeMatch")
        .filter_map(|m| found(m, from))
        .collect();
    (!found.is_empty()).then_some(found)
}

fn found(probe_match: &Element, from: Ipv4Addr) -> Option<Found> {
    let endpoint = probe_match
        .path(&[(WSA, "EndpointReference"), (WSA, "Address")])?
        .text();
    let services: Vec<String> = probe_match
        .child(WSD, "XAddrs")?
        .text()
        .split_whitespace()
        .map(|service| {
            // Some cameras announce 0.0.0.0; they mean the address they answer from.
            match service.strip_prefix("http://0.0.0.0") {
                Some(rest) => format!("http://{from}{rest}"),
                None => service.to_owned(),
            }
        })
        .filter(|service| service.len() <= MAX_ADDRESS_LEN)
        .take(MAX_SERVICES)
        .collect();
    if endpoint.is_empty() || endpoint.len() > MAX_ADDRESS_LEN || services.is_empty() {
        return None;
    }
    let scopes = probe_match.child(WSD, "Scopes").map_or("", Element::text);
    let scope = |kinds: &[&str]| {
        scopes.split_whitespace().find_map(|scope| {
            let rest = strip_prefix_ignore_case(scope, "onvif://www.onvif.org/")?;
            let (kind, value) = rest.split_once('/')?;
            kinds
                .iter()
                .any(|k| kind.eq_ignore_ascii_case(k))
                .then(|| percent_decoded(value))
                .filter(|v| !v.is_empty())
        })
    };
    Some(Found {
        endpoint: endpoint.to_owned(),
        address: from,
        services,
        name: scope(&["name"]),
        make: scope(&["mfr", "manufacturer"]),
        model: scope(&["hardware"]),
    })
}

fn strip_prefix_ignore_case<'a>(text: &'a str, prefix: &str) -> Option<&'a str> {
    let head = text.get(..prefix.len())?;
    head.eq_ignore_ascii_case(prefix)
        .then(|| &text[prefix.len()..])
}

/// `text` with %XX sequences decoded ('_' and '+' kept as they are).
fn percent_decoded(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes
            .get(i + 1..i + 3)
            .filter(|h| h.iter().all(u8::is_ascii_hexdigit))
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u8::from_str_radix(h, 16).ok());
        match (bytes[i], hex) {
            (b'%', Some(byte)) => {
                out.push(byte);
                i += 3;
            }
            (byte, _) => {
                out.push(byte);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
#[path = "discovery_tests.rs"]
mod tests;
