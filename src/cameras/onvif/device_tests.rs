//! Tests of device.rs: go2rtc's real answers (pkg/onvif/server.go), another
//! vendor's prefixes, and `streams()` against HTTP servers on 127.0.0.1.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use super::*;
use crate::cameras::onvif::soap;

/// go2rtc's envelope (pkg/onvif/envelope.go) around `body`.
fn go2rtc(body: &str) -> String {
    format!(
        concat!(
            r#"<?xml version="1.0" encoding="utf-8"?><s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:tt="http://www.onvif.org/ver10/schema" xmlns:tds="http://www.onvif.org/ver10/device/wsdl" xmlns:trt="http://www.onvif.org/ver10/media/wsdl">"#,
            "<s:Body>{}</s:Body></s:Envelope>"
        ),
        body
    )
}

fn go2rtc_device_information() -> String {
    go2rtc(
        r#"<tds:GetDeviceInformationResponse>
	<tds:Manufacturer></tds:Manufacturer>
	<tds:Model>go2rtc</tds:Model>
	<tds:FirmwareVersion>1.9.9</tds:FirmwareVersion>
	<tds:SerialNumber>serial</tds:SerialNumber>
	<tds:HardwareId>1.00</tds:HardwareId>
</tds:GetDeviceInformationResponse>"#,
    )
}

fn go2rtc_capabilities(host: &str) -> String {
    go2rtc(&format!(
        r#"<tds:GetCapabilitiesResponse>
	<tds:Capabilities>
		<tt:Device>
			<tt:XAddr>http://{host}/onvif/device_service</tt:XAddr>
		</tt:Device>
		<tt:Media>
			<tt:XAddr>http://{host}/onvif/media_service</tt:XAddr>
			<tt:StreamingCapabilities>
				<tt:RTPMulticast>false</tt:RTPMulticast>
				<tt:RTP_TCP>false</tt:RTP_TCP>
				<tt:RTP_RTSP_TCP>true</tt:RTP_RTSP_TCP>
			</tt:StreamingCapabilities>
		</tt:Media>
	</tds:Capabilities>
</tds:GetCapabilitiesResponse>"#
    ))
}

/// go2rtc's appendProfile for one stream name.
fn go2rtc_profile(name: &str) -> String {
    format!(
        r#"<trt:Profiles token="{name}" fixed="true"><tt:Name>{name}</tt:Name><tt:VideoSourceConfiguration token="{name}" fixed="true">
	<tt:Name>VSC</tt:Name>
	<tt:SourceToken>{name}</tt:SourceToken>
	<tt:Bounds x="0" y="0" width="1920" height="1080"></tt:Bounds>
</tt:VideoSourceConfiguration><tt:VideoEncoderConfiguration token="vec">
		<tt:Name>VEC</tt:Name>
        <tt:UseCount>1</tt:UseCount>
		<tt:Encoding>H264</tt:Encoding>
		<tt:Resolution><tt:Width>1920</tt:Width><tt:Height>1080</tt:Height></tt:Resolution>
        <tt:Quality>0</tt:Quality>
		<tt:RateControl><tt:FrameRateLimit>30</tt:FrameRateLimit><tt:EncodingInterval>1</tt:EncodingInterval><tt:BitrateLimit>8192</tt:BitrateLimit></tt:RateControl>
        <tt:H264><tt:GovLength>10</tt:GovLength><tt:H264Profile>Main</tt:H264Profile></tt:H264>
        <tt:SessionTimeout>PT10S</tt:SessionTimeout>
	</tt:VideoEncoderConfiguration></trt:Profiles>"#
    )
}

fn go2rtc_profiles(names: &[&str]) -> String {
    let profiles: String = names.iter().map(|n| go2rtc_profile(n)).collect();
    go2rtc(&format!(
        "<trt:GetProfilesResponse>{profiles}</trt:GetProfilesResponse>"
    ))
}

fn go2rtc_stream_uri(uri: &str) -> String {
    go2rtc(&format!(
        "<trt:GetStreamUriResponse><trt:MediaUri><tt:Uri>{uri}</tt:Uri></trt:MediaUri></trt:GetStreamUriResponse>"
    ))
}

