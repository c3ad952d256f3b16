//! The node's own certificate, for HTTPS where no domain or proxy gives one:
//! a local authority made once, and a server certificate it signs for the
//! node's names, kept in DATA_DIR/tls (the folder 0700, its files 0600).
//! The authority stays, so a phone that trusts it keeps trusting; the
//! server certificate is made again at start when the node's names changed
//! or it nears its end.

use std::fs;
use std::io::Write;
use std::net::IpAddr;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};

use base64::Engine;
use ring::rand::SystemRandom;
use ring::signature::{ECDSA_P256_SHA256_ASN1_SIGNING, EcdsaKeyPair, KeyPair};
use rustls::pki_types::{PrivateKeyDer, ServerName};

use super::x509::{self, Names, Subject};

const DAY_MS: i64 = 24 * 3600 * 1000;
/// About ten years: the authority is installed on phones once.
const AUTHORITY_DAYS: i64 = 3653;
/// The longest life browsers take (Apple's rule is 398 days).
const SERVER_DAYS: i64 = 397;
/// The server certificate is made again this close to its end.
const RENEW_DAYS: i64 = 30;
/// Both begin a day before they are made, for phones whose clocks are a
/// little behind the node's.
const BACKDATE_MS: i64 = DAY_MS;

/// The node's certificate for its names, with its key, and its authority's.
pub struct Own {
    /// The server certificate (DER) and its key (PKCS#8).
    pub certificate: Vec<u8>,
    pub key: Vec<u8>,
    /// The authority's certificate, PEM, to install on phones.
    pub authority_pem: String,
    pub names: Names,
    pub not_after_ms: i64,
}

/// The node's certificate for the host name `host` and those of
/// `addresses` in the private ranges, read from `dir`, or made there
/// (with the authority, if it is not there yet) at `now_ms`.
pub fn certificate(
    dir: &Path,
    node_name: &str,
    host: &str,
    addresses: &[IpAddr],
    now_ms: i64,
) -> Result<Own, String> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .and_then(|()| fs::set_permissions(dir, fs::Permissions::from_mode(0o700)))
        .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    let host = dns_name(host);
    let files = Files::in_folder(dir);
    let (authority, authority_key, made) = match fs::exists(&files.authority_key) {
        Ok(true) => {
            let key = files.read_key(&files.authority_key)?;
            (files.read_certificate(&files.authority, &key)?, key, false)
        }
        _ => {
            let key = Key::new()?;
            let subject = Subject {
                key: &key.pair,
                common_name: &format!("nvr-node {node_name} local CA"),
                from_ms: now_ms - BACKDATE_MS,
                until_ms: now_ms + AUTHORITY_DAYS * DAY_MS,
            };
            let certificate = x509::authority(&subject, host.as_deref())?;
            // The key last: its file is what says the authority is there.
            files.write(&files.authority, &pem("CERTIFICATE", &certificate))?;
            files.write(&files.authority_key, &pem("PRIVATE KEY", &key.pkcs8))?;
            log::info!(
                "made the node's certificate authority, {}",
                files.authority.display()
            );
            (certificate, key, true)
        }
    };
    let fields = x509::read(&authority).ok_or_else(|| files.unreadable(&files.authority))?;
    let permitted = fields.extension(x509::NAME_CONSTRAINTS)
        == Some(&x509::name_constraints(host.as_deref())[..]);
    let names = names(host.as_deref(), permitted, addresses);
    if host.is_some() && !permitted {
        log::warn!(
            "the host name changed since the node's certificate authority ({}) was made: \
             its certificate names only {}; to have the host name too, delete {} and \
             install the new authority on each phone",
            files.authority.display(),
            names.list(),
            files.authority_key.display()
        );
    }
    if names.dns.is_empty() && names.addresses.is_empty() {
        return Err(
            "HTTPS_PORT: the node has no host name or private address for its own certificate \
             to name: give a certificate with TLS_CERT_FILE and TLS_KEY_FILE"
                .into(),
        );
    }
    let current = (!made)
        .then(|| files.current_server(fields.subject, &names, now_ms))
        .flatten();
    let (certificate, key) = match current {
        Some(current) => current,
        None => {
            let key = Key::new()?;
            let server = Subject {
                key: &key.pair,
                common_name: &format!("nvr-node {node_name}"),
                from_ms: now_ms - BACKDATE_MS,
                until_ms: (now_ms + SERVER_DAYS * DAY_MS).min(fields.not_after_ms),
            };
            let certificate = x509::server(&authority_key.pair, fields.subject, &server, &names)?;
            files.write(&files.server, &pem("CERTIFICATE", &certificate))?;
            files.write(&files.server_key, &pem("PRIVATE KEY", &key.pkcs8))?;
            (certificate, key.pkcs8)
        }
    };
    let not_after_ms = x509::read(&certificate).map_or(0, |c| c.not_after_ms);
    Ok(Own {
        certificate,
        key,
        authority_pem: pem("CERTIFICATE", &authority),
        names,
        not_after_ms,
    })
}

