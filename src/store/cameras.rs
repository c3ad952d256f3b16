//! Cameras: their settings (with the stream URLs, which never leave the
//! node) and capabilities.

use std::sync::Arc;

use rusqlite::types::Value;
use rusqlite::{OptionalExtension, Row, params, params_from_iter};
use uuid::Uuid;

use super::events::tombstone_events_where;
use super::segments::tombstone_where;
use super::{Result, Store, uuid_column};
use crate::cameras::camera::{
    Camera, Capabilities, MAX_RETAIN_DAYS, MotionSource, OnvifLink, Seen, Sensitivity, Settings,
    checked_masks, checked_zones,
};
use crate::event::Kind;

impl Store {
    /// All cameras, oldest first.
    pub fn cameras(&self) -> Result<Arc<Vec<Camera>>> {
        if let Some(cameras) = self.cameras.borrow().as_ref() {
            return Ok(cameras.clone());
        }
        let mut stmt = self
            .conn
            .prepare_cached(&format!("{SELECT_CAMERA} ORDER BY created_at_ms, id"))?;
        let cameras = Arc::new(
            stmt.query_map([], camera_from_row)?
                .collect::<Result<_>>()?,
        );
        *self.cameras.borrow_mut() = Some(Arc::clone(&cameras));
        Ok(cameras)
    }

    /// The first of `ids` that is neither a camera nor a deleted camera's.
    pub fn first_unknown_camera(&self, ids: &[Uuid]) -> Result<Option<Uuid>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT EXISTS (SELECT 1 FROM camera WHERE id = ?1)
                 OR EXISTS (SELECT 1 FROM camera_garbage WHERE id = ?1)",
        )?;
        for id in ids {
            if !stmt.query_row([id.to_string()], |r| r.get::<_, bool>(0))? {
                return Ok(Some(*id));
            }
        }
        Ok(None)
    }

    pub fn camera(&self, id: Uuid) -> Result<Option<Camera>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("{SELECT_CAMERA} WHERE id = ?1"))?;
        stmt.query_row([id.to_string()], camera_from_row).optional()
    }

    pub fn insert_camera(&self, camera: &Camera, created_at_ms: i64) -> Result<()> {
        self.written();
        let mut values = camera_values(camera);
        values.push(created_at_ms.into());
        self.conn.execute(
            "INSERT INTO camera (id, name, make, model, rtsp_url, rtsp_sub_url, enabled,
                                 record, detect, capabilities, detect_sensitivity, classify,
                                 kinds, onvif_endpoint, onvif_address, motion_masks, zones,
                                 auto_mask, onvif_mac, onvif_serial, retain_days, full_rate, motion_source,
                                 created_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17,
                     ?18, ?19, ?20, ?21, ?22, ?23, ?24)",
            params_from_iter(values),
        )?;
        Ok(())
    }

    /// Writes a camera's settings and capabilities; returns whether it exists.
    pub fn update_camera(&self, camera: &Camera) -> Result<bool> {
        self.written();
        let n = self.conn.execute(
            "UPDATE camera SET name = ?2, make = ?3, model = ?4, rtsp_url = ?5, rtsp_sub_url = ?6,
                               enabled = ?7, record = ?8, detect = ?9, capabilities = ?10,
                               detect_sensitivity = ?11, classify = ?12, kinds = ?13,
                               onvif_endpoint = ?14, onvif_address = ?15, motion_masks = ?16,
                               zones = ?17, auto_mask = ?18, onvif_mac = ?19, onvif_serial = ?20,
                               retain_days = ?21, full_rate = ?22,
                               motion_source = ?23
             WHERE id = ?1",
            params_from_iter(camera_values(camera)),
        )?;
        Ok(n > 0)
    }

    /// What deleting the camera would delete with it; None: no such camera.
    pub fn camera_stored(&self, id: Uuid) -> Result<Option<CameraStored>> {
        if self.camera(id)?.is_none() {
            return Ok(None);
        }
        let id = id.to_string();
        let mut segments = self.conn.prepare_cached(
            "SELECT COUNT(*), COALESCE(SUM(bytes), 0), COALESCE(SUM(end_ms - start_ms), 0),
                    MIN(start_ms), MAX(end_ms)
             FROM segment WHERE camera_id = ?1",
        )?;
        let mut events = self.conn.prepare_cached(
            "SELECT COUNT(*), COALESCE(SUM(keep), 0) FROM event WHERE camera_id = ?1",
        )?;
        let (events, kept) = events.query_row([&id], |r| Ok((r.get(0)?, r.get(1)?)))?;
        segments
            .query_row([&id], |r| {
                Ok(CameraStored {
                    segments: r.get(0)?,
                    segment_bytes: r.get(1)?,
                    recorded_ms: r.get(2)?,
                    first_ms: r.get(3)?,
                    last_ms: r.get(4)?,
                    events,
                    kept,
                })
            })
            .map(Some)
    }

    /// Deletes a camera with its events, and turns its segments and its
    /// events' files into tombstones; returns it and those files (clips and
    /// thumbnails) to unlink.
    pub fn delete_camera(&mut self, id: Uuid) -> Result<Option<(Camera, Vec<String>)>> {
        let Some(camera) = self.camera(id)? else {
            return Ok(None);
        };
        self.written();
        let tx = self.conn.transaction()?;
        let events = tombstone_events_where(&tx, "camera_id = ?1", [id.to_string()])?;
        tombstone_where(&tx, "camera_id = ?1", [id.to_string()])?;
        // Its folder is emptied too, of files no row names (one being written).
        tx.execute(
            "INSERT OR IGNORE INTO camera_garbage (id) VALUES (?1)",
            [id.to_string()],
        )?;
        tx.execute("DELETE FROM camera WHERE id = ?1", [id.to_string()])?;
        tx.execute(
            "DELETE FROM busy_cells WHERE camera_id = ?1",
            [id.to_string()],
        )?;
        tx.execute(
            "DELETE FROM alert_snooze WHERE camera_id = ?1",
            [id.to_string()],
        )?;
        tx.commit()?;
        self.segments_gone(id);
        self.events_changed();
        Ok(Some((camera, events.files)))
    }

    /// Records what was seen of the camera's ONVIF device, if the camera is
    /// still linked to `link`'s endpoint at its address; returns whether it was.
    pub fn set_onvif_seen(&self, id: Uuid, link: &OnvifLink) -> Result<bool> {
        self.written();
        let n = self.conn.execute(
            "UPDATE camera SET onvif_mac = ?4, onvif_serial = ?5
             WHERE id = ?1 AND onvif_endpoint = ?2 AND onvif_address = ?3",
            params![
                id.to_string(),
                link.endpoint,
                link.address,
                link.seen.mac,
                link.seen.serial
            ],
        )?;
        Ok(n > 0)
    }

    /// Returns whether the camera exists.
    pub fn set_capabilities(&self, id: Uuid, capabilities: &Capabilities) -> Result<bool> {
        self.written();
        let n = self.conn.execute(
            "UPDATE camera SET capabilities = ?2 WHERE id = ?1",
            params![id.to_string(), capabilities_json(capabilities)],
        )?;
        Ok(n > 0)
    }
}

