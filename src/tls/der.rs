//! DER (ITU-T X.690), the encoding of X.509 certificates: a writer of the
//! elements the node's own certificates are made of, and a reader of one
//! element at a time, for what the node reads back from a certificate.

use std::time::{Duration, UNIX_EPOCH};

pub const BOOLEAN: u8 = 0x01;
pub const INTEGER: u8 = 0x02;
pub const BIT_STRING: u8 = 0x03;
pub const OCTET_STRING: u8 = 0x04;
pub const OID: u8 = 0x06;
pub const UTF8_STRING: u8 = 0x0c;
pub const UTC_TIME: u8 = 0x17;
pub const GENERALIZED_TIME: u8 = 0x18;
pub const SEQUENCE: u8 = 0x30;
pub const SET: u8 = 0x31;

/// The tag `[n]` wrapping a whole element (EXPLICIT), or standing for a
/// constructed element's own tag (IMPLICIT SEQUENCE).
pub const fn constructed(n: u8) -> u8 {
    0xa0 | n
}

/// The tag `[n]` standing for a primitive element's own tag (IMPLICIT).
pub const fn primitive(n: u8) -> u8 {
    0x80 | n
}

/// An element: its tag, the length of its content, its content.
pub fn element(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|&&b| b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

/// A SEQUENCE of `elements`, in order.
pub fn sequence(elements: &[Vec<u8>]) -> Vec<u8> {
    element(SEQUENCE, &elements.concat())
}

/// A non-negative INTEGER from its big-endian bytes: in as few bytes as
/// it takes, and with a zero in front of a first byte whose high bit would
/// make it negative.
pub fn unsigned(bytes: &[u8]) -> Vec<u8> {
    let first = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
    let bytes = &bytes[first..];
    match bytes.first() {
        None => element(INTEGER, &[0]),
        Some(&b) if b >= 0x80 => element(INTEGER, &[&[0], bytes].concat()),
        Some(_) => element(INTEGER, bytes),
    }
}

/// An OBJECT IDENTIFIER from its arcs, as 1.2.840.10045.2.1 is written
/// `&[1, 2, 840, 10045, 2, 1]`.
pub fn oid(arcs: &[u32]) -> Vec<u8> {
    let mut content = Vec::new();
    let first = arcs[0] * 40 + arcs[1];
    for &arc in std::iter::once(&first).chain(&arcs[2..]) {
        // Base 128, most significant group first, each but the last with
        // its high bit set.
        let groups = (0..5)
            .rev()
            .map(|i| (arc >> (7 * i)) as u8 & 0x7f)
            .skip_while(|&g| g == 0);
        let mut groups: Vec<u8> = groups.collect();
        if groups.is_empty() {
            groups.push(0);
        }
        let last = groups.len() - 1;
        content.extend(groups.iter().enumerate().map(|(i, &g)| match i < last {
            true => g | 0x80,
            false => g,
        }));
    }
    element(OID, &content)
}

/// A BIT STRING of whole bytes (a key, a signature).
pub fn bit_string(bytes: &[u8]) -> Vec<u8> {
    element(BIT_STRING, &[&[0], bytes].concat())
}

pub fn octet_string(bytes: &[u8]) -> Vec<u8> {
    element(OCTET_STRING, bytes)
}

pub fn utf8_string(text: &str) -> Vec<u8> {
    element(UTF8_STRING, text.as_bytes())
}

pub fn boolean(value: bool) -> Vec<u8> {
    element(BOOLEAN, &[if value { 0xff } else { 0 }])
}

/// A time to the second, in UTC, as X.509 writes it (RFC 5280, 4.1.2.5):
/// UTCTime (two digits of the year) through 2049, GeneralizedTime from 2050.
pub fn time(ms: i64) -> Vec<u8> {
    let at = UNIX_EPOCH + Duration::from_secs(ms.max(0) as u64 / 1000);
    // "2026-11-22T10:04:05Z": its digits are GeneralizedTime's.
    let text = humantime::format_rfc3339_seconds(at).to_string();
    let mut digits: Vec<u8> = text.bytes().filter(u8::is_ascii_digit).collect();
    digits.push(b'Z');
    if digits.starts_with(b"20") && digits[2] < b'5' || digits.starts_with(b"19") {
        element(UTC_TIME, &digits[2..])
    } else {
        element(GENERALIZED_TIME, &digits)
    }
}

/// The first element of `input`: its tag, its content and what follows it;
/// None unless `input` starts with a whole element of one-byte tag and
/// definite length.
pub fn read(input: &[u8]) -> Option<(u8, &[u8], &[u8])> {
    let (&tag, rest) = input.split_first()?;
    let (&first, mut rest) = rest.split_first()?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let count = usize::from(first & 0x7f);
        if count == 0 || count > 4 || rest.len() < count {
            return None;
        }
        let (bytes, after) = rest.split_at(count);
        rest = after;
        bytes.iter().fold(0, |len, &b| len << 8 | usize::from(b))
    };
    (rest.len() >= len).then(|| (tag, &rest[..len], &rest[len..]))
}

