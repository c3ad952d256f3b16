//! One SOAP 1.2 call to a camera over HTTP: the envelope (signed with
//! WS-Security when there are credentials), the HTTP Digest retry, the answer
//! bounded and parsed, faults and failures turned into [`OnvifError`].

use std::io::Read;
use std::time::{Duration, SystemTime};

use super::auth::{self, Challenge};
use super::xml::{self, Element};
use super::{Credentials, OnvifError};
use crate::cameras::rtsp_url::{reachable_host, unbracketed};

pub const SOAP_ENVELOPE: &str = "http://www.w3.org/2003/05/soap-envelope";
/// SOAP 1.1's, which older cameras answer in.
const SOAP11_ENVELOPE: &str = "http://schemas.xmlsoap.org/soap/envelope/";
/// The largest answer read.
const MAX_ANSWER_BYTES: usize = 1 << 20;

/// An HTTP client for calls bounded by `timeout`, connecting included.
pub fn agent(timeout: Duration) -> ureq::Agent {
    ureq::AgentBuilder::new()
        .tls_connector(crate::tls::Connector::system())
        // A camera's session is a handful of calls; a kept connection would
        // outlive the request that made it.
        .max_idle_connections(0)
        .timeout_connect(timeout)
        .timeout(timeout)
        // A redirect could carry the Authorization header elsewhere.
        .redirects(0)
        .resolver(lan_only)
        .build()
}

/// Resolves `netloc` (`host:port`) as the system does, keeping only the
/// addresses of devices on the LAN when the host is a name: an IP address
/// was checked by whoever gave it, but a name may resolve to this machine
/// (go2rtc's API on loopback) or change between a check and the call, so
/// it is checked here, on the addresses connected to.
fn lan_only(netloc: &str) -> std::io::Result<Vec<std::net::SocketAddr>> {
    use std::net::{IpAddr, ToSocketAddrs};
    let addresses: Vec<_> = netloc.to_socket_addrs()?.collect();
    let host = netloc.rsplit_once(':').map_or(netloc, |(host, _)| host);
    if unbracketed(host).parse::<IpAddr>().is_ok() {
        return Ok(addresses);
    }
    let lan: Vec<_> = addresses
        .into_iter()
        .filter(|a| reachable_host(&a.ip().to_string()))
        .collect();
    if lan.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AddrNotAvailable,
            "the name resolves to no address on the LAN",
        ));
    }
    Ok(lan)
}

/// The envelope around `body` (which may use the tds:, trt:, tt:, tev:, wsnt:
/// and wsa: prefixes), signed with the device's time: ours plus `skew`
/// seconds, with `extra` in its header.
pub fn envelope(body: &str, extra: &str, credentials: Option<&Credentials>, skew: i64) -> String {
    let security = match credentials {
        Some(credentials) => {
            let now = SystemTime::now();
            let device_now = match skew {
                0.. => now + Duration::from_secs(skew.unsigned_abs()),
                _ => now - Duration::from_secs(skew.unsigned_abs()),
            };
            let created = format!("{}", humantime::format_rfc3339_seconds(device_now));
            auth::security_header(credentials, &auth::random::<16>(), &created)
        }
        None => String::new(),
    };
    let header = match security.is_empty() && extra.is_empty() {
        true => String::new(),
        false => format!("<s:Header>{security}{extra}</s:Header>"),
    };
    format!(
        concat!(
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>",
            "<s:Envelope xmlns:s=\"{}\" xmlns:tds=\"http://www.onvif.org/ver10/device/wsdl\" ",
            "xmlns:trt=\"http://www.onvif.org/ver10/media/wsdl\" xmlns:tt=\"http://www.onvif.org/ver10/schema\" ",
            "xmlns:tev=\"http://www.onvif.org/ver10/events/wsdl\" xmlns:wsnt=\"http://docs.oasis-open.org/wsn/b-2\" ",
            "xmlns:wsa=\"http://www.w3.org/2005/08/addressing\">",
            "{}<s:Body>{}</s:Body></s:Envelope>"
        ),
        SOAP_ENVELOPE, header, body
    )
}

