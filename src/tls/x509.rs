//! The node's own certificates as X.509 (RFC 5280) has them: its local
//! authority's and the server certificate that authority signs, both
//! ECDSA P-256 with SHA-256; and what the node reads back from a
//! certificate, its own or one given: whom it is by and for, when it ends,
//! its extensions.

use std::net::IpAddr;

use ring::digest;
use ring::rand::SystemRandom;
use ring::signature::{EcdsaKeyPair, KeyPair};

use super::der::{self, SEQUENCE, SET};

/// Where the local authority may vouch for a name (RFC 5280, 4.2.1.10):
/// the LAN's own domains, which no public name is under, and besides the
/// host name, given when it is made. Each DNS constraint also holds every
/// name under it ("local" holds "nvr.local"), which RFC 5280 writes without
/// a leading dot, as every verifier reads it.
pub const LAN_DOMAINS: [&str; 4] = ["local", "lan", "home.arpa", "internal"];

/// The private address ranges (RFC 1918, 6598's shared space, 4193's
/// unique local IPv6), as (address, prefix length).
pub const PRIVATE_RANGES: [(IpAddr, u8); 5] = [
    (IpAddr::V4(std::net::Ipv4Addr::new(10, 0, 0, 0)), 8),
    (IpAddr::V4(std::net::Ipv4Addr::new(172, 16, 0, 0)), 12),
    (IpAddr::V4(std::net::Ipv4Addr::new(192, 168, 0, 0)), 16),
    (IpAddr::V4(std::net::Ipv4Addr::new(100, 64, 0, 0)), 10),
    (
        IpAddr::V6(std::net::Ipv6Addr::new(0xfc00, 0, 0, 0, 0, 0, 0, 0)),
        7,
    ),
];

/// Whether `address` is in one of [`PRIVATE_RANGES`].
pub fn is_private(address: IpAddr) -> bool {
    PRIVATE_RANGES.iter().any(|&(range, bits)| {
        let (a, r) = (octets(address), octets(range));
        a.len() == r.len() && mask(&a, bits) == r
    })
}

fn octets(address: IpAddr) -> Vec<u8> {
    match address {
        IpAddr::V4(v4) => v4.octets().to_vec(),
        IpAddr::V6(v6) => v6.octets().to_vec(),
    }
}

/// `bytes` with all but their first `bits` bits zero.
fn mask(bytes: &[u8], bits: u8) -> Vec<u8> {
    let ones = |i: usize| (0xff00u16 >> usize::from(bits).saturating_sub(8 * i).min(8)) as u8;
    bytes.iter().enumerate().map(|(i, b)| b & ones(i)).collect()
}

/// The names a server certificate is for.
pub struct Names {
    pub dns: Vec<String>,
    pub addresses: Vec<IpAddr>,
}

impl Names {
    /// All of them, for people: "nvr, nvr.local, 192.168.1.20".
    pub fn list(&self) -> String {
        let mut list = self.dns.join(", ");
        for address in &self.addresses {
            if !list.is_empty() {
                list.push_str(", ");
            }
            list.push_str(&address.to_string());
        }
        list
    }
}

/// A certificate to make: the key it is for, its subject's name, and when
/// it is valid, in ms since the epoch.
pub struct Subject<'a> {
    pub key: &'a EcdsaKeyPair,
    pub common_name: &'a str,
    pub from_ms: i64,
    pub until_ms: i64,
}

/// The local authority's certificate, signed by its own key: it may sign
/// only server certificates (no authority under it) for the host name
/// `host` (if any), [`LAN_DOMAINS`] and [`PRIVATE_RANGES`].
pub fn authority(ca: &Subject, host: Option<&str>) -> Result<Vec<u8>, String> {
    let name = name(ca.common_name);
    let extensions = [
        // CA:TRUE, with no authority below it (pathLenConstraint 0).
        extension(
            &[2, 5, 29, 19],
            true,
            der::sequence(&[der::boolean(true), der::unsigned(&[0])]),
        ),
        // keyCertSign (bit 5: two bits of the byte unused).
        extension(
            &[2, 5, 29, 15],
            true,
            der::element(der::BIT_STRING, &[2, 0x04]),
        ),
        extension(&[2, 5, 29, 14], false, der::octet_string(&key_id(ca.key))),
        extension(&[2, 5, 29, 30], true, name_constraints(host)),
    ];
    sign(ca.key, &name, ca, &extensions)
}