fn body(answer: &str) -> Element {
    soap::parse(answer.as_bytes()).unwrap()
}

#[test]
fn go2rtc_answers_parse() {
    assert_eq!(
        device_information(&body(&go2rtc_device_information())).unwrap(),
        Information {
            make: String::new(),
            model: "go2rtc".to_owned(),
            serial: Some("serial".to_owned()),
        }
    );
    assert_eq!(
        media_address(&body(&go2rtc_capabilities("10.213.77.1:1984"))).unwrap(),
        Some("http://10.213.77.1:1984/onvif/media_service".to_owned())
    );
    let profiles = profiles(&body(&go2rtc_profiles(&["main", "sub"]))).unwrap();
    assert_eq!(profiles.len(), 2);
    assert_eq!(
        profiles[1],
        Profile {
            token: "sub".into(),
            name: "sub".into(),
            uri: String::new(),
            width: Some(1920),
            height: Some(1080),
            codec: Some("h264".into()),
            fps: Some(30),
        }
    );
    assert_eq!(
        stream_uri(&body(&go2rtc_stream_uri("rtsp://10.213.77.1:8554/main"))).unwrap(),
        "rtsp://10.213.77.1:8554/main"
    );
}

/// Dahua's real answers, from go2rtc's pkg/onvif/onvif_test.go.
const DAHUA_STREAM_URI: &str = r#"<?xml version="1.0" encoding="utf-8" standalone="yes" ?><s:Envelope xmlns:sc="http://www.w3.org/2003/05/soap-encoding" xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:tt="http://www.onvif.org/ver10/schema" xmlns:trt="http://www.onvif.org/ver10/media/wsdl"><s:Header/><s:Body><trt:GetStreamUriResponse><trt:MediaUri><tt:Uri>rtsp://192.168.1.123:554/cam/realmonitor?channel=1&amp;subtype=1&amp;unicast=true&amp;proto=Onvif</tt:Uri><tt:InvalidAfterConnect>true</tt:InvalidAfterConnect><tt:InvalidAfterReboot>true</tt:InvalidAfterReboot><tt:Timeout>PT0S</tt:Timeout></trt:MediaUri></trt:GetStreamUriResponse></s:Body></s:Envelope>"#;
const DAHUA_CAPABILITIES: &str = r#"<?xml version="1.0" encoding="utf-8" standalone="yes" ?><s:Envelope xmlns:sc="http://www.w3.org/2003/05/soap-encoding" xmlns:s="http://www.w3.org/2003/05/soap-envelope" xmlns:tt="http://www.onvif.org/ver10/schema" xmlns:tds="http://www.onvif.org/ver10/device/wsdl"><s:Header/><s:Body><tds:GetCapabilitiesResponse><tds:Capabilities><tt:Analytics><tt:XAddr>http://192.168.1.123/onvif/analytics_service</tt:XAddr><tt:RuleSupport>true</tt:RuleSupport><tt:AnalyticsModuleSupport>true</tt:AnalyticsModuleSupport></tt:Analytics><tt:Device><tt:XAddr>http://192.168.1.123/onvif/device_service</tt:XAddr><tt:Network><tt:IPFilter>false</tt:IPFilter><tt:ZeroConfiguration>false</tt:ZeroConfiguration><tt:IPVersion6>false</tt:IPVersion6><tt:DynDNS>false</tt:DynDNS><tt:Extension><tt:Dot11Configuration>false</tt:Dot11Configuration></tt:Extension></tt:Network><tt:System><tt:DiscoveryResolve>false</tt:DiscoveryResolve><tt:DiscoveryBye>true</tt:DiscoveryBye><tt:RemoteDiscovery>false</tt:RemoteDiscovery><tt:SystemBackup>false</tt:SystemBackup><tt:SystemLogging>true</tt:SystemLogging><tt:FirmwareUpgrade>true</tt:FirmwareUpgrade><tt:SupportedVersions><tt:Major>2</tt:Major><tt:Minor>00</tt:Minor></tt:SupportedVersions><tt:SupportedVersions><tt:Major>2</tt:Major><tt:Minor>10</tt:Minor></tt:SupportedVersions><tt:SupportedVersions><tt:Major>2</tt:Major><tt:Minor>20</tt:Minor></tt:SupportedVersions><tt:SupportedVersions><tt:Major>2</tt:Major><tt:Minor>30</tt:Minor></tt:SupportedVersions><tt:SupportedVersions><tt:Major>2</tt:Major><tt:Minor>40</tt:Minor></tt:SupportedVersions><tt:SupportedVersions><tt:Major>2</tt:Major><tt:Minor>42</tt:Minor></tt:SupportedVersions><tt:SupportedVersions><tt:Major>16</tt:Major><tt:Minor>12</tt:Minor></tt:SupportedVersions><tt:SupportedVersions><tt:Major>18</tt:Major><tt:Minor>06</tt:Minor></tt:SupportedVersions><tt:SupportedVersions><tt:Major>18</tt:Major><tt:Minor>12</tt:Minor></tt:SupportedVersions><tt:SupportedVersions><tt:Major>19</tt:Major><tt:Minor>06</tt:Minor></tt:SupportedVersions><tt:SupportedVersions><tt:Major>19</tt:Major><tt:Minor>12</tt:Minor></tt:SupportedVersions><tt:SupportedVersions><tt:Major>20</tt:Major><tt:Minor>06</tt:Minor></tt:SupportedVersions><tt:Extension><tt:HttpFirmwareUpgrade>true</tt:HttpFirmwareUpgrade><tt:HttpSystemBackup>false</tt:HttpSystemBackup><tt:HttpSystemLogging>false</tt:HttpSystemLogging><tt:HttpSupportInformation>false</tt:HttpSupportInformation></tt:Extension></tt:System><tt:IO><tt:InputConnectors>2</tt:InputConnectors><tt:RelayOutputs>1</tt:RelayOutputs><tt:Extension><tt:Auxiliary>false</tt:Auxiliary><tt:AuxiliaryCommands></tt:AuxiliaryCommands><tt:Extension></tt:Extension></tt:Extension></tt:IO><tt:Security><tt:TLS1.1>false</tt:TLS1.1><tt:TLS1.2>false</tt:TLS1.2><tt:OnboardKeyGeneration>false</tt:OnboardKeyGeneration><tt:AccessPolicyConfig>false</tt:AccessPolicyConfig><tt:X.509Token>false</tt:X.509Token><tt:SAMLToken>false</tt:SAMLToken><tt:KerberosToken>false</tt:KerberosToken><tt:RELToken>false</tt:RELToken><tt:Extension><tt:TLS1.0>false</tt:TLS1.0><tt:Extension><tt:Dot1X>false</tt:Dot1X><tt:SupportedEAPMethod>0</tt:SupportedEAPMethod><tt:RemoteUserHandling>false</tt:RemoteUserHandling></tt:Extension></tt:Extension></tt:Security></tt:Device><tt:Events><tt:XAddr>http://192.168.1.123/onvif/event_service</tt:XAddr><tt:WSSubscriptionPolicySupport>true</tt:WSSubscriptionPolicySupport><tt:WSPullPointSupport>true</tt:WSPullPointSupport><tt:WSPausableSubscriptionManagerInterfaceSupport>false</tt:WSPausableSubscriptionManagerInterfaceSupport></tt:Events><tt:Imaging><tt:XAddr>http://192.168.1.123/onvif/imaging_service</tt:XAddr></tt:Imaging><tt:Media><tt:XAddr>http://192.168.1.123/onvif/media_service</tt:XAddr><tt:StreamingCapabilities><tt:RTPMulticast>true</tt:RTPMulticast><tt:RTP_TCP>true</tt:RTP_TCP><tt:RTP_RTSP_TCP>true</tt:RTP_RTSP_TCP></tt:StreamingCapabilities><tt:Extension><tt:ProfileCapabilities><tt:MaximumNumberOfProfiles>6</tt:MaximumNumberOfProfiles></tt:ProfileCapabilities></tt:Extension></tt:Media><tt:Extension><tt:DeviceIO><tt:XAddr>http://192.168.1.123/onvif/deviceIO_service</tt:XAddr><tt:VideoSources>1</tt:VideoSources><tt:VideoOutputs>0</tt:VideoOutputs><tt:AudioSources>1</tt:AudioSources><tt:AudioOutputs>1</tt:AudioOutputs><tt:RelayOutputs>1</tt:RelayOutputs></tt:DeviceIO></tt:Extension></tds:Capabilities></tds:GetCapabilitiesResponse></s:Body></s:Envelope>"#;

