//! The cloud link against a scripted cloud stand-in (`common/cloud.rs`): every
//! state status can show, restarts at each stage, and clip uploads.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::cloud::Cloud;
use crate::common::{Node, TempDir, closed_port, wait_for};
use serde_json::{Value, json};

fn start(dir: &Path, cloud: &Cloud) -> Node {
    let relay = format!("http://127.0.0.1:{}", closed_port());
    Node::start(dir, &relay, &[("CLOUD_URL", &cloud.url())])
}

fn status(node: &Node) -> Value {
    node.get("/api/status").json()
}

/// Polls status until `check` holds; returns every cloud state seen on the way.
fn watch_until(node: &Node, timeout: Duration, check: impl Fn(&Value) -> bool) -> BTreeSet<String> {
    let mut seen = BTreeSet::new();
    let deadline = Instant::now() + timeout;
    loop {
        let status = status(node);
        seen.insert(status["cloud"]["state"].as_str().unwrap().to_owned());
        if check(&status) {
            return seen;
        }
        assert!(
            Instant::now() < deadline,
            "timed out; last status {status}; states seen {seen:?}"
        );
        std::thread::sleep(Duration::from_millis(25));
    }
}

fn state_is(state: &'static str) -> impl Fn(&Value) -> bool {
    move |s| s["cloud"]["state"] == state
}

fn assert_claim_code(status: &Value) -> String {
    let cloud = &status["cloud"];
    let code = cloud["claimCode"]
        .as_str()
        .unwrap_or_else(|| panic!("no claim code: {status}"));
    let alphabet = "23456789ABCDEFGHJKMNPQRSTUVWXYZ";
    assert!(
        code.len() == 9
            && code.as_bytes()[4] == b'-'
            && code
                .chars()
                .filter(|c| *c != '-')
                .all(|c| alphabet.contains(c)),
        "claim code {code:?} is not XXXX-XXXX"
    );
    let expires = cloud["claimCodeExpiresAt"].as_str().unwrap();
    let expires_at = humantime::parse_rfc3339(expires).unwrap_or_else(|_| panic!("{expires}"));
    assert!(expires.len() == 24 && expires.ends_with('Z'), "{expires}");
    assert!(
        expires_at > std::time::SystemTime::now(),
        "{expires} is past"
    );
    code.to_owned()
}

fn registrations(cloud: &Cloud) -> usize {
    cloud
        .received()
        .iter()
        .filter(|r| r.method == "POST" && r.path == "/v1/nodes")
        .count()
}

#[test]
fn pairing_walks_every_state_and_survives_restarts() {
    let cloud = Cloud::start();
    cloud.set_delay(Duration::from_millis(300));
    let dir = TempDir::new("cloud-happy");
    let node = start(dir.path(), &cloud);
    let seen = watch_until(&node, Duration::from_secs(10), state_is("unclaimed"));
    assert!(seen.contains("registering"), "{seen:?}");
    let unclaimed = status(&node);
    let first_code = assert_claim_code(&unclaimed);
    let node_id = unclaimed["nodeId"]
        .as_str()
        .expect("a node id once registered")
        .to_owned();
    let remote = cloud
        .nodes()
        .get(&node_id)
        .cloned()
        .expect("registered with the cloud");
    assert_eq!(
        (remote.name.as_str(), remote.code.as_str()),
        ("test-node", first_code.replace('-', "").as_str())
    );

    // Restart while unclaimed: same identity, a fresh code, no new registration.
    node.kill();
    let node = start(dir.path(), &cloud);
    watch_until(&node, Duration::from_secs(10), state_is("unclaimed"));
    assert_eq!(status(&node)["nodeId"], node_id.as_str());
    assert_claim_code(&status(&node));
    assert_eq!(registrations(&cloud), 1);

    cloud.claim(&node_id);
    let seen = watch_until(&node, Duration::from_secs(10), state_is("online"));
    assert!(seen.contains("connecting"), "{seen:?}");
    let heartbeat = cloud.heartbeats().last().cloned().expect("a heartbeat");
    assert_eq!(
        heartbeat["cameras"],
        json!({ "total": 0, "enabled": 0, "online": 0 })
    );
    assert_eq!(heartbeat["relayHealthy"], false);

    // Restart while online: connecting, then online again, same id.
    node.kill();
    let node = start(dir.path(), &cloud);
    watch_until(&node, Duration::from_secs(10), state_is("online"));
    assert_eq!(status(&node)["nodeId"], node_id.as_str());
    assert_eq!(registrations(&cloud), 1);

    let every_call_authenticated = cloud
        .received()
        .iter()
        .filter(|r| r.path != "/v1/nodes")
        .all(|r| r.authorization.as_deref() == Some(&format!("Bearer {}", remote.secret)));
    assert!(every_call_authenticated);
    let text = status(&node).to_string() + &node.logs();
    assert!(!text.contains(&remote.secret), "the node secret leaked");
}

