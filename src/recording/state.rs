//! What each camera's recorder is doing, as the API shows it, and what a
//! camera that should record shows before its recorder says anything (or
//! while the recordings disk keeps it from recording).

use std::collections::HashMap;

use uuid::Uuid;

/// What a camera's recorder is doing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    Off,
    Starting,
    Recording,
    Retrying,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::Off => "off",
            State::Starting => "starting",
            State::Recording => "recording",
            State::Retrying => "retrying",
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecorderState {
    pub state: State,
    /// When it entered this state, ms since the epoch.
    pub since_ms: i64,
    /// Why it is retrying, in plain words (never a URL).
    pub message: Option<String>,
}

/// What the API shows of a camera that `wanted` to record (enabled, with
/// `record` on): what its recorder last said (`known`); starting, when its
/// recorder has not started yet; retrying with the disk's `problem` (and its
/// time) while the recordings disk keeps it from recording; off since
/// `started_ms` when it never recorded.
pub fn shown(
    known: Option<&RecorderState>,
    wanted: bool,
    problem: Option<(&str, i64)>,
    now_ms: i64,
    started_ms: i64,
) -> RecorderState {
    match (known, problem) {
        (_, Some((message, since_ms))) if wanted => RecorderState {
            state: State::Retrying,
            since_ms,
            message: Some(message.to_owned()),
        },
        (Some(state), _) if !(wanted && state.state == State::Off) => state.clone(),
        _ if wanted => RecorderState {
            state: State::Starting,
            since_ms: now_ms,
            message: None,
        },
        (known, _) => known.cloned().unwrap_or(RecorderState {
            state: State::Off,
            since_ms: started_ms,
            message: None,
        }),
    }
}

/// Each camera's recorder state, by camera.
pub type States = HashMap<Uuid, RecorderState>;

#[cfg(test)]
mod tests {
    use super::*;

    fn state(state: State, since_ms: i64) -> RecorderState {
        RecorderState {
            state,
            since_ms,
            message: None,
        }
    }

    #[test]
    fn what_a_camera_shows() {
        let recording = state(State::Recording, 5);
        let off = state(State::Off, 7);
        let disk = Some(("the recordings disk is not mounted: ...", 3));
        let table = [
            // known, wanted, disk problem -> shown
            (Some(&recording), true, None, recording.clone()),
            (Some(&off), true, None, state(State::Starting, 100)),
            (None, true, None, state(State::Starting, 100)),
            (Some(&off), false, None, off.clone()),
            (None, false, None, state(State::Off, 1)),
            (Some(&recording), false, disk, recording.clone()),
            (
                Some(&recording),
                true,
                disk,
                RecorderState {
                    state: State::Retrying,
                    since_ms: 3,
                    message: Some("the recordings disk is not mounted: ...".into()),
                },
            ),
        ];
        for (known, wanted, problem, want) in table {
            assert_eq!(
                shown(known, wanted, problem, 100, 1),
                want,
                "{known:?} {wanted} {problem:?}"
            );
        }
    }
}
