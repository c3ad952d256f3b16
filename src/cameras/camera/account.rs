//! Where a camera's account may go. The node signs ONVIF calls with it
//! (`onvif.address`) and logs in with it where its URLs point; anyone on the
//! LAN may send a PATCH. So a change that would send the stored account to a
//! host it has not been used with (the hosts of the camera's URLs and of its
//! ONVIF device) must carry the camera's password: else a LAN peer could
//! point the link, or confirm a move, to a box of its own and get a digest
//! to crack offline, or the password in clear from an RTSP Basic challenge.
//! A new `rtspUrl` carries its own user info: the stored account is never
//! added to it.

use std::sync::Mutex;
use std::time::{Duration, Instant};

use super::{Settings, SettingsPatch};
use crate::cameras::rtsp_url;
use crate::error::{Error, Kind};
use crate::lock::lock;

/// After a wrong password, none is compared for this long, node-wide: the
/// open API is then no quicker a way to guess a camera's password than the
/// camera itself.
const AFTER_A_WRONG_ONE: Duration = Duration::from_secs(1);

/// When a request last carried a password that was not its camera's.
#[derive(Default)]
pub struct Guesses {
    last_wrong: Mutex<Option<Instant>>,
}

impl Guesses {
    /// Ok when `patch` sends `settings`' account to no new host, or carries
    /// its password; a 400 naming the field otherwise. A `password` given
    /// must be the camera's, whether or not it is needed; within
    /// [`AFTER_A_WRONG_ONE`] of a wrong one it is not compared (429).
    pub fn check(
        &self,
        settings: &Settings,
        patch: &SettingsPatch,
        now: Instant,
    ) -> Result<(), Error> {
        let stored = rtsp_url::credentials(&settings.rtsp_url)
            .map(|(_, password)| password)
            .unwrap_or_default();
        if let Some(given) = &patch.password {
            let mut last_wrong = lock(&self.last_wrong);
            if last_wrong.is_some_and(|at| now.saturating_duration_since(at) < AFTER_A_WRONG_ONE) {
                return Err(Error::new(
                    Kind::TooManyRequests,
                    "password: a wrong one came less than a second ago; send it again in a second",
                ));
            }
            if !same(given.0.as_bytes(), stored.as_bytes()) {
                *last_wrong = Some(now);
                return Err(Error::bad_request("password is not the camera's password"));
            }
            return Ok(());
        }
        if stored.is_empty() {
            return Ok(());
        }
        if patch.confirm_move.is_some() {
            return Err(Error::bad_request(
                "onvif.confirmMove sends the camera's account to a new host: it needs the camera's \
                 password, as password",
            ));
        }
        // A new main URL brings its own account (or none) to where the link goes.
        if let (Some(Some(link)), None) = (&patch.onvif, &patch.rtsp_url)
            && let Some(host) = rtsp_url::http_host(&link.address)
            && !used_with(settings).contains(&bare(host))
        {
            return Err(Error::bad_request(
                "onvif.address names a host the camera's account has not been used with: it needs \
                 the camera's password, as password",
            ));
        }
        Ok(())
    }
}

/// The hosts the camera's account has been used with: those of its main
/// URL (whose account it is), of its sub URL if that has the same account
/// (one without may have been put anywhere, with no password), and of its
/// ONVIF device.
fn used_with(settings: &Settings) -> Vec<String> {
    let account = rtsp_url::credentials(&settings.rtsp_url);
    let sub = (settings.rtsp_sub_url.as_ref()).filter(|sub| rtsp_url::credentials(sub) == account);
    let streams = [Some(&settings.rtsp_url), sub]
        .into_iter()
        .flatten()
        .filter_map(|url| rtsp_url::rtsp_endpoint(url).map(|(host, _, _)| bare(&host)));
    let device = (settings.onvif.as_ref())
        .and_then(|link| rtsp_url::http_host(&link.address))
        .map(bare);
    streams.chain(device).collect()
}

/// A host as compared: without IPv6 brackets, in lowercase.
fn bare(host: &str) -> String {
    rtsp_url::unbracketed(host).to_ascii_lowercase()
}

