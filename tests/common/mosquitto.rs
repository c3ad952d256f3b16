//! Test harness around a real mosquitto 2.0.11 broker and the stock
//! `mosquitto_pub` / `mosquitto_sub` clients (Debian packages `mosquitto` and
//! `mosquitto-clients`), std only.
//!
//! * [`Broker`] runs `mosquitto -c <conf>` in the foreground, listening on
//!   127.0.0.1 only at a free port, with a password file and
//!   `allow_anonymous false`, optionally TLS with a throw-away CA. Dropping it
//!   kills (SIGKILL) and reaps the process.
//! * `persistence false`: retained messages live in broker memory only, so
//!   [`Broker::restart`] and [`Broker::stop`] lose them all.
//! * Readiness is read from the broker's own log (`log_type all`, stderr):
//!   "... running" once the listener is open, "Sending SUBACK to <client id>"
//!   once a subscription exists. mosquitto_sub's own `-d` output cannot be
//!   used: its stdout is block-buffered on a pipe, so the SUBACK line only
//!   shows up when the first message arrives.
//! * Messages are printed by mosquitto_sub as `-F '%r %x %t'` (retain flag, hex
//!   payload, topic), so any payload round-trips exactly. Topics containing a
//!   newline are not supported.
//! * A missing tool panics naming its Debian package; every failure message
//!   carries the command line and its output.

