//! Tests of discovery.rs: the probe, ProbeMatches as the ONVIF Core spec
//! and cameras write them, and the gathering of answers over real sockets
//! on 127.0.0.1 (multicast itself needs a network namespace: the node's
//! integration test covers it).

use super::*;

const FROM: Ipv4Addr = Ipv4Addr::new(10, 213, 77, 1);

/// A ProbeMatches as in the ONVIF Core spec's discovery examples.
fn spec_match(relates_to: &str, endpoint: &str, xaddrs: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<SOAP-ENV:Envelope xmlns:SOAP-ENV="http://www.w3.org/2003/05/soap-envelope" xmlns:wsa="http://schemas.xmlsoap.org/ws/2004/08/addressing" xmlns:d="http://schemas.xmlsoap.org/ws/2005/04/discovery" xmlns:dn="http://www.onvif.org/ver10/network/wsdl">
<SOAP-ENV:Header>
<wsa:MessageID>uuid:8fa5c6a3-7d3e-4b10-9b0e-3f1b9d7c2a55</wsa:MessageID>
<wsa:RelatesTo>{relates_to}</wsa:RelatesTo>
<wsa:To SOAP-ENV:mustUnderstand="true">http://schemas.xmlsoap.org/ws/2004/08/addressing/role/anonymous</wsa:To>
<wsa:Action SOAP-ENV:mustUnderstand="true">http://schemas.xmlsoap.org/ws/2005/04/discovery/ProbeMatches</wsa:Action>
<d:AppSequence SOAP-ENV:mustUnderstand="true" MessageNumber="68" InstanceId="1077004800"/>
</SOAP-ENV:Header>
<SOAP-ENV:Body>
<d:ProbeMatches>
<d:ProbeMatch>
<wsa:EndpointReference><wsa:Address>{endpoint}</wsa:Address></wsa:EndpointReference>
<d:Types>dn:NetworkVideoTransmitter</d:Types>
<d:Scopes>onvif://www.onvif.org/type/video_encoder onvif://www.onvif.org/location/country/china
onvif://www.onvif.org/name/Front%20Porch_1 onvif://www.onvif.org/hardware/X1%2B onvif://www.onvif.org/mfr/Acme</d:Scopes>
<d:XAddrs>{xaddrs}</d:XAddrs>
<d:MetadataVersion>1</d:MetadataVersion>
</d:ProbeMatch>
</d:ProbeMatches>
</SOAP-ENV:Body>
</SOAP-ENV:Envelope>"#
    )
}

/// A camera's own style: wsdd:/wsadis:/SOAP-ENV bound differently, two matches.
fn camera_matches(relates_to: &str) -> String {
    format!(
        r#"<?xml version="1.0" encoding="UTF-8"?>
<env:Envelope xmlns:env="http://www.w3.org/2003/05/soap-envelope" xmlns:wsadis="http://schemas.xmlsoap.org/ws/2004/08/addressing" xmlns:wsdd="http://schemas.xmlsoap.org/ws/2005/04/discovery">
<env:Header><wsadis:RelatesTo>{relates_to}</wsadis:RelatesTo></env:Header>
<env:Body><wsdd:ProbeMatches>
<wsdd:ProbeMatch><wsadis:EndpointReference><wsadis:Address>urn:uuid:one</wsadis:Address></wsadis:EndpointReference>
<wsdd:Scopes>onvif://www.onvif.org/MANUFACTURER/Hik%20Vision ONVIF://www.onvif.org/name/</wsdd:Scopes>
<wsdd:XAddrs>http://0.0.0.0:8080/onvif/device_service</wsdd:XAddrs></wsdd:ProbeMatch>
<d:ProbeMatch xmlns:d="http://schemas.xmlsoap.org/ws/2005/04/discovery"><wsadis:EndpointReference><wsadis:Address>urn:uuid:two</wsadis:Address></wsadis:EndpointReference>
<d:XAddrs>  </d:XAddrs></d:ProbeMatch>
</wsdd:ProbeMatches></env:Body></env:Envelope>"#
    )
}

