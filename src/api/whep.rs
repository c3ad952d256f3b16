//! `POST /api/whep/{cameraId}`: forwards a browser's SDP offer to the relay
//! and returns its answer, so the browser never talks to the relay itself.

use uuid::Uuid;

use super::no_such_camera;
use crate::app::App;
use crate::error::{Error, Kind};
use crate::http::Reply;
use crate::relay::RelayError;

pub fn offer(app: &App, id: Uuid, body: Vec<u8>) -> Result<Reply, Error> {
    let offer =
        String::from_utf8(body).map_err(|_| Error::bad_request("SDP offer must be UTF-8 text"))?;
    if offer.trim().is_empty() {
        return Err(Error::bad_request("missing or empty SDP offer"));
    }
    if !offer.trim_start().starts_with("v=") {
        return Err(Error::bad_request(
            "body is not an SDP offer (it must start with v=)",
        ));
    }
    app.db(|s| s.camera(id))?.ok_or_else(no_such_camera)?;
    match app.relay.whep(&id.to_string(), &offer) {
        Ok(answer) => Ok(Reply::bytes(201, "application/sdp", answer.into_bytes())),
        Err(e) => {
            // The relay's own text can carry the camera password: only the kind is logged or shown.
            log::warn!("whep: camera {id}: {e}");
            let message = match e {
                RelayError::Unreachable => "stream relay unreachable",
                RelayError::Status(404) => "stream unavailable on the relay",
                RelayError::Status(_) | RelayError::EmptyAnswer => {
                    "stream relay could not start the stream"
                }
            };
            Err(Error::new(Kind::BadGateway, message))
        }
    }
}
