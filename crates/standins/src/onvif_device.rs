//! An ONVIF device service standing in for a camera that wants a password:
//! HTTP/1.1 on a std TcpListener (one thread, one request per connection)
//! answering GetDeviceInformation, GetCapabilities, GetProfiles,
//! GetStreamUri (and GetSystemDateAndTime, without a password, as cameras
//! do) in the shapes go2rtc's server.go writes, each profile saying
//! 1920x1080 H264 as go2rtc's do whatever the stream is.
//!
//! [`Auth::UsernameToken`]: every other call must carry a WS-Security
//! UsernameToken PasswordDigest, checked against a digest computed here with
//! the `base64` and `sha1sum` programs (coreutils), apart from the node's
//! code: base64(SHA-1(nonce ++ created ++ password)). A wrong or missing one
//! gets HTTP 401 with the SOAP fault ter:NotAuthorized and no
//! WWW-Authenticate. [`Auth::HttpDigest`]: each call must carry an HTTP
//! Digest Authorization (MD5, qop=auth) checked with `md5sum`; else 401 with
//! `WWW-Authenticate: Digest realm=…, nonce=…, qop="auth"`. [`Auth::Garbage`]:
//! HTTP 200 with a body that is not XML. [`Auth::Open`]: answers every call,
//! with credentials or without, as go2rtc's server does (a box that passes
//! itself off as a camera, to tell whether the node signs its calls).
//!
//! It records each call (operation, whether it was let in) so tests can tell
//! what the node sent.
//!
//! Its Event service follows the ONVIF Event WSDL (event.wsdl, and
//! WS-BaseNotification for Renew and Unsubscribe): GetCapabilities and
//! GetServices list it; CreatePullPointSubscription makes a pull point at
//! its own address (`/onvif/subscription/N`), granted at most
//! [`Device::grant_at_most`]'s time (60 s unless told); PullMessages waits
//! up to its Timeout for a message and answers the queued ones (or none)
//! with CurrentTime and TerminationTime; Renew and Unsubscribe; a
//! subscription not renewed in time ends, and a call to one that ended gets
//! the fault wsrf-rw:ResourceUnknownFault. A new subscription first gets the
//! motion state as it is (PropertyOperation Initialized), as cameras send
//! it. The tests say motion with [`Device::motion`] (topic
//! tns1:RuleEngine/CellMotionDetector/Motion, IsMotion) or [`Device::say`],
//! and [`Device::restart`] forgets every subscription, as a camera that
//! rebooted. Each connection is served on a thread of its own, so a pull
//! that waits holds no other call.

use std::collections::{HashMap, VecDeque};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant, SystemTime};

use crate::xml;

const SOAP: &str = "http://www.w3.org/2003/05/soap-envelope";
const WSSE: &str =
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd";
const WSU: &str =
    "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd";
const DIGEST_TYPE: &str = "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0#PasswordDigest";
const REALM: &str = "IP Camera(nvr-test)";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Auth {
    UsernameToken,
    HttpDigest,
    Garbage,
    Open,
}

/// A call the device got: its operation (the Body's first element's local
/// name, "" if unreadable), whether it was let in, and whether it carried
/// credentials of any kind (a UsernameToken or an Authorization header).
#[derive(Clone, Debug)]
pub struct Call {
    pub operation: String,
    pub allowed: bool,
    pub credentials: bool,
}

/// How the device describes itself, besides its profiles.
#[derive(Clone, Debug, Default)]
pub struct Says {
    /// Its SerialNumber; by default the request's Host, as go2rtc's.
    pub serial: Option<String>,
    /// The host[:port] its Media XAddr names; by default the request's Host.
    pub media_host: Option<String>,
    /// The host[:port] its Events XAddr and its subscriptions' addresses
    /// name; by default the request's Host.
    pub events_host: Option<String>,
}