/// What a camera's deletion deletes: its recorded segments (their bytes,
/// the time they hold, from the first one's start to the last one's end)
/// and its events, kept ones among them.
#[derive(Debug, PartialEq, Eq)]
pub struct CameraStored {
    pub segments: u64,
    pub segment_bytes: u64,
    pub recorded_ms: i64,
    pub first_ms: Option<i64>,
    pub last_ms: Option<i64>,
    pub events: u64,
    pub kept: u64,
}

/// A camera's columns from `id` to `motion_source`, as parameters ?1 to ?23.
fn camera_values(camera: &Camera) -> Vec<Value> {
    let s = &camera.settings;
    let seen = s.onvif.as_ref().map(|o| &o.seen);
    let text = |t: &str| Value::Text(t.to_owned());
    vec![
        text(&camera.id.to_string()),
        text(&s.name),
        text(&s.make),
        text(&s.model),
        text(&s.rtsp_url),
        s.rtsp_sub_url.clone().map_or(Value::Null, Value::Text),
        Value::Integer(s.enabled.into()),
        Value::Integer(s.record.into()),
        Value::Integer(s.detect.into()),
        camera
            .capabilities
            .as_ref()
            .map_or(Value::Null, |c| Value::Text(capabilities_json(c))),
        text(s.detect_sensitivity.name()),
        Value::Integer(s.classify.into()),
        text(&kinds_text(&s.kinds)),
        s.onvif.as_ref().map_or(Value::Null, |o| text(&o.endpoint)),
        s.onvif.as_ref().map_or(Value::Null, |o| text(&o.address)),
        text(&json(&s.motion_masks)),
        text(&json(&s.zones)),
        Value::Integer(s.auto_mask.into()),
        seen.and_then(|o| o.mac.clone())
            .map_or(Value::Null, Value::Text),
        seen.and_then(|o| o.serial.clone())
            .map_or(Value::Null, Value::Text),
        s.retain_days
            .map_or(Value::Null, |d| Value::Integer(d.into())),
        Value::Integer(s.full_rate.into()),
        s.motion_source.map_or(Value::Null, |m| text(m.name())),
    ]
}

