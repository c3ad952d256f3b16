//! ONVIF: finding cameras with WS-Discovery, reading their streams with the
//! device service, and following a camera whose address changes, against the
//! real node, real go2rtc (as the ONVIF device and as the relay), the
//! GStreamer test camera behind it, and two stand-ins for what go2rtc cannot
//! show: a WS-Discovery responder (`common/wsd.rs`) and a device that wants a
//! password (`crates/standins/src/onvif_device.rs`).
//!
//! Multicast stays inside a network namespace of the test's own
//! (`common/netns.rs`): the node runs there, on 10.213.77.2, and reaches the
//! stand-ins and go2rtc on the host end of a veth pair (10.213.77.1). These
//! tests need root (`ip netns`, `ip link`) and say so otherwise.

use std::net::{Ipv4Addr, TcpListener};
use std::path::Path;
use std::time::{Duration, Instant};

use crate::common;
use crate::common::go2rtc::Go2rtc;
use crate::common::netns::{self, TestNet};
use crate::common::onvif_device::{Auth, Device, Says};
use crate::common::rtsp_trap::Trap;
use crate::common::wsd::Responder;
use crate::common::{Camera, Node, TempDir, now_ms, wait_for};
use serde_json::{Value, json};

const HOST: Ipv4Addr = Ipv4Addr::new(10, 213, 77, 1);
const MOVED: &str = "10.213.77.3";
const REFUSED: &str = "the camera refused the user name or password";

/// A node in `net`, recording into `data/recordings`, its relay `relay`,
/// looking at its cameras every 5 s.
fn node_in(net: &TestNet, data: &TempDir, relay: &Go2rtc) -> Node {
    let recordings = data.path().join("recordings").display().to_string();
    let env = [
        ("RECORDINGS_DIR", recordings.as_str()),
        ("RECORDINGS_RESERVE", "0"),
        ("CAMERA_CHECK_INTERVAL", "5s"),
    ];
    Node::start_in(net, data.path(), &relay.url(), &env)
}

/// The test camera behind go2rtc as the ONVIF device: `main` its 1280x720
/// mount, `sub` its 320x180 one, served on `host` (the RTSP port `rtsp_port`
/// if given).
fn device_go2rtc(camera: &Camera, host: &str, rtsp_port: Option<u16>) -> Go2rtc {
    let (main, sub) = (camera.url("", "/hd"), camera.url("", "/sub"));
    Go2rtc::start_at(host, host, rtsp_port, &[("main", &main), ("sub", &sub)])
}

/// The relay: its API on the test network (the node calls it from the
/// namespace), its WebRTC on loopback (the browser is in the root namespace).
fn relay_go2rtc() -> Go2rtc {
    Go2rtc::start_at(netns::HOST, "127.0.0.1", None, &[])
}

/// POST /api/discover; checks the answer's shape and that the probe went out
/// of the namespace's interface only.
fn discover(node: &Node) -> Value {
    let started = Instant::now();
    let response = node.post("/api/discover");
    assert_eq!(response.status, 200, "{response}");
    let found = response.json();
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "discovery took {took:?}");
    eprintln!("POST /api/discover answered in {:.2} s", took.as_secs_f64());
    assert_eq!(found["truncated"], false, "{found}");
    let interfaces = found["interfaces"].as_array().expect("interfaces");
    assert_eq!(interfaces.len(), 1, "{found}");
    assert_eq!(interfaces[0]["address"], netns::NODE, "{found}");
    found
}

/// The device `responder` answered for, as discovery lists it.
fn listed<'a>(found: &'a Value, responder: &Responder) -> &'a Value {
    let devices = found["devices"].as_array().expect("devices");
    (devices.iter())
        .find(|d| d["endpoint"] == responder.endpoint.as_str())
        .unwrap_or_else(|| panic!("{} is not among {found}", responder.endpoint))
}

/// POST /api/discover/streams.
fn streams(node: &Node, address: &str, username: &str, password: &str) -> common::Response {
    let mut body = json!({ "address": address });
    if !username.is_empty() {
        body["username"] = username.into();
        body["password"] = password.into();
    }
    let started = Instant::now();
    let response = node.post_json("/api/discover/streams", &body.to_string());
    eprintln!(
        "POST /api/discover/streams answered {} in {:.2} s",
        response.status,
        started.elapsed().as_secs_f64()
    );
    response
}

/// The profile whose token is `token`.
fn profile<'a>(answer: &'a Value, token: &str) -> &'a Value {
    let profiles = answer["profiles"].as_array().expect("profiles");
    (profiles.iter())
        .find(|p| p["token"] == token)
        .unwrap_or_else(|| panic!("no profile {token}: {answer}"))
}

