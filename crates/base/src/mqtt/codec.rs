//! The MQTT 3.1.1 packets the node sends and receives (OASIS standard,
//! sections 2 and 3), as bytes: written by hand rather than taken from a
//! crate, since the node needs ten packet kinds at QoS 0 and 1, and no
//! parser of broker input should be larger than what it must understand.

use std::fmt;

/// The largest packet accepted from the broker: commands and acknowledgements
/// are a few bytes, and a retained message on a subscribed topic is small.
pub const MAX_INCOMING: usize = 64 * 1024;
/// The largest "remaining length" MQTT can express (4 bytes of 7 bits).
const MAX_REMAINING: usize = 268_435_455;

#[derive(Clone, Debug, PartialEq)]
pub struct Will {
    pub topic: String,
    pub payload: Vec<u8>,
    pub retain: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Connect {
    pub client_id: String,
    pub keep_alive_s: u16,
    pub clean_session: bool,
    pub will: Option<Will>,
    pub user: Option<String>,
    pub password: Option<Vec<u8>>,
}

/// What the broker said to CONNECT (section 3.2.2.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConnectReturn {
    Accepted,
    BadProtocolVersion,
    ClientIdRejected,
    ServerUnavailable,
    BadUserOrPassword,
    NotAuthorized,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Publish {
    pub topic: String,
    pub payload: Vec<u8>,
    pub qos: u8,
    pub retain: bool,
    pub dup: bool,
    /// Set when `qos` is 1.
    pub packet_id: Option<u16>,
}

#[derive(Clone, Debug, PartialEq)]
pub enum Packet {
    Connect(Connect),
    ConnAck {
        session_present: bool,
        code: ConnectReturn,
    },
    Publish(Publish),
    PubAck(u16),
    Subscribe {
        packet_id: u16,
        filters: Vec<(String, u8)>,
    },
    /// The granted QoS of each filter, or `None` where the broker refused it.
    SubAck {
        packet_id: u16,
        granted: Vec<Option<u8>>,
    },
    PingReq,
    PingResp,
    Disconnect,
}

/// The first packet in the bytes from the broker.
#[derive(Clone, Debug, PartialEq)]
pub enum Decoded {
    Packet(Packet),
    /// A packet larger than the node takes, known by its head alone: its
    /// bytes are passed over. A PUBLISH's topic says what was, and its
    /// packet id lets the node acknowledge it (at QoS 1 the broker holds
    /// back what follows once 20 are unacknowledged).
    TooLarge {
        size: usize,
        topic: Option<String>,
        packet_id: Option<u16>,
    },
}

/// Bytes from the broker that are not MQTT 3.1.1 as the node speaks it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Malformed(pub &'static str);

impl fmt::Display for Malformed {
    fn fmt(&self, f: &mut fmt::Formatter) -> fmt::Result {
        write!(f, "malformed MQTT packet: {}", self.0)
    }
}

impl Packet {
    /// The packet's bytes on the wire.
    pub fn encode(&self) -> Vec<u8> {
        let mut body = Vec::new();
        let first = match self {
            Packet::Connect(c) => {
                put_str(&mut body, "MQTT");
                body.push(4); // protocol level 3.1.1
                let mut flags = 0u8;
                if c.clean_session {
                    flags |= 0x02;
                }
                if let Some(will) = &c.will {
                    // Will QoS 1: the broker keeps it even if it restarts mid-delivery.
                    flags |= 0x04 | 0x08;
                    if will.retain {
                        flags |= 0x20;
                    }
                }
                if c.password.is_some() {
                    flags |= 0x40;
                }
                if c.user.is_some() {
                    flags |= 0x80;
                }
                body.push(flags);
                body.extend_from_slice(&c.keep_alive_s.to_be_bytes());
                put_str(&mut body, &c.client_id);
                if let Some(will) = &c.will {
                    put_str(&mut body, &will.topic);
                    put_bytes(&mut body, &will.payload);
                }
                if let Some(user) = &c.user {
                    put_str(&mut body, user);
                }
                if let Some(password) = &c.password {
                    put_bytes(&mut body, password);
                }
                0x10
            }
            Packet::ConnAck {
                session_present,
                code,
            } => {
                body.push(u8::from(*session_present));
                body.push(code.byte());
                0x20
            }
            Packet::Publish(p) => {
                put_str(&mut body, &p.topic);
                if let Some(id) = p.packet_id {
                    body.extend_from_slice(&id.to_be_bytes());
                }
                body.extend_from_slice(&p.payload);
                0x30 | (u8::from(p.dup) << 3) | ((p.qos & 3) << 1) | u8::from(p.retain)
            }
            Packet::PubAck(id) => {
                body.extend_from_slice(&id.to_be_bytes());
                0x40
            }
            Packet::Subscribe { packet_id, filters } => {
                body.extend_from_slice(&packet_id.to_be_bytes());
                for (filter, qos) in filters {
                    put_str(&mut body, filter);
                    body.push(*qos);
                }
                0x82
            }
            Packet::SubAck { packet_id, granted } => {
                body.extend_from_slice(&packet_id.to_be_bytes());
                body.extend(granted.iter().map(|g| g.unwrap_or(0x80)));
                0x90
            }
            Packet::PingReq => 0xc0,
            Packet::PingResp => 0xd0,
            Packet::Disconnect => 0xe0,
        };
        let mut out = Vec::with_capacity(body.len() + 5);
        out.push(first);
        put_remaining_length(&mut out, body.len());
        out.extend_from_slice(&body);
        out
    }

