//! A camera's own motion detection, heard through its ONVIF Event service:
//! a PullPoint subscription (`CreatePullPointSubscription`), long-polled with
//! `PullMessages`, renewed before the time the device granted runs out, and
//! its motion messages read: `CellMotionDetector/Motion` (`IsMotion`),
//! `VideoSource/MotionAlarm` (`State`) and the detectors of people,
//! vehicles and the like some cameras add (`…/PeopleDetect` `IsPeople`).
//! The camera's account goes only to the device's own host: an Event
//! service or a subscription named on another host is not called.

use std::time::{Duration, Instant};

use super::device::{device_skew, expect};
use super::xml::Element;
use super::{Credentials, OnvifError, soap};
use crate::cameras::rtsp_url::http_host;

const TDS: &str = "http://www.onvif.org/ver10/device/wsdl";
const TT: &str = "http://www.onvif.org/ver10/schema";
const TEV: &str = "http://www.onvif.org/ver10/events/wsdl";
const WSNT: &str = "http://docs.oasis-open.org/wsn/b-2";
const WSA: &str = "http://www.w3.org/2005/08/addressing";
/// The bound on each call but the pulls.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// How long the device may hold a pull open when it has nothing to say.
const PULL_WAIT: Duration = Duration::from_secs(5);
/// The subscription's life asked for, renewed at half what was granted.
/// A macro, so that the calls' bodies that name it are constants.
macro_rules! life {
    () => {
        "PT60S"
    };
}
const ASKED_LIFE: Duration = Duration::from_secs(60);
/// The most messages one pull takes.
const MESSAGE_LIMIT: u32 = 64;

/// One motion message: its topic (prefixes dropped) and what it says.
#[derive(Debug, PartialEq, Eq)]
pub struct Said {
    pub topic: String,
    pub moving: bool,
}

/// A pull point at the device's host, with the account that signs its calls.
pub struct PullPoint {
    agent: ureq::Agent,
    credentials: Option<Credentials>,
    skew: i64,
    /// Where the subscription is, and the header its calls carry
    /// (WS-Addressing: its address and reference parameters).
    address: String,
    reference: String,
    renew_at: Instant,
}

/// Where the device's Event service is, on its own host; None if it
/// lists none.
fn event_service(
    agent: &ureq::Agent,
    device: &str,
    credentials: Option<&Credentials>,
    skew: i64,
) -> Result<Option<String>, OnvifError> {
    let answer = soap::call(
        agent,
        device,
        "<tds:GetCapabilities><tds:Category>Events</tds:Category></tds:GetCapabilities>",
        credentials,
        skew,
        CALL_TIMEOUT,
    );
    let address = match answer {
        Ok(answer) => expect(&answer, TDS, "GetCapabilitiesResponse")?
            .path(&[(TDS, "Capabilities"), (TT, "Events"), (TT, "XAddr")])
            .map(|a| a.text().to_owned())
            .filter(|a| !a.is_empty()),
        // A device without the category faults (ter:NoSuchService).
        Err(OnvifError::Fault(_)) => None,
        Err(e) => return Err(e),
    };
    Ok(address.map(|a| on_host(&a, device)))
}

/// `address` if it is on `device`'s host; else the device's own address,
/// where the account may go.
fn on_host(address: &str, device: &str) -> String {
    match http_host(address) == http_host(device) {
        true => address.to_owned(),
        false => {
            log::info!(
                "ONVIF device {device}: names a service on another host; asked at its own address instead"
            );
            device.to_owned()
        }
    }
}

