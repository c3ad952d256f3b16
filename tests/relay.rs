//! The node and the relay: stream registration, health, and WHEP forwarding
//! with every outcome, against the real go2rtc (`common/go2rtc.rs`). A few
//! tests keep the stand-in of `crates/standins` (`common::relay`), each for a
//! fault the real go2rtc cannot be made to show, named beside it.

use std::collections::BTreeMap;
use std::thread;
use std::time::{Duration, Instant};

use crate::common;
use crate::common::go2rtc::{Config, Go2rtc, OFFER, Restart};
use crate::common::relay::{Relay, WebrtcMode};
use crate::common::{Camera, Node, SECRET_MARKER, TempDir, closed_port, wait_for};
use serde_json::{Value, json};

fn dead_url(secret: &str) -> String {
    format!(
        "rtsp://admin:{}@127.0.0.1:{}/main",
        common::password(secret),
        closed_port()
    )
}

fn id_of(camera: &Value) -> String {
    camera["id"].as_str().unwrap().to_owned()
}

fn whep(node: &Node, id: &str) -> common::Response {
    node.post_sdp(&format!("/api/whep/{id}"), OFFER)
}

/// `(name, source)` pairs as a map, to compare with the relay's streams.
fn streams(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
    pairs
        .iter()
        .map(|(n, s)| (n.to_string(), s.to_string()))
        .collect()
}

/// The `src` (stream name or source) of each request go2rtc logged with `method` and `path`.
fn sources(relay: &Go2rtc, method: &str, path: &str) -> Vec<String> {
    relay
        .requests()
        .into_iter()
        .filter(|r| r.method == method && r.path == path)
        .map(|r| r.param("src").unwrap_or_default().to_owned())
        .collect()
}

/// A node using the real go2rtc, with one camera (at `url`) that go2rtc has registered.
fn node_with_camera(relay: &Go2rtc, dir: &TempDir, url: &str) -> (Node, String) {
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let id = id_of(&node.add_camera(json!({ "name": "Door", "rtspUrl": url })));
    let registered = wait_for(Duration::from_secs(5), || relay.streams().contains_key(&id));
    assert!(
        registered,
        "camera {id} not registered: {:?}",
        relay.requests()
    );
    (node, id)
}

/// The node's log lines about the relay at warning level.
fn relay_warnings(node: &Node) -> Vec<String> {
    node.logs()
        .lines()
        .filter(|l| l.contains("WARN") && l.contains("relay"))
        .map(str::to_owned)
        .collect()
}

#[test]
fn cameras_are_registered_and_removed() {
    let relay = Go2rtc::start();
    let dir = TempDir::new("relay-register");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let main = dead_url("reg");
    let sub = format!("{main}2");
    let camera = node.add_camera(json!({ "name": "Door", "rtspUrl": main, "rtspSubUrl": sub }));
    let id = id_of(&camera);
    let sub_name = format!("{id}_sub");
    let both = streams(&[(&id, &main), (&sub_name, &sub)]);
    assert!(
        wait_for(Duration::from_secs(5), || relay.stream_sources() == both),
        "streams: {:?}",
        relay.streams()
    );
    let puts: Vec<_> = (relay.requests().into_iter())
        .filter(|r| r.method == "PUT")
        .collect();
    assert_eq!(puts.len(), 2, "{puts:?}");
    assert!(puts.iter().all(|p| p.path == "/api/streams"));
    assert_eq!(puts[0].param("name"), Some(id.as_str()));
    assert_eq!(puts[1].param("src"), Some(sub.as_str()));
    // go2rtc saves them in its file, passwords in clear (docs/install.md: go2rtc beside it).
    assert!(
        relay.config_text().contains(&sub_name),
        "{}",
        relay.config_text()
    );

    let disabled =
        node.add_camera(json!({ "name": "Off", "rtspUrl": dead_url("x"), "enabled": false }));

    assert_eq!(node.delete(&format!("/api/cameras/{id}")).status, 204);
    assert!(
        wait_for(Duration::from_secs(5), || relay.streams().is_empty()),
        "streams: {:?}",
        relay.streams()
    );
    assert_eq!(
        sources(&relay, "DELETE", "/api/streams"),
        vec![id.clone(), sub_name]
    );
    assert!(
        !relay.config_text().contains(&id),
        "{}",
        relay.config_text()
    );
    assert!(
        !relay
            .requests()
            .iter()
            .any(|r| r.query.iter().any(|(_, v)| v.contains(&id_of(&disabled)))),
        "a disabled camera was registered"
    );
    assert!(relay_warnings(&node).is_empty(), "{}", node.logs());
}