    /// The first packet in `buf` and its whole size: `Ok(Some(..))`, or
    /// `Ok(None)` when more bytes are needed. A packet too large is there
    /// as soon as its head is, and its size may be more than `buf` holds.
    pub fn decode(buf: &[u8]) -> Result<Option<(Decoded, usize)>, Malformed> {
        let Some(&first) = buf.first() else {
            return Ok(None);
        };
        let Some((length, header)) = remaining_length(&buf[1..])? else {
            return Ok(None);
        };
        let start = 1 + header;
        let size = start + length;
        if length > MAX_INCOMING {
            return Ok(too_large(first, &buf[start..], size, length)?.map(|d| (d, size)));
        }
        let Some(body) = buf.get(start..size) else {
            return Ok(None);
        };
        let mut r = Reader(body);
        let flags = first & 0x0f;
        let packet = match (first >> 4, flags) {
            (1, 0) => Packet::Connect(decode_connect(&mut r)?),
            (2, 0) => {
                let session_present = r.u8()? & 1 == 1;
                let code = ConnectReturn::from_byte(r.u8()?)?;
                Packet::ConnAck {
                    session_present,
                    code,
                }
            }
            (3, _) => {
                let qos = publish_qos(first)?;
                let topic = r.string()?;
                let packet_id = if qos == 1 { Some(r.u16()?) } else { None };
                Packet::Publish(Publish {
                    topic,
                    payload: r.rest().to_vec(),
                    qos,
                    retain: flags & 1 == 1,
                    dup: flags & 8 == 8,
                    packet_id,
                })
            }
            (4, 0) => Packet::PubAck(r.u16()?),
            (8, 2) => {
                let packet_id = r.u16()?;
                let mut filters = Vec::new();
                while !r.0.is_empty() {
                    filters.push((r.string()?, r.u8()?));
                }
                Packet::Subscribe { packet_id, filters }
            }
            (9, 0) => {
                let packet_id = r.u16()?;
                let granted = r
                    .rest()
                    .iter()
                    .map(|&b| match b {
                        0..=2 => Ok(Some(b)),
                        0x80 => Ok(None),
                        _ => Err(Malformed("a SUBACK code that is not a QoS or 0x80")),
                    })
                    .collect::<Result<_, _>>()?;
                Packet::SubAck { packet_id, granted }
            }
            (12, 0) => Packet::PingReq,
            (13, 0) => Packet::PingResp,
            (14, 0) => Packet::Disconnect,
            _ => return Err(Malformed("a packet type or flags the node does not speak")),
        };
        if !r.0.is_empty() && !matches!(packet, Packet::Publish(_)) {
            return Err(Malformed("bytes after the packet's fields"));
        }
        Ok(Some((Decoded::Packet(packet), size)))
    }
}

/// What a packet larger than the node takes is (`size` bytes, `length`
/// of them after its fixed header): `body` holds what came of it so far (a
/// PUBLISH is known once its topic and packet id are there).
fn too_large(
    first: u8,
    body: &[u8],
    size: usize,
    length: usize,
) -> Result<Option<Decoded>, Malformed> {
    if first >> 4 != 3 {
        return Ok(Some(Decoded::TooLarge {
            size,
            topic: None,
            packet_id: None,
        }));
    }
    let qos = publish_qos(first)?;
    let Some(&[high, low]) = body.get(..2) else {
        return Ok(None);
    };
    let head = 2 + usize::from(u16::from_be_bytes([high, low])) + 2 * usize::from(qos);
    if head > length {
        return Err(Malformed("a topic longer than the packet"));
    }
    let Some(head) = body.get(..head) else {
        return Ok(None);
    };
    let mut r = Reader(head);
    let topic = r.string()?;
    let packet_id = if qos == 1 { Some(r.u16()?) } else { None };
    Ok(Some(Decoded::TooLarge {
        size,
        topic: Some(topic),
        packet_id,
    }))
}

/// A PUBLISH's QoS, from its first byte.
fn publish_qos(first: u8) -> Result<u8, Malformed> {
    match (first >> 1) & 3 {
        qos @ (0 | 1) => Ok(qos),
        _ => Err(Malformed("QoS 2, which the node never subscribes with")),
    }
}

impl ConnectReturn {
    fn byte(self) -> u8 {
        self as u8
    }