#[test]
fn an_expired_code_is_replaced_and_slow_down_is_obeyed() {
    let cloud = Cloud::start();
    cloud.set_code_lifetime(Duration::from_secs(3));
    let dir = TempDir::new("cloud-expiry");
    let node = start(dir.path(), &cloud);
    watch_until(&node, Duration::from_secs(10), state_is("unclaimed"));
    let first = assert_claim_code(&status(&node));
    watch_until(&node, Duration::from_secs(10), |s| {
        s["cloud"]["claimCode"].as_str().is_some_and(|c| c != first)
    });
    assert_claim_code(&status(&node));
    assert_eq!(registrations(&cloud), 1, "a new code, not a new node");

    cloud.set_code_lifetime(Duration::from_secs(600));
    cloud.slow_down(1);
    let polls_before = cloud.received().len();
    std::thread::sleep(Duration::from_secs(9));
    let polls: Vec<Instant> = cloud.received()[polls_before..]
        .iter()
        .filter(|r| r.path.ends_with("/claim"))
        .map(|r| r.at)
        .collect();
    let gaps: Vec<Duration> = polls.windows(2).map(|w| w[1] - w[0]).collect();
    // Interval 1 s; after slow_down it is 6 s (RFC 8628: 5 s more).
    assert!(
        gaps.iter().any(|g| *g >= Duration::from_millis(5800)),
        "gaps {gaps:?}"
    );
}

#[test]
fn the_cloud_going_down_and_removing_the_node() {
    let cloud = Cloud::start();
    let dir = TempDir::new("cloud-down");
    let node = start(dir.path(), &cloud);
    watch_until(&node, Duration::from_secs(10), state_is("unclaimed"));
    let node_id = status(&node)["nodeId"].as_str().unwrap().to_owned();
    cloud.claim(&node_id);
    watch_until(&node, Duration::from_secs(10), state_is("online"));

    cloud.set_down(true);
    watch_until(&node, Duration::from_secs(10), state_is("connecting"));
    cloud.set_down(false);
    watch_until(&node, Duration::from_secs(15), state_is("online"));
    let transitions = node.logs().matches("cloud link: connecting").count();
    assert!(
        transitions <= 2,
        "state changes are logged once each, not per retry:\n{}",
        node.logs()
    );

    cloud.remove(&node_id);
    watch_until(&node, Duration::from_secs(10), state_is("error"));
    let error = status(&node);
    assert!(
        error["cloud"]["message"]
            .as_str()
            .unwrap()
            .contains("no longer knows this node"),
        "{error}"
    );
    assert_eq!(
        error["nodeId"],
        Value::Null,
        "the old identity is forgotten"
    );

    // Restart during the pause: registers afresh.
    node.kill();
    let node = start(dir.path(), &cloud);
    watch_until(&node, Duration::from_secs(10), state_is("unclaimed"));
    let new_id = status(&node)["nodeId"].as_str().unwrap().to_owned();
    assert_ne!(new_id, node_id);
    assert_eq!(registrations(&cloud), 2);
}

#[test]
fn a_node_rejected_while_running_registers_again_after_a_pause() {
    let cloud = Cloud::start();
    let dir = TempDir::new("cloud-pause");
    let node = start(dir.path(), &cloud);
    watch_until(&node, Duration::from_secs(10), state_is("unclaimed"));
    let node_id = status(&node)["nodeId"].as_str().unwrap().to_owned();
    cloud.remove(&node_id);
    watch_until(&node, Duration::from_secs(10), state_is("error"));
    let seen = watch_until(&node, Duration::from_secs(20), state_is("unclaimed"));
    assert!(seen.contains("error"));
    assert_ne!(status(&node)["nodeId"], node_id.as_str());
}

#[test]
fn registering_survives_a_restart_while_the_cloud_is_down() {
    let cloud = Cloud::start();
    cloud.set_down(true);
    let dir = TempDir::new("cloud-registering");
    let node = start(dir.path(), &cloud);
    watch_until(&node, Duration::from_secs(5), state_is("registering"));
    assert_eq!(status(&node)["nodeId"], Value::Null);
    node.kill();
    let node = start(dir.path(), &cloud);
    watch_until(&node, Duration::from_secs(5), state_is("registering"));
    cloud.set_down(false);
    watch_until(&node, Duration::from_secs(15), state_is("unclaimed"));
    assert_eq!(
        cloud.nodes().len(),
        1,
        "one node registered once the cloud was back"
    );
}

