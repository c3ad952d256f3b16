//! Limits on what the broker's messages may cost the node: how often one
//! kind of answer may follow them (a log line, discovery sent again), and
//! how much of a topic a log line shows. Pure: time is passed in.

use std::time::{Duration, Instant};

/// The most of a topic a log line shows, in characters.
const SHOWN_CHARS: usize = 100;

/// Lets something happen at most once per period, and counts the times it
/// held back.
#[derive(Debug)]
pub struct Throttle {
    every: Duration,
    last: Option<Instant>,
    held: u32,
}

impl Throttle {
    pub const fn new(every: Duration) -> Throttle {
        Throttle {
            every,
            last: None,
            held: 0,
        }
    }

    /// Whether it may happen at `now`: if so, with the number of times it
    /// was held back since it last happened.
    pub fn pass(&mut self, now: Instant) -> Option<u32> {
        if let Some(last) = self.last
            && now.saturating_duration_since(last) < self.every
        {
            self.held = self.held.saturating_add(1);
            return None;
        }
        self.last = Some(now);
        Some(std::mem::take(&mut self.held))
    }
}

/// The end of a log line that a throttle let through after holding back
/// `held` others.
pub fn held_back(held: u32) -> String {
    match held {
        0 => String::new(),
        n => format!(" ({n} more not logged since the last such line)"),
    }
}

/// `topic` as a log line shows it: its control characters escaped (a
/// newline in a topic must not start a line of its own), and cut after 100
/// characters (a topic may be 64 KiB).
pub fn shorten(topic: &str) -> String {
    let mut shown = String::new();
    for (i, c) in topic.chars().enumerate() {
        if i == SHOWN_CHARS {
            shown.push_str(&format!("… ({} bytes)", topic.len()));
            break;
        }
        if c.is_control() {
            shown.extend(c.escape_default());
        } else {
            shown.push(c);
        }
    }
    shown
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_throttle_passes_once_per_period_and_counts_the_rest() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut throttle = Throttle::new(Duration::from_secs(1));
        let table = [
            (0, Some(0)),
            (1, None),
            (999, None),
            (1000, Some(2)),
            (1500, None),
            (5000, Some(1)),
            (6000, Some(0)),
            // A time before the last pass (never from a monotonic clock) holds.
            (5999, None),
            (7000, Some(1)),
        ];
        for (ms, want) in table {
            assert_eq!(throttle.pass(at(ms)), want, "at {ms} ms");
        }
    }

    #[test]
    fn what_a_log_line_says_of_those_held_back() {
        assert_eq!(held_back(0), "");
        assert_eq!(
            held_back(19),
            " (19 more not logged since the last such line)"
        );
    }

    #[test]
    fn topics_in_log_lines() {
        let long = "x".repeat(70_000);
        let table: [(&str, String); 5] = [
            ("nvr/n/c/record/set", "nvr/n/c/record/set".into()),
            ("", String::new()),
            (
                "a\nforged line\r\t\u{1b}[2J",
                r"a\nforged line\r\t\u{1b}[2J".into(),
            ),
            (&long, format!("{}… (70000 bytes)", "x".repeat(100))),
            // Cut by characters, never inside one.
            (
                &"é".repeat(101),
                format!("{}… (202 bytes)", "é".repeat(100)),
            ),
        ];
        for (topic, want) in table {
            assert_eq!(shorten(topic), want, "{topic:.40}");
        }
        assert_eq!(shorten(&"y".repeat(100)), "y".repeat(100));
    }
}