    fn from_byte(b: u8) -> Result<ConnectReturn, Malformed> {
        Ok(match b {
            0 => ConnectReturn::Accepted,
            1 => ConnectReturn::BadProtocolVersion,
            2 => ConnectReturn::ClientIdRejected,
            3 => ConnectReturn::ServerUnavailable,
            4 => ConnectReturn::BadUserOrPassword,
            5 => ConnectReturn::NotAuthorized,
            _ => return Err(Malformed("an unknown CONNACK return code")),
        })
    }
}

fn decode_connect(r: &mut Reader) -> Result<Connect, Malformed> {
    if r.string()? != "MQTT" || r.u8()? != 4 {
        return Err(Malformed("not MQTT 3.1.1"));
    }
    let flags = r.u8()?;
    let keep_alive_s = r.u16()?;
    let client_id = r.string()?;
    let will = if flags & 0x04 != 0 {
        let topic = r.string()?;
        let payload = r.bytes()?.to_vec();
        Some(Will {
            topic,
            payload,
            retain: flags & 0x20 != 0,
        })
    } else {
        None
    };
    let user = if flags & 0x80 != 0 {
        Some(r.string()?)
    } else {
        None
    };
    let password = if flags & 0x40 != 0 {
        Some(r.bytes()?.to_vec())
    } else {
        None
    };
    Ok(Connect {
        client_id,
        keep_alive_s,
        clean_session: flags & 0x02 != 0,
        will,
        user,
        password,
    })
}

/// The remaining length at the start of `buf` and the bytes it took, or
/// `None` when it is not all there yet (section 2.2.3).
fn remaining_length(buf: &[u8]) -> Result<Option<(usize, usize)>, Malformed> {
    let mut value = 0usize;
    for (i, &b) in buf.iter().enumerate().take(4) {
        value |= usize::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Ok(Some((value, i + 1)));
        }
    }
    if buf.len() >= 4 {
        Err(Malformed("a remaining length of more than 4 bytes"))
    } else {
        Ok(None)
    }
}

