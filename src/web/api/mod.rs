//! Request handlers, one module per resource; each handler takes what the
//! route and body carry and returns a reply or an error.

mod alerts;
mod cameras;
mod discover;
mod events;
mod media;
mod recordings;
mod settings;
mod status;
pub mod tls;
mod whep;

use std::net::IpAddr;

use crate::app::App;
use crate::error::Error;
use crate::web::reply::Reply;
use crate::web::routes::Route;
use crate::web::static_files::Ui;
use tls::Https;

/// What a handler may need of the request besides its route.
pub struct Call<'a> {
    /// The URL after `?`.
    pub query: &'a str,
    pub body: Vec<u8>,
    pub peer: Option<IpAddr>,
    /// The `Range` header, if any.
    pub range: Option<String>,
    /// The `Accept-Encoding` header's lines joined by commas, if any.
    pub accept_encoding: Option<String>,
    /// The `If-None-Match` header's lines joined by commas, if any.
    pub if_none_match: Option<String>,
}

/// Runs the handler for `route`; `https` is the node's HTTPS, if on.
pub fn dispatch(
    app: &App,
    ui: &Ui,
    https: Option<&Https>,
    route: Route,
    call: Call,
) -> Result<Reply, Error> {
    let Call {
        query,
        body,
        peer,
        range,
        accept_encoding,
        if_none_match,
    } = call;
    match route {
        Route::Status => status::get(app, https, if_none_match.as_deref()),
        Route::Events => events::list(app, query),
        Route::AddEvent => events::add(app, peer, &body),
        Route::UpdateEvent(id) => events::update(app, id, &body),
        Route::MarkReviewed => events::mark_reviewed(app, &body),
        Route::UnmarkReviewed => events::unmark_reviewed(app, &body),
        Route::EventClip(id) => events::clip(app, id, range.as_deref()),
        Route::EventThumbnail(id) => events::thumbnail(app, id),
        Route::ListCameras => cameras::list(app),
        Route::AddCamera => cameras::add(app, &body),
        Route::UpdateCamera(id) => cameras::update(app, id, &body),
        Route::DeleteCamera(id) => cameras::delete(app, id),
        Route::ProbeCamera(id) => cameras::probe(app, id),
        Route::CameraSnapshot(id) => cameras::snapshot(app, id),
        Route::CameraStored(id) => cameras::stored(app, id),
        Route::Recordings(id) => recordings::spans(app, id, query),
        Route::RecordingMp4(id) => recordings::mp4(app, id, query, range.as_deref()),
        Route::Whep(id) => whep::offer(app, id, query, body),
        Route::WhepOptions(_) => whep::options(),
        Route::EndWhepSession(camera, session) => whep::end(app, camera, session),
        Route::SnoozeCamera(id) => alerts::snooze(app, id, &body),
        Route::WakeCamera(id) => alerts::wake(app, id),
        Route::Alerts => alerts::get(app),
        Route::UpdateAlerts => alerts::update(app, &body),
        Route::AddDestination => alerts::add_destination(app, &body),
        Route::UpdateDestination(id) => alerts::update_destination(app, id, &body),
        Route::DeleteDestination(id) => alerts::delete_destination(app, id),
        Route::TestDestination(id) => alerts::test(app, id),
        Route::Settings => settings::get(app),
        Route::UpdateSettings => settings::update(app, &body),
        Route::Discover => discover::devices(app),
        Route::DiscoverStreams => discover::streams(app, &body),
        Route::CertificateAuthority => tls::authority(https),
        Route::Ui(path) => ui.get(&path, accept_encoding.as_deref()),
    }
}

fn no_such_camera() -> Error {
    Error::not_found("no such camera")
}
