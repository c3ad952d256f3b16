//! The node's HTTPS: rustls's server configuration, TLS 1.3 through the
//! node's provider, for the certificate and key given (`TLS_CERT_FILE`,
//! `TLS_KEY_FILE`) or for the node's own (`own.rs`).

use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use rustls::ServerConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use rustls::sign::{CertifiedKey, SingleCertAndKey};

use super::{own, x509};

/// The TLS of the node's HTTPS, and what its API shows of it.
pub struct ServerTls {
    pub config: Arc<ServerConfig>,
    /// The node's own authority's certificate (PEM), to install on phones;
    /// None when the certificate was given.
    pub authority_pem: Option<String>,
    /// When the certificate served ends, in ms since the epoch.
    pub not_after_ms: i64,
}

impl ServerTls {
    /// HTTPS with the chain of `certificate_file` and the key of `key_file`.
    pub fn given(certificate_file: &Path, key_file: &Path) -> Result<ServerTls, String> {
        let read = |name: &str, path: &Path| {
            std::fs::read(path).map_err(|e| format!("cannot read {name} {}: {e}", path.display()))
        };
        let chain = super::pem_certificates(&read("TLS_CERT_FILE", certificate_file)?)
            .ok()
            .filter(|chain| !chain.is_empty());
        let fields = chain.as_ref().and_then(|chain| x509::read(&chain[0]));
        let (Some(chain), Some(fields)) = (&chain, fields) else {
            return Err(format!(
                "TLS_CERT_FILE {} holds no PEM certificate (-----BEGIN CERTIFICATE-----)",
                certificate_file.display()
            ));
        };
        let not_after_ms = fields.not_after_ms;
        let key = super::pem_private_key(&read("TLS_KEY_FILE", key_file)?).map_err(|_| {
            format!(
                "TLS_KEY_FILE {} holds no PEM private key (PKCS#8 or SEC1, not encrypted)",
                key_file.display()
            )
        })?;
        let config = config(chain.clone(), key)
            .map_err(|e| format!("TLS_KEY_FILE {}: {e}", key_file.display()))?;
        Ok(ServerTls {
            config,
            authority_pem: None,
            not_after_ms,
        })
    }

    /// HTTPS with the node's own certificate, kept in `dir` (DATA_DIR/tls),
    /// for the host name `host` and the private ones of `addresses`.
    pub fn own(
        dir: &Path,
        node_name: &str,
        host: &str,
        addresses: &[IpAddr],
        now_ms: i64,
    ) -> Result<ServerTls, String> {
        let own = own::certificate(dir, node_name, host, addresses, now_ms)?;
        let key = PrivateKeyDer::Pkcs8(own.key.into());
        let config = config(vec![own.certificate.into()], key)
            .map_err(|e| format!("the node's own certificate in {}: {e}", dir.display()))?;
        log::info!(
            "HTTPS with the node's own certificate for {} until {}, by its authority {}",
            own.names.list(),
            humantime::format_rfc3339_seconds(
                std::time::UNIX_EPOCH + std::time::Duration::from_millis(own.not_after_ms as u64)
            ),
            dir.join("ca.crt").display(),
        );
        Ok(ServerTls {
            config,
            authority_pem: Some(own.authority_pem),
            not_after_ms: own.not_after_ms,
        })
    }
}

