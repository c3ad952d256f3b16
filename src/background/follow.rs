//! Cameras that move: when a camera linked to an ONVIF device goes offline,
//! the node searches the LAN for the device (at once, then after 1, 2, 4 …
//! minutes, at most 15 apart); when the same endpoint answers from a new
//! address and the node can tell it is the same device, the camera's URLs
//! get the new host (user, password, port and path kept) through the same
//! path as a PATCH, so the recorder, the relay and Home Assistant follow.
//!
//! An endpoint reference is no proof: discovery lists it to anyone. The
//! device is the same when its service address is on the address its answer
//! came from, that address has the hardware (MAC) address the node saw while
//! the camera worked, and it gives the serial number the node read then, if
//! it read one (the node's secret: the API shows neither in full).
//! Otherwise the camera stays, the device's claim is shown, and the user may
//! confirm the move with the camera's password: the camera's account goes
//! only to a host the user named, password in hand, or the node verified.

use std::collections::{HashMap, HashSet};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::sync::Arc;
use std::thread;
use std::time::{Duration, Instant};

use uuid::Uuid;

use crate::app::App;
use crate::cameras::camera::{Camera, OnvifLink, Seen, SettingsPatch};
use crate::cameras::discover::Claim;
use crate::cameras::neighbours;
use crate::cameras::onvif::{self, Credentials, Found, OnvifError};
use crate::cameras::rtsp_url::{self, http_host, http_port, reachable_host, with_host};
use crate::clock::now_ms;
use crate::error::Error;
use crate::event::format_timestamp;

/// How often offline cameras are looked at.
const TICK: Duration = Duration::from_secs(5);
const FIRST_RETRY: Duration = Duration::from_secs(60);
const LONGEST_RETRY: Duration = Duration::from_secs(15 * 60);
/// The bound on each ONVIF call and on reaching a device.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// When a camera may be searched for next, and how many searches missed it.
struct Search {
    next: Instant,
    misses: u32,
}

pub fn spawn(app: Arc<App>) {
    crate::spawn::spawn(thread::Builder::new().name("follow".into()), move || {
        let mut searches: HashMap<Uuid, Search> = HashMap::new();
        // (camera, device address) asked for their serial number this run.
        let mut asked: HashSet<(Uuid, String)> = HashSet::new();
        loop {
            thread::sleep(TICK);
            round(&app, &mut searches, &mut asked, Instant::now());
        }
    })
    .expect("spawn the follower of moved cameras");
}

