//! Cameras that move: when a camera linked to an ONVIF device goes offline,
//! the node searches the LAN for the device (at once, then after 1, 2, 4 …
//! minutes, at most 15 apart); when the same endpoint answers from a new
//! address, the camera's URLs get the new host (user, password, port and
//! path kept) through the same path as a PATCH, so the recorder, the relay
//! and Home Assistant follow.

use std::collections::HashMap;
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::app::App;
use crate::camera::{Camera, OnvifLink, SettingsPatch};
use crate::clock::now_ms;
use crate::event::format_timestamp;
use crate::onvif::Found;
use crate::rtsp_url::{http_host, with_host};

/// How often offline cameras are looked at.
const TICK: Duration = Duration::from_secs(5);
const FIRST_RETRY: Duration = Duration::from_secs(60);
const LONGEST_RETRY: Duration = Duration::from_secs(15 * 60);

/// When a camera may be searched for next, and how many searches missed it.
struct Search {
    next: Instant,
    misses: u32,
}

pub fn spawn(app: Arc<App>) {
    thread::Builder::new()
        .name("follow".into())
        .spawn(move || {
            let mut searches: HashMap<Uuid, Search> = HashMap::new();
            loop {
                thread::sleep(TICK);
                round(&app, &mut searches, Instant::now());
            }
        })
        .expect("spawn the follower of moved cameras");
}

fn round(app: &App, searches: &mut HashMap<Uuid, Search>, now: Instant) {
    let Ok(cameras) = app.db(|s| s.cameras()) else {
        return;
    };
    let lost: Vec<&Camera> = cameras
        .iter()
        .filter(|c| c.settings.enabled && c.settings.onvif.is_some() && !app.is_online(c.id))
        .collect();
    searches.retain(|id, _| lost.iter().any(|c| c.id == *id));
    let due: Vec<&Camera> = lost
        .into_iter()
        .filter(|c| {
            let search = searches.entry(c.id).or_insert(Search {
                next: now,
                misses: 0,
            });
            search.next <= now
        })
        .collect();
    if due.is_empty() {
        return;
    }
    let found = app.finder.search();
    for camera in due {
        let Some(link) = &camera.settings.onvif else {
            continue;
        };
        let device = found.devices.iter().find(|d| d.endpoint == link.endpoint);
        if device.is_some_and(|d| follow(app, camera, link, d)) {
            searches.remove(&camera.id);
        } else if let Some(search) = searches.get_mut(&camera.id) {
            search.misses += 1;
            let wait = retry_after(search.misses);
            search.next = now + wait;
            log::debug!(
                "camera {}: offline, its ONVIF device not found elsewhere; searching again in {} s",
                camera.id,
                wait.as_secs()
            );
        }
    }
}

/// The wait after `misses` searches that did not find the camera moved.
fn retry_after(misses: u32) -> Duration {
    FIRST_RETRY
        .saturating_mul(1 << misses.saturating_sub(1).min(8))
        .min(LONGEST_RETRY)
}

/// Moves `camera` to where its device now answers; false if it has not
/// moved or cannot follow.
fn follow(app: &App, camera: &Camera, link: &OnvifLink, device: &Found) -> bool {
    let new_address = device
        .services
        .first()
        .cloned()
        .unwrap_or_else(|| format!("http://{}/onvif/device_service", device.address));
    let (Some(old), Some(new)) = (http_host(&link.address), http_host(&new_address)) else {
        return false;
    };
    let (old, new) = (old.to_owned(), new.to_owned());
    let (old, new) = (old.as_str(), new.as_str());
    if old.eq_ignore_ascii_case(new) {
        return false;
    }
    let settings = &camera.settings;
    // Only the URLs that were on the device's address move.
    let Some(rtsp_url) = with_host(&settings.rtsp_url, old, new) else {
        log::info!(
            "camera {}: its ONVIF device answers from {new}, but its stream is not on the device's \
             address {old}: its URLs are left as they are",
            camera.id
        );
        return false;
    };
    let rtsp_sub_url = settings
        .rtsp_sub_url
        .as_ref()
        .map(|sub| with_host(sub, old, new).unwrap_or_else(|| sub.clone()));
    let patch = SettingsPatch {
        rtsp_url: Some(rtsp_url),
        rtsp_sub_url: Some(rtsp_sub_url),
        onvif: Some(Some(OnvifLink {
            endpoint: link.endpoint.clone(),
            address: new_address,
        })),
        ..SettingsPatch::default()
    };
    match app.update_camera(camera.id, &patch) {
        Ok(Some(_)) => {
            let what = format!(
                "moved from {old} to {new} at {}",
                format_timestamp(now_ms())
            );
            log::info!(
                "camera {} {:?}: its ONVIF device {} {what}; its stream addresses follow",
                camera.id,
                settings.name,
                link.endpoint
            );
            app.finder.set_moved(camera.id, what);
            true
        }
        Ok(None) => false,
        Err(e) => {
            log::warn!(
                "camera {}: cannot follow its move: {}",
                camera.id,
                e.message
            );
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn searches_back_off_from_a_minute_to_a_quarter_hour() {
        let minutes: Vec<u64> = (1..=7).map(|m| retry_after(m).as_secs() / 60).collect();
        assert_eq!(minutes, [1, 2, 4, 8, 15, 15, 15]);
        assert_eq!(retry_after(u32::MAX), LONGEST_RETRY);
    }
}
