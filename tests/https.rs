//! HTTPS (`HTTPS_PORT`): the same API over TLS 1.3 with a certificate given
//! or the node's own, under the same guards and request deadline, checked
//! with curl and openssl and a TLS client of the tests' own.

use std::io::Read;
use std::net::TcpStream;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::system::stdout_of;
use crate::common::{Node, TempDir, closed_port, now_ms, tls};

/// Time within which a client must have sent a whole request (the node's
/// `LIMITS.request_timeout`).
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

fn start_node(data: &Path, extra: &[(&str, &str)]) -> Node {
    let relay = format!("http://127.0.0.1:{}", closed_port());
    let mut vars = vec![("HTTPS_PORT", "0")];
    vars.extend_from_slice(extra);
    Node::start(data, &relay, &vars)
}

/// An authority and a server certificate it signed for 127.0.0.1, made with
/// the openssl program in `dir`: `(ca, cert, key)`, the key ECDSA P-256.
fn openssl_certificate(dir: &Path) -> (PathBuf, PathBuf, PathBuf) {
    let openssl = |args: &[&str]| {
        stdout_of(Command::new("openssl").args(args).current_dir(dir));
    };
    let ec = [
        "-newkey",
        "ec",
        "-pkeyopt",
        "ec_paramgen_curve:prime256v1",
        "-nodes",
    ];
    let ca = ["req", "-x509", "-days", "2", "-subj", "/CN=test CA"];
    openssl(&[&ca[..], &ec, &["-keyout", "ca.key", "-out", "ca.crt"]].concat());
    let csr = ["req", "-new", "-subj", "/CN=127.0.0.1"];
    openssl(
        &[
            &csr[..],
            &ec,
            &["-keyout", "server.key", "-out", "server.csr"],
        ]
        .concat(),
    );
    std::fs::write(
        dir.join("ext"),
        "subjectAltName = IP:127.0.0.1\nextendedKeyUsage = serverAuth\n",
    )
    .unwrap();
    openssl(&[
        "x509",
        "-req",
        "-days",
        "2",
        "-set_serial",
        "1",
        "-in",
        "server.csr",
        "-CA",
        "ca.crt",
        "-CAkey",
        "ca.key",
        "-extfile",
        "ext",
        "-out",
        "server.crt",
    ]);
    (
        dir.join("ca.crt"),
        dir.join("server.crt"),
        dir.join("server.key"),
    )
}

/// curl's answer to `url` (with `args` first), its body and its verbose
/// log; panics with the command, its output and status unless it succeeds.
fn curl(args: &[&str], url: &str) -> (String, String) {
    let mut command = Command::new("curl");
    command.args(["-sS", "-v", "--max-time", "20", "--fail-with-body"]);
    command.args(args).arg(url);
    let description = format!("{command:?}");
    let out = command
        .output()
        .unwrap_or_else(|e| panic!("cannot run {description} (Debian package curl): {e}"));
    let (body, log) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        out.status.success(),
        "{description}: {}\nstdout:\n{body}\nstderr:\n{log}",
        out.status
    );
    (body, log)
}

/// The status over HTTPS (by curl) and over HTTP, taken until a pair
/// agrees: a change between the two (a camera's check) makes a new body.
fn same_status_both_ways(node: &Node, curl_args: &[&str], url: &str) -> (String, String) {
    let mut pairs = Vec::new();
    for _ in 0..5 {
        let (over_tls, log) = curl(curl_args, url);
        let over_http = node.get("/api/status").text();
        if over_tls == over_http {
            return (over_tls, log);
        }
        pairs.push((over_tls, over_http));
    }
    panic!("the status over HTTPS is never the one over HTTP: {pairs:#?}");
}