/// Checks a streams answer for the test camera's 1280x720 25 fps mount as
/// profile `main` at `main_url` and its 320x180 10 fps one as `sub` at
/// `sub_url`, measured, not the 1920x1080 the device claims.
fn check_profiles(answer: &Value, main_url: &str, sub_url: &str) {
    assert_eq!(answer["profiles"].as_array().unwrap().len(), 2, "{answer}");
    for (token, url, width, height, fps) in [
        ("main", main_url, 1280, 720, 25),
        ("sub", sub_url, 320, 180, 10),
    ] {
        let (p, role) = (profile(answer, token), token);
        assert_eq!(p["url"], url, "{answer}");
        assert_eq!(p["measured"], true, "{answer}");
        assert_eq!(p["problem"], Value::Null, "{answer}");
        assert_eq!(
            (p["width"].as_u64(), p["height"].as_u64()),
            (Some(width), Some(height)),
            "{answer}"
        );
        assert_eq!(p["codec"], "h264", "{answer}");
        let measured_fps = p["fps"].as_f64().unwrap_or(0.0);
        assert!((measured_fps - fps as f64).abs() <= 1.0, "{answer}");
        assert_eq!(p["role"], role, "{answer}");
        assert!(
            !p["url"].as_str().unwrap().contains('@'),
            "user info in {answer}"
        );
    }
}

/// A camera made from a device's streams, through the API as the UI does:
/// URLs without user info, the credentials beside them, linked to the device.
fn add_camera(
    node: &Node,
    answer: &Value,
    device: &Value,
    username: &str,
    password: &str,
) -> String {
    let created = node.add_camera(json!({
        "name": device["name"],
        "rtspUrl": profile(answer, "main")["url"],
        "rtspSubUrl": profile(answer, "sub")["url"],
        "username": username,
        "password": password,
        "detect": false,
        "onvif": { "endpoint": device["endpoint"], "address": device["services"][0] },
    }));
    created["id"].as_str().expect("an id").to_owned()
}

/// The camera's recorded spans over the last `minutes` minutes and the next.
fn spans(node: &Node, id: &str, minutes: u64) -> Vec<Value> {
    let now = std::time::SystemTime::now();
    let at = |t| humantime::format_rfc3339_millis(t).to_string();
    let path = format!(
        "/api/cameras/{id}/recordings?start={}&end={}",
        at(now - Duration::from_secs(60 * minutes)),
        at(now + Duration::from_secs(60))
    );
    let response = node.get(&path);
    assert_eq!(response.status, 200, "{response}");
    response.json().as_array().cloned().unwrap_or_default()
}

/// Whether camera `id` is recording now.
fn recording(node: &Node, id: &str) -> bool {
    node.camera(id)["recording"]["state"] == "recording"
}

/// A hardware address as the API shows it: its last two octets.
fn shown_mac(mac: &str) -> String {
    format!("…{}", &mac[mac.len() - 6..])
}

/// A camera at [`HOST`] that records, linked to its ONVIF device, once the
/// node has noted what the device is.
struct Linked {
    id: String,
    /// go2rtc, serving the test camera's streams `main` and `sub`.
    streams: Go2rtc,
    /// The stand-in, as its ONVIF device: it wants a UsernameToken and has a
    /// serial number (go2rtc's is the Host it is asked at, so changes with
    /// its address, which a camera's does not).
    onvif: Device,
    responder: Responder,
    /// (token, RTSP URL) of the device's profiles.
    profiles: Vec<(String, String)>,
    says: Says,
    password: String,
}

impl Linked {
    /// Adds it through discovery as the UI does, with serial number `serial`.
    fn start(net: &TestNet, node: &Node, camera: &Camera, name: &str, serial: &str) -> Linked {
        let streams = device_go2rtc(camera, netns::HOST, None);
        let password = common::password(&name.to_lowercase());
        let profiles = vec![
            ("main".to_owned(), streams.rtsp_url("main")),
            ("sub".to_owned(), streams.rtsp_url("sub")),
        ];
        let says = Says {
            serial: Some(serial.into()),
            ..Says::default()
        };
        let onvif = Device::start_saying(
            netns::HOST,
            Auth::UsernameToken,
            "admin",
            &password,
            &Linked::pairs(&profiles),
            says.clone(),
        );
        let responder = Responder::start(HOST, name, &onvif.address());
        let found = discover(node);
        let listed = listed(&found, &responder).clone();
        let response = self::streams(node, &onvif.address(), "admin", &password);
        assert_eq!(response.status, 200, "{response}");
        let id = add_camera(node, &response.json(), &listed, "admin", &password);
        assert!(
            wait_for(Duration::from_secs(40), || recording(node, &id)),
            "never recorded: {}",
            node.camera(&id)
        );
        // While it works, the node notes its hardware address, and its serial
        // number, read with the account.
        let noted = wait_for(Duration::from_secs(20), || {
            node.camera(&id)["onvif"]["hardwareAddress"] == shown_mac(&net.host_mac())
                && (onvif.calls().iter())
                    .any(|c| c.operation == "GetDeviceInformation" && c.allowed)
        });
        assert!(
            noted,
            "the device was not noted (its MAC is {}): {}\n{:?}",
            net.host_mac(),
            node.camera(&id),
            onvif.calls()
        );
        Linked {
            id,
            streams,
            onvif,
            responder,
            profiles,
            says,
            password,
        }
    }

