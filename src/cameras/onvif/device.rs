//! Asking an ONVIF device for its video streams: who made it (Device
//! service), where its Media service is, its profiles and each one's RTSP
//! address (Media service, ONVIF Media 1).

use std::time::Duration;

use super::OnvifError;
use super::soap;
use super::xml::Element;
use crate::cameras::rtsp_url::{http_host, without_userinfo};

const TDS: &str = "http://www.onvif.org/ver10/device/wsdl";
const TRT: &str = "http://www.onvif.org/ver10/media/wsdl";
const TT: &str = "http://www.onvif.org/ver10/schema";
/// The most profiles asked for their address: each is a call of up to `timeout`.
const MAX_PROFILES: usize = 16;

pub struct Credentials {
    pub username: String,
    pub password: String,
}

#[derive(Debug, PartialEq, Eq)]
pub struct Profile {
    pub token: String,
    pub name: String,
    /// Its RTSP address, user info removed.
    pub uri: String,
    pub width: Option<u32>,
    pub height: Option<u32>,
    /// Lower case: h264, h265, jpeg, mpeg4.
    pub codec: Option<String>,
    pub fps: Option<u32>,
}

#[derive(Debug, PartialEq, Eq)]
pub struct Streams {
    pub make: String,
    pub model: String,
    pub profiles: Vec<Profile>,
}

/// The device at `address` (its device service URL): make, model and each
/// video profile with its RTSP address. Each call is bounded by `timeout`.
pub fn streams(
    address: &str,
    credentials: Option<&Credentials>,
    timeout: Duration,
) -> Result<Streams, OnvifError> {
    let agent = soap::agent(timeout);
    let skew = device_skew(&agent, address, credentials, timeout);
    let call = |url: &str, body: &str| soap::call(&agent, url, body, credentials, skew, timeout);
    let information = device_information(&call(address, "<tds:GetDeviceInformation/>")?)?;
    let capabilities = call(
        address,
        "<tds:GetCapabilities><tds:Category>Media</tds:Category></tds:GetCapabilities>",
    );
    let media = match capabilities {
        Ok(answer) => match media_address(&answer)? {
            Some(media) if http_host(&media) == http_host(address) => media,
            // The account goes to the device's host only.
            Some(_) => {
                log::info!(
                    "ONVIF device {address}: names its Media service on another host; \
                     asked at its own address instead"
                );
                address.to_owned()
            }
            None => address.to_owned(),
        },
        // A device that cannot say where its Media service is may serve it here.
        Err(OnvifError::Fault(_)) => address.to_owned(),
        Err(error) => return Err(error),
    };
    let mut profiles = profiles(&call(&media, "<trt:GetProfiles/>")?)?;
    profiles.truncate(MAX_PROFILES);
    for profile in &mut profiles {
        let body = format!(
            concat!(
                "<trt:GetStreamUri><trt:StreamSetup><tt:Stream>RTP-Unicast</tt:Stream>",
                "<tt:Transport><tt:Protocol>RTSP</tt:Protocol></tt:Transport></trt:StreamSetup>",
                "<trt:ProfileToken>{}</trt:ProfileToken></trt:GetStreamUri>"
            ),
            super::auth::escape(&profile.token)
        );
        match call(&media, &body) {
            Ok(answer) => profile.uri = stream_uri(&answer)?,
            // One profile the device will not stream (a fault) leaves the rest.
            Err(OnvifError::Fault(_)) => {}
            Err(error) => return Err(error),
        }
    }
    profiles.retain(|p| !p.uri.is_empty());
    Ok(Streams {
        make: information.make,
        model: information.model,
        profiles,
    })
}

/// The serial number the device at `address` (its device service URL)
/// gives, if any.
pub fn serial_number(
    address: &str,
    credentials: Option<&Credentials>,
    timeout: Duration,
) -> Result<Option<String>, OnvifError> {
    let agent = soap::agent(timeout);
    let skew = device_skew(&agent, address, credentials, timeout);
    let answer = soap::call(
        &agent,
        address,
        "<tds:GetDeviceInformation/>",
        credentials,
        skew,
        timeout,
    )?;
    Ok(device_information(&answer)?.serial)
}

/// How far the device's clock is ahead of ours, in seconds: a camera whose
/// clock is off refuses a digest signed with ours.
pub(super) fn device_skew(
    agent: &ureq::Agent,
    address: &str,
    credentials: Option<&Credentials>,
    timeout: Duration,
) -> i64 {
    if credentials.is_none() {
        return 0;
    }
    soap::call(
        agent,
        address,
        "<tds:GetSystemDateAndTime/>",
        None,
        0,
        timeout,
    )
    .ok()
    .and_then(|answer| clock_skew(&answer, unix_now()))
    .unwrap_or(0)
}