#[test]
fn a_given_certificate_serves_the_same_api_over_tls_1_3_only() {
    let dir = TempDir::new("https-given");
    let (ca, cert, key) = openssl_certificate(dir.path());
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let data = dir.path().join("data");
    let node = start_node(&data, &[("TLS_CERT_FILE", &cert), ("TLS_KEY_FILE", &key)]);
    let port = node.https_port.expect("the node printed its https line");
    let url = format!("https://127.0.0.1:{port}/api/status");
    let ca = ca.display().to_string();

    let (body, log) = same_status_both_ways(&node, &["--tlsv1.3", "--cacert", &ca], &url);
    assert!(log.contains("SSL connection using TLSv1.3"), "{log}");
    let status: serde_json::Value = serde_json::from_str(&body).unwrap();
    assert_eq!(status["https"]["port"], port, "{status}");
    assert_eq!(status["https"]["certificate"], "given", "{status}");
    // openssl made it for 2 days.
    let expires = crate::common::ms(status["https"]["expiresAt"].as_str().unwrap());
    let two_days = now_ms() + 2 * 24 * 3600 * 1000;
    assert!((expires - two_days).abs() < 600_000, "{status}");
    assert!(
        !data.join("tls").exists(),
        "the node made a certificate of its own"
    );

    // Nothing older than TLS 1.3.
    let old = Command::new("curl")
        .args(["-sS", "--tls-max", "1.2", "--cacert", &ca, &url])
        .output()
        .unwrap();
    assert!(!old.status.success(), "TLS 1.2 was answered: {old:?}");

    let config = tls::client(&std::fs::read(&ca).unwrap());
    let authority = tls::request(&config, port, "GET", "/api/tls/ca.crt", &[], b"");
    assert_eq!(authority.status, 404, "{authority}");
    assert!(authority.error().contains("TLS_CERT_FILE"), "{authority}");
}

#[test]
fn the_host_and_origin_guards_apply_over_https() {
    let dir = TempDir::new("https-guards");
    let (ca, cert, key) = openssl_certificate(dir.path());
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let node = start_node(
        &dir.path().join("data"),
        &[("TLS_CERT_FILE", &cert), ("TLS_KEY_FILE", &key)],
    );
    let port = node.https_port.unwrap();
    let config = tls::client(&std::fs::read(&ca).unwrap());
    let here = format!("127.0.0.1:{port}");
    let json = ("Content-Type", "application/json");

    let rebound = tls::request(
        &config,
        port,
        "GET",
        "/api/status",
        &[("Host", "evil.example")],
        b"",
    );
    assert_eq!(rebound.status, 403, "{rebound}");
    let foreign = [json, ("Origin", "https://evil.example")];
    let cross_site = tls::request(&config, port, "POST", "/api/cameras", &foreign, b"{}");
    assert_eq!(cross_site.status, 403, "{cross_site}");
    // The node's own page, over HTTPS, passes (and its empty camera is refused).
    let origin = format!("https://{here}");
    let own = [json, ("Origin", origin.as_str())];
    let same_site = tls::request(&config, port, "POST", "/api/cameras", &own, b"{}");
    assert_eq!(same_site.status, 400, "{same_site}");
    let status = tls::request(&config, port, "GET", "/api/status", &[], b"");
    assert_eq!(status.status, 200, "{status}");
}

/// How a client of the TLS port behaves once connected.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Manner {
    /// Sends nothing, not even a handshake.
    Silent,
    /// Sends its ClientHello a byte a second, never finishing it.
    DribblingHandshake,
    /// Makes the handshake, then sends no request.
    IdleAfterHandshake,
}