    fn pairs(profiles: &[(String, String)]) -> Vec<(&str, &str)> {
        (profiles.iter())
            .map(|(t, u)| (t.as_str(), u.as_str()))
            .collect()
    }
}

#[test]
fn discovery_finds_the_device_and_a_camera_made_from_its_streams_records_and_plays_live() {
    let net = TestNet::new();
    let camera = Camera::start();
    let device = device_go2rtc(&camera, netns::HOST, None);
    let relay = relay_go2rtc();
    let responder = Responder::start(HOST, "Front%20Porch", &device.onvif_address());
    // A datagram that is not XML before each answer, as from a broken device.
    responder.send_garbage(true);
    let data = TempDir::new("onvif-discover");
    let node = node_in(&net, &data, &relay);

    let found = discover(&node);
    let listed = listed(&found, &responder);
    assert_eq!(listed["address"], netns::HOST, "{found}");
    assert_eq!(
        listed["services"],
        json!([device.onvif_address()]),
        "{found}"
    );
    assert_eq!(listed["name"], "Front Porch", "{found}");
    assert_eq!(listed["make"], "Acme", "{found}");
    assert_eq!(listed["model"], "X1", "{found}");
    assert_eq!(listed["cameraId"], Value::Null, "{found}");
    assert_eq!(found["devices"].as_array().unwrap().len(), 1, "{found}");
    assert!(
        found["skipped"].as_u64() >= Some(1),
        "the garbage not counted: {found}"
    );
    let probes = responder.probes();
    assert!(!probes.is_empty(), "no probe reached the responder");
    assert!(
        probes.iter().all(|p| p.ip().to_string() == netns::NODE),
        "probes from elsewhere than the node: {probes:?}"
    );

    let password = common::password("porch");
    let response = streams(&node, &device.onvif_address(), "admin", &password);
    assert_eq!(response.status, 200, "{response}");
    let answer = response.json();
    assert_eq!(answer["model"], "go2rtc", "{answer}");
    check_profiles(&answer, &device.rtsp_url("main"), &device.rtsp_url("sub"));

    // The person's part, in Chromium: Find cameras, the credentials, Show
    // streams, Use these, Add, then live view.
    let (verdict, output) = discover_in_browser(&node.url(), "admin", &password);
    assert!(
        verdict["ok"] == true && verdict["played"] == true,
        "the browser did not add and play the camera: {verdict}\n{output}"
    );
    eprintln!("discover.mjs: {verdict}");
    let id = verdict["cameraId"].as_str().expect("a cameraId").to_owned();
    assert_eq!(
        (
            verdict["main"]["width"].as_u64(),
            verdict["sub"]["width"].as_u64()
        ),
        (Some(1280), Some(320)),
        "{output}"
    );

    let made = node.camera(&id);
    assert_eq!(
        made["onvif"]["endpoint"],
        responder.endpoint.as_str(),
        "{made}"
    );
    assert_eq!(made["onvif"]["address"], device.onvif_address(), "{made}");
    assert_eq!(made["onvif"]["message"], Value::Null, "{made}");
    let again = discover(&node);
    assert_eq!(listed_id(&again, &responder), Some(id.clone()), "{again}");
    let added = Instant::now();
    assert!(
        wait_for(Duration::from_secs(40), || !spans(&node, &id, 5).is_empty()),
        "no recording within 40 s; camera: {}",
        node.camera(&id)
    );
    eprintln!(
        "first recorded span {:.1} s after the browser's add",
        added.elapsed().as_secs_f64()
    );
    assert!(recording(&node, &id), "{}", node.camera(&id));
}