pub struct Device {
    pub port: u16,
    host: String,
    calls: Arc<Mutex<Vec<Call>>>,
    stop: Arc<AtomicBool>,
    events: Arc<Events>,
}

/// The Event service's state, and a condition its pulls wait on.
#[derive(Default)]
struct Events {
    state: Mutex<EventState>,
    changed: Condvar,
}

/// A message queued: topic, its item's name and value, when it was said,
/// and whether it is a subscription's first (Initialized).
type Message = (String, String, bool, SystemTime, bool);

#[derive(Default)]
struct EventState {
    subscriptions: HashMap<u32, Subscription>,
    next: u32,
    /// The longest a subscription is granted; None: 60 s.
    grant_at_most: Option<Duration>,
    /// Each topic's state (topic, item, value), for a new subscription.
    current: Vec<(String, String, bool)>,
}

struct Subscription {
    queue: VecDeque<Message>,
    ends: Instant,
}

/// The motion topic most cameras send, and its item.
pub const CELL_MOTION: (&str, &str) = ("tns1:RuleEngine/CellMotionDetector/Motion", "IsMotion");

struct Setup {
    auth: Auth,
    username: String,
    password: String,
    /// (token, stream URI) of each profile.
    profiles: Vec<(String, String)>,
    nonce: String,
    says: Says,
}

impl Device {
    /// Serves on `host`:free port; `profiles` are (token, RTSP URI).
    pub fn start(
        host: &str,
        auth: Auth,
        username: &str,
        password: &str,
        profiles: &[(&str, &str)],
    ) -> Device {
        Device::start_saying(host, auth, username, password, profiles, Says::default())
    }

    /// As [`Device::start`], describing itself as `says` says.
    pub fn start_saying(
        host: &str,
        auth: Auth,
        username: &str,
        password: &str,
        profiles: &[(&str, &str)],
        says: Says,
    ) -> Device {
        let listener = TcpListener::bind((host, 0)).unwrap();
        listener.set_nonblocking(true).unwrap();
        let setup = Arc::new(Setup {
            auth,
            username: username.to_owned(),
            password: password.to_owned(),
            profiles: (profiles.iter())
                .map(|(t, u)| (t.to_string(), u.to_string()))
                .collect(),
            nonce: uuid::Uuid::new_v4().simple().to_string(),
            says,
        });
        let device = Device {
            port: listener.local_addr().unwrap().port(),
            host: host.to_owned(),
            calls: Arc::default(),
            stop: Arc::default(),
            events: Arc::default(),
        };
        let (calls, stop, events) = (
            device.calls.clone(),
            device.stop.clone(),
            device.events.clone(),
        );
        thread::spawn(move || {
            while !stop.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((stream, _)) => {
                        let (setup, calls, events) = (setup.clone(), calls.clone(), events.clone());
                        thread::spawn(move || serve(stream, &setup, &calls, &events));
                    }
                    Err(_) => thread::sleep(Duration::from_millis(10)),
                }
            }
        });
        device
    }

    /// The camera says `moving` on the motion topic most cameras send; the
    /// moment its message carries (UtcTime).
    pub fn motion(&self, moving: bool) -> SystemTime {
        self.say(CELL_MOTION.0, CELL_MOTION.1, moving)
    }

    /// The camera says `value` for `item` of `topic` (a motion topic's
    /// state), to every subscription; the moment its message carries.
    pub fn say(&self, topic: &str, item: &str, value: bool) -> SystemTime {
        let mut state = self.events.state.lock().unwrap();
        state.current.retain(|(t, _, _)| t != topic);
        state
            .current
            .push((topic.to_owned(), item.to_owned(), value));
        let now = SystemTime::now();
        for subscription in state.subscriptions.values_mut() {
            let message = (topic.to_owned(), item.to_owned(), value, now, false);
            subscription.queue.push_back(message);
        }
        self.events.changed.notify_all();
        now
    }

    /// Subscriptions are granted at most `life`.
    pub fn grant_at_most(&self, life: Duration) {
        self.events.state.lock().unwrap().grant_at_most = Some(life);
    }

    /// The device rebooted: it knows no subscription.
    pub fn restart(&self) {
        self.events.state.lock().unwrap().subscriptions.clear();
        self.events.changed.notify_all();
    }

    /// How many subscriptions it holds.
    pub fn subscriptions(&self) -> usize {
        let mut state = self.events.state.lock().unwrap();
        let now = Instant::now();
        state.subscriptions.retain(|_, s| s.ends > now);
        state.subscriptions.len()
    }

    /// How many calls of `operation` were let in.
    pub fn allowed(&self, operation: &str) -> usize {
        let calls = self.calls.lock().unwrap();
        (calls.iter())
            .filter(|c| c.allowed && c.operation == operation)
            .count()
    }

    /// The device service's address, as discovery gives it.
    pub fn address(&self) -> String {
        format!("http://{}:{}/onvif/device_service", self.host, self.port)
    }

    pub fn calls(&self) -> Vec<Call> {
        self.calls.lock().unwrap().clone()
    }
}