/// `host` in lower case, if it is a DNS name (not an address).
fn dns_name(host: &str) -> Option<String> {
    let host = host.to_ascii_lowercase();
    match ServerName::try_from(host.as_str()) {
        Ok(ServerName::DnsName(_)) => Some(host),
        _ => None,
    }
}

/// What the server certificate names: the host name if the authority may
/// vouch for it, `<host>.local` for a host name without a dot, and the
/// addresses in private ranges.
fn names(host: Option<&str>, permitted: bool, addresses: &[IpAddr]) -> Names {
    let mut dns = Vec::new();
    if let Some(host) = host {
        if permitted {
            dns.push(host.to_owned());
        }
        if !host.contains('.') {
            dns.push(format!("{host}.local"));
        }
    }
    let mut private = Vec::new();
    for &address in addresses {
        if x509::is_private(address) && !private.contains(&address) {
            private.push(address);
        }
    }
    Names {
        dns,
        addresses: private,
    }
}

/// An ECDSA P-256 key, with the PKCS#8 document it is kept in (ring
/// gives no way back from the one to the other).
struct Key {
    pkcs8: Vec<u8>,
    pair: EcdsaKeyPair,
}

impl Key {
    fn new() -> Result<Key, String> {
        let random = SystemRandom::new();
        let pkcs8 = EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &random)
            .map_err(|_| "cannot make a key")?;
        Key::from_pkcs8(pkcs8.as_ref().to_vec()).ok_or_else(|| "cannot make a key".into())
    }

    fn from_pkcs8(pkcs8: Vec<u8>) -> Option<Key> {
        let random = SystemRandom::new();
        let pair = EcdsaKeyPair::from_pkcs8(&ECDSA_P256_SHA256_ASN1_SIGNING, &pkcs8, &random);
        Some(Key {
            pair: pair.ok()?,
            pkcs8,
        })
    }
}

/// `der` as PEM, labelled `label`.
fn pem(label: &str, der: &[u8]) -> String {
    let base64 = base64::engine::general_purpose::STANDARD.encode(der);
    let mut out = format!("-----BEGIN {label}-----\n");
    for line in base64.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out + &format!("-----END {label}-----\n")
}

/// The files of `DATA_DIR/tls`.
struct Files {
    authority: PathBuf,
    authority_key: PathBuf,
    server: PathBuf,
    server_key: PathBuf,
}

impl Files {
    fn in_folder(dir: &Path) -> Files {
        Files {
            authority: dir.join("ca.crt"),
            authority_key: dir.join("ca.key"),
            server: dir.join("server.crt"),
            server_key: dir.join("server.key"),
        }
    }

    fn unreadable(&self, path: &Path) -> String {
        format!(
            "{} is not the certificate or key the node wrote: delete {} and start the node again \
             to make a new authority (then install it on each phone again)",
            path.display(),
            self.authority_key.display()
        )
    }

    fn read_key(&self, path: &Path) -> Result<Key, String> {
        let pem = fs::read(path).unwrap_or_default();
        match super::pem_private_key(&pem) {
            Ok(PrivateKeyDer::Pkcs8(key)) => Key::from_pkcs8(key.secret_pkcs8_der().to_vec()),
            _ => None,
        }
        .ok_or_else(|| self.unreadable(path))
    }

    /// The certificate in `path`, if it is for `key`.
    fn read_certificate(&self, path: &Path, key: &Key) -> Result<Vec<u8>, String> {
        let pem = fs::read(path).unwrap_or_default();
        let certificate = super::pem_certificates(&pem)
            .ok()
            .and_then(|c| c.into_iter().next());
        match certificate {
            Some(c)
                if x509::read(&c)
                    .is_some_and(|f| f.public_key == key.pair.public_key().as_ref()) =>
            {
                Ok(c.to_vec())
            }
            _ => Err(self.unreadable(path)),
        }
    }

