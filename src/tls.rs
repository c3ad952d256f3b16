//! TLS through rustls, TLS 1.3 only. For the node's clients: the cloud over
//! https (as the HTTP client's connector) and the MQTT broker over mqtts,
//! trusting the authorities of a given file, else the system's bundle. None
//! are built in: a board's trust then follows its system's updates, and the
//! binary is 54 KB lighter (the limit on its size). For its own HTTPS
//! (`server.rs`): a certificate given, or its own (`own.rs`, written as
//! X.509 by `x509.rs` in DER by `der.rs`).
//!
//! Its suites are the AES-GCM ones, which every TLS 1.3 server must
//! implement (RFC 8446, 9.1): ChaCha20-Poly1305's code took 17 KB more of
//! the board's binary. Its server keys are ECDSA P-256 and P-384 keys, which
//! every browser takes.

mod der;
mod own;
mod server;
mod x509;

pub use server::ServerTls;

use std::fmt;
use std::io::{self, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::sync::Arc;

use rustls::crypto::ring::{cipher_suite, kx_group};
use rustls::crypto::{
    CryptoProvider, GetRandomFailed, KeyProvider, SecureRandom, WebPkiSupportedAlgorithms,
};
use rustls::pki_types::pem::{self, PemObject};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::sign::SigningKey;
use rustls::{ClientConfig, ClientConnection, RootCertStore, SignatureScheme, StreamOwned};
use webpki::ring as algorithms;

/// Where Debian, Ubuntu, Alpine and Buildroot keep the system's authorities.
const SYSTEM_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

/// A client configuration trusting `ca_file`'s authorities, else the system's.
pub fn client_config(ca_file: Option<&Path>) -> Result<Arc<ClientConfig>, String> {
    let file = ca_file.unwrap_or(Path::new(SYSTEM_BUNDLE));
    let bytes = std::fs::read(file).map_err(|e| {
        let hint = match ca_file {
            Some(_) => "",
            None => " (install the ca-certificates package, or name a file of authorities)",
        };
        format!(
            "cannot read the certificate authorities in {}: {e}{hint}",
            file.display()
        )
    })?;
    let certificates = pem_certificates(&bytes)
        .map_err(|e| format!("{}: not PEM certificates: {e}", file.display()))?;
    let mut roots = RootCertStore::empty();
    if roots.add_parsable_certificates(certificates).0 == 0 {
        return Err(format!("{}: no certificate", file.display()));
    }
    let config = ClientConfig::builder_with_provider(Arc::new(provider()))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

/// The certificates of a PEM file, in order. The node's one reader of
/// them, and of keys below: inlined, pki-types' reader took 3 KB of the
/// boards' binary at each of the places that read one.
#[inline(never)]
fn pem_certificates(pem: &[u8]) -> Result<Vec<CertificateDer<'static>>, pem::Error> {
    CertificateDer::pem_slice_iter(pem).collect()
}

/// The first private key of a PEM file.
#[inline(never)]
fn pem_private_key(pem: &[u8]) -> Result<PrivateKeyDer<'static>, pem::Error> {
    PrivateKeyDer::from_pem_slice(pem)
}

/// rustls's *ring* provider, but for ChaCha20-Poly1305 and RSA and Ed25519
/// server keys (see the module's doc); what it verifies signatures with is
/// rustls's own list for *ring*.
fn provider() -> CryptoProvider {
    CryptoProvider {
        cipher_suites: vec![
            cipher_suite::TLS13_AES_256_GCM_SHA384,
            cipher_suite::TLS13_AES_128_GCM_SHA256,
        ],
        kx_groups: vec![kx_group::X25519, kx_group::SECP256R1, kx_group::SECP384R1],
        signature_verification_algorithms: SIGNATURES,
        secure_random: &Random,
        key_provider: &EcdsaKeys,
    }
}

