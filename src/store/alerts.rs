//! Alerts' tables: the destinations (with their secrets, which never leave
//! the node but to their own destination), the outbox of alerts not yet
//! delivered, cameras snoozed, and in the `node` table whether the node is
//! armed and its VAPID key. An alert is written here before it is sent and
//! deleted once delivered: a restart or a power cut loses none.

use std::collections::HashMap;

use rusqlite::{OptionalExtension, params};
use uuid::Uuid;

use super::{Result, Store, uuid_column};
use crate::alerts::destination::{Destination, Target, rules, rules_json};

/// An alert waiting in the outbox.
#[derive(Clone, Debug, PartialEq)]
pub struct Outgoing {
    pub id: Uuid,
    pub destination: Uuid,
    pub created_ms: i64,
    pub due_ms: i64,
    pub attempts: u32,
    /// The message as JSON (`alerts::message::Message`).
    pub message: String,
}

/// How deliveries to a destination went.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Delivery {
    pub delivered: u64,
    pub last_delivered_ms: Option<i64>,
    /// The last failure in plain words, while no delivery followed it.
    pub last_failure: Option<String>,
    pub last_failure_ms: Option<i64>,
    /// Alerts dropped after an hour of tries.
    pub expired: u64,
    /// Alerts dropped, oldest first, when the queue was full.
    pub overflowed: u64,
    pub queued: u64,
}

const SELECT_DESTINATION: &str = "SELECT id, name, target, rules FROM alert_destination";

fn destination_from_row(r: &rusqlite::Row) -> Result<Destination> {
    let bad = |index: usize, e: serde_json::Error| {
        rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(e))
    };
    let target: String = r.get(2)?;
    let target = Target::from_stored(&target).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            2,
            rusqlite::types::Type::Text,
            "not a destination's target".into(),
        )
    })?;
    let rules_text: String = r.get(3)?;
    let value: serde_json::Value = serde_json::from_str(&rules_text).map_err(|e| bad(3, e))?;
    let rules = rules(&value, &Default::default()).map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(3, rusqlite::types::Type::Text, e.message.into())
    })?;
    Ok(Destination {
        id: uuid_column(r, 0)?,
        name: r.get(1)?,
        target,
        rules,
    })
}

fn failure(conn: &rusqlite::Connection, destination: Uuid, why: &str, now_ms: i64) -> Result<()> {
    conn.execute(
        "UPDATE alert_destination SET last_failure = ?2, last_failure_ms = ?3 WHERE id = ?1",
        params![destination.to_string(), why, now_ms],
    )?;
    Ok(())
}

