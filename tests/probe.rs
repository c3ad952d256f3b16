//! Probing with the real ffprobe against a real RTSP camera (GStreamer), a
//! silent camera, a camera that cuts its first reader, a closed port, a wrong
//! path and wrong credentials.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread;
use std::time::{Duration, Instant};

use crate::common;
use crate::common::{Camera, Node, SilentCamera, TempDir, closed_port, ffprobes_connected_to};
use serde_json::{Value, json};

/// The node's bound on streams read at once on request (probes, snapshots).
const READERS_AT_ONCE: usize = 4;

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

/// The real camera behind a proxy that closes its first reader right after
/// the answer to PLAY, before a single picture, as a camera does when its
/// server restarts or turns a reader away. Later readers pass through whole.
struct CutsFirstReader {
    port: u16,
    cut: Arc<AtomicBool>,
}

impl CutsFirstReader {
    fn start(camera: &Camera) -> CutsFirstReader {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let upstream = format!("127.0.0.1:{}", camera.port);
        let cut = Arc::new(AtomicBool::new(false));
        let first = cut.clone();
        thread::spawn(move || {
            for client in listener.incoming() {
                let (Ok(client), Ok(server)) = (client, TcpStream::connect(&upstream)) else {
                    return;
                };
                if first.swap(true, Ordering::SeqCst) {
                    pass(&server, &client);
                    pass(&client, &server);
                } else {
                    cut_after_play(client, server);
                }
            }
        });
        CutsFirstReader { port, cut }
    }

    fn url(&self, path: &str) -> String {
        format!("rtsp://127.0.0.1:{}{path}", self.port)
    }
}

/// Copies `from` to `to` on a thread until either end closes.
fn pass(from: &TcpStream, to: &TcpStream) {
    let (mut from, mut to) = (from.try_clone().unwrap(), to.try_clone().unwrap());
    thread::spawn(move || {
        let _ = std::io::copy(&mut from, &mut to);
        let _ = to.shutdown(Shutdown::Both);
    });
}

/// Passes the RTSP exchange up to the end of the answer to PLAY, then closes
/// both ends: the reader gets no RTP at all.
fn cut_after_play(client: TcpStream, server: TcpStream) {
    let play_sent = Arc::new(AtomicBool::new(false));
    let sent = play_sent.clone();
    let (mut requests, mut upstream) = (client.try_clone().unwrap(), server.try_clone().unwrap());
    thread::spawn(move || {
        let mut buf = [0u8; 4096];
        while let Ok(n @ 1..) = requests.read(&mut buf) {
            // Set before PLAY goes up, so the answer cannot come first.
            if String::from_utf8_lossy(&buf[..n]).contains("PLAY ") {
                sent.store(true, Ordering::SeqCst);
            }
            if upstream.write_all(&buf[..n]).is_err() {
                return;
            }
        }
    });
    let (mut answers, mut downstream) = (server, client);
    thread::spawn(move || {
        let (mut buf, mut after_play) = ([0u8; 4096], Vec::new());
        while let Ok(n @ 1..) = answers.read(&mut buf) {
            if !play_sent.load(Ordering::SeqCst) {
                if downstream.write_all(&buf[..n]).is_err() {
                    return;
                }
                continue;
            }
            after_play.extend_from_slice(&buf[..n]);
            if let Some(end) = after_play.windows(4).position(|w| w == b"\r\n\r\n") {
                let _ = downstream.write_all(&after_play[..end + 4]);
                break;
            }
        }
        let _ = downstream.shutdown(Shutdown::Both);
        let _ = answers.shutdown(Shutdown::Both);
    });
}