#[test]
fn dahua_answers_parse() {
    assert_eq!(
        stream_uri(&body(DAHUA_STREAM_URI)).unwrap(),
        "rtsp://192.168.1.123:554/cam/realmonitor?channel=1&subtype=1&unicast=true&proto=Onvif"
    );
    assert_eq!(
        media_address(&body(DAHUA_CAPABILITIES)).unwrap(),
        Some("http://192.168.1.123/onvif/media_service".to_owned())
    );
}

/// A Hikvision-like set of answers: env:, a default namespace for the media
/// wsdl, tt bound to another prefix, SOAP 1.2 with attributes galore.
#[test]
fn other_prefixes_parse() {
    let profiles_answer = r#"<?xml version="1.0" encoding="UTF-8"?>
<env:Envelope xmlns:env="http://www.w3.org/2003/05/soap-envelope" xmlns:hik="http://www.onvif.org/ver10/schema">
<env:Header/>
<env:Body>
<GetProfilesResponse xmlns="http://www.onvif.org/ver10/media/wsdl">
  <Profiles token="Profile_1" fixed="true">
    <hik:Name>mainStream</hik:Name>
    <hik:VideoEncoderConfiguration token="VideoEncoderToken_1" encoding="H265">
      <hik:Name>VideoEncoder_1</hik:Name>
      <hik:Encoding>H265</hik:Encoding>
      <hik:Resolution><hik:Width>2560</hik:Width><hik:Height>1440</hik:Height></hik:Resolution>
      <hik:RateControl><hik:FrameRateLimit>25.000000</hik:FrameRateLimit></hik:RateControl>
    </hik:VideoEncoderConfiguration>
  </Profiles>
  <Profiles token="Profile_2">
    <hik:Name>subStream</hik:Name>
    <hik:VideoSourceConfiguration token="VS"><hik:SourceToken>V</hik:SourceToken></hik:VideoSourceConfiguration>
  </Profiles>
  <Profiles token="Audio">
    <hik:Name>audio only</hik:Name>
    <hik:AudioEncoderConfiguration token="A"/>
  </Profiles>
  <Profiles><hik:Name>no token</hik:Name><hik:VideoEncoderConfiguration/></Profiles>
  <Decoy xmlns="urn:not-onvif"><Profiles token="decoy"><VideoEncoderConfiguration/></Profiles></Decoy>
</GetProfilesResponse>
</env:Body>
</env:Envelope>"#;
    let parsed = profiles(&body(profiles_answer)).unwrap();
    let summary: Vec<_> = parsed
        .iter()
        .map(|p| {
            (
                p.token.as_str(),
                p.name.as_str(),
                p.width,
                p.height,
                p.codec.as_deref(),
                p.fps,
            )
        })
        .collect();
    assert_eq!(
        summary,
        [
            (
                "Profile_1",
                "mainStream",
                Some(2560),
                Some(1440),
                Some("h265"),
                Some(25)
            ),
            ("Profile_2", "subStream", None, None, None, None),
        ]
    );
    let uri_answer = r#"<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://www.w3.org/2003/05/soap-envelope"><SOAP-ENV:Body>
<ns1:GetStreamUriResponse xmlns:ns1="http://www.onvif.org/ver10/media/wsdl"><ns1:MediaUri>
<Uri xmlns="http://www.onvif.org/ver10/schema">rtsp://admin:pw@192.168.1.64:554/Streaming/Channels/101?transportmode=unicast&amp;profile=Profile_1</Uri>
</ns1:MediaUri></ns1:GetStreamUriResponse></SOAP-ENV:Body></SOAP-ENV:Envelope>"#;
    assert_eq!(
        stream_uri(&body(uri_answer)).unwrap(),
        "rtsp://192.168.1.64:554/Streaming/Channels/101?transportmode=unicast&profile=Profile_1"
    );
    // The right names in the wrong namespace are not taken.
    let wrong = r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body>
<trt:GetStreamUriResponse xmlns:trt="http://www.onvif.org/ver10/media/wsdl" xmlns:tt="urn:other"><trt:MediaUri><tt:Uri>rtsp://x/</tt:Uri></trt:MediaUri></trt:GetStreamUriResponse></s:Body></s:Envelope>"#;
    assert!(matches!(
        stream_uri(&body(wrong)),
        Err(OnvifError::NotOnvif(_))
    ));
    let capabilities_without_media = r#"<s:Envelope xmlns:s="http://www.w3.org/2003/05/soap-envelope"><s:Body><d:GetCapabilitiesResponse xmlns:d="http://www.onvif.org/ver10/device/wsdl"><d:Capabilities/></d:GetCapabilitiesResponse></s:Body></s:Envelope>"#;
    assert_eq!(
        media_address(&body(capabilities_without_media)).unwrap(),
        None
    );
    assert_eq!(
        device_information(&body(capabilities_without_media)).unwrap_err(),
        OnvifError::NotOnvif(
            "GetCapabilitiesResponse where GetDeviceInformationResponse was expected".into()
        )
    );
}