/// Runs `tests/e2e/discover.mjs` (Chromium through Find cameras, Add and
/// live view); returns its JSON verdict and a report of the run. Unlike
/// `common::browser_script` it keeps the password out of the report: it is
/// on the script's command line, and only the script's output is checked
/// for it.
fn discover_in_browser(node_url: &str, username: &str, password: &str) -> (Value, String) {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/discover.mjs");
    assert!(script.is_file(), "{} is missing", script.display());
    let output = std::process::Command::new("node")
        .arg(&script)
        .args([node_url, username, password])
        .output()
        .unwrap_or_else(|e| panic!("cannot run node (Node.js, for playwright-core): {e}"));
    let (stdout, stderr) = (
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr),
    );
    common::assert_no_secret(&format!("{stdout}\n{stderr}"), "discover.mjs's output");
    let verdict = (stdout.lines().rev())
        .find_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter(|_| output.status.success())
        .unwrap_or_else(|| json!({ "ok": false }));
    let report = format!(
        "command: node {} {node_url} {username} <password>\nstatus: {}\nstdout: {stdout}\nstderr: {stderr}",
        script.display(),
        output.status
    );
    (verdict, report)
}

/// The cameraId discovery gives the responder's device.
fn listed_id(found: &Value, responder: &Responder) -> Option<String> {
    listed(found, responder)["cameraId"]
        .as_str()
        .map(str::to_owned)
}

#[test]
fn a_device_that_wants_a_password_gets_the_digest_and_a_wrong_one_is_refused_in_plain_words() {
    // In the namespace: the node calls devices on the LAN only, never an
    // address of its own.
    let net = TestNet::new();
    net.add_device();
    let camera = Camera::start();
    // The device's streams, on the device's host (go2rtc's RTSP server).
    let rtsp = device_go2rtc(&camera, netns::HOST, None);
    let data = TempDir::new("onvif-password");
    let relay_url = format!("http://{}:{}", netns::HOST, common::closed_port());
    let node = Node::start_in(&net, data.path(), &relay_url, &[]);
    let password = common::password("door");
    let wrong = common::password("wrong");
    let (main, sub) = (rtsp.rtsp_url("main"), rtsp.rtsp_url("sub"));
    let profiles = [("main", main.as_str()), ("sub", sub.as_str())];

    for auth in [Auth::UsernameToken, Auth::HttpDigest] {
        let device = Device::start(netns::HOST, auth, "admin", &password, &profiles);
        let right = streams(&node, &device.address(), "admin", &password);
        assert_eq!(right.status, 200, "{auth:?}: {right}");
        let answer = right.json();
        assert_eq!(
            (answer["make"].as_str(), answer["model"].as_str()),
            (Some("Acme"), Some("X1")),
            "{answer}"
        );
        check_profiles(&answer, &main, &sub);
        let calls = device.calls();
        assert!(
            calls
                .iter()
                .any(|c| c.operation == "GetStreamUri" && c.allowed),
            "{auth:?}: {calls:?}"
        );
        for (user, word) in [
            ("admin", wrong.as_str()),
            ("intruder", password.as_str()),
            ("", ""),
        ] {
            let refused = streams(&node, &device.address(), user, word);
            assert_eq!(refused.status, 502, "{auth:?} as {user:?}: {refused}");
            assert_eq!(refused.error(), REFUSED, "{auth:?} as {user:?}");
        }
    }

    let garbage = Device::start(netns::HOST, Auth::Garbage, "admin", &password, &profiles);
    let answer = streams(&node, &garbage.address(), "admin", &password);
    assert_eq!(answer.status, 502, "{answer}");
    let error = answer.error();
    assert!(error.contains("not ONVIF"), "{error}");

    // A device that names its Media service and a stream on another host
    // (a box of the LAN that asks for a password, recording whether it gets
    // one): neither is given the account.
    let trap = net.in_device(|| Trap::start(netns::OTHER.parse().unwrap(), 0));
    let far = format!("rtsp://{}:{}/main", netns::OTHER, trap.port);
    let says = Says {
        media_host: Some(format!("{}:{}", netns::OTHER, trap.port)),
        ..Says::default()
    };
    let profiles = [("main", main.as_str()), ("far", far.as_str())];
    let device = Device::start_saying(
        netns::HOST,
        Auth::UsernameToken,
        "admin",
        &password,
        &profiles,
        says,
    );
    let response = streams(&node, &device.address(), "admin", &password);
    assert_eq!(response.status, 200, "{response}");
    let answer = response.json();
    let near = profile(&answer, "main");
    assert_eq!(
        (&near["url"], &near["measured"], &near["role"]),
        (&json!(main), &json!(true), &json!("main")),
        "{answer}"
    );
    let far_profile = profile(&answer, "far");
    assert_eq!(far_profile["url"], Value::Null, "{answer}");
    assert_eq!(far_profile["measured"], false, "{answer}");
    assert_eq!(far_profile["role"], Value::Null, "{answer}");
    let problem = far_profile["problem"].as_str().unwrap_or_default();
    assert!(problem.contains("another host"), "{answer}");
    assert_eq!(trap.connections(), 0, "the other host was called");

    let logs = node.logs();
    assert!(
        !logs.contains(&password) && !logs.contains(&wrong),
        "{logs}"
    );
}

