//! `/api/discover`: the ONVIF devices on the LAN, and the streams of one,
//! for adding a camera without knowing its RTSP URL. Passwords go to the
//! device and nowhere else: not in an answer, not in a log line.

use serde::Serialize;

use crate::app::App;
use crate::cameras::camera::{Camera, device_login};
use crate::cameras::discover::{self, Stream};
use crate::cameras::onvif::{Credentials, Found};
use crate::cameras::rtsp_url::{rtsp_endpoint, without_userinfo};
use crate::error::{Error, Kind};
use crate::web::reply::Reply;

#[derive(Serialize)]
struct Devices<'a> {
    devices: Vec<DeviceView<'a>>,
    skipped: u32,
    truncated: bool,
    interfaces: Vec<InterfaceView>,
}

#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
struct DeviceView<'a> {
    endpoint: &'a str,
    address: String,
    services: &'a [String],
    name: Option<&'a str>,
    make: Option<&'a str>,
    model: Option<&'a str>,
    camera_id: Option<String>,
}

#[derive(Serialize)]
struct InterfaceView {
    name: String,
    address: String,
}

pub fn devices(app: &App) -> Result<Reply, Error> {
    // In address order.
    let found = app.finder.search();
    let cameras = app.db(|s| s.cameras())?;
    let devices = found
        .devices
        .iter()
        .map(|d| DeviceView {
            endpoint: &d.endpoint,
            address: d.address.to_string(),
            services: &d.services,
            name: d.name.as_deref(),
            make: d.make.as_deref(),
            model: d.model.as_deref(),
            camera_id: cameras
                .iter()
                .find(|c| uses(c, d))
                .map(|c| c.id.to_string()),
        })
        .collect();
    let interfaces = found
        .interfaces
        .into_iter()
        .map(|i| InterfaceView {
            name: i.name,
            address: i.address.to_string(),
        })
        .collect();
    Ok(Reply::json(
        200,
        &Devices {
            devices,
            skipped: found.skipped,
            truncated: found.truncated,
            interfaces,
        },
    ))
}

/// Whether `camera` is the device: linked to it, or streaming from its address.
fn uses(camera: &Camera, device: &Found) -> bool {
    let linked = camera.settings.onvif.as_ref();
    linked.is_some_and(|l| l.endpoint == device.endpoint)
        || (linked.is_none()
            && rtsp_endpoint(&camera.settings.rtsp_url)
                .is_some_and(|(host, _, _)| host == device.address.to_string()))
}

#[derive(Serialize)]
struct StreamsView<'a> {
    make: &'a str,
    model: &'a str,
    profiles: Vec<ProfileView<'a>>,
}

#[derive(Serialize)]
struct ProfileView<'a> {
    token: &'a str,
    name: &'a str,
    /// None for a stream not offered (on another host than the device).
    url: Option<String>,
    width: Option<u32>,
    height: Option<u32>,
    codec: Option<&'a str>,
    fps: Option<u32>,
    measured: bool,
    problem: Option<&'a str>,
    role: Option<&'static str>,
}

impl<'a> ProfileView<'a> {
    fn new(stream: &'a Stream) -> ProfileView<'a> {
        let p = &stream.profile;
        let (width, height, codec, fps, problem) = match &stream.measured {
            Ok(c) => (
                Some(c.width),
                Some(c.height),
                Some(c.video_codec.as_str()),
                Some(c.fps),
                None,
            ),
            Err(why) => (
                p.width,
                p.height,
                p.codec.as_deref(),
                p.fps,
                Some(why.as_str()),
            ),
        };
        ProfileView {
            token: &p.token,
            name: &p.name,
            url: stream.offered.then(|| without_userinfo(&p.uri)),
            width,
            height,
            codec,
            fps,
            measured: stream.measured.is_ok(),
            problem,
            role: stream.role.map(|r| r.name()),
        }
    }
}

pub fn streams(app: &App, body: &[u8]) -> Result<Reply, Error> {
    let (address, credentials) = parse(body)?;
    let (device, streams) = discover::streams(&app.prober, &address, credentials.as_ref())
        .map_err(|e| {
            let why = e.message();
            log::info!("ONVIF device {address}: {why}");
            Error::new(Kind::BadGateway, why)
        })?;
    Ok(Reply::json(
        200,
        &StreamsView {
            make: &device.make,
            model: &device.model,
            profiles: streams.iter().map(ProfileView::new).collect(),
        },
    ))
}

/// `{"address", "username", "password"}`: the device service's address and
/// the account, if the device needs one.
fn parse(body: &[u8]) -> Result<(String, Option<Credentials>), Error> {
    let (address, account) = device_login(body)?;
    let credentials = account.map(|(username, password)| Credentials { username, password });
    Ok((address, credentials))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bodies() {
        let ok = parse(br#"{"address":"http://10.0.0.5/onvif/device_service","username":"admin","password":"pw"}"#)
            .unwrap();
        assert_eq!(ok.0, "http://10.0.0.5/onvif/device_service");
        let c = ok.1.unwrap();
        assert_eq!((c.username.as_str(), c.password.as_str()), ("admin", "pw"));
        assert!(
            parse(br#"{"address":"http://h/","username":""}"#)
                .unwrap()
                .1
                .is_none()
        );
        let refused = [
            (&br#"[]"#[..], "body must be a JSON object"),
            (br#"{}"#, "address is required"),
            (br#"{"address":5}"#, "address must be a string"),
            (
                br#"{"address":"rtsp://h/"}"#,
                "address must be an http:// or https:// URL",
            ),
            (
                br#"{"address":"http://admin:pw@h/"}"#,
                "address must not contain a user name or password",
            ),
            (
                br#"{"address":"http://127.0.0.1:1984/onvif/device_service"}"#,
                "address must not name a loopback",
            ),
            (
                br#"{"address":"http://localhost/onvif/device_service"}"#,
                "address must not name a loopback",
            ),
            (
                br#"{"address":"http://169.254.0.7/onvif/device_service"}"#,
                "address must not name a loopback",
            ),
            (
                br#"{"address":"http://h/","password":"pw"}"#,
                "password needs a username",
            ),
            (
                br#"{"address":"http://h/","username":1}"#,
                "username must be a string",
            ),
        ];
        for (body, want) in refused {
            let Err(e) = parse(body) else {
                panic!("{} was taken", String::from_utf8_lossy(body));
            };
            assert_eq!(e.kind, Kind::BadRequest);
            assert!(
                e.message.starts_with(want),
                "{}: {}",
                String::from_utf8_lossy(body),
                e.message
            );
        }
    }
}