#[test]
fn stored_cameras_are_registered_when_the_relay_comes_up() {
    let mut relay = Go2rtc::start();
    relay.stop();
    let dir = TempDir::new("relay-startup");
    let first = Node::start(dir.path(), &relay.url(), &[]);
    let camera = first.add_camera(json!({ "name": "Door", "rtspUrl": dead_url("s") }));
    let id = id_of(&camera);
    let status = first.get("/api/status").json();
    assert_eq!(
        (&status["relayHealthy"], &status["relayVersion"]),
        (&json!(false), &Value::Null)
    );
    first.kill();

    // Relay up before the node starts: registered at start, and its version shown.
    relay.start_again(Restart::EmptyFile);
    let second = Node::start(dir.path(), &relay.url(), &[]);
    assert!(
        wait_for(Duration::from_secs(5), || relay.streams().contains_key(&id)),
        "not registered at start: {:?}",
        relay.requests()
    );
    let version = relay.version();
    assert!(version.starts_with("1.9.14"), "{version}");
    assert!(wait_for(Duration::from_secs(3), || {
        let status = second.get("/api/status").json();
        status["relayHealthy"] == true && status["relayVersion"] == version.as_str()
    }));

    // The relay goes away: unhealthy, with no version, within 10 s. It comes
    // back empty: healthy again and the camera registered again within 10 s.
    relay.stop();
    let gone = Instant::now();
    assert!(
        wait_for(Duration::from_secs(10), || {
            let status = second.get("/api/status").json();
            status["relayHealthy"] == false && status["relayVersion"].is_null()
        }),
        "still healthy 10 s after the relay stopped"
    );
    eprintln!("relay loss noticed after {:?}", gone.elapsed());
    relay.start_again(Restart::EmptyFile);
    let back = Instant::now();
    assert!(
        wait_for(Duration::from_secs(10), || relay
            .streams()
            .contains_key(&id)),
        "not registered again after the relay came back"
    );
    eprintln!("relay return handled after {:?}", back.elapsed());
    assert_eq!(second.get("/api/status").json()["relayHealthy"], true);
}

#[test]
fn a_restarted_relay_keeps_its_streams_or_gets_them_back() {
    let mut relay = Go2rtc::start();
    let dir = TempDir::new("relay-restart");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let main = dead_url("restart");
    let sub = format!("{main}/sub");
    let id = id_of(&node.add_camera(json!({ "name": "Door", "rtspUrl": main, "rtspSubUrl": sub })));
    let both = streams(&[(&id, &main), (&format!("{id}_sub"), &sub)]);
    assert!(wait_for(Duration::from_secs(5), || relay.stream_sources() == both));
    // Saved: the file's time is the one the restart below must keep.
    relay.wait_saved();
    let file = relay.config_path();
    let modified = std::fs::metadata(&file).unwrap().modified().unwrap();

    // With its file kept, go2rtc comes back with the streams (as a quick
    // restart the node does not notice would): the next reconciles find them
    // as they should be and change nothing.
    relay.restart(Restart::KeepFile);
    assert_eq!(relay.stream_sources(), both, "the file brought them back");
    thread::sleep(Duration::from_secs(11));
    let after_reconcile = relay.requests();
    assert!(
        after_reconcile
            .iter()
            .any(|r| r.method == "GET" && r.path == "/api/streams"),
        "no reconcile in 11 s: {after_reconcile:?}"
    );
    assert!(
        !after_reconcile.iter().any(|r| r.method != "GET"),
        "{after_reconcile:?}"
    );
    assert_eq!(
        std::fs::metadata(&file).unwrap().modified().unwrap(),
        modified
    );

    // With its file emptied, the node puts them back at its next reconcile.
    relay.restart(Restart::EmptyFile);
    let restarted = Instant::now();
    assert!(relay.streams().is_empty());
    assert!(
        wait_for(Duration::from_secs(12), || relay.stream_sources() == both),
        "streams not back: {:?}",
        relay.streams()
    );
    eprintln!(
        "streams back {:?} after a restart with the file emptied",
        restarted.elapsed()
    );
    assert_eq!(sources(&relay, "PUT", "/api/streams"), vec![main, sub]);
    assert!(relay_warnings(&node).is_empty(), "{}", node.logs());
}