/// What a test server saw: each request's head and body.
/// go2rtc's GetSystemDateAndTimeResponse for a UTC time.
fn go2rtc_date_and_time(
    year: i64,
    month: i64,
    day: i64,
    hour: i64,
    minute: i64,
    second: i64,
) -> String {
    go2rtc(&format!(
        r#"<tds:GetSystemDateAndTimeResponse>
	<tds:SystemDateAndTime>
		<tt:DateTimeType>NTP</tt:DateTimeType>
		<tt:DaylightSavings>true</tt:DaylightSavings>
		<tt:TimeZone>
			<tt:TZ>GMT0</tt:TZ>
		</tt:TimeZone>
		<tt:UTCDateTime>
			<tt:Time><tt:Hour>{hour}</tt:Hour><tt:Minute>{minute}</tt:Minute><tt:Second>{second}</tt:Second></tt:Time>
			<tt:Date><tt:Year>{year}</tt:Year><tt:Month>{month}</tt:Month><tt:Day>{day}</tt:Day></tt:Date>
		</tt:UTCDateTime>
	</tds:SystemDateAndTime>
</tds:GetSystemDateAndTimeResponse>"#
    ))
}

#[test]
fn the_device_clock_is_read_against_ours() {
    // 2026-11-25T02:00:00Z is 1795572000 s after the epoch (`date -ud @1795572000`).
    let now = 1_795_572_000;
    let cases = [
        (go2rtc_date_and_time(2026, 11, 25, 2, 0, 0), Some(0)),
        (go2rtc_date_and_time(2026, 11, 25, 3, 0, 30), Some(3630)),
        // A camera that never had NTP: its factory date.
        (go2rtc_date_and_time(1970, 1, 1, 0, 0, 0), Some(-now)),
        (
            go2rtc_date_and_time(2000, 2, 29, 12, 0, 0),
            Some(951_825_600 - now),
        ),
        (go2rtc_date_and_time(2026, 13, 1, 0, 0, 0), None),
        (
            go2rtc_date_and_time(9999, 12, 31, 23, 59, 59),
            Some(253_402_300_799 - now),
        ),
        // Out of range: no clock, and no overflow.
        (go2rtc_date_and_time(1969, 12, 31, 23, 59, 59), None),
        (go2rtc_date_and_time(10_000, 1, 1, 0, 0, 0), None),
        (go2rtc_date_and_time(i64::MAX, 1, 1, 0, 0, 0), None),
        (go2rtc_date_and_time(i64::MIN, 1, 1, 0, 0, 0), None),
        (go2rtc_date_and_time(2026, 11, 25, i64::MAX, 0, 0), None),
        (go2rtc_date_and_time(2026, 11, 25, 24, 0, 0), None),
        (go2rtc_date_and_time(2026, 11, 25, 2, 60, 0), None),
        (go2rtc_date_and_time(2026, 11, 25, 2, 0, -1), None),
        (go2rtc_device_information(), None),
    ];
    for (answer, want) in cases {
        assert_eq!(clock_skew(&body(&answer), now), want, "{answer}");
    }
}