fn json(value: &impl serde::Serialize) -> String {
    serde_json::to_string(value).expect("masks and zones serialize")
}

/// Masks or zones from their column, read as the API takes them; a value
/// this version cannot read counts as none.
fn areas<T: Default, E>(
    text: &str,
    checked: fn(&serde_json::Value) -> std::result::Result<T, E>,
) -> T {
    let value = serde_json::from_str(text).unwrap_or_default();
    checked(&value).unwrap_or_default()
}

/// `person,animal`: the kinds' names, comma separated.
fn kinds_text(kinds: &[Kind]) -> String {
    let names: Vec<&str> = kinds.iter().map(|k| k.name()).collect();
    names.join(",")
}

/// The kinds a `kinds` column names; a name this version does not know is
/// left out, and if none is left, all count.
fn kinds_from_text(text: &str) -> Vec<Kind> {
    let kinds: Vec<Kind> = text
        .split(',')
        .filter_map(Kind::from_name)
        .filter(|k| *k != Kind::Motion)
        .collect();
    if kinds.is_empty() {
        Kind::CLASSIFIED.to_vec()
    } else {
        kinds
    }
}

const SELECT_CAMERA: &str = "SELECT id, name, make, model, rtsp_url, rtsp_sub_url, enabled, \
                             record, detect, capabilities, detect_sensitivity, classify, kinds, \
                             onvif_endpoint, onvif_address, motion_masks, zones, auto_mask, \
                             onvif_mac, onvif_serial, retain_days, full_rate, \
                             motion_source FROM camera";

fn camera_from_row(r: &Row) -> Result<Camera> {
    let capabilities: Option<String> = r.get(9)?;
    Ok(Camera {
        id: uuid_column(r, 0)?,
        settings: Settings {
            name: r.get(1)?,
            make: r.get(2)?,
            model: r.get(3)?,
            rtsp_url: r.get(4)?,
            rtsp_sub_url: r.get(5)?,
            enabled: r.get(6)?,
            record: r.get(7)?,
            detect: r.get(8)?,
            // A value this version does not know counts as the default.
            detect_sensitivity: Sensitivity::from_name(&r.get::<_, String>(10)?)
                .unwrap_or_default(),
            classify: r.get(11)?,
            kinds: kinds_from_text(&r.get::<_, String>(12)?),
            onvif: match (r.get(13)?, r.get(14)?) {
                (Some(endpoint), Some(address)) => Some(OnvifLink {
                    endpoint,
                    address,
                    seen: Seen {
                        mac: r.get(18)?,
                        serial: r.get(19)?,
                    },
                }),
                _ => None,
            },
            motion_masks: areas(&r.get::<_, String>(15)?, checked_masks),
            zones: areas(&r.get::<_, String>(16)?, checked_zones),
            auto_mask: r.get(17)?,
            // A value out of range (written by another version) counts as none.
            retain_days: r
                .get::<_, Option<i64>>(20)?
                .and_then(|d| u32::try_from(d).ok())
                .filter(|d| (1..=MAX_RETAIN_DAYS).contains(d)),
            full_rate: r.get(21)?,
            // A name this version does not know counts as the default.
            motion_source: r
                .get::<_, Option<String>>(22)?
                .and_then(|m| MotionSource::from_name(&m)),
        },
        // A row this version cannot read counts as not probed.
        capabilities: capabilities.and_then(|json| serde_json::from_str(&json).ok()),
    })
}

fn capabilities_json(capabilities: &Capabilities) -> String {
    serde_json::to_string(capabilities).expect("capabilities serialize")
}

#[cfg(test)]
mod tests {
    use super::super::test_support::{camera, event, temp_dir};
    use super::*;

