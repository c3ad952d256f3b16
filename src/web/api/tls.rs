//! The node's HTTPS as the API shows it: `GET /api/tls/ca.crt`, the node's
//! own certificate authority, to install on a phone so that it trusts the
//! node's certificate; and the `https` of `/api/status`.

use serde::Serialize;

use crate::error::Error;
use crate::event::format_timestamp;
use crate::tls::ServerTls;
use crate::web::reply::Reply;

/// The node's HTTPS: its port and its TLS.
pub struct Https {
    pub port: u16,
    pub tls: ServerTls,
}

/// The authority's certificate (PEM), for a phone to install.
pub fn authority(https: Option<&Https>) -> Result<Reply, Error> {
    let Some(https) = https else {
        return Err(Error::not_found(
            "HTTPS is off: with HTTPS_PORT set, the node makes its own certificate authority",
        ));
    };
    let Some(pem) = &https.tls.authority_pem else {
        return Err(Error::not_found(
            "the node's HTTPS shows the certificate it was given (TLS_CERT_FILE): it has no \
             authority of its own to install",
        ));
    };
    let reply = Reply::bytes(200, "application/x-x509-ca-cert", pem.as_bytes().to_vec());
    Ok(reply.with_header(
        "Content-Disposition",
        "attachment; filename=\"nvr-node-ca.crt\"",
    ))
}

/// `{"port", "certificate": "own" | "given", "expiresAt"}`.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HttpsView {
    port: u16,
    certificate: &'static str,
    expires_at: String,
}

impl HttpsView {
    pub fn new(https: &Https) -> HttpsView {
        HttpsView {
            port: https.port,
            certificate: match https.tls.authority_pem {
                Some(_) => "own",
                None => "given",
            },
            expires_at: format_timestamp(https.tls.not_after_ms),
        }
    }
}
