//! The node and the relay: stream registration, health, and WHEP forwarding
//! with every outcome, against the go2rtc stand-in in `common/relay.rs`.

mod common;

use std::net::TcpListener;
use std::thread;
use std::time::{Duration, Instant};

use common::relay::{ANSWER_BODY, Relay, WebrtcMode};
use common::{Node, SilentCamera, TempDir, closed_port, wait_for};
use serde_json::{Value, json};

const OFFER: &str = "v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n\
a=group:BUNDLE 0\r\nm=video 9 UDP/TLS/RTP/SAVPF 96\r\nc=IN IP4 0.0.0.0\r\na=mid:0\r\na=recvonly\r\n\
a=rtpmap:96 H264/90000\r\n";

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

/// A node using `relay`, with one camera that the relay has registered.
fn node_with_camera(relay: &Relay, dir: &TempDir) -> (Node, String) {
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let id = id_of(&node.add_camera(json!({ "name": "Door", "rtspUrl": dead_url("door") })));
    let registered = wait_for(Duration::from_secs(5), || relay.streams().contains_key(&id));
    assert!(
        registered,
        "camera {id} not registered: {:?}",
        relay.received()
    );
    (node, id)
}

fn whep(node: &Node, id: &str) -> common::Response {
    node.post_sdp(&format!("/api/whep/{id}"), OFFER)
}

#[test]
fn cameras_are_registered_and_removed() {
    let relay = Relay::start();
    let dir = TempDir::new("relay-register");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let main = dead_url("reg-secret");
    let sub = format!("{main}2");
    let camera = node.add_camera(json!({ "name": "Door", "rtspUrl": main, "rtspSubUrl": sub }));
    let id = id_of(&camera);
    let sub_name = format!("{id}_sub");
    assert!(
        wait_for(Duration::from_secs(5), || relay.streams().len() == 2),
        "streams: {:?}",
        relay.streams()
    );
    assert_eq!(relay.streams().get(&id), Some(&main));
    assert_eq!(relay.streams().get(&sub_name), Some(&sub));
    let puts: Vec<_> = relay
        .received()
        .into_iter()
        .filter(|r| r.method == "PUT")
        .collect();
    assert_eq!(puts.len(), 2, "{puts:?}");
    assert!(puts.iter().all(|p| p.path == "/api/streams"));

    let disabled =
        node.add_camera(json!({ "name": "Off", "rtspUrl": dead_url("x"), "enabled": false }));

    assert_eq!(node.delete(&format!("/api/cameras/{id}")).status, 204);
    assert!(
        wait_for(Duration::from_secs(5), || relay.streams().is_empty()),
        "streams: {:?}",
        relay.streams()
    );
    let deletes: Vec<_> = relay
        .received()
        .into_iter()
        .filter(|r| r.method == "DELETE")
        .collect();
    let names: Vec<_> = deletes
        .iter()
        .map(|d| d.param("src").unwrap().to_owned())
        .collect();
    assert_eq!(names, vec![id.clone(), sub_name]);
    assert!(
        !relay
            .received()
            .iter()
            .any(|r| r.query.iter().any(|(_, v)| v.contains(&id_of(&disabled)))),
        "a disabled camera was registered"
    );
    assert!(
        !node.logs().contains("reg-secret"),
        "a password reached the log"
    );
}

#[test]
fn stored_cameras_are_registered_when_the_relay_comes_up() {
    let relay_port = closed_port();
    let relay_url = format!("http://127.0.0.1:{relay_port}");
    let dir = TempDir::new("relay-startup");
    let first = Node::start(dir.path(), &relay_url, &[]);
    let camera = first.add_camera(json!({ "name": "Door", "rtspUrl": dead_url("s") }));
    assert_eq!(first.get("/api/status").json()["relayHealthy"], false);
    first.kill();

    // Relay up before the node starts: registered at start.
    let relay = Relay::start_on(relay_port);
    let second = Node::start(dir.path(), &relay_url, &[]);
    assert!(
        wait_for(Duration::from_secs(5), || relay
            .streams()
            .contains_key(&id_of(&camera))),
        "not registered at start: {:?}",
        relay.received()
    );
    assert!(wait_for(Duration::from_secs(3), || second
        .get("/api/status")
        .json()["relayHealthy"]
        == true));

    // The relay goes away: unhealthy within 10 s. It comes back empty: healthy
    // again and the camera registered again within 10 s.
    drop(relay);
    let gone = Instant::now();
    assert!(
        wait_for(Duration::from_secs(10), || second.get("/api/status").json()
            ["relayHealthy"]
            == false),
        "still healthy 10 s after the relay stopped"
    );
    eprintln!("relay loss noticed after {:?}", gone.elapsed());
    let relay = Relay::start_on(relay_port);
    let back = Instant::now();
    assert!(
        wait_for(Duration::from_secs(10), || relay
            .streams()
            .contains_key(&id_of(&camera))),
        "not registered again after the relay came back"
    );
    eprintln!("relay return handled after {:?}", back.elapsed());
    assert_eq!(second.get("/api/status").json()["relayHealthy"], true);
}

