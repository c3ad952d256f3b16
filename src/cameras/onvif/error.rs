//! What can go wrong asking a camera for its streams, in words fit for the
//! API's answer: never a URL, user name or password (ureq's own messages
//! carry the URL, so they are never repeated).

use std::time::Duration;

/// The longest fault reason repeated, in characters.
const MAX_REASON_CHARS: usize = 200;

#[derive(Debug, PartialEq, Eq)]
pub enum OnvifError {
    /// HTTP 401/403 after the retry, or a NotAuthorized / FailedAuthentication fault.
    Refused,
    /// No answer within this long.
    Timeout(Duration),
    /// The connection failed: the reason in words.
    Connect(String),
    /// The answer is not what ONVIF says: what is wrong with it.
    NotOnvif(String),
    /// A status other than 2xx, without a SOAP fault.
    Status(u16),
    /// A SOAP fault: its reason.
    Fault(String),
}

impl OnvifError {
    pub fn message(&self) -> String {
        match self {
            OnvifError::Refused => "the camera refused the user name or password".into(),
            OnvifError::Timeout(limit) => {
                format!("the camera did not answer within {} s", limit.as_secs_f32())
            }
            OnvifError::Connect(why) => format!("cannot connect to the camera: {why}"),
            OnvifError::NotOnvif(what) => format!("the camera's answer is not ONVIF: {what}"),
            OnvifError::Status(code) => format!("the camera answered HTTP {code}"),
            OnvifError::Fault(reason) => {
                let reason: String = reason.chars().take(MAX_REASON_CHARS).collect();
                format!("the camera reported an error: {reason}")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages() {
        let cases = [
            (
                OnvifError::Refused,
                "the camera refused the user name or password",
            ),
            (
                OnvifError::Timeout(Duration::from_secs(5)),
                "the camera did not answer within 5 s",
            ),
            (
                OnvifError::Timeout(Duration::from_millis(1500)),
                "the camera did not answer within 1.5 s",
            ),
            (
                OnvifError::Connect("connection refused".into()),
                "cannot connect to the camera: connection refused",
            ),
            (
                OnvifError::NotOnvif("no Body".into()),
                "the camera's answer is not ONVIF: no Body",
            ),
            (OnvifError::Status(404), "the camera answered HTTP 404"),
            (
                OnvifError::Fault("x".repeat(300)),
                &format!("the camera reported an error: {}", "x".repeat(200)),
            ),
        ];
        for (error, expected) in cases {
            assert_eq!(error.message(), expected);
        }
    }
}
