//! Alerts through the real node: a person seen by the real camera and
//! classifier reaches a Web Push subscription (decrypted by web-push-testing,
//! an independent implementation), an ntfy topic and a signed webhook; an
//! outage and a crash lose and double nothing; a destination that hangs
//! holds up no other; cooldown, snooze and armed do what they say; a push subscription that is gone is removed; and
//! destinations the node must not call are refused, with no secret shown.
//! The far ends listen on a LAN of the test's own (`common::lan`): the node
//! refuses loopback destinations.

use std::collections::BTreeSet;
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use crate::common::lan::Lan;
use crate::common::receivers::{PushService, Receivers};
use crate::common::{Camera, Node, SECRET_MARKER, TempDir, closed_port, iso, ms, now_ms, wait_for};

/// A camera whose stream nobody answers: posted events need a camera.
fn quiet_camera(node: &Node, name: &str) -> String {
    let created = node.add_camera(json!({
        "name": name,
        "rtspUrl": format!("rtsp://127.0.0.1:{}/x", closed_port()),
        "record": false,
        "detect": false,
    }));
    created["id"].as_str().unwrap().to_owned()
}

fn start_node(data: &TempDir) -> Node {
    let relay = format!("http://127.0.0.1:{}", closed_port());
    Node::start(data.path(), &relay, &[("NODE_URL", "http://nvr.test:8080")])
}

fn add_destination(node: &Node, body: Value) -> Value {
    let answer = node.post_json("/api/alerts/destinations", &body.to_string());
    assert_eq!(answer.status, 201, "{body}: {answer}");
    answer.json()
}

/// A webhook destination named `name` to `receivers`' `/hook/{name}`, its
/// secret handed to them (one secret: one webhook a receiver).
fn webhook(node: &Node, receivers: &Receivers, name: &str, rules: Value) -> Value {
    let created = add_destination(
        node,
        json!({"name": name, "type": "webhook",
               "url": format!("{}/hook/{name}/{SECRET_MARKER}", receivers.url()), "rules": rules}),
    );
    receivers.set_secret(created["secret"].as_str().expect("the secret, shown once"));
    created
}

/// Posts a person event of `camera` that happened just now; its id.
fn post_person(node: &Node, camera: &str) -> String {
    let now = now_ms();
    let body = json!({"cameraId": camera, "kind": "person", "score": 0.9,
                      "startedAt": iso(now - 2_000), "endedAt": iso(now)});
    let answer = node.post_json("/api/events", &body.to_string());
    assert_eq!(answer.status, 201, "{answer}");
    answer.json()["id"].as_str().unwrap().to_owned()
}

/// The webhook alerts of the events of `camera`, each once, as a receiver
/// that drops duplicates by their id takes them (delivery is at least
/// once: on a loaded machine a slow answer is taken for a failure and the
/// alert is sent again).
fn hooks_of(receivers: &Receivers, camera: &str) -> Vec<Value> {
    let mut seen = std::collections::HashSet::new();
    receivers
        .hooks()
        .into_iter()
        .filter(|h| h["body"]["camera"]["id"] == camera)
        .filter(|h| seen.insert(h["id"].to_string()))
        .collect()
}

/// Waits up to `timeout` until `camera` has had `count` webhook deliveries.
fn wait_for_hooks(
    receivers: &Receivers,
    camera: &str,
    count: usize,
    timeout: Duration,
) -> Vec<Value> {
    wait_for(timeout, || hooks_of(receivers, camera).len() >= count);
    hooks_of(receivers, camera)
}