#[test]
fn probe_carries_type_and_fresh_message_id() {
    let (first, second) = (message_id(), message_id());
    assert_ne!(first, second);
    assert!(
        first.starts_with("urn:uuid:") && first.len() == 45,
        "{first}"
    );
    let root = xml::parse(&probe(&first)).unwrap();
    assert!(root.is(SOAP_ENVELOPE, "Envelope"));
    let header = root.child(SOAP_ENVELOPE, "Header").unwrap();
    assert_eq!(header.child(WSA, "MessageID").unwrap().text(), first);
    assert_eq!(
        header.child(WSA, "Action").unwrap().text(),
        "http://schemas.xmlsoap.org/ws/2005/04/discovery/Probe"
    );
    let types = root
        .path(&[(SOAP_ENVELOPE, "Body"), (WSD, "Probe"), (WSD, "Types")])
        .unwrap();
    assert_eq!(types.text(), "dn:NetworkVideoTransmitter");
    assert_eq!(types.declares("dn"), Some(DN));
}

#[test]
fn spec_probe_match() {
    let answer = spec_match(
        "urn:uuid:ours",
        "urn:uuid:5f0c2a4e-0000-4000-8000-000000000001",
        "http://169.254.76.145/onvif/services http://10.213.77.1/onvif/services",
    );
    let found = probe_matches(&answer, "urn:uuid:ours", FROM).unwrap();
    assert_eq!(
        found,
        [Found {
            endpoint: "urn:uuid:5f0c2a4e-0000-4000-8000-000000000001".into(),
            address: FROM,
            services: vec![
                "http://169.254.76.145/onvif/services".into(),
                "http://10.213.77.1/onvif/services".into()
            ],
            name: Some("Front Porch_1".into()),
            make: Some("Acme".into()),
            model: Some("X1+".into()),
        }]
    );
    assert_eq!(
        probe_matches(&answer, "urn:uuid:theirs", FROM),
        None,
        "another probe's answer"
    );
}

#[test]
fn camera_style_probe_matches() {
    let found = probe_matches(&camera_matches("urn:uuid:ours"), "urn:uuid:ours", FROM).unwrap();
    // The second match has no XAddrs: dropped.
    assert_eq!(
        found,
        [Found {
            endpoint: "urn:uuid:one".into(),
            address: FROM,
            services: vec!["http://10.213.77.1:8080/onvif/device_service".into()],
            name: None,
            make: Some("Hik Vision".into()),
            model: None,
        }]
    );
}

#[test]
fn answers_that_are_skipped() {
    let id = "urn:uuid:ours";
    let cases = [
        String::new(),
        "garbage".into(),
        "<not-closed>".into(),
        spec_match(id, "urn:uuid:x", "")
            .replace("http://www.w3.org/2003/05/soap-envelope", "urn:x"),
        spec_match(id, "urn:uuid:x", ""),
        spec_match(id, "", "http://a/"),
        spec_match("", "urn:uuid:x", "http://a/"),
        spec_match(id, "urn:uuid:x", "http://a/").replace("ProbeMatches>", "ResolveMatches>"),
        camera_matches(id).replace(
            "<env:Header><wsadis:RelatesTo>urn:uuid:ours</wsadis:RelatesTo></env:Header>",
            "",
        ),
        format!(
            "<!DOCTYPE x [<!ENTITY a \"b\">]>{}",
            spec_match(id, "urn:uuid:x", "http://a/")
        ),
    ];
    for answer in cases {
        let mut discovery = empty();
        add(&mut discovery, &answer, id, FROM);
        assert_eq!(discovery.skipped, 1, "{answer}");
        assert!(discovery.devices.is_empty());
    }
}

fn empty() -> Discovery {
    Discovery {
        devices: Vec::new(),
        skipped: 0,
        truncated: false,
        interfaces: Vec::new(),
    }
}

#[test]
fn dedup_merges_services_and_truncates() {
    let id = "urn:uuid:ours";
    let mut discovery = empty();
    add(
        &mut discovery,
        &spec_match(id, "urn:uuid:a", "http://10.213.77.1/onvif"),
        id,
        FROM,
    );
    add(
        &mut discovery,
        &spec_match(id, "urn:uuid:a", "http://b/ http://10.213.77.1/onvif"),
        id,
        FROM,
    );
    assert_eq!(discovery.devices.len(), 1);
    assert_eq!(
        discovery.devices[0].services,
        ["http://10.213.77.1/onvif", "http://b/"]
    );
    // The same endpoint reference from another address is another device.
    let other = Ipv4Addr::new(10, 213, 77, 9);
    add(
        &mut discovery,
        &spec_match(id, "urn:uuid:a", "http://10.213.77.9/onvif"),
        id,
        other,
    );
    assert_eq!(discovery.devices.len(), 2);
    assert_eq!(
        (discovery.devices[1].address, &discovery.devices[1].services),
        (other, &vec!["http://10.213.77.9/onvif".to_owned()])
    );
    for i in 0..300 {
        add(
            &mut discovery,
            &spec_match(id, &format!("urn:uuid:{i}"), "http://c/"),
            id,
            FROM,
        );
    }
    assert_eq!(discovery.devices.len(), MAX_DEVICES);
    assert!(discovery.truncated);
    assert_eq!(discovery.skipped, 0);
}