/// What the camera answered: status, Digest challenge, body.
struct Answer {
    status: u16,
    challenge: Option<Challenge>,
    body: Vec<u8>,
}

/// Calls `url` with `body` and returns the answer's Body element's first child;
/// signed, with the device's clock `skew` seconds ahead of ours.
pub fn call(
    agent: &ureq::Agent,
    url: &str,
    body: &str,
    credentials: Option<&Credentials>,
    skew: i64,
    timeout: Duration,
) -> Result<Element, OnvifError> {
    call_with(agent, url, body, "", credentials, skew, timeout)
}

/// As [`call`], with `extra` in the envelope's header (WS-Addressing).
pub fn call_with(
    agent: &ureq::Agent,
    url: &str,
    body: &str,
    extra: &str,
    credentials: Option<&Credentials>,
    skew: i64,
    timeout: Duration,
) -> Result<Element, OnvifError> {
    let mut answer = post(
        agent,
        url,
        &envelope(body, extra, credentials, skew),
        None,
        timeout,
    )?;
    if let (401, Some(credentials), Some(challenge)) =
        (answer.status, credentials, answer.challenge.as_ref())
    {
        let cnonce: String = auth::random::<8>()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        let authorization =
            auth::authorization(challenge, credentials, "POST", request_target(url), &cnonce);
        let envelope = envelope(body, extra, Some(credentials), skew);
        answer = post(agent, url, &envelope, Some(&authorization), timeout)?;
    }
    match answer.status {
        200..=299 => parse(&answer.body),
        401 | 403 => Err(OnvifError::Refused),
        status => match parse(&answer.body) {
            Err(fault @ (OnvifError::Fault(_) | OnvifError::Refused)) => Err(fault),
            _ => Err(OnvifError::Status(status)),
        },
    }
}

/// The path and query of `url`, as HTTP Digest's `uri` names it.
fn request_target(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
    let target = rest.find('/').map_or("/", |at| &rest[at..]);
    target.split('#').next().unwrap_or("/")
}

fn post(
    agent: &ureq::Agent,
    url: &str,
    envelope: &str,
    authorization: Option<&str>,
    timeout: Duration,
) -> Result<Answer, OnvifError> {
    let mut request = agent
        .post(url)
        .set("Content-Type", "application/soap+xml; charset=utf-8");
    if let Some(authorization) = authorization {
        request = request.set("Authorization", authorization);
    }
    let response = match request.send_string(envelope) {
        Ok(response) | Err(ureq::Error::Status(_, response)) => response,
        Err(ureq::Error::Transport(transport)) => return Err(transport_error(&transport, timeout)),
    };
    let status = response.status();
    let challenge = response
        .all("www-authenticate")
        .into_iter()
        .find_map(auth::challenge);
    let mut body = Vec::new();
    response
        .into_reader()
        .take(MAX_ANSWER_BYTES as u64 + 1)
        .read_to_end(&mut body)
        .map_err(|e| io_error(&e, timeout))?;
    if body.len() > MAX_ANSWER_BYTES {
        return Err(OnvifError::NotOnvif("it is over 1 MiB".into()));
    }
    Ok(Answer {
        status,
        challenge,
        body,
    })
}

/// ureq's failure in words (its own message names the URL: not repeated).
fn transport_error(transport: &ureq::Transport, timeout: Duration) -> OnvifError {
    use ureq::ErrorKind::*;
    let io = std::error::Error::source(transport).and_then(|s| s.downcast_ref::<std::io::Error>());
    let why = match (transport.kind(), io) {
        (Dns, Some(io)) if io.kind() == std::io::ErrorKind::AddrNotAvailable => {
            "its host name names no address on the LAN"
        }
        (_, Some(io)) => return io_error(io, timeout),
        (BadStatus | BadHeader, _) => return OnvifError::NotOnvif("not an HTTP answer".into()),
        (Dns, _) => "its host name does not resolve",
        _ => "its address is not an http or https URL",
    };
    OnvifError::Connect(why.into())
}

