//! Property tests of everything that parses what clients send: random and
//! mutated inputs for a bounded time (2 s each), checking that nothing panics,
//! that every refusal is a 4xx, and that what is accepted keeps its rules.
//! A failure prints the seed; `PROPERTY_SEED=<seed>` replays it.

use std::time::{Duration, Instant};

use crate::cameras::camera::{Settings, SettingsPatch};
use crate::cameras::rtsp_url::{redact, rtsp_endpoint};
use crate::error::Kind;
use crate::event::NewEvent;
use crate::web::{guard, routes};
use nvr_base::rng::Rng;

const BUDGET: Duration = Duration::from_secs(2);

const PIECES: &[&str] = &[
    "{",
    "}",
    "[",
    "]",
    ":",
    ",",
    "\"",
    "\\",
    "\\u0000",
    "\\ud800",
    "null",
    "true",
    "1e999",
    "-1",
    "0.5",
    "\"name\"",
    "\"rtspUrl\"",
    "\"rtspSubUrl\"",
    "\"make\"",
    "\"model\"",
    "\"enabled\"",
    "\"cameraId\"",
    "\"kind\"",
    "\"score\"",
    "\"startedAt\"",
    "\"endedAt\"",
    "\"clipPath\"",
    "\"rtsp://u:p@h:554/x\"",
    "\"exec:sh\"",
    "\"rtsp://h/#x\"",
    "\"person\"",
    "\"2026-11-22T10:04:05.123Z\"",
    "é",
    "\u{202e}",
    "\n",
    " ",
    "\u{0}",
    "../",
    "%00",
    "#",
    "@",
    "[::1]",
];

/// A random body: valid JSON shapes with random pieces, or raw byte soup.
fn body(rng: &mut Rng) -> Vec<u8> {
    let mut out = Vec::new();
    for _ in 0..rng.below(40) {
        if rng.below(8) == 0 {
            out.push(rng.next_u64() as u8);
        } else {
            out.extend_from_slice(rng.pick(PIECES).as_bytes());
        }
    }
    out
}

/// A plausible body with one field changed to a random value.
fn mutated_object(rng: &mut Rng, base: &serde_json::Value) -> Vec<u8> {
    let mut value = base.clone();
    let keys: Vec<String> = value.as_object().unwrap().keys().cloned().collect();
    let key = keys[rng.below(keys.len())].clone();
    let text = String::from_utf8_lossy(&body(rng)).into_owned();
    value[key] = match rng.below(7) {
        // What the URL checks must catch: an rtsp:// prefix and then anything.
        5 | 6 => serde_json::json!(format!("rtsp://h{text}")),
        0 => serde_json::Value::Null,
        1 => serde_json::json!(rng.next_u64() as f64 / 7.0 - 1e9),
        2 => serde_json::json!([text]),
        3 => serde_json::json!(text.repeat(rng.below(100))),
        _ => serde_json::json!(text),
    };
    serde_json::to_vec(&value).unwrap()
}

fn run(name: &str, mut case: impl FnMut(&mut Rng)) {
    let (mut rng, seed) = Rng::new();
    let started = Instant::now();
    let mut cases = 0u64;
    while started.elapsed() < BUDGET {
        let outcome = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case(&mut rng)));
        assert!(
            outcome.is_ok(),
            "{name}: failed after {cases} cases; replay with PROPERTY_SEED={seed}"
        );
        cases += 1;
    }
    eprintln!("{name}: {cases} cases in {BUDGET:?} (seed {seed})");
}

