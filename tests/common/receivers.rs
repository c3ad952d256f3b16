//! The far ends of alerts, on a test LAN (`lan.rs`): the webhook receiver
//! and ntfy stand-in of `tests/alerts/receivers.py`, and web-push-testing
//! (npm 1.2.2), an independent push service emulator that checks each
//! push's VAPID token and decrypts its `aes128gcm` payload.

use serde_json::{Value, json};
use std::path::Path;

use super::http::{Response, request_at};
use super::lan::Lan;
use super::{ReadyServer, SYSTEM_PYTHON};

/// `tests/alerts/receivers.py` on `lan`.
pub struct Receivers {
    server: ReadyServer,
    pub host: String,
    pub port: u16,
}

impl Receivers {
    /// Listening on `port` (0: any), taking ntfy publishes with `token` if given.
    pub fn start(lan: &Lan, port: u16, token: Option<&str>) -> Receivers {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/alerts/receivers.py");
        let mut command = lan.command(SYSTEM_PYTHON);
        command
            .arg(script)
            .args(["--address", &lan.address, "--port", &port.to_string()]);
        if let Some(token) = token {
            command.args(["--token", token]);
        }
        let server = ReadyServer::start(command, "ready ", "Debian's python3");
        let port = server.port;
        Receivers {
            server,
            host: lan.address.clone(),
            port,
        }
    }

    fn call(&self, method: &str, path: &str, body: &[u8]) -> Response {
        request_at(&self.host, self.port, method, path, &[], body)
    }

    /// `http://HOST:PORT`.
    pub fn url(&self) -> String {
        format!("http://{}:{}", self.host, self.port)
    }

    /// The webhook's secret, as the node showed it.
    pub fn set_secret(&self, secret: &str) {
        assert_eq!(self.call("PUT", "/_secret", secret.as_bytes()).status, 200);
    }

    /// The webhook deliveries so far.
    pub fn hooks(&self) -> Vec<Value> {
        let answer = self.call("GET", "/_hooks", b"").json();
        answer.as_array().cloned().unwrap_or_default()
    }

    /// The messages of an ntfy topic, by ntfy's subscribe API.
    pub fn ntfy_messages(&self, topic: &str) -> Vec<Value> {
        let answer = self.call("GET", &format!("/{topic}/json?poll=1"), b"");
        assert_eq!(answer.status, 200, "{answer}");
        answer
            .text()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect()
    }

    pub fn log(&self) -> String {
        self.server.stderr.lock().unwrap().clone()
    }
}

/// web-push-testing, from tests/e2e's npm packages, on `lan`.
pub struct PushService {
    server: ReadyServer,
    host: String,
}

/// The port it serves on in its namespace (it prints the port it was given,
/// not the one it got, so not 0; the namespace has nothing else).
const PUSH_PORT: u16 = 8090;

impl PushService {
    pub fn start(lan: &Lan) -> PushService {
        let script = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/e2e/node_modules/web-push-testing/src/bin/server.js");
        assert!(
            script.is_file(),
            "{} is missing: `npm ci` in tests/e2e (tests/run.sh) installs web-push-testing",
            script.display()
        );
        let mut command = lan.command("node");
        command.arg(script).arg(PUSH_PORT.to_string());
        let server = ReadyServer::start(
            command,
            "Server running on port ",
            "Node.js and tests/e2e's npm packages",
        );
        PushService {
            server,
            host: lan.address.clone(),
        }
    }

    fn call(&self, path: &str, body: Value) -> Response {
        request_at(
            &self.host,
            PUSH_PORT,
            "POST",
            path,
            &[("Content-Type", "application/json")],
            body.to_string().as_bytes(),
        )
    }

    /// A subscription for the node's VAPID key, as a browser's
    /// `PushSubscription.toJSON()`, and its client hash. Its endpoint names
    /// `localhost`, where the emulator thinks it is: the host is put right.
    pub fn subscribe(&self, application_server_key: &str) -> (Value, String) {
        let answer = self.call(
            "/subscribe",
            json!({"applicationServerKey": application_server_key, "userVisibleOnly": "true"}),
        );
        assert_eq!(answer.status, 200, "{answer}");
        let data = answer.json()["data"].clone();
        let endpoint = data["endpoint"]
            .as_str()
            .unwrap()
            .replace("localhost", &self.host);
        let subscription = json!({"endpoint": endpoint, "keys": data["keys"]});
        (
            subscription,
            data["clientHash"].as_str().unwrap().to_owned(),
        )
    }

    /// The messages it decrypted for a subscription, parsed.
    pub fn messages(&self, client: &str) -> Vec<Value> {
        let answer = self.call("/get-notifications", json!({"clientHash": client}));
        assert_eq!(answer.status, 200, "{answer}");
        answer.json()["data"]["messages"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| serde_json::from_str(m.as_str().unwrap()).unwrap())
            .collect()
    }

    /// The browser left: pushes to the subscription are answered 410.
    pub fn expire(&self, client: &str) {
        let answer = self.call(&format!("/expire-subscription/{client}"), json!({}));
        assert_eq!(answer.status, 200, "{answer}");
    }
}

impl Drop for Receivers {
    fn drop(&mut self) {
        let _ = self.server.child.kill();
        let _ = self.server.child.wait();
    }
}

impl Drop for PushService {
    fn drop(&mut self) {
        let _ = self.server.child.kill();
        let _ = self.server.child.wait();
    }
}
