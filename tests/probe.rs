//! Probing with the real ffprobe against a real RTSP camera (GStreamer), a
//! silent camera, a closed port, a wrong path and wrong credentials.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::{Camera, Node, SilentCamera, TempDir, closed_port, ffprobes_mentioning};
use serde_json::{Value, json};

fn node(dir: &TempDir) -> Node {
    Node::start(
        dir.path(),
        &format!("http://127.0.0.1:{}", closed_port()),
        &[],
    )
}

fn probe(node: &Node, id: &Value) -> (common::Response, Duration) {
    let started = Instant::now();
    let response = node.post(&format!("/api/cameras/{}/probe", id.as_str().unwrap()));
    (response, started.elapsed())
}

#[test]
fn a_real_camera_is_probed_at_creation_and_again() {
    let camera = Camera::start();
    let dir = TempDir::new("probe-real");
    let node = node(&dir);
    let started = Instant::now();
    let created = node.add_camera(json!({
        "name": "Porch", "rtspUrl": camera.url("", "/main"), "rtspSubUrl": camera.url("", "/sub"),
    }));
    eprintln!("creation with a good camera took {:?}", started.elapsed());
    let expected = json!({ "hasSubstream": true, "videoCodec": "h264", "width": 640, "height": 360, "fps": 25 });
    assert_eq!(
        created["capabilities"], expected,
        "no audioCodec in the camera shape"
    );
    assert_eq!(
        (&created["hasSubstream"], &created["online"]),
        (&json!(true), &json!(true))
    );
    assert_eq!(node.get("/api/cameras").json()[0]["capabilities"], expected);

    let (response, took) = probe(&node, &created["id"]);
    eprintln!("re-probe of a good camera took {took:?}");
    assert_eq!(response.status, 200, "{response}");
    assert_eq!(response.header("Content-Type"), Some("application/json"));
    let mut with_audio = expected.clone();
    with_audio["audioCodec"] = json!("pcm_alaw");
    assert_eq!(response.json(), with_audio);
}

#[test]
fn a_camera_without_audio_has_no_audio_codec() {
    let camera = Camera::start();
    let dir = TempDir::new("probe-video-only");
    let node = node(&dir);
    let created =
        node.add_camera(json!({ "name": "Shed", "rtspUrl": camera.url("", "/video-only") }));
    let (response, _) = probe(&node, &created["id"]);
    assert_eq!(response.status, 200, "{response}");
    assert_eq!(
        response.json(),
        json!({ "hasSubstream": false, "videoCodec": "h264", "width": 640, "height": 360, "fps": 25 })
    );
}

#[test]
fn a_silent_camera_times_out_at_10_seconds_and_blocks_nothing() {
    let silent = SilentCamera::start();
    let dir = TempDir::new("probe-silent");
    let node = node(&dir);
    let started = Instant::now();
    let created = node.add_camera(json!({ "name": "Mute", "rtspUrl": silent.url() }));
    let took = started.elapsed();
    eprintln!("creation with a silent camera took {took:?}");
    assert!(
        took >= Duration::from_secs(9) && took < Duration::from_secs(13),
        "{took:?}"
    );
    assert_eq!(created["capabilities"], json!({}));

    // While the re-probe hangs, the rest of the API answers at once: no lock is held.
    let port = node.port;
    let watcher = thread::spawn(move || {
        thread::sleep(Duration::from_secs(2));
        let started = Instant::now();
        let status = common::http::request(port, "GET", "/api/status", &[], b"");
        let cameras = common::http::request(port, "GET", "/api/cameras", &[], b"");
        (status.status, cameras.status, started.elapsed())
    });
    let (response, took) = probe(&node, &created["id"]);
    eprintln!("re-probe of a silent camera took {took:?}");
    assert_eq!(response.status, 502, "{response}");
    assert!(
        response
            .error()
            .contains("did not answer within 10 seconds"),
        "{response}"
    );
    assert!(
        took >= Duration::from_secs(10) && took <= Duration::from_secs(12),
        "{took:?}"
    );
    let (status, cameras, during) = watcher.join().unwrap();
    assert_eq!((status, cameras), (200, 200));
    assert!(
        during < Duration::from_secs(1),
        "status took {during:?} during a probe"
    );

    let port = silent.port.to_string();
    assert!(
        common::wait_for(Duration::from_secs(1), || ffprobes_mentioning(&port)
            .is_empty()),
        "ffprobe still running: {:?}",
        ffprobes_mentioning(&port)
    );
    assert!(
        !node.logs().contains(common::SECRET_MARKER),
        "a password reached the log"
    );
}