fn unix_now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// How many seconds the device's UTC clock, in a GetSystemDateAndTimeResponse,
/// is ahead of `now` (seconds since the epoch); None if it does not say, or
/// says a time outside the years 1970 to 9999.
fn clock_skew(answer: &Element, now: i64) -> Option<i64> {
    let utc = expect(answer, TDS, "GetSystemDateAndTimeResponse")
        .ok()?
        .path(&[(TDS, "SystemDateAndTime"), (TT, "UTCDateTime")])?;
    let field = |part: &str, name: &str| -> Option<i64> {
        utc.path(&[(TT, part), (TT, name)])?
            .text()
            .trim()
            .parse()
            .ok()
    };
    let (year, month, day) = (
        field("Date", "Year")?,
        field("Date", "Month")?,
        field("Date", "Day")?,
    );
    let (hour, minute, second) = (
        field("Time", "Hour")?,
        field("Time", "Minute")?,
        field("Time", "Second")?,
    );
    // A date or time out of range is no clock (and its sums would overflow).
    if !(1970..=9999).contains(&year)
        || !(1..=12).contains(&month)
        || !(1..=31).contains(&day)
        || !(0..=23).contains(&hour)
        || !(0..=59).contains(&minute)
        || !(0..=60).contains(&second)
    {
        return None;
    }
    // Days from 1970-01-01 to the civil date (Howard Hinnant's algorithm).
    let y = if month <= 2 { year - 1 } else { year };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * ((month + 9) % 12) + 2) / 5 + day - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    Some(days * 86_400 + hour * 3600 + minute * 60 + second - now)
}

/// `answer` is a `name`, or the error saying it is not.
pub(super) fn expect<'a>(
    answer: &'a Element,
    namespace: &str,
    name: &str,
) -> Result<&'a Element, OnvifError> {
    match answer.is(namespace, name) {
        true => Ok(answer),
        false => Err(OnvifError::NotOnvif(format!(
            "{} where {name} was expected",
            answer.name
        ))),
    }
}

/// Who made the device, and its serial number (None if it gives none).
#[derive(Debug, PartialEq, Eq)]
struct Information {
    make: String,
    model: String,
    serial: Option<String>,
}

/// The device's information from a GetDeviceInformationResponse.
fn device_information(answer: &Element) -> Result<Information, OnvifError> {
    let answer = expect(answer, TDS, "GetDeviceInformationResponse")?;
    let text = |name| answer.child(TDS, name).map_or("", Element::text).to_owned();
    let serial = text("SerialNumber").trim().to_owned();
    Ok(Information {
        make: text("Manufacturer"),
        model: text("Model"),
        serial: (!serial.is_empty()).then_some(serial),
    })
}

/// The Media service's address from a GetCapabilitiesResponse, if it has one.
fn media_address(answer: &Element) -> Result<Option<String>, OnvifError> {
    let answer = expect(answer, TDS, "GetCapabilitiesResponse")?;
    Ok(answer
        .path(&[(TDS, "Capabilities"), (TT, "Media"), (TT, "XAddr")])
        .map(Element::text)
        .filter(|a| !a.is_empty())
        .map(str::to_owned))
}

/// The video profiles in a GetProfilesResponse, their `uri` still empty.
fn profiles(answer: &Element) -> Result<Vec<Profile>, OnvifError> {
    let answer = expect(answer, TRT, "GetProfilesResponse")?;
    let number = |element: Option<&Element>| {
        // Some devices write 25.000000 where the schema says an int.
        let value: f64 = element?.text().parse().ok()?;
        (value >= 1.0 && value < u32::MAX as f64).then(|| value.round() as u32)
    };
    Ok(answer
        .children_named(TRT, "Profiles")
        .filter_map(|profile| {
            let token = profile.attribute("token").filter(|t| !t.is_empty())?;
            let encoder = profile.child(TT, "VideoEncoderConfiguration");
            // Audio- or metadata-only profiles have no video to stream.
            encoder.or(profile.child(TT, "VideoSourceConfiguration"))?;
            let field = |path: &[(&str, &str)]| encoder.and_then(|e| e.path(path));
            Some(Profile {
                token: token.to_owned(),
                name: profile
                    .child(TT, "Name")
                    .map_or("", Element::text)
                    .to_owned(),
                uri: String::new(),
                width: number(field(&[(TT, "Resolution"), (TT, "Width")])),
                height: number(field(&[(TT, "Resolution"), (TT, "Height")])),
                codec: field(&[(TT, "Encoding")])
                    .map(|e| e.text().to_ascii_lowercase().replace('.', ""))
                    .filter(|c| !c.is_empty()),
                fps: number(field(&[(TT, "RateControl"), (TT, "FrameRateLimit")])),
            })
        })
        .collect())
}

/// The RTSP address in a GetStreamUriResponse, without user info.
fn stream_uri(answer: &Element) -> Result<String, OnvifError> {
    let answer = expect(answer, TRT, "GetStreamUriResponse")?;
    match answer
        .path(&[(TRT, "MediaUri"), (TT, "Uri")])
        .map(Element::text)
    {
        Some(uri) if !uri.is_empty() => Ok(without_userinfo(uri)),
        _ => Err(OnvifError::NotOnvif(
            "no MediaUri/Uri in the GetStreamUriResponse".into(),
        )),
    }
}

#[cfg(test)]
#[path = "device_tests.rs"]
mod tests;
