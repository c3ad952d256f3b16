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
                let len = bytes.len() as u64;
                Response::new(
                    status,
                    headers,
                    Box::new(Cursor::new(bytes)) as _,
                    Some(len),
                    None,
                )
            }
            Body::Shared(bytes) => Response::from_shared(status, headers, bytes).boxed(),
            Body::Stream(reader, len) => Response::new(status, headers, reader, Some(len), None),
        };
        // With a known length, always Content-Length rather than chunks:
        // media players need it to ask for ranges.
        response.with_chunked_threshold(u64::MAX)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{self, Write};

    /// Keeps the first 4 KiB written to it, then fails: the head of a
    /// response, and no more of a long body.
    #[derive(Default)]
    struct Head(Vec<u8>);

    impl Write for Head {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let room = 4096 - self.0.len();
            if room == 0 {
                return Err(io::Error::other("only the head is wanted"));
            }
            let n = buf.len().min(room);
            self.0.extend_from_slice(&buf[..n]);
            Ok(n)
        }

        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// The head tiny_http sends for `reply` to an HTTP/1.1 request.
    fn head(reply: Reply) -> String {
        let mut out = Head::default();
        // It fails once the head is out, the body being longer than 4 KiB.
        let _ = reply
            .into_response()
            .raw_print(&mut out, (1, 1).into(), &[], false, None);
        let text = String::from_utf8_lossy(&out.0);
        // Each header line with its CRLF.
        let end = text.find("\r\n\r\n").map_or(text.len(), |at| at + 2);
        text[..end].to_owned()
    }

    /// A download of over 4 GiB (an hour of a 4K camera) has its length,
    /// not what is left of it modulo 2^32 on a 32-bit board.
    #[test]
    fn bodies_over_4_gib_keep_their_length() {
        for len in [5 << 30, (4 << 30) + 100, 1 << 32] {
            let body = Box::new(io::repeat(0).take(len));
            let head = head(Reply::stream(200, "video/mp4", body, len));
            assert!(
                head.contains(&format!("\r\nContent-Length: {len}\r\n")),
                "{len}: {head}"
            );
            assert!(!head.contains("Transfer-Encoding"), "{len}: {head}");
        }
    }
}