impl Drop for Device {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// Reads one request, answers it and closes the connection.
fn serve(stream: TcpStream, setup: &Setup, calls: &Mutex<Vec<Call>>, events: &Events) {
    stream.set_nonblocking(false).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut reader = BufReader::new(stream);
    let mut request_line = String::new();
    if reader.read_line(&mut request_line).is_err() {
        return;
    }
    let mut headers = Vec::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap_or(0) == 0 || line.trim().is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            headers.push((k.trim().to_ascii_lowercase(), v.trim().to_owned()));
        }
    }
    let header = |name: &str| {
        (headers.iter())
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.clone())
    };
    let length = header("content-length").and_then(|n| n.parse().ok());
    let mut body = vec![0u8; length.unwrap_or(0)];
    if reader.read_exact(&mut body).is_err() {
        return;
    }
    let body = String::from_utf8_lossy(&body).into_owned();
    let mut parts = request_line.split_whitespace();
    let (method, uri) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let host = header("host").unwrap_or_default();

    let envelope = xml::parse(&body).ok();
    let operation = (envelope.as_ref())
        .and_then(|e| e.child(SOAP, "Body"))
        .and_then(|b| b.children.first())
        .map(|o| o.name.clone())
        .unwrap_or_default();
    let open = operation == "GetSystemDateAndTime";
    let allowed = open
        || match setup.auth {
            Auth::UsernameToken => envelope.as_ref().is_some_and(|e| token_is_right(e, setup)),
            Auth::HttpDigest => (header("authorization"))
                .is_some_and(|a| http_digest_is_right(&a, method, uri, setup)),
            Auth::Garbage | Auth::Open => true,
        };
    let token = (envelope.as_ref())
        .and_then(|e| e.child(SOAP, "Header"))
        .and_then(|h| h.child(WSSE, "Security"))
        .is_some();
    calls.lock().unwrap().push(Call {
        operation: operation.clone(),
        allowed,
        credentials: token || header("authorization").is_some(),
    });
    let (status, extra, content) = if setup.auth == Auth::Garbage {
        (
            "200 OK",
            String::new(),
            "<html><body>Welcome to the camera".to_owned(),
        )
    } else if !allowed {
        let challenge = match setup.auth {
            Auth::HttpDigest => format!(
                "WWW-Authenticate: Digest realm=\"{REALM}\", nonce=\"{}\", qop=\"auth\", algorithm=MD5\r\n",
                setup.nonce
            ),
            _ => String::new(),
        };
        ("401 Unauthorized", challenge, not_authorized())
    } else if let Some(answer) =
        event_answer(&operation, envelope.as_ref(), uri, &host, events, setup)
    {
        match answer {
            Ok(content) => ("200 OK", String::new(), content),
            Err(fault) => ("400 Bad Request", String::new(), fault),
        }
    } else {
        match answer(&operation, envelope.as_ref(), &host, setup) {
            Some(content) => ("200 OK", String::new(), content),
            None => ("400 Bad Request", String::new(), String::new()),
        }
    };
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/soap+xml; charset=utf-8\r\n{extra}\
         Content-Length: {}\r\nConnection: close\r\n\r\n{content}",
        content.len()
    );
    let _ = reader.get_mut().write_all(response.as_bytes());
}