#[test]
fn the_node_calls_no_address_of_its_own_as_a_device() {
    let data = TempDir::new("onvif-loopback");
    let node = Node::start(
        data.path(),
        &format!("http://127.0.0.1:{}", common::closed_port()),
        &[],
    );
    // Where the node's go2rtc API or any service of the machine could be.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let port = listener.local_addr().unwrap().port();
    let password = common::password("loopback");
    for host in ["127.0.0.1", "localhost", "[::ffff:127.0.0.1]", "0.0.0.0"] {
        let address = format!("http://{host}:{port}/onvif/device_service");
        let refused = streams(&node, &address, "admin", &password);
        assert_eq!(refused.status, 400, "{address}: {refused}");
        let error = refused.error();
        assert!(
            error.starts_with("address must not name a loopback"),
            "{address}: {error}"
        );
    }
    let linked = node.post_json(
        "/api/cameras",
        &json!({
            "name": "Loop",
            "rtspUrl": "rtsp://10.213.77.9/main",
            "onvif": {
                "endpoint": "urn:uuid:1",
                "address": format!("http://127.0.0.1:{port}/onvif/device_service"),
            },
        })
        .to_string(),
    );
    assert_eq!(linked.status, 400, "{linked}");
    assert!(
        linked
            .error()
            .starts_with("onvif.address must not name a loopback"),
        "{linked}"
    );
    match listener.accept() {
        Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
        other => panic!("a connection reached the listener: {other:?}"),
    }
    common::assert_no_secret(&node.logs(), "the node's log");
}

#[test]
fn a_camera_whose_address_changes_is_followed_within_two_minutes_and_records_again() {
    let net = TestNet::new();
    let camera = Camera::start();
    let relay = relay_go2rtc();
    let data = TempDir::new("onvif-move");
    let node = node_in(&net, &data, &relay);
    let Linked {
        id,
        streams: mut device,
        onvif,
        responder,
        profiles,
        says,
        password,
    } = Linked::start(&net, &node, &camera, "Garage", "SN-GARAGE-1");

    // The camera gets a new address (DHCP) and keeps its ports.
    let port = device.rtsp_port();
    let probes_before = responder.probes().len();
    device.stop();
    let moved_at = Instant::now();
    let moved_ms = now_ms();
    drop(onvif);
    net.add_host_address(MOVED);
    let _moved = device_go2rtc(&camera, MOVED, Some(port));
    let moved = Device::start_saying(
        MOVED,
        Auth::UsernameToken,
        "admin",
        &password,
        &Linked::pairs(&profiles),
        says,
    );
    responder.move_to(MOVED.parse().unwrap(), &moved.address());

    let followed = wait_for(Duration::from_secs(120), || {
        let camera = node.camera(&id);
        let message = camera["onvif"]["message"].as_str().unwrap_or_default();
        message.starts_with(&format!("moved from {} to {MOVED}", netns::HOST))
            && camera["recording"]["state"] == "recording"
    });
    let camera_now = node.camera(&id);
    assert!(
        followed,
        "not followed within 120 s: {camera_now}\nprobes: {:?}",
        responder.probes()
    );
    eprintln!(
        "followed in {:.1} s: {}",
        moved_at.elapsed().as_secs_f64(),
        camera_now["onvif"]["message"]
    );
    // At most a probe a minute for the camera while it is away (one more
    // for a probe that may straddle the move).
    let looked = responder.probes().len() - probes_before;
    let allowed = 2 + moved_at.elapsed().as_secs() as usize / 60;
    assert!(
        looked <= allowed,
        "{looked} probes in {:?}",
        moved_at.elapsed()
    );
    // The relay was told too, as a PATCH of the camera's URL tells it.
    let relayed = || relay.streams().get(&id).cloned().unwrap_or_default();
    assert!(
        wait_for(Duration::from_secs(10), || {
            let sources = relayed();
            !sources.is_empty() && sources.iter().all(|s| s.contains(MOVED))
        }),
        "the relay still has {:?}",
        relayed()
    );
    assert_eq!(
        camera_now["onvif"]["address"],
        moved.address(),
        "{camera_now}"
    );
    // Its serial number was read there, with the account: the same hardware
    // address had been seen first.
    let calls = moved.calls();
    assert!(
        calls
            .iter()
            .any(|c| c.operation == "GetDeviceInformation" && c.allowed),
        "{calls:?}"
    );
    assert_eq!(
        camera_now["onvif"]["endpoint"],
        responder.endpoint.as_str(),
        "{camera_now}"
    );
    assert!(
        wait_for(Duration::from_secs(40), || {
            (common::segment_rows(data.path()).iter())
                .any(|s| s.camera == id && s.start_ms > moved_ms)
        }),
        "no segment after the move: {:?}",
        common::segment_rows(data.path())
    );
    let probes = responder.probes();
    assert!(
        probes.iter().all(|p| p.ip().to_string() == netns::NODE),
        "probes from elsewhere than the node: {probes:?}"
    );
    let logs = node.logs();
    assert!(
        logs.lines()
            .any(|l| l.contains("moved") && l.contains(MOVED)),
        "the log does not say the camera moved:\n{logs}"
    );
    common::assert_no_secret(&logs, "the node's log");
}