fn round(
    app: &App,
    searches: &mut HashMap<Uuid, Search>,
    asked: &mut HashSet<(Uuid, String)>,
    now: Instant,
) {
    let Ok(cameras) = app.db(|s| s.cameras()) else {
        return;
    };
    for camera in cameras.iter() {
        if let Some(link) = &camera.settings.onvif
            && camera.settings.enabled
            && app.is_online(camera.id)
        {
            learn(app, camera, link, asked);
        }
    }
    let lost: Vec<&Camera> = cameras
        .iter()
        .filter(|c| c.settings.enabled && c.settings.onvif.is_some() && !app.is_online(c.id))
        .collect();
    searches.retain(|id, _| lost.iter().any(|c| c.id == *id));
    app.finder
        .drop_claims(|id| lost.iter().any(|c| c.id == *id));
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
        if look_for(app, camera, link, &found.devices) {
            searches.remove(&camera.id);
        } else if let Some(search) = searches.get_mut(&camera.id) {
            search.misses += 1;
            let wait = retry_after(search.misses);
            search.next = now + wait;
            log::debug!(
                "camera {}: offline, its ONVIF device not followed elsewhere; searching again in {} s",
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

/// Records what the working camera's device is: its hardware address, and
/// (once a run for each address) its serial number, asked with the camera's
/// account at the address the user gave or the node verified.
fn learn(app: &App, camera: &Camera, link: &OnvifLink, asked: &mut HashSet<(Uuid, String)>) {
    let mut seen = link.seen.clone();
    if seen.mac.is_none() {
        seen.mac = device_ip(&link.address).and_then(neighbours::mac_of);
    }
    if seen.serial.is_none() && asked.insert((camera.id, link.address.clone())) {
        match onvif::serial_number(&link.address, account(camera).as_ref(), CALL_TIMEOUT) {
            Ok(serial) => seen.serial = serial,
            Err(e) => log::info!(
                "camera {}: cannot read its ONVIF device's serial number: {}",
                camera.id,
                e.message()
            ),
        }
    }
    if seen == link.seen {
        return;
    }
    let link = OnvifLink {
        seen,
        ..link.clone()
    };
    if let Err(e) = app.db(|s| s.set_onvif_seen(camera.id, &link)) {
        log::warn!(
            "camera {}: cannot record its ONVIF device: {}",
            camera.id,
            e.message
        );
    }
}

/// The IPv4 address of a device service URL's host.
fn device_ip(address: &str) -> Option<Ipv4Addr> {
    http_host(address)?.parse().ok()
}

/// The camera's account, from its main URL.
fn account(camera: &Camera) -> Option<Credentials> {
    rtsp_url::credentials(&camera.settings.rtsp_url)
        .map(|(username, password)| Credentials { username, password })
}

/// What an answer with a camera's endpoint reference is.
enum Check {
    /// Not from a device on the LAN, or naming another host: not a claim.
    Ignored,
    /// The camera's device: its service address there.
    Same(String),
    /// A device the node cannot tell is the camera.
    Unsure(Claim),
}

/// Moves `camera` to where its device now answers, if the node can tell it
/// is the device; otherwise shows the claim. False if it did not move.
fn look_for(app: &App, camera: &Camera, link: &OnvifLink, devices: &[Found]) -> bool {
    let old = http_host(&link.address).unwrap_or_default();
    let mut claim = None;
    for device in devices.iter().filter(|d| d.endpoint == link.endpoint) {
        if device.address.to_string() == old {
            continue;
        }
        match check(camera, link, device) {
            Check::Ignored => {}
            Check::Same(service) => return follow(app, camera, link, &service),
            Check::Unsure(unsure) => {
                claim.get_or_insert(unsure);
            }
        }
    }
    let Some(claim) = claim else {
        // A device that claimed it and no longer does has no claim to show.
        app.finder.drop_claims(|id| *id != camera.id);
        return false;
    };
    if app.finder.claim(camera.id).as_ref() != Some(&claim) {
        log::warn!(
            "camera {} {:?}: a device at {} answers as its ONVIF device {}, but {}: not \
             followed unless the user confirms the move",
            camera.id,
            camera.settings.name,
            claim.address,
            link.endpoint,
            claim.why
        );
    }
    app.finder.set_claim(camera.id, claim);
    false
}

/// Whether `device`, which answers with the camera's endpoint reference, is
/// the camera's device.
fn check(camera: &Camera, link: &OnvifLink, device: &Found) -> Check {
    let from = device.address;
    let here = from.to_string();
    if !reachable_host(&here) {
        return Check::Ignored;
    }
    let Some(service) = device
        .services
        .iter()
        .find(|s| http_host(s) == Some(here.as_str()))
    else {
        log::info!(
            "camera {}: a device at {from} answers as its ONVIF device with service addresses \
             on another host: ignored",
            camera.id
        );
        return Check::Ignored;
    };
    let unsure = |why: String| {
        Check::Unsure(Claim {
            address: from,
            service: service.clone(),
            why,
        })
    };
    let Some(mac) = &link.seen.mac else {
        return unsure("the node never saw the camera's hardware address to compare".into());
    };
    let theirs = neighbours::mac_of(from).or_else(|| {
        // Reaching it makes the kernel resolve its hardware address.
        if let Some(port) = http_port(service) {
            let _ = TcpStream::connect_timeout(&SocketAddr::from((from, port)), CALL_TIMEOUT);
        }
        neighbours::mac_of(from)
    });
    match theirs {
        None => return unsure("its hardware address could not be read".into()),
        Some(theirs) if theirs != *mac => {
            return unsure(format!(
                "its hardware address {} is not the camera's {}",
                neighbours::shown(&theirs),
                neighbours::shown(mac)
            ));
        }
        Some(_) => {}
    }
    if let Some(serial) = &link.seen.serial {
        // Anyone on the LAN can copy a hardware address, not the serial number
        // (the API does not show it): asked first without the account, so a
        // device that answers anyone gets nothing to crack. One that wants
        // the account is asked with it, as the camera itself would want.
        let theirs = match onvif::serial_number(service, None, CALL_TIMEOUT) {
            Err(OnvifError::Refused) => {
                onvif::serial_number(service, account(camera).as_ref(), CALL_TIMEOUT)
            }
            answer => answer,
        };
        match theirs {
            Ok(Some(theirs)) if theirs == *serial => {}
            Ok(_) => return unsure("its serial number is not the camera's".into()),
            Err(e) => {
                return unsure(format!(
                    "its serial number could not be read ({})",
                    e.message()
                ));
            }
        }
    }
    Check::Same(service.clone())
}

/// The change that moves `camera`'s URLs from its device's address to the
/// host of `service`, linked there with what was `seen`; None when its main
/// stream is not on the device's address.
fn moved(
    camera: &Camera,
    link: &OnvifLink,
    service: &str,
    seen: Seen,
) -> Result<Option<SettingsPatch>, Error> {
    let (Some(old), Some(new)) = (http_host(&link.address), http_host(service)) else {
        return Ok(None);
    };
    let settings = &camera.settings;
    // Only the URLs that were on the device's address move.
    let Some(rtsp_url) = with_host(&settings.rtsp_url, old, new) else {
        return Ok(None);
    };
    let rtsp_sub_url = match &settings.rtsp_sub_url {
        Some(sub) => Some(match with_host(sub, old, new) {
            Some(url) => rtsp_url::checked("rtspSubUrl", &url)?,
            None => sub.clone(),
        }),
        None => None,
    };
    Ok(Some(SettingsPatch {
        // Checked as a URL a user typed.
        rtsp_url: Some(rtsp_url::checked("rtspUrl", &rtsp_url)?),
        rtsp_sub_url: Some(rtsp_sub_url),
        onvif: Some(Some(OnvifLink {
            endpoint: link.endpoint.clone(),
            address: service.to_owned(),
            seen,
        })),
        ..SettingsPatch::default()
    }))
}

/// Moves `camera` to its device's service `service`, verified the same
/// device; false if it cannot.
fn follow(app: &App, camera: &Camera, link: &OnvifLink, service: &str) -> bool {
    let (old, new) = (
        http_host(&link.address).unwrap_or_default(),
        http_host(service).unwrap_or_default(),
    );
    let patch = match moved(camera, link, service, link.seen.clone()) {
        Ok(Some(patch)) => patch,
        Ok(None) => {
            log::info!(
                "camera {}: its ONVIF device answers from {new}, but its stream is not on the \
                 device's address {old}: its URLs are left as they are",
                camera.id
            );
            return false;
        }
        Err(e) => {
            log::warn!(
                "camera {}: cannot follow its move: {}",
                camera.id,
                e.message
            );
            return false;
        }
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
                camera.settings.name,
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

/// `PATCH {"onvif": {"confirmMove": to}, "password": …}`: the user confirms
/// that the device claiming to be camera `id` at `to` is it; the camera
/// moves there with the rest of `patch`. The caller has checked the
/// password (`cameras::camera::account`). None for an unknown camera.
pub fn confirm(
    app: &App,
    id: Uuid,
    to: Ipv4Addr,
    patch: SettingsPatch,
) -> Result<Option<Camera>, Error> {
    let Some(camera) = app.db(|s| s.camera(id))? else {
        return Ok(None);
    };
    let claim = app.finder.claim(id).filter(|c| c.address == to);
    let (Some(claim), Some(link)) = (claim, &camera.settings.onvif) else {
        return Err(Error::bad_request(
            "onvif.confirmMove must name the address that claims to be the camera, as its \
             message says; no device claims to be it there now",
        ));
    };
    if patch.rtsp_url.is_some() || patch.rtsp_sub_url.is_some() {
        return Err(Error::bad_request(
            "onvif.confirmMove moves the stream addresses: it cannot come with rtspUrl or \
             rtspSubUrl",
        ));
    }
    // A device the node has not seen working: what it is is learnt anew.
    let moved = moved(&camera, link, &claim.service, Seen::default())?.ok_or_else(|| {
        Error::bad_request(
            "onvif.confirmMove cannot move the camera: its stream is not on its device's address",
        )
    })?;
    let patch = SettingsPatch {
        rtsp_url: moved.rtsp_url,
        rtsp_sub_url: moved.rtsp_sub_url,
        onvif: moved.onvif,
        confirm_move: None,
        ..patch
    };
    let updated = app.update_camera(id, &patch)?;
    if updated.is_some() {
        let old = http_host(&link.address).unwrap_or_default();
        let what = format!(
            "moved from {old} to {to} at {}, as confirmed",
            format_timestamp(now_ms())
        );
        log::info!(
            "camera {id} {:?}: its ONVIF device {} {what}",
            camera.settings.name,
            link.endpoint
        );
        app.finder.set_moved(id, what);
    }
    Ok(updated)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_move_changes_the_urls_on_the_device_s_address_only() {
        let mut camera = crate::store::test_support::camera("a");
        camera.settings.rtsp_url = "rtsp://u:p@10.0.0.5:554/main".into();
        camera.settings.rtsp_sub_url = Some("rtsp://u:p@10.0.0.7/sub".into());
        let link = OnvifLink {
            endpoint: "urn:uuid:1".into(),
            address: "http://10.0.0.5/onvif/device_service".into(),
            seen: Seen {
                mac: Some("02:00:00:00:00:05".into()),
                serial: None,
            },
        };
        let service = "http://10.0.0.9:8000/onvif/device_service";
        let patch = moved(&camera, &link, service, Seen::default())
            .unwrap()
            .unwrap();
        assert_eq!(
            patch.rtsp_url.as_deref(),
            Some("rtsp://u:p@10.0.0.9:554/main")
        );
        assert_eq!(
            patch.rtsp_sub_url,
            Some(Some("rtsp://u:p@10.0.0.7/sub".into()))
        );
        let moved_link = patch.onvif.flatten().unwrap();
        assert_eq!(moved_link.address, service);
        assert_eq!(moved_link.seen, Seen::default());
        camera.settings.rtsp_url = "rtsp://u:p@10.0.0.6/main".into();
        assert_eq!(moved(&camera, &link, service, Seen::default()), Ok(None));
    }

    #[test]
    fn searches_back_off_from_a_minute_to_a_quarter_hour() {
        let minutes: Vec<u64> = (1..=7).map(|m| retry_after(m).as_secs() / 60).collect();
        assert_eq!(minutes, [1, 2, 4, 8, 15, 15, 15]);
        assert_eq!(retry_after(u32::MAX), LONGEST_RETRY);
    }
}
