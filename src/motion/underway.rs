//! The event under way, as the node keeps it: made when it qualifies (at
//! once, or, on a camera with zones, once what moved entered a zone meant
//! for its kind), then listed in progress, its latest moment, kind and
//! zones written every few seconds, and finished at its end. Home Assistant
//! is told of it as it is made and as it ends; an event never made is
//! neither listed nor told.

use uuid::Uuid;

use super::Shared;
use super::zones::Entered;
use crate::cameras::camera::Zone;
use crate::event::{Event, Kind};
use crate::media::area::Area;
use crate::notices::Notice;

/// How often an event in progress is written.
const WRITE_EVERY_MS: i64 = 3_000;

pub struct Underway {
    pub id: Uuid,
    camera: Uuid,
    /// Whether the classifier looks at it (its kind `motion` is then only
    /// for now).
    classifying: bool,
    entered: Entered,
    /// As stored, and when last written (monotonic ms); None until made.
    stored: Option<(Event, i64)>,
}

impl Underway {
    pub fn new(camera: Uuid, zones: &[Zone], classifying: bool) -> Underway {
        Underway {
            id: crate::id::new_id(),
            camera,
            classifying,
            entered: Entered::new(zones),
            stored: None,
        }
    }

    /// Whether it is made (stored and listed).
    pub fn made(&self) -> bool {
        self.stored.is_some()
    }

    /// The zones meant for `kind` that what moved entered so far.
    pub fn zones_for(&self, zones: &[Zone], kind: Kind) -> Vec<String> {
        self.entered.names_for(zones, kind).unwrap_or_default()
    }

    /// What moved, or an object seen, in these boxes.
    pub fn saw(&mut self, zones: &[Zone], boxes: &[Area]) {
        self.entered.saw(zones, boxes);
    }

    /// Has the next [`Underway::progress`] write it, however soon after the
    /// last: news that must not wait (it became `loitering`).
    pub fn write_soon(&mut self) {
        if let Some((_, at)) = &mut self.stored {
            *at = i64::MIN / 2;
        }
    }

    /// The event as it stands now (`now()`, of its kind so far, its times
    /// and score; its zones are filled here), at `mono_ms`: made once it
    /// qualifies, and written every few seconds after (and only then made
    /// up, as this runs on every frame).
    pub fn progress(
        &mut self,
        shared: &Shared,
        zones: &[Zone],
        now: impl FnOnce() -> Event,
        mono_ms: i64,
    ) {
        match &self.stored {
            None => {
                let now = now();
                let Some(names) = self.entered.names_for(zones, kind(&now)) else {
                    return;
                };
                let event = Event {
                    zones: names,
                    in_progress: true,
                    ..now
                };
                match shared.clips.add_event(&event) {
                    Ok(true) => {
                        shared.notices.send(Notice::MotionStarted {
                            camera: self.camera,
                            event: self.id,
                            at_ms: event.started_at_ms,
                            classifying: self.classifying,
                        });
                        self.stored = Some((event, mono_ms));
                    }
                    Ok(false) => {}
                    Err(e) => log::error!("camera {}: cannot store its event: {e}", self.camera),
                }
            }
            Some((written, at)) if mono_ms - at >= WRITE_EVERY_MS => {
                let now = now();
                let names = self.entered.names_for(zones, kind(&now));
                let event = Event {
                    zones: names.unwrap_or_else(|| written.zones.clone()),
                    in_progress: true,
                    ..now
                };
                if &event != written {
                    write(shared, &event);
                }
                self.stored = Some((event, mono_ms));
            }
            Some(_) => {}
        }
    }

    /// Finishes it as `last` (its final kind, score and times): stored when
    /// it qualifies, dropped when it no longer does (its kind turned out to
    /// be none a zone it entered is meant for) unless it was kept while on.
    /// Returns the event stored.
    pub fn finish(self, shared: &Shared, zones: &[Zone], last: Event) -> Option<Event> {
        let made = self.stored.is_some();
        let stored = match self.entered.names_for(zones, kind(&last)) {
            Some(names) => {
                let event = Event {
                    zones: names,
                    in_progress: false,
                    ..last
                };
                let stored = if made {
                    write(shared, &event)
                } else {
                    shared.clips.add_event(&event).unwrap_or_else(|e| {
                        log::error!("camera {}: cannot store its event: {e}", self.camera);
                        false
                    })
                };
                stored.then_some(event)
            }
            None => match &self.stored {
                // Kept by a person while it was on: it stays, finished, in
                // the zones it was listed in, and gets its clip.
                Some((written, _)) if !drop_unkept(shared, self.id) => {
                    let event = Event {
                        zones: written.zones.clone(),
                        in_progress: false,
                        ..last
                    };
                    write(shared, &event).then_some(event)
                }
                _ => None,
            },
        };
        if !made && let Some(event) = &stored {
            shared.notices.send(Notice::MotionStarted {
                camera: self.camera,
                event: self.id,
                at_ms: event.started_at_ms,
                classifying: false,
            });
        }
        if made || stored.is_some() {
            shared.notices.send(Notice::MotionEnded {
                camera: self.camera,
                event: self.id,
                kind: stored.as_ref().map_or(Kind::Motion, kind),
            });
        }
        stored
    }
}

fn kind(event: &Event) -> Kind {
    Kind::from_name(&event.kind).unwrap_or(Kind::Motion)
}

/// Drops an event that no longer qualifies unless a person kept it; whether
/// it is gone (a failure to drop keeps it, said in the log).
fn drop_unkept(shared: &Shared, id: Uuid) -> bool {
    match shared.db.run(|s| s.drop_event_unless_kept(id)) {
        Ok(dropped) => dropped,
        Err(e) => {
            log::error!("event {id}: cannot drop it: {e}");
            false
        }
    }
}

/// Writes an event in progress as it stands; whether it is still stored (a
/// camera deleted, or `MAX_EVENTS` reached by other cameras' events, took it).
fn write(shared: &Shared, event: &Event) -> bool {
    match shared.db.run(|s| s.update_event(event)) {
        Ok(stored) => stored,
        Err(e) => {
            log::error!("camera {}: cannot update its event: {e}", event.camera_id);
            false
        }
    }
}