#[test]
fn the_relay_is_reconciled_and_foreign_streams_are_left_alone() {
    let relay = Relay::start();
    let orphan = uuid::Uuid::new_v4().to_string();
    relay.set_stream("garage", "rtsp://192.0.2.9/garage");
    relay.set_stream("exec-thing", "exec:ffmpeg -i x");
    relay.set_stream(&orphan, "rtsp://192.0.2.9/old");
    relay.set_stream(&format!("{orphan}_sub"), "rtsp://192.0.2.9/old-sub");
    let dir = TempDir::new("relay-reconcile");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let main = dead_url("rec");
    let id = id_of(&node.add_camera(json!({ "name": "Door", "rtspUrl": main })));
    let expected = |main: &str| {
        let mut streams = std::collections::BTreeMap::new();
        streams.insert("garage".to_owned(), "rtsp://192.0.2.9/garage".to_owned());
        streams.insert("exec-thing".to_owned(), "exec:ffmpeg -i x".to_owned());
        streams.insert(id.clone(), main.to_owned());
        streams
    };
    assert!(
        wait_for(Duration::from_secs(5), || relay.streams()
            == expected(&main)),
        "owned orphans removed, foreign streams kept: {:?}",
        relay.streams()
    );
    // Someone changes our stream behind the node's back: it is put back within 10 s.
    relay.set_stream(&id, "rtsp://192.0.2.9/hijacked");
    let changed = Instant::now();
    assert!(
        wait_for(Duration::from_secs(12), || relay.streams()
            == expected(&main)),
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
    // Accepts connections and never answers, like a wedged relay.
    let hung = SilentCamera::start();
    let dir = TempDir::new("relay-hung");
    let node = Node::start(dir.path(), &format!("http://127.0.0.1:{}", hung.port), &[]);
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
    assert_eq!(node.get("/api/status").json()["relayHealthy"], false);
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "{:?}",
        started.elapsed()
    );
}

#[test]
fn whep_offers_are_forwarded_and_answered() {
    let relay = Relay::start();
    let dir = TempDir::new("whep-ok");
    let (node, id) = node_with_camera(&relay, &dir);

    let response = whep(&node, &id);
    assert_eq!(response.status, 201, "{response}");
    assert_eq!(response.header("Content-Type"), Some("application/sdp"));
    assert_eq!(
        response.text(),
        ANSWER_BODY,
        "the answer is passed on unchanged"
    );
    let offers: Vec<_> = relay
        .received()
        .into_iter()
        .filter(|r| r.path == "/api/webrtc")
        .collect();
    assert_eq!(offers.len(), 1, "{offers:?}");
    assert_eq!(offers[0].method, "POST");
    assert_eq!(offers[0].param("src"), Some(id.as_str()));
    assert_eq!(offers[0].content_type.as_deref(), Some("application/sdp"));
    assert_eq!(offers[0].body, OFFER, "the offer is passed on unchanged");
}

#[test]
fn whep_failures_are_502_without_the_relay_text() {
    let relay = Relay::start();
    let dir = TempDir::new("whep-fail");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let secret = "whep-Secret-99";
    let main = dead_url(secret);
    let id = id_of(&node.add_camera(json!({ "name": "Door", "rtspUrl": main })));
    let disabled = id_of(
        &node.add_camera(json!({ "name": "Off", "rtspUrl": dead_url(secret), "enabled": false })),
    );
    assert!(wait_for(Duration::from_secs(5), || relay
        .streams()
        .contains_key(&id)));

    let off = whep(&node, &disabled);
    assert_eq!(off.status, 502, "disabled: {off}");
    assert_eq!(off.error(), "the camera is disabled");
    assert!(!relay.received().iter().any(|r| r.path == "/api/webrtc"));

    // The relay lost the stream (until the next reconcile): go2rtc answers 404.
    relay.settle();
    relay.remove_stream(&id);
    let missing = whep(&node, &id);
    assert_eq!(missing.status, 502, "relay 404: {missing}");
    assert_eq!(missing.error(), "stream unavailable on the relay");

    relay.set_stream(&id, &main);
    relay.set_webrtc_mode(WebrtcMode::Fail);
    let failed = whep(&node, &id);
    assert_eq!(failed.status, 502, "relay 500: {failed}");
    assert_eq!(
        failed.error(),
        "stream relay could not start the stream (is the camera on?)"
    );
    let offers = relay
        .received()
        .into_iter()
        .filter(|r| r.path == "/api/webrtc");
    assert_eq!(offers.count(), 2, "the 404 and the 500 came from the relay");

    let logs = node.logs();
    assert!(
        !logs.contains(secret),
        "the relay's text reached the log:\n{logs}"
    );
    for response in [&missing, &failed] {
        assert!(
            !response.text().contains(secret) && !response.text().contains("rtsp"),
            "{response}"
        );
    }
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
    let relay = Relay::start();
    let dir = TempDir::new("whep-slow");
    let (node, id) = node_with_camera(&relay, &dir);
    relay.set_webrtc_mode(WebrtcMode::Slow(Duration::from_secs(25)));
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
    let relay = Relay::start();
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
        !relay.received().iter().any(|r| r.path == "/api/webrtc"),
        "a refused offer reached the relay"
    );
}