fn io_error(error: &std::io::Error, timeout: Duration) -> OnvifError {
    use std::io::ErrorKind::*;
    match error.kind() {
        TimedOut | WouldBlock => OnvifError::Timeout(timeout),
        // Display of an io::ErrorKind is plain words ("connection refused").
        kind => OnvifError::Connect(format!("{kind}")),
    }
}

/// The first element in an answer's Body, or the fault it reports.
pub fn parse(body: &[u8]) -> Result<Element, OnvifError> {
    let not_onvif = |what: &str| OnvifError::NotOnvif(what.into());
    let text = std::str::from_utf8(body).map_err(|_| not_onvif("not UTF-8 text"))?;
    let root = xml::parse(text).map_err(|what| OnvifError::NotOnvif(what.into()))?;
    let soap = [SOAP_ENVELOPE, SOAP11_ENVELOPE]
        .into_iter()
        .find(|ns| root.is(ns, "Envelope"))
        .ok_or_else(|| not_onvif("no SOAP Envelope"))?;
    let mut body = root.children.into_iter().find(|c| c.is(soap, "Body"));
    let first = body
        .as_mut()
        .ok_or_else(|| not_onvif("no SOAP Body"))?
        .children
        .drain(..)
        .next()
        .ok_or_else(|| not_onvif("an empty SOAP Body"))?;
    match first.is(soap, "Fault") {
        true => Err(fault(&first, soap)),
        false => Ok(first),
    }
}