fn status_destination(node: &Node, name: &str) -> Value {
    let status = node.get("/api/status").json();
    status["alerts"]["destinations"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no destination {name} in {}", status["alerts"]))
}

#[test]
fn a_person_at_the_door_reaches_web_push_ntfy_and_a_signed_webhook() {
    let lan = Lan::new();
    let receivers = Receivers::start(&lan, 0, None);
    let push = PushService::start(&lan);
    let camera = Camera::start();
    let data = TempDir::new("alerts-person");
    let classifier = crate::common::classifier::real();
    let mut env: Vec<(&str, &str)> = classifier.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push(("NODE_URL", "http://nvr.test:8080"));
    let node = Node::start_recording(data.path(), &data.path().join("recordings"), &env);
    let created =
        node.add_camera(json!({ "name": "Front door", "rtspUrl": camera.url("", "/scene") }));
    let id = created["id"].as_str().unwrap().to_owned();

    let key = node.get("/api/alerts").json()["vapidPublicKey"]
        .as_str()
        .unwrap()
        .to_owned();
    let (subscription, client) = push.subscribe(&key);
    add_destination(
        &node,
        json!({"name": "Phone", "type": "webpush", "subscription": subscription}),
    );
    add_destination(
        &node,
        json!({"name": "ntfy", "type": "ntfy", "server": receivers.url(), "topic": "front_door"}),
    );
    webhook(&node, &receivers, "hook", json!({}));
    node.settle(&id);

    // When the test first saw each: web-push-testing keeps no time.
    camera.slide("person", 8);
    let (mut pushed, mut published, mut hooked) = (None, None, None);
    let deadline = Instant::now() + Duration::from_secs(60);
    while (pushed.is_none() || published.is_none() || hooked.is_none()) && Instant::now() < deadline
    {
        let seen = |got: bool, at: &mut Option<i64>| {
            if got && at.is_none() {
                *at = Some(now_ms());
            }
        };
        seen(!push.messages(&client).is_empty(), &mut pushed);
        seen(
            !receivers.ntfy_messages("front_door").is_empty(),
            &mut published,
        );
        seen(!receivers.hooks().is_empty(), &mut hooked);
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(
        pushed.is_some() && published.is_some() && hooked.is_some(),
        "not every destination had its alert in 60 s: push {pushed:?}, ntfy {published:?}, \
         webhook {hooked:?}\nevents {:#?}\n{}",
        node.events_of(&id),
        node.logs()
    );
    // One alert each: the event goes on, and ends, with no second.
    let ended = wait_for(Duration::from_secs(60), || {
        node.events_of(&id).iter().all(|e| e["inProgress"] == false)
    });
    assert!(ended, "{:#?}", node.events_of(&id));
    let (pushes, ntfy, hooks) = (
        push.messages(&client),
        receivers.ntfy_messages("front_door"),
        receivers.hooks(),
    );
    assert_eq!(
        (pushes.len(), ntfy.len(), hooks.len()),
        (1, 1, 1),
        "{pushes:?} {ntfy:?} {hooks:?}"
    );
    let event_id = pushes[0]["eventId"].as_str().unwrap().to_owned();
    let event = node
        .events_of(&id)
        .into_iter()
        .find(|e| e["id"] == event_id.as_str())
        .expect("the pushed event is listed");
    assert_eq!(event["kind"], "person", "{event}");

    let push = &pushes[0];
    assert_eq!(push["title"], "Person at Front door", "{push}");
    assert_eq!(push["kind"], "person");
    assert_eq!(push["cameraId"], id.as_str());
    assert_eq!(push["at"], event["startedAt"], "the event's time");
    assert_eq!(push["url"], format!("/review?event={event_id}"));

    let message = &ntfy[0];
    assert_eq!(message["title"], "Person at Front door", "{message}");
    assert_eq!(message["priority"], 4, "high for a person: {message}");
    assert_eq!(message["tags"], json!(["bust_in_silhouette"]));
    assert_eq!(
        message["click"],
        format!("http://nvr.test:8080/review?event={event_id}")
    );
    assert_eq!(
        message["attachment"]["jpeg"], true,
        "the camera's picture: {message}"
    );
    assert_eq!(
        message["actions"][1]["url"],
        format!("http://nvr.test:8080/api/cameras/{id}/snooze")
    );

    let hook = &hooks[0];
    assert_eq!(hook["signatureOk"], true, "{hook}");
    assert_eq!(hook["contentType"], "application/json");
    let body = &hook["body"];
    assert_eq!(body["alertId"], hook["id"]);
    assert_eq!(body["type"], "alert");
    assert_eq!(body["event"]["id"], event_id.as_str());
    assert_eq!(body["event"]["kind"], "person");
    assert_eq!(body["camera"], json!({"id": id, "name": "Front door"}));
    assert_eq!(
        body["thumbnailUrl"],
        format!("http://nvr.test:8080/api/events/{event_id}/thumbnail.jpg")
    );
    assert_eq!(
        body["clipUrl"],
        format!("http://nvr.test:8080/api/events/{event_id}/clip.mp4")
    );

    let started = ms(event["startedAt"].as_str().unwrap());
    for (what, at) in [
        ("web push", pushed),
        ("ntfy", published),
        ("webhook", hooked),
    ] {
        let after = at.unwrap() - started;
        eprintln!("{what}: seen {after} ms after the event started");
        assert!(
            after < 10_000,
            "{what} arrived {after} ms after the event started"
        );
    }
    for name in ["Phone", "ntfy", "hook"] {
        let delivery = &status_destination(&node, name)["delivery"];
        assert_eq!(delivery["delivered"], 1, "{name}: {delivery}");
        assert_eq!(delivery["queued"], 0, "{name}: {delivery}");
    }
}

/// A destination for loitering alone: a person who walks in is no alert
/// for it; the same person standing in a zone with `loiterSeconds: 10` is,
/// once, as the event becomes loitering.
#[test]
fn a_person_who_lingers_alerts_a_destination_for_loitering_then_and_only_then() {
    let lan = Lan::new();
    let receivers = Receivers::start(&lan, 0, None);
    let camera = Camera::start();
    let data = TempDir::new("alerts-loiter");
    let classifier = crate::common::classifier::real();
    let mut env: Vec<(&str, &str)> = classifier.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push(("NODE_URL", "http://nvr.test:8080"));
    let node = Node::start_recording(data.path(), &data.path().join("recordings"), &env);
    let created = node.add_camera(json!({
        "name": "Front door",
        "rtspUrl": camera.url("", "/scene"),
        "zones": [{"name": "Step", "polygon": [[0, 0], [1, 0], [1, 1], [0, 1]], "loiterSeconds": 10}],
    }));
    let id = created["id"].as_str().unwrap().to_owned();
    let hook = webhook(
        &node,
        &receivers,
        "lingers",
        json!({"loitering": true, "cooldownSeconds": 0, "atEnd": true}),
    );
    assert_eq!(hook["rules"]["loitering"], true, "{hook}");
    node.settle(&id);

    let command = "leave person 4 16";
    camera.scene(command);
    let hooks = wait_for_hooks(&receivers, &id, 1, Duration::from_secs(60));
    let arrived = now_ms();
    assert_eq!(
        hooks.len(),
        1,
        "{hooks:#?}\nevents {:#?}\n{}",
        node.events_of(&id),
        node.logs()
    );
    let came = camera
        .scene_began(command)
        .expect("the camera says when the person came");
    let body = &hooks[0]["body"];
    assert_eq!(body["type"], "alert", "{body}");
    assert_eq!(body["event"]["loitering"], true, "{body}");
    assert_eq!(body["event"]["kind"], "person", "{body}");
    assert_eq!(body["title"], "Person loitering at Front door", "{body}");
    assert!(
        arrived - came >= 10_000,
        "alerted {} ms after the person came, before they had lingered 10 s",
        arrived - came
    );
    // Nothing more for it as it ends (its update adds no kind nor zone).
    let ended = wait_for(Duration::from_secs(90), || {
        node.events_of(&id).iter().all(|e| e["inProgress"] == false)
    });
    assert!(ended, "{:#?}", node.events_of(&id));
    std::thread::sleep(Duration::from_secs(5));
    let hooks = hooks_of(&receivers, &id);
    assert_eq!(hooks.len(), 1, "{hooks:#?}");
}

#[test]
fn an_outage_and_a_crash_lose_no_alert_and_double_none() {
    let lan = Lan::new();
    // Its port, then down: nothing listens there until it comes back.
    let port = Receivers::start(&lan, 0, None).port;
    let data = TempDir::new("alerts-outage");
    let node = start_node(&data);
    let camera = quiet_camera(&node, "Gate");
    let url = format!("http://{}:{port}/hook/gate/{SECRET_MARKER}", lan.address);
    let created = add_destination(
        &node,
        json!({"name": "gate", "type": "webhook", "url": url, "rules": {"cooldownSeconds": 0}}),
    );
    let secret = created["secret"].as_str().unwrap().to_owned();
    let events: BTreeSet<String> = (0..5).map(|_| post_person(&node, &camera)).collect();
    let failing = wait_for(Duration::from_secs(20), || {
        let delivery = &status_destination(&node, "gate")["delivery"];
        delivery["queued"] == 5 && delivery["lastFailure"].is_string()
    });
    let delivery = &status_destination(&node, "gate")["delivery"];
    assert!(failing, "{delivery}");
    let failure = delivery["lastFailure"].as_str().unwrap();
    assert!(
        failure.starts_with(&format!("no answer from {}: ", lan.address)),
        "{failure}"
    );
    node.kill();

    let node = start_node(&data);
    let receivers = Receivers::start(&lan, port, None);
    receivers.set_secret(&secret);
    let hooks = wait_for_hooks(&receivers, &camera, 5, Duration::from_secs(60));
    let delivered = wait_for(Duration::from_secs(10), || {
        status_destination(&node, "gate")["delivery"]["queued"] == 0
    });
    assert!(delivered, "{}", status_destination(&node, "gate"));
    let hooks_now = hooks_of(&receivers, &camera);
    assert_eq!(
        hooks_now.len(),
        5,
        "each once: {hooks_now:#?}\n{}",
        node.logs()
    );
    let ids: BTreeSet<&str> = hooks.iter().map(|h| h["id"].as_str().unwrap()).collect();
    assert_eq!(ids.len(), 5, "5 alerts, 5 ids: {hooks:#?}");
    let alerted: BTreeSet<String> = hooks
        .iter()
        .map(|h| h["body"]["event"]["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(alerted, events, "every event's alert");
    assert!(hooks.iter().all(|h| h["signatureOk"] == true), "{hooks:#?}");
    let delivery = &status_destination(&node, "gate")["delivery"];
    assert_eq!(delivery["lastFailure"], Value::Null, "{delivery}");
    assert!(delivery["lastDeliveredAt"].is_string(), "{delivery}");
}

#[test]
fn cooldown_snooze_and_armed_do_what_they_say_and_a_hung_destination_holds_up_no_other() {
    let lan = Lan::new();
    let receivers = Receivers::start(&lan, 0, None);
    let data = TempDir::new("alerts-rules");
    let node = start_node(&data);
    let (door, yard) = (quiet_camera(&node, "Door"), quiet_camera(&node, "Yard"));
    // A receiver that takes each alert and answers only after 60 s: its
    // tries time out one after the other (15 s each), beside the others'.
    add_destination(
        &node,
        json!({"name": "hung", "type": "webhook", "url": format!("{}/hang/x", receivers.url()),
               "rules": {"cooldownSeconds": 0}}),
    );
    // Door's alerts with an hour's cooldown, Yard's with none.
    webhook(
        &node,
        &receivers,
        "all",
        json!({"cameras": [door, yard], "cooldownSeconds": 0}),
    );
    let slow = add_destination(
        &node,
        json!({"name": "slow", "type": "ntfy", "server": receivers.url(), "topic": "slow",
               "rules": {"cooldownSeconds": 3600, "cameras": [door]}}),
    );
    assert_eq!(slow["rules"]["cooldownSeconds"], 3600);

    // Ten events in a minute (here, at once) on one camera.
    for _ in 0..10 {
        post_person(&node, &door);
    }
    let hooks = wait_for_hooks(&receivers, &door, 10, Duration::from_secs(14));
    assert_eq!(
        hooks.len(),
        10,
        "no cooldown: every event, none held up by the hung one"
    );
    let first = wait_for(Duration::from_secs(30), || {
        !receivers.ntfy_messages("slow").is_empty()
    });
    assert!(first, "{}", node.logs());

    // Snoozed, Door gives nothing; Yard's alert comes after it and arrives.
    let snoozed = node.post_json(&format!("/api/cameras/{door}/snooze"), r#"{"minutes": 30}"#);
    assert_eq!(snoozed.status, 200, "{snoozed}");
    let until = ms(snoozed.json()["until"].as_str().unwrap()) - now_ms();
    assert!((29 * 60_000..=30 * 60_000).contains(&until), "{snoozed}");
    let status = node.get("/api/status").json();
    assert_eq!(status["alerts"]["snoozed"][0]["cameraId"], door.as_str());
    post_person(&node, &door);
    post_person(&node, &yard);
    wait_for_hooks(&receivers, &yard, 1, Duration::from_secs(30));
    assert_eq!(hooks_of(&receivers, &door).len(), 10, "snoozed: none");
    assert_eq!(
        node.delete(&format!("/api/cameras/{door}/snooze")).status,
        204
    );

    // Disarmed, nothing; armed again, the next event alerts.
    let disarmed = node.patch_json("/api/alerts", r#"{"armed": false}"#);
    assert_eq!(disarmed.json()["armed"], false, "{disarmed}");
    assert_eq!(node.get("/api/status").json()["alerts"]["armed"], false);
    post_person(&node, &door);
    post_person(&node, &yard);
    let armed = node.patch_json("/api/alerts", r#"{"armed": true}"#);
    assert_eq!(armed.json()["armed"], true, "{armed}");
    let last = post_person(&node, &yard);
    let hooks = wait_for_hooks(&receivers, &yard, 2, Duration::from_secs(30));
    assert_eq!(hooks.len(), 2, "{hooks:#?}");
    assert_eq!(
        hooks[1]["body"]["event"]["id"],
        last.as_str(),
        "not the disarmed one"
    );
    assert_eq!(hooks_of(&receivers, &door).len(), 10, "disarmed: none");
    assert_eq!(
        receivers.ntfy_messages("slow").len(),
        1,
        "an hour's cooldown: the first alone"
    );
    let refused = node.patch_json("/api/alerts", r#"{"armed": "yes"}"#);
    assert_eq!(refused.status, 400);
    assert_eq!(refused.error(), "armed must be true or false");
}

#[test]
fn a_push_subscription_that_is_gone_is_removed() {
    let lan = Lan::new();
    let push = PushService::start(&lan);
    let data = TempDir::new("alerts-gone");
    let node = start_node(&data);
    let camera = quiet_camera(&node, "Shed");
    let key = node.get("/api/alerts").json()["vapidPublicKey"]
        .as_str()
        .unwrap()
        .to_owned();
    let (subscription, client) = push.subscribe(&key);
    let created = add_destination(
        &node,
        json!({"name": "Phone", "type": "webpush", "subscription": subscription}),
    );
    assert_eq!(created["host"], format!("{}:8090", lan.address));
    assert!(
        !created.to_string().contains(&client),
        "the endpoint is not shown: {created}"
    );
    let id = created["id"].as_str().unwrap();
    let test = node.post(&format!("/api/alerts/destinations/{id}/test"));
    assert_eq!(
        test.json(),
        json!({"delivered": true, "message": null}),
        "{test}"
    );
    let messages = push.messages(&client);
    assert_eq!(messages.len(), 1);
    assert_eq!(messages[0]["title"], "Test alert from test-node");

    push.expire(&client);
    post_person(&node, &camera);
    let removed = wait_for(Duration::from_secs(30), || {
        node.get("/api/alerts").json()["destinations"] == json!([])
    });
    assert!(removed, "{}", node.get("/api/alerts").json());
    assert!(
        node.logs().contains("its subscription is deleted"),
        "{}",
        node.logs()
    );
}

#[test]
fn destinations_the_node_must_not_call_are_refused_and_no_secret_is_shown() {
    let lan = Lan::new();
    let token = format!("tk_{SECRET_MARKER}token");
    let receivers = Receivers::start(&lan, 0, Some(&token));
    let data = TempDir::new("alerts-refused");
    let node = start_node(&data);
    // The node's own address on the LAN: the host end of the test's pair.
    let own = &lan.host_address;
    let refused = [
        (
            json!({"name": "go2rtc", "type": "webhook", "url": "http://127.0.0.1:1984/api/streams?src=x"}),
            "url must not point at a loopback address",
        ),
        (
            json!({"name": "n", "type": "webhook", "url": "http://localhost:1984/api/streams"}),
            "url must not point at a loopback address",
        ),
        (
            json!({"name": "n", "type": "webhook", "url": "http://169.254.169.254/latest"}),
            "url must not point at a link-local address",
        ),
        (
            json!({"name": "n", "type": "webhook", "url": format!("http://{own}:8080/api/cameras")}),
            "url must not point at the node itself",
        ),
        (
            json!({"name": "n", "type": "webhook", "url": "http://0.0.0.0:1984/"}),
            "url must not point at an unspecified address",
        ),
        (
            json!({"name": "n", "type": "webhook", "url": "file:///etc/shadow"}),
            "url must be an http:// or https:// URL",
        ),
        (
            json!({"name": "n", "type": "ntfy", "server": "http://[::1]:2586", "topic": "t"}),
            "server must not point at a loopback address",
        ),
        (
            json!({"name": "n", "type": "webpush", "subscription": {
                "endpoint": format!("http://{own}:1984/"), "keys": {}}}),
            "subscription.endpoint must not point at the node itself",
        ),
    ];
    for (body, message) in refused {
        let answer = node.post_json("/api/alerts/destinations", &body.to_string());
        assert_eq!(answer.status, 400, "{body}: {answer}");
        assert!(
            answer.error().starts_with(message),
            "{body}: {}",
            answer.error()
        );
    }
    assert_eq!(
        node.get("/api/alerts").json()["destinations"],
        json!([]),
        "nothing made"
    );

    // Made, then shown without its token, secret or URL: the harness fails
    // any answer or log line with the token or the hook's path in it.
    let ntfy = add_destination(
        &node,
        json!({"name": "ntfy", "type": "ntfy", "server": receivers.url(), "topic": "door_secret_topic", "token": token}),
    );
    assert_eq!(ntfy["tokenSet"], true);
    assert_eq!(ntfy["topicHint"], "doo…");
    let hook = webhook(&node, &receivers, "door", json!({}));
    let secret = hook["secret"].as_str().unwrap().to_owned();
    assert_eq!(secret.len(), 64);
    let shown = node.get("/api/alerts").json().to_string() + &node.get("/api/status").text();
    for hidden in [secret.as_str(), "door_secret_topic", "/hook/door"] {
        assert!(!shown.contains(hidden), "{hidden} shown: {shown}");
    }
    let patched = node.patch_json(
        &format!("/api/alerts/destinations/{}", hook["id"].as_str().unwrap()),
        r#"{"name": "Door hook"}"#,
    );
    assert_eq!(patched.status, 200, "{patched}");
    assert!(patched.json()["secret"].is_null(), "shown once: {patched}");

    // Both take a test at once, through the token and the signature.
    for destination in [&ntfy, &hook] {
        let id = destination["id"].as_str().unwrap();
        let test = node.post(&format!("/api/alerts/destinations/{id}/test"));
        assert_eq!(
            test.json()["delivered"],
            true,
            "{test}\n{}",
            receivers.log()
        );
    }
    assert_eq!(receivers.ntfy_messages("door_secret_topic").len(), 1);
    let hooks = receivers.hooks();
    assert_eq!(hooks[0]["signatureOk"], true, "{hooks:?}");
    assert_eq!(hooks[0]["body"]["type"], "test");
    assert!(!node.logs().contains(&secret), "the secret in the log");
    assert!(
        !node.logs().contains("door_secret_topic"),
        "the topic in the log"
    );

    // A wrong token says so, naming the host alone.
    let wrong = node.patch_json(
        &format!("/api/alerts/destinations/{}", ntfy["id"].as_str().unwrap()),
        r#"{"token": "tk_wrong"}"#,
    );
    assert_eq!(wrong.status, 200);
    let test = node.post(&format!(
        "/api/alerts/destinations/{}/test",
        ntfy["id"].as_str().unwrap()
    ));
    assert_eq!(
        test.json(),
        json!({"delivered": false, "message": format!(
            "{} refused the node (403): check the access token or the key", lan.address)})
    );
}
