//! The node's identities, in the `node` key-value table: towards the cloud,
//! towards Home Assistant, and that of its recordings folder; and the
//! settings a person changed in the UI, each as `setting.NAME`.

use rusqlite::OptionalExtension;

use super::{Result, Store};

#[derive(Clone, Debug, PartialEq)]
pub struct Identity {
    pub node_id: String,
    /// Never logged, never shown.
    pub secret: String,
    /// Whether a person has claimed the node into an account.
    pub claimed: bool,
}

impl Store {
    /// The id the cloud gave this node, once it has registered. One lookup:
    /// status asks for it on every call, and needs no secret.
    pub fn node_id(&self) -> Result<Option<String>> {
        if let Some(node_id) = self.node_id.borrow().as_ref() {
            return Ok(node_id.clone());
        }
        let node_id = self.node_value("node_id")?;
        *self.node_id.borrow_mut() = Some(node_id.clone());
        Ok(node_id)
    }

    /// The node's own id, made at its first start and kept for good: Home
    /// Assistant knows the node by it (topics, client id), whether or not
    /// the cloud has given it one.
    pub fn local_id(&mut self) -> Result<String> {
        if let Some(id) = self.node_value("local_id")? {
            return Ok(id);
        }
        let id = crate::id::new_id().to_string();
        self.written();
        self.conn.execute(
            "INSERT INTO node (key, value) VALUES ('local_id', ?1)",
            [&id],
        )?;
        Ok(id)
    }

    /// The id of the recordings folder this node records into (its marker
    /// file holds the same), once it has one.
    pub fn recordings_disk(&self) -> Result<Option<String>> {
        self.node_value("recordings_disk")
    }

    pub fn set_recordings_disk(&self, id: &str) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO node (key, value) VALUES ('recordings_disk', ?1)",
            [id],
        )?;
        Ok(())
    }

    /// The settings changed in the UI: (name, text), by name.
    pub fn settings(&self) -> Result<Vec<(String, String)>> {
        let mut statement = self.conn.prepare_cached(
            "SELECT substr(key, 9), value FROM node WHERE key LIKE 'setting.%' ORDER BY key",
        )?;
        let rows = statement.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))?;
        rows.collect()
    }

    /// Sets each setting named to its text, or forgets it (None), in one
    /// transaction.
    pub fn set_settings(&mut self, changes: &[(&str, Option<&str>)]) -> Result<()> {
        self.written();
        let tx = self.conn.transaction()?;
        for (name, text) in changes {
            let key = format!("setting.{name}");
            tx.execute("DELETE FROM node WHERE key = ?1", [&key])?;
            if let Some(text) = text {
                tx.execute(
                    "INSERT INTO node (key, value) VALUES (?1, ?2)",
                    [key.as_str(), text],
                )?;
            }
        }
        tx.commit()
    }

    pub(super) fn node_value(&self, key: &str) -> Result<Option<String>> {
        self.conn
            .prepare_cached("SELECT value FROM node WHERE key = ?1")?
            .query_row([key], |r| r.get(0))
            .optional()
    }

    /// The node's cloud identity, once it has registered.
    pub fn identity(&self) -> Result<Option<Identity>> {
        let value = |key: &str| self.node_value(key);
        let (Some(node_id), Some(secret)) = (value("node_id")?, value("node_secret")?) else {
            return Ok(None);
        };
        let claimed = value("claimed")?.as_deref() == Some("true");
        Ok(Some(Identity {
            node_id,
            secret,
            claimed,
        }))
    }

    /// Stores the identity (or forgets it, with None) in one transaction.
    pub fn set_identity(&mut self, identity: Option<&Identity>) -> Result<()> {
        self.written();
        let tx = self.conn.transaction()?;
        tx.execute(
            "DELETE FROM node WHERE key IN ('node_id', 'node_secret', 'claimed')",
            [],
        )?;
        if let Some(identity) = identity {
            let claimed = if identity.claimed { "true" } else { "false" };
            let rows = [
                ("node_id", identity.node_id.as_str()),
                ("node_secret", &identity.secret),
                ("claimed", claimed),
            ];
            for (key, value) in rows {
                tx.execute(
                    "INSERT INTO node (key, value) VALUES (?1, ?2)",
                    [key, value],
                )?;
            }
        }
        tx.commit()
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_support::temp_dir;
    use super::*;
    use uuid::Uuid;

    #[test]
    fn identity_round_trip() {
        let dir = temp_dir("identity");
        let mut store = Store::open(&dir).unwrap();
        assert_eq!(store.identity().unwrap(), None);
        let identity = Identity {
            node_id: Uuid::new_v4().to_string(),
            secret: "s".into(),
            claimed: false,
        };
        store.set_identity(Some(&identity)).unwrap();
        let claimed = Identity {
            claimed: true,
            ..identity.clone()
        };
        store.set_identity(Some(&claimed)).unwrap();
        drop(store);
        let mut store = Store::open(&dir).unwrap();
        assert_eq!(store.identity().unwrap(), Some(claimed.clone()));
        assert_eq!(store.node_id().unwrap(), Some(claimed.node_id));
        store.set_identity(None).unwrap();
        assert_eq!(store.identity().unwrap(), None);
        let local = store.local_id().unwrap();
        assert_eq!(store.local_id().unwrap(), local, "kept");
        drop(store);
        assert_eq!(
            Store::open(&dir).unwrap().local_id().unwrap(),
            local,
            "kept over a restart"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn settings_round_trip() {
        let dir = temp_dir("settings");
        let mut store = Store::open(&dir).unwrap();
        assert_eq!(store.settings().unwrap(), []);
        store
            .set_settings(&[("NODE_NAME", Some("garage")), ("MAX_EVENTS", Some("5"))])
            .unwrap();
        store
            .set_settings(&[("MAX_EVENTS", None), ("EVENTS_RETAIN_DAYS", Some("3"))])
            .unwrap();
        drop(store);
        let store = Store::open(&dir).unwrap();
        let pair = |n: &str, v: &str| (n.to_owned(), v.to_owned());
        assert_eq!(
            store.settings().unwrap(),
            [pair("EVENTS_RETAIN_DAYS", "3"), pair("NODE_NAME", "garage")]
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