impl PullPoint {
    /// Subscribes to the events of the device at `device` (its device
    /// service's address); None if it offers none.
    pub fn subscribe(
        device: &str,
        credentials: Option<Credentials>,
        now: Instant,
    ) -> Result<Option<PullPoint>, OnvifError> {
        let agent = soap::agent(CALL_TIMEOUT + PULL_WAIT);
        let skew = device_skew(&agent, device, credentials.as_ref(), CALL_TIMEOUT);
        let Some(service) = event_service(&agent, device, credentials.as_ref(), skew)? else {
            return Ok(None);
        };
        let service = service.as_str();
        let body = concat!(
            "<tev:CreatePullPointSubscription><tev:InitialTerminationTime>",
            life!(),
            "</tev:InitialTerminationTime></tev:CreatePullPointSubscription>"
        );
        let answer = soap::call(
            &agent,
            service,
            body,
            credentials.as_ref(),
            skew,
            CALL_TIMEOUT,
        )?;
        let answer = expect(&answer, TEV, "CreatePullPointSubscriptionResponse")?;
        let reference = answer
            .child(TEV, "SubscriptionReference")
            .ok_or_else(|| OnvifError::NotOnvif("no SubscriptionReference".into()))?;
        let address = reference
            .child(WSA, "Address")
            .map(Element::text)
            .filter(|a| !a.is_empty())
            .unwrap_or(service);
        if http_host(address) != http_host(device) {
            return Err(OnvifError::NotOnvif(
                "it names its subscription on another host, where the camera's account does not go"
                    .into(),
            ));
        }
        // Reference parameters go back as header elements, as they came.
        let mut header = format!("<wsa:To>{}</wsa:To>", super::auth::escape(address));
        for p in reference
            .child(WSA, "ReferenceParameters")
            .map_or(&[][..], |r| &r.children)
        {
            header.push_str(&format!(
                "<r:{0} xmlns:r=\"{1}\" wsa:IsReferenceParameter=\"true\">{2}</r:{0}>",
                p.name,
                super::auth::escape(&p.namespace),
                super::auth::escape(p.text())
            ));
        }
        Ok(Some(PullPoint {
            address: address.to_owned(),
            reference: header,
            renew_at: now + granted(answer, WSNT) / 2,
            agent,
            credentials,
            skew,
        }))
    }

    fn call(&self, action: &str, body: &str, timeout: Duration) -> Result<Element, OnvifError> {
        let header = format!("<wsa:Action>{action}</wsa:Action>{}", self.reference);
        let credentials = self.credentials.as_ref();
        soap::call_with(
            &self.agent,
            &self.address,
            body,
            &header,
            credentials,
            self.skew,
            timeout,
        )
    }

    /// The motion messages the camera has for us, in the order it said
    /// them, waiting up to [`PULL_WAIT`] for one, and no later than the
    /// subscription's renewal is due.
    pub fn pull(&self, now: Instant) -> Result<Vec<Said>, OnvifError> {
        let wait = self.renew_at.saturating_duration_since(now).min(PULL_WAIT);
        let body = format!(
            "<tev:PullMessages><tev:Timeout>PT{}S</tev:Timeout><tev:MessageLimit>{MESSAGE_LIMIT}\
             </tev:MessageLimit></tev:PullMessages>",
            wait.as_secs().max(1)
        );
        let answer = self.call(
            "http://www.onvif.org/ver10/events/wsdl/PullPointSubscription/PullMessagesRequest",
            &body,
            CALL_TIMEOUT + PULL_WAIT,
        )?;
        Ok(motion_messages(expect(
            &answer,
            TEV,
            "PullMessagesResponse",
        )?))
    }

    /// Renews the subscription if half its time has passed.
    pub fn renew_if_due(&mut self, now: Instant) -> Result<(), OnvifError> {
        if now < self.renew_at {
            return Ok(());
        }
        let answer = self.call(
            "http://docs.oasis-open.org/wsn/bw-2/SubscriptionManager/RenewRequest",
            concat!(
                "<wsnt:Renew><wsnt:TerminationTime>",
                life!(),
                "</wsnt:TerminationTime></wsnt:Renew>"
            ),
            CALL_TIMEOUT,
        )?;
        let answer = expect(&answer, WSNT, "RenewResponse")?;
        self.renew_at = now + granted(answer, WSNT) / 2;
        Ok(())
    }

    /// Ends the subscription (a device that does not hear it ends it when
    /// its time runs out).
    pub fn unsubscribe(self) {
        let _ = self.call(
            "http://docs.oasis-open.org/wsn/bw-2/SubscriptionManager/UnsubscribeRequest",
            "<wsnt:Unsubscribe/>",
            CALL_TIMEOUT,
        );
    }
}

/// The time the device granted (its TerminationTime less its CurrentTime,
/// both on its clock), or what was asked if it does not say.
fn granted(answer: &Element, namespace: &str) -> Duration {
    let time = |name| {
        let text = answer.child(namespace, name)?.text();
        humantime::parse_rfc3339_weak(text.trim_end_matches('Z')).ok()
    };
    match (time("CurrentTime"), time("TerminationTime")) {
        (Some(now), Some(end)) => end.duration_since(now).unwrap_or_default().min(ASKED_LIFE),
        _ => ASKED_LIFE,
    }
}