use std::ffi::OsString;
use std::fmt;
use std::fs;
use std::io::{BufRead, BufReader, ErrorKind, Read, Write};
use std::net::{Ipv4Addr, SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::{self, JoinHandle};
use std::time::{Duration, Instant};

/// How long to wait for the broker to listen or a subscription to be acknowledged.
const READY_TIMEOUT: Duration = Duration::from_secs(10);
/// Another process may grab the port between our probe and mosquitto's bind.
const PORT_ATTEMPTS: usize = 5;
/// mosquitto_sub output format: retain flag, hex payload, topic (last, so it may contain spaces).
const FORMAT: &str = "%r %x %t";
/// mosquitto_sub exit code for `-W` expiring ("Timed out").
const EXIT_TIMED_OUT: i32 = 27;

type Buf = Arc<Mutex<Vec<u8>>>;

/// A mosquitto broker owned by one test.
pub struct Broker {
    pub port: u16,
    /// CA certificate (PEM) that signed the server certificate; `Some` for TLS brokers.
    pub ca_file: Option<PathBuf>,
    pub user: String,
    pub password: String,
    conf: PathBuf,
    proc: Option<Proc>,
    /// Log offset where the current broker process's output starts.
    started_at: usize,
    /// Its port while it is stopped, that no other test's broker takes it.
    held: Option<super::HeldPort>,
    /// Broker stderr across all (re)starts, with harness marker lines between them.
    log: Buf,
}

impl Broker {
    /// Plain MQTT broker on 127.0.0.1, accepting only `user`/`password`; files go in `dir`.
    pub fn start(dir: &Path, user: &str, password: &str) -> Broker {
        Self::launch(dir, user, password, false)
    }

    /// Like [`Broker::start`] but MQTT over TLS, with a fresh CA ([`Broker::ca_file`]) and a
    /// server certificate for `127.0.0.1` (IP SAN) and `localhost` (DNS SAN).
    pub fn start_tls(dir: &Path, user: &str, password: &str) -> Broker {
        Self::launch(dir, user, password, true)
    }

    fn launch(dir: &Path, user: &str, password: &str, tls: bool) -> Broker {
        // mosquitto resolves relative paths in its conf against its cwd, not ours.
        let dir = std::path::absolute(dir).expect("absolute test dir");
        fs::create_dir_all(&dir).unwrap_or_else(|e| panic!("create {}: {e}", dir.display()));
        let passwd = dir.join("passwd");
        let mut cmd = command("mosquitto_passwd");
        cmd.arg("-b").arg("-c").arg(&passwd).arg(user).arg(password);
        run(cmd);
        let tls_files = tls.then(|| make_certs(&dir));
        let mut broker = Broker {
            port: 0,
            ca_file: tls_files.as_ref().map(|t| t[0].clone()),
            user: user.to_string(),
            password: password.to_string(),
            conf: dir.join("mosquitto.conf"),
            proc: None,
            started_at: 0,
            held: None,
            log: Buf::default(),
        };
        for attempt in 1..=PORT_ATTEMPTS {
            // Free a moment ago; mosquitto may still lose a race for it.
            broker.port = super::free_port();
            write_conf(&broker.conf, &passwd, broker.port, tls_files.as_ref());
            match broker.spawn() {
                Ok(()) => return broker,
                Err(e) if attempt < PORT_ATTEMPTS && e.contains("Address already in use") => {}
                Err(e) => panic!("{e}"),
            }
        }
        unreachable!()
    }

    /// Starts mosquitto with the existing conf and waits until it accepts connections.
    fn spawn(&mut self) -> Result<(), String> {
        let since = self.log.lock().unwrap().len();
        let mut cmd = command("mosquitto");
        cmd.arg("-c").arg(&self.conf).stdout(Stdio::null());
        let mut proc = Proc::spawn(cmd, self.log.clone());
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, self.port));
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            if let Ok(Some(status)) = proc.child.try_wait() {
                let cmd = std::mem::take(&mut proc.cmd);
                drop(proc); // joins the drain thread so the log is complete
                return Err(format!(
                    "{cmd} exited ({status}), port {}\n--- log ---\n{}",
                    self.port,
                    self.log_since(since)
                ));
            }
            // "running" is logged after the listener is open; the connect double-checks it.
            if self.log_since(since).contains(" running\n")
                && TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok()
            {
                self.proc = Some(proc);
                self.started_at = since;
                return Ok(());
            }
            if Instant::now() > deadline {
                let cmd = std::mem::take(&mut proc.cmd);
                drop(proc);
                panic!(
                    "{cmd} did not accept connections on {addr} within {READY_TIMEOUT:?}\n--- log ---\n{}",
                    self.log_since(since)
                );
            }
            thread::sleep(Duration::from_millis(20));
        }
    }

    /// Kills the broker with SIGKILL and reaps it, and holds its port until it
    /// starts again. Retained messages are lost.
    pub fn stop(&mut self) {
        if let Some(proc) = self.proc.take() {
            drop(proc); // kill, reap, and collect the last log lines first
            self.held = super::HeldPort::hold("127.0.0.1", self.port);
            self.log
                .lock()
                .unwrap()
                .extend_from_slice(b"--- harness: broker killed (SIGKILL) ---\n");
        }
    }

    /// Starts a stopped broker again on the same port with the same config.
    pub fn start_again(&mut self) {
        assert!(
            self.proc.is_none(),
            "start_again: broker on port {} is still running",
            self.port
        );
        self.held = None;
        let deadline = Instant::now() + READY_TIMEOUT;
        loop {
            match self.spawn() {
                Ok(()) => return,
                // mosquitto sets SO_REUSEADDR so this should not happen; tolerate a brief holder.
                Err(e) if e.contains("Address already in use") && Instant::now() < deadline => {
                    thread::sleep(Duration::from_millis(100))
                }
                Err(e) => panic!("restarting on the same port failed: {e}"),
            }
        }
    }

    /// `stop` then `start_again`: same port and config, no retained messages left.
    pub fn restart(&mut self) {
        self.stop();
        self.start_again();
    }

    /// Everything the broker has logged so far (all restarts), lossily decoded.
    pub fn log(&self) -> String {
        self.log_since(0)
    }

    fn log_since(&self, offset: usize) -> String {
        String::from_utf8_lossy(&self.log.lock().unwrap()[offset..]).into_owned()
    }

    /// Client connection arguments (host, port, credentials, CA for TLS).
    fn client_args(&self, user: &str, password: &str) -> Vec<OsString> {
        let mut args: Vec<OsString> = [
            "-h",
            "127.0.0.1",
            "-p",
            &self.port.to_string(),
            "-u",
            user,
            "-P",
            password,
        ]
        .map(OsString::from)
        .into();
        if let Some(ca) = &self.ca_file {
            args.extend([OsString::from("--cafile"), ca.clone().into_os_string()]);
        }
        args
    }

    /// Publishes at QoS 1 (so the broker has handled it on return); panics on failure.
    pub fn publish(&self, topic: &str, payload: &[u8], retain: bool) {
        if let Err(e) = self.try_publish_as(&self.user, &self.password, topic, payload, retain) {
            panic!("{e}");
        }
    }

    /// Publishes with explicit credentials; `Err` holds the command and its output.
    pub fn try_publish_as(
        &self,
        user: &str,
        password: &str,
        topic: &str,
        payload: &[u8],
        retain: bool,
    ) -> Result<(), String> {
        let mut cmd = command("mosquitto_pub");
        cmd.args(self.client_args(user, password))
            .args(["-q", "1", "-t", topic]);
        if retain {
            cmd.arg("-r");
        }
        // -s reads the whole of stdin as one binary-safe payload; -n sends an empty one.
        cmd.arg(if payload.is_empty() { "-n" } else { "-s" });
        cmd.stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = spawn(&mut cmd);
        let mut stdin = child.stdin.take().unwrap();
        let data = payload.to_vec();
        // Separate thread: a refused mosquitto_pub may exit without reading it all.
        let writer = thread::spawn(move || {
            let _ = stdin.write_all(&data);
        });
        let out = child
            .wait_with_output()
            .unwrap_or_else(|e| panic!("wait for {cmd:?}: {e}"));
        let _ = writer.join();
        match out.status.success() {
            true => Ok(()),
            false => Err(failure(&cmd, out.status, &out.stdout, &out.stderr)),
        }
    }

    /// A `mosquitto_pub -l` on `topic` at QoS 1: each line given to
    /// [`Lines::send`] is one message, sent as it comes (no new process each).
    pub fn lines(&self, topic: &str) -> Lines {
        let mut cmd = command("mosquitto_pub");
        cmd.args(self.client_args(&self.user, &self.password))
            .args(["-i", &client_id("lines"), "-q", "1", "-t", topic, "-l"])
            .stdin(Stdio::piped())
            .stdout(Stdio::null());
        let mut proc = Proc::spawn(cmd, Buf::default());
        let stdin = proc.child.stdin.take().unwrap();
        Lines { proc, stdin }
    }

    /// Every retained message matching `filter`, sorted by topic. Empty retained payloads
    /// delete rather than store, so they never appear.
    pub fn retained(&self, filter: &str) -> Vec<(String, Vec<u8>)> {
        let id = client_id("ret");
        // '$' topics are not matched by '#' or '+', so the program under test won't see it.
        let marker = format!("$harness/{id}");
        let mut cmd = command("mosquitto_sub");
        cmd.args(self.client_args(&self.user, &self.password))
            .args([
                "-i",
                &id,
                "-q",
                "1",
                "-t",
                filter,
                "-t",
                &marker,
                "--retained-only",
                "-W",
                "10",
                "-F",
                FORMAT,
            ])
            .stdout(Stdio::piped());
        let mut proc = Proc::spawn(cmd, Buf::default());
        let stdout = Buf::default();
        proc.threads
            .push(drain(proc.child.stdout.take().unwrap(), stdout.clone()));
        self.await_suback(&id, &mut || proc.exited());
        // Retained messages are queued while the broker handles SUBSCRIBE, so this live
        // message comes after all of them and --retained-only exits on it (-W is a fallback).
        self.publish(&marker, b"", false);
        let status = proc.finish();
        let stdout = std::mem::take(&mut *stdout.lock().unwrap());
        if !(status.success() || status.code() == Some(EXIT_TIMED_OUT)) {
            panic!(
                "retained({filter:?}): {}\n--- stdout ---\n{}",
                proc.describe(status),
                show(&stdout)
            );
        }
        let mut found: Vec<_> = stdout
            .split_inclusive(|&b| b == b'\n')
            .map(|line| match parse_line(line) {
                Some(seen) if seen.retained => (seen.topic, seen.payload),
                _ => panic!(
                    "retained({filter:?}): unexpected line {:?}: {}",
                    show(line),
                    proc.describe(status)
                ),
            })
            .collect();
        found.sort();
        found
    }

    /// Background subscription to `filter`; the broker has acknowledged it on return.
    pub fn watch(&self, filter: &str) -> Watch {
        let id = client_id("watch");
        let mut cmd = command("mosquitto_sub");
        cmd.args(self.client_args(&self.user, &self.password))
            .args(["-i", &id, "-q", "1", "-t", filter, "-F", FORMAT])
            .stdout(Stdio::piped());
        let mut proc = Proc::spawn(cmd, Buf::default());
        let seen: Arc<(Mutex<Vec<Seen>>, Condvar)> = Arc::default();
        let (stdout, shared, diag) = (
            proc.child.stdout.take().unwrap(),
            seen.clone(),
            proc.stderr.clone(),
        );
        proc.threads
            .push(thread::spawn(move || read_messages(stdout, &shared, &diag)));
        // Build the Watch first so a panic below still kills mosquitto_sub.
        let mut watch = Watch {
            filter: filter.to_string(),
            id,
            proc,
            seen,
        };
        let proc = &mut watch.proc;
        self.await_suback(&watch.id, &mut || proc.exited());
        watch
    }

    /// Waits for the current broker process to log the SUBACK for client `id`;
    /// `exited` describes the subscriber if it died meanwhile.
    fn await_suback(&self, id: &str, exited: &mut dyn FnMut() -> Option<String>) {
        assert!(
            self.proc.is_some(),
            "broker on port {} is stopped; cannot subscribe",
            self.port
        );
        // Trailing newline: "harness-watch-1-1" must not match "harness-watch-1-10".
        let needle = format!("Sending SUBACK to {id}\n");
        let deadline = Instant::now() + READY_TIMEOUT;
        while !self.log_since(self.started_at).contains(&needle) {
            if let Some(died) = exited() {
                panic!("subscriber {id} exited before subscribing: {died}");
            }
            if Instant::now() > deadline {
                panic!(
                    "no SUBACK for {id} within {READY_TIMEOUT:?}\n--- broker log ---\n{}",
                    self.log()
                );
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Broker {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A running `mosquitto_pub -l`; killed on drop.
pub struct Lines {
    proc: Proc,
    stdin: ChildStdin,
}

impl Lines {
    /// Sends `payload` (one line: no newline in it; blank lines are not sent).
    pub fn send(&mut self, payload: &str) {
        assert!(!payload.contains('\n'), "one line: {payload:?}");
        if let Err(e) = writeln!(self.stdin, "{payload}") {
            let exited = self.proc.exited().unwrap_or_default();
            panic!("{}: write: {e}\n{exited}", self.proc.cmd);
        }
    }
}

/// One message received by a [`Watch`].
#[derive(Clone, PartialEq, Eq)]
pub struct Seen {
    pub topic: String,
    pub payload: Vec<u8>,
    /// Set for messages delivered from the retained store on subscribe; live publishes
    /// arrive with `false` even when published with retain (MQTT 3.1.1 rule).
    pub retained: bool,
    pub at: Instant,
}

impl fmt::Debug for Seen {
    // Payloads can be 1 MiB; keep failure messages readable.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Seen({:?}, retained={}, {} bytes: {:?})",
            self.topic,
            self.retained,
            self.payload.len(),
            show(&self.payload)
        )
    }
}

/// A running `mosquitto_sub` collecting messages; killed on drop.
pub struct Watch {
    pub filter: String,
    id: String,
    proc: Proc,
    seen: Arc<(Mutex<Vec<Seen>>, Condvar)>,
}

impl Watch {
    /// First message (already received or arriving within `timeout`) matching `pred`.
    pub fn wait_for(&self, timeout: Duration, pred: impl Fn(&Seen) -> bool) -> Option<Seen> {
        let deadline = Instant::now() + timeout;
        let (lock, cond) = &*self.seen;
        let mut seen = lock.lock().unwrap();
        loop {
            if let Some(s) = seen.iter().find(|s| pred(s)) {
                return Some(s.clone());
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return None;
            }
            seen = cond.wait_timeout(seen, left).unwrap().0;
        }
    }

    /// [`Watch::wait_for`] that panics with `what`, the command, its stderr and all messages seen.
    pub fn expect(&self, what: &str, timeout: Duration, pred: impl Fn(&Seen) -> bool) -> Seen {
        self.wait_for(timeout, pred).unwrap_or_else(|| {
            panic!(
                "watch {:?}: no message {what} within {timeout:?}\nseen: {:#?}\ncommand: {:?}\n--- stderr ---\n{}",
                self.filter,
                self.all(),
                self.proc.cmd,
                show(&self.proc.stderr.lock().unwrap())
            )
        })
    }

    /// Everything received so far, in arrival order.
    pub fn all(&self) -> Vec<Seen> {
        self.seen.0.lock().unwrap().clone()
    }
}

/// Parses mosquitto_sub's stdout into `seen`; unparsable lines go to `diag` for failure messages.
fn read_messages(stdout: impl Read, seen: &(Mutex<Vec<Seen>>, Condvar), diag: &Buf) {
    let mut reader = BufReader::new(stdout);
    let mut line = Vec::new();
    while matches!(reader.read_until(b'\n', &mut line), Ok(n) if n > 0) {
        match parse_line(&line) {
            Some(s) => {
                seen.0.lock().unwrap().push(s);
                seen.1.notify_all();
            }
            None => diag
                .lock()
                .unwrap()
                .extend(b"unparsed stdout: ".iter().chain(&line)),
        }
        line.clear();
    }
}

/// Parses one `%r %x %t` line (with its newline).
fn parse_line(line: &[u8]) -> Option<Seen> {
    let mut parts = line.strip_suffix(b"\n")?.splitn(3, |&b| b == b' ');
    let retained = match parts.next()? {
        b"0" => false,
        b"1" => true,
        _ => return None,
    };
    let hex = parts.next()?;
    let digit = |c: u8| (c as char).to_digit(16);
    let payload = hex
        .chunks(2)
        .map(|p| match p {
            [h, l] => Some((digit(*h)? * 16 + digit(*l)?) as u8),
            _ => None,
        })
        .collect::<Option<Vec<u8>>>()?;
    let topic = String::from_utf8(parts.next()?.to_vec()).ok()?;
    Some(Seen {
        topic,
        payload,
        retained,
        at: Instant::now(),
    })
}

/// A child with stderr drained on a thread (stdin closed unless its command
/// says otherwise); killed and reaped on drop.
struct Proc {
    cmd: String,
    child: Child,
    stderr: Buf,
    threads: Vec<JoinHandle<()>>,
}

impl Proc {
    fn spawn(mut cmd: Command, stderr: Buf) -> Proc {
        cmd.stderr(Stdio::piped());
        let mut child = spawn(&mut cmd);
        let threads = vec![drain(child.stderr.take().unwrap(), stderr.clone())];
        Proc {
            cmd: format!("{cmd:?}"),
            child,
            stderr,
            threads,
        }
    }

    /// Waits for a natural exit and for all output to be collected.
    fn finish(&mut self) -> ExitStatus {
        let status = self
            .child
            .wait()
            .unwrap_or_else(|e| panic!("wait for {}: {e}", self.cmd));
        self.threads.drain(..).for_each(|t| t.join().unwrap());
        status
    }

    /// Description (command, status, stderr) if the child has exited.
    fn exited(&mut self) -> Option<String> {
        let status = self.child.try_wait().ok()??;
        Some(self.describe(status))
    }

    fn describe(&self, status: ExitStatus) -> String {
        format!(
            "{} exited ({status})\n--- stderr ---\n{}",
            self.cmd,
            show(&self.stderr.lock().unwrap())
        )
    }
}

impl Drop for Proc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        // The pipes close with the process, so these threads end.
        self.threads.drain(..).for_each(|t| {
            let _ = t.join();
        });
    }
}

