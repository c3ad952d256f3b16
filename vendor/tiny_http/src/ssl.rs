//! TLS, through rustls (an nvr-node patch: upstream also had an OpenSSL
//! backend, and built rustls 0.20's configuration from PEM files; the server
//! is now given a ready rustls 0.23 configuration, [`crate::SslConfig`]).

#[cfg(feature = "ssl-rustls")]
pub(crate) mod rustls;
#[cfg(feature = "ssl-rustls")]
pub(crate) use self::rustls::RustlsStream as SslStream;