/// A SOAP fault as an error: a refusal when its code says the credentials
/// were wrong, else its reason.
fn fault(fault: &Element, soap: &str) -> OnvifError {
    // Codes are QNames (ter:NotAuthorized, wsse:FailedAuthentication); both
    // namespaces occur for the same meaning, so the local part decides.
    let mut codes: Vec<&str> = Vec::new();
    let mut code = fault.child(soap, "Code");
    while let Some(c) = code {
        codes.extend(c.child(soap, "Value").map(Element::text));
        code = c.child(soap, "Subcode");
    }
    codes.extend(fault.child("", "faultcode").map(Element::text));
    let refused = codes.iter().any(|c| {
        let local = c.rsplit(':').next().unwrap_or(c);
        local == "NotAuthorized" || local == "FailedAuthentication"
    });
    if refused {
        return OnvifError::Refused;
    }
    let reason = fault
        .path(&[(soap, "Reason"), (soap, "Text")])
        .or_else(|| fault.child("", "faultstring"))
        .map(Element::text)
        .filter(|r| !r.is_empty())
        .or(codes.last().copied())
        .unwrap_or("a fault without a reason");
    OnvifError::Fault(reason.split_whitespace().collect::<Vec<_>>().join(" "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fault12(codes: &str, reason: &str) -> String {
        format!(
            r#"<?xml version="1.0" encoding="UTF-8"?>
<env:Envelope xmlns:env="http://www.w3.org/2003/05/soap-envelope" xmlns:ter="http://www.onvif.org/ver10/error">
<env:Body><env:Fault><env:Code><env:Value>env:Sender</env:Value>{codes}</env:Code>
<env:Reason><env:Text xml:lang="en">{reason}</env:Text></env:Reason></env:Fault></env:Body></env:Envelope>"#
        )
    }

    #[test]
    fn faults() {
        let not_authorized = fault12(
            "<env:Subcode><env:Value>ter:NotAuthorized</env:Value></env:Subcode>",
            "Sender not Authorized",
        );
        assert_eq!(
            parse(not_authorized.as_bytes()).unwrap_err(),
            OnvifError::Refused
        );
        let nested = fault12(
            "<env:Subcode><env:Value>ter:InvalidArgVal</env:Value><env:Subcode><env:Value>wsse:FailedAuthentication</env:Value></env:Subcode></env:Subcode>",
            "x",
        );
        assert_eq!(parse(nested.as_bytes()).unwrap_err(), OnvifError::Refused);
        let no_profile = fault12(
            "<env:Subcode><env:Value>ter:InvalidArgVal</env:Value><env:Subcode><env:Value>ter:NoProfile</env:Value></env:Subcode></env:Subcode>",
            "  The requested\n profile   token does not exist ",
        );
        assert_eq!(
            parse(no_profile.as_bytes()).unwrap_err(),
            OnvifError::Fault("The requested profile token does not exist".into())
        );
        assert_eq!(
            parse(fault12("", "").as_bytes()).unwrap_err(),
            OnvifError::Fault("env:Sender".into())
        );
        let soap11 = r#"<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://schemas.xmlsoap.org/soap/envelope/"><SOAP-ENV:Body><SOAP-ENV:Fault><faultcode>SOAP-ENV:Client</faultcode><faultstring>Action not supported</faultstring></SOAP-ENV:Fault></SOAP-ENV:Body></SOAP-ENV:Envelope>"#;
        assert_eq!(
            parse(soap11.as_bytes()).unwrap_err(),
            OnvifError::Fault("Action not supported".into())
        );
    }

    #[test]
    fn answers_that_are_not_soap() {
        let cases: &[(&[u8], &str)] = &[
            (b"<html><body>Login</body></html>", "no SOAP Envelope"),
            (
                b"<Envelope xmlns=\"http://www.w3.org/2003/05/soap-envelope\"/>",
                "no SOAP Body",
            ),
            (
                b"<e:Envelope xmlns:e=\"http://www.w3.org/2003/05/soap-envelope\"><e:Body> </e:Body></e:Envelope>",
                "an empty SOAP Body",
            ),
            (
                b"<e:Envelope xmlns:e=\"urn:not-soap\"><e:Body><x/></e:Body></e:Envelope>",
                "no SOAP Envelope",
            ),
            (b"\xff\xfe<a/>", "not UTF-8"),
            (b"200 OK", "not XML"),
        ];
        for (body, expected) in cases {
            match parse(body) {
                Err(OnvifError::NotOnvif(what)) => assert!(what.contains(expected), "{what}"),
                other => panic!("{:?}: {other:?}", String::from_utf8_lossy(body)),
            }
        }
    }

    #[test]
    fn request_targets() {
        assert_eq!(
            request_target("http://h:80/onvif/device_service"),
            "/onvif/device_service"
        );
        assert_eq!(request_target("http://h/a?b=c#d"), "/a?b=c");
        assert_eq!(request_target("http://h"), "/");
    }

    #[test]
    fn envelope_signed_or_not() {
        let plain = envelope("<tds:GetDeviceInformation/>", "", None, 0);
        let root = xml::parse(&plain).unwrap();
        let body = root.child(SOAP_ENVELOPE, "Body").unwrap();
        assert!(
            body.child(
                "http://www.onvif.org/ver10/device/wsdl",
                "GetDeviceInformation"
            )
            .is_some()
        );
        assert!(root.child(SOAP_ENVELOPE, "Header").is_none());
        let credentials = Credentials {
            username: "admin".into(),
            password: "secret".into(),
        };
        let signed = envelope("<tds:GetDeviceInformation/>", "", Some(&credentials), 0);
        assert!(!signed.contains("secret"));
        let root = xml::parse(&signed).unwrap();
        let created = root
            .find(
                "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd",
                "Created",
            )
            .unwrap()
            .text()
            .to_owned();
        assert!(created.ends_with('Z') && created.len() == 20, "{created}");
        assert!(humantime::parse_rfc3339(&created).is_ok(), "{created}");
    }
}