/// Whether the envelope's UsernameToken is the user's with the right digest.
fn token_is_right(envelope: &xml::Element, setup: &Setup) -> bool {
    let Some(token) = (envelope.child(SOAP, "Header"))
        .and_then(|h| h.child(WSSE, "Security"))
        .and_then(|s| s.child(WSSE, "UsernameToken"))
    else {
        return false;
    };
    let text = |ns: &str, name: &str| token.child(ns, name).map(|e| e.text.trim().to_owned());
    let (Some(username), Some(digest), Some(nonce), Some(created)) = (
        text(WSSE, "Username"),
        text(WSSE, "Password"),
        text(WSSE, "Nonce"),
        text(WSU, "Created"),
    ) else {
        return false;
    };
    let password = token.child(WSSE, "Password").unwrap();
    if password.attribute("Type") != Some(DIGEST_TYPE) || username != setup.username {
        return false;
    }
    let mut input = run("base64", &["-d"], nonce.as_bytes());
    input.extend_from_slice(created.as_bytes());
    input.extend_from_slice(setup.password.as_bytes());
    let sha1 = hex_bytes(&run("sha1sum", &[], &input));
    let expected = run("base64", &["-w0"], &sha1);
    digest.as_bytes() == expected.as_slice()
}

/// Whether an `Authorization: Digest …` header answers this device's
/// challenge with the user's password (RFC 2617, qop=auth).
fn http_digest_is_right(authorization: &str, method: &str, uri: &str, setup: &Setup) -> bool {
    let Some(fields) = authorization.strip_prefix("Digest ") else {
        return false;
    };
    let mut field = std::collections::HashMap::new();
    for part in split_fields(fields) {
        if let Some((k, v)) = part.split_once('=') {
            field.insert(k.trim().to_owned(), v.trim().trim_matches('"').to_owned());
        }
    }
    let get = |k: &str| field.get(k).cloned().unwrap_or_default();
    if get("username") != setup.username
        || get("realm") != REALM
        || get("nonce") != setup.nonce
        || get("qop") != "auth"
        || get("uri") != uri
    {
        return false;
    }
    let md5 = |text: String| {
        String::from_utf8(run("md5sum", &[], text.as_bytes())).unwrap()[..32].to_owned()
    };
    let ha1 = md5(format!("{}:{REALM}:{}", setup.username, setup.password));
    let ha2 = md5(format!("{method}:{uri}"));
    let expected = md5(format!(
        "{ha1}:{}:{}:{}:auth:{ha2}",
        setup.nonce,
        get("nc"),
        get("cnonce")
    ));
    get("response") == expected
}

/// Splits `a="x, y", b=z` at the commas outside quotes.
fn split_fields(text: &str) -> Vec<String> {
    let (mut parts, mut current, mut quoted) = (Vec::new(), String::new(), false);
    for c in text.chars() {
        match c {
            '"' => {
                quoted = !quoted;
                current.push(c);
            }
            ',' if !quoted => parts.push(std::mem::take(&mut current)),
            _ => current.push(c),
        }
    }
    parts.push(current);
    parts
}

/// Runs a coreutils program on `input`; its stdout.
fn run(program: &str, args: &[&str], input: &[u8]) -> Vec<u8> {
    let mut child = Command::new(program)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("cannot run {program} (coreutils) for the ONVIF stand-in: {e}"));
    child.stdin.take().unwrap().write_all(input).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "{program} {args:?}: {}",
        output.status
    );
    output.stdout
}