/// Whether `a` and `b` are equal, in a time that does not depend on where
/// they differ.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0, |d, (x, y)| d | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cameras::camera::SettingsPatch;

    fn settings() -> Settings {
        Settings::from_json(
            br#"{"name":"a","rtspUrl":"rtsp://admin:s3cret@10.0.0.5/main",
                 "rtspSubUrl":"rtsp://admin:s3cret@[FD00::7]/sub",
                 "onvif":{"endpoint":"urn:uuid:1","address":"http://10.0.0.6:8000/onvif/device_service"}}"#,
            false,
        )
        .unwrap()
    }

    #[test]
    fn the_account_goes_to_a_new_host_only_with_the_password() {
        let link = |host: &str| {
            format!(
                r#""onvif":{{"endpoint":"urn:uuid:1","address":"http://{host}/onvif/device_service"}}"#
            )
        };
        let table = [
            // body -> Ok, or the start of the 400's message
            (format!("{{{}}}", link("10.0.0.5")), Ok(())),
            (format!("{{{}}}", link("10.0.0.6:8000")), Ok(())),
            (format!("{{{}}}", link("[fd00::7]")), Ok(())),
            (
                format!("{{{}}}", link("10.0.0.66")),
                Err("onvif.address names a host"),
            ),
            (
                format!(r#"{{{},"password":"s3cret"}}"#, link("10.0.0.66")),
                Ok(()),
            ),
            (
                format!(r#"{{{},"password":"s3cre"}}"#, link("10.0.0.66")),
                Err("password is not the camera's password"),
            ),
            (
                format!(
                    r#"{{{},"rtspUrl":"rtsp://10.0.0.66/x"}}"#,
                    link("10.0.0.66")
                ),
                Ok(()),
            ),
            (
                r#"{"onvif":{"confirmMove":"10.0.0.9"}}"#.into(),
                Err("onvif.confirmMove sends the camera's account"),
            ),
            (
                r#"{"onvif":{"confirmMove":"10.0.0.9"},"password":"s3cret"}"#.into(),
                Ok(()),
            ),
            (
                r#"{"onvif":{"confirmMove":"10.0.0.9"},"password":""}"#.into(),
                Err("password is not the camera's password"),
            ),
            (r#"{"name":"b"}"#.into(), Ok(())),
            (
                r#"{"name":"b","password":"S3CRET"}"#.into(),
                Err("password is not the camera's password"),
            ),
            (r#"{"onvif":null}"#.into(), Ok(())),
        ];
        let camera = settings();
        let (guesses, mut now) = (Guesses::default(), Instant::now());
        for (body, expected) in table {
            let patch = SettingsPatch::from_json(body.as_bytes()).unwrap();
            // Each a second apart: none is held back.
            now += AFTER_A_WRONG_ONE;
            let got = guesses.check(&camera, &patch, now).map_err(|e| e.message);
            match expected {
                Ok(()) => assert_eq!(got, Ok(()), "{body}"),
                Err(start) => {
                    let message = got.expect_err(&body);
                    assert!(message.starts_with(start), "{body}: {message}");
                    assert!(!message.contains("s3cre"), "{message}");
                }
            }
        }
    }

    #[test]
    fn a_sub_stream_put_elsewhere_without_the_account_opens_no_host() {
        let mut camera = settings();
        let patch = |host: &str| {
            let body = format!(r#"{{"onvif":{{"endpoint":"e","address":"http://{host}/"}}}}"#);
            SettingsPatch::from_json(body.as_bytes()).unwrap()
        };
        let same_account = Guesses::default().check(&camera, &patch("[fd00::7]"), Instant::now());
        assert_eq!(same_account.map_err(|e| e.kind), Ok(()));
        // PATCH {"rtspSubUrl": …} needs no password: nothing secret goes there.
        camera.rtsp_sub_url = Some("rtsp://10.0.0.66/sub".into());
        let got = Guesses::default().check(&camera, &patch("10.0.0.66"), Instant::now());
        assert_eq!(got.map_err(|e| e.kind), Err(Kind::BadRequest));
    }

    #[test]
    fn a_camera_without_a_password_has_nothing_to_guard() {
        let open = Settings::from_json(br#"{"name":"a","rtspUrl":"rtsp://10.0.0.5/main"}"#, false)
            .unwrap();
        for body in [
            r#"{"onvif":{"confirmMove":"10.0.0.9"}}"#,
            r#"{"onvif":{"endpoint":"e","address":"http://10.0.0.66/"}}"#,
        ] {
            let patch = SettingsPatch::from_json(body.as_bytes()).unwrap();
            let got = Guesses::default().check(&open, &patch, Instant::now());
            assert_eq!(got.map_err(|e| e.message), Ok(()), "{body}");
        }
    }

    #[test]
    fn after_a_wrong_password_none_is_compared_for_a_second() {
        let camera = settings();
        let body = |password: &str| {
            SettingsPatch::from_json(format!(r#"{{"password":"{password}"}}"#).as_bytes()).unwrap()
        };
        let (guesses, start) = (Guesses::default(), Instant::now());
        let at = |ms| start + Duration::from_millis(ms);
        let kind = |password: &str, ms| {
            guesses
                .check(&camera, &body(password), at(ms))
                .map_err(|e| e.kind)
        };
        assert_eq!(kind("s3cret", 0), Ok(()));
        assert_eq!(kind("guess", 0), Err(Kind::BadRequest));
        assert_eq!(
            kind("s3cret", 999),
            Err(Kind::TooManyRequests),
            "not even the right one"
        );
        assert_eq!(kind("guess", 1000), Err(Kind::BadRequest));
        assert_eq!(kind("s3cret", 2000), Ok(()));
        assert_eq!(
            kind("s3cret", 2001),
            Ok(()),
            "a right one holds nothing back"
        );
    }

    #[test]
    fn a_password_is_never_printed() {
        let patch = SettingsPatch::from_json(br#"{"password":"s3cret"}"#).unwrap();
        assert!(!format!("{patch:?}").contains("s3cret"));
    }
}