/// Path of a required tool; panics naming the Debian package if it is missing.
fn tool(name: &str) -> PathBuf {
    let package = match name {
        "mosquitto" | "mosquitto_passwd" => "mosquitto",
        "mosquitto_pub" | "mosquitto_sub" => "mosquitto-clients",
        other => other,
    };
    // mosquitto lives in /usr/sbin, which is not on a normal user's PATH.
    let path = std::env::var_os("PATH").unwrap_or_default();
    std::env::split_paths(&path)
        .chain(["/usr/sbin".into(), "/usr/bin".into()])
        .map(|dir| dir.join(name))
        .find(|p| p.is_file())
        .unwrap_or_else(|| {
            panic!("required tool `{name}` not found: install the Debian package `{package}`")
        })
}

/// The tool's command, with stdin closed.
fn command(name: &str) -> Command {
    let mut cmd = Command::new(tool(name));
    cmd.stdin(Stdio::null());
    cmd
}

fn spawn(cmd: &mut Command) -> Child {
    cmd.spawn()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"))
}

/// Runs to completion; panics with the command and its output on failure.
fn run(mut cmd: Command) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot start {cmd:?}: {e}"));
    if !out.status.success() {
        panic!("{}", failure(&cmd, out.status, &out.stdout, &out.stderr));
    }
}

