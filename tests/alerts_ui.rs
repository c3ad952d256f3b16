//! The Notifications panel in the browser (`tests/e2e/alerts.mjs`, headless
//! Debian Chromium) against the real node, whose alerts go to far ends on a
//! LAN of the test's own (`common::lan`; the node refuses loopback ones): the
//! ntfy stand-in and webhook receiver of `tests/alerts/receivers.py`, and
//! web-push-testing, which decrypts what the node pushes. The script sets up
//! ntfy and webhooks through the forms, sends tests, snoozes from a tile,
//! turns on "Alert this phone", and has a push delivered to the page's
//! service worker through DevTools, then clicked, which opens the event, and
//! reads the panel at the node's LAN address, not a secure context; this
//! test then checks at the far ends that what the page said happened did.
//! The page is the node's over HTTPS, with the certificate the node made
//! itself, which Chromium trusts through the node's authority as a phone it
//! was installed on would.

use std::path::Path;
use std::process::Command;

use serde_json::{Value, json};

use crate::common::lan::Lan;
use crate::common::receivers::{PushService, Receivers};
use crate::common::{Node, TempDir, browser_script, closed_port, iso, now_ms};

/// A 3 s H.264 clip of ffmpeg's test picture at `path`, as a detector leaves one.
fn write_clip(path: &Path) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let output = Command::new("ffmpeg")
        .args(["-hide_banner", "-nostdin", "-loglevel", "error", "-y"])
        .args([
            "-f",
            "lavfi",
            "-i",
            "testsrc=size=320x180:rate=10",
            "-t",
            "3",
        ])
        .args([
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-pix_fmt",
            "yuv420p",
        ])
        .args(["-movflags", "+faststart"])
        .arg(path)
        .output()
        .expect("ffmpeg (Debian package ffmpeg) runs");
    assert!(
        output.status.success(),
        "ffmpeg: {}",
        String::from_utf8_lossy(&output.stderr)
    );
}

fn destination(node: &Node, name: &str) -> Value {
    let settings = node.get("/api/alerts").json();
    settings["destinations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no destination {name}: {settings}"))
}

#[test]
fn notifications_are_set_up_tested_snoozed_and_opened_in_the_browser() {
    let lan = Lan::new();
    let receivers = Receivers::start(&lan, 0, None);
    let push = PushService::start(&lan);
    let data = TempDir::new("alerts-ui");
    let relay = format!("http://127.0.0.1:{}", closed_port());
    // Also on the LAN's address, where the page is not a secure context;
    // HTTPS with the node's own certificate.
    let node = Node::start(
        data.path(),
        &relay,
        &[
            ("CLIPS_RESERVE", "0"),
            ("LISTEN_ADDRESS", "0.0.0.0"),
            ("HTTPS_PORT", "0"),
        ],
    );
    let https_port = node.https_port.expect("the node serves HTTPS");
    let ca = node.get("/api/tls/ca.crt");
    assert_eq!(ca.status, 200, "{ca}");
    let ca_file = data.path().join("node-ca.crt");
    std::fs::write(&ca_file, &ca.body).unwrap();
    // The name its certificate gives it: the machine's.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    let secure_url = format!("https://{}:{https_port}", host.trim());
    let camera = |name: &str| {
        let created = node.add_camera(json!({
            "name": name, "rtspUrl": format!("rtsp://127.0.0.1:{}/x", closed_port()),
            "record": false, "detect": false,
        }));
        created["id"].as_str().unwrap().to_owned()
    };
    let (door, _yard) = (camera("Front door"), camera("Back yard"));
    let zone = json!({"zones": [{"name": "Porch", "kinds": ["person"],
                                 "polygon": [[0.1, 0.5], [0.6, 0.5], [0.6, 0.95], [0.1, 0.95]]}]});
    node.patch_camera(&door, zone);
    write_clip(&data.path().join("clips/door.mp4"));
    let now = now_ms();
    let event = node.post_json(
        "/api/events",
        &json!({"cameraId": door, "kind": "person", "score": 0.9, "zones": ["Porch"],
                "startedAt": iso(now - 5_000), "endedAt": iso(now - 2_000), "clipPath": "clips/door.mp4"})
        .to_string(),
    );
    assert_eq!(event.status, 201, "{event}");
    let event = event.json()["id"].as_str().unwrap().to_owned();
    let ntfy = json!({"name": "Porch phone", "type": "ntfy", "server": receivers.url(),
                      "topic": "door_topic", "token": "tk_porch",
                      "rules": {"cameras": [door], "kinds": ["person"], "zones": ["Porch"],
                                "cooldownSeconds": 300, "atEnd": true}});
    let made = node.post_json("/api/alerts/destinations", &ntfy.to_string());
    assert_eq!(made.status, 201, "{made}");
    let key = node.get("/api/alerts").json()["vapidPublicKey"]
        .as_str()
        .unwrap()
        .to_owned();
    let (subscription, client) = push.subscribe(&key);
    let dead = format!("http://{}:{}/hook/dead", lan.address, closed_port());
    let shots = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&shots).unwrap();

    let verdict = browser_script(
        "alerts.mjs",
        &[
            "--url",
            &secure_url,
            "--api",
            &node.url(),
            "--ca",
            &ca_file.display().to_string(),
            "--receivers",
            &receivers.url(),
            "--dead",
            &dead,
            "--subscription",
            &subscription.to_string(),
            "--event",
            &event,
            "--lan-address",
            &lan.host_address,
            "--screenshots",
            &shots.display().to_string(),
        ],
    );
    assert!(
        verdict["ok"] == true,
        "{}\n{}",
        verdict["output"].as_str().unwrap_or_default(),
        node.logs()
    );
    eprintln!(
        "a test's result was shown {} ms after Send a test",
        verdict["testMs"]
    );

    // The page's test reached the receiver, and the secret it showed once
    // is the one the node signs with.
    let hooks = receivers.hooks();
    assert_eq!(hooks.len(), 1, "the page's test alone: {hooks:?}");
    assert_eq!(hooks[0]["body"]["type"], "test", "{hooks:?}");
    receivers.set_secret(verdict["secret"].as_str().unwrap());
    let hook = destination(&node, "Hook");
    let test = node.post(&format!(
        "/api/alerts/destinations/{}/test",
        hook["id"].as_str().unwrap()
    ));
    assert_eq!(test.json()["delivered"], true, "{test}");
    let hooks = receivers.hooks();
    assert_eq!(hooks[1]["signatureOk"], true, "{hooks:?}");

    // "Alert this phone" made a subscription the node pushes to: the
    // page's test, decrypted by web-push-testing.
    let pushed = push.messages(&client);
    assert_eq!(pushed.len(), 1, "{pushed:?}");
    assert_eq!(pushed[0]["title"], "Test alert from test-node");
    assert_eq!(pushed[0]["phase"], "test");

    let status = node.get("/api/status").json();
    assert_eq!(
        status["alerts"]["snoozed"][0]["cameraId"],
        door.as_str(),
        "snoozed from the notification: {}",
        status["alerts"]
    );
    let names: Vec<&str> = status["alerts"]["destinations"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["Porch phone", "Loop", "Hook", "Chrome on Linux"],
        "the loopback server and Dead are not there"
    );
}
