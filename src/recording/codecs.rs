//! What a recording carries of a camera's streams, by the codecs its probe
//! found: the video as it comes (tagged so that the most players play it),
//! the audio copied where MP4 carries it and browsers play it, converted to
//! AAC where ffmpeg reads it but MP4 cannot carry it or browsers do not
//! play it from there (G.711 and its kin, the default of most cameras), and
//! left out otherwise; and what a user should know of it, in plain words.

use crate::cameras::camera::Capabilities;

/// Audio that a browser plays from MP4: copied.
const PLAYABLE_AUDIO: [&str; 2] = ["aac", "opus"];
/// Audio that cameras send and ffmpeg 5.1 will not put in MP4, or not every
/// browser plays from it: converted to AAC. G.711 A-law and µ-law, G.726,
/// G.722, linear PCM (L16), MP3.
const CONVERTED_AUDIO: [&str; 8] = [
    "pcm_alaw",
    "pcm_mulaw",
    "adpcm_g726",
    "adpcm_g726le",
    "g722",
    "pcm_s16be",
    "pcm_s16le",
    "mp3",
];
/// AAC's bit rate for converted audio: a camera's microphone at 8 or 16 kHz,
/// mono, needs no more.
pub const AAC_BITRATE: &str = "32k";

/// What a recording does with a camera's audio.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Audio {
    /// No audio recorded (none sent, or none the node can convert).
    None,
    Copy,
    ToAac,
}

impl Audio {
    pub fn of(caps: Option<&Capabilities>) -> Audio {
        match caps.and_then(|c| c.audio_codec.as_deref()) {
            Some(codec) if PLAYABLE_AUDIO.contains(&codec) => Audio::Copy,
            Some(codec) if CONVERTED_AUDIO.contains(&codec) => Audio::ToAac,
            _ => Audio::None,
        }
    }

    /// The codec the recordings carry, if any.
    pub fn recorded(self, caps: Option<&Capabilities>) -> Option<&str> {
        match self {
            Audio::None => None,
            Audio::Copy => caps.and_then(|c| c.audio_codec.as_deref()),
            Audio::ToAac => Some("aac"),
        }
    }
}

/// The MP4 tag of the video, where ffmpeg's own would play in fewer
/// players: H.265 as `hvc1` (parameter sets in the sample entry, which
/// Apple's players require, and the others play), not `hev1`.
pub fn video_tag(caps: Option<&Capabilities>) -> Option<&'static str> {
    caps.filter(|c| c.video_codec == "hevc").map(|_| "hvc1")
}

/// What the user should know of how the camera is recorded, in plain words.
pub fn warnings(caps: Option<&Capabilities>) -> Vec<String> {
    let Some(caps) = caps else {
        return Vec::new();
    };
    let mut warnings = Vec::new();
    if caps.video_codec == "mjpeg" {
        warnings.push(
            "This camera sends MJPEG video: it is recorded as it comes, but no browser \
             plays MJPEG recordings. Set the camera to H.264 if it can."
                .to_owned(),
        );
    }
    if let (Audio::None, Some(codec)) = (Audio::of(Some(caps)), &caps.audio_codec) {
        warnings.push(format!(
            "The camera's sound ({codec}) is not recorded: the node cannot convert it to a \
             format recordings can carry."
        ));
    }
    warnings
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(video: &str, audio: Option<&str>) -> Capabilities {
        Capabilities {
            video_codec: video.into(),
            width: 640,
            height: 360,
            fps: 25,
            audio_codec: audio.map(str::to_owned),
        }
    }

    #[test]
    fn audio_is_copied_converted_or_left_out() {
        let table = [
            (Some("aac"), Audio::Copy, Some("aac")),
            (Some("opus"), Audio::Copy, Some("opus")),
            (Some("pcm_alaw"), Audio::ToAac, Some("aac")),
            (Some("pcm_mulaw"), Audio::ToAac, Some("aac")),
            (Some("adpcm_g726"), Audio::ToAac, Some("aac")),
            (Some("vorbis"), Audio::None, None),
            (None, Audio::None, None),
        ];
        for (codec, want, recorded) in table {
            let caps = caps("h264", codec);
            let audio = Audio::of(Some(&caps));
            assert_eq!(
                (audio, audio.recorded(Some(&caps))),
                (want, recorded),
                "{codec:?}"
            );
        }
        assert_eq!(Audio::of(None), Audio::None);
    }

    #[test]
    fn hevc_is_tagged_hvc1() {
        assert_eq!(video_tag(Some(&caps("hevc", None))), Some("hvc1"));
        assert_eq!(video_tag(Some(&caps("h264", None))), None);
        assert_eq!(video_tag(None), None);
    }

    #[test]
    fn warnings_in_plain_words() {
        assert!(warnings(Some(&caps("h264", Some("pcm_alaw")))).is_empty());
        assert!(warnings(None).is_empty());
        let mjpeg = warnings(Some(&caps("mjpeg", None)));
        assert_eq!(mjpeg.len(), 1);
        assert!(mjpeg[0].contains("MJPEG") && mjpeg[0].contains("browser"));
        let odd = warnings(Some(&caps("h264", Some("vorbis"))));
        assert_eq!(odd.len(), 1);
        assert!(odd[0].contains("(vorbis) is not recorded"), "{odd:?}");
    }
}