#[test]
fn the_digest_is_signed_with_the_device_clock() {
    // A device an hour ahead of us, that checks the UsernameToken's Created.
    let (base, seen) = serve(move |request| {
        if request.contains("GetSystemDateAndTime") {
            let ahead = std::time::SystemTime::now() + Duration::from_secs(3600);
            let text = humantime::format_rfc3339_seconds(ahead).to_string();
            let number = |range: std::ops::Range<usize>| text[range].parse::<i64>().unwrap();
            let answer = go2rtc_date_and_time(
                number(0..4),
                number(5..7),
                number(8..10),
                number(11..13),
                number(14..16),
                number(17..19),
            );
            return http("200 OK", "", &answer);
        }
        http("200 OK", "", &go2rtc_device_information())
    });
    let credentials = Credentials {
        username: "admin".into(),
        password: "s3cret".into(),
    };
    let _ = streams(
        &format!("{base}/onvif/device_service"),
        Some(&credentials),
        Duration::from_secs(5),
    );
    let seen = seen.lock().unwrap();
    assert!(!seen[0].contains("Security"), "asked unsigned: {}", seen[0]);
    let created = seen[1]
        .split_once("Created>")
        .and_then(|(_, rest)| rest.split('<').next())
        .unwrap_or_else(|| panic!("no Created in {}", seen[1]));
    let created = humantime::parse_rfc3339(created).unwrap();
    let ahead = created
        .duration_since(std::time::SystemTime::now())
        .unwrap_or_else(|_| panic!("{created:?} is not ahead of us"));
    assert!((3590..=3600).contains(&ahead.as_secs()), "{ahead:?} ahead");
}