fn failure(cmd: &Command, status: ExitStatus, stdout: &[u8], stderr: &[u8]) -> String {
    format!(
        "{cmd:?} exited ({status})\n--- stdout ---\n{}\n--- stderr ---\n{}",
        show(stdout),
        show(stderr)
    )
}

/// Lossy text of at most 4 KiB, so megabyte payloads don't flood failure messages.
fn show(bytes: &[u8]) -> String {
    const MAX: usize = 4096;
    let text = String::from_utf8_lossy(&bytes[..bytes.len().min(MAX)]).into_owned();
    match bytes.len() > MAX {
        true => format!("{text}... ({} bytes in all)", bytes.len()),
        false => text,
    }
}

fn drain(mut from: impl Read + Send + 'static, into: Buf) -> JoinHandle<()> {
    thread::spawn(move || {
        let mut chunk = [0u8; 16384];
        loop {
            match from.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => into.lock().unwrap().extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
    })
}

/// Unique per process and call, so SUBACK log lines can be attributed.
fn client_id(kind: &str) -> String {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    format!(
        "harness-{kind}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

fn write_conf(conf: &Path, passwd: &Path, port: u16, tls: Option<&[PathBuf; 3]>) {
    let mut text = format!(
        "# Written by the test harness.\n\
         # As root, mosquitto would drop to user `mosquitto`, which cannot read the\n\
         # test's files; `user root` keeps it as is (ignored when not root).\n\
         user root\n\
         listener {port} 127.0.0.1\n\
         allow_anonymous false\n\
         password_file {}\n\
         persistence false\n\
         log_dest stderr\n\
         # `all` includes the SUBACK lines the harness waits for.\n\
         log_type all\n",
        passwd.display()
    );
    if let Some([ca, cert, key]) = tls {
        text += &format!(
            "cafile {}\ncertfile {}\nkeyfile {}\n",
            ca.display(),
            cert.display(),
            key.display()
        );
    }
    fs::write(conf, text).unwrap_or_else(|e| panic!("write {}: {e}", conf.display()));
}

/// Our own openssl config, so results don't depend on the system openssl.cnf.
const OPENSSL_CNF: &str = "\
[req]
distinguished_name = dn
prompt = no
x509_extensions = ca_ext
[dn]
CN = overridden by -subj
[ca_ext]
basicConstraints = critical, CA:TRUE
keyUsage = critical, keyCertSign, cRLSign
subjectKeyIdentifier = hash
";

const SERVER_EXT: &str = "\
basicConstraints = critical, CA:FALSE
keyUsage = critical, digitalSignature
extendedKeyUsage = serverAuth
subjectAltName = IP:127.0.0.1, DNS:localhost
subjectKeyIdentifier = hash
authorityKeyIdentifier = keyid
";

/// Generates a CA and a CA-signed server certificate in `dir`: `[ca cert, server cert, server key]`.
fn make_certs(dir: &Path) -> [PathBuf; 3] {
    let p = |name: &str| dir.join(name);
    fs::write(p("openssl.cnf"), OPENSSL_CNF).expect("write openssl.cnf");
    fs::write(p("server.ext"), SERVER_EXT).expect("write server.ext");
    // P-256 keys: generating RSA keys would dominate TLS test time.
    let req = |extra: &[&str], key: &str, out: &str, subject: &str| {
        let mut cmd = command("openssl");
        cmd.arg("req")
            .args(extra)
            .arg("-config")
            .arg(p("openssl.cnf"));
        cmd.args([
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-subj",
            subject,
        ]);
        cmd.arg("-keyout").arg(p(key)).arg("-out").arg(p(out));
        run(cmd);
    };
    req(
        &["-x509", "-days", "2"],
        "ca.key",
        "ca.crt",
        "/CN=mqtt-harness test CA",
    );
    req(&["-new"], "server.key", "server.csr", "/CN=127.0.0.1");
    let mut cmd = command("openssl");
    cmd.args(["x509", "-req", "-days", "2", "-set_serial", "1"]);
    cmd.arg("-in")
        .arg(p("server.csr"))
        .arg("-CA")
        .arg(p("ca.crt"))
        .arg("-CAkey")
        .arg(p("ca.key"));
    cmd.arg("-extfile")
        .arg(p("server.ext"))
        .arg("-out")
        .arg(p("server.crt"));
    run(cmd);
    [p("ca.crt"), p("server.crt"), p("server.key")]
}