#[test]
fn a_device_that_claims_a_lost_camera_s_endpoint_gets_no_password_until_the_user_confirms() {
    let net = TestNet::new();
    net.add_device();
    let camera = Camera::start();
    let mut device = device_go2rtc(&camera, netns::HOST, None);
    let relay = relay_go2rtc();
    let responder = Responder::start(HOST, "Gate", &device.onvif_address());
    let data = TempDir::new("onvif-claim");
    let node = node_in(&net, &data, &relay);
    let started = Instant::now();

    let found = discover(&node);
    let listed = listed(&found, &responder).clone();
    let password = common::password("gate");
    let response = streams(&node, &device.onvif_address(), "admin", &password);
    assert_eq!(response.status, 200, "{response}");
    let id = add_camera(&node, &response.json(), &listed, "admin", &password);
    assert!(
        wait_for(Duration::from_secs(20), || {
            node.camera(&id)["onvif"]["hardwareAddress"] == shown_mac(&net.host_mac())
        }),
        "the device was not noted (its MAC is {}): {}",
        net.host_mac(),
        node.camera(&id)
    );

    // Another box on the LAN, with a hardware address of its own, answers
    // with the camera's endpoint reference and go2rtc-shaped ONVIF answers,
    // and its port where the camera's RTSP was asks for a password.
    let port = device.rtsp_port();
    let endpoint = responder.endpoint.clone();
    let for_other = password.clone();
    let (other, trap, other_responder) = net.in_device(move || {
        let at: Ipv4Addr = netns::OTHER.parse().unwrap();
        let trap = Trap::start(at, port);
        let main = format!("rtsp://{}:{port}/main", netns::OTHER);
        let other = Device::start(
            netns::OTHER,
            Auth::UsernameToken,
            "admin",
            &for_other,
            &[("main", &main)],
        );
        let responder = Responder::start_as(at, "Gate", &other.address(), &endpoint);
        (other, trap, responder)
    });
    // The camera is gone (unplugged, or on an address of its own now that
    // has not answered yet): the other box's answer is the only one.
    drop(responder);
    device.stop();

    let said = wait_for(Duration::from_secs(60), || {
        !node.camera(&id)["onvif"]["message"].is_null()
    });
    let claimed = node.camera(&id);
    assert!(
        said,
        "nothing said of the camera within 60 s: {claimed}\nthe other box heard probes from {:?}\n{}",
        other_responder.probes(),
        node.logs()
    );
    let message = claimed["onvif"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!(
            "a device at {} answers as this camera's ONVIF device, but its hardware address",
            netns::OTHER
        )),
        "{claimed}"
    );
    assert_eq!(claimed["onvif"]["claim"], netns::OTHER, "{claimed}");
    assert!(
        !claimed.to_string().contains(&net.host_mac()),
        "the camera's hardware address shown whole: {claimed}"
    );
    assert_eq!(
        claimed["onvif"]["address"],
        device.onvif_address(),
        "{claimed}"
    );
    assert_eq!(
        trap.connections(),
        0,
        "the other box's RTSP port was called"
    );
    let calls = other.calls();
    assert!(
        calls.iter().all(|c| !c.credentials),
        "credentials sent: {calls:?}"
    );
    let relayed = || relay.streams().get(&id).cloned().unwrap_or_default();
    assert!(
        relayed().iter().all(|s| !s.contains(netns::OTHER)),
        "the relay was moved: {:?}",
        relayed()
    );
    eprintln!(
        "claim shown {:.1} s into the test: {message}",
        started.elapsed().as_secs_f64()
    );

    // The user says it is the camera, with its password: it moves, with one
    // PATCH (bad ones first). Without the password, or with another, the
    // account would go to a host anyone on the LAN may have named.
    let path = format!("/api/cameras/{id}");
    let wrong = common::password("not-gate");
    for (body, error) in [
        (
            json!({ "onvif": { "confirmMove": "10.213.77.9" }, "password": password }),
            "onvif.confirmMove must name the address that claims",
        ),
        (
            json!({ "onvif": { "confirmMove": true }, "password": password }),
            "onvif.confirmMove must be",
        ),
        (
            json!({ "onvif": { "confirmMove": netns::OTHER }, "rtspUrl": "rtsp://10.213.77.9/x", "password": password }),
            "onvif.confirmMove moves the stream addresses",
        ),
        (
            json!({ "onvif": { "confirmMove": netns::OTHER } }),
            "onvif.confirmMove sends the camera's account to a new host: it needs the camera's password",
        ),
        (
            json!({ "onvif": { "confirmMove": netns::OTHER }, "password": wrong }),
            "password is not the camera's password",
        ),
    ] {
        let refused = node.patch_json(&path, &body.to_string());
        assert_eq!(refused.status, 400, "{refused}");
        assert!(refused.error().starts_with(error), "{refused}");
    }
    assert_eq!(
        node.camera(&id)["onvif"]["address"],
        device.onvif_address(),
        "a refused confirmation moved the camera"
    );
    assert_eq!(
        trap.connections(),
        0,
        "a refused confirmation called the box"
    );
    // In the UI: the card names the claim, the edit dialog's button asks for
    // the password and moves it.
    let verdict = common::browser_script_told(
        "confirm_move.mjs",
        &[&node.url(), &id, netns::OTHER],
        &password,
    );
    assert!(verdict["ok"] == true, "{verdict}");
    eprintln!("confirm_move.mjs: {}", verdict["button"]);
    let moved = node.camera(&id);
    assert_eq!(moved["onvif"]["address"], other.address(), "{moved}");
    assert_eq!(moved["onvif"]["claim"], Value::Null, "{moved}");
    assert_eq!(moved["onvif"]["hardwareAddress"], Value::Null, "{moved}");
    let message = moved["onvif"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!("moved from {} to {}", netns::HOST, netns::OTHER)),
        "{moved}"
    );
    // The user named the host: the new address was probed with the account.
    assert!(
        trap.authorized() >= 1,
        "the new address was not probed with the account"
    );
    assert!(
        wait_for(Duration::from_secs(10), || {
            let sources = relayed();
            !sources.is_empty() && sources.iter().all(|s| s.contains(netns::OTHER))
        }),
        "the relay still has {:?}",
        relayed()
    );
    common::assert_no_secret(&node.logs(), "the node's log");
    eprintln!("test took {:.1} s", started.elapsed().as_secs_f64());
}

