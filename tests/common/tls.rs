//! A TLS 1.3 client for the node's HTTPS that trusts one authority, so that
//! tests control every byte they send over TLS too.

use std::net::TcpStream;
use std::sync::Arc;
use std::time::Duration;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use rustls::{ClientConfig, ClientConnection, RootCertStore, StreamOwned};

use super::http::{self, Response};

/// A client trusting only the authority (PEM) `ca`.
pub fn client(ca: &[u8]) -> Arc<ClientConfig> {
    let mut roots = RootCertStore::empty();
    for certificate in CertificateDer::pem_slice_iter(ca) {
        roots.add(certificate.expect("a PEM certificate")).unwrap();
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = ClientConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    Arc::new(config)
}

/// A TLS connection to 127.0.0.1:`port`, checked against `name`; the
/// handshake is made by the first read or write.
pub fn connect(
    config: &Arc<ClientConfig>,
    port: u16,
    name: &str,
) -> StreamOwned<ClientConnection, TcpStream> {
    let tcp = TcpStream::connect(("127.0.0.1", port)).expect("connect to the node's HTTPS");
    tcp.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
    let name = ServerName::try_from(name.to_owned()).unwrap();
    let connection = ClientConnection::new(config.clone(), name).unwrap();
    StreamOwned::new(connection, tcp)
}

/// Sends one request over a new TLS connection to 127.0.0.1:`port`.
pub fn request(
    config: &Arc<ClientConfig>,
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &[u8],
) -> Response {
    let stream = connect(config, port, "127.0.0.1");
    let authority = format!("127.0.0.1:{port}");
    http::exchange(stream, &authority, method, path, headers, body)
}