/// TLS 1.3 through the node's provider, showing `chain` and signing with
/// `key`, whose faults are said in plain words.
fn config(
    chain: Vec<CertificateDer<'static>>,
    key: PrivateKeyDer<'static>,
) -> Result<Arc<ServerConfig>, String> {
    let provider = Arc::new(super::provider());
    let signing_key = provider.key_provider.load_private_key(key).map_err(|_| {
        "not an ECDSA key on P-256 or P-384, the keys the node takes (RSA and Ed25519 keys \
         are refused): make one with openssl ecparam -name prime256v1 -genkey -noout -out \
         key.pem, or mkcert -ecdsa, and a certificate for it"
    })?;
    let certified = CertifiedKey::new(chain, signing_key);
    if certified.keys_match().is_err() {
        return Err("not the key of the certificate".into());
    }
    let config = ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| format!("TLS: {e}"))?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(SingleCertAndKey::from(certified)));
    Ok(Arc::new(config))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;
    use std::process::Command;

    use super::*;

    /// Runs openssl with `args` in `dir`, which must succeed.
    fn openssl(dir: &Path, args: &[&str]) {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("run openssl (Debian package openssl)");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
    }

    /// A key made by `args` (openssl's, writing to `NAME.key`) and a
    /// certificate of it, `NAME.crt`.
    fn key_and_certificate(dir: &Path, name: &str, args: &[&str]) -> (PathBuf, PathBuf) {
        let key = format!("{name}.key");
        let args: Vec<&str> = args
            .iter()
            .map(|a| if *a == "OUT" { key.as_str() } else { a })
            .collect();
        openssl(dir, &args);
        let cert = format!("{name}.crt");
        let req = [
            "req",
            "-x509",
            "-days",
            "1",
            "-subj",
            "/CN=127.0.0.1",
            "-key",
            &key,
            "-out",
            &cert,
        ];
        openssl(dir, &req);
        (dir.join(key), dir.join(cert))
    }

    #[test]
    fn ecdsa_keys_on_p256_and_p384_are_taken_and_others_refused_in_plain_words() {
        let dir = std::env::temp_dir().join(format!("nvr-node-keys-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let d = dir.as_path();
        let taken = [
            (
                "p256",
                &[
                    "genpkey",
                    "-algorithm",
                    "EC",
                    "-pkeyopt",
                    "ec_paramgen_curve:P-256",
                    "-out",
                    "OUT",
                ][..],
            ),
            (
                "p384-sec1",
                &[
                    "ecparam",
                    "-name",
                    "secp384r1",
                    "-genkey",
                    "-noout",
                    "-out",
                    "OUT",
                ],
            ),
            (
                "p256-sec1-with-parameters",
                &["ecparam", "-name", "prime256v1", "-genkey", "-out", "OUT"],
            ),
        ];
        for (name, args) in taken {
            let (key, cert) = key_and_certificate(d, name, args);
            let tls = ServerTls::given(&cert, &key).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert_eq!(tls.authority_pem, None);
            let day = 24 * 3600 * 1000;
            let now = crate::clock::now_ms();
            assert!((tls.not_after_ms - now - day).abs() < 600_000, "{name}");
        }
        let refused = [
            (
                "rsa",
                &[
                    "genpkey",
                    "-algorithm",
                    "RSA",
                    "-pkeyopt",
                    "rsa_keygen_bits:2048",
                    "-out",
                    "OUT",
                ][..],
            ),
            (
                "rsa-pkcs1",
                &["genrsa", "-traditional", "-out", "OUT", "2048"],
            ),
            (
                "ed25519",
                &["genpkey", "-algorithm", "ED25519", "-out", "OUT"],
            ),
            (
                "p521",
                &[
                    "ecparam",
                    "-name",
                    "secp521r1",
                    "-genkey",
                    "-noout",
                    "-out",
                    "OUT",
                ],
            ),
        ];
        for (name, args) in refused {
            let (key, cert) = key_and_certificate(d, name, args);
            let error = ServerTls::given(&cert, &key)
                .err()
                .unwrap_or_else(|| panic!("{name} taken"));
            assert!(
                error.starts_with(&format!("TLS_KEY_FILE {}: not an ECDSA key", key.display()))
                    && error.contains("openssl ecparam -name prime256v1 -genkey")
                    && error.contains("mkcert -ecdsa"),
                "{name}: {error}"
            );
        }
        let error =
            |cert: &str, key: &str| ServerTls::given(&d.join(cert), &d.join(key)).err().unwrap();
        assert_eq!(
            error("p256.crt", "p384-sec1.key"),
            format!(
                "TLS_KEY_FILE {}: not the key of the certificate",
                d.join("p384-sec1.key").display()
            )
        );
        assert!(error("p256.crt", "none.key").starts_with("cannot read TLS_KEY_FILE"));
        assert!(error("none.crt", "p256.key").starts_with("cannot read TLS_CERT_FILE"));
        assert!(error("p256.key", "p256.key").contains("holds no PEM certificate"));
        assert!(error("p256.crt", "p256.crt").contains("holds no PEM private key"));
        openssl(
            d,
            &[
                "pkcs8",
                "-topk8",
                "-in",
                "p256.key",
                "-out",
                "locked.key",
                "-passout",
                "pass:x",
            ],
        );
        assert!(error("p256.crt", "locked.key").contains("not encrypted"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
