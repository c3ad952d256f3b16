//! Live view end to end: a real browser (headless Debian Chromium) watches the
//! real test camera through the node and the real go2rtc, on the main and the
//! sub stream, and again after go2rtc restarts with its configuration emptied.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common;
use crate::common::go2rtc::{Go2rtc, Restart};
use crate::common::{Camera, Node, TempDir, browser_script, live_view_in_browser, wait_for};
use serde_json::{Value, json};

fn screenshot(name: &str) -> String {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name).display().to_string()
}

fn watch(node: &Node, query: &str, shot: &str) -> Value {
    let url = format!("http://127.0.0.1:{}/live.html?{query}", node.port);
    let shot = screenshot(shot);
    let verdict = live_view_in_browser(&["--url", &url, "--screenshot", &shot]);
    assert_eq!(
        verdict["ok"],
        true,
        "live view of {query} failed:\n{}",
        verdict["output"].as_str().unwrap()
    );
    verdict
}

#[test]
fn a_browser_sees_the_camera_live_before_and_after_a_relay_restart() {
    let camera = Camera::start();
    let mut relay = Go2rtc::start();
    let dir = TempDir::new("live");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let created = node.add_camera(json!({
        "name": "Porch", "rtspUrl": camera.url("", "/main"), "rtspSubUrl": camera.url("", "/sub"),
    }));
    let id = created["id"].as_str().unwrap().to_owned();
    let sub_name = format!("{id}_sub");
    let names = || relay.streams().into_keys().collect::<Vec<_>>();
    assert!(
        wait_for(Duration::from_secs(5), || names()
            == vec![id.clone(), sub_name.clone()]),
        "streams not registered: {:?}",
        names()
    );

    let main = watch(&node, &format!("camera={id}"), "live-main.png");
    assert_eq!(
        (&main["videoWidth"], &main["videoHeight"]),
        (&json!(640), &json!(360)),
        "{main}"
    );
    let sub = watch(&node, &format!("camera={id}&stream=sub"), "live-sub.png");
    assert_eq!(
        (&sub["videoWidth"], &sub["videoHeight"]),
        (&json!(320), &json!(180)),
        "{sub}"
    );

    // The same page with the offer sent straight to the relay, for comparison.
    let page = format!("http://127.0.0.1:{}/live.html?camera={id}", node.port);
    let direct = live_view_in_browser(&[
        "--url",
        &page,
        "--direct-relay",
        &relay.url(),
        "--camera",
        &id,
    ]);
    assert_eq!(
        direct["ok"],
        true,
        "direct:\n{}",
        direct["output"].as_str().unwrap()
    );
    eprintln!(
        "offer to first frame: through the node {} ms, straight to the relay {} ms",
        main["offerToFirstFrameMs"], direct["offerToFirstFrameMs"]
    );
    for (stream, verdict) in [("main", &main), ("sub", &sub)] {
        assert!(
            verdict["videoFramesDecoded"].as_u64() > Some(0),
            "{verdict}"
        );
        eprintln!(
            "{stream}: {}x{}, {} frames decoded ({}), currentTime advanced {} s",
            verdict["videoWidth"],
            verdict["videoHeight"],
            verdict["videoFramesDecoded"],
            verdict["videoCodec"],
            verdict["currentTimeAdvancedS"]
        );
    }

    // go2rtc restarts with no streams: the node registers them again.
    relay.restart(Restart::EmptyFile);
    let restarted = Instant::now();
    assert!(
        wait_for(Duration::from_secs(15), || relay.streams().len() == 2),
        "streams not back 15 s after the relay restarted: {:?}",
        relay.streams()
    );
    eprintln!(
        "streams back {:?} after the relay restarted",
        restarted.elapsed()
    );
    let again = watch(&node, &format!("camera={id}"), "live-after-restart.png");
    assert_eq!(again["videoWidth"], 640, "{again}");
}

#[test]
fn a_camera_that_is_down_gives_a_plain_message() {
    let camera = Camera::start();
    let relay = Go2rtc::start();
    let dir = TempDir::new("live-down");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let url = camera.url(&format!("admin:{}", common::password("live")), "/main");
    let created = node.add_camera(json!({ "name": "Gone", "rtspUrl": url }));
    let id = created["id"].as_str().unwrap().to_owned();
    assert!(wait_for(Duration::from_secs(5), || relay
        .streams()
        .contains_key(&id)));
    drop(camera);

    let page = format!("http://127.0.0.1:{}/live.html?camera={id}", node.port);
    let started = Instant::now();
    let verdict = live_view_in_browser(&["--url", &page, "--timeout-ms", "20000"]);
    assert_eq!(verdict["ok"], false, "{verdict}");
    let output = verdict["output"].as_str().unwrap();
    assert!(
        output.contains("stream relay could not start the stream (is the camera on?)"),
        "the page shows the node's plain message:\n{output}"
    );
    assert!(started.elapsed() < Duration::from_secs(20));
    common::assert_no_secret(output, "the browser's page");
}

#[test]
fn the_grid_plays_every_camera_and_stops_the_tiles_out_of_view() {
    let camera = Camera::start();
    let relay = Go2rtc::start();
    let dir = TempDir::new("grid");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let add = |name: &str, main: &str, sub: Option<&str>| {
        let mut body = json!({ "name": name, "rtspUrl": camera.url("", main) });
        if let Some(sub) = sub {
            body["rtspSubUrl"] = camera.url("", sub).into();
        }
        node.add_camera(body)["id"].as_str().unwrap().to_owned()
    };
    // Two with a sub stream, one without (its tile pulls the main stream), and
    // a disabled one.
    let porch = add("Porch", "/main", Some("/sub"));
    let yard = add("Yard", "/video-only", Some("/sub"));
    let gate = add("Gate", "/aac", None);
    let shed = add("Shed", "/main", None);
    node.patch_camera(&shed, json!({ "enabled": false }));
    let online = |id: &str| node.camera(id)["online"] == true;
    assert!(
        wait_for(Duration::from_secs(40), || [&porch, &yard, &gate]
            .iter()
            .all(|id| online(id))),
        "the cameras are not online"
    );

    let cameras = format!("{porch}:sub,{yard}:sub,{gate}:main");
    let shots = screenshot("");
    let verdict = browser_script(
        "grid.mjs",
        &[
            "--url",
            &node.url(),
            "--relay",
            &relay.url(),
            "--cameras",
            &cameras,
            "--disabled",
            &shed,
            "--screenshots",
            &shots,
        ],
    );
    assert_eq!(
        verdict["ok"],
        true,
        "the grid:\n{}",
        verdict["output"].as_str().unwrap()
    );
    // The sub streams are 320x180, the main one 640x360, the large view main.
    assert_eq!(
        verdict["sizes"],
        json!([[320, 180], [320, 180], [640, 360]]),
        "{verdict}"
    );
    assert_eq!(verdict["large"], json!([640, 360]), "{verdict}");
}
