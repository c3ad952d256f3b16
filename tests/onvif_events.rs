//! The camera's own motion events (ONVIF PullPoint), through the real node
//! in a network namespace of the test's own (`common/netns.rs`, as
//! `onvif::`), against the device stand-in's Event service
//! (`crates/standins/src/onvif_device.rs`: no camera in the registries sends events), and
//! the stand-in itself checked with an independent client, onvif-zeep-async,
//! whose PullPoint manager Home Assistant uses.
//!
//! The node's camera here streams nothing (its RTSP address is a closed
//! port): what it hears of motion comes from the device alone, which the
//! camera JSON's `motionEvents` shows. These tests need root, as `onvif::`.

use std::path::Path;
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::go2rtc::Go2rtc;
use crate::common::netns::{self, TestNet};
use crate::common::onvif_device::{Auth, Device, Says};
use crate::common::rtsp_trap::Trap;
use crate::common::{self, Camera, Node, TempDir, wait_for};

/// A camera linked to `device`, detecting, its account the device's.
fn add_linked(node: &Node, device: &Device, password: &str, extra: Value) -> String {
    let mut body = json!({
        "name": "Porch",
        "rtspUrl": format!("rtsp://{}:{}/main", netns::HOST, common::closed_port()),
        "username": "admin",
        "password": password,
        "record": false,
        "detect": true,
        "onvif": { "endpoint": "urn:uuid:0b5e5a6e-1f0c-4c55-9d0f-2f1e3c7a9d01", "address": device.address() },
    });
    for (key, value) in extra.as_object().unwrap() {
        body[key] = value.clone();
    }
    node.add_camera(body)["id"].as_str().unwrap().to_owned()
}

fn events(node: &Node, id: &str) -> Value {
    node.camera(id)["motionEvents"].clone()
}

/// Waits up to `within` for camera `id`'s `motionEvents` to pass `check`.
fn wait_events(node: &Node, id: &str, within: Duration, check: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    let passed = wait_for(within, || {
        last = events(node, id);
        check(&last)
    });
    assert!(
        passed,
        "motionEvents within {within:?}: {last}\n{}",
        node.logs()
    );
    last
}

/// The node in `net`, with no relay.
fn node_in(net: &TestNet, data: &TempDir) -> Node {
    let relay = format!("http://{}:{}", netns::HOST, common::closed_port());
    Node::start_in(net, data.path(), &relay, &[])
}