type Seen = Arc<Mutex<Vec<String>>>;

/// An HTTP server on 127.0.0.1 answering each request with `answer(request)`
/// (a whole HTTP response), one connection at a time; its base URL.
fn serve(answer: impl Fn(&str) -> String + Send + 'static) -> (String, Seen) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    let seen: Seen = Arc::default();
    let log = seen.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { return };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut request = String::new();
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap();
                }
                request.push_str(&line);
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).unwrap();
            request.push_str(&String::from_utf8(body).unwrap());
            let response = answer(&request);
            log.lock().unwrap().push(request);
            let _ = stream.write_all(response.as_bytes());
        }
    });
    (base, seen)
}

fn http(status: &str, extra: &str, body: &str) -> String {
    format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/soap+xml; charset=utf-8\r\n{extra}Content-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    )
}

/// go2rtc's ONVIF service at `host`: the operation picked from the request
/// the way go2rtc does (GetRequestAction: the first element in Body).
fn go2rtc_service(host: &str, request: &str) -> String {
    let action = request
        .split_once("Body>")
        .and_then(|(_, rest)| rest.trim_start().strip_prefix('<'))
        .and_then(|rest| rest.split([' ', '/', '>']).next())
        .map(|tag| tag.rsplit(':').next().unwrap().to_owned())
        .unwrap_or_default();
    let body = match action.as_str() {
        "GetDeviceInformation" => go2rtc_device_information(),
        "GetCapabilities" => go2rtc_capabilities(host),
        "GetProfiles" => go2rtc_profiles(&["main", "sub"]),
        "GetStreamUri" => {
            let token = request
                .split_once("ProfileToken>")
                .and_then(|(_, rest)| rest.split('<').next())
                .unwrap();
            go2rtc_stream_uri(&format!(
                "rtsp://user:pass@{}:8554/{token}",
                host.split(':').next().unwrap()
            ))
        }
        "GetSystemDateAndTime" => go2rtc_date_and_time(2026, 11, 25, 2, 0, 0),
        other => panic!("unexpected action {other:?} in {request}"),
    };
    http("200 OK", "", &body)
}