#[test]
fn a_camera_that_cuts_its_first_reader_is_probed_again() {
    let camera = Camera::start();
    let proxy = CutsFirstReader::start(&camera);
    let dir = TempDir::new("probe-cut");
    let node = node(&dir);
    let created = node.add_camera(json!({
        "name": "Gate", "rtspUrl": proxy.url("/video-only"), "record": false, "detect": false,
    }));
    assert!(proxy.cut.load(Ordering::SeqCst), "the proxy cut no reader");
    assert_eq!(
        created["capabilities"],
        json!({ "hasSubstream": false, "videoCodec": "h264", "width": 640, "height": 360, "fps": 25 }),
        "{}",
        node.logs()
    );
    assert!(
        node.logs()
            .contains("the stream ended before its first picture; probing again"),
        "{}",
        node.logs()
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

    // While the re-probe hangs (once it has reached the camera), the rest of
    // the API answers at once: no lock is held.
    let port = node.port;
    let before = silent.accepted();
    let (watcher, (response, took)) = thread::scope(|scope| {
        let watcher = scope.spawn(|| {
            let reached = common::wait_for(Duration::from_secs(5), || silent.accepted() > before);
            let started = Instant::now();
            let status = common::http::request(port, "GET", "/api/status", &[], b"");
            let cameras = common::http::request(port, "GET", "/api/cameras", &[], b"");
            (reached, status.status, cameras.status, started.elapsed())
        });
        let probed = probe(&node, &created["id"]);
        (watcher.join().unwrap(), probed)
    });
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
    let (reached, status, cameras, during) = watcher;
    assert!(reached, "the re-probe did not reach the camera within 5 s");
    assert_eq!((status, cameras), (200, 200));
    assert!(
        during < Duration::from_secs(1),
        "status took {during:?} during a probe"
    );

    assert!(
        common::wait_for(Duration::from_secs(1), || ffprobes_connected_to(
            silent.port
        )
        .is_empty()),
        "ffprobe still running: {:?}",
        ffprobes_connected_to(silent.port)
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
fn passwords_in_query_and_path_parameters_never_leave_the_node() {
    let camera = Camera::start();
    // The relay stand-in, so that the node logs each stream it registers.
    let relay = common::relay::Relay::start();
    let dir = TempDir::new("probe-parameters");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    // The camera ignores a query; a cheap camera's path with parameters is
    // no path it knows, so that one's probes fail and are logged.
    let in_query = camera.url(
        "",
        &format!("/main?user=admin&password={}", common::password("query")),
    );
    let in_path = camera.url(
        "",
        &format!(
            "/user=admin&password={}&channel=1",
            common::password("path")
        ),
    );
    let query = node.add_camera(json!({ "name": "Query", "rtspUrl": in_query }));
    assert_eq!(query["capabilities"]["videoCodec"], "h264", "{query}");
    let path = node.add_camera(json!({ "name": "Path", "rtspUrl": in_path }));
    assert_eq!(path["capabilities"], json!({}), "{path}");
    let (response, _) = probe(&node, &path["id"]);
    assert_eq!(response.status, 502, "{response}");
    assert!(
        common::wait_for(Duration::from_secs(10), || relay.streams().len() == 2),
        "the relay never got both streams: {:?}",
        relay.streams().keys()
    );
    node.get("/api/cameras");
    node.get("/api/status");
    // The harness sweeps every answer above and, when the node stops, its
    // log for the passwords; here, that the addresses were logged at all.
    let logs = node.logs();
    for logged in [
        "/main?user=admin&password=***",
        "/user=admin&password=***&channel=1",
    ] {
        assert!(logs.contains(logged), "no log line shows {logged}:\n{logs}");
    }
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

#[test]
fn fifty_probes_of_a_hung_camera_start_four_ffprobe_and_leave_nothing_behind() {
    let silent = SilentCamera::start();
    let dir = TempDir::new("probe-fifty");
    // Fifty cameras, past a board's default of 16.
    let node = Node::start(
        dir.path(),
        &format!("http://127.0.0.1:{}", closed_port()),
        &[("MAX_CAMERAS", "64")],
    );
    let port = node.port;
    let baseline = common::settled_threads(&node);
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
                // Disabled: no recorder, decoder or online check (whose
                // threads and connections would count) for a probe to meet.
                json!({ "name": format!("Mute {i}"), "rtspUrl": silent.url(), "enabled": false })
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
    // Those that have a place hang on the camera; the others wait for one.
    assert!(
        common::wait_for(Duration::from_secs(5), || silent.accepted()
            >= 2 * READERS_AT_ONCE),
        "{} connections",
        silent.accepted()
    );
    let started = Instant::now();
    assert_eq!(node.get("/api/status").status, 200);
    let during = started.elapsed();
    let mut refused = 0;
    for probe in probes {
        let (response, took) = probe.join().unwrap();
        match response.status {
            502 => {}
            503 => {
                assert_eq!(response.header("retry-after"), Some("1"), "{response}");
                refused += 1;
            }
            _ => panic!("{response}"),
        }
        assert!(took <= Duration::from_secs(12), "a probe took {took:?}");
    }
    // As many at once as the node allows, for the creations and then the
    // probes: never 50.
    assert_eq!(silent.accepted(), 2 * READERS_AT_ONCE);
    assert_eq!(refused, 50 - READERS_AT_ONCE);
    assert!(
        during < Duration::from_secs(1),
        "status took {during:?} with 50 probes asked for"
    );
    assert!(
        common::wait_for(Duration::from_secs(2), || ffprobes_connected_to(
            silent.port
        )
        .is_empty()),
        "ffprobe left running: {:?}",
        ffprobes_connected_to(silent.port)
    );
    // tiny_http's idle connection threads linger 5 s before they end (the
    // rest is room for a loaded machine: once 4 of 13 were still there at 10 s).
    let settled = common::wait_for(Duration::from_secs(15), || {
        common::thread_names(node.pid()).len() <= baseline + 2
    });
    assert!(
        settled,
        "threads: {} at start, {} now: {:?}",
        baseline,
        common::thread_names(node.pid()).len(),
        common::thread_names(node.pid())
    );
}

/// Every local account can read a process's command line: the recorder's,
/// the motion decoder's and the prober's never hold the camera's address.
#[test]
fn no_child_of_the_node_shows_a_cameras_password_on_its_command_line() {
    let camera = Camera::with_credentials("admin", &common::password("cmdline"));
    let silent = SilentCamera::start();
    let dir = TempDir::new("probe-cmdline");
    let (data, recordings) = (dir.path().join("data"), dir.path().join("recordings"));
    std::fs::create_dir_all(&data).unwrap();
    let node = Node::start_recording(&data, &recordings, &[]);
    let url = camera.url(&format!("admin:{}", common::password("cmdline")), "/scene");
    let created = node.add_camera(json!({ "name": "Porch", "rtspUrl": url }));
    assert!(
        created["capabilities"]["width"].is_u64(),
        "the probe did not read the camera: {created}"
    );
    let recorder = || common::processes_connected_to("segment", camera.port);
    let decoder = || common::processes_connected_to(common::MOTION_RECEIVER, camera.port);
    assert!(
        common::wait_for(Duration::from_secs(20), || recorder().len() == 1
            && decoder().len() == 1),
        "recorder {:?}, decoder {:?}",
        recorder(),
        decoder()
    );
    // A probe that hangs on a camera stays long enough to be looked at.
    let port = node.port;
    let body = json!({ "name": "Mute", "rtspUrl": silent.url() }).to_string();
    let adding = thread::spawn(move || {
        let headers = [("Content-Type", "application/json")];
        common::http::request(port, "POST", "/api/cameras", &headers, body.as_bytes())
    });
    assert!(
        common::wait_for(Duration::from_secs(5), || !ffprobes_connected_to(
            silent.port
        )
        .is_empty()),
        "no probe reached the silent camera"
    );
    let children = common::children_of(node.pid());
    for pid in recorder()
        .into_iter()
        .chain(decoder())
        .chain(ffprobes_connected_to(silent.port))
    {
        assert!(children.contains(&pid), "{pid} is not the node's");
    }
    for pid in children {
        common::assert_no_secret(
            &common::command_line(pid),
            &format!("the command line of the node's child {pid}"),
        );
    }
    assert_eq!(adding.join().unwrap().status, 201);
}