#[test]
fn a_relay_without_a_config_file_still_gets_every_change() {
    // go2rtc answers 400 "config file disabled" to each change, yet makes it.
    let relay = Go2rtc::start_with(Config::Inline, &[]);
    let dir = TempDir::new("relay-inline");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let main = dead_url("inline");
    let sub = format!("{main}/sub");
    let added = Instant::now();
    let id = id_of(&node.add_camera(json!({ "name": "Door", "rtspUrl": main, "rtspSubUrl": sub })));
    let both = streams(&[(&id, &main), (&format!("{id}_sub"), &sub)]);
    assert!(
        wait_for(Duration::from_secs(2), || relay.stream_sources() == both),
        "both streams not registered within 2 s: {:?}",
        relay.streams()
    );
    eprintln!("both streams registered after {:?}", added.elapsed());
    assert_eq!(node.delete(&format!("/api/cameras/{id}")).status, 204);
    assert!(
        wait_for(Duration::from_secs(2), || relay.streams().is_empty()),
        "streams not removed within 2 s: {:?}",
        relay.streams()
    );
    // Past a health tick and a reconcile: nothing was tried twice.
    thread::sleep(Duration::from_secs(6).saturating_sub(added.elapsed()));
    assert_eq!(sources(&relay, "PUT", "/api/streams").len(), 2);
    assert_eq!(sources(&relay, "DELETE", "/api/streams").len(), 2);
    let warnings = relay_warnings(&node);
    assert_eq!(
        warnings.len(),
        1,
        "one warning for the relay's run: {warnings:?}"
    );
    assert!(warnings[0].contains("could not save them"), "{warnings:?}");
}

#[test]
fn an_uppercase_scheme_is_registered_in_lowercase() {
    // go2rtc refuses RTSP:// with 400 "source not supported".
    let relay = Go2rtc::start();
    let dir = TempDir::new("relay-scheme");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let main = dead_url("scheme");
    let sub = format!("{main}/sub");
    let id = id_of(&node.add_camera(json!({
        "name": "Door",
        "rtspUrl": main.replacen("rtsp", "RTSP", 1),
        "rtspSubUrl": sub.replacen("rtsp", "Rtsp", 1),
    })));
    let both = streams(&[(&id, &main), (&format!("{id}_sub"), &sub)]);
    assert!(
        wait_for(Duration::from_secs(5), || relay.stream_sources() == both),
        "{:?}",
        relay.streams()
    );
    assert!(relay_warnings(&node).is_empty(), "{}", node.logs());
}