/// The bytes of `sha1sum`'s hex digest.
fn hex_bytes(line: &[u8]) -> Vec<u8> {
    let hex = String::from_utf8_lossy(line);
    let hex = hex.split_whitespace().next().unwrap_or_default();
    (0..hex.len() / 2)
        .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
        .collect()
}

const PREFIX: &str = r#"<?xml version="1.0" encoding="utf-8"?><s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:tt="http://www.onvif.org/ver10/schema" xmlns:tds="http://www.onvif.org/ver10/device/wsdl" xmlns:trt="http://www.onvif.org/ver10/media/wsdl" xmlns:tev="http://www.onvif.org/ver10/events/wsdl" xmlns:wsnt="http://docs.oasis-open.org/wsn/b-2" xmlns:wsa="http://www.w3.org/2005/08/addressing" xmlns:tns1="http://www.onvif.org/ver10/topics"><s:Body>"#;
const SUFFIX: &str = "</s:Body></s:Envelope>";

fn not_authorized() -> String {
    format!(
        r#"<?xml version="1.0" encoding="utf-8"?><s:Envelope xmlns:s="{SOAP}" xmlns:ter="http://www.onvif.org/ver10/error"><s:Body><s:Fault><s:Code><s:Value>s:Sender</s:Value><s:Subcode><s:Value>ter:NotAuthorized</s:Value></s:Subcode></s:Code><s:Reason><s:Text xml:lang="en">Sender not Authorized</s:Text></s:Reason></s:Fault></s:Body></s:Envelope>"#
    )
}