    /// The server certificate and key kept, while they are by the
    /// authority named `authority`, for `names`, and not near their end.
    fn current_server(
        &self,
        authority: &[u8],
        names: &Names,
        now_ms: i64,
    ) -> Option<(Vec<u8>, Vec<u8>)> {
        let key = self.read_key(&self.server_key).ok()?;
        let certificate = self.read_certificate(&self.server, &key).ok()?;
        let fields = x509::read(&certificate)?;
        let current = fields.issuer == authority
            && fields.extension(x509::SUBJECT_ALT_NAME)
                == Some(&x509::subject_alt_names(names)[..])
            && fields.not_after_ms - now_ms > RENEW_DAYS * DAY_MS;
        current.then_some((certificate, key.pkcs8))
    }

    /// Writes `contents` to `path` whole or not at all, readable by the
    /// node's user only.
    fn write(&self, path: &Path, contents: &str) -> Result<(), String> {
        let new = path.with_extension("new");
        let _ = fs::remove_file(&new);
        let written = fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&new)
            .and_then(|mut file| {
                file.write_all(contents.as_bytes())?;
                file.sync_all()
            })
            .and_then(|()| fs::rename(&new, path));
        written.map_err(|e| format!("cannot write {}: {e}", path.display()))
    }
}

#[cfg(test)]
mod tests {
    use std::process::Command;

    use super::*;

    fn ip(text: &str) -> IpAddr {
        text.parse().unwrap()
    }

    /// The real clock, which openssl checks the certificates against.
    fn now() -> i64 {
        let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        since.unwrap().as_millis() as i64
    }

    /// Runs openssl with `args` in `dir`: whether it succeeded, and what it said.
    fn openssl(dir: &Path, args: &[&str]) -> (bool, String) {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("run openssl (Debian package openssl)");
        let said = String::from_utf8_lossy(&out.stdout) + String::from_utf8_lossy(&out.stderr);
        (out.status.success(), said.into_owned())
    }

    /// openssl's reading of the certificate `file` in `dir`, which must succeed.
    fn text(dir: &Path, file: &str) -> String {
        let (ok, text) = openssl(dir, &["x509", "-noout", "-text", "-in", file]);
        assert!(ok, "openssl x509 -noout -text -in {file}: {text}");
        text
    }

    fn assert_has(text: &str, wanted: &[&str]) {
        for want in wanted {
            assert!(text.contains(want), "no {want:?} in\n{text}");
        }
    }

    /// A new folder for a test, and its `tls` folder, not made yet.
    fn folder(name: &str) -> (PathBuf, PathBuf) {
        let dir = std::env::temp_dir().join(format!("nvr-node-own-{name}-{}", std::process::id()));
        let _ = fs::remove_dir_all(&dir);
        fs::create_dir_all(&dir).unwrap();
        let tls = dir.join("tls");
        (dir, tls)
    }