    #[test]
    fn what_a_cameras_deletion_deletes_is_its_own_segments_and_events() {
        let dir = temp_dir("camera-stored");
        let mut store = Store::open(&dir).unwrap();
        let (a, b) = (camera("a"), camera("b"));
        store.insert_camera(&a, 1).unwrap();
        store.insert_camera(&b, 2).unwrap();
        let nothing = CameraStored {
            segments: 0,
            segment_bytes: 0,
            recorded_ms: 0,
            first_ms: None,
            last_ms: None,
            events: 0,
            kept: 0,
        };
        assert_eq!(store.camera_stored(a.id).unwrap(), Some(nothing));
        for (cam, start_ms, bytes) in [(a.id, 0, 5), (a.id, 30_000, 7), (b.id, 10_000, 11)] {
            let path = format!("{cam}/{start_ms}.mp4");
            let segment = crate::store::Segment {
                camera_id: cam,
                start_ms,
                end_ms: start_ms + 10_000,
                bytes,
                path,
            };
            store.insert_segment(&segment).unwrap();
        }
        let mut ids = Vec::new();
        for cam in [a.id, a.id, a.id, b.id] {
            let event = crate::event::Event {
                ended_at_ms: 2_000,
                ..event(cam, 1_000, None)
            };
            store.insert_event(&event, 0, 100).unwrap();
            ids.push(event.id);
        }
        for id in [ids[0], ids[3]] {
            store.mark_event(id, None, Some(true), u64::MAX).unwrap();
        }
        assert_eq!(
            store.camera_stored(a.id).unwrap(),
            Some(CameraStored {
                segments: 2,
                segment_bytes: 12,
                recorded_ms: 20_000,
                first_ms: Some(0),
                last_ms: Some(40_000),
                events: 3,
                kept: 1,
            })
        );
        store.delete_camera(a.id).unwrap().unwrap();
        assert_eq!(store.camera_stored(a.id).unwrap(), None);
        assert_eq!(store.camera_stored(b.id).unwrap().unwrap().events, 1);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn cameras_round_trip_across_reopen() {
        let dir = temp_dir("cameras");
        let a = camera("a");
        let mut b = camera("b");
        b.settings.rtsp_sub_url = Some("rtsp://h/sub".into());
        b.settings.classify = false;
        b.settings.kinds = vec![Kind::Person, Kind::Package];
        b.settings.onvif = Some(OnvifLink {
            endpoint: "urn:uuid:1".into(),
            address: "http://10.0.0.5/onvif/device_service".into(),
            seen: Seen {
                mac: Some("02:00:0a:00:00:05".into()),
                serial: None,
            },
        });
        let triangle = serde_json::json!([[0.1, 0.1], [0.9, 0.1], [0.5, 0.75]]);
        b.settings.motion_masks = checked_masks(&serde_json::json!([triangle])).unwrap();
        b.settings.zones = checked_zones(&serde_json::json!([
            {"name": "Drive", "polygon": triangle, "kinds": ["vehicle"]},
        ]))
        .unwrap();
        b.settings.auto_mask = false;
        b.settings.retain_days = Some(3650);
        b.settings.motion_source = Some(MotionSource::Camera);
        {
            let store = Store::open(&dir).unwrap();
            store.insert_camera(&a, 1).unwrap();
            store.insert_camera(&b, 2).unwrap();
            let caps = Capabilities {
                video_codec: "h264".into(),
                width: 640,
                height: 360,
                fps: 25,
                audio_codec: Some("pcm_alaw".into()),
            };
            assert!(store.set_capabilities(b.id, &caps).unwrap());
            b.capabilities = Some(caps);
            assert!(
                !store
                    .set_capabilities(Uuid::new_v4(), b.capabilities.as_ref().unwrap())
                    .unwrap()
            );
        }
        let mut store = Store::open(&dir).unwrap();
        assert_eq!(*store.cameras().unwrap(), vec![a.clone(), b.clone()]);
        let mut changed = b.clone();
        changed.settings.name = "b2".into();
        changed.settings.rtsp_sub_url = None;
        changed.settings.classify = true;
        changed.settings.kinds = vec![Kind::Animal];
        changed.settings.motion_masks.clear();
        changed.settings.zones[0].name = "Gate".into();
        changed.settings.auto_mask = true;
        changed.settings.retain_days = None;
        changed.settings.motion_source = Some(MotionSource::Node);
        changed.capabilities = None;
        assert_eq!(*store.cameras().unwrap(), vec![a.clone(), b.clone()]);
        assert!(store.update_camera(&changed).unwrap());
        assert_eq!(
            store.cameras().unwrap()[1],
            changed,
            "the cached list is renewed"
        );
        assert_eq!(store.camera(b.id).unwrap(), Some(changed));
        assert!(store.update_camera(&b).unwrap());
        assert!(!store.update_camera(&camera("ghost")).unwrap());
        assert_eq!(store.camera(b.id).unwrap(), Some(b.clone()));
        // What was seen is kept only while the camera is linked to that address.
        let mut seen = b.settings.onvif.clone().unwrap();
        seen.seen.serial = Some("SN1".into());
        let mut elsewhere = seen.clone();
        elsewhere.address = "http://10.0.0.6/onvif/device_service".into();
        assert!(!store.set_onvif_seen(b.id, &elsewhere).unwrap());
        assert!(store.set_onvif_seen(b.id, &seen).unwrap());
        let read = store.camera(b.id).unwrap().unwrap().settings.onvif;
        assert_eq!(read, Some(seen));
        assert!(store.update_camera(&b).unwrap());
        assert_eq!(
            store.delete_camera(a.id).unwrap(),
            Some((a.clone(), vec![]))
        );
        assert_eq!(store.delete_camera(a.id).unwrap(), None);
        assert_eq!(store.camera(a.id).unwrap(), None);
        assert_eq!(*store.cameras().unwrap(), vec![b]);
        std::fs::remove_dir_all(dir).unwrap();
    }

    /// A database of version 6, made by that version's statements, with a
    /// camera in it: upgraded, the camera classifies into all four kinds.
    #[test]
    fn cameras_from_version_6_classify_into_every_kind() {
        let dir = temp_dir("cameras-v6");
        {
            let mut conn = rusqlite::Connection::open(dir.join("nvr-node.db")).unwrap();
            let tx = conn.transaction().unwrap();
            for sql in &super::super::UPGRADES[..6] {
                tx.execute_batch(sql).unwrap();
            }
            tx.pragma_update(None, "user_version", 6).unwrap();
            tx.execute(
                "INSERT INTO camera (id, name, make, model, rtsp_url, rtsp_sub_url, enabled,
                                     record, detect, capabilities, created_at_ms,
                                     detect_sensitivity)
                 VALUES ('6b1f0e52-3a57-4d2c-9a43-0d3d8c1e2f10', 'Old', '', '', 'rtsp://h/x',
                         NULL, 1, 1, 1, NULL, 5, 'high')",
                [],
            )
            .unwrap();
            tx.commit().unwrap();
        }
        let store = Store::open(&dir).unwrap();
        let cameras = store.cameras().unwrap();
        let settings = &cameras[0].settings;
        assert_eq!(settings.name, "Old");
        assert_eq!(settings.detect_sensitivity, Sensitivity::High);
        assert!(settings.classify);
        assert_eq!(settings.kinds, Kind::CLASSIFIED);
        assert!(settings.motion_masks.is_empty() && settings.zones.is_empty());
        assert!(settings.auto_mask, "leaves out what is always moving");
        let version: usize = store
            .conn
            .pragma_query_value(None, "user_version", |r| r.get(0))
            .unwrap();
        assert_eq!(version, super::super::UPGRADES.len());
        drop(store);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn a_folder_is_unknown_when_no_camera_living_or_deleted_is_its() {
        let dir = temp_dir("unknown-cameras");
        let mut store = Store::open(&dir).unwrap();
        let (living, deleted, unknown) = (camera("a"), camera("b"), Uuid::new_v4());
        store.insert_camera(&living, 1).unwrap();
        store.insert_camera(&deleted, 2).unwrap();
        store.delete_camera(deleted.id).unwrap();
        for (ids, expected) in [
            (vec![], None),
            (vec![living.id], None),
            (vec![living.id, deleted.id], None),
            (vec![living.id, unknown, deleted.id], Some(unknown)),
            (vec![unknown, living.id], Some(unknown)),
        ] {
            assert_eq!(
                store.first_unknown_camera(&ids).unwrap(),
                expected,
                "{ids:?}"
            );
        }
        drop(store);
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn masks_and_zones_a_row_cannot_hold_count_as_none() {
        assert!(areas("[[[0,0],[1,0],[1,1]]]", checked_masks).len() == 1);
        for text in ["", "{", "[[[0,0],[2,0],[1,1]]]", "null"] {
            assert!(areas(text, checked_masks).is_empty(), "{text:?}");
            assert!(areas(text, checked_zones).is_empty(), "{text:?}");
        }
    }

    #[test]
    fn unknown_kinds_in_a_row_are_left_out() {
        assert_eq!(kinds_from_text("person,dragon"), [Kind::Person]);
        assert_eq!(kinds_from_text("dragon"), Kind::CLASSIFIED);
        assert_eq!(kinds_from_text(""), Kind::CLASSIFIED);
        assert_eq!(
            kinds_text(&[Kind::Vehicle, Kind::Package]),
            "vehicle,package"
        );
    }
}
