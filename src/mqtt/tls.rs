//! TLS to the broker (`mqtts://`) through the rustls the HTTP client
//! already links: the authorities from `MQTT_CA_FILE`, else the system's
//! bundle, else the Mozilla roots built in.

use std::path::Path;
use std::sync::Arc;

use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;

/// Where Debian, Ubuntu, Alpine and Buildroot keep the system's authorities.
const SYSTEM_BUNDLE: &str = "/etc/ssl/certs/ca-certificates.crt";

pub fn client_config(ca_file: Option<&Path>) -> Result<Arc<rustls::ClientConfig>, String> {
    let mut roots = RootCertStore::empty();
    match ca_file {
        Some(file) => {
            let (added, _) = roots.add_parsable_certificates(read_pem(file)?);
            if added == 0 {
                return Err(format!("MQTT_CA_FILE {}: no certificate", file.display()));
            }
        }
        None => {
            let system = read_pem(Path::new(SYSTEM_BUNDLE)).unwrap_or_default();
            if roots.add_parsable_certificates(system).0 == 0 {
                roots.extend(webpki_roots::TLS_SERVER_ROOTS.iter().cloned());
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS12, &rustls::version::TLS13])
        .map_err(|e| format!("TLS: {e}"))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(config))
}

fn read_pem(file: &Path) -> Result<Vec<CertificateDer<'static>>, String> {
    let bytes = std::fs::read(file)
        .map_err(|e| format!("cannot read MQTT_CA_FILE {}: {e}", file.display()))?;
    CertificateDer::pem_slice_iter(&bytes)
        .collect::<Result<_, _>>()
        .map_err(|e| format!("MQTT_CA_FILE {}: not PEM certificates: {e}", file.display()))
}