    #[test]
    fn openssl_reads_the_authority_and_the_certificate_as_made() {
        let (dir, tls) = folder("openssl");
        let addresses = [
            ip("192.168.1.20"),
            ip("8.8.8.8"),
            ip("fd00::5"),
            ip("fe80::1"),
            ip("10.1.2.3"),
            ip("192.168.1.20"),
            ip("169.254.1.1"),
            ip("100.100.1.1"),
        ];
        let at = now();
        let own = certificate(&tls, "garage", "NVR-Test", &addresses, at).unwrap();
        let ca = text(&tls, "ca.crt");
        let indent = "\n                ";
        assert_has(
            &ca,
            &[
                "Issuer: CN = nvr-node garage local CA",
                "Subject: CN = nvr-node garage local CA",
                "Signature Algorithm: ecdsa-with-SHA256",
                "ASN1 OID: prime256v1",
                &format!("X509v3 Basic Constraints: critical{indent}CA:TRUE, pathlen:0\n"),
                &format!("X509v3 Key Usage: critical{indent}Certificate Sign\n"),
                "X509v3 Subject Key Identifier",
                &[
                    "X509v3 Name Constraints: critical",
                    "Permitted:",
                    "  DNS:nvr-test",
                    "  DNS:local",
                    "  DNS:lan",
                    "  DNS:home.arpa",
                    "  DNS:internal",
                    "  IP:10.0.0.0/255.0.0.0",
                    "  IP:172.16.0.0/255.240.0.0",
                    "  IP:192.168.0.0/255.255.0.0",
                    "  IP:100.64.0.0/255.192.0.0",
                    "  IP:FC00:0:0:0:0:0:0:0/FE00:0:0:0:0:0:0:0\n",
                ]
                .join(indent),
            ],
        );
        let server = text(&tls, "server.crt");
        assert_has(
            &server,
            &[
                "Issuer: CN = nvr-node garage local CA",
                "Subject: CN = nvr-node garage\n",
                &format!("X509v3 Key Usage: critical{indent}Digital Signature\n"),
                &format!("X509v3 Extended Key Usage: {indent}TLS Web Server Authentication\n"),
                &format!(
                    "X509v3 Subject Alternative Name: {indent}DNS:nvr-test, DNS:nvr-test.local, \
                     IP Address:192.168.1.20, IP Address:FD00:0:0:0:0:0:0:5, \
                     IP Address:10.1.2.3, IP Address:100.100.1.1\n"
                ),
                "X509v3 Authority Key Identifier",
            ],
        );
        assert!(!server.contains("CA:TRUE"), "{server}");
        let verify = ["verify", "-x509_strict", "-CAfile", "ca.crt", "server.crt"];
        let (ok, said) = openssl(&tls, &verify);
        assert!(ok && said.contains("server.crt: OK"), "{said}");
        // About ten years, and 397 days: not a day less, nor more.
        let day = 24 * 3600;
        for (file, days) in [("ca.crt", AUTHORITY_DAYS), ("server.crt", SERVER_DAYS)] {
            let left = (at + days * DAY_MS - now()) / 1000;
            let valid_for = |s: i64| {
                openssl(
                    &tls,
                    &["x509", "-noout", "-in", file, "-checkend", &s.to_string()],
                )
                .0
            };
            assert!(
                valid_for(left - day) && !valid_for(left + day),
                "{file}: not {days} days"
            );
        }
        assert_eq!(own.not_after_ms, at / 1000 * 1000 + SERVER_DAYS * DAY_MS);
        assert_eq!(
            own.authority_pem,
            fs::read_to_string(tls.join("ca.crt")).unwrap()
        );
        fs::remove_dir_all(&dir).unwrap();
    }

