//! The node's error type and the one table that maps error kinds to HTTP statuses.

use std::fmt;

/// What went wrong, independent of how it is reported.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    BadRequest,
    Forbidden,
    NotFound,
    MethodNotAllowed,
    NotAcceptable,
    /// The request is sound but the state forbids it (a budget is spent).
    Conflict,
    RequestTimeout,
    PayloadTooLarge,
    UriTooLong,
    UnsupportedMediaType,
    RangeNotSatisfiable,
    TooManyRequests,
    BadGateway,
    Unavailable,
    InsufficientStorage,
    Internal,
}

impl Kind {
    /// The HTTP status for each kind: the only place this mapping is written.
    pub fn status(self) -> u16 {
        match self {
            Kind::BadRequest => 400,
            Kind::Forbidden => 403,
            Kind::NotFound => 404,
            Kind::MethodNotAllowed => 405,
            Kind::NotAcceptable => 406,
            Kind::Conflict => 409,
            Kind::RequestTimeout => 408,
            Kind::PayloadTooLarge => 413,
            Kind::UriTooLong => 414,
            Kind::UnsupportedMediaType => 415,
            Kind::RangeNotSatisfiable => 416,
            Kind::TooManyRequests => 429,
            Kind::Internal => 500,
            Kind::BadGateway => 502,
            Kind::Unavailable => 503,
            Kind::InsufficientStorage => 507,
        }
    }
}

/// An error with a plain message that is safe to show to the client: it never
/// carries a camera URL or the text of a child process or the relay.
#[derive(Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: Kind,
    pub message: String,
    /// The `Allow` header value, for [`Kind::MethodNotAllowed`].
    pub allow: Option<&'static str>,
}

impl Error {
    pub fn new(kind: Kind, message: impl Into<String>) -> Error {
        Error {
            kind,
            message: message.into(),
            allow: None,
        }
    }

    pub fn bad_request(message: impl Into<String>) -> Error {
        Error::new(Kind::BadRequest, message)
    }

    pub fn not_found(message: impl Into<String>) -> Error {
        Error::new(Kind::NotFound, message)
    }

    pub fn method_not_allowed(allow: &'static str) -> Error {
        Error {
            allow: Some(allow),
            ..Error::new(Kind::MethodNotAllowed, "method not allowed")
        }
    }

    /// An internal failure: the details go to the log, the client gets a generic message.
    pub fn internal(context: &str, err: &dyn fmt::Display) -> Error {
        log::error!("{context}: {err}");
        Error::new(Kind::Internal, "internal error")
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn statuses() {
        let table = [
            (Kind::BadRequest, 400),
            (Kind::Forbidden, 403),
            (Kind::NotFound, 404),
            (Kind::MethodNotAllowed, 405),
            (Kind::NotAcceptable, 406),
            (Kind::Conflict, 409),
            (Kind::RequestTimeout, 408),
            (Kind::PayloadTooLarge, 413),
            (Kind::UriTooLong, 414),
            (Kind::UnsupportedMediaType, 415),
            (Kind::RangeNotSatisfiable, 416),
            (Kind::Internal, 500),
            (Kind::BadGateway, 502),
            (Kind::Unavailable, 503),
            (Kind::InsufficientStorage, 507),
        ];
        for (kind, status) in table {
            assert_eq!(kind.status(), status, "{kind:?}");
        }
    }
}
