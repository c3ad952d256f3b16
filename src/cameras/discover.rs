//! Finding cameras: the ONVIF search that the API and the follower of moved
//! cameras share (one at a time: each takes a few seconds of the LAN's
//! multicast), and a device's streams confirmed by probing them, since
//! devices report sizes they do not stream.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::Duration;

use uuid::Uuid;

use crate::cameras::camera::Capabilities;
use crate::cameras::onvif::{self, Credentials, Discovery, OnvifError, Profile};
use crate::cameras::prober::Prober;
use crate::cameras::rtsp_url;
use crate::changes::StateChanges;
use crate::lock::lock;

/// How long a search listens for answers.
const LISTEN: Duration = Duration::from_secs(3);
/// The bound on each ONVIF call.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// Profiles probed at once: a device with more rarely streams them all.
const MAX_PROBED: usize = 8;

pub struct Finder {
    interfaces: Vec<String>,
    searching: Mutex<()>,
    /// What the follower last did or found of each camera.
    notes: Mutex<HashMap<Uuid, Note>>,
    /// Counts each change of `notes`: the cameras in the status show them.
    live: Arc<StateChanges>,
}

enum Note {
    /// It moved the camera: when, from where to where, in plain words.
    Moved(String),
    /// A device answers for the camera's and the node cannot tell it is the camera.
    Claimed(Claim),
}

/// A device that answers with a camera's endpoint reference from an
/// address where the node cannot tell it is the camera.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Claim {
    /// Where the answer came from.
    pub address: Ipv4Addr,
    /// Its device service there.
    pub service: String,
    /// Why the node cannot tell, in plain words.
    pub why: String,
}

/// A device's profile with what the node measured of its stream.
pub struct Stream {
    pub profile: Profile,
    /// What the probe found, or why it found nothing.
    pub measured: Result<Capabilities, String>,
    pub role: Option<Role>,
    /// On the device's own host: the only streams offered to be a camera's.
    pub offered: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Role {
    Main,
    Sub,
}

impl Role {
    pub fn name(self) -> &'static str {
        match self {
            Role::Main => "main",
            Role::Sub => "sub",
        }
    }
}

impl Finder {
    /// `interfaces`: the names to search on; empty, every one up.
    pub fn new(interfaces: Vec<String>, live: Arc<StateChanges>) -> Finder {
        Finder {
            interfaces,
            searching: Mutex::new(()),
            notes: Mutex::new(HashMap::new()),
            live,
        }
    }

    /// Probes the LAN for ONVIF devices, waiting for a search under way to
    /// finish first.
    pub fn search(&self) -> Discovery {
        let _one = lock(&self.searching);
        onvif::discover(&onvif::interfaces(&self.interfaces), LISTEN)
    }

    /// What the follower has to say of the camera, in plain words.
    pub fn message(&self, camera: Uuid) -> Option<String> {
        Some(match lock(&self.notes).get(&camera)? {
            Note::Moved(what) => what.clone(),
            Note::Claimed(claim) => format!(
                "a device at {} answers as this camera's ONVIF device, but {}: the camera \
                 stays where it was unless you confirm the move",
                claim.address, claim.why
            ),
        })
    }

    /// The device that claims to be the camera, if one does.
    pub fn claim(&self, camera: Uuid) -> Option<Claim> {
        match lock(&self.notes).get(&camera)? {
            Note::Claimed(claim) => Some(claim.clone()),
            Note::Moved(_) => None,
        }
    }

    pub fn set_moved(&self, camera: Uuid, what: String) {
        lock(&self.notes).insert(camera, Note::Moved(what));
        self.live.bump();
    }

    /// Counted as a change only when it is new: the follower sets it again
    /// each round while the device claims the camera.
    pub fn set_claim(&self, camera: Uuid, claim: Claim) {
        let mut notes = lock(&self.notes);
        let same = matches!(notes.get(&camera), Some(Note::Claimed(was)) if *was == claim);
        notes.insert(camera, Note::Claimed(claim));
        drop(notes);
        if !same {
            self.live.bump();
        }
    }

    /// Forgets the claims on cameras for which `lost` is false (back online,
    /// unlinked or disabled: a claim is only worth a move while it is lost;
    /// or no longer claimed).
    pub fn drop_claims(&self, lost: impl Fn(&Uuid) -> bool) {
        let mut notes = lock(&self.notes);
        let before = notes.len();
        notes.retain(|id, note| matches!(note, Note::Moved(_)) || lost(id));
        let dropped = notes.len() != before;
        drop(notes);
        if dropped {
            self.live.bump();
        }
    }

