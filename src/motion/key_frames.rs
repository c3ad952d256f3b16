//! What a camera's stream sends and how its motion watcher decodes it: key
//! frames only while nothing moves, where they come often enough to see a
//! person who crosses the picture in 3 s; every frame otherwise.

use std::time::Duration;

/// The longest key-frame interval watched on key frames alone: whatever is
/// in sight for 2 s or more is on at least one of them.
pub const KEY_PACE_LONGEST: Duration = Duration::from_secs(2);
/// Past this, motion on key frames alone would be found so late that the
/// camera's settings are worth changing: said in plain words.
const FOUND_LATE: Duration = Duration::from_secs(4);

/// One camera's stream and pace, as its watcher last saw them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct KeyFrames {
    /// The stream's key-frame interval, by its own clock; None until two
    /// key frames came.
    pub interval: Option<Duration>,
    /// Every frame is decoded (else key frames only).
    pub full: bool,
}

impl KeyFrames {
    /// Whether a stream of key frames `interval` apart may be watched on
    /// its key frames alone while nothing moves.
    pub fn key_pace_suits(interval: Option<Duration>) -> bool {
        interval.is_some_and(|i| i <= KEY_PACE_LONGEST)
    }

    /// The interval in seconds, to a tenth.
    pub fn interval_seconds(&self) -> Option<f64> {
        self.interval
            .map(|i| (i.as_secs_f64() * 10.0).round() / 10.0)
    }

    /// What the person should know of the camera's key frames, if anything.
    pub fn warning(&self) -> Option<String> {
        let interval = self.interval.filter(|&i| !Self::key_pace_suits(Some(i)))?;
        let seconds = self.interval_seconds().unwrap_or_default();
        let late = if interval > FOUND_LATE {
            format!(" On key frames alone motion would be found up to {seconds} s late, so")
        } else {
            " So".to_owned()
        };
        Some(format!(
            "Key frames come only every {seconds} s.{late} every frame is decoded, \
             at several times the CPU. Set the camera's I-frame interval (GOP) to 1 or 2 s."
        ))
    }

    /// Whether two states differ as the camera JSON shows them.
    pub fn shown_differently(&self, other: &KeyFrames) -> bool {
        self.full != other.full || self.interval_seconds() != other.interval_seconds()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn every(ms: u64) -> KeyFrames {
        KeyFrames {
            interval: Some(Duration::from_millis(ms)),
            full: true,
        }
    }

    #[test]
    fn key_frames_far_apart_are_warned_of() {
        assert!(KeyFrames::key_pace_suits(Some(Duration::from_secs(2))));
        assert!(!KeyFrames::key_pace_suits(Some(Duration::from_millis(
            2100
        ))));
        assert!(!KeyFrames::key_pace_suits(None), "not known yet");
        assert_eq!(every(1000).warning(), None);
        assert_eq!(
            every(3000).warning().unwrap(),
            "Key frames come only every 3 s. So every frame is decoded, at several times \
             the CPU. Set the camera's I-frame interval (GOP) to 1 or 2 s."
        );
        let ten = every(10_040).warning().unwrap();
        assert!(ten.starts_with("Key frames come only every 10 s. On key frames alone motion would be found up to 10 s late, so every frame"), "{ten}");
        assert!(!every(1000).shown_differently(&every(1040)));
        assert!(every(1000).shown_differently(&every(1100)));
    }
}