    /// The authority's key, stolen, signs for a public name or address:
    /// openssl refuses what it signed, by the name constraints.
    #[test]
    fn the_authority_cannot_vouch_for_other_sites() {
        let (dir, tls) = folder("constraints");
        certificate(&tls, "garage", "nvr", &[ip("192.168.1.20")], now()).unwrap();
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        let (ok, said) = openssl(
            &tls,
            &[
                &[
                    "req",
                    "-new",
                    "-subj",
                    "/CN=rogue",
                    "-keyout",
                    "rogue.key",
                    "-out",
                    "rogue.csr",
                ][..],
                &ec,
            ]
            .concat(),
        );
        assert!(ok, "{said}");
        let cases = [
            ("DNS:www.example.com", false),
            ("IP:8.8.8.8", false),
            ("DNS:nvr.example.com", false),
            ("DNS:anything.lan", true),
            ("DNS:nvr", true),
            ("IP:172.20.0.9", true),
        ];
        for (name, permitted) in cases {
            fs::write(tls.join("ext"), format!("subjectAltName = {name}\n")).unwrap();
            let sign = [
                "x509",
                "-req",
                "-days",
                "1",
                "-in",
                "rogue.csr",
                "-CA",
                "ca.crt",
                "-CAkey",
                "ca.key",
                "-extfile",
                "ext",
                "-out",
                "rogue.crt",
            ];
            let (ok, said) = openssl(&tls, &sign);
            assert!(ok, "{said}");
            let (ok, said) = openssl(&tls, &["verify", "-CAfile", "ca.crt", "rogue.crt"]);
            assert_eq!(ok, permitted, "{name}: {said}");
            if !permitted {
                assert!(
                    said.contains("permitted subtree violation"),
                    "{name}: {said}"
                );
            }
        }
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_files_are_the_node_users_alone() {
        let (dir, tls) = folder("modes");
        fs::create_dir(&tls).unwrap();
        fs::set_permissions(&tls, fs::Permissions::from_mode(0o755)).unwrap();
        certificate(&tls, "garage", "nvr", &[], now()).unwrap();
        let mode = |path: &Path| fs::metadata(path).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&tls), 0o700);
        let mut files: Vec<(String, u32)> = fs::read_dir(&tls)
            .unwrap()
            .map(|e| e.unwrap().path())
            .map(|p| {
                (
                    p.file_name().unwrap().to_string_lossy().into_owned(),
                    mode(&p),
                )
            })
            .collect();
        files.sort();
        let want = ["ca.crt", "ca.key", "server.crt", "server.key"].map(|f| (f.to_owned(), 0o600));
        assert_eq!(files, want);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn the_certificate_is_made_again_when_its_names_change_or_it_nears_its_end() {
        let (dir, tls) = folder("renew");
        let read = |file: &str| fs::read(tls.join(file)).unwrap();
        let at = now();
        let lan = [ip("192.168.1.20")];
        let first = certificate(&tls, "garage", "nvr", &lan, at).unwrap();
        let authority = read("ca.crt");
        let mut server = read("server.crt");
        let mut made_again = |host: &str, addresses: &[IpAddr], at: i64| {
            let own = certificate(&tls, "garage", host, addresses, at).unwrap();
            assert_eq!(read("ca.crt"), authority, "the authority changed");
            assert_eq!(own.authority_pem.as_bytes(), authority);
            let now_served = read("server.crt");
            assert_eq!(pem("CERTIFICATE", &own.certificate).as_bytes(), now_served);
            let changed = now_served != server;
            server = now_served;
            (changed, own.names.list())
        };
        assert_eq!(
            made_again("nvr", &lan, at),
            (false, "nvr, nvr.local, 192.168.1.20".into())
        );
        let moved = [ip("192.168.1.21"), ip("fd00::1")];
        assert_eq!(
            made_again("nvr", &moved, at),
            (true, "nvr, nvr.local, 192.168.1.21, fd00::1".into())
        );
        // 397 days: made again within 30 of the end.
        let day = DAY_MS;
        assert!(!made_again("nvr", &moved, at + 366 * day).0);
        assert!(made_again("nvr", &moved, at + 368 * day).0);
        assert_eq!(first.not_after_ms / 1000, (at + SERVER_DAYS * day) / 1000);
        // A new host name the authority was not made for: only its .local.
        assert_eq!(
            made_again("barn", &moved, at + 368 * day),
            (true, "barn.local, 192.168.1.21, fd00::1".into())
        );
        fs::remove_file(tls.join("server.key")).unwrap();
        assert!(made_again("barn", &moved, at + 368 * day).0);
        fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_damaged_authority_stops_the_start_and_says_what_to_do() {
        let (dir, tls) = folder("damaged");
        certificate(&tls, "garage", "nvr", &[], now()).unwrap();
        fs::write(tls.join("ca.crt"), "not a certificate").unwrap();
        let error = certificate(&tls, "garage", "nvr", &[], now())
            .err()
            .unwrap();
        assert!(
            error.contains("ca.crt is not the certificate or key the node wrote: delete"),
            "{error}"
        );
        // A certificate of another key.
        let other = folder("damaged-other");
        certificate(&other.1, "garage", "nvr", &[], now()).unwrap();
        fs::copy(other.1.join("ca.crt"), tls.join("ca.crt")).unwrap();
        let error = certificate(&tls, "garage", "nvr", &[], now())
            .err()
            .unwrap();
        assert!(error.contains("ca.crt is not the certificate"), "{error}");
        fs::remove_file(tls.join("ca.key")).unwrap();
        certificate(&tls, "garage", "nvr", &[], now()).unwrap();
        fs::remove_dir_all(&dir).unwrap();
        fs::remove_dir_all(&other.0).unwrap();
    }

    #[test]
    fn without_a_name_to_certify_the_start_stops() {
        let (dir, tls) = folder("nameless");
        let error = certificate(&tls, "garage", "not_a host", &[ip("8.8.8.8")], now()).err();
        assert!(error.is_some_and(|e| e.starts_with("HTTPS_PORT: ")));
        let own = certificate(&tls, "garage", "not_a host", &[ip("10.0.0.2")], now()).unwrap();
        assert_eq!(own.names.list(), "10.0.0.2");
        fs::remove_dir_all(&dir).unwrap();
    }
}
