//! WHEP sessions handed out by the node: each is the resource named in the
//! `Location` of a 201, remembered with the relay's own session (if the relay
//! named one) so that a `DELETE` can end both.

use std::collections::VecDeque;
use std::sync::Mutex;

use uuid::Uuid;

/// Sessions remembered at most; clients that never DELETE cannot grow the list.
const MAX_SESSIONS: usize = 256;

#[derive(Debug, PartialEq)]
pub struct Session {
    pub id: Uuid,
    pub camera: Uuid,
    /// The relay's `Location` for its side of the session, when it gave one.
    pub relay_location: Option<String>,
}

#[derive(Default)]
pub struct Sessions {
    open: Mutex<VecDeque<Session>>,
}

impl Sessions {
    /// Remembers a new session and returns its id; forgets the oldest past the limit.
    pub fn open(&self, camera: Uuid, relay_location: Option<String>) -> Uuid {
        let id = crate::id::new_id();
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.len() == MAX_SESSIONS {
            open.pop_front();
        }
        open.push_back(Session {
            id,
            camera,
            relay_location,
        });
        id
    }

    /// Forgets session `id` of `camera` and returns it, if it was open.
    pub fn close(&self, camera: Uuid, id: Uuid) -> Option<Session> {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let index = open.iter().position(|s| s.id == id && s.camera == camera)?;
        open.remove(index)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn open_and_close() {
        let sessions = Sessions::default();
        let (camera, other) = (Uuid::new_v4(), Uuid::new_v4());
        let id = sessions.open(camera, Some("webrtc?id=1".into()));
        assert_eq!(sessions.close(other, id), None, "another camera's path");
        let closed = sessions.close(camera, id).unwrap();
        assert_eq!(closed.relay_location.as_deref(), Some("webrtc?id=1"));
        assert_eq!(sessions.close(camera, id), None, "closed once");
    }

    #[test]
    fn the_oldest_is_forgotten_past_the_limit() {
        let sessions = Sessions::default();
        let camera = Uuid::new_v4();
        let first = sessions.open(camera, None);
        let second = sessions.open(camera, None);
        for _ in 2..MAX_SESSIONS {
            sessions.open(camera, None);
        }
        let newest = sessions.open(camera, None);
        assert_eq!(sessions.close(camera, first), None);
        assert!(sessions.close(camera, second).is_some());
        assert!(sessions.close(camera, newest).is_some());
    }
}
