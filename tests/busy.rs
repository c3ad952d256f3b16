//! A busy real scene (issue 49): the test camera's `/busy`, a fixed camera
//! on a bridge over a motorway (dvr-scan 1.4.1's footage, pinned by
//! `tests/camera/get_photos.sh`), where a dozen cars and lorries move at
//! once all along, through the real node, ffmpeg and classifier. Each
//! thing that moves is to be seen on its own: the event is `vehicle`, and
//! keeps the cars it saw at once, each with its own box.

use std::path::Path;
use std::time::Duration;

use crate::common;
use crate::common::{Camera, Node, TempDir, now_ms, wait_for};
use serde_json::{Value, json};

/// How many cars seen at once, in different places, make the scene busy
/// as the event tells it: more than the one or two a quiet street shows.
const AT_ONCE: usize = 3;

/// Two boxes (`[left, top, right, bottom]`, shares of the picture) are two
/// things when they overlap by less than this (intersection over union):
/// SSD's own bar for one thing found twice is 0.5.
const SAME_THING_IOU: f64 = 0.5;

fn start_node(data: &TempDir) -> Node {
    let classifier = common::classifier::real();
    let env: Vec<(&str, &str)> = classifier.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Node::start_recording(data.path(), &data.path().join("recordings"), &env)
}

fn iou(a: &[f64], b: &[f64]) -> f64 {
    let w = (a[2].min(b[2]) - a[0].max(b[0])).max(0.0);
    let h = (a[3].min(b[3]) - a[1].max(b[1])).max(0.0);
    let inter = w * h;
    let area = |r: &[f64]| (r[2] - r[0]) * (r[3] - r[1]);
    let union = area(a) + area(b) - inter;
    if union <= 0.0 { 0.0 } else { inter / union }
}

/// The most vehicles of `event`'s objects seen at one moment (each one's
/// first to last sighting) in places apart from each other's.
fn vehicles_at_once(event: &Value) -> usize {
    let seen: Vec<(i64, i64, Vec<f64>)> = event["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|o| o["kind"] == "vehicle")
        .filter_map(|o| {
            let first = common::ms(o["firstSeenAt"].as_str()?);
            let last = common::ms(o["lastSeenAt"].as_str()?);
            let r: Vec<f64> = serde_json::from_value(o["box"].clone()).ok()?;
            (r.len() == 4).then_some((first, last, r))
        })
        .collect();
    seen.iter()
        .map(|(moment, ..)| {
            // Greedily, the boxes of those on at that moment that are apart.
            let mut apart: Vec<&Vec<f64>> = Vec::new();
            for (first, last, r) in &seen {
                if first <= moment
                    && moment <= last
                    && apart.iter().all(|a| iou(a, r) < SAME_THING_IOU)
                {
                    apart.push(r);
                }
            }
            apart.len()
        })
        .max()
        .unwrap_or(0)
}

/// An event, briefly: kind, score, how long, and its objects.
fn summary(event: &Value) -> String {
    let objects: Vec<String> = event["objects"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|o| format!("{} {} {}", o["kind"], o["score"], o["box"]))
        .collect();
    format!(
        "{} score {} from {} to {} (in progress: {}), objects [{}]",
        event["kind"],
        event["score"],
        event["startedAt"],
        event["endedAt"],
        event["inProgress"],
        objects.join("; ")
    )
}

#[test]
fn a_busy_motorway_gives_a_vehicle_event_with_several_cars_seen_at_once() {
    let footage = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/photos/busy.mp4");
    assert!(
        footage.is_file(),
        "the test camera has no busy footage: {} is missing; \
         `bash tests/camera/get_photos.sh target/photos` (run by tests/run.sh) puts it there",
        footage.display()
    );
    let camera = Camera::start();
    let data = TempDir::new("busy");
    let node = start_node(&data);
    let created = node.add_camera(json!({
        "name": "Motorway", "rtspUrl": camera.url("", "/busy")
    }));
    let id = created["id"].as_str().unwrap().to_owned();
    assert_eq!(created["classify"], true, "{created}");
    let added = now_ms();

    // The motorway never stops: the event goes on (5 minutes at most), its
    // kind and objects rewritten as it goes. Two minutes is dozens of
    // crops even on a loaded machine.
    let busy = |e: &Value| e["kind"] == "vehicle" && vehicles_at_once(e) >= AT_ONCE;
    let seen = wait_for(Duration::from_secs(120), || {
        node.events_of(&id).iter().any(busy)
    });
    let events = node.events_of(&id);
    let listed: Vec<String> = events.iter().map(summary).collect();
    assert!(
        seen,
        "no vehicle event with {AT_ONCE} cars seen at once, apart, within 120 s of the \
         camera's start (the most at once: {}); its events:\n{}\nthe node said:\n{}",
        events.iter().map(vehicles_at_once).max().unwrap_or(0),
        listed.join("\n"),
        what_it_said(&node)
    );
    let event = events.iter().find(|e| busy(e)).unwrap();
    eprintln!(
        "vehicle, {} cars at once, {} s after the camera was added: {}",
        vehicles_at_once(event),
        (now_ms() - added) / 1_000,
        summary(event)
    );
}

/// The node's log lines about motion and the classifier, for failures.
fn what_it_said(node: &Node) -> String {
    let logs = node.logs();
    let lines: Vec<&str> = logs
        .lines()
        .filter(|l| l.contains("classif") || l.contains("motion") || l.contains(" event "))
        .collect();
    lines.join("\n")
}
