//! A stand-in for the cloud service, run in the test process (tiny_http), that
//! speaks the node's side of the protocol in `deploy/cloud-protocol.md` and is
//! scripted by each test: claim a node, let codes expire, ask for slow-down,
//! go down (503), remove a node, delay answers. It records every request.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tiny_http::{Header, Response, Server};

#[derive(Clone, Debug)]
pub struct CloudRequest {
    pub method: String,
    pub path: String,
    pub authorization: Option<String>,
    pub body: Vec<u8>,
    pub at: Instant,
}

#[derive(Clone, Debug)]
pub struct RemoteNode {
    pub secret: String,
    pub name: String,
    pub claimed: bool,
    pub code: String,
    pub code_expires: Instant,
}

#[derive(Default)]
struct Script {
    nodes: HashMap<String, RemoteNode>,
    received: Vec<CloudRequest>,
    down: bool,
    code_lifetime: Option<Duration>,
    slow_downs_left: u32,
    delay: Duration,
    clips: HashMap<String, Vec<u8>>,
    heartbeats: Vec<Value>,
}

pub struct Cloud {
    server: Arc<Server>,
    script: Arc<Mutex<Script>>,
    pub port: u16,
}

/// Claim codes as a real service would make them: 8 of 31 unambiguous characters.
fn new_code() -> String {
    const ALPHABET: &[u8] = b"23456789ABCDEFGHJKMNPQRSTUVWXYZ";
    let random = uuid::Uuid::new_v4().as_u128();
    (0..8)
        .map(|i| ALPHABET[((random >> (i * 8)) % 31) as usize] as char)
        .collect()
}

impl Cloud {
    pub fn start() -> Cloud {
        let server = Arc::new(Server::http("127.0.0.1:0").expect("cloud stand-in binds"));
        let port = server.server_addr().to_ip().unwrap().port();
        let script = Arc::new(Mutex::new(Script::default()));
        let (accepting, shared) = (server.clone(), script.clone());
        thread::spawn(move || {
            for request in accepting.incoming_requests() {
                let script = shared.clone();
                thread::spawn(move || handle(request, &script));
            }
        });
        Cloud {
            server,
            script,
            port,
        }
    }

    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    pub fn nodes(&self) -> HashMap<String, RemoteNode> {
        self.script.lock().unwrap().nodes.clone()
    }

    pub fn received(&self) -> Vec<CloudRequest> {
        self.script.lock().unwrap().received.clone()
    }

    /// A person types the node's claim code into the cloud app.
    pub fn claim(&self, node_id: &str) {
        self.script
            .lock()
            .unwrap()
            .nodes
            .get_mut(node_id)
            .expect("a registered node")
            .claimed = true;
    }

    /// The node is removed from its account.
    pub fn remove(&self, node_id: &str) {
        self.script.lock().unwrap().nodes.remove(node_id);
    }

    pub fn set_down(&self, down: bool) {
        self.script.lock().unwrap().down = down;
    }

    pub fn set_code_lifetime(&self, lifetime: Duration) {
        self.script.lock().unwrap().code_lifetime = Some(lifetime);
    }

    pub fn slow_down(&self, times: u32) {
        self.script.lock().unwrap().slow_downs_left = times;
    }

    /// Every answer waits this long first.
    pub fn set_delay(&self, delay: Duration) {
        self.script.lock().unwrap().delay = delay;
    }

    pub fn clip(&self, event_id: &str) -> Option<Vec<u8>> {
        self.script.lock().unwrap().clips.get(event_id).cloned()
    }

    pub fn heartbeats(&self) -> Vec<Value> {
        self.script.lock().unwrap().heartbeats.clone()
    }
}

impl Drop for Cloud {
    fn drop(&mut self) {
        self.server.unblock();
    }
}

fn handle(mut request: tiny_http::Request, script: &Mutex<Script>) {
    let mut body = Vec::new();
    let _ = request.as_reader().read_to_end(&mut body);
    let received = CloudRequest {
        method: request.method().as_str().to_owned(),
        path: request.url().to_owned(),
        authorization: request
            .headers()
            .iter()
            .find(|h| h.field.equiv("Authorization"))
            .map(|h| h.value.as_str().to_owned()),
        body,
        at: Instant::now(),
    };
    let delay = script.lock().unwrap().delay;
    thread::sleep(delay);
    let (status, answer) = answer(&received, &mut script.lock().unwrap());
    script.lock().unwrap().received.push(received);
    let json = Header::from_bytes("Content-Type", "application/json").unwrap();
    let _ = request.respond(
        Response::from_string(answer.to_string())
            .with_status_code(status)
            .with_header(json),
    );
}

fn answer(r: &CloudRequest, script: &mut Script) -> (u16, Value) {
    if script.down {
        return (503, json!({ "error": "temporarily_unavailable" }));
    }
    let lifetime = script.code_lifetime.unwrap_or(Duration::from_secs(600));
    let segments: Vec<&str> = r.path.trim_start_matches('/').split('/').collect();
    if r.method == "POST" && segments == ["v1", "nodes"] {
        let request: Value = serde_json::from_slice(&r.body).unwrap_or_default();
        let (id, secret, code) = (
            uuid::Uuid::new_v4().to_string(),
            format!("sekrit-{}-{}", super::SECRET_MARKER, uuid::Uuid::new_v4()),
            new_code(),
        );
        let node = RemoteNode {
            secret: secret.clone(),
            name: request["name"].as_str().unwrap_or_default().to_owned(),
            claimed: false,
            code: code.clone(),
            code_expires: Instant::now() + lifetime,
        };
        script.nodes.insert(id.clone(), node);
        let answer = json!({ "nodeId": id, "nodeSecret": secret, "claimCode": code, "expiresIn": lifetime.as_secs(), "interval": 1 });
        return (201, answer);
    }
    let ["v1", "nodes", id, rest @ ..] = segments.as_slice() else {
        return (404, json!({ "error": "not_found" }));
    };
    let Some(node) = script.nodes.get_mut(*id) else {
        return (404, json!({ "error": "unknown_node" }));
    };
    if r.authorization.as_deref() != Some(&format!("Bearer {}", node.secret)) {
        return (401, json!({ "error": "invalid_client" }));
    }
    match (r.method.as_str(), rest) {
        ("POST", ["claim-code"]) => {
            node.code = new_code();
            node.code_expires = Instant::now() + lifetime;
            (
                200,
                json!({ "claimCode": node.code, "expiresIn": lifetime.as_secs(), "interval": 1 }),
            )
        }
        ("POST", ["claim"]) => {
            if node.claimed {
                (200, json!({ "status": "claimed" }))
            } else if Instant::now() >= node.code_expires {
                (400, json!({ "error": "expired_token" }))
            } else if script.slow_downs_left > 0 {
                script.slow_downs_left -= 1;
                (400, json!({ "error": "slow_down" }))
            } else {
                (400, json!({ "error": "authorization_pending" }))
            }
        }
        ("POST", ["heartbeat"]) if node.claimed => {
            script
                .heartbeats
                .push(serde_json::from_slice(&r.body).unwrap_or_default());
            (200, json!({ "interval": 1 }))
        }
        ("PUT", ["clips", event]) if node.claimed => {
            script.clips.insert((*event).to_owned(), r.body.clone());
            (201, json!({}))
        }
        _ => (403, json!({ "error": "not_claimed" })),
    }
}