#[test]
fn streams_from_go2rtc_over_http() {
    let host = Arc::new(Mutex::new(String::new()));
    let for_server = host.clone();
    let (base, seen) = serve(move |request| go2rtc_service(&for_server.lock().unwrap(), request));
    *host.lock().unwrap() = base.trim_start_matches("http://").to_owned();
    let address = format!("{base}/onvif/device_service");
    let streams = streams(&address, None, Duration::from_secs(5)).unwrap();
    assert_eq!(streams.make, "");
    assert_eq!(streams.model, "go2rtc");
    let uris: Vec<_> = streams
        .profiles
        .iter()
        .map(|p| (p.token.as_str(), p.uri.as_str()))
        .collect();
    assert_eq!(
        uris,
        [
            ("main", "rtsp://127.0.0.1:8554/main"),
            ("sub", "rtsp://127.0.0.1:8554/sub")
        ]
    );
    let seen = seen.lock().unwrap();
    let paths: Vec<_> = seen.iter().map(|r| r.lines().next().unwrap()).collect();
    assert_eq!(
        paths,
        [
            "POST /onvif/device_service HTTP/1.1",
            "POST /onvif/device_service HTTP/1.1",
            "POST /onvif/media_service HTTP/1.1",
            "POST /onvif/media_service HTTP/1.1",
            "POST /onvif/media_service HTTP/1.1",
        ]
    );
    assert!(
        seen[0].contains("Content-Type: application/soap+xml; charset=utf-8"),
        "{}",
        seen[0]
    );
    assert!(
        seen[3].contains("<tt:Stream>RTP-Unicast</tt:Stream>"),
        "{}",
        seen[3]
    );
    assert!(!seen[0].contains("Security"), "{}", seen[0]);
}

#[test]
fn a_media_service_on_another_host_is_not_called() {
    let host = Arc::new(Mutex::new(String::new()));
    let for_server = host.clone();
    let (base, seen) = serve(move |request| {
        if request.contains("GetCapabilities") {
            // The node's own relay, say.
            return http("200 OK", "", &go2rtc_capabilities("127.0.0.2:1984"));
        }
        go2rtc_service(&for_server.lock().unwrap(), request)
    });
    *host.lock().unwrap() = base.trim_start_matches("http://").to_owned();
    let address = format!("{base}/onvif/device_service");
    let credentials = Credentials {
        username: "admin".into(),
        password: "pw".into(),
    };
    let streams = streams(&address, Some(&credentials), Duration::from_secs(5)).unwrap();
    assert_eq!(streams.profiles.len(), 2);
    assert_eq!(
        serial_number(&address, Some(&credentials), Duration::from_secs(5)),
        Ok(Some("serial".to_owned()))
    );
    let seen = seen.lock().unwrap();
    assert!(
        seen.iter()
            .all(|r| r.starts_with("POST /onvif/device_service ")),
        "{seen:?}"
    );
}

#[test]
fn a_name_is_called_only_at_an_address_on_the_lan() {
    let (base, seen) = serve(|request| go2rtc_service("localhost", request));
    let port = base.rsplit(':').next().unwrap();
    // A name of this machine's own: refused when resolved, whatever the caller checked.
    let address = format!("http://localhost:{port}/onvif/device_service");
    assert_eq!(
        streams(&address, None, Duration::from_secs(5)),
        Err(OnvifError::Connect(
            "its host name names no address on the LAN".into()
        ))
    );
    assert!(seen.lock().unwrap().is_empty());
}

