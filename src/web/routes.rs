//! Routing: a pure function from (method, path) to the route it names.

use uuid::Uuid;

use crate::error::Error;

/// Every endpoint the node serves.
#[derive(Debug, PartialEq, Eq)]
pub enum Route {
    Status,
    Events,
    AddEvent,
    /// Marks an event reviewed or kept.
    UpdateEvent(Uuid),
    /// Marks reviewed the events a filter lets through, and undoes that.
    MarkReviewed,
    UnmarkReviewed,
    /// An event's clip, and its thumbnail.
    EventClip(Uuid),
    EventThumbnail(Uuid),
    ListCameras,
    AddCamera,
    UpdateCamera(Uuid),
    DeleteCamera(Uuid),
    ProbeCamera(Uuid),
    /// A camera's picture now, as a JPEG.
    CameraSnapshot(Uuid),
    /// What deleting a camera deletes with it.
    CameraStored(Uuid),
    /// The recorded spans of a camera.
    Recordings(Uuid),
    /// A stretch of a camera's recording as one MP4.
    RecordingMp4(Uuid),
    Whep(Uuid),
    WhepOptions(Uuid),
    /// Ends the WHEP session (camera, session) named in a 201's `Location`.
    EndWhepSession(Uuid, Uuid),
    /// Silences a camera's alerts for a while, and ends that.
    SnoozeCamera(Uuid),
    WakeCamera(Uuid),
    /// Alerts: whether they are on, where they go.
    Alerts,
    UpdateAlerts,
    AddDestination,
    UpdateDestination(Uuid),
    DeleteDestination(Uuid),
    /// Sends a test alert to a destination.
    TestDestination(Uuid),
    /// The node's settings a person may change in the UI.
    Settings,
    UpdateSettings,
    /// The ONVIF devices on the LAN, and the streams of one.
    Discover,
    DiscoverStreams,
    /// The node's own certificate authority, to install on a phone.
    CertificateAuthority,
    /// A file of the browser UI; the path is the URL path.
    Ui(String),
}

/// The kind of request body a route reads; routes not listed read none.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BodyKind {
    Json,
    Sdp,
}

impl BodyKind {
    pub fn content_type(self) -> &'static str {
        match self {
            BodyKind::Json => "application/json",
            BodyKind::Sdp => "application/sdp",
        }
    }
}

impl Route {
    pub fn body_kind(&self) -> Option<BodyKind> {
        match self {
            Route::AddCamera
            | Route::UpdateCamera(_)
            | Route::AddEvent
            | Route::UpdateEvent(_)
            | Route::MarkReviewed
            | Route::UnmarkReviewed
            | Route::DiscoverStreams
            | Route::SnoozeCamera(_)
            | Route::UpdateAlerts
            | Route::UpdateSettings
            | Route::AddDestination
            | Route::UpdateDestination(_) => Some(BodyKind::Json),
            Route::Whep(_) => Some(BodyKind::Sdp),
            _ => None,
        }
    }
}