#[test]
fn past_64_requests_in_flight_the_node_answers_503() {
    let relay = Relay::start();
    let dir = TempDir::new("busy");
    let (node, id) = node_with_camera(&relay, &dir);
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
    // Relay health comes from the background check, never from the status call.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let dir = TempDir::new("status-relay");
    let node = Node::start(
        dir.path(),
        &format!("http://127.0.0.1:{}", listener.local_addr().unwrap().port()),
        &[],
    );
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
    let relay = Relay::start();
    let dir = TempDir::new("whep-session");
    let (node, id) = node_with_camera(&relay, &dir);

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

    // A relay that names its session has it ended too.
    relay.set_webrtc_mode(WebrtcMode::WithSession);
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
    let relay = Relay::start();
    let dir = TempDir::new("whep-sub");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let main = dead_url("sub");
    let with_sub = id_of(
        &node.add_camera(json!({ "name": "A", "rtspUrl": main, "rtspSubUrl": format!("{main}2") })),
    );
    let without = id_of(&node.add_camera(json!({ "name": "B", "rtspUrl": dead_url("sub") })));
    assert!(wait_for(Duration::from_secs(5), || relay.streams().len() == 3));

    let sub = node.post_sdp(&format!("/api/whep/{with_sub}?stream=sub"), OFFER);
    assert_eq!(sub.status, 201, "{sub}");
    let main_stream = node.post_sdp(&format!("/api/whep/{with_sub}?stream=main"), OFFER);
    assert_eq!(main_stream.status, 201, "{main_stream}");
    let sources: Vec<String> = relay
        .received()
        .into_iter()
        .filter(|r| r.path == "/api/webrtc")
        .filter_map(|r| r.param("src").map(str::to_owned))
        .collect();
    assert_eq!(sources, vec![format!("{with_sub}_sub"), with_sub.clone()]);

    let none = node.post_sdp(&format!("/api/whep/{without}?stream=sub"), OFFER);
    assert_eq!(none.status, 404, "{none}");
    assert_eq!(none.error(), "this camera has no sub stream");
    let bogus = node.post_sdp(&format!("/api/whep/{with_sub}?stream=4k"), OFFER);
    assert_eq!(bogus.status, 400, "{bogus}");
    assert_eq!(bogus.error(), "stream must be main or sub");
}

#[test]
fn whep_offers_for_different_cameras_do_not_wait_on_each_other() {
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
    let relay = Relay::start();
    let dir = TempDir::new("relay-patch");
    let node = Node::start(dir.path(), &relay.url(), &[]);
    let first = dead_url("p1");
    let id = id_of(&node.add_camera(json!({ "name": "Door", "rtspUrl": first })));
    assert!(wait_for(Duration::from_secs(5), || relay
        .streams()
        .get(&id)
        == Some(&first)));
    let path = format!("/api/cameras/{id}");
    let patch = |body: Value| {
        let response = node.request(
            "PATCH",
            &path,
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        );
        assert_eq!(response.status, 200, "{response}");
    };
    let second = dead_url("p2");
    patch(json!({ "rtspUrl": second, "rtspSubUrl": format!("{second}/sub") }));
    assert!(
        wait_for(Duration::from_secs(5), || relay.streams().get(&id)
            == Some(&second)
            && relay.streams().contains_key(&format!("{id}_sub"))),
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
        wait_for(Duration::from_secs(5), || relay
            .streams()
            .keys()
            .collect::<Vec<_>>()
            == vec![&id]),
        "{:?}",
        relay.streams()
    );
}

#[test]
fn sigterm_finishes_requests_in_flight_and_exits_0() {
    let relay = Relay::start();
    let dir = TempDir::new("sigterm");
    let (node, id) = node_with_camera(&relay, &dir);
    relay.set_webrtc_mode(WebrtcMode::Slow(Duration::from_secs(2)));
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