#[test]
fn a_link_to_another_host_needs_the_camera_s_password_and_without_it_that_host_hears_nothing() {
    let net = TestNet::new();
    net.add_device();
    let camera = Camera::start();
    let relay = relay_go2rtc();
    let data = TempDir::new("onvif-relink");
    let node = node_in(&net, &data, &relay);
    let linked = Linked::start(&net, &node, &camera, "Shed", "SN-SHED-1");
    let (id, password) = (&linked.id, &linked.password);
    let endpoint = linked.responder.endpoint.clone();
    // Another box on the LAN answers any call, signed or not: what a peer
    // that wants the camera's digest would point the link at.
    let other = net.in_device(|| Device::start(netns::OTHER, Auth::Open, "admin", "", &[]));
    let path = format!("/api/cameras/{id}");
    let link_to = |device: &Device| json!({ "endpoint": endpoint, "address": device.address() });
    let wrong = common::password("not-shed");
    for (body, error) in [
        (
            json!({ "onvif": link_to(&other) }),
            "onvif.address names a host the camera's account has not been used with: it needs \
             the camera's password",
        ),
        (
            json!({ "onvif": link_to(&other), "password": wrong }),
            "password is not the camera's password",
        ),
    ] {
        let refused = node.patch_json(&path, &body.to_string());
        assert_eq!(refused.status, 400, "{refused}");
        assert!(refused.error().starts_with(error), "{refused}");
    }
    assert_eq!(
        node.camera(id)["onvif"]["address"],
        linked.onvif.address(),
        "a refused link changed the camera"
    );

    // With the password, the device the user names is linked, and asked
    // for its serial number with the account.
    net.add_host_address(MOVED);
    let named = Device::start_saying(
        MOVED,
        Auth::UsernameToken,
        "admin",
        password,
        &Linked::pairs(&linked.profiles),
        Says {
            serial: Some("SN-SHED-2".into()),
            ..Says::default()
        },
    );
    let body = json!({ "onvif": link_to(&named), "password": password }).to_string();
    // Within a second of the wrong password none is compared (429).
    let mut answers = Vec::new();
    let compared = wait_for(Duration::from_secs(5), || {
        answers.push(node.patch_json(&path, &body));
        answers.last().is_some_and(|a| a.status != 429)
    });
    let linked_there = answers.pop().expect("an answer");
    assert!(compared, "{linked_there}");
    assert_eq!(linked_there.status, 200, "{linked_there}");
    assert_eq!(linked_there.json()["onvif"]["address"], named.address());
    let asked = wait_for(Duration::from_secs(30), || {
        (named.calls().iter()).any(|c| c.operation == "GetDeviceInformation" && c.allowed)
    });
    assert!(asked, "the named device was not asked: {:?}", named.calls());
    // The node has looked at the camera's link since the refusals: the box
    // they named heard nothing at all.
    assert_eq!(other.calls().len(), 0, "{:?}", other.calls());
    common::assert_no_secret(&node.logs(), "the node's log");
}