#[test]
fn clips_are_uploaded_while_online() {
    let cloud = Cloud::start();
    let dir = TempDir::new("cloud-clips");
    std::fs::create_dir_all(dir.path().join("clips")).unwrap();
    std::fs::write(dir.path().join("clips/a.mp4"), b"clip-a").unwrap();
    std::fs::write(dir.path().join("clips/b.mp4"), b"clip-b").unwrap();
    let node = start(dir.path(), &cloud);
    let camera = node.add_camera(
        json!({ "name": "Door", "rtspUrl": format!("rtsp://127.0.0.1:{}/x", closed_port()) }),
    );
    let add = |start: &str, clip: Option<&str>| {
        let mut body = json!({
            "cameraId": camera["id"], "kind": "person", "score": 0.9,
            "startedAt": start, "endedAt": start,
        });
        if let Some(clip) = clip {
            body["clipPath"] = json!(clip);
        }
        let response = node.post_json("/api/events", &body.to_string());
        assert_eq!(response.status, 201, "{response}");
        response.json()["id"].as_str().unwrap().to_owned()
    };
    let older = add("2026-11-22T10:00:00.000Z", Some("clips/a.mp4"));
    let newer = add("2026-11-22T10:05:00.000Z", Some("clips/b.mp4"));
    let bare = add("2026-11-22T10:06:00.000Z", None);
    let clip_status = |id: &str| node.listed_event(id).expect("listed")["clipStatus"].clone();
    assert_eq!(
        clip_status(&older),
        "local",
        "nothing goes up before the link is online"
    );

    watch_until(&node, Duration::from_secs(10), state_is("unclaimed"));
    cloud.set_delay(Duration::from_millis(1500));
    cloud.claim(status(&node)["nodeId"].as_str().unwrap());
    assert!(
        wait_for(Duration::from_secs(15), || clip_status(&older)
            == "uploading"),
        "never seen uploading"
    );
    assert!(wait_for(Duration::from_secs(15), || clip_status(&newer)
        == "uploaded"));
    assert_eq!(clip_status(&older), "uploaded");
    assert_eq!(
        clip_status(&bare),
        "local",
        "an event without a clip stays local"
    );
    assert_eq!(cloud.clip(&older).as_deref(), Some(&b"clip-a"[..]));
    assert_eq!(cloud.clip(&newer).as_deref(), Some(&b"clip-b"[..]));
    let order: Vec<String> = cloud
        .received()
        .iter()
        .filter(|r| r.method == "PUT")
        .map(|r| r.path.clone())
        .collect();
    assert!(
        order[0].ends_with(&older) && order[1].ends_with(&newer),
        "oldest first: {order:?}"
    );
}

#[test]
fn a_clip_replaced_by_a_link_after_its_event_was_taken_is_not_uploaded() {
    let cloud = Cloud::start();
    let dir = TempDir::new("cloud-clip-links");
    let data = dir.path();
    for folder in ["clips/cam", "clips/folder", "elsewhere"] {
        std::fs::create_dir_all(data.join(folder)).unwrap();
    }
    for clip in [
        "clips/cam/a.mp4",
        "clips/folder/b.mp4",
        "clips/cam/good.mp4",
    ] {
        std::fs::write(data.join(clip), b"a clip the detector cut").unwrap();
    }
    let node = start(data, &cloud);
    let camera = node.add_camera(
        json!({ "name": "Door", "rtspUrl": format!("rtsp://127.0.0.1:{}/x", closed_port()) }),
    );
    let add = |start: &str, clip: &str| {
        let body = json!({
            "cameraId": camera["id"], "kind": "person", "score": 0.9,
            "startedAt": start, "endedAt": start, "clipPath": clip,
        });
        let response = node.post_json("/api/events", &body.to_string());
        assert_eq!(response.status, 201, "{response}");
        response.json()["id"].as_str().unwrap().to_owned()
    };
    // Oldest first: the two links are tried before the good clip.
    let linked = add("2026-11-22T10:00:00.000Z", "clips/cam/a.mp4");
    let in_linked_folder = add("2026-11-22T10:01:00.000Z", "clips/folder/b.mp4");
    let good = add("2026-11-22T10:02:00.000Z", "clips/cam/good.mp4");
    // After the events were taken: a link to the database, and a linked
    // folder holding a copy of it under the clip's name.
    std::fs::remove_file(data.join("clips/cam/a.mp4")).unwrap();
    std::os::unix::fs::symlink("../../nvr-node.db", data.join("clips/cam/a.mp4")).unwrap();
    std::fs::copy(data.join("nvr-node.db"), data.join("elsewhere/b.mp4")).unwrap();
    std::fs::remove_dir_all(data.join("clips/folder")).unwrap();
    std::os::unix::fs::symlink("../elsewhere", data.join("clips/folder")).unwrap();

    watch_until(&node, Duration::from_secs(10), state_is("unclaimed"));
    cloud.claim(status(&node)["nodeId"].as_str().unwrap());
    assert!(
        wait_for(Duration::from_secs(20), || cloud.clip(&good).is_some()),
        "the good clip was never uploaded"
    );
    assert_eq!(
        cloud.clip(&good).as_deref(),
        Some(&b"a clip the detector cut"[..])
    );
    for (id, what) in [(&linked, "a link"), (&in_linked_folder, "a linked folder")] {
        let uploaded = cloud.clip(id);
        assert!(
            !uploaded
                .as_deref()
                .unwrap_or_default()
                .starts_with(b"SQLite format 3"),
            "the database was uploaded through {what}"
        );
        assert_eq!(uploaded, None, "a clip was uploaded through {what}");
        let events = node.get("/api/events").json();
        let event = events
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id.as_str())
            .unwrap()
            .clone();
        assert_eq!(
            (&event["clipStatus"], &event["clipUrl"]),
            (&json!("local"), &Value::Null),
            "the event behind {what} has no clip any more: {event}"
        );
    }
}
