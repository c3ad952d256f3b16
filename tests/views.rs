//! The UI's views (`tests/e2e/views.mjs`): each at its own address, with
//! back, forward and reload, the old links, the header's height and the tab
//! bar's place on a phone and a laptop; and the node stopped and started
//! again under the page. When the script prints `stop-node`, this test
//! stops the node and answers `stopped`; on `start-node` it starts it again
//! on the same port and data and answers `started`.

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use crate::common::{self, Camera, Node, TempDir};
use serde_json::json;

#[test]
fn each_view_has_its_address_and_the_page_says_when_the_node_is_gone() {
    let camera = Camera::start();
    let dir = TempDir::new("views");
    let missing = common::classifier::missing(dir.path());
    let mut env: Vec<(&str, &str)> = missing.iter().map(|(k, v)| (*k, v.as_str())).collect();
    env.push(("CAMERA_CHECK_INTERVAL", "1s"));
    let relay = format!("http://127.0.0.1:{}", common::closed_port());
    let mut node = Some(Node::start(dir.path(), &relay, &env));
    let first = node.as_ref().unwrap();
    let id = first.add_camera(json!({
        "name": "Porch", "rtspUrl": camera.url("", "/main"), "detect": false, "record": false,
    }))["id"]
        .as_str()
        .unwrap()
        .to_owned();
    let event = first.post_json(
        "/api/events",
        &json!({"cameraId": id, "kind": "person", "score": 0.9,
            "startedAt": common::iso(common::now_ms() - 5000), "endedAt": common::iso(common::now_ms() - 2000)})
        .to_string(),
    );
    assert_eq!(event.status, 201, "{event}");
    let event = event.json()["id"].as_str().unwrap().to_owned();
    let port = first.port.to_string();
    let url = first.url();
    let screenshots = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/screenshots");
    std::fs::create_dir_all(&screenshots).unwrap();

    let mut command = Command::new("node");
    command
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/e2e/views.mjs"))
        .args(["--url", &url, "--camera", &id, "--event", &event])
        .arg("--screenshots")
        .arg(&screenshots);
    let description = format!("{command:?}");
    let mut child = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run node (Node.js, for playwright-core): {e}"));
    let mut answers = child.stdin.take().unwrap();
    let mut output = String::new();
    for line in BufReader::new(child.stdout.take().unwrap())
        .lines()
        .map_while(Result::ok)
    {
        let answer = match line.as_str() {
            "stop-node" => {
                if let Some(running) = node.take() {
                    output.push_str(&running.logs());
                    running.kill();
                }
                "stopped\n"
            }
            "start-node" => {
                let mut again = env.clone();
                again.push(("PORT", &port));
                node = Some(Node::start(dir.path(), &relay, &again));
                "started\n"
            }
            _ => "",
        };
        if !answer.is_empty() {
            let _ = answers.write_all(answer.as_bytes());
        }
        output.push_str(&line);
        output.push('\n');
    }
    let status = child.wait().unwrap();
    let verdict = common::verdict_in(&output);
    assert!(
        status.success() && verdict["ok"] == true,
        "command: {description}\nstatus: {status}\nstdout:\n{output}"
    );
    eprintln!("{verdict}");
}