#[test]
fn closed_ports_and_wrong_paths_are_named() {
    let camera = Camera::start();
    let dir = TempDir::new("probe-failures");
    let node = node(&dir);
    let table = [
        (
            format!("rtsp://127.0.0.1:{}/main", closed_port()),
            "refused the connection",
        ),
        (camera.url("", "/no-such-path"), "not found"),
    ];
    for (url, message) in table {
        let started = Instant::now();
        let created = node.add_camera(json!({ "name": "Broken", "rtspUrl": url }));
        assert_eq!(created["capabilities"], json!({}), "{url}");
        assert!(started.elapsed() < Duration::from_secs(5), "{url}");
        let (response, _) = probe(&node, &created["id"]);
        assert_eq!(response.status, 502, "{url}: {response}");
        let error = response.error();
        assert!(error.contains(message), "{url}: {error}");
        assert!(
            !error.contains("rtsp") && !error.contains("127.0.0.1"),
            "{error}"
        );
    }
}

#[test]
fn passwords_never_leave_the_node() {
    let password = common::password("Pa55-w0rd");
    let camera = Camera::with_credentials("admin", &password);
    let dir = TempDir::new("probe-password");
    let node = node(&dir);
    let good = node.add_camera(json!({
        "name": "Gate", "rtspUrl": camera.url(&format!("admin:{password}"), "/main"),
    }));
    assert_eq!(good["capabilities"]["videoCodec"], "h264", "{good}");
    let wrong = node.add_camera(json!({
        "name": "Gate (typo)", "rtspUrl": camera.url(&format!("admin:{}", common::password("Pa55-w0rd-Wrong")), "/main"),
    }));
    assert_eq!(wrong["capabilities"], json!({}));
    let (response, _) = probe(&node, &wrong["id"]);
    assert_eq!(response.status, 502, "{response}");
    assert!(
        response.error().contains("authorization failed"),
        "{response}"
    );

    let (ok, _) = probe(&node, &good["id"]);
    assert_eq!(ok.status, 200, "{ok}");
    let bodies = [
        good.to_string(),
        wrong.to_string(),
        response.text(),
        ok.text(),
        node.get("/api/status").text(),
        node.get("/api/cameras").text(),
    ];
    for body in bodies {
        assert!(
            !body.contains("Pa55-w0rd") && !body.contains("admin"),
            "{body}"
        );
    }
    let logs = node.logs();
    assert!(
        logs.contains("rtsp://***@127.0.0.1"),
        "failures are logged with the address redacted:\n{logs}"
    );
    assert!(
        !logs.contains("Pa55-w0rd"),
        "a password reached the log:\n{logs}"
    );
}

#[test]
fn a_failed_re_probe_keeps_the_stored_capabilities() {
    let camera = Camera::start();
    let dir = TempDir::new("probe-keep");
    let node = node(&dir);
    let created = node.add_camera(json!({ "name": "Drive", "rtspUrl": camera.url("", "/main") }));
    assert_eq!(created["capabilities"]["width"], 640);
    drop(camera);
    let (response, _) = probe(&node, &created["id"]);
    assert_eq!(response.status, 502, "{response}");
    let listed = &node.get("/api/cameras").json()[0];
    assert_eq!(listed["capabilities"], created["capabilities"]);
    assert_eq!(listed["online"], false, "the failed probe took it offline");
}

