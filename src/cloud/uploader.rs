//! Clip upload: while the cloud link is online, the clip of each `local`
//! event goes up, oldest first, one at a time: `local → uploading → uploaded`,
//! or back to `local` on failure, to be tried again later.

use std::sync::Arc;
use std::thread;
use std::time::Duration;

use crate::app::App;
use crate::cloud::link::{Client, CloudError};
use crate::link_state::LinkState;
use crate::sys::data_file::is_absent;

/// How often to look for work while there is none.
const IDLE: Duration = Duration::from_secs(2);
/// The wait after a failed upload.
const RETRY: Duration = Duration::from_secs(10);

pub fn spawn(app: Arc<App>, base: &str) {
    let client = Client::new(base);
    crate::spawn::spawn(thread::Builder::new(), move || {
        loop {
            thread::sleep(upload_next(&app, &client));
        }
    })
    .expect("failed to spawn thread");
}

/// Uploads the next clip, if the link is online and one waits; returns the wait before the next.
fn upload_next(app: &App, client: &Client) -> Duration {
    if app.cloud_state() != LinkState::Online {
        return IDLE;
    }
    let Ok(Some(identity)) = app.db(|s| s.identity()) else {
        return IDLE;
    };
    let next = app.db(|s| {
        let Some((id, clip)) = s.next_clip_to_upload()? else {
            return Ok(None);
        };
        Ok(s.move_clip(id, "local", "uploading")?.then_some((id, clip)))
    });
    let Ok(Some((id, clip))) = next else {
        return IDLE;
    };
    let (result, absent) = match app.clips.open(&clip) {
        Ok((file, _)) => (client.upload_clip(&identity, id, &clip, file), false),
        Err(e) => {
            log::warn!("event {id}: its clip cannot be opened: {e}");
            let unreadable = CloudError::Protocol("the clip file cannot be read");
            (Err(unreadable), is_absent(&e))
        }
    };
    let outcome = app.db(|s| match result {
        Ok(()) => s.move_clip(id, "uploading", "uploaded"),
        // Gone, or no longer a regular file reached through no link: the
        // event has no clip any more, and stays local.
        Err(_) if absent => s.forget_clip(id),
        Err(_) => s.move_clip(id, "uploading", "local"),
    });
    match (result, outcome) {
        (Ok(()), Ok(_)) => {
            log::info!("uploaded the clip of event {id}");
            Duration::ZERO
        }
        // Nothing to upload: on to the next at once.
        (Err(_), Ok(_)) if absent => Duration::ZERO,
        (Err(e), _) => {
            log::warn!("uploading the clip of event {id} failed: {e:?}");
            RETRY
        }
        (Ok(()), Err(_)) => RETRY,
    }
}