/// Connects to the TLS port and behaves in `manner` until the node hangs
/// up; returns how long the connection lasted and the plain text the node
/// sent (over TLS, once the handshake is made).
fn linger(
    config: &std::sync::Arc<rustls::ClientConfig>,
    port: u16,
    manner: Manner,
) -> (Duration, String) {
    let started = Instant::now();
    let give_up = REQUEST_TIMEOUT + Duration::from_secs(10);
    let mut received = Vec::new();
    if manner == Manner::IdleAfterHandshake {
        let mut stream = tls::connect(config, port, "127.0.0.1");
        stream
            .conn
            .complete_io(&mut stream.sock)
            .expect("the handshake");
        stream.sock.set_read_timeout(Some(give_up)).unwrap();
        let _ = stream.read_to_end(&mut received);
        return (
            started.elapsed(),
            String::from_utf8_lossy(&received).into_owned(),
        );
    }
    let mut tcp = TcpStream::connect(("127.0.0.1", port)).unwrap();
    let mut hello = Vec::new();
    let name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let mut client = rustls::ClientConnection::new(config.clone(), name).unwrap();
    client.write_tls(&mut hello).unwrap();
    let dribble = (manner == Manner::DribblingHandshake).then_some(hello.into_iter());
    crate::common::http::linger_on(&mut tcp, dribble, started, give_up)
}

#[test]
fn tls_clients_that_send_no_request_are_let_go_at_the_30_s_deadline() {
    let dir = TempDir::new("https-deadline");
    let (ca, cert, key) = openssl_certificate(dir.path());
    let (cert, key) = (cert.display().to_string(), key.display().to_string());
    let node = start_node(
        &dir.path().join("data"),
        &[("TLS_CERT_FILE", &cert), ("TLS_KEY_FILE", &key)],
    );
    let port = node.https_port.unwrap();
    let config = tls::client(&std::fs::read(&ca).unwrap());
    let manners = [
        Manner::Silent,
        Manner::DribblingHandshake,
        Manner::IdleAfterHandshake,
    ];
    let clients: Vec<_> = manners
        .into_iter()
        .map(|manner| {
            let config = config.clone();
            std::thread::spawn(move || (manner, linger(&config, port, manner)))
        })
        .collect();
    for client in clients {
        let (manner, (lasted, received)) = client.join().unwrap();
        assert!(
            lasted >= REQUEST_TIMEOUT - Duration::from_secs(1)
                && lasted <= REQUEST_TIMEOUT + Duration::from_secs(1),
            "a {manner:?} client was let go after {lasted:?}, not at the 30 s deadline"
        );
        if manner == Manner::IdleAfterHandshake {
            assert!(
                received.starts_with("HTTP/1.1 408 "),
                "an idle TLS client was sent {received:?}, not a 408"
            );
        }
    }
    let status = tls::request(&config, port, "GET", "/api/status", &[], b"");
    assert_eq!(status.status, 200, "{status}");
}

/// The machine's host name, as the node reads it.
fn host_name() -> String {
    let name = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
    name.trim().to_ascii_lowercase()
}

/// Each file of `dir` and its mode's permission bits.
fn modes(dir: &Path) -> Vec<(String, u32)> {
    let mut files: Vec<(String, u32)> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let mode = e.metadata().unwrap().permissions().mode() & 0o777;
            (e.file_name().to_string_lossy().into_owned(), mode)
        })
        .collect();
    files.sort();
    files
}