#[test]
fn the_relay_is_reconciled_and_foreign_streams_are_left_alone() {
    let orphan = uuid::Uuid::new_v4().to_string();
    let orphan_sub = format!("{orphan}_sub");
    let relay = Go2rtc::start_with(
        Config::File,
        &[
            ("garage", "rtsp://192.0.2.9/garage"),
            // Runs nothing: exec.allow_paths is empty.
            ("exec-thing", "exec:ffmpeg -i x"),
            (&orphan, "rtsp://192.0.2.9/old"),
            (&orphan_sub, "rtsp://192.0.2.9/old-sub"),
        ],
    );
    let dir = TempDir::new("relay-reconcile");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let main = dead_url("rec");
    let id = id_of(&node.add_camera(json!({ "name": "Door", "rtspUrl": main })));
    let expected = streams(&[
        ("garage", "rtsp://192.0.2.9/garage"),
        ("exec-thing", "exec:ffmpeg -i x"),
        (&id, &main),
    ]);
    assert!(
        wait_for(Duration::from_secs(5), || relay.stream_sources()
            == expected),
        "owned orphans removed, foreign streams kept: {:?}",
        relay.streams()
    );
    // Someone changes our stream behind the node's back: it is put back within 10 s.
    assert_eq!(relay.put(&id, "rtsp://192.0.2.9/hijacked"), 200);
    let changed = Instant::now();
    assert!(
        wait_for(Duration::from_secs(12), || relay.stream_sources()
            == expected),
        "source not restored: {:?}",
        relay.streams()
    );
    eprintln!(
        "a changed source was restored after {:?}",
        changed.elapsed()
    );
}