/// A UTCTime or GeneralizedTime's content, in ms since the epoch.
pub fn read_time(tag: u8, content: &[u8]) -> Option<i64> {
    let digits = content.strip_suffix(b"Z")?;
    let full = match (tag, digits.len()) {
        // RFC 5280: a UTCTime's 50 to 99 are 1950 to 1999.
        (UTC_TIME, 12) => [if digits[0] >= b'5' { b"19" } else { b"20" }, digits].concat(),
        (GENERALIZED_TIME, 14) => digits.to_vec(),
        _ => return None,
    };
    let d = std::str::from_utf8(&full).ok()?;
    let text = format!(
        "{}-{}-{}T{}:{}:{}Z",
        &d[..4],
        &d[4..6],
        &d[6..8],
        &d[8..10],
        &d[10..12],
        &d[12..14]
    );
    let at = humantime::parse_rfc3339(&text).ok()?;
    Some(at.duration_since(UNIX_EPOCH).ok()?.as_millis() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_take_as_few_bytes_as_they_need() {
        assert_eq!(element(OCTET_STRING, &[7; 3]), [4, 3, 7, 7, 7]);
        assert_eq!(element(OCTET_STRING, &[0; 127])[..2], [4, 127]);
        assert_eq!(element(OCTET_STRING, &[0; 128])[..3], [4, 0x81, 128]);
        assert_eq!(element(OCTET_STRING, &[0; 256])[..4], [4, 0x82, 1, 0]);
        assert_eq!(
            element(OCTET_STRING, &[0; 70_000])[..5],
            [4, 0x83, 1, 0x11, 0x70]
        );
    }

    #[test]
    fn integers_are_positive_and_minimal() {
        assert_eq!(unsigned(&[0, 0, 5]), [2, 1, 5]);
        assert_eq!(unsigned(&[0x80]), [2, 2, 0, 0x80]);
        assert_eq!(unsigned(&[0, 0x7f, 1]), [2, 2, 0x7f, 1]);
        assert_eq!(unsigned(&[]), [2, 1, 0]);
        assert_eq!(unsigned(&[0, 0]), [2, 1, 0]);
    }

    #[test]
    fn object_identifiers() {
        // X.690's example, and ecPublicKey and a big arc.
        assert_eq!(oid(&[2, 100, 3]), [6, 3, 0x81, 0x34, 0x03]);
        assert_eq!(
            oid(&[1, 2, 840, 10045, 2, 1]),
            [6, 7, 0x2a, 0x86, 0x48, 0xce, 0x3d, 0x02, 0x01]
        );
        assert_eq!(oid(&[2, 5, 29, 0]), [6, 3, 0x55, 0x1d, 0x00]);
        assert_eq!(
            oid(&[1, 3, 6, 1, 4, 1, 311, 4_294_967_295]),
            [
                6, 12, 0x2b, 6, 1, 4, 1, 0x82, 0x37, 0x8f, 0xff, 0xff, 0xff, 0x7f
            ]
        );
    }

    #[test]
    fn times_switch_to_generalized_time_in_2050() {
        let cases = [
            (0, UTC_TIME, "700101000000Z"),
            (1_795_000_000_123, UTC_TIME, "261118110640Z"),
            (2_524_607_999_000, UTC_TIME, "491231235959Z"),
            (2_524_608_000_000, GENERALIZED_TIME, "20500101000000Z"),
        ];
        for (ms, tag, text) in cases {
            let written = time(ms);
            assert_eq!(written, element(tag, text.as_bytes()), "{ms}");
            let (read_tag, content, rest) = read(&written).unwrap();
            assert!(rest.is_empty());
            assert_eq!(read_time(read_tag, content), Some(ms / 1000 * 1000));
        }
        assert_eq!(read_time(UTC_TIME, b"991231235959Z"), Some(946_684_799_000));
        assert_eq!(read_time(UTC_TIME, b"9912312359Z"), None);
        assert_eq!(read_time(OCTET_STRING, b"991231235959Z"), None);
    }

    #[test]
    fn the_reader_takes_what_the_writer_wrote_and_nothing_cut_short() {
        let inner = [unsigned(&[1]), octet_string(&[9; 300]), boolean(true)];
        let whole = sequence(&inner);
        let (tag, content, rest) = read(&whole).unwrap();
        assert_eq!((tag, rest), (SEQUENCE, &[][..]));
        let mut content = content;
        for want in &inner {
            let (_, _, after) = read(content).unwrap();
            assert_eq!(&content[..content.len() - after.len()], &want[..]);
            content = after;
        }
        assert!(content.is_empty());
        for cut in 0..whole.len() {
            assert_eq!(read(&whole[..cut]), None, "cut at {cut}");
        }
        // An indefinite length (BER, not DER).
        assert_eq!(read(&[SEQUENCE, 0x80, 0, 0]), None);
    }
}