/// The nameConstraints extension's value: the subtrees it permits.
pub fn name_constraints(host: Option<&str>) -> Vec<u8> {
    // Each a GeneralSubtree: a SEQUENCE of its base name.
    let mut subtrees = Vec::new();
    for name in host.into_iter().chain(LAN_DOMAINS) {
        let name = der::element(der::primitive(2), name.as_bytes());
        subtrees.extend(der::sequence(&[name]));
    }
    for (range, bits) in PRIVATE_RANGES {
        let address = octets(range);
        let ones = vec![0xff; address.len()];
        let name = der::element(der::primitive(7), &[address, mask(&ones, bits)].concat());
        subtrees.extend(der::sequence(&[name]));
    }
    der::sequence(&[der::element(der::constructed(0), &subtrees)])
}

/// A server certificate for `names`, signed by the authority's key
/// `ca_key`, whose subject (in its certificate, as encoded there) is
/// `ca_name`.
pub fn server(
    ca_key: &EcdsaKeyPair,
    ca_name: &[u8],
    server: &Subject,
    names: &Names,
) -> Result<Vec<u8>, String> {
    let extensions = [
        // digitalSignature (bit 0: seven bits of the byte unused).
        extension(
            &[2, 5, 29, 15],
            true,
            der::element(der::BIT_STRING, &[7, 0x80]),
        ),
        // serverAuth.
        extension(
            &[2, 5, 29, 37],
            false,
            der::sequence(&[der::oid(&[1, 3, 6, 1, 5, 5, 7, 3, 1])]),
        ),
        extension(&[2, 5, 29, 17], false, subject_alt_names(names)),
        extension(
            &[2, 5, 29, 35],
            false,
            der::sequence(&[der::element(der::primitive(0), &key_id(ca_key))]),
        ),
    ];
    sign(ca_key, ca_name, server, &extensions)
}

/// The subjectAltName extension's value for `names`.
pub fn subject_alt_names(names: &Names) -> Vec<u8> {
    let mut all = Vec::new();
    for name in &names.dns {
        all.push(der::element(der::primitive(2), name.as_bytes()));
    }
    for &address in &names.addresses {
        all.push(der::element(der::primitive(7), &octets(address)));
    }
    der::sequence(&all)
}

/// The OIDs of the extensions the node reads back.
pub const SUBJECT_ALT_NAME: &[u32] = &[2, 5, 29, 17];
pub const NAME_CONSTRAINTS: &[u32] = &[2, 5, 29, 30];

/// ecdsa-with-SHA256, the signature of both certificates.
fn ecdsa_with_sha256() -> Vec<u8> {
    der::sequence(&[der::oid(&[1, 2, 840, 10045, 4, 3, 2])])
}

/// A name of one common name (CN).
fn name(common_name: &str) -> Vec<u8> {
    let cn = der::sequence(&[der::oid(&[2, 5, 4, 3]), der::utf8_string(common_name)]);
    der::sequence(&[der::element(SET, &cn)])
}

fn extension(oid: &[u32], critical: bool, value: Vec<u8>) -> Vec<u8> {
    let mut parts = vec![der::oid(oid)];
    if critical {
        parts.push(der::boolean(true));
    }
    parts.push(der::octet_string(&value));
    der::sequence(&parts)
}

/// A key's identifier: the SHA-1 of its public key (RFC 5280, 4.2.1.2).
fn key_id(key: &EcdsaKeyPair) -> Vec<u8> {
    let public = key.public_key().as_ref();
    digest::digest(&digest::SHA1_FOR_LEGACY_USE_ONLY, public)
        .as_ref()
        .to_vec()
}