/// go2rtc's answer to `operation`, or None for one it does not know.
fn answer(
    operation: &str,
    envelope: Option<&xml::Element>,
    host: &str,
    setup: &Setup,
) -> Option<String> {
    let media = setup.says.media_host.as_deref().unwrap_or(host);
    let events = setup.says.events_host.as_deref().unwrap_or(host);
    let body = match operation {
        "GetSystemDateAndTime" => "<tds:GetSystemDateAndTimeResponse><tds:SystemDateAndTime><tt:DateTimeType>NTP</tt:DateTimeType></tds:SystemDateAndTime></tds:GetSystemDateAndTimeResponse>".to_owned(),
        "GetDeviceInformation" => format!(
            "<tds:GetDeviceInformationResponse><tds:Manufacturer>Acme</tds:Manufacturer>\
             <tds:Model>X1</tds:Model><tds:FirmwareVersion>1.2.3</tds:FirmwareVersion>\
             <tds:SerialNumber>{}</tds:SerialNumber><tds:HardwareId>1.00</tds:HardwareId>\
             </tds:GetDeviceInformationResponse>",
            setup.says.serial.as_deref().unwrap_or(host)
        ),
        "GetCapabilities" => format!(
            "<tds:GetCapabilitiesResponse><tds:Capabilities>\
             <tt:Device><tt:XAddr>http://{host}/onvif/device_service</tt:XAddr></tt:Device>\
             <tt:Events><tt:XAddr>http://{events}/onvif/events_service</tt:XAddr>\
             <tt:WSSubscriptionPolicySupport>false</tt:WSSubscriptionPolicySupport>\
             <tt:WSPullPointSupport>true</tt:WSPullPointSupport>\
             <tt:WSPausableSubscriptionManagerInterfaceSupport>false</tt:WSPausableSubscriptionManagerInterfaceSupport>\
             </tt:Events>\
             <tt:Media><tt:XAddr>http://{media}/onvif/media_service</tt:XAddr>\
             <tt:StreamingCapabilities><tt:RTPMulticast>false</tt:RTPMulticast><tt:RTP_TCP>false</tt:RTP_TCP>\
             <tt:RTP_RTSP_TCP>true</tt:RTP_RTSP_TCP></tt:StreamingCapabilities></tt:Media>\
             </tds:Capabilities></tds:GetCapabilitiesResponse>"
        ),
        "GetServices" => {
            let mut services = String::from("<tds:GetServicesResponse>");
            for (namespace, path) in [
                ("http://www.onvif.org/ver10/device/wsdl", "device_service"),
                ("http://www.onvif.org/ver10/media/wsdl", "media_service"),
                ("http://www.onvif.org/ver10/events/wsdl", "events_service"),
            ] {
                let host = match path {
                    "media_service" => media,
                    "events_service" => events,
                    _ => host,
                };
                services.push_str(&format!(
                    "<tds:Service><tds:Namespace>{namespace}</tds:Namespace>\
                     <tds:XAddr>http://{host}/onvif/{path}</tds:XAddr>\
                     <tds:Version><tt:Major>2</tt:Major><tt:Minor>60</tt:Minor></tds:Version></tds:Service>"
                ));
            }
            services + "</tds:GetServicesResponse>"
        }
        "GetProfiles" => {
            let mut profiles = String::from("<trt:GetProfilesResponse>");
            for (token, _) in &setup.profiles {
                profiles.push_str(&format!(
                    r#"<trt:Profiles token="{token}" fixed="true"><tt:Name>{token}</tt:Name><tt:VideoSourceConfiguration token="{token}" fixed="true"><tt:Name>VSC</tt:Name><tt:SourceToken>{token}</tt:SourceToken><tt:Bounds x="0" y="0" width="1920" height="1080"></tt:Bounds></tt:VideoSourceConfiguration><tt:VideoEncoderConfiguration token="vec"><tt:Name>VEC</tt:Name><tt:UseCount>1</tt:UseCount><tt:Encoding>H264</tt:Encoding><tt:Resolution><tt:Width>1920</tt:Width><tt:Height>1080</tt:Height></tt:Resolution><tt:Quality>0</tt:Quality><tt:RateControl><tt:FrameRateLimit>30</tt:FrameRateLimit><tt:EncodingInterval>1</tt:EncodingInterval><tt:BitrateLimit>8192</tt:BitrateLimit></tt:RateControl><tt:H264><tt:GovLength>10</tt:GovLength><tt:H264Profile>Main</tt:H264Profile></tt:H264><tt:SessionTimeout>PT10S</tt:SessionTimeout></tt:VideoEncoderConfiguration></trt:Profiles>"#
                ));
            }
            profiles + "</trt:GetProfilesResponse>"
        }
        "GetStreamUri" => {
            let token = envelope?.find("http://www.onvif.org/ver10/media/wsdl", "ProfileToken")?;
            let (_, uri) = setup.profiles.iter().find(|(t, _)| *t == token.text.trim())?;
            format!(
                "<trt:GetStreamUriResponse><trt:MediaUri><tt:Uri>{}</tt:Uri></trt:MediaUri></trt:GetStreamUriResponse>",
                xml::escape(uri)
            )
        }
        _ => return None,
    };
    Some(format!("{PREFIX}{body}{SUFFIX}"))
}

const TEV: &str = "http://www.onvif.org/ver10/events/wsdl";
const WSNT: &str = "http://docs.oasis-open.org/wsn/b-2";