#[test]
fn a_device_that_copies_the_camera_s_hardware_address_and_what_the_api_shows_gets_no_credentials() {
    let net = TestNet::new();
    let camera = Camera::start();
    let relay = relay_go2rtc();
    let data = TempDir::new("onvif-impostor");
    let node = node_in(&net, &data, &relay);
    let Linked {
        id,
        streams: mut device,
        onvif,
        responder,
        ..
    } = Linked::start(&net, &node, &camera, "Porch", "SN-PORCH-1");
    // What a peer on the LAN learns of the camera's device: the API shows
    // the end of its hardware address only, and no serial number.
    let shown = node.camera(&id)["onvif"].clone();
    assert_eq!(
        shown["hardwareAddress"],
        shown_mac(&net.host_mac()),
        "{shown}"
    );
    let serial = shown["serialNumber"]
        .as_str()
        .unwrap_or("SN-GUESS")
        .to_owned();

    // The camera goes (unplugged); a box on the host end, so with the
    // hardware address the node noted (as one that copied it), answers with
    // its endpoint reference, any call with what the API showed, and where
    // the camera's RTSP was with a Basic challenge.
    let port = device.rtsp_port();
    device.stop();
    drop(onvif);
    net.add_host_address(MOVED);
    let trap = Trap::start(MOVED.parse().unwrap(), port);
    let main = format!("rtsp://{MOVED}:{port}/main");
    let impostor = Device::start_saying(
        MOVED,
        Auth::Open,
        "admin",
        "",
        &[("main", &main)],
        Says {
            serial: Some(serial),
            ..Says::default()
        },
    );
    responder.move_to(MOVED.parse().unwrap(), &impostor.address());

    let said = wait_for(Duration::from_secs(90), || {
        !node.camera(&id)["onvif"]["message"].is_null()
    });
    let claimed = node.camera(&id);
    assert!(said, "nothing said within 90 s: {claimed}");
    let message = claimed["onvif"]["message"].as_str().unwrap_or_default();
    assert!(
        message.starts_with(&format!(
            "a device at {MOVED} answers as this camera's ONVIF device, but its serial number \
             is not the camera's"
        )),
        "{claimed}"
    );
    assert_eq!(claimed["onvif"]["claim"], MOVED, "{claimed}");
    assert!(
        !claimed.to_string().contains(&net.host_mac()),
        "the camera's hardware address shown whole: {claimed}"
    );
    let calls = impostor.calls();
    assert!(
        calls.iter().any(|c| c.operation == "GetDeviceInformation"),
        "the node did not ask it: {calls:?}"
    );
    assert!(
        calls.iter().all(|c| !c.credentials),
        "credentials sent: {calls:?}"
    );
    assert_eq!(trap.connections(), 0, "its RTSP port was called");
    let relayed = relay.streams().get(&id).cloned().unwrap_or_default();
    assert!(
        relayed.iter().all(|s| !s.contains(MOVED)),
        "the relay was moved: {relayed:?}"
    );
    common::assert_no_secret(&node.logs(), "the node's log");
}