#[test]
fn a_missing_ffprobe_is_a_502_not_a_crash() {
    let dir = TempDir::new("probe-missing");
    let relay = format!("http://127.0.0.1:{}", closed_port());
    let node = Node::start(dir.path(), &relay, &[("FFPROBE", "/nonexistent/ffprobe")]);
    let url = format!("rtsp://127.0.0.1:{}/main", closed_port());
    let created = node.add_camera(json!({ "name": "Any", "rtspUrl": url }));
    let (response, _) = probe(&node, &created["id"]);
    assert_eq!(response.status, 502, "{response}");
    assert!(response.error().contains("ffprobe"), "{response}");
}

#[test]
fn a_new_main_url_is_probed() {
    let camera = Camera::start();
    let dir = TempDir::new("probe-patch");
    let node = node(&dir);
    let created = node.add_camera(
        json!({ "name": "Late", "rtspUrl": format!("rtsp://127.0.0.1:{}/main", closed_port()) }),
    );
    assert_eq!(created["capabilities"], json!({}));
    let path = format!("/api/cameras/{}", created["id"].as_str().unwrap());
    let body = json!({ "rtspUrl": camera.url("", "/main"), "rtspSubUrl": camera.url("", "/sub") })
        .to_string();
    let response = node.patch_json(&path, &body);
    assert_eq!(response.status, 200, "{response}");
    let updated = response.json();
    assert_eq!(
        updated["capabilities"],
        json!({ "hasSubstream": true, "videoCodec": "h264", "width": 640, "height": 360, "fps": 25 })
    );
    assert_eq!(
        (&updated["online"], &updated["hasSubstream"]),
        (&json!(true), &json!(true))
    );
    assert!(!response.text().contains("rtsp"), "{response}");
}

fn threads_of(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.count())
        .unwrap_or(0)
}

#[test]
fn fifty_hung_probes_at_once_leave_nothing_behind() {
    let silent = SilentCamera::start();
    let dir = TempDir::new("probe-fifty");
    let node = node(&dir);
    let port = node.port;
    let baseline = threads_of(node.pid());
    let post = |path: String, body: String| {
        thread::spawn(move || {
            let started = Instant::now();
            let headers = [("Content-Type", "application/json")];
            let response = common::http::request(port, "POST", &path, &headers, body.as_bytes());
            (response, started.elapsed())
        })
    };
    let creations: Vec<_> = (0..50)
        .map(|i| {
            post(
                "/api/cameras".into(),
                // Neither recording nor detecting: their threads stay by design.
                json!({ "name": format!("Mute {i}"), "rtspUrl": silent.url(), "record": false, "detect": false })
                    .to_string(),
            )
        })
        .collect();
    let ids: Vec<String> = creations
        .into_iter()
        .map(|t| {
            let (response, _) = t.join().unwrap();
            assert_eq!(response.status, 201, "{response}");
            response.json()["id"].as_str().unwrap().to_owned()
        })
        .collect();

    let probes: Vec<_> = ids
        .iter()
        .map(|id| post(format!("/api/cameras/{id}/probe"), String::new()))
        .collect();
    thread::sleep(Duration::from_secs(3));
    let started = Instant::now();
    assert_eq!(node.get("/api/status").status, 200);
    let during = started.elapsed();
    for probe in probes {
        let (response, took) = probe.join().unwrap();
        assert_eq!(response.status, 502, "{response}");
        assert!(took <= Duration::from_secs(12), "a probe took {took:?}");
    }
    assert!(
        during < Duration::from_secs(1),
        "status took {during:?} with 50 probes hanging"
    );
    let port = silent.port.to_string();
    assert!(
        common::wait_for(Duration::from_secs(2), || ffprobes_mentioning(&port)
            .is_empty()),
        "ffprobe left running: {:?}",
        ffprobes_mentioning(&port)
    );
    // tiny_http's idle connection threads linger 5 s before they end.
    let settled = common::wait_for(Duration::from_secs(10), || {
        threads_of(node.pid()) <= baseline + 2
    });
    assert!(
        settled,
        "threads: {} at start, {} now",
        baseline,
        threads_of(node.pid())
    );
}