#[test]
fn the_camera_s_motion_reaches_the_node_through_a_subscription_it_renews() {
    let net = TestNet::new();
    let password = common::password("events");
    let device = Device::start(netns::HOST, Auth::UsernameToken, "admin", &password, &[]);
    // The device grants 4 s at most, whatever is asked: the node must renew.
    device.grant_at_most(Duration::from_secs(4));
    let data = TempDir::new("onvif-events");
    let node = node_in(&net, &data);
    let id = add_linked(&node, &device, &password, json!({}));
    let shown = node.camera(&id);
    assert_eq!(shown["motionSource"], Value::Null, "{shown}");
    let receiving = wait_events(&node, &id, Duration::from_secs(20), |e| {
        e["state"] == "receiving"
    });
    assert_eq!(
        receiving["source"], "both",
        "the default where the device offers events"
    );
    assert_eq!(receiving["lastMessageAt"], Value::Null, "{receiving}");
    let subscribed = Instant::now();

    device.motion(true);
    let heard = wait_events(&node, &id, Duration::from_secs(3), |e| {
        !e["lastMessageAt"].is_null()
    });
    let first = common::ms(heard["lastMessageAt"].as_str().unwrap());
    // Past three of the device's 4 s grants, on the one subscription.
    let renewed = wait_for(Duration::from_secs(30), || {
        subscribed.elapsed() > Duration::from_secs(13) && device.allowed("Renew") >= 3
    });
    assert!(renewed, "renewed {} times", device.allowed("Renew"));
    device.motion(false);
    let later = wait_events(&node, &id, Duration::from_secs(3), |e| {
        e["lastMessageAt"]
            .as_str()
            .is_some_and(|at| common::ms(at) > first)
    });
    assert_eq!(later["state"], "receiving", "{later}");
    assert_eq!(device.allowed("CreatePullPointSubscription"), 1);
    assert_eq!(device.subscriptions(), 1);
    let calls = device.calls();
    assert!(
        calls
            .iter()
            .all(|c| c.allowed || c.operation == "GetSystemDateAndTime"),
        "a call not let in: {calls:?}"
    );

    // A bad motionSource changes nothing; "node" ends the subscription.
    let path = format!("/api/cameras/{id}");
    let refused = node.patch_json(&path, r#"{"motionSource":"onvif"}"#);
    assert_eq!(refused.status, 400, "{refused}");
    assert!(
        refused.error().starts_with("motionSource must be"),
        "{refused}"
    );
    let changed = node.patch_camera(&id, json!({ "motionSource": "node" }));
    assert_eq!(changed["motionSource"], "node", "{changed}");
    let off = wait_events(&node, &id, Duration::from_secs(5), |e| e["state"] == "off");
    assert_eq!(off["source"], "node", "{off}");
    assert!(
        wait_for(Duration::from_secs(12), || device.subscriptions() == 0),
        "still subscribed: {:?}",
        device.calls()
    );
    assert_eq!(device.allowed("Unsubscribe"), 1);
    common::assert_no_secret(&node.logs(), "the node's log");
}

#[test]
fn a_device_that_restarts_is_subscribed_again_and_a_stuck_motion_is_caught() {
    let net = TestNet::new();
    let password = common::password("restart");
    let device = Device::start(netns::HOST, Auth::HttpDigest, "admin", &password, &[]);
    let data = TempDir::new("onvif-events-restart");
    let node = node_in(&net, &data);
    let id = add_linked(
        &node,
        &device,
        &password,
        json!({ "motionSource": "camera" }),
    );
    let receiving = wait_events(&node, &id, Duration::from_secs(20), |e| {
        e["state"] == "receiving"
    });
    assert_eq!(receiving["source"], "camera", "{receiving}");

    device.restart();
    let resubscribed = wait_for(Duration::from_secs(30), || {
        device.allowed("CreatePullPointSubscription") >= 2 && device.subscriptions() == 1
    });
    assert!(resubscribed, "{:?}\n{}", device.calls(), node.logs());
    device.motion(true);
    let moving_since = Instant::now();
    let heard = wait_events(&node, &id, Duration::from_secs(10), |e| {
        e["state"] == "receiving" && !e["lastMessageAt"].is_null()
    });
    assert_eq!(heard["source"], "camera", "{heard}");

    // The node's own detector sees nothing (its camera streams nothing):
    // motion said for a minute is not believed, and the node's detector
    // stands in for the camera's.
    let stuck = wait_events(&node, &id, Duration::from_secs(80), |e| {
        e["state"] == "stuck"
    });
    let after = moving_since.elapsed();
    assert!(after >= Duration::from_secs(59), "stuck after {after:?}");
    assert_eq!(stuck["source"], "both", "{stuck}");
    assert!(
        stuck["detail"]
            .as_str()
            .unwrap_or("")
            .contains("not believed"),
        "{stuck}"
    );
    device.motion(false);
    let free = wait_events(&node, &id, Duration::from_secs(10), |e| {
        e["state"] == "receiving"
    });
    assert_eq!(free["source"], "camera", "{free}");
    common::assert_no_secret(&node.logs(), "the node's log");
}

#[test]
fn events_named_on_another_host_get_no_credentials() {
    let net = TestNet::new();
    net.add_device();
    let password = common::password("elsewhere");
    // A box of the LAN that counts who connects to it.
    let trap = net.in_device(|| Trap::start(netns::OTHER.parse().unwrap(), 0));
    let device = Device::start_saying(
        netns::HOST,
        Auth::UsernameToken,
        "admin",
        &password,
        &[],
        Says {
            events_host: Some(format!("{}:{}", netns::OTHER, trap.port)),
            ..Says::default()
        },
    );
    let data = TempDir::new("onvif-events-elsewhere");
    let node = node_in(&net, &data);
    let id = add_linked(&node, &device, &password, json!({}));
    // Its Event service is asked at the device's own address instead, and
    // the subscription it names elsewhere is not called.
    let failing = wait_events(&node, &id, Duration::from_secs(20), |e| {
        e["state"] == "failing"
    });
    let detail = failing["detail"].as_str().unwrap_or("");
    assert!(detail.contains("another host"), "{failing}");
    assert!(
        !detail.contains(netns::OTHER) && !detail.contains("http"),
        "{failing}"
    );
    assert!(
        device.allowed("CreatePullPointSubscription") >= 1,
        "{:?}",
        device.calls()
    );
    assert_eq!(trap.connections(), 0, "the other host was called");
    common::assert_no_secret(&node.logs(), "the node's log");
}

/// Runs `tests/onvif/zeep_pullpoint.py` with the venv's python against
/// `device`; its JSON verdict.
fn zeep_reads(device: &Device, password: &str, motion: impl FnOnce()) -> Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let python = root.join(".venv/bin/python");
    let script = root.join("tests/onvif/zeep_pullpoint.py");
    let child = std::process::Command::new(&python)
        .arg(&script)
        .args([netns::HOST, &device.port.to_string(), "admin", password])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| {
            panic!(
                "cannot run {} (tests/run.sh makes .venv with onvif-zeep-async): {e}",
                python.display()
            )
        });
    // Motion once it has subscribed and asked for the state as it is (of
    // which there is none yet).
    let subscribed = wait_for(Duration::from_secs(30), || {
        device.subscriptions() > 0 && device.allowed("SetSynchronizationPoint") > 0
    });
    if subscribed {
        motion();
    }
    let output = child.wait_with_output().unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    let report = format!(
        "command: {} {} {} {} admin <password>\nstatus: {}\nstdout: {stdout}\nstderr: {stderr}\ncalls: {:?}",
        python.display(),
        script.display(),
        netns::HOST,
        device.port,
        output.status,
        device.calls()
    );
    assert!(subscribed, "onvif-zeep-async never subscribed\n{report}");
    assert!(output.status.success(), "{report}");
    (stdout.lines().rev())
        .find_map(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| panic!("no verdict\n{report}"))
}