    pub fn forget(&self, camera: Uuid) {
        lock(&self.notes).remove(&camera);
        self.live.bump();
    }
}

/// The device's make, model and streams: each of the first profiles probed
/// (all at once, so within one probe's bound), main and sub chosen from what
/// was measured.
pub fn streams(
    prober: &Prober,
    address: &str,
    credentials: Option<&Credentials>,
) -> Result<(onvif::Streams, Vec<Stream>), OnvifError> {
    let mut device = onvif::streams(address, credentials, CALL_TIMEOUT)?;
    let profiles = std::mem::take(&mut device.profiles);
    let measured: Vec<Result<Capabilities, String>> = thread::scope(|scope| {
        let probes: Vec<_> = profiles
            .iter()
            .enumerate()
            .map(|(i, profile)| {
                scope.spawn(move || {
                    if i >= MAX_PROBED {
                        return Err(format!(
                            "not measured: only {MAX_PROBED} profiles are probed"
                        ));
                    }
                    if !on_host(&profile.uri, address) {
                        return Err(ANOTHER_HOST.to_owned());
                    }
                    measure(prober, &profile.uri, credentials)
                })
            })
            .collect();
        probes
            .into_iter()
            .map(|p| p.join().unwrap_or_else(|_| Err("the probe failed".into())))
            .collect()
    });
    let sizes: Vec<Option<(u32, u32)>> = measured
        .iter()
        .map(|m| m.as_ref().ok().map(|c| (c.width, c.height)))
        .collect();
    let (main, sub) = if sizes.iter().any(Option::is_some) {
        roles(&sizes)
    } else {
        // Nothing streamed: the device's word is all there is.
        let reported: Vec<Option<(u32, u32)>> = profiles
            .iter()
            .map(|p| p.width.zip(p.height).filter(|_| on_host(&p.uri, address)))
            .collect();
        roles(&reported)
    };
    let streams = profiles
        .into_iter()
        .zip(measured)
        .enumerate()
        .map(|(i, (profile, measured))| Stream {
            offered: on_host(&profile.uri, address),
            profile,
            measured,
            role: if Some(i) == main {
                Some(Role::Main)
            } else if Some(i) == sub {
                Some(Role::Sub)
            } else {
                None
            },
        })
        .collect();
    Ok((device, streams))
}

/// Why a stream on another host than the device is not offered.
const ANOTHER_HOST: &str = "its stream is on another host than the device: not probed and not offered, since the \
     camera's account goes to the device's host only";

/// Whether the RTSP address `uri` is on the host of the device service `address`.
fn on_host(uri: &str, address: &str) -> bool {
    let host = rtsp_url::rtsp_endpoint(uri).map(|(host, _, _)| host);
    let device = rtsp_url::http_host(address).map(rtsp_url::unbracketed);
    host.is_some_and(|h| device.is_some_and(|d| h.eq_ignore_ascii_case(d)))
}

/// Probes a profile's stream, with the credentials the device took.
fn measure(
    prober: &Prober,
    uri: &str,
    credentials: Option<&Credentials>,
) -> Result<Capabilities, String> {
    let url = match credentials {
        Some(c) => rtsp_url::with_userinfo(uri, &c.username, &c.password),
        None => uri.to_owned(),
    };
    // What the node would refuse as a camera's address, it does not probe.
    let url = rtsp_url::checked("the stream's address", &url).map_err(|e| e.message)?;
    prober.probe(&url).map_err(|e| e.message())
}