/// The Event service's answer to `operation` at `uri`: Ok, or Err with a
/// fault; None for an operation of another service.
fn event_answer(
    operation: &str,
    envelope: Option<&xml::Element>,
    uri: &str,
    host: &str,
    events: &Events,
    setup: &Setup,
) -> Option<Result<String, String>> {
    let host = setup.says.events_host.as_deref().unwrap_or(host);
    let asked = |ns: &str, name: &str| (envelope?.find(ns, name)).map(|e| e.text.trim().to_owned());
    let id = (uri.strip_prefix("/onvif/subscription/")).and_then(|n| n.parse::<u32>().ok());
    let mut state = events.state.lock().unwrap();
    let now = Instant::now();
    state.subscriptions.retain(|_, s| s.ends > now);
    let most = state.grant_at_most.unwrap_or(Duration::from_secs(60));
    let grant = |text: Option<String>| {
        let asked = text
            .as_deref()
            .and_then(duration)
            .unwrap_or(Duration::from_secs(60));
        asked.min(most)
    };
    let times = |ns: &str, ends: Instant| {
        let wall = SystemTime::now();
        format!(
            "<{ns}:CurrentTime>{}</{ns}:CurrentTime><{ns}:TerminationTime>{}</{ns}:TerminationTime>",
            humantime::format_rfc3339_seconds(wall),
            humantime::format_rfc3339_seconds(
                wall + ends.saturating_duration_since(Instant::now())
            )
        )
    };
    let gone = || {
        Err(format!(
            r#"<?xml version="1.0" encoding="utf-8"?><s:Envelope xmlns:s="{SOAP}" xmlns:wsrf-rw="http://docs.oasis-open.org/wsrf/rw-2"><s:Body><s:Fault><s:Code><s:Value>s:Sender</s:Value><s:Subcode><s:Value>wsrf-rw:ResourceUnknownFault</s:Value></s:Subcode></s:Code><s:Reason><s:Text xml:lang="en">No such subscription</s:Text></s:Reason></s:Fault></s:Body></s:Envelope>"#
        ))
    };
    let body = match operation {
        "CreatePullPointSubscription" => {
            let ends = now + grant(asked(TEV, "InitialTerminationTime"));
            state.next += 1;
            let id = state.next;
            let wall = SystemTime::now();
            let queue = (state.current.iter())
                .map(|(t, i, v)| (t.clone(), i.clone(), *v, wall, true))
                .collect();
            state.subscriptions.insert(id, Subscription { queue, ends });
            format!(
                "<tev:CreatePullPointSubscriptionResponse><tev:SubscriptionReference>\
                 <wsa:Address>http://{host}/onvif/subscription/{id}</wsa:Address>\
                 </tev:SubscriptionReference>{}</tev:CreatePullPointSubscriptionResponse>",
                times("wsnt", ends)
            )
        }
        "PullMessages" => {
            let Some(id) = id.filter(|id| state.subscriptions.contains_key(id)) else {
                return Some(gone());
            };
            let wait = asked(TEV, "Timeout").as_deref().and_then(duration);
            let limit: usize = asked(TEV, "MessageLimit").and_then(|n| n.parse().ok()).unwrap_or(1);
            let until = now + wait.unwrap_or(Duration::from_secs(1)).min(Duration::from_secs(60));
            loop {
                match state.subscriptions.get(&id) {
                    None => return Some(gone()),
                    Some(s) if !s.queue.is_empty() => break,
                    Some(_) => {}
                }
                let left = until.saturating_duration_since(Instant::now());
                if left.is_zero() {
                    break;
                }
                state = events.changed.wait_timeout(state, left).unwrap().0;
            }
            let subscription = state.subscriptions.get_mut(&id).unwrap();
            let taken = subscription.queue.len().min(limit.max(1));
            let mut messages = String::new();
            for (topic, item, value, at, first) in subscription.queue.drain(..taken) {
                messages.push_str(&format!(
                    "<wsnt:NotificationMessage><wsnt:Topic Dialect=\"http://www.onvif.org/ver10/tev/topicExpression/ConcreteSet\">{topic}</wsnt:Topic>\
                     <wsnt:Message><tt:Message UtcTime=\"{}\" PropertyOperation=\"{}\">\
                     <tt:Source><tt:SimpleItem Name=\"VideoSourceConfigurationToken\" Value=\"VideoSource_1\"/>\
                     <tt:SimpleItem Name=\"VideoAnalyticsConfigurationToken\" Value=\"VideoAnalytics_1\"/>\
                     <tt:SimpleItem Name=\"Rule\" Value=\"MyMotionDetectorRule\"/></tt:Source>\
                     <tt:Data><tt:SimpleItem Name=\"{item}\" Value=\"{value}\"/></tt:Data>\
                     </tt:Message></wsnt:Message></wsnt:NotificationMessage>",
                    humantime::format_rfc3339_millis(at),
                    if first { "Initialized" } else { "Changed" },
                ));
            }
            let ends = subscription.ends;
            format!(
                "<tev:PullMessagesResponse>{}{messages}</tev:PullMessagesResponse>",
                times("tev", ends)
            )
        }
        "Renew" => {
            let Some(subscription) = id.and_then(|id| state.subscriptions.get_mut(&id)) else {
                return Some(gone());
            };
            let asked = asked(WSNT, "TerminationTime");
            let life = grant(asked);
            subscription.ends = now + life;
            let wall = SystemTime::now();
            format!(
                "<wsnt:RenewResponse><wsnt:TerminationTime>{}</wsnt:TerminationTime>\
                 <wsnt:CurrentTime>{}</wsnt:CurrentTime></wsnt:RenewResponse>",
                humantime::format_rfc3339_seconds(wall + life),
                humantime::format_rfc3339_seconds(wall)
            )
        }
        "SetSynchronizationPoint" => {
            // Each topic's state again, as a new subscription gets it.
            let Some(id) = id.filter(|id| state.subscriptions.contains_key(id)) else {
                return Some(gone());
            };
            let wall = SystemTime::now();
            let current: Vec<Message> = (state.current.iter())
                .map(|(t, i, v)| (t.clone(), i.clone(), *v, wall, true))
                .collect();
            state.subscriptions.get_mut(&id).unwrap().queue.extend(current);
            events.changed.notify_all();
            "<tev:SetSynchronizationPointResponse/>".to_owned()
        }
        "Unsubscribe" => {
            if id.and_then(|id| state.subscriptions.remove(&id)).is_none() {
                return Some(gone());
            }
            events.changed.notify_all();
            "<wsnt:UnsubscribeResponse/>".to_owned()
        }
        "GetEventProperties" => "<tev:GetEventPropertiesResponse>\
             <tev:TopicNamespaceLocation>http://www.onvif.org/onvif/ver10/topics/topicns.xml</tev:TopicNamespaceLocation>\
             <wsnt:FixedTopicSet>true</wsnt:FixedTopicSet>\
             <wstop:TopicSet xmlns:wstop=\"http://docs.oasis-open.org/wsn/t-1\"/>\
             <wsnt:TopicExpressionDialect>http://www.onvif.org/ver10/tev/topicExpression/ConcreteSet</wsnt:TopicExpressionDialect>\
             <tev:MessageContentFilterDialect>http://www.onvif.org/ver10/tev/messageContentFilter/ItemFilter</tev:MessageContentFilterDialect>\
             <tev:MessageContentSchemaLocation>http://www.onvif.org/onvif/ver10/schema/onvif.xsd</tev:MessageContentSchemaLocation>\
             </tev:GetEventPropertiesResponse>"
            .to_owned(),
        _ => return None,
    };
    Some(Ok(format!("{PREFIX}{body}{SUFFIX}")))
}

/// An xs:duration of seconds and minutes (PT60S, PT1M30S), or an
/// xs:dateTime's distance from now.
fn duration(text: &str) -> Option<Duration> {
    if let Some(rest) = text.strip_prefix("PT") {
        let (mut seconds, mut number) = (0.0, String::new());
        for c in rest.chars() {
            match c {
                'H' => seconds += number.parse::<f64>().ok()? * 3600.0,
                'M' => seconds += number.parse::<f64>().ok()? * 60.0,
                'S' => seconds += number.parse::<f64>().ok()?,
                c => {
                    number.push(c);
                    continue;
                }
            }
            number.clear();
        }
        return Some(Duration::from_secs_f64(seconds));
    }
    let at = humantime::parse_rfc3339_weak(text.trim_end_matches('Z')).ok()?;
    Some(at.duration_since(SystemTime::now()).unwrap_or_default())
}