/// The certificate of `subject`, by the issuer named `issuer_name`, with
/// `extensions`, signed with the issuer's key.
fn sign(
    issuer_key: &EcdsaKeyPair,
    issuer_name: &[u8],
    subject: &Subject,
    extensions: &[Vec<u8>],
) -> Result<Vec<u8>, String> {
    let random = SystemRandom::new();
    let mut serial = [0u8; 16];
    ring::rand::SecureRandom::fill(&random, &mut serial)
        .map_err(|_| "no random numbers for a serial number")?;
    let public_key = der::sequence(&[
        der::sequence(&[
            // id-ecPublicKey on prime256v1 (P-256).
            der::oid(&[1, 2, 840, 10045, 2, 1]),
            der::oid(&[1, 2, 840, 10045, 3, 1, 7]),
        ]),
        der::bit_string(subject.key.public_key().as_ref()),
    ]);
    let tbs = der::sequence(&[
        // Version 3.
        der::element(der::constructed(0), &der::unsigned(&[2])),
        der::unsigned(&serial),
        ecdsa_with_sha256(),
        issuer_name.to_vec(),
        der::sequence(&[der::time(subject.from_ms), der::time(subject.until_ms)]),
        name(subject.common_name),
        public_key,
        der::element(der::constructed(3), &der::sequence(extensions)),
    ]);
    let signature = issuer_key
        .sign(&random, &tbs)
        .map_err(|_| "cannot sign a certificate")?;
    Ok(der::sequence(&[
        tbs,
        ecdsa_with_sha256(),
        der::bit_string(signature.as_ref()),
    ]))
}

/// What the node reads of a certificate: whom it is by and for (each name
/// as encoded there), when it ends, its key and its extensions.
pub struct Fields<'a> {
    pub issuer: &'a [u8],
    pub subject: &'a [u8],
    pub not_after_ms: i64,
    /// The subject's public key, as its BIT STRING holds it.
    pub public_key: &'a [u8],
    /// The extensions' SEQUENCE's content.
    extensions: &'a [u8],
}

impl Fields<'_> {
    /// The value of the extension `oid`, if the certificate has it.
    pub fn extension(&self, oid: &[u32]) -> Option<&[u8]> {
        let wanted = der::oid(oid);
        let mut rest = self.extensions;
        while let Some((_, extension, after)) = der::read(rest) {
            rest = after;
            let (_, _, fields) = der::read(extension)?;
            if !extension.starts_with(&wanted) {
                continue;
            }
            // A critical flag, then the value's OCTET STRING.
            let (tag, content, after) = der::read(fields)?;
            let value = match tag {
                der::BOOLEAN => der::read(after)?.1,
                _ => content,
            };
            return Some(value);
        }
        None
    }
}

/// Reads `certificate` (DER); None if it is not a certificate.
pub fn read(certificate: &[u8]) -> Option<Fields<'_>> {
    let (SEQUENCE, whole, _) = der::read(certificate)? else {
        return None;
    };
    let (SEQUENCE, mut tbs, _) = der::read(whole)? else {
        return None;
    };
    // The elements of the TBSCertificate, each whole.
    let mut next = || {
        let (tag, content, rest) = der::read(tbs)?;
        let element = &tbs[..tbs.len() - rest.len()];
        tbs = rest;
        Some((tag, content, element))
    };
    let (mut tag, _, _) = next()?;
    if tag == der::constructed(0) {
        // The version; the serial number follows.
        (tag, _, _) = next()?;
    }
    if tag != der::INTEGER {
        return None;
    }
    let _signature = next()?;
    let (_, _, issuer) = next()?;
    let (_, validity, _) = next()?;
    let (_, _, subject) = next()?;
    let (_, public_key, _) = next()?;
    let mut extensions: &[u8] = &[];
    while let Some((tag, content, _)) = next() {
        if tag == der::constructed(3) {
            extensions = der::read(content)?.1;
        }
    }
    let (_, _, after) = der::read(validity)?;
    let (tag, not_after, _) = der::read(after)?;
    let (_, _, after) = der::read(public_key)?;
    let (der::BIT_STRING, [0, public_key @ ..], _) = der::read(after)? else {
        return None;
    };
    Some(Fields {
        issuer,
        subject,
        not_after_ms: der::read_time(tag, not_after)?,
        public_key,
        extensions,
    })
}