fn check_settings(settings: &Settings) {
    let chars = settings.name.chars().count();
    assert!((1..=64).contains(&chars) && !settings.name.chars().any(char::is_control));
    for url in std::iter::once(&settings.rtsp_url).chain(settings.rtsp_sub_url.iter()) {
        // Stored as go2rtc takes it: a lowercase scheme, and a port it can dial.
        assert!(
            url.starts_with("rtsp://") || url.starts_with("rtsps://"),
            "{url}"
        );
        assert!(rtsp_endpoint(url).is_some(), "{url}");
        assert!(
            !url.contains('#') && !url.chars().any(|c| c.is_whitespace() || c.is_control()),
            "{url}"
        );
        assert!(url.len() <= 2048);
    }
    assert!(settings.make.chars().count() <= 64 && settings.model.chars().count() <= 64);
    // Kinds: at least one, each once, in one order, never motion.
    assert!(!settings.kinds.is_empty() && settings.kinds.is_sorted_by(|a, b| a < b));
    assert!(!settings.kinds.contains(&crate::event::Kind::Motion));
}

#[test]
fn camera_bodies() {
    let base = serde_json::json!({
        "name": "Porch", "rtspUrl": "rtsp://u:p@10.0.0.2/main", "rtspSubUrl": "rtsp://10.0.0.2/sub",
        "make": "Acme", "model": "X", "enabled": true, "record": false, "detect": true,
        "classify": true, "kinds": ["person", "animal"],
    });
    run("camera bodies", |rng| {
        let input = if rng.below(2) == 0 {
            body(rng)
        } else {
            mutated_object(rng, &base)
        };
        match Settings::from_json(&input, true) {
            Ok(settings) => check_settings(&settings),
            Err(e) => assert_eq!(e.kind, Kind::BadRequest, "{}", e.message),
        }
        match SettingsPatch::from_json(&input) {
            Ok(patch) => {
                check_settings(&patch.apply(
                    &Settings::from_json(&serde_json::to_vec(&base).unwrap(), true).unwrap(),
                ))
            }
            Err(e) => assert_eq!(e.kind, Kind::BadRequest),
        }
    });
}

#[test]
fn event_bodies() {
    let base = serde_json::json!({
        "cameraId": uuid::Uuid::new_v4().to_string(), "kind": "person", "score": 0.5,
        "startedAt": "2026-11-22T10:04:05.123Z", "endedAt": "2026-11-22T10:04:06.123Z", "clipPath": "c/a.mp4",
    });
    run("event bodies", |rng| {
        let input = if rng.below(2) == 0 {
            body(rng)
        } else {
            mutated_object(rng, &base)
        };
        match NewEvent::from_json(&input) {
            Ok(event) => {
                assert!(
                    (0.0..=1.0).contains(&event.score) && event.ended_at_ms >= event.started_at_ms
                );
                assert!(
                    event
                        .clip_path
                        .is_none_or(|p| !p.starts_with('/') && !p.split('/').any(|s| s == ".."))
                );
            }
            Err(e) => assert_eq!(e.kind, Kind::BadRequest, "{}", e.message),
        }
    });
}

#[test]
fn routes_hosts_and_urls() {
    const METHODS: &[&str] = &[
        "GET", "POST", "PATCH", "DELETE", "PUT", "OPTIONS", "HEAD", "BREW",
    ];
    const SEGMENTS: &[&str] = &[
        "api", "cameras", "whep", "events", "status", "probe", "", "..", "%2e", "x",
    ];
    let id = uuid::Uuid::new_v4().to_string();
    run("routes, hosts and URLs", |rng| {
        let mut path = String::new();
        for _ in 0..rng.below(6) {
            path.push('/');
            path.push_str(if rng.below(4) == 0 {
                &id
            } else {
                rng.pick(SEGMENTS)
            });
        }
        if let Err(e) = routes::route(rng.pick(METHODS), &path) {
            assert!(
                matches!(e.kind, Kind::NotFound | Kind::MethodNotAllowed),
                "{path}: {e}"
            );
        }
        let text = String::from_utf8_lossy(&body(rng)).into_owned();
        guard::host_allowed(Some(&text), "board", &[]);
        guard::origin_allowed(Some(&text), Some(&text));
        let secret = format!("pw{}", rng.next_u64());
        let url = format!("rtsp://user:{secret}@{text}/x");
        assert!(!redact(&url).contains(&secret), "{url}");
        rtsp_endpoint(&url);
    });
}