/// Resolves a request. `path` excludes the query string.
pub fn route(method: &str, path: &str) -> Result<Route, Error> {
    let Some(api) = path.strip_prefix("/api/") else {
        return match method {
            "GET" | "HEAD" => Ok(Route::Ui(path.to_owned())),
            _ => Err(Error::method_not_allowed("GET, HEAD")),
        };
    };
    let segments: Vec<&str> = api.split('/').collect();
    let (allow, route) = match segments.as_slice() {
        ["status"] => ("GET", on(method, "GET", Route::Status)),
        ["tls", "ca.crt"] => ("GET", on(method, "GET", Route::CertificateAuthority)),
        ["events"] => match method {
            "GET" => ("GET, POST", Some(Route::Events)),
            "POST" => ("GET, POST", Some(Route::AddEvent)),
            _ => ("GET, POST", None),
        },
        ["events", "reviewed"] => ("POST", on(method, "POST", Route::MarkReviewed)),
        ["events", "unreviewed"] => ("POST", on(method, "POST", Route::UnmarkReviewed)),
        ["events", id] => {
            let id = uuid(id, "no such event")?;
            ("PATCH", on(method, "PATCH", Route::UpdateEvent(id)))
        }
        ["events", id, file @ ("clip.mp4" | "thumbnail.jpg")] => {
            let id = uuid(id, "no such event")?;
            let route = if *file == "clip.mp4" {
                Route::EventClip(id)
            } else {
                Route::EventThumbnail(id)
            };
            (
                "GET, HEAD",
                matches!(method, "GET" | "HEAD").then_some(route),
            )
        }
        ["cameras"] => match method {
            "GET" => ("GET, POST", Some(Route::ListCameras)),
            "POST" => ("GET, POST", Some(Route::AddCamera)),
            _ => ("GET, POST", None),
        },
        ["cameras", id] => {
            let id = camera(id)?;
            let route = match method {
                "PATCH" => Some(Route::UpdateCamera(id)),
                "DELETE" => Some(Route::DeleteCamera(id)),
                _ => None,
            };
            ("DELETE, PATCH", route)
        }
        ["cameras", id, "probe"] => ("POST", on(method, "POST", Route::ProbeCamera(camera(id)?))),
        ["cameras", id, "snapshot.jpg"] => {
            ("GET", on(method, "GET", Route::CameraSnapshot(camera(id)?)))
        }
        ["cameras", id, "stored"] => ("GET", on(method, "GET", Route::CameraStored(camera(id)?))),
        ["cameras", id, "recordings"] => ("GET", on(method, "GET", Route::Recordings(camera(id)?))),
        ["cameras", id, "recording.mp4"] => {
            let route = Route::RecordingMp4(camera(id)?);
            (
                "GET, HEAD",
                matches!(method, "GET" | "HEAD").then_some(route),
            )
        }
        ["cameras", id, "snooze"] => {
            let id = camera(id)?;
            let route = match method {
                "POST" => Some(Route::SnoozeCamera(id)),
                "DELETE" => Some(Route::WakeCamera(id)),
                _ => None,
            };
            ("DELETE, POST", route)
        }
        ["alerts"] => match method {
            "GET" => ("GET, PATCH", Some(Route::Alerts)),
            "PATCH" => ("GET, PATCH", Some(Route::UpdateAlerts)),
            _ => ("GET, PATCH", None),
        },
        ["alerts", "destinations"] => ("POST", on(method, "POST", Route::AddDestination)),
        ["alerts", "destinations", id] => {
            let id = uuid(id, "no such destination")?;
            let route = match method {
                "PATCH" => Some(Route::UpdateDestination(id)),
                "DELETE" => Some(Route::DeleteDestination(id)),
                _ => None,
            };
            ("DELETE, PATCH", route)
        }
        ["alerts", "destinations", id, "test"] => {
            let id = uuid(id, "no such destination")?;
            ("POST", on(method, "POST", Route::TestDestination(id)))
        }
        ["settings"] => match method {
            "GET" => ("GET, PATCH", Some(Route::Settings)),
            "PATCH" => ("GET, PATCH", Some(Route::UpdateSettings)),
            _ => ("GET, PATCH", None),
        },
        ["discover"] => ("POST", on(method, "POST", Route::Discover)),
        ["discover", "streams"] => ("POST", on(method, "POST", Route::DiscoverStreams)),
        ["whep", id] => {
            let id = camera(id)?;
            let route = match method {
                "POST" => Some(Route::Whep(id)),
                "OPTIONS" => Some(Route::WhepOptions(id)),
                _ => None,
            };
            ("POST, OPTIONS", route)
        }
        ["whep", id, session] => {
            let route = Route::EndWhepSession(camera(id)?, uuid(session, "no such session")?);
            ("DELETE", on(method, "DELETE", route))
        }
        _ => return Err(Error::not_found("no such API endpoint")),
    };
    route.ok_or_else(|| Error::method_not_allowed(allow))
}

fn on(method: &str, wanted: &str, route: Route) -> Option<Route> {
    (method == wanted).then_some(route)
}

fn camera(segment: &str) -> Result<Uuid, Error> {
    uuid(segment, "no such camera")
}