#[test]
fn a_hung_relay_blocks_no_api_call() {
    // go2rtc stopped with SIGSTOP: it accepts connections and never answers.
    let relay = Go2rtc::start();
    relay.pause();
    let dir = TempDir::new("relay-hung");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let started = Instant::now();
    let camera = node.add_camera(json!({ "name": "Door", "rtspUrl": dead_url("h") }));
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
    let started = Instant::now();
    assert_eq!(
        node.delete(&format!("/api/cameras/{}", id_of(&camera)))
            .status,
        204
    );
    let status = node.get("/api/status").json();
    assert_eq!(
        (&status["relayHealthy"], &status["relayVersion"]),
        (&json!(false), &Value::Null)
    );
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn whep_offers_are_forwarded_and_answered() {
    let camera = Camera::start();
    let relay = Go2rtc::start();
    let dir = TempDir::new("whep-ok");
    let (node, id) = node_with_camera(&relay, &dir, &camera.url("", "/main"));

    let started = Instant::now();
    let response = whep(&node, &id);
    let took = started.elapsed();
    assert_eq!(response.status, 201, "{response}");
    assert_eq!(response.header("Content-Type"), Some("application/sdp"));
    let answer = response.text();
    assert!(answer.starts_with("v=0\r\n"), "{answer}");
    assert!(
        answer
            .lines()
            .any(|l| l.starts_with("a=candidate:") && l.contains(" 127.0.0.1 ")),
        "go2rtc's loopback candidates are passed on: {answer}"
    );
    assert_eq!(sources(&relay, "POST", "/api/webrtc"), vec![id]);
    assert_eq!(
        relay.offers(),
        vec![OFFER],
        "the offer is passed on unchanged"
    );
    eprintln!("WHEP answer through the node with the real go2rtc: {took:?}");
}

#[test]
fn whep_failures_are_502_without_the_relay_text() {
    let relay = Go2rtc::start();
    let dir = TempDir::new("whep-fail");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let main = dead_url("whep-fail");
    let id = id_of(&node.add_camera(json!({ "name": "Door", "rtspUrl": main })));
    let disabled = id_of(
        &node.add_camera(json!({ "name": "Off", "rtspUrl": dead_url("off"), "enabled": false })),
    );
    assert!(wait_for(Duration::from_secs(5), || relay
        .streams()
        .contains_key(&id)));
    // go2rtc itself shows the password, so the node's clean answers below mean something.
    let listing = ureq::get(&format!("{}/api/streams", relay.url()))
        .call()
        .unwrap()
        .into_string()
        .unwrap();
    assert!(listing.contains(SECRET_MARKER), "{listing}");

    let off = whep(&node, &disabled);
    assert_eq!(off.status, 502, "disabled: {off}");
    assert_eq!(off.error(), "the camera is disabled");
    assert!(sources(&relay, "POST", "/api/webrtc").is_empty());

    // go2rtc lost the stream (until the next reconcile): it answers 404.
    assert_eq!(relay.delete(&id), 200);
    let missing = whep(&node, &id);
    assert_eq!(missing.status, 502, "relay 404: {missing}");
    assert_eq!(missing.error(), "stream unavailable on the relay");

    // The camera is down: go2rtc answers 500 "… connection refused" at once.
    assert_eq!(relay.put(&id, &main), 200);
    let failed = whep(&node, &id);
    assert_eq!(failed.status, 502, "relay 500: {failed}");
    assert_eq!(
        failed.error(),
        "stream relay could not start the stream (is the camera on?)"
    );
    assert_eq!(
        sources(&relay, "POST", "/api/webrtc").len(),
        2,
        "the 404 and the 500 came from go2rtc"
    );
    for response in [&missing, &failed] {
        assert!(!response.text().contains("rtsp"), "{response}");
    }
    // The harness sweeps every answer and the node's log for SECRET_MARKER.
}

#[test]
fn a_relay_error_text_with_the_password_is_not_passed_on() {
    // Stand-in: go2rtc's error text carries the password only for an address
    // Go cannot parse, which the node refuses (tests/api.rs), so only the
    // stand-in's Fail mode can show that fault.
    let relay = Relay::start();
    let dir = TempDir::new("whep-fail-text");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let secret = "whep-Secret-99";
    let id = id_of(&node.add_camera(json!({ "name": "Door", "rtspUrl": dead_url(secret) })));
    assert!(wait_for(Duration::from_secs(5), || relay
        .streams()
        .contains_key(&id)));
    relay.set_webrtc_mode(WebrtcMode::Fail);
    let failed = whep(&node, &id);
    assert_eq!(failed.status, 502, "relay 500: {failed}");
    assert_eq!(
        failed.error(),
        "stream relay could not start the stream (is the camera on?)"
    );
    assert!(
        !failed.text().contains(secret) && !failed.text().contains("rtsp"),
        "{failed}"
    );
    let logs = node.logs();
    assert!(
        !logs.contains(secret),
        "the relay's text reached the log:\n{logs}"
    );
}

#[test]
fn whep_with_the_relay_down_is_502() {
    let dir = TempDir::new("whep-down");
    let node = Node::start(
        dir.path(),
        &format!("http://127.0.0.1:{}", closed_port()),
        &[],
    );
    let id = id_of(&node.add_camera(json!({ "name": "Door", "rtspUrl": dead_url("d") })));
    let started = Instant::now();
    let response = whep(&node, &id);
    assert_eq!(response.status, 502, "{response}");
    assert_eq!(response.error(), "stream relay unreachable");
    assert!(
        started.elapsed() <= Duration::from_secs(2),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn whep_gives_up_on_a_silent_relay_after_15_seconds() {
    let relay = Go2rtc::start();
    let dir = TempDir::new("whep-slow");
    let (node, id) = node_with_camera(&relay, &dir, &dead_url("slow"));
    relay.pause();
    let started = Instant::now();
    let response = whep(&node, &id);
    let took = started.elapsed();
    assert_eq!(response.status, 502, "{response}");
    assert_eq!(response.error(), "stream relay unreachable");
    assert!(
        took >= Duration::from_secs(14) && took < Duration::from_secs(17),
        "{took:?}"
    );
}

type Headers<'a> = &'a [(&'a str, &'a str)];

#[test]
fn whep_bodies_are_checked() {
    let relay = Go2rtc::start();
    let dir = TempDir::new("whep-bodies");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let id = id_of(&node.add_camera(json!({ "name": "Door", "rtspUrl": dead_url("b") })));
    let path = format!("/api/whep/{id}");
    let sdp = [("Content-Type", "application/sdp")];
    let table: [(Headers, Vec<u8>, u16, &str); 7] = [
        (&sdp, Vec::new(), 400, "missing or empty SDP offer"),
        (&[], Vec::new(), 400, "missing or empty SDP offer"),
        (&sdp, b"  \r\n ".to_vec(), 400, "missing or empty SDP offer"),
        (&sdp, b"hello".to_vec(), 400, "not an SDP offer"),
        (&sdp, b"v=0\r\n\xff\xfe".to_vec(), 400, "UTF-8"),
        (
            &[("Content-Type", "application/json")],
            OFFER.as_bytes().to_vec(),
            415,
            "application/sdp",
        ),
        (
            &sdp,
            format!("{OFFER}{}", "a=x\r\n".repeat(14_000)).into_bytes(),
            413,
            "larger than 64 KiB",
        ),
    ];
    for (headers, body, status, message) in table {
        let response = node.request("POST", &path, headers, &body);
        assert_eq!(
            response.status,
            status,
            "{headers:?} {} bytes: {response}",
            body.len()
        );
        assert!(response.error().contains(message), "{response}");
    }
    assert!(
        sources(&relay, "POST", "/api/webrtc").is_empty(),
        "a refused offer reached the relay"
    );
}

#[test]
fn past_64_requests_in_flight_the_node_answers_503() {
    // Stand-in: it holds each offer a set time; go2rtc's only delays are per
    // camera (5 s to dial, 10 s to read), and SIGSTOP would hold status too.
    let relay = Relay::start();
    let dir = TempDir::new("busy");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let id = id_of(&node.add_camera(json!({ "name": "Door", "rtspUrl": dead_url("busy") })));
    assert!(wait_for(Duration::from_secs(5), || relay
        .streams()
        .contains_key(&id)));
    relay.set_webrtc_mode(WebrtcMode::Slow(Duration::from_secs(4)));
    let port = node.port;
    let offers: Vec<_> = (0..64)
        .map(|_| {
            let path = format!("/api/whep/{id}");
            thread::spawn(move || {
                common::http::request(
                    port,
                    "POST",
                    &path,
                    &[("Content-Type", "application/sdp")],
                    OFFER.as_bytes(),
                )
                .status
            })
        })
        .collect();
    let relay_busy = wait_for(Duration::from_secs(3), || {
        relay
            .received()
            .iter()
            .filter(|r| r.path == "/api/webrtc")
            .count()
            == 64
    });
    assert!(relay_busy, "64 offers did not reach the relay");
    let busy = node.get("/api/status");
    assert_eq!(busy.status, 503, "{busy}");
    assert_eq!(busy.header("Retry-After"), Some("1"));
    busy.error();
    let statuses: Vec<u16> = offers.into_iter().map(|t| t.join().unwrap()).collect();
    assert!(statuses.iter().all(|s| *s == 201), "{statuses:?}");
    assert_eq!(
        node.get("/api/status").status,
        200,
        "the node recovers once they end"
    );
}

#[test]
fn status_never_waits_on_the_relay() {
    // Relay health comes from the background check, never from the status
    // call: go2rtc is hung (SIGSTOP) from the start.
    let relay = Go2rtc::start();
    relay.pause();
    let dir = TempDir::new("status-relay");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let started = Instant::now();
    for _ in 0..5 {
        assert_eq!(node.get("/api/status").status, 200);
    }
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn whep_sessions_have_a_location_that_delete_ends() {
    let camera = Camera::start();
    let relay = Go2rtc::start();
    let dir = TempDir::new("whep-session");
    let (node, id) = node_with_camera(&relay, &dir, &camera.url("", "/main"));

    // go2rtc names no session for WHEP: the node's resource ends only on the node.
    let answer = whep(&node, &id);
    assert_eq!(answer.status, 201, "{answer}");
    let location = answer.header("Location").expect("a Location").to_owned();
    assert!(
        location.starts_with(&format!("/api/whep/{id}/")),
        "{location}"
    );
    assert_eq!(node.delete(&location).status, 204);
    let again = node.delete(&location);
    assert_eq!(again.status, 404, "{again}");
    assert_eq!(again.error(), "no such session");
    let other_camera = location.replace(&id, &uuid::Uuid::new_v4().to_string());
    assert_eq!(node.delete(&other_camera).status, 404);
    assert!(
        !relay
            .requests()
            .iter()
            .any(|r| r.path == "/api/webrtc" && r.method == "DELETE"),
        "nothing to end on go2rtc"
    );
}

#[test]
fn a_session_the_relay_names_is_ended_on_the_relay_too() {
    // Stand-in: go2rtc 1.9.14 names a session (Location) only for WHIP, not for WHEP.
    let relay = Relay::start();
    relay.set_webrtc_mode(WebrtcMode::WithSession);
    let dir = TempDir::new("whep-relay-session");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let id = id_of(&node.add_camera(json!({ "name": "Door", "rtspUrl": dead_url("ses") })));
    assert!(wait_for(Duration::from_secs(5), || relay
        .streams()
        .contains_key(&id)));
    let answer = whep(&node, &id);
    assert_eq!(answer.status, 201, "{answer}");
    let location = answer.header("Location").unwrap().to_owned();
    assert!(
        !location.contains("webrtc?id"),
        "the relay's own location is not shown: {location}"
    );
    assert_eq!(node.delete(&location).status, 204);
    let ended = relay
        .received()
        .into_iter()
        .find(|r| r.method == "DELETE" && r.path == "/api/webrtc");
    assert_eq!(
        ended
            .and_then(|r| r.param("id").map(str::to_owned))
            .as_deref(),
        Some("1")
    );
}

#[test]
fn whep_options_answer_without_cors() {
    let dir = TempDir::new("whep-options");
    let node = Node::start(
        dir.path(),
        &format!("http://127.0.0.1:{}", closed_port()),
        &[],
    );
    let id = uuid::Uuid::new_v4();
    let headers = [
        ("Origin", "http://evil.example"),
        ("Access-Control-Request-Method", "POST"),
    ];
    let response = node.request("OPTIONS", &format!("/api/whep/{id}"), &headers, b"");
    assert_eq!(response.status, 204, "{response}");
    assert_eq!(response.header("Allow"), Some("POST, OPTIONS"));
    assert_eq!(response.header("Accept-Post"), Some("application/sdp"));
    assert!(
        !response
            .headers
            .iter()
            .any(|(k, _)| k.to_ascii_lowercase().starts_with("access-control-")),
        "{response}"
    );
}

#[test]
fn whep_sub_stream_is_chosen_by_query() {
    let camera = Camera::start();
    let relay = Go2rtc::start();
    let dir = TempDir::new("whep-sub");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let with_sub = id_of(&node.add_camera(json!({
        "name": "A", "rtspUrl": camera.url("", "/main"), "rtspSubUrl": camera.url("", "/sub"),
    })));
    let without = id_of(&node.add_camera(json!({ "name": "B", "rtspUrl": dead_url("sub") })));
    assert!(wait_for(Duration::from_secs(5), || relay.streams().len() == 3));

    let sub = node.post_sdp(&format!("/api/whep/{with_sub}?stream=sub"), OFFER);
    assert_eq!(sub.status, 201, "{sub}");
    let main_stream = node.post_sdp(&format!("/api/whep/{with_sub}?stream=main"), OFFER);
    assert_eq!(main_stream.status, 201, "{main_stream}");
    assert_eq!(
        sources(&relay, "POST", "/api/webrtc"),
        vec![format!("{with_sub}_sub"), with_sub.clone()]
    );

    let none = node.post_sdp(&format!("/api/whep/{without}?stream=sub"), OFFER);
    assert_eq!(none.status, 404, "{none}");
    assert_eq!(none.error(), "this camera has no sub stream");
    let bogus = node.post_sdp(&format!("/api/whep/{with_sub}?stream=4k"), OFFER);
    assert_eq!(bogus.status, 400, "{bogus}");
    assert_eq!(bogus.error(), "stream must be main or sub");
}

#[test]
fn whep_offers_for_different_cameras_do_not_wait_on_each_other() {
    // Stand-in: it holds each offer 2 s on its own; SIGSTOP on go2rtc would
    // hold them all together.
    let relay = Relay::start();
    let dir = TempDir::new("whep-parallel");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let ids: Vec<String> = (0..4)
        .map(|i| {
            id_of(&node.add_camera(json!({ "name": format!("C{i}"), "rtspUrl": dead_url("p") })))
        })
        .collect();
    assert!(wait_for(Duration::from_secs(5), || relay.streams().len() == 4));
    relay.set_webrtc_mode(WebrtcMode::Slow(Duration::from_secs(2)));
    let port = node.port;
    let started = Instant::now();
    let offers: Vec<_> = ids
        .into_iter()
        .map(|id| {
            thread::spawn(move || {
                let headers = [("Content-Type", "application/sdp")];
                common::http::request(
                    port,
                    "POST",
                    &format!("/api/whep/{id}"),
                    &headers,
                    OFFER.as_bytes(),
                )
                .status
            })
        })
        .collect();
    let statuses: Vec<u16> = offers.into_iter().map(|t| t.join().unwrap()).collect();
    let took = started.elapsed();
    assert_eq!(statuses, vec![201; 4]);
    assert!(
        took < Duration::from_millis(3500),
        "4 offers of 2 s each took {took:?}"
    );
}

#[test]
fn patched_cameras_are_re_registered() {
    let relay = Go2rtc::start();
    let dir = TempDir::new("relay-patch");
    let first = dead_url("p1");
    let (node, id) = node_with_camera(&relay, &dir, &first);
    let patch = |body: Value| node.patch_camera(&id, body);
    let second = dead_url("p2");
    let second_sub = format!("{second}/sub");
    patch(json!({ "rtspUrl": second, "rtspSubUrl": second_sub }));
    let both = streams(&[(&id, &second), (&format!("{id}_sub"), &second_sub)]);
    assert!(
        wait_for(Duration::from_secs(5), || relay.stream_sources() == both),
        "{:?}",
        relay.streams()
    );
    patch(json!({ "enabled": false }));
    assert!(
        wait_for(Duration::from_secs(5), || relay.streams().is_empty()),
        "{:?}",
        relay.streams()
    );
    patch(json!({ "enabled": true, "rtspSubUrl": null }));
    assert!(
        wait_for(Duration::from_secs(5), || relay.stream_sources()
            == streams(&[(&id, &second)])),
        "{:?}",
        relay.streams()
    );
}

#[test]
fn sigterm_finishes_requests_in_flight_and_exits_0() {
    let camera = Camera::start();
    let relay = Go2rtc::start();
    let dir = TempDir::new("sigterm");
    let (node, id) = node_with_camera(&relay, &dir, &camera.url("", "/main"));
    // go2rtc hung (SIGSTOP) holds the offer until it is resumed.
    relay.pause();
    let port = node.port;
    let in_flight = thread::spawn(move || {
        let headers = [("Content-Type", "application/sdp")];
        common::http::request(
            port,
            "POST",
            &format!("/api/whep/{id}"),
            &headers,
            OFFER.as_bytes(),
        )
        .status
    });
    thread::sleep(Duration::from_millis(500));
    let stopped = Instant::now();
    node.terminate();
    thread::sleep(Duration::from_millis(600));
    assert!(
        std::net::TcpStream::connect(("127.0.0.1", port)).is_err(),
        "still accepting after SIGTERM"
    );
    relay.resume();
    assert_eq!(
        in_flight.join().unwrap(),
        201,
        "the request in flight was finished"
    );
    assert_eq!(node.wait(), Some(0));
    assert!(
        stopped.elapsed() < Duration::from_secs(5),
        "{:?}",
        stopped.elapsed()
    );
}
