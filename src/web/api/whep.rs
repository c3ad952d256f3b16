//! `/api/whep/{cameraId}`: forwards a browser's SDP offer to the relay and
//! returns its answer, so the browser never talks to the relay itself; the
//! answer names a session resource whose `DELETE` ends the session.

use uuid::Uuid;

use super::no_such_camera;
use crate::app::App;
use crate::background::relay_sync::stream_name;
use crate::error::{Error, Kind};
use crate::relay::client::RelayError;
use crate::web::query;
use crate::web::reply::Reply;

/// `POST /api/whep/{id}[?stream=main|sub]` with an SDP offer.
pub fn offer(app: &App, id: Uuid, query: &str, body: Vec<u8>) -> Result<Reply, Error> {
    let sub = wants_sub_stream(query)?;
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
    let camera = app.db(|s| s.camera(id))?.ok_or_else(no_such_camera)?;
    if sub && camera.settings.rtsp_sub_url.is_none() {
        return Err(Error::not_found("this camera has no sub stream"));
    }
    if !camera.settings.enabled {
        return Err(Error::new(Kind::BadGateway, "the camera is disabled"));
    }
    let answer = app.relay.whep(&stream_name(id, sub), &offer).map_err(|e| {
        // The relay's own text can carry the camera password: only the kind is logged or shown.
        log::warn!("whep: camera {id}: {e}");
        Error::new(
            Kind::BadGateway,
            match e {
                RelayError::Unreachable => "stream relay unreachable",
                RelayError::Status(404) => "stream unavailable on the relay",
                RelayError::Status(_) | RelayError::EmptyAnswer => {
                    "stream relay could not start the stream (is the camera on?)"
                }
            },
        )
    })?;
    let session = app.whep_sessions.open(id, answer.location);
    Ok(
        Reply::bytes(201, "application/sdp", answer.sdp.into_bytes())
            .with_header("Location", format!("/api/whep/{id}/{session}")),
    )
}

fn wants_sub_stream(query: &str) -> Result<bool, Error> {
    match query::param(query, "stream")?.as_deref() {
        None | Some("main") => Ok(false),
        Some("sub") => Ok(true),
        Some(_) => Err(Error::bad_request("stream must be main or sub")),
    }
}

/// `OPTIONS /api/whep/{id}`: what the endpoint takes; no CORS, the UI is same-origin.
pub fn options() -> Result<Reply, Error> {
    Ok(Reply::no_content()
        .with_header("Allow", "POST, OPTIONS")
        .with_header("Accept-Post", "application/sdp"))
}

/// `DELETE /api/whep/{id}/{session}`: ends the session, on the relay too where it named one.
pub fn end(app: &App, camera: Uuid, session: Uuid) -> Result<Reply, Error> {
    let session = app
        .whep_sessions
        .close(camera, session)
        .ok_or_else(|| Error::not_found("no such session"))?;
    if let Some(location) = session.relay_location
        && let Err(e) = app.relay.end_session(&location)
    {
        log::info!("whep: ending the relay's session for camera {camera}: {e}");
    }
    Ok(Reply::no_content())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_choice() {
        let table = [
            ("", Ok(false)),
            ("stream=main", Ok(false)),
            ("stream=sub", Ok(true)),
            ("x=1&stream=sub", Ok(true)),
            ("stream=main&stream=sub", Ok(true)),
        ];
        for (query, want) in table {
            assert_eq!(wants_sub_stream(query), want, "{query}");
        }
        for query in ["stream=", "stream=hd", "stream=SUB"] {
            assert_eq!(
                wants_sub_stream(query).unwrap_err().kind,
                Kind::BadRequest,
                "{query}"
            );
        }
    }
}