impl Store {
    pub fn destinations(&self) -> Result<Vec<Destination>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("{SELECT_DESTINATION} ORDER BY created_at_ms, id"))?;
        stmt.query_map([], destination_from_row)?.collect()
    }

    pub fn destination(&self, id: Uuid) -> Result<Option<Destination>> {
        let mut stmt = self
            .conn
            .prepare_cached(&format!("{SELECT_DESTINATION} WHERE id = ?1"))?;
        stmt.query_row([id.to_string()], destination_from_row)
            .optional()
    }

    /// Adds it, unless there are `max` already: false.
    pub fn add_destination(&mut self, d: &Destination, now_ms: i64, max: usize) -> Result<bool> {
        let tx = self.conn.transaction()?;
        let count: i64 =
            tx.query_row("SELECT COUNT(*) FROM alert_destination", [], |r| r.get(0))?;
        if count as usize >= max {
            return Ok(false);
        }
        tx.execute(
            "INSERT INTO alert_destination (id, name, target, rules, created_at_ms)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                d.id.to_string(),
                d.name,
                d.target.stored(),
                rules_json(&d.rules).to_string(),
                now_ms,
            ],
        )?;
        tx.commit()?;
        Ok(true)
    }

    /// Writes its name, target and rules; false: no such destination.
    pub fn update_destination(&self, d: &Destination) -> Result<bool> {
        let n = self.conn.execute(
            "UPDATE alert_destination SET name = ?2, target = ?3, rules = ?4 WHERE id = ?1",
            params![
                d.id.to_string(),
                d.name,
                d.target.stored(),
                rules_json(&d.rules).to_string(),
            ],
        )?;
        Ok(n > 0)
    }

    /// Deletes it and its alerts not delivered; false: no such destination.
    pub fn delete_destination(&mut self, id: Uuid) -> Result<bool> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "DELETE FROM alert_outbox WHERE destination_id = ?1",
            [id.to_string()],
        )?;
        let n = tx.execute(
            "DELETE FROM alert_destination WHERE id = ?1",
            [id.to_string()],
        )?;
        tx.commit()?;
        Ok(n > 0)
    }

    /// Each destination's deliveries, and its alerts waiting.
    pub fn deliveries(&self) -> Result<HashMap<Uuid, Delivery>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT d.id, d.delivered, d.last_delivered_ms, d.last_failure, d.last_failure_ms,
                    d.expired, d.overflowed,
                    (SELECT COUNT(*) FROM alert_outbox o WHERE o.destination_id = d.id)
             FROM alert_destination d",
        )?;
        stmt.query_map([], |r| {
            Ok((
                uuid_column(r, 0)?,
                Delivery {
                    delivered: r.get(1)?,
                    last_delivered_ms: r.get(2)?,
                    last_failure: r.get(3)?,
                    last_failure_ms: r.get(4)?,
                    expired: r.get(5)?,
                    overflowed: r.get(6)?,
                    queued: r.get(7)?,
                },
            ))
        })?
        .collect()
    }

    /// Writes alerts to send (destination, message as JSON), in one
    /// transaction; a destination with `max_queued` waiting loses its
    /// oldest to make room, counted. Returns the alerts' ids.
    pub fn queue_alerts(
        &mut self,
        alerts: &[(Uuid, String)],
        now_ms: i64,
        max_queued: usize,
    ) -> Result<Vec<Uuid>> {
        let tx = self.conn.transaction()?;
        let mut ids = Vec::with_capacity(alerts.len());
        for (destination, message) in alerts {
            let destination = destination.to_string();
            let waiting: i64 = tx.query_row(
                "SELECT COUNT(*) FROM alert_outbox WHERE destination_id = ?1",
                [&destination],
                |r| r.get(0),
            )?;
            let excess = waiting + 1 - max_queued as i64;
            if excess > 0 {
                tx.execute(
                    "DELETE FROM alert_outbox WHERE id IN (SELECT id FROM alert_outbox
                     WHERE destination_id = ?1 ORDER BY created_at_ms, rowid LIMIT ?2)",
                    params![destination, excess],
                )?;
                tx.execute(
                    "UPDATE alert_destination SET overflowed = overflowed + ?2 WHERE id = ?1",
                    params![destination, excess],
                )?;
            }
            let id = crate::id::new_id();
            tx.execute(
                "INSERT INTO alert_outbox (id, destination_id, created_at_ms, due_at_ms, attempts, message)
                 VALUES (?1, ?2, ?3, ?3, 0, ?4)",
                params![id.to_string(), destination, now_ms, message],
            )?;
            ids.push(id);
        }
        tx.commit()?;
        Ok(ids)
    }

    /// The oldest alert waiting for `destination`.
    pub fn next_alert(&self, destination: Uuid) -> Result<Option<Outgoing>> {
        let mut stmt = self.conn.prepare_cached(
            "SELECT id, destination_id, created_at_ms, due_at_ms, attempts, message
             FROM alert_outbox WHERE destination_id = ?1 ORDER BY created_at_ms, rowid LIMIT 1",
        )?;
        stmt.query_row([destination.to_string()], |r| {
            Ok(Outgoing {
                id: uuid_column(r, 0)?,
                destination: uuid_column(r, 1)?,
                created_ms: r.get(2)?,
                due_ms: r.get(3)?,
                attempts: r.get(4)?,
                message: r.get(5)?,
            })
        })
        .optional()
    }

    /// The alert was delivered: it leaves the outbox.
    pub fn alert_delivered(&mut self, alert: &Outgoing, now_ms: i64) -> Result<()> {
        self.alert_done(alert, |tx, destination| {
            tx.execute(
                "UPDATE alert_destination SET delivered = delivered + 1,
                 last_delivered_ms = ?2, last_failure = NULL WHERE id = ?1",
                params![destination, now_ms],
            )
        })
    }

    /// The alert was tried for too long: dropped, counted.
    pub fn alert_expired(&mut self, alert: &Outgoing) -> Result<()> {
        self.alert_done(alert, |tx, destination| {
            tx.execute(
                "UPDATE alert_destination SET expired = expired + 1 WHERE id = ?1",
                [destination],
            )
        })
    }

    /// The alert leaves the outbox, and `count` writes it into its
    /// destination's figures, in one transaction.
    fn alert_done(
        &mut self,
        alert: &Outgoing,
        count: impl FnOnce(&rusqlite::Transaction, String) -> Result<usize>,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "DELETE FROM alert_outbox WHERE id = ?1",
            [alert.id.to_string()],
        )?;
        count(&tx, alert.destination.to_string())?;
        tx.commit()
    }

    /// A try failed (`why`, in plain words): it waits until `due_ms`.
    pub fn alert_failed(
        &mut self,
        alert: &Outgoing,
        why: &str,
        now_ms: i64,
        due_ms: i64,
    ) -> Result<()> {
        let tx = self.conn.transaction()?;
        tx.execute(
            "UPDATE alert_outbox SET attempts = attempts + 1, due_at_ms = ?2 WHERE id = ?1",
            params![alert.id.to_string(), due_ms],
        )?;
        failure(&tx, alert.destination, why, now_ms)?;
        tx.commit()
    }

    /// Records a failure of `destination` (a test's, or a try's).
    pub fn destination_failed(&self, destination: Uuid, why: &str, now_ms: i64) -> Result<()> {
        failure(&self.conn, destination, why, now_ms)
    }

    /// A test was delivered.
    pub fn destination_delivered(&self, destination: Uuid, now_ms: i64) -> Result<()> {
        self.conn.execute(
            "UPDATE alert_destination SET last_delivered_ms = ?2, last_failure = NULL WHERE id = ?1",
            params![destination.to_string(), now_ms],
        )?;
        Ok(())
    }

    /// Every alert waiting is due at `now_ms`: after a restart, at once.
    pub fn alerts_due_now(&self, now_ms: i64) -> Result<()> {
        self.conn
            .execute("UPDATE alert_outbox SET due_at_ms = ?1", [now_ms])?;
        Ok(())
    }

    /// Whether alerts go out at all (on until a person turns them off).
    pub fn armed(&self) -> Result<bool> {
        Ok(self.node_value("alerts_armed")?.as_deref() != Some("false"))
    }

    pub fn set_armed(&self, armed: bool) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO node (key, value) VALUES ('alerts_armed', ?1)",
            [if armed { "true" } else { "false" }],
        )?;
        Ok(())
    }

    /// The cameras snoozed until a moment after `now_ms`, and until when.
    pub fn snoozes(&self, now_ms: i64) -> Result<HashMap<Uuid, i64>> {
        let mut stmt = self
            .conn
            .prepare_cached("SELECT camera_id, until_ms FROM alert_snooze WHERE until_ms > ?1")?;
        stmt.query_map([now_ms], |r| Ok((uuid_column(r, 0)?, r.get(1)?)))?
            .collect()
    }

    /// Snoozes `camera` until `until_ms` (earlier ones are dropped), or
    /// wakes it (None).
    pub fn snooze(&self, camera: Uuid, until_ms: Option<i64>, now_ms: i64) -> Result<()> {
        self.conn
            .execute("DELETE FROM alert_snooze WHERE until_ms <= ?1", [now_ms])?;
        match until_ms {
            Some(until) => self.conn.execute(
                "INSERT OR REPLACE INTO alert_snooze (camera_id, until_ms) VALUES (?1, ?2)",
                params![camera.to_string(), until],
            )?,
            None => self.conn.execute(
                "DELETE FROM alert_snooze WHERE camera_id = ?1",
                [camera.to_string()],
            )?,
        };
        Ok(())
    }

    /// The node's VAPID key (PKCS#8): the one kept, else `make()`'s, kept
    /// for good.
    pub fn vapid_key(&self, make: impl FnOnce() -> Vec<u8>) -> Result<Vec<u8>> {
        use base64::Engine;
        use base64::engine::general_purpose::STANDARD;
        let kept = self
            .node_value("vapid_key")?
            .and_then(|text| STANDARD.decode(text).ok());
        if let Some(key) = kept {
            return Ok(key);
        }
        let key = make();
        self.conn.execute(
            "INSERT OR REPLACE INTO node (key, value) VALUES ('vapid_key', ?1)",
            [STANDARD.encode(&key)],
        )?;
        Ok(key)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerts::destination::from_new;
    use crate::store::test_support::temp_dir;

    fn hook(name: &str) -> Destination {
        let body = serde_json::json!({"name": name, "type": "webhook", "url": "https://hooks.example.com/x"});
        from_new(body.as_object().unwrap()).unwrap()
    }

    #[test]
    fn destinations_are_kept_with_their_secrets_and_bounded() {
        let dir = temp_dir("alert-destinations");
        let mut store = Store::open(&dir).unwrap();
        let a = hook("a");
        assert!(store.add_destination(&a, 1, 2).unwrap());
        assert!(store.add_destination(&hook("b"), 2, 2).unwrap());
        assert!(
            !store.add_destination(&hook("c"), 3, 2).unwrap(),
            "at the bound"
        );
        drop(store);
        let mut store = Store::open(&dir).unwrap();
        let kept = store.destinations().unwrap();
        assert_eq!(kept.len(), 2);
        assert_eq!(kept[0], a, "secret and rules as written");
        let mut renamed = a.clone();
        renamed.name = "A".into();
        assert!(store.update_destination(&renamed).unwrap());
        assert_eq!(store.destination(a.id).unwrap(), Some(renamed));
        assert!(store.delete_destination(a.id).unwrap());
        assert!(!store.delete_destination(a.id).unwrap());
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn the_outbox_keeps_alerts_until_delivered_or_expired_and_drops_the_oldest_when_full() {
        let dir = temp_dir("alert-outbox");
        let mut store = Store::open(&dir).unwrap();
        let d = hook("d");
        store.add_destination(&d, 0, 8).unwrap();
        let ids = store
            .queue_alerts(
                &[(d.id, "1".into()), (d.id, "2".into()), (d.id, "3".into())],
                10,
                2,
            )
            .unwrap();
        assert_eq!(ids.len(), 3);
        let next = store.next_alert(d.id).unwrap().unwrap();
        assert_eq!(
            (next.message.as_str(), next.attempts),
            ("2", 0),
            "the oldest went"
        );
        store
            .alert_failed(&next, "no answer from h", 11, 5_000)
            .unwrap();
        drop(store);
        let mut store = Store::open(&dir).unwrap();
        let again = store.next_alert(d.id).unwrap().unwrap();
        assert_eq!(
            (again.id, again.attempts, again.due_ms),
            (next.id, 1, 5_000)
        );
        store.alerts_due_now(20).unwrap();
        assert_eq!(store.next_alert(d.id).unwrap().unwrap().due_ms, 20);
        store.alert_delivered(&again, 30).unwrap();
        let last = store.next_alert(d.id).unwrap().unwrap();
        assert_eq!(last.message, "3");
        store.alert_expired(&last).unwrap();
        assert_eq!(store.next_alert(d.id).unwrap(), None);
        let delivery = &store.deliveries().unwrap()[&d.id];
        assert_eq!(
            *delivery,
            Delivery {
                delivered: 1,
                last_delivered_ms: Some(30),
                last_failure: None,
                last_failure_ms: Some(11),
                expired: 1,
                overflowed: 1,
                queued: 0,
            }
        );
        store.queue_alerts(&[(d.id, "4".into())], 40, 2).unwrap();
        assert!(store.delete_destination(d.id).unwrap());
        assert_eq!(
            store.next_alert(d.id).unwrap(),
            None,
            "its alerts went with it"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn armed_snoozes_and_the_vapid_key_are_kept() {
        let dir = temp_dir("alert-settings");
        let store = Store::open(&dir).unwrap();
        assert!(store.armed().unwrap(), "armed until turned off");
        store.set_armed(false).unwrap();
        assert!(!store.armed().unwrap());
        let camera = Uuid::new_v4();
        store.snooze(camera, Some(100), 0).unwrap();
        assert_eq!(store.snoozes(50).unwrap(), HashMap::from([(camera, 100)]));
        assert!(store.snoozes(100).unwrap().is_empty(), "over");
        store.snooze(camera, None, 60).unwrap();
        assert!(store.snoozes(0).unwrap().is_empty());
        let key = store.vapid_key(|| vec![1, 2, 3]).unwrap();
        assert_eq!(store.vapid_key(|| vec![9]).unwrap(), key, "made once");
        std::fs::remove_dir_all(dir).unwrap();
    }
}