static SIGNATURES: WebPkiSupportedAlgorithms = WebPkiSupportedAlgorithms {
    all: &[
        algorithms::ECDSA_P256_SHA256,
        algorithms::ECDSA_P256_SHA384,
        algorithms::ECDSA_P384_SHA256,
        algorithms::ECDSA_P384_SHA384,
        algorithms::ED25519,
        algorithms::RSA_PSS_2048_8192_SHA256_LEGACY_KEY,
        algorithms::RSA_PSS_2048_8192_SHA384_LEGACY_KEY,
        algorithms::RSA_PSS_2048_8192_SHA512_LEGACY_KEY,
        algorithms::RSA_PKCS1_2048_8192_SHA256,
        algorithms::RSA_PKCS1_2048_8192_SHA384,
        algorithms::RSA_PKCS1_2048_8192_SHA512,
        algorithms::RSA_PKCS1_2048_8192_SHA256_ABSENT_PARAMS,
        algorithms::RSA_PKCS1_2048_8192_SHA384_ABSENT_PARAMS,
        algorithms::RSA_PKCS1_2048_8192_SHA512_ABSENT_PARAMS,
    ],
    mapping: &[
        (
            SignatureScheme::ECDSA_NISTP384_SHA384,
            &[algorithms::ECDSA_P384_SHA384, algorithms::ECDSA_P256_SHA384],
        ),
        (
            SignatureScheme::ECDSA_NISTP256_SHA256,
            &[algorithms::ECDSA_P256_SHA256, algorithms::ECDSA_P384_SHA256],
        ),
        (SignatureScheme::ED25519, &[algorithms::ED25519]),
        (
            SignatureScheme::RSA_PSS_SHA512,
            &[algorithms::RSA_PSS_2048_8192_SHA512_LEGACY_KEY],
        ),
        (
            SignatureScheme::RSA_PSS_SHA384,
            &[algorithms::RSA_PSS_2048_8192_SHA384_LEGACY_KEY],
        ),
        (
            SignatureScheme::RSA_PSS_SHA256,
            &[algorithms::RSA_PSS_2048_8192_SHA256_LEGACY_KEY],
        ),
        (
            SignatureScheme::RSA_PKCS1_SHA512,
            &[algorithms::RSA_PKCS1_2048_8192_SHA512],
        ),
        (
            SignatureScheme::RSA_PKCS1_SHA384,
            &[algorithms::RSA_PKCS1_2048_8192_SHA384],
        ),
        (
            SignatureScheme::RSA_PKCS1_SHA256,
            &[algorithms::RSA_PKCS1_2048_8192_SHA256],
        ),
    ],
};

/// The system's random numbers, through *ring*.
#[derive(Debug)]
struct Random;

impl SecureRandom for Random {
    fn fill(&self, buf: &mut [u8]) -> Result<(), GetRandomFailed> {
        ring::rand::SecureRandom::fill(&ring::rand::SystemRandom::new(), buf)
            .map_err(|_| GetRandomFailed)
    }
}

/// The keys of the node's HTTPS: ECDSA's on P-256 or P-384, PKCS#8 or SEC1.
#[derive(Debug)]
struct EcdsaKeys;

impl KeyProvider for EcdsaKeys {
    fn load_private_key(
        &self,
        key: PrivateKeyDer<'static>,
    ) -> Result<Arc<dyn SigningKey>, rustls::Error> {
        rustls::crypto::ring::sign::any_ecdsa_type(&key)
    }
}

/// The HTTP client's TLS.
pub struct Connector {
    /// None: the system's authorities, read at the first https connection.
    config: Option<Arc<ClientConfig>>,
}

impl Connector {
    pub fn system() -> Arc<Connector> {
        Arc::new(Connector { config: None })
    }
}

impl ureq::TlsConnector for Connector {
    fn connect(
        &self,
        dns_name: &str,
        io: Box<dyn ureq::ReadWrite>,
    ) -> Result<Box<dyn ureq::ReadWrite>, ureq::Error> {
        let config = match &self.config {
            Some(config) => config.clone(),
            None => system_config().map_err(io::Error::other)?,
        };
        let name = ServerName::try_from(dns_name.to_owned())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "not a host name"))?;
        let connection = ClientConnection::new(config, name).map_err(io::Error::other)?;
        Ok(Box::new(TlsStream(StreamOwned::new(connection, io))))
    }
}

fn system_config() -> Result<Arc<ClientConfig>, String> {
    static CONFIG: std::sync::OnceLock<Result<Arc<ClientConfig>, String>> =
        std::sync::OnceLock::new();
    CONFIG.get_or_init(|| client_config(None)).clone()
}

struct TlsStream(StreamOwned<ClientConnection, Box<dyn ureq::ReadWrite>>);

impl Read for TlsStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.0.read(buf)
    }
}