/// Ids are hyphenated UUIDs; anything else names nothing.
fn uuid(segment: &str, missing: &str) -> Result<Uuid, Error> {
    if segment.len() != 36 {
        return Err(Error::not_found(missing));
    }
    Uuid::try_parse(segment).map_err(|_| Error::not_found(missing))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::error::Kind;

    const ID: &str = "0f8fad5b-d9cb-469f-a165-70867728950e";

    fn id() -> Uuid {
        Uuid::parse_str(ID).unwrap()
    }

    #[test]
    fn routes() {
        let ok = [
            ("GET", "/api/status".to_owned(), Route::Status),
            ("GET", "/api/events".to_owned(), Route::Events),
            ("POST", "/api/events".to_owned(), Route::AddEvent),
            (
                "PATCH",
                format!("/api/events/{ID}"),
                Route::UpdateEvent(id()),
            ),
            (
                "POST",
                "/api/events/reviewed".to_owned(),
                Route::MarkReviewed,
            ),
            (
                "POST",
                "/api/events/unreviewed".to_owned(),
                Route::UnmarkReviewed,
            ),
            (
                "GET",
                format!("/api/events/{ID}/clip.mp4"),
                Route::EventClip(id()),
            ),
            (
                "HEAD",
                format!("/api/events/{ID}/thumbnail.jpg"),
                Route::EventThumbnail(id()),
            ),
            ("GET", "/api/cameras".to_owned(), Route::ListCameras),
            ("POST", "/api/cameras".to_owned(), Route::AddCamera),
            ("POST", "/api/discover".to_owned(), Route::Discover),
            (
                "POST",
                "/api/discover/streams".to_owned(),
                Route::DiscoverStreams,
            ),
            (
                "DELETE",
                format!("/api/cameras/{ID}"),
                Route::DeleteCamera(id()),
            ),
            (
                "PATCH",
                format!("/api/cameras/{ID}"),
                Route::UpdateCamera(id()),
            ),
            (
                "DELETE",
                format!("/api/cameras/{}", ID.to_uppercase()),
                Route::DeleteCamera(id()),
            ),
            (
                "POST",
                format!("/api/cameras/{ID}/probe"),
                Route::ProbeCamera(id()),
            ),
            (
                "GET",
                format!("/api/cameras/{ID}/snapshot.jpg"),
                Route::CameraSnapshot(id()),
            ),
            (
                "GET",
                format!("/api/cameras/{ID}/stored"),
                Route::CameraStored(id()),
            ),
            (
                "GET",
                format!("/api/cameras/{ID}/recordings"),
                Route::Recordings(id()),
            ),
            (
                "GET",
                format!("/api/cameras/{ID}/recording.mp4"),
                Route::RecordingMp4(id()),
            ),
            (
                "HEAD",
                format!("/api/cameras/{ID}/recording.mp4"),
                Route::RecordingMp4(id()),
            ),
            ("POST", format!("/api/whep/{ID}"), Route::Whep(id())),
            (
                "OPTIONS",
                format!("/api/whep/{ID}"),
                Route::WhepOptions(id()),
            ),
            (
                "DELETE",
                format!("/api/whep/{ID}/{ID}"),
                Route::EndWhepSession(id(), id()),
            ),
            (
                "POST",
                format!("/api/cameras/{ID}/snooze"),
                Route::SnoozeCamera(id()),
            ),
            (
                "DELETE",
                format!("/api/cameras/{ID}/snooze"),
                Route::WakeCamera(id()),
            ),
            ("GET", "/api/alerts".to_owned(), Route::Alerts),
            ("PATCH", "/api/alerts".to_owned(), Route::UpdateAlerts),
            ("GET", "/api/settings".to_owned(), Route::Settings),
            ("PATCH", "/api/settings".to_owned(), Route::UpdateSettings),
            (
                "POST",
                "/api/alerts/destinations".to_owned(),
                Route::AddDestination,
            ),
            (
                "PATCH",
                format!("/api/alerts/destinations/{ID}"),
                Route::UpdateDestination(id()),
            ),
            (
                "DELETE",
                format!("/api/alerts/destinations/{ID}"),
                Route::DeleteDestination(id()),
            ),
            (
                "POST",
                format!("/api/alerts/destinations/{ID}/test"),
                Route::TestDestination(id()),
            ),
            (
                "GET",
                "/api/tls/ca.crt".to_owned(),
                Route::CertificateAuthority,
            ),
            ("GET", "/".to_owned(), Route::Ui("/".to_owned())),
            (
                "HEAD",
                "/index.html".to_owned(),
                Route::Ui("/index.html".to_owned()),
            ),
            ("GET", "/api".to_owned(), Route::Ui("/api".to_owned())),
        ];
        for (method, path, want) in ok {
            assert_eq!(route(method, &path), Ok(want), "{method} {path}");
        }
    }

    #[test]
    fn errors() {
        let simple = "0f8fad5bd9cb469fa16570867728950e";
        let braced = "{0f8fad5b-d9cb-469f-a165-70867728950e}";
        let bad = [
            ("GET", "/api/".to_owned(), Kind::NotFound, None),
            ("GET", "/api/nope".to_owned(), Kind::NotFound, None),
            ("GET", "/api/status/".to_owned(), Kind::NotFound, None),
            ("GET", "/api/cameras/".to_owned(), Kind::NotFound, None),
            (
                "GET",
                "/api/discover".to_owned(),
                Kind::MethodNotAllowed,
                Some("POST"),
            ),
            ("POST", "/api/discover/x".to_owned(), Kind::NotFound, None),
            (
                "DELETE",
                "/api/cameras/not-a-uuid".to_owned(),
                Kind::NotFound,
                None,
            ),
            (
                "DELETE",
                format!("/api/cameras/{simple}"),
                Kind::NotFound,
                None,
            ),
            (
                "DELETE",
                format!("/api/cameras/{braced}"),
                Kind::NotFound,
                None,
            ),
            ("POST", "/api/whep/123".to_owned(), Kind::NotFound, None),
            (
                "GET",
                format!("/api/cameras/{ID}/snooze"),
                Kind::MethodNotAllowed,
                Some("DELETE, POST"),
            ),
            (
                "POST",
                "/api/alerts".to_owned(),
                Kind::MethodNotAllowed,
                Some("GET, PATCH"),
            ),
            (
                "PUT",
                "/api/settings".to_owned(),
                Kind::MethodNotAllowed,
                Some("GET, PATCH"),
            ),
            (
                "GET",
                "/api/alerts/destinations".to_owned(),
                Kind::MethodNotAllowed,
                Some("POST"),
            ),
            (
                "PATCH",
                "/api/alerts/destinations/x".to_owned(),
                Kind::NotFound,
                None,
            ),
            (
                "GET",
                format!("/api/alerts/destinations/{ID}/test"),
                Kind::MethodNotAllowed,
                Some("POST"),
            ),
            (
                "POST",
                format!("/api/cameras/{ID}/probe/x"),
                Kind::NotFound,
                None,
            ),
            (
                "POST",
                "/api/status".to_owned(),
                Kind::MethodNotAllowed,
                Some("GET"),
            ),
            (
                "PUT",
                "/api/tls/ca.crt".to_owned(),
                Kind::MethodNotAllowed,
                Some("GET"),
            ),
            ("GET", "/api/tls/ca.key".to_owned(), Kind::NotFound, None),
            (
                "DELETE",
                "/api/events".to_owned(),
                Kind::MethodNotAllowed,
                Some("GET, POST"),
            ),
            (
                "PUT",
                "/api/cameras".to_owned(),
                Kind::MethodNotAllowed,
                Some("GET, POST"),
            ),
            (
                "GET",
                format!("/api/cameras/{ID}"),
                Kind::MethodNotAllowed,
                Some("DELETE, PATCH"),
            ),
            (
                "GET",
                format!("/api/cameras/{ID}/probe"),
                Kind::MethodNotAllowed,
                Some("POST"),
            ),
            (
                "GET",
                format!("/api/whep/{ID}"),
                Kind::MethodNotAllowed,
                Some("POST, OPTIONS"),
            ),
            ("GET", "/api/whep/x".to_owned(), Kind::NotFound, None),
            (
                "GET",
                format!("/api/events/{ID}"),
                Kind::MethodNotAllowed,
                Some("PATCH"),
            ),
            ("PATCH", "/api/events/x".to_owned(), Kind::NotFound, None),
            (
                "GET",
                "/api/events/reviewed".to_owned(),
                Kind::MethodNotAllowed,
                Some("POST"),
            ),
            (
                "PATCH",
                "/api/events/unreviewed".to_owned(),
                Kind::MethodNotAllowed,
                Some("POST"),
            ),
            (
                "GET",
                "/api/events/x/clip.mp4".to_owned(),
                Kind::NotFound,
                None,
            ),
            (
                "GET",
                format!("/api/events/{ID}/clip.mkv"),
                Kind::NotFound,
                None,
            ),
            (
                "POST",
                format!("/api/events/{ID}/thumbnail.jpg"),
                Kind::MethodNotAllowed,
                Some("GET, HEAD"),
            ),
            (
                "POST",
                format!("/api/cameras/{ID}/recordings"),
                Kind::MethodNotAllowed,
                Some("GET"),
            ),
            (
                "DELETE",
                format!("/api/cameras/{ID}/recording.mp4"),
                Kind::MethodNotAllowed,
                Some("GET, HEAD"),
            ),
            (
                "GET",
                "/api/cameras/x/recordings".to_owned(),
                Kind::NotFound,
                None,
            ),
            (
                "POST",
                format!("/api/cameras/{ID}/snapshot.jpg"),
                Kind::MethodNotAllowed,
                Some("GET"),
            ),
            (
                "GET",
                "/api/cameras/x/snapshot.jpg".to_owned(),
                Kind::NotFound,
                None,
            ),
            (
                "GET",
                format!("/api/cameras/{ID}/snapshot.png"),
                Kind::NotFound,
                None,
            ),
            (
                "GET",
                format!("/api/cameras/{ID}/recording.mkv"),
                Kind::NotFound,
                None,
            ),
            ("DELETE", format!("/api/whep/{ID}/x"), Kind::NotFound, None),
            ("DELETE", format!("/api/whep/x/{ID}"), Kind::NotFound, None),
            (
                "POST",
                format!("/api/whep/{ID}/{ID}"),
                Kind::MethodNotAllowed,
                Some("DELETE"),
            ),
            (
                "PATCH",
                format!("/api/whep/{ID}/{ID}"),
                Kind::MethodNotAllowed,
                Some("DELETE"),
            ),
            (
                "POST",
                "/".to_owned(),
                Kind::MethodNotAllowed,
                Some("GET, HEAD"),
            ),
        ];
        for (method, path, kind, allow) in bad {
            let err = route(method, &path).expect_err(&format!("{method} {path}"));
            assert_eq!((err.kind, err.allow), (kind, allow), "{method} {path}");
        }
    }

    #[test]
    fn body_kinds() {
        assert_eq!(Route::AddCamera.body_kind(), Some(BodyKind::Json));
        assert_eq!(Route::Whep(id()).body_kind(), Some(BodyKind::Sdp));
        assert_eq!(Route::ProbeCamera(id()).body_kind(), None);
        assert_eq!(Route::Status.body_kind(), None);
        assert_eq!(Route::Discover.body_kind(), None);
        assert_eq!(Route::DiscoverStreams.body_kind(), Some(BodyKind::Json));
        assert_eq!(Route::UpdateEvent(id()).body_kind(), Some(BodyKind::Json));
        assert_eq!(Route::MarkReviewed.body_kind(), Some(BodyKind::Json));
        assert_eq!(Route::UnmarkReviewed.body_kind(), Some(BodyKind::Json));
        assert_eq!(Route::Events.body_kind(), None);
        assert_eq!(Route::AddDestination.body_kind(), Some(BodyKind::Json));
        assert_eq!(Route::SnoozeCamera(id()).body_kind(), Some(BodyKind::Json));
        assert_eq!(Route::TestDestination(id()).body_kind(), None);
        assert_eq!(Route::WakeCamera(id()).body_kind(), None);
        assert_eq!(Route::UpdateSettings.body_kind(), Some(BodyKind::Json));
    }
}