#[test]
fn the_stand_in_s_events_are_read_by_onvif_zeep_async() {
    // On the host end of a test network: the stand-in is a LAN device.
    let _net = TestNet::new();
    let password = common::password("zeep");
    let device = Device::start(netns::HOST, Auth::UsernameToken, "admin", &password, &[]);
    let verdict = zeep_reads(&device, &password, || {
        device.motion(true);
        device.motion(false);
        device.say("tns1:VideoSource/MotionAlarm", "State", true);
    });
    assert_eq!(
        verdict["messages"],
        json!([
            [
                "tns1:RuleEngine/CellMotionDetector/Motion",
                "IsMotion",
                "true"
            ],
            [
                "tns1:RuleEngine/CellMotionDetector/Motion",
                "IsMotion",
                "false"
            ],
            ["tns1:VideoSource/MotionAlarm", "State", "true"],
        ]),
        "{verdict}"
    );
    assert_eq!(verdict["lost"], false, "{verdict}");
    assert!(device.allowed("Unsubscribe") >= 1, "{:?}", device.calls());
}

/// What the test camera shows that the node's detector does not take for
/// motion: its box, barely there, crossing for 3 s.
const UNDER_THRESHOLD: &str = "faint 3";

#[test]
fn the_camera_s_motion_event_brings_the_node_to_full_rate_and_an_event_within_1_5_s() {
    let net = TestNet::new();
    let camera = Camera::start();
    // The test camera's scene, on the LAN the node is on.
    let streams = Go2rtc::start_at(
        netns::HOST,
        netns::HOST,
        None,
        &[("scene", &camera.url("", "/scene"))],
    );
    let password = common::password("full-rate");
    let device = Device::start(netns::HOST, Auth::UsernameToken, "admin", &password, &[]);
    let data = TempDir::new("onvif-events-full-rate");
    let recordings = data.path().join("recordings").display().to_string();
    let relay = format!("http://{}:{}", netns::HOST, common::closed_port());
    let env = [
        ("RECORDINGS_DIR", recordings.as_str()),
        ("RECORDINGS_RESERVE", "0"),
    ];
    let node = Node::start_in(&net, data.path(), &relay, &env);
    let id = add_linked(
        &node,
        &device,
        &password,
        json!({
            "rtspUrl": streams.rtsp_url("scene"),
            "record": true,
            "motionSource": "node",
        }),
    );
    node.settle(&id);

    // The node's own detector misses it.
    camera.scene(UNDER_THRESHOLD);
    thread::sleep(Duration::from_secs(8));
    let events = node.events_of(&id);
    assert!(
        events.is_empty(),
        "the node's detector took `{UNDER_THRESHOLD}` for motion, so it cannot \
         show the camera's word at work: {events:#?}"
    );

    // Heard from the camera, the same change is an event within 1.5 s.
    node.patch_camera(&id, json!({ "motionSource": "camera" }));
    wait_events(&node, &id, Duration::from_secs(20), |e| {
        e["state"] == "receiving" && e["source"] == "camera"
    });
    node.settle(&id);
    let said = common::now_ms();
    device.motion(true);
    camera.scene(UNDER_THRESHOLD);
    let mut seen = (Value::Null, Vec::new());
    let quick = wait_for(Duration::from_millis(1500), || {
        seen = (node.camera(&id)["keyFrames"].clone(), node.events_of(&id));
        seen.0["pace"] == "full" && !seen.1.is_empty()
    });
    let after = common::now_ms() - said;
    assert!(
        quick,
        "1.5 s after the camera said motion: keyFrames {}, events {:#?}\n{}",
        seen.0,
        seen.1,
        node.logs()
    );
    let started = common::ms(seen.1[0]["startedAt"].as_str().unwrap());
    assert!(
        (started - said).abs() <= 1500,
        "the event started {} ms from the camera's word",
        started - said
    );
    eprintln!("full rate and an event {after} ms after the camera's word");
    thread::sleep(Duration::from_secs(3));
    device.motion(false);
    let ended = wait_for(Duration::from_secs(60), || {
        let events = node.events_of(&id);
        events.len() == 1 && events[0]["clipUrl"].is_string()
    });
    assert!(ended, "{:#?}", node.events_of(&id));
    common::assert_no_secret(&node.logs(), "the node's log");
}