#[test]
fn the_nodes_own_certificate_is_trusted_through_its_authority_which_a_restart_keeps() {
    let dir = TempDir::new("https-own");
    let data = dir.path().join("data");
    let node = start_node(&data, &[]);
    let port = node.https_port.unwrap();

    let authority = node.get("/api/tls/ca.crt");
    assert_eq!(authority.status, 200, "{authority}");
    assert_eq!(
        authority.header("Content-Type"),
        Some("application/x-x509-ca-cert")
    );
    assert_eq!(
        authority.header("Content-Disposition"),
        Some("attachment; filename=\"nvr-node-ca.crt\"")
    );
    let ca = dir.path().join("downloaded-ca.crt");
    std::fs::write(&ca, &authority.body).unwrap();
    let text = stdout_of(
        Command::new("openssl")
            .args(["x509", "-noout", "-text", "-in"])
            .arg(&ca),
    );
    assert!(text.contains("X509v3 Name Constraints: critical"), "{text}");
    assert!(text.contains("CA:TRUE"), "{text}");

    let host = host_name();
    let mut names = vec![host.clone()];
    if !host.contains('.') {
        names.push(format!("{host}.local"));
    }
    let ca = ca.display().to_string();
    for name in &names {
        let resolve = format!("{name}:{port}:127.0.0.1");
        let url = format!("https://{name}:{port}/api/status");
        let (body, log) = curl(&["--tlsv1.3", "--cacert", &ca, "--resolve", &resolve], &url);
        assert!(log.contains("SSL connection using TLSv1.3"), "{log}");
        let status: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert_eq!(status["https"]["certificate"], "own", "{status}");
        assert_eq!(status["https"]["port"], port, "{status}");
    }

    let tls_dir = data.join("tls");
    let folder_mode = std::fs::metadata(&tls_dir).unwrap().permissions().mode() & 0o777;
    assert_eq!(folder_mode, 0o700);
    let files = ["ca.crt", "ca.key", "server.crt", "server.key"];
    let want: Vec<(String, u32)> = files.iter().map(|f| (f.to_string(), 0o600)).collect();
    assert_eq!(modes(&tls_dir), want);
    let server = std::fs::read(tls_dir.join("server.crt")).unwrap();
    // Neither key is in the log, whole or in part.
    for key in ["ca.key", "server.key"] {
        let pem = std::fs::read_to_string(tls_dir.join(key)).unwrap();
        let logs = node.logs();
        for line in pem.lines().filter(|l| !l.starts_with("-----")) {
            assert!(!logs.contains(line), "a line of {key} is in the log");
        }
        assert!(!logs.contains("PRIVATE KEY"), "{logs}");
    }

    node.terminate();
    assert_eq!(node.wait(), Some(0));
    let node = start_node(&data, &[]);
    let again = node.get("/api/tls/ca.crt");
    assert_eq!(again.body, authority.body, "a restart made a new authority");
    assert_eq!(std::fs::read(tls_dir.join("server.crt")).unwrap(), server);
    let port = node.https_port.unwrap();
    let resolve = format!("{host}:{port}:127.0.0.1");
    curl(
        &["--cacert", &ca, "--resolve", &resolve],
        &format!("https://{host}:{port}/api/status"),
    );
}

#[test]
fn https_settings_that_cannot_work_stop_the_start_naming_the_variable() {
    let dir = TempDir::new("https-refused");
    let (_, cert, _) = openssl_certificate(dir.path());
    let rsa = dir.path().join("rsa.key");
    stdout_of(
        Command::new("openssl")
            .args(["genrsa", "-out"])
            .arg(&rsa)
            .arg("2048"),
    );
    let cert = cert.display().to_string();
    let rsa = rsa.display().to_string();
    let cases: [(&[(&str, &str)], &str); 3] = [
        (
            &[("HTTPS_PORT", "0"), ("TLS_CERT_FILE", &cert)],
            "TLS_CERT_FILE is set without TLS_KEY_FILE",
        ),
        (
            &[("TLS_CERT_FILE", &cert), ("TLS_KEY_FILE", &rsa)],
            "TLS_CERT_FILE and TLS_KEY_FILE are set without HTTPS_PORT",
        ),
        (
            &[
                ("HTTPS_PORT", "0"),
                ("TLS_CERT_FILE", &cert),
                ("TLS_KEY_FILE", &rsa),
            ],
            "openssl ecparam -name prime256v1",
        ),
    ];
    for (vars, said) in cases {
        let mut command = Command::new(env!("CARGO_BIN_EXE_nvr-node"));
        command
            .env_clear()
            .env("PORT", "0")
            .env("LISTEN_ADDRESS", "127.0.0.1")
            .env("DATA_DIR", dir.path().join("data"))
            .envs(vars.iter().copied());
        let out = command.output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            !out.status.success() && stderr.contains(said),
            "{command:?}: {}, stderr:\n{stderr}\nnot saying {said:?}",
            out.status
        );
    }
}
