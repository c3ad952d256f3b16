//! New ids: random (version 4) UUIDs, from the system's generator through
//! ring (which rustls uses) rather than uuid's `v4`, which would link a
//! second getrandom into the boards' binary.

use ring::rand::{SecureRandom, SystemRandom};
use uuid::Uuid;

/// A new random id. Panics if the system gives no random bytes, as uuid's
/// `new_v4` does: an id must not repeat.
pub fn new_id() -> Uuid {
    let mut bytes = [0; 16];
    SystemRandom::new()
        .fill(&mut bytes)
        .expect("random bytes for a new id");
    uuid::Builder::from_random_bytes(bytes).into_uuid()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_random_version_4_uuids() {
        let (a, b) = (new_id(), new_id());
        assert_ne!(a, b);
        assert_eq!(a.get_version(), Some(uuid::Version::Random));
        assert_eq!(a.get_variant(), uuid::Variant::RFC4122);
    }
}