fn put_remaining_length(out: &mut Vec<u8>, mut length: usize) {
    assert!(length <= MAX_REMAINING, "an MQTT packet over 256 MiB");
    loop {
        let byte = (length % 128) as u8;
        length /= 128;
        if length == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    let length = u16::try_from(bytes.len()).expect("an MQTT string over 64 KiB");
    out.extend_from_slice(&length.to_be_bytes());
    out.extend_from_slice(bytes);
}

fn put_str(out: &mut Vec<u8>, text: &str) {
    put_bytes(out, text.as_bytes());
}

/// Reads a packet's fields in order.
struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], Malformed> {
        if self.0.len() < n {
            return Err(Malformed("shorter than its fields"));
        }
        let (taken, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(taken)
    }

    fn u8(&mut self) -> Result<u8, Malformed> {
        Ok(self.take(1)?[0])
    }

    fn u16(&mut self) -> Result<u16, Malformed> {
        let b = self.take(2)?;
        Ok(u16::from_be_bytes([b[0], b[1]]))
    }

    fn bytes(&mut self) -> Result<&'a [u8], Malformed> {
        let n = self.u16()?;
        self.take(usize::from(n))
    }

    fn string(&mut self) -> Result<String, Malformed> {
        let bytes = self.bytes()?;
        // Section 1.5.3: UTF-8 without U+0000.
        match std::str::from_utf8(bytes) {
            Ok(s) if !s.contains('\0') => Ok(s.to_owned()),
            _ => Err(Malformed("a string that is not UTF-8")),
        }
    }

    fn rest(&mut self) -> &'a [u8] {
        std::mem::take(&mut self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(packet: Packet) {
        let bytes = packet.encode();
        assert_eq!(
            Packet::decode(&bytes),
            Ok(Some((Decoded::Packet(packet.clone()), bytes.len()))),
            "{packet:?}"
        );
        for cut in 0..bytes.len() {
            assert_eq!(
                Packet::decode(&bytes[..cut]),
                Ok(None),
                "{packet:?} cut at {cut}"
            );
        }
    }

    #[test]
    fn every_packet_round_trips_and_waits_for_its_last_byte() {
        round_trip(Packet::Connect(Connect {
            client_id: "nvr-1234".into(),
            keep_alive_s: 30,
            clean_session: true,
            will: Some(Will {
                topic: "nvr/n/availability".into(),
                payload: b"offline".to_vec(),
                retain: true,
            }),
            user: Some("ha".into()),
            password: Some(b"secret".to_vec()),
        }));
        round_trip(Packet::ConnAck {
            session_present: false,
            code: ConnectReturn::BadUserOrPassword,
        });
        for (qos, packet_id) in [(0, None), (1, Some(7))] {
            round_trip(Packet::Publish(Publish {
                topic: "nvr/n/c/motion".into(),
                payload: b"ON".to_vec(),
                qos,
                retain: true,
                dup: false,
                packet_id,
            }));
        }
        round_trip(Packet::PubAck(7));
        round_trip(Packet::Subscribe {
            packet_id: 1,
            filters: vec![
                ("nvr/n/+/record/set".into(), 1),
                ("homeassistant/status".into(), 1),
            ],
        });
        round_trip(Packet::SubAck {
            packet_id: 1,
            granted: vec![Some(1), None],
        });
        for packet in [Packet::PingReq, Packet::PingResp, Packet::Disconnect] {
            round_trip(packet);
        }
    }

    #[test]
    fn bytes_as_in_the_standard() {
        // Section 3.12 and 3.13: PINGREQ and PINGRESP are two bytes.
        assert_eq!(Packet::PingReq.encode(), [0xc0, 0]);
        assert_eq!(Packet::PingResp.encode(), [0xd0, 0]);
        // A QoS 0 retained PUBLISH: header 0x31, length, topic "a/b", payload "x".
        let publish = Packet::Publish(Publish {
            topic: "a/b".into(),
            payload: b"x".to_vec(),
            qos: 0,
            retain: true,
            dup: false,
            packet_id: None,
        });
        assert_eq!(publish.encode(), [0x31, 6, 0, 3, b'a', b'/', b'b', b'x']);
        // Section 2.2.3's table of remaining lengths.
        for (length, bytes) in [
            (0, vec![0x00]),
            (127, vec![0x7f]),
            (128, vec![0x80, 0x01]),
            (16_383, vec![0xff, 0x7f]),
            (16_384, vec![0x80, 0x80, 0x01]),
            (2_097_151, vec![0xff, 0xff, 0x7f]),
            (2_097_152, vec![0x80, 0x80, 0x80, 0x01]),
            (268_435_455, vec![0xff, 0xff, 0xff, 0x7f]),
        ] {
            let mut out = Vec::new();
            put_remaining_length(&mut out, length);
            assert_eq!(out, bytes, "{length}");
            assert_eq!(remaining_length(&bytes), Ok(Some((length, bytes.len()))));
        }
    }

    #[test]
    fn malformed_input_is_refused() {
        for (bytes, what) in [
            (
                vec![0x31, 0xff, 0xff, 0xff, 0xff, 0x01],
                "five length bytes",
            ),
            (
                vec![0x34, 0x80, 0x80, 0x05, 0, 1, b'a'],
                "QoS 2 over the limit",
            ),
            (
                vec![0x32, 0x81, 0x80, 0x04, 0xff, 0xff],
                "a topic and packet id longer than a packet over the limit",
            ),
            (vec![0x34, 5, 0, 1, b'a', 0, 1], "QoS 2"),
            (vec![0x30, 3, 0, 5, b'a'], "a topic longer than the packet"),
            (vec![0x30, 4, 0, 2, 0xc3, 0x28], "a topic that is not UTF-8"),
            (vec![0x20, 2, 0, 9], "an unknown CONNACK code"),
            (vec![0x90, 3, 0, 1, 0x05], "a bad SUBACK code"),
            (vec![0xf0, 0], "the reserved packet type"),
            (vec![0x80, 0], "SUBSCRIBE without its flags"),
            (vec![0x40, 3, 0, 1, 9], "bytes after a PUBACK"),
        ] {
            assert!(Packet::decode(&bytes).is_err(), "{what}: {bytes:?}");
        }
    }

    #[test]
    fn a_packet_too_large_is_known_by_its_head() {
        let publish = |qos: u8, packet_id| {
            Packet::Publish(Publish {
                topic: "nvr/n/c/online".into(),
                payload: vec![b'x'; MAX_INCOMING],
                qos,
                retain: true,
                dup: false,
                packet_id,
            })
            .encode()
        };
        for (bytes, head) in [
            // Header 1 + 3 length bytes, topic 2 + 14, packet id 2.
            (publish(1, Some(9)), 22),
            (publish(0, None), 20),
            ([vec![0xd0, 0x81, 0x80, 0x04], vec![0; 65_537]].concat(), 4),
        ] {
            let want = Decoded::TooLarge {
                size: bytes.len(),
                topic: (bytes[0] >> 4 == 3).then(|| "nvr/n/c/online".into()),
                packet_id: (bytes[0] & 2 == 2).then_some(9),
            };
            for cut in 0..head {
                assert_eq!(Packet::decode(&bytes[..cut]), Ok(None), "cut at {cut}");
            }
            for cut in [head, head + 1, bytes.len()] {
                assert_eq!(
                    Packet::decode(&bytes[..cut]),
                    Ok(Some((want.clone(), bytes.len()))),
                    "cut at {cut}"
                );
            }
        }
        // Just within the limit: a packet like any other.
        let mut fits = publish(0, None);
        fits.truncate(fits.len() - 16);
        fits[1..4].copy_from_slice(&[0x80, 0x80, 0x04]);
        assert!(matches!(
            Packet::decode(&fits),
            Ok(Some((Decoded::Packet(_), 65_540)))
        ));
    }
}