/// Which sizes are the main stream (the most pixels; the first of equals)
/// and the sub stream (the fewest, if fewer than main's).
fn roles(sizes: &[Option<(u32, u32)>]) -> (Option<usize>, Option<usize>) {
    let pixels = |i: usize| sizes[i].map(|(w, h)| u64::from(w) * u64::from(h));
    let known: Vec<usize> = (0..sizes.len()).filter(|&i| pixels(i).is_some()).collect();
    let main = known
        .iter()
        .copied()
        .fold(None, |best: Option<usize>, i| match best {
            Some(b) if pixels(b) >= pixels(i) => Some(b),
            _ => Some(i),
        });
    let sub = known
        .iter()
        .copied()
        .filter(|&i| pixels(i) < main.and_then(pixels))
        .fold(None, |best: Option<usize>, i| match best {
            Some(b) if pixels(b) <= pixels(i) => Some(b),
            _ => Some(i),
        });
    (main, sub)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn streams_are_offered_on_the_device_s_host_only() {
        let device = "http://10.0.0.5:8000/onvif/device_service";
        assert!(on_host("rtsp://10.0.0.5:554/main", device));
        assert!(on_host("rtsp://u:p@10.0.0.5/main", device));
        assert!(!on_host("rtsp://127.0.0.1:8554/main", device));
        assert!(!on_host("rtsp://10.0.0.50/main", device));
        assert!(!on_host("rtsp://10.0.0.6/x?10.0.0.5", device));
        assert!(on_host("rtsp://Cam.lan/x", "http://cam.LAN/onvif"));
        assert!(on_host("rtsp://[fd00::1]:554/x", "http://[fd00::1]/onvif"));
    }

    /// The cached status shows what is said of each camera: each change
    /// must be counted, and a claim set again each round must not be.
    #[test]
    fn each_change_of_what_is_said_counts_once() {
        let live = Arc::new(StateChanges::default());
        let finder = Finder::new(Vec::new(), live.clone());
        let camera = Uuid::new_v4();
        let claim = Claim {
            address: Ipv4Addr::new(10, 0, 0, 9),
            service: "http://10.0.0.9/onvif/device_service".into(),
            why: "its hardware address differs".into(),
        };
        let steps: [(&str, &dyn Fn(), u64); 6] = [
            (
                "a new claim",
                &|| finder.set_claim(camera, claim.clone()),
                1,
            ),
            (
                "the same claim again",
                &|| finder.set_claim(camera, claim.clone()),
                1,
            ),
            ("a claim kept", &|| finder.drop_claims(|_| true), 1),
            ("a claim dropped", &|| finder.drop_claims(|_| false), 2),
            (
                "a move",
                &|| finder.set_moved(camera, "moved from a to b".into()),
                3,
            ),
            ("forgotten", &|| finder.forget(camera), 4),
        ];
        for (what, step, counted) in steps {
            step();
            assert_eq!(live.get(), counted, "{what}");
        }
    }

    #[test]
    fn a_claim_is_shown_until_the_camera_is_back_and_a_move_stays() {
        let finder = Finder::new(Vec::new(), Arc::default());
        let (claimed, moved) = (Uuid::new_v4(), Uuid::new_v4());
        let claim = Claim {
            address: Ipv4Addr::new(10, 0, 0, 9),
            service: "http://10.0.0.9/onvif/device_service".into(),
            why: "its hardware address differs".into(),
        };
        finder.set_claim(claimed, claim.clone());
        finder.set_moved(moved, "moved from a to b".into());
        assert_eq!(finder.claim(claimed), Some(claim));
        assert_eq!(finder.claim(moved), None);
        let message = finder.message(claimed).unwrap();
        assert!(
            message.starts_with("a device at 10.0.0.9 answers as this camera's ONVIF device, but its hardware address differs"),
            "{message}"
        );
        finder.drop_claims(|_| true);
        assert!(finder.claim(claimed).is_some());
        finder.drop_claims(|_| false);
        assert_eq!(finder.claim(claimed), None);
        assert_eq!(finder.message(claimed), None);
        assert_eq!(finder.message(moved).as_deref(), Some("moved from a to b"));
    }

    #[test]
    fn main_has_the_most_pixels_and_sub_the_fewest() {
        let hd = Some((1920, 1080));
        let sd = Some((640, 360));
        let mid = Some((1280, 720));
        type Size = Option<(u32, u32)>;
        type Roles = (Option<usize>, Option<usize>);
        let cases: [(&[Size], Roles); 7] = [
            (&[], (None, None)),
            (&[None, None], (None, None)),
            (&[hd], (Some(0), None)),
            (&[sd, hd], (Some(1), Some(0))),
            (&[mid, None, sd, hd], (Some(3), Some(2))),
            // Equals: the first is main, and there is no smaller sub.
            (&[hd, hd], (Some(0), None)),
            (&[sd, hd, sd], (Some(1), Some(0))),
        ];
        for (sizes, want) in cases {
            assert_eq!(roles(sizes), want, "{sizes:?}");
        }
    }
}