#[test]
fn a_device_keeps_at_most_8_service_addresses_of_bounded_length() {
    let id = "urn:uuid:ours";
    let mut discovery = empty();
    let long = format!("http://10.213.77.1/{}", "a".repeat(MAX_ADDRESS_LEN));
    let many: Vec<String> = (0..12)
        .map(|i| format!("http://10.213.77.1/s{i}"))
        .collect();
    add(
        &mut discovery,
        &spec_match(id, "urn:uuid:a", &format!("{long} {}", many[..6].join(" "))),
        id,
        FROM,
    );
    add(
        &mut discovery,
        &spec_match(id, "urn:uuid:a", &many[6..].join(" ")),
        id,
        FROM,
    );
    assert_eq!(discovery.devices[0].services, many[..MAX_SERVICES]);
    // An endpoint reference too long to be one is no device.
    add(
        &mut discovery,
        &spec_match(
            id,
            &format!("urn:uuid:{}", "b".repeat(MAX_ADDRESS_LEN)),
            &many[0],
        ),
        id,
        FROM,
    );
    assert_eq!(discovery.devices.len(), 1);
    assert_eq!(discovery.skipped, 1);
}

#[test]
fn percent_decoding() {
    for (raw, decoded) in [
        ("Front%20Porch", "Front Porch"),
        ("a_b+c", "a_b+c"),
        ("%e6%97%a5", "日"),
        ("100%", "100%"),
        ("%zz%2", "%zz%2"),
        ("%+1x", "%+1x"),
        ("%ff", "\u{fffd}"),
    ] {
        assert_eq!(percent_decoded(raw), decoded, "{raw}");
    }
}

#[test]
fn gathers_answers_from_sockets() {
    // A socket as discover() makes, answered by unicast datagrams on 127.0.0.1.
    let listening = UdpSocket::bind("127.0.0.1:0").unwrap();
    let target = listening.local_addr().unwrap();
    let id = message_id();
    let camera = UdpSocket::bind("127.0.0.1:0").unwrap();
    std::thread::scope(|scope| {
        scope.spawn(|| {
            std::thread::sleep(Duration::from_millis(50));
            camera.send_to(b"not xml at all", target).unwrap();
            let answer = spec_match(
                &id,
                "urn:uuid:cam",
                "http://0.0.0.0:1984/onvif/device_service",
            );
            camera.send_to(answer.as_bytes(), target).unwrap();
            camera.send_to(&[0xff; 100], target).unwrap();
        });
        let mut discovery = empty();
        let started = Instant::now();
        gather(
            std::slice::from_ref(&listening),
            &id,
            Duration::from_millis(400),
            &mut discovery,
        );
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(400) && took < Duration::from_secs(2),
            "{took:?}"
        );
        assert_eq!(discovery.skipped, 2);
        assert_eq!(discovery.devices.len(), 1);
        assert_eq!(
            discovery.devices[0].services,
            ["http://127.0.0.1:1984/onvif/device_service"]
        );
    });
}

#[test]
fn interfaces_are_ipv4_up_and_not_loopback() {
    let all = interfaces(&[]);
    for interface in &all {
        assert!(!interface.address.is_loopback(), "{interface:?}");
        assert_ne!(interface.name, "lo");
    }
    let mut sorted = all.clone();
    sorted.sort_by(|a, b| a.name.cmp(&b.name));
    assert_eq!(all, sorted);
    assert!(interfaces(&["lo".into()]).is_empty());
    assert!(interfaces(&["no-such-interface".into()]).is_empty());
    if let Some(first) = all.first() {
        let only = interfaces(std::slice::from_ref(&first.name));
        assert!(only.iter().all(|i| i.name == first.name) && !only.is_empty());
    }
}

#[test]
fn discover_without_a_usable_interface() {
    // An address no interface here has: binding fails, so nothing is sent.
    let nowhere = Interface {
        name: "nowhere".into(),
        address: Ipv4Addr::new(203, 0, 113, 7),
    };
    let started = Instant::now();
    let discovery = discover(&[nowhere], Duration::from_millis(300));
    assert!(started.elapsed() < Duration::from_millis(250));
    assert!(discovery.interfaces.is_empty() && discovery.devices.is_empty());
    assert_eq!(discovery.skipped, 0);
}
