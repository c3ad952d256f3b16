//! Media responses (recordings, clips, thumbnails): a resource of a known
//! length, sent whole (200) or by the range asked for (206 with
//! `Content-Range`, 416 past its end), with `Accept-Ranges: bytes`, so that
//! a player can seek.

use std::io::Read;

use crate::error::{Error, Kind};
use crate::web::range::{Ranged, ranged};
use crate::web::reply::Reply;

/// The reply for `len` bytes of `content_type` and the `Range` header
/// `range`; `read(start, end)` reads bytes `start..end` as they are sent.
pub fn reply(
    content_type: &'static str,
    len: u64,
    range: Option<&str>,
    read: impl FnOnce(u64, u64) -> std::io::Result<Box<dyn Read + Send>>,
) -> Result<Reply, Error> {
    let failed = |e: std::io::Error| Error::internal("media", &e);
    let reply = match ranged(range, len) {
        Ranged::Whole => Reply::stream(200, content_type, read(0, len).map_err(failed)?, len),
        Ranged::Part { start, last } => Reply::stream(
            206,
            content_type,
            read(start, last + 1).map_err(failed)?,
            last + 1 - start,
        )
        .with_header("Content-Range", format!("bytes {start}-{last}/{len}")),
        Ranged::Unsatisfiable => {
            let error = Error::new(Kind::RangeNotSatisfiable, "the range is beyond the end");
            return Ok(Reply::error(&error).with_header("Content-Range", format!("bytes */{len}")));
        }
    };
    Ok(reply.with_header("Accept-Ranges", "bytes"))
}