impl Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.0.write(buf)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.0.flush()
    }
}

impl fmt::Debug for TlsStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("TlsStream")
    }
}

impl ureq::ReadWrite for TlsStream {
    fn socket(&self) -> Option<&TcpStream> {
        self.0.sock.socket()
    }
}

#[cfg(test)]
mod tests {
    use std::net::TcpListener;
    use std::path::PathBuf;
    use std::process::Command;

    use rustls::ServerConnection;

    use super::*;

    /// A CA and a server certificate for 127.0.0.1 it signed, made with the
    /// openssl program: `(ca, cert, key)`.
    fn certificates(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
        let p = |name: &str| dir.join(name);
        let openssl = |args: &[&str]| {
            let out = Command::new("openssl")
                .args(args)
                .current_dir(dir)
                .output()
                .expect("run openssl (Debian package openssl) to make test certificates");
            assert!(
                out.status.success(),
                "openssl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let ec = [
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
        ];
        openssl(
            &[
                &[
                    "req",
                    "-x509",
                    "-days",
                    "2",
                    "-subj",
                    "/CN=test CA",
                    "-keyout",
                    "ca.key",
                    "-out",
                    "ca.crt",
                ][..],
                &ec[..],
            ]
            .concat(),
        );
        openssl(
            &[
                &[
                    "req",
                    "-new",
                    "-subj",
                    "/CN=127.0.0.1",
                    "-keyout",
                    "server.key",
                    "-out",
                    "server.csr",
                ][..],
                &ec[..],
            ]
            .concat(),
        );
        std::fs::write(
            p("ext"),
            "subjectAltName = IP:127.0.0.1\nextendedKeyUsage = serverAuth\n",
        )
        .unwrap();
        openssl(&[
            "x509",
            "-req",
            "-days",
            "2",
            "-set_serial",
            "1",
            "-in",
            "server.csr",
            "-CA",
            "ca.crt",
            "-CAkey",
            "ca.key",
            "-extfile",
            "ext",
            "-out",
            "server.crt",
        ]);
        (p("ca.crt"), p("server.crt"), p("server.key"))
    }

    /// The node's client and its server, each through the node's provider.
    #[test]
    fn the_http_client_speaks_tls_13_trusting_the_given_authorities_only() {
        let dir = std::env::temp_dir().join(format!("nvr-node-tls-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let (ca, cert, key) = certificates(&dir);
        let server = ServerTls::given(&cert, &key).unwrap().config;
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!(
            "https://127.0.0.1:{}/",
            listener.local_addr().unwrap().port()
        );
        let serving = std::thread::spawn(move || {
            // Two connections: the trusting client's, then the other's.
            for _ in 0..2 {
                let (tcp, _) = listener.accept().unwrap();
                let mut tls = StreamOwned::new(ServerConnection::new(server.clone()).unwrap(), tcp);
                let mut head = [0u8; 512];
                if tls.read(&mut head).is_ok() {
                    let suite = tls.conn.negotiated_cipher_suite().unwrap().suite();
                    assert_eq!(suite, rustls::CipherSuite::TLS13_AES_256_GCM_SHA384);
                    let _ = tls.write_all(
                        b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\nConnection: close\r\n\r\nhello",
                    );
                    let _ = tls.flush();
                }
            }
        });
        let agent = |connector: Arc<Connector>| {
            ureq::AgentBuilder::new()
                .tls_connector(connector)
                .timeout(std::time::Duration::from_secs(10))
                .build()
        };
        let trusting = Connector {
            config: Some(client_config(Some(&ca)).unwrap()),
        };
        let body = agent(Arc::new(trusting))
            .get(&url)
            .call()
            .unwrap()
            .into_string()
            .unwrap();
        assert_eq!(body, "hello");
        // The system's authorities do not know the test's CA.
        let other = Connector {
            config: Some(
                client_config(Some(Path::new("/etc/ssl/certs/ca-certificates.crt"))).unwrap(),
            ),
        };
        let refused = agent(Arc::new(other)).get(&url).call().unwrap_err();
        assert!(refused.to_string().contains("certificate"), "{refused}");
        serving.join().unwrap();
        let missing = client_config(Some(&dir.join("none.pem"))).unwrap_err();
        assert!(
            missing.starts_with("cannot read the certificate authorities in"),
            "{missing}"
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
