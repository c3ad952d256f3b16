//! Responses as handlers build them: a status, headers and a body that is
//! either in memory or read as it is sent (a recording streamed from its
//! files), and how one becomes tiny_http's response.

use std::io::{Cursor, Read};
use std::sync::Arc;

use serde::Serialize;
use tiny_http::{Header, Response};

use crate::error::{Error, Kind};

/// What a response carries.
pub enum Body {
    Bytes(Vec<u8>),
    /// Bytes kept for other responses too (the cached status), sent with
    /// the head in one vectored write (`sendmsg`), never copied.
    Shared(Arc<[u8]>),
    /// `len` bytes, read as they are sent.
    Stream(Box<dyn Read + Send>, u64),
}

impl std::fmt::Debug for Body {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Body::Bytes(bytes) => write!(f, "{} bytes", bytes.len()),
            Body::Shared(bytes) => write!(f, "{} shared bytes", bytes.len()),
            Body::Stream(_, len) => write!(f, "a stream of {len} bytes"),
        }
    }
}

/// A response as handlers build it.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    content_type: Option<&'static str>,
    body: Body,
    headers: Vec<(&'static str, String)>,
}

impl Reply {
    fn new(status: u16, content_type: Option<&'static str>, body: Body) -> Reply {
        Reply {
            status,
            content_type,
            body,
            headers: Vec::new(),
        }
    }

    pub fn bytes(status: u16, content_type: &'static str, body: Vec<u8>) -> Reply {
        Reply::new(status, Some(content_type), Body::Bytes(body))
    }

    pub fn shared(status: u16, content_type: &'static str, body: Arc<[u8]>) -> Reply {
        Reply::new(status, Some(content_type), Body::Shared(body))
    }

    /// `len` bytes of `content_type` read from `body` while they are sent.
    pub fn stream(
        status: u16,
        content_type: &'static str,
        body: Box<dyn Read + Send>,
        len: u64,
    ) -> Reply {
        Reply::new(status, Some(content_type), Body::Stream(body, len))
    }

    pub fn json(status: u16, value: &impl Serialize) -> Reply {
        let body = serde_json::to_vec(value).expect("response types serialize");
        Reply::bytes(status, "application/json", body)
    }

    pub fn no_content() -> Reply {
        Reply::empty(204)
    }

    /// `status` without a body (204, 304).
    pub fn empty(status: u16) -> Reply {
        Reply::new(status, None, Body::Bytes(Vec::new()))
    }

    /// `{"error": "<message>"}`, with `Allow` for 405 and `Retry-After` for 503.
    pub fn error(error: &Error) -> Reply {
        let reply = Reply::json(
            error.kind.status(),
            &serde_json::json!({ "error": error.message }),
        );
        match (error.allow, error.kind) {
            (Some(allow), _) => reply.with_header("Allow", allow),
            (None, Kind::Unavailable) => reply.with_header("Retry-After", "1"),
            (None, _) => reply,
        }
    }

    pub fn with_header(mut self, name: &'static str, value: impl Into<String>) -> Reply {
        self.headers.push((name, value.into()));
        self
    }

    /// The value of header `name` added by `with_header`.
    #[cfg(test)]
    pub fn header(&self, name: &str) -> Option<&str> {
        let found = self
            .headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name));
        found.map(|(_, value)| value.as_str())
    }

    pub fn into_response(self) -> Response<Box<dyn Read + Send>> {
        let content_type = self.content_type.map(|t| ("Content-Type", t.to_owned()));
        let headers = content_type
            .into_iter()
            .chain(self.headers)
            .filter_map(|(name, value)| Header::from_bytes(name, value).ok())
            .collect();
        let status = self.status.into();
        let response = match self.body {
            Body::Bytes(bytes) => {
                let len = bytes.len();
                Response::new(
                    status,
                    headers,
                    Box::new(Cursor::new(bytes)) as _,
                    Some(len),
                    None,
                )
            }
            Body::Shared(bytes) => Response::from_shared(status, headers, bytes).boxed(),
            Body::Stream(reader, len) => {
                Response::new(status, headers, reader, Some(len as usize), None)
            }
        };
        // With a known length, always Content-Length rather than chunks:
        // media players need it to ask for ranges.
        response.with_chunked_threshold(usize::MAX)
    }
}