#[test]
fn streams_with_digest_after_401() {
    let host = Arc::new(Mutex::new(String::new()));
    let for_server = host.clone();
    let (base, seen) = serve(move |request| {
        // Like a camera that wants both WS-Security and HTTP Digest.
        if !request.contains("\r\nAuthorization: Digest ") {
            return http(
                "401 Unauthorized",
                "WWW-Authenticate: Basic realm=\"cam\"\r\nWWW-Authenticate: Digest realm=\"cam\", qop=\"auth\", nonce=\"abc123\", opaque=\"xyz\"\r\n",
                "",
            );
        }
        assert!(request.contains("PasswordDigest"), "{request}");
        go2rtc_service(&for_server.lock().unwrap(), request)
    });
    *host.lock().unwrap() = base.trim_start_matches("http://").to_owned();
    let credentials = Credentials {
        username: "admin".into(),
        password: "s3cret".into(),
    };
    let address = format!("{base}/onvif/device_service");
    let streams = streams(&address, Some(&credentials), Duration::from_secs(5)).unwrap();
    assert_eq!(streams.profiles.len(), 2);
    let seen = seen.lock().unwrap();
    // The clock asked first, unsigned (refused here), then each call retried once.
    assert_eq!(seen.len(), 11, "each call retried once");
    let retried = &seen[2];
    assert!(
        retried.contains(
            "username=\"admin\", realm=\"cam\", nonce=\"abc123\", uri=\"/onvif/device_service\""
        ),
        "{retried}"
    );
    assert!(
        retried.contains("qop=auth, nc=00000001, cnonce=\""),
        "{retried}"
    );
    assert!(retried.contains("opaque=\"xyz\""), "{retried}");
    assert!(
        seen.iter().all(|r| !r.contains("s3cret")),
        "the password never travels"
    );
}

#[test]
fn refusals_and_failures() {
    let credentials = Credentials {
        username: "admin".into(),
        password: "wrong".into(),
    };
    let timeout = Duration::from_secs(5);
    let run = |answer: fn(&str) -> String, credentials: Option<&Credentials>| {
        let (base, _) = serve(answer);
        streams(
            &format!("{base}/onvif/device_service"),
            credentials,
            timeout,
        )
        .unwrap_err()
    };
    // A Digest camera that refuses the retry too.
    let always_401: fn(&str) -> String = |_| {
        http(
            "401 Unauthorized",
            "WWW-Authenticate: Digest realm=\"c\", nonce=\"n\"\r\n",
            "",
        )
    };
    assert_eq!(run(always_401, Some(&credentials)), OnvifError::Refused);
    assert_eq!(run(always_401, None), OnvifError::Refused);
    let not_authorized: fn(&str) -> String = |_| {
        http(
            "400 Bad Request",
            "",
            r#"<env:Envelope xmlns:env="http://www.w3.org/2003/05/soap-envelope" xmlns:ter="http://www.onvif.org/ver10/error"><env:Body><env:Fault><env:Code><env:Value>env:Sender</env:Value><env:Subcode><env:Value>ter:NotAuthorized</env:Value></env:Subcode></env:Code><env:Reason><env:Text xml:lang="en">Sender not Authorized</env:Text></env:Reason></env:Fault></env:Body></env:Envelope>"#,
        )
    };
    assert_eq!(run(not_authorized, Some(&credentials)), OnvifError::Refused);
    let garbage: fn(&str) -> String = |_| http("200 OK", "", "<html><body>hello</body></html>");
    let error = run(garbage, None);
    assert_eq!(
        error.message(),
        "the camera's answer is not ONVIF: no SOAP Envelope"
    );
    let binary: fn(&str) -> String = |_| "\u{1}\u{2}garbage\r\n\r\n".into();
    assert!(matches!(run(binary, None), OnvifError::NotOnvif(_)));
    let not_found: fn(&str) -> String = |_| http("404 Not Found", "", "nope");
    assert_eq!(
        run(not_found, None).message(),
        "the camera answered HTTP 404"
    );
    let huge: fn(&str) -> String = |_| http("200 OK", "", &" ".repeat((1 << 20) + 1));
    assert_eq!(
        run(huge, None),
        OnvifError::NotOnvif("it is over 1 MiB".into())
    );
}

#[test]
fn silence_and_refused_connections() {
    // A listener that accepts and never answers.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let address = format!(
        "http://{}/onvif/device_service",
        listener.local_addr().unwrap()
    );
    let started = std::time::Instant::now();
    let error = streams(&address, None, Duration::from_millis(500)).unwrap_err();
    assert_eq!(error.message(), "the camera did not answer within 0.5 s");
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    drop(listener);
    let error = streams(&address, None, Duration::from_secs(5)).unwrap_err();
    assert_eq!(
        error.message(),
        "cannot connect to the camera: connection refused"
    );
}