/// The motion messages in a PullMessagesResponse, in order.
fn motion_messages(answer: &Element) -> Vec<Said> {
    answer
        .children_named(WSNT, "NotificationMessage")
        .filter_map(|n| {
            // `tns1:RuleEngine/CellMotionDetector/Motion`: each part may
            // have its prefix (`tns1:VideoSource/tnsaxis:MotionAlarm`).
            let topic: Vec<&str> = n
                .child(WSNT, "Topic")?
                .text()
                .split('/')
                .map(|part| part.rsplit(':').next().unwrap_or(part))
                .collect();
            let last = topic.last()?;
            if !(last.contains("Motion") || last.ends_with("Detect")) {
                return None;
            }
            let data = n.path(&[(WSNT, "Message"), (TT, "Message"), (TT, "Data")])?;
            // Its state: IsMotion, State, IsPeople, IsVehicle… a boolean.
            let moving = data.children_named(TT, "SimpleItem").find_map(|item| {
                match item.attribute("Value")?.to_ascii_lowercase().as_str() {
                    "true" | "1" => Some(true),
                    "false" | "0" => Some(false),
                    _ => None,
                }
            })?;
            Some(Said {
                topic: topic.join("/"),
                moving,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cameras::onvif::xml;

    fn response(messages: &str) -> Element {
        let text = format!(
            r#"<tev:PullMessagesResponse xmlns:tev="{TEV}" xmlns:wsnt="{WSNT}" xmlns:tt="{TT}"
                xmlns:tns1="http://www.onvif.org/ver10/topics" xmlns:tnsaxis="http://www.axis.com/2009/event/topics">
              <tev:CurrentTime>2026-12-07T01:00:00Z</tev:CurrentTime>
              <tev:TerminationTime>2026-12-07T01:00:10Z</tev:TerminationTime>{messages}</tev:PullMessagesResponse>"#
        );
        xml::parse(&text).unwrap()
    }

    fn message(topic: &str, item: &str, value: &str) -> String {
        format!(
            r#"<wsnt:NotificationMessage><wsnt:Topic Dialect="http://www.onvif.org/ver10/tev/topicExpression/ConcreteSet">{topic}</wsnt:Topic>
               <wsnt:Message><tt:Message UtcTime="2026-12-07T01:00:00.5Z" PropertyOperation="Changed">
               <tt:Source><tt:SimpleItem Name="VideoSourceConfigurationToken" Value="1"/></tt:Source>
               <tt:Data><tt:SimpleItem Name="{item}" Value="{value}"/></tt:Data></tt:Message></wsnt:Message>
               </wsnt:NotificationMessage>"#
        )
    }

    #[test]
    fn motion_topics_are_read_in_order_and_others_left_out() {
        let messages = [
            message(
                "tns1:RuleEngine/CellMotionDetector/Motion",
                "IsMotion",
                "true",
            ),
            message(
                "tns1:RuleEngine/CellMotionDetector/Motion",
                "IsMotion",
                "false",
            ),
            message("tns1:VideoSource/MotionAlarm", "State", "true"),
            message(
                "tns1:RuleEngine/MyRuleDetector/PeopleDetect",
                "IsPeople",
                "false",
            ),
            message("tns1:RuleEngine/MyRuleDetector/VehicleDetect", "State", "1"),
            message("tns1:VideoSource/tnsaxis:MotionAlarm", "State", "0"),
            message("tns1:Device/Trigger/DigitalInput", "LogicalState", "true"),
            message("tns1:VideoSource/ImageTooDark", "State", "true"),
            message(
                "tns1:RuleEngine/CellMotionDetector/Motion",
                "IsMotion",
                "maybe",
            ),
        ]
        .concat();
        let said = motion_messages(&response(&messages));
        let got: Vec<(&str, bool)> = said.iter().map(|s| (s.topic.as_str(), s.moving)).collect();
        assert_eq!(
            got,
            [
                ("RuleEngine/CellMotionDetector/Motion", true),
                ("RuleEngine/CellMotionDetector/Motion", false),
                ("VideoSource/MotionAlarm", true),
                ("RuleEngine/MyRuleDetector/PeopleDetect", false),
                ("RuleEngine/MyRuleDetector/VehicleDetect", true),
                ("VideoSource/MotionAlarm", false),
            ]
        );
        assert!(motion_messages(&response("")).is_empty());
    }

    #[test]
    fn the_time_granted_is_the_device_s_on_its_own_clock() {
        let answer = response("");
        assert_eq!(granted(&answer, TEV), Duration::from_secs(10));
        let none = xml::parse(&format!("<tev:X xmlns:tev=\"{TEV}\"/>")).unwrap();
        assert_eq!(granted(&none, TEV), ASKED_LIFE);
    }

    #[test]
    fn services_on_another_host_are_not_called() {
        let device = "http://10.0.0.5/onvif/device_service";
        assert_eq!(
            on_host("http://10.0.0.5:8080/onvif/events", device),
            "http://10.0.0.5:8080/onvif/events"
        );
        assert_eq!(on_host("http://10.0.0.6/onvif/events", device), device);
    }
}
