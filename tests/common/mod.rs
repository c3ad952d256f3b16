//! Shared test harness: runs the real `nvr-node` binary, a real RTSP camera
//! (GStreamer), a silent camera, the real go2rtc (`go2rtc.rs`) and a go2rtc
//! stand-in for the faults go2rtc cannot show (`relay`), and speaks raw HTTP.
//! The silent camera and the go2rtc stand-in are the benchmark's too: they
//! live in `crates/standins`. On a failed assertion the node's command line
//! and logs are printed.

pub mod classifier;
pub mod cloud;
pub mod go2rtc;
pub mod http;
pub mod lan;
pub mod mosquitto;
pub mod netns;
pub mod receivers;
pub mod rtsp_trap;
pub mod system;
pub mod tls;
pub mod wsd;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

pub use http::Response;
// The stand-ins shared with the benchmark (crates/standins): go2rtc's API
// and an ONVIF device with its Event service.
pub use nvr_standins::{onvif_device, relay};

/// Part of every camera password and cloud secret the tests use. The harness
/// sweeps every node response (status line, headers, body) and every node log
/// line for it, and fails the test that produced it.
pub const SECRET_MARKER: &str = "Sw33p-9qX";

/// A password for test URLs, carrying [`SECRET_MARKER`].
pub fn password(tag: &str) -> String {
    format!("{tag}-{SECRET_MARKER}")
}

/// Panics if `text`, something the node produced, carries a test secret.
pub fn assert_no_secret(text: &str, what: &str) {
    assert!(
        !text.contains(SECRET_MARKER),
        "a camera password or node secret leaked in {what}:\n{text}"
    );
}

/// Now, in ms since the epoch (the node's times in the API are these).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// `2026-11-22T10:04:05.123Z` for a time in ms since the epoch.
pub fn iso(ms: i64) -> String {
    let time = std::time::UNIX_EPOCH + Duration::from_millis(ms as u64);
    humantime::format_rfc3339_millis(time).to_string()
}

/// An API time (`2026-11-22T10:04:05.123Z`) in ms since the epoch.
pub fn ms(iso: &str) -> i64 {
    let time = humantime::parse_rfc3339(iso).unwrap();
    time.duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

/// The database of the node whose data folder is `data`, opened to read
/// beside the running node (waiting out its writes).
pub fn read_database(data: &Path) -> rusqlite::Connection {
    let db = rusqlite::Connection::open_with_flags(
        data.join("nvr-node.db"),
        rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
    )
    .unwrap();
    db.busy_timeout(Duration::from_secs(5)).unwrap();
    db
}

/// Writes `count` segments of 10 s of `camera` (ffmpeg's test picture,
/// 160x90, a key frame a second, in the recorder's fragmented MP4) into
/// `recordings`, named as the node files them, the first from `start_ms`.
pub fn write_segments(recordings: &Path, camera: &str, start_ms: i64, count: i64, scratch: &Path) {
    let output = Command::new("ffmpeg")
        .args(["-hide_banner", "-nostdin", "-loglevel", "error"])
        .args(["-f", "lavfi", "-i", "testsrc=size=160x90:rate=5"])
        .args(["-t", &(count * 10).to_string()])
        .args([
            "-c:v",
            "libx264",
            "-preset",
            "ultrafast",
            "-g",
            "5",
            "-pix_fmt",
            "yuv420p",
        ])
        .args([
            "-f",
            "segment",
            "-segment_time",
            "10",
            "-reset_timestamps",
            "1",
        ])
        .args(["-segment_format", "mp4", "-segment_format_options"])
        .arg("movflags=+frag_keyframe+empty_moov+default_base_moof")
        .arg(scratch.join("%03d.mp4"))
        .output()
        .expect("ffmpeg (Debian package ffmpeg) runs");
    assert!(
        output.status.success(),
        "ffmpeg: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    for i in 0..count {
        let start = humantime::format_rfc3339_millis(
            std::time::UNIX_EPOCH + Duration::from_millis((start_ms + i * 10_000) as u64),
        )
        .to_string();
        let folder = recordings.join(camera).join(format!("{}Z", &start[..13]));
        std::fs::create_dir_all(&folder).unwrap();
        let name = format!("{}.mp4", start.replace(':', "-"));
        std::fs::rename(scratch.join(format!("{i:03}.mp4")), folder.join(name)).unwrap();
    }
}

/// A segment's row in a node's index.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct SegmentRow {
    pub start_ms: i64,
    pub end_ms: i64,
    pub camera: String,
    pub bytes: u64,
    pub path: String,
}

/// The segment rows of the node whose data folder is `data`, oldest first,
/// read from its database file.
pub fn segment_rows(data: &Path) -> Vec<SegmentRow> {
    let db = read_database(data);
    let mut stmt = db
        .prepare("SELECT start_ms, end_ms, camera_id, bytes, path FROM segment ORDER BY start_ms")
        .unwrap();
    stmt.query_map([], |r| {
        Ok(SegmentRow {
            start_ms: r.get(0)?,
            end_ms: r.get(1)?,
            camera: r.get(2)?,
            bytes: r.get::<_, i64>(3)? as u64,
            path: r.get(4)?,
        })
    })
    .unwrap()
    .map(Result::unwrap)
    .collect()
}

/// The item of a listing (cameras, events) whose `id` is `id`.
fn by_id(listing: &serde_json::Value, id: &str) -> Option<serde_json::Value> {
    let items = listing.as_array().expect("a listing is an array");
    items.iter().find(|item| item["id"] == id).cloned()
}

/// A folder that is removed when dropped.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(name: &str) -> TempDir {
        static NEXT: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let dir =
            std::env::temp_dir().join(format!("nvr-node-test-{name}-{}-{n}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A TCP port bound but not listening: a connection to it is refused, as to
/// a stopped server, and the kernel gives it to no one asking for a free port.
pub struct HeldPort(libc::c_int);

impl HeldPort {
    /// None if `host` is not an IPv4 address of this namespace: then nothing
    /// here could take the port either.
    pub fn hold(host: &str, port: u16) -> Option<HeldPort> {
        let ip: std::net::Ipv4Addr = host.parse().ok()?;
        // SAFETY: plain socket calls on a descriptor this function owns.
        unsafe {
            let fd = libc::socket(libc::AF_INET, libc::SOCK_STREAM | libc::SOCK_CLOEXEC, 0);
            if fd < 0 {
                return None;
            }
            let held = HeldPort(fd);
            // Past the killed server's TIME_WAIT connections, as its own restart gets.
            let on: libc::c_int = 1;
            let size = std::mem::size_of_val(&on) as libc::socklen_t;
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_REUSEADDR,
                (&raw const on).cast(),
                size,
            );
            let mut address: libc::sockaddr_in = std::mem::zeroed();
            address.sin_family = libc::AF_INET as libc::sa_family_t;
            address.sin_port = port.to_be();
            address.sin_addr.s_addr = u32::from(ip).to_be();
            let size = std::mem::size_of_val(&address) as libc::socklen_t;
            let bound = libc::bind(fd, (&raw const address).cast(), size) == 0;
            bound.then_some(held)
        }
    }

    /// The port it holds.
    fn port(&self) -> u16 {
        // SAFETY: getsockname writes at most `size` bytes into `address`.
        unsafe {
            let mut address: libc::sockaddr_in = std::mem::zeroed();
            let mut size = std::mem::size_of_val(&address) as libc::socklen_t;
            let named = libc::getsockname(self.0, (&raw mut address).cast(), &mut size);
            assert_eq!(named, 0, "getsockname of a held port");
            u16::from_be(address.sin_port)
        }
    }
}

impl Drop for HeldPort {
    fn drop(&mut self) {
        // SAFETY: the descriptor is this value's own.
        unsafe { libc::close(self.0) };
    }
}

/// A port of 127.0.0.1 that nothing listens on for as long as the tests run:
/// held, so that no other test's server is given it and answers for the dead
/// camera or relay a test points a node at.
pub fn closed_port() -> u16 {
    static HELD: Mutex<Vec<HeldPort>> = Mutex::new(Vec::new());
    let held = HeldPort::hold("127.0.0.1", 0).expect("a free port of 127.0.0.1");
    let port = held.port();
    HELD.lock().unwrap().push(held);
    port
}

/// A port of 127.0.0.1 free just now (bound, then released), for a server
/// the test starts on it.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// The node binary, running with its own data folder and a free port.
pub struct Node {
    child: Child,
    /// Where it listens: 127.0.0.1, or its address in a test network.
    pub host: String,
    pub port: u16,
    /// Its HTTPS port, with `HTTPS_PORT` set.
    pub https_port: Option<u16>,
    command: String,
    logs: Arc<Mutex<String>>,
}

impl Node {
    /// Starts the node with `DATA_DIR=data` and `RELAY_URL=relay_url`, plus `extra` variables.
    pub fn start(data: &Path, relay_url: &str, extra: &[(&str, &str)]) -> Node {
        Node::start_wrapped(&[], data, relay_url, extra)
    }

    /// Starts the node as the last argument of `wrapper` (e.g. `ip netns exec NS`).
    pub fn start_wrapped(
        wrapper: &[&str],
        data: &Path,
        relay_url: &str,
        extra: &[(&str, &str)],
    ) -> Node {
        let mut program = wrapper.to_vec();
        program.push(env!("CARGO_BIN_EXE_nvr-node"));
        Node::start_program(&program, data, relay_url, extra)
    }

    /// Starts the node inside the test network `net`'s namespace, listening
    /// on its address there (the tests reach it over the veth pair).
    pub fn start_in(
        net: &netns::TestNet,
        data: &Path,
        relay_url: &str,
        extra: &[(&str, &str)],
    ) -> Node {
        let mut vars = vec![("LISTEN_ADDRESS", netns::NODE)];
        vars.extend_from_slice(extra);
        let mut node = Node::start_wrapped(&net.wrapper(), data, relay_url, &vars);
        node.host = netns::NODE.to_owned();
        node
    }

    /// `http://HOST:PORT`, for a browser.
    pub fn url(&self) -> String {
        format!("http://{}:{}", self.host, self.port)
    }

    /// Starts `program` (a node binary, after any wrapper and its arguments).
    pub fn start_program(
        program: &[&str],
        data: &Path,
        relay_url: &str,
        extra: &[(&str, &str)],
    ) -> Node {
        let (first, args) = program.split_first().expect("a program to start");
        become_subreaper();
        let mut command = Command::new(first);
        command
            .args(args)
            .env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("PORT", "0")
            // Test servers stay on loopback.
            .env("LISTEN_ADDRESS", "127.0.0.1")
            .env("DATA_DIR", data)
            .env("RELAY_URL", relay_url)
            .env("NODE_NAME", "test-node")
            .env("LOG_LEVEL", "debug");
        for (k, v) in extra {
            command.env(k, v);
        }
        let description = format!("{command:?}");
        let mut child = command
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {description}: {e}"));
        let logs = Arc::new(Mutex::new(String::new()));
        let (port_tx, port_rx) = mpsc::channel();
        let stdout = child.stdout.take().unwrap();
        let stdout_logs = logs.clone();
        thread::spawn(move || {
            let port_of = |address: &str| address.rsplit(':').next()?.parse::<u16>().ok();
            // The node prints its https line before its http one.
            let mut https_port = None;
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if let Some(address) = line.strip_prefix("listening on https://") {
                    https_port = port_of(address);
                }
                if let Some(address) = line.strip_prefix("listening on http://") {
                    let _ = port_tx.send(port_of(address).map(|port| (port, https_port)));
                }
                stdout_logs.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        drain_into(child.stderr.take().unwrap(), logs.clone());
        let port = port_rx.recv_timeout(Duration::from_secs(20)).ok().flatten();
        let mut node = Node {
            child,
            host: "127.0.0.1".to_owned(),
            port: 0,
            https_port: None,
            command: description,
            logs,
        };
        match port {
            Some((port, https_port)) => (node.port, node.https_port) = (port, https_port),
            None => {
                let status = node.child.try_wait();
                panic!(
                    "node did not print its port; status {status:?}\n{}",
                    node.report()
                );
            }
        }
        node
    }

    /// Starts the node recording into `recordings`, its relay a closed
    /// port, with no free-space reserve (the test machine's disk may be
    /// nearly full) unless `env` sets one, plus the rest of `env`.
    pub fn start_recording(data: &Path, recordings: &Path, env: &[(&str, &str)]) -> Node {
        let relay = format!("http://127.0.0.1:{}", closed_port());
        let recordings = recordings.display().to_string();
        let mut vars = vec![
            ("RECORDINGS_DIR", recordings.as_str()),
            ("RECORDINGS_RESERVE", "0"),
        ];
        vars.extend_from_slice(env);
        Node::start(data, &relay, &vars)
    }

    /// Camera `id` as the API lists it; panics if it is not listed.
    pub fn camera(&self, id: &str) -> serde_json::Value {
        let cameras = self.get("/api/cameras").json();
        by_id(&cameras, id).unwrap_or_else(|| panic!("no camera {id}: {cameras}"))
    }

    /// Event `id` as the API lists it, if it is among the newest.
    pub fn listed_event(&self, id: &str) -> Option<serde_json::Value> {
        by_id(&self.get("/api/events").json(), id)
    }

    /// The node's events of `camera`, oldest first.
    pub fn events_of(&self, camera: &str) -> Vec<serde_json::Value> {
        let listed = self.get("/api/events").json();
        let mut events: Vec<serde_json::Value> = listed
            .as_array()
            .expect("a list of events")
            .iter()
            .filter(|e| e["cameraId"] == camera)
            .cloned()
            .collect();
        events.reverse();
        events
    }

    /// Everything the node printed so far.
    pub fn logs(&self) -> String {
        self.logs.lock().unwrap().clone()
    }

    fn report(&self) -> String {
        format!(
            "command: {}\n--- node output ---\n{}",
            self.command,
            self.logs()
        )
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Sends a request; fails the test if the answer carries a test secret.
    pub fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: &[u8],
    ) -> Response {
        let response = http::request_at(&self.host, self.port, method, path, headers, body);
        assert_no_secret(
            &response.to_string(),
            &format!("the answer to {method} {path}"),
        );
        response
    }

    pub fn get(&self, path: &str) -> Response {
        self.request("GET", path, &[], b"")
    }

    pub fn delete(&self, path: &str) -> Response {
        self.request("DELETE", path, &[], b"")
    }

    pub fn post(&self, path: &str) -> Response {
        self.request("POST", path, &[], b"")
    }

    pub fn post_json(&self, path: &str, body: &str) -> Response {
        self.request(
            "POST",
            path,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        )
    }

    pub fn patch_json(&self, path: &str, body: &str) -> Response {
        self.request(
            "PATCH",
            path,
            &[("Content-Type", "application/json")],
            body.as_bytes(),
        )
    }

    /// Changes a camera; panics unless the node answers 200.
    pub fn patch_camera(&self, id: &str, body: serde_json::Value) -> serde_json::Value {
        let response = self.patch_json(&format!("/api/cameras/{id}"), &body.to_string());
        assert_eq!(response.status, 200, "{response}");
        response.json()
    }

    /// Waits until camera `id` records (its first segment is in), then 3 s
    /// more: time for a detector to learn the scene.
    pub fn settle(&self, id: &str) {
        let recording = wait_for(Duration::from_secs(40), || {
            let cameras = self.get("/api/cameras").json();
            cameras
                .as_array()
                .unwrap()
                .iter()
                .any(|c| c["id"] == id && c["recording"]["state"] == "recording")
        });
        assert!(recording, "the camera never recorded");
        thread::sleep(Duration::from_secs(3));
    }

    pub fn post_sdp(&self, path: &str, body: &str) -> Response {
        self.request(
            "POST",
            path,
            &[("Content-Type", "application/sdp")],
            body.as_bytes(),
        )
    }

    /// Adds a camera; panics unless the node answers 201.
    pub fn add_camera(&self, body: serde_json::Value) -> serde_json::Value {
        let response = self.post_json("/api/cameras", &body.to_string());
        assert_eq!(response.status, 201, "{response}");
        response.json()
    }

    /// Stops the node the hard way, as a crash or power cut would.
    pub fn kill(mut self) {
        kill_and_reap(&mut self.child);
    }

    /// Sends the node SIGTERM, as an init system stopping it would.
    pub fn terminate(&self) {
        let kill = Command::new("kill")
            .args(["-TERM", &self.pid().to_string()])
            .status()
            .expect("run kill");
        assert!(kill.success(), "kill -TERM {}: {kill}", self.pid());
    }

    /// Waits for the node to exit on its own and returns its exit code.
    pub fn wait(mut self) -> Option<i32> {
        self.child.wait().ok().and_then(|s| s.code())
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        // As an init system stops it: SIGTERM, so it stops its ffmpeg and
        // clears its ring in /dev/shm; SIGKILL if it lingers.
        if matches!(self.child.try_wait(), Ok(None)) {
            // SAFETY: kill has no memory-safety preconditions.
            unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGTERM) };
            let deadline = Instant::now() + Duration::from_secs(6);
            while matches!(self.child.try_wait(), Ok(None)) && Instant::now() < deadline {
                thread::sleep(Duration::from_millis(20));
            }
        }
        kill_and_reap(&mut self.child);
        if thread::panicking() {
            eprintln!("{}", self.report());
        } else {
            assert_no_secret(&self.logs(), "the node's log");
        }
    }
}

/// Makes this test process the reaper of its orphaned descendants: the
/// ffmpeg of a node killed with SIGKILL die with it (the kernel's death
/// signal), and are reparented here rather than to init, which on this
/// machine never reaps them.
fn become_subreaper() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    // SAFETY: prctl with plain integer arguments.
    ONCE.call_once(|| unsafe {
        libc::prctl(libc::PR_SET_CHILD_SUBREAPER, 1);
    });
}

/// Every process id on the machine.
fn all_pids() -> Vec<u32> {
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    entries
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .collect()
}

/// A process's state letter and parent, from `/proc/PID/stat`
/// (`pid (comm) state ppid ...`, where the comm may hold spaces).
fn state_and_parent(pid: u32) -> Option<(String, u32)> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let mut fields = stat.rsplit_once(')')?.1.split_whitespace();
    let state = fields.next()?.to_owned();
    Some((state, fields.next()?.parse().ok()?))
}

/// The processes whose parent is `pid`.
pub fn children_of(pid: u32) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|child| state_and_parent(*child).is_some_and(|(_, parent)| parent == pid))
        .collect()
}

/// Kills a node with SIGKILL and reaps it and the children it leaves.
fn kill_and_reap(node: &mut Child) {
    let orphans = children_of(node.id());
    let _ = node.kill();
    let _ = node.wait();
    let deadline = Instant::now() + Duration::from_secs(5);
    for pid in orphans {
        while Instant::now() < deadline {
            // SAFETY: waitpid on one pid, with no status wanted.
            let reaped =
                unsafe { libc::waitpid(pid as libc::pid_t, std::ptr::null_mut(), libc::WNOHANG) };
            if reaped == pid as libc::pid_t || !Path::new(&format!("/proc/{pid}")).exists() {
                break;
            }
            thread::sleep(Duration::from_millis(10));
        }
    }
}

/// User and system CPU time of `pid`, in clock ticks.
pub fn cpu_ticks(pid: u32) -> u64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .unwrap()
        .1
        .split_whitespace()
        .collect();
    // utime and stime: fields 14 and 15 of stat, 12 and 13 after the comm.
    fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
}

/// Whether `pid` is running (a zombie is not).
pub fn is_running(pid: u32) -> bool {
    state_and_parent(pid).is_some_and(|(state, _)| state != "Z" && state != "X")
}

/// A small tmpfs of the test's own, unmounted on drop.
pub struct Tmpfs(TempDir);

impl Tmpfs {
    pub fn new(size: &str) -> Tmpfs {
        let dir = TempDir::new("tmpfs");
        let out = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .output()
            .expect("mount runs");
        assert!(
            out.status.success(),
            "mount tmpfs failed (needs root): {}",
            String::from_utf8_lossy(&out.stderr)
        );
        Tmpfs(dir)
    }

    pub fn path(&self) -> &Path {
        self.0.path()
    }

    /// Fills the file system to the last byte with the file `name`, as
    /// another program might; returns its path.
    pub fn fill(&self, name: &str) -> PathBuf {
        let filler = self.path().join(name);
        let mut file = std::fs::File::create(&filler).unwrap();
        let block = vec![0u8; 64 * 1024];
        while std::io::Write::write_all(&mut file, &block).is_ok() {}
        while std::io::Write::write_all(&mut file, &[0u8]).is_ok() {}
        filler
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(self.0.path()).status();
    }
}

/// An ext4 file system in a file, mounted through a loop device with
/// `errors=remount-ro`, as an SD card's root usually is; unmounted (and
/// its loop device freed) on drop.
pub struct Ext4 {
    image: TempDir,
    pub mount: PathBuf,
}

impl Ext4 {
    pub fn new(size_mb: u32) -> Ext4 {
        let image = TempDir::new("ext4");
        let mount = image.path().join("mnt");
        Ext4::mounted(image, size_mb, mount)
    }

    /// One mounted at `mount` (made if missing), as a disk of its own for
    /// a folder of the node's.
    pub fn at(mount: &Path, size_mb: u32) -> Ext4 {
        Ext4::mounted(TempDir::new("ext4"), size_mb, mount.to_owned())
    }

    fn mounted(image: TempDir, size_mb: u32, mount: PathBuf) -> Ext4 {
        let file = image.path().join("disk.img");
        std::fs::create_dir_all(&mount).unwrap();
        let run = |program: &str, args: &[&str]| {
            let out = Command::new(program)
                .args(args)
                .output()
                .unwrap_or_else(|e| panic!("cannot run {program} (e2fsprogs, util-linux): {e}"));
            assert!(
                out.status.success(),
                "{program} {args:?} failed (needs root and loop devices): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        };
        let file_arg = file.to_str().unwrap();
        run("truncate", &["-s", &format!("{size_mb}M"), file_arg]);
        run("mkfs.ext4", &["-q", file_arg]);
        run(
            "mount",
            &[
                "-o",
                "loop,errors=remount-ro",
                file_arg,
                mount.to_str().unwrap(),
            ],
        );
        Ext4 { image, mount }
    }

    /// Makes ext4 meet an error, as a failing card does: it remounts itself
    /// read-only (`emergency_ro`).
    pub fn fail(&self) {
        let device = Command::new("findmnt")
            .args(["-n", "-o", "SOURCE"])
            .arg(&self.mount)
            .output()
            .unwrap();
        let device = String::from_utf8_lossy(&device.stdout).trim().to_owned();
        let name = device.rsplit('/').next().unwrap();
        std::fs::write(format!("/sys/fs/ext4/{name}/trigger_fs_error"), "test")
            .expect("trigger an ext4 error through sysfs");
        let options = Command::new("findmnt")
            .args(["-n", "-o", "OPTIONS"])
            .arg(&self.mount)
            .output()
            .unwrap();
        let options = String::from_utf8_lossy(&options.stdout).into_owned();
        assert!(options.contains("ro"), "still read-write: {options}");
    }
}

impl Ext4 {
    /// Remounts it `ro` or `rw`, as an administrator does.
    pub fn remount(&self, mode: &str) {
        let status = Command::new("mount")
            .args(["-o", &format!("remount,{mode}")])
            .arg(&self.mount)
            .status()
            .unwrap();
        assert!(status.success(), "mount -o remount,{mode}");
    }

    /// The bytes the node may still write on it (`statvfs`'s `f_bavail`).
    pub fn free(&self) -> u64 {
        let out = Command::new("stat")
            .args(["-f", "-c", "%a %S"])
            .arg(&self.mount)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let mut numbers = text.split_whitespace().map(|n| n.parse::<u64>().unwrap());
        numbers.next().unwrap() * numbers.next().unwrap()
    }
}

impl Drop for Ext4 {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.mount).status();
        let _ = &self.image;
    }
}

/// Collects a child's output, line by line, into `logs`, on a thread.
pub fn drain_into(pipe: impl Read + Send + 'static, logs: Arc<Mutex<String>>) {
    thread::spawn(move || {
        for line in BufReader::new(pipe).lines().map_while(Result::ok) {
            logs.lock().unwrap().push_str(&format!("{line}\n"));
        }
    });
}

/// The names of a process's threads.
pub fn thread_names(pid: u32) -> Vec<String> {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| {
            d.filter_map(|t| std::fs::read_to_string(t.ok()?.path().join("comm")).ok())
                .map(|n| n.trim().to_owned())
                .collect()
        })
        .unwrap_or_default()
}

/// The node's threads once it has started them all: its HTTP server's
/// come up after it says it listens, and the reconciliation of its
/// recordings runs on a thread of its own until done; a loaded machine may
/// find either under way, or the reconciliation not yet begun. Settled: the
/// reconciliation done (the node logs at info or finer), and the same count
/// for half a second.
pub fn settled_threads(node: &Node) -> usize {
    let (mut last, mut since) = (None, Instant::now());
    let settled = wait_for(Duration::from_secs(30), || {
        let names = thread_names(node.pid());
        if last != Some(names.len()) {
            (last, since) = (Some(names.len()), Instant::now());
        }
        since.elapsed() >= Duration::from_millis(500)
            && !names.iter().any(|n| n == "reconciliation")
            && node.logs().contains("folder and index reconciled")
    });
    assert!(
        settled,
        "the node's threads did not settle in 30 s: {:?}\n{}",
        thread_names(node.pid()),
        node.logs()
    );
    last.unwrap_or(0)
}

/// Waits until process `pid` has exited (gone, or a zombie not yet reaped).
pub fn wait_for_exit(pid: u32, timeout: Duration) -> bool {
    wait_for(timeout, || {
        let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
        status.is_empty() || status.contains("State:\tZ")
    })
}

/// Polls `check` every 50 ms until it is true or `timeout` passes.
pub fn wait_for(timeout: Duration, mut check: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + timeout;
    loop {
        if check() {
            return true;
        }
        if Instant::now() > deadline {
            return false;
        }
        thread::sleep(Duration::from_millis(50));
    }
}

const SYSTEM_PYTHON: &str = "/usr/bin/python3";

/// A helper server process that prints `{ready}PORT` once it serves, and exits
/// when its stdin closes (so with the test that started it).
struct ReadyServer {
    child: Child,
    stdin: ChildStdin,
    stderr: Arc<Mutex<String>>,
    port: u16,
}

impl ReadyServer {
    fn start(mut command: Command, ready: &str, needs: &str) -> ReadyServer {
        let description = format!("{command:?}");
        let mut child = command
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot run {description}: {e}; it needs {needs}"));
        let stdin = child.stdin.take().unwrap();
        let stderr = Arc::new(Mutex::new(String::new()));
        drain_into(child.stderr.take().unwrap(), stderr.clone());
        let mut line = String::new();
        let _ = BufReader::new(child.stdout.take().unwrap()).read_line(&mut line);
        let Some(port) = line.trim().strip_prefix(ready).and_then(|p| p.parse().ok()) else {
            let _ = child.kill();
            let _ = child.wait();
            thread::sleep(Duration::from_millis(100));
            panic!(
                "{description} did not start; it needs {needs}\nstdout: {line}\nstderr: {}",
                stderr.lock().unwrap()
            );
        };
        ReadyServer {
            child,
            stdin,
            stderr,
            port,
        }
    }
}

/// A real RTSP camera: GStreamer's RTSP server, run by `tests/camera/rtsp_camera.py`.
/// It serves `/main` (H.264 640x360 25 fps + A-law audio), `/sub`, `/video-only`,
/// `/aac` (640x360 + AAC), `/mulaw` (640x360 + µ-law), `/h265` (H.265
/// 640x360 + A-law), `/mjpeg` (MJPEG 640x360), `/hd` (1280x720 at 2 Mbit/s + AAC), `/scene`
/// (a picture the test changes) and `/footage` (a driveway camera's real
/// footage, looped).
pub struct Camera {
    child: Child,
    /// Scene commands go here (`box SECONDS`, `lights on|off`, `slide NAME
    /// SECONDS`); its end ends the camera.
    stdin: Mutex<ChildStdin>,
    /// What it says: the scene commands it took, the footage's passes.
    stderr: Arc<Mutex<String>>,
    pub port: u16,
}

impl Camera {
    pub fn start() -> Camera {
        Camera::start_with(0, &[])
    }

    /// A camera on `port`, as one that comes back after going away.
    pub fn start_on(port: u16) -> Camera {
        Camera::start_with(port, &[])
    }

    /// A camera whose `/scene` runs at `fps` frames a second rather than the
    /// tests' 10.
    pub fn with_scene_fps(fps: u32) -> Camera {
        Camera::start_with(0, &["--scene-fps", &fps.to_string()])
    }

    /// A camera whose `/scene` sends a key frame every `seconds`.
    pub fn with_key_seconds(seconds: u32) -> Camera {
        Camera::start_with(0, &["--key-seconds", &seconds.to_string()])
    }

    /// A camera that requires these credentials.
    pub fn with_credentials(user: &str, password: &str) -> Camera {
        Camera::start_with(0, &["--user", user, "--password", password])
    }

    fn start_with(port: u16, args: &[&str]) -> Camera {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/camera/rtsp_camera.py");
        let mut command = Command::new(SYSTEM_PYTHON);
        command
            .arg(&script)
            .args(["--port", &port.to_string(), "--max-seconds", "600"])
            // The scene at a sub stream's rate: the watcher samples 5 frames
            // a second either way, and the camera mixes and encodes it in
            // half the processor time it takes at 25.
            .args(["--scene-fps", "10"])
            .args(args);
        let needs = format!(
            "{SYSTEM_PYTHON} (Debian's) with python3-gi, gir1.2-gst-rtsp-server-1.0 and \
             gstreamer1.0-plugins-{{base,good,bad,ugly}}"
        );
        let server = ReadyServer::start(command, "ready rtsp://127.0.0.1:", &needs);
        Camera {
            child: server.child,
            stdin: Mutex::new(server.stdin),
            stderr: server.stderr,
            port: server.port,
        }
    }

    /// When each pass of `/footage` began to be served, in ms since the
    /// epoch (the mount runs once a client reads it). The footage missing
    /// from `target/photos` fails the test: `tests/run.sh` puts it there.
    pub fn footage_passes(&self) -> Vec<i64> {
        let footage = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/photos/prius_movie.mov");
        assert!(
            footage.is_file(),
            "the test camera has no footage: {} is missing; \
             `bash tests/camera/get_photos.sh target/photos` (run by tests/run.sh) puts it there",
            footage.display()
        );
        self.stderr
            .lock()
            .unwrap()
            .lines()
            .filter_map(|l| l.strip_prefix("rtsp_camera: footage: pass "))
            .filter_map(|l| l.split_once(" at ")?.1.parse().ok())
            .collect()
    }

    /// When `into` (ms) of pass `pass` of `/footage` was served, in ms since
    /// the epoch: from the whole second before it, so that a camera slowed
    /// mid-pass by a loaded machine is judged by what it sent when.
    pub fn footage_at(&self, pass: usize, into: i64) -> Option<i64> {
        let second = into / 1_000;
        let prefix = format!("rtsp_camera: footage: second {second} of pass {pass} at ");
        let stderr = self.stderr.lock().unwrap();
        let at: i64 = stderr
            .lines()
            .find_map(|l| l.strip_prefix(&prefix)?.parse().ok())?;
        Some(at + into % 1_000)
    }

    /// When the camera began to show the scene `command`, by its own word
    /// (`scene: <command> at <unix ms>`), in ms since the epoch.
    pub fn scene_began(&self, command: &str) -> Option<i64> {
        let prefix = format!("rtsp_camera: {command} at ");
        let stderr = self.stderr.lock().unwrap();
        stderr
            .lines()
            .find_map(|l| l.strip_prefix(&prefix)?.parse().ok())
    }

    /// Changes the `/scene` mount's picture (see rtsp_camera.py); returns
    /// when it was sent, in ms since the epoch.
    pub fn scene(&self, command: &str) -> i64 {
        use std::io::Write;
        let mut stdin = self.stdin.lock().unwrap();
        writeln!(stdin, "{command}").expect("the camera reads its commands");
        stdin.flush().unwrap();
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as i64
    }

    /// Slides a photograph (`person`, `cameraman`, `car`, `cat`) or the
    /// plain box (`box`) across the `/scene` mount for `seconds`, then takes
    /// it away (see rtsp_camera.py); returns when it was sent, in ms since
    /// the epoch. A photograph missing from `target/photos` fails the test:
    /// `tests/run.sh` puts them there (`tests/camera/get_photos.sh`).
    pub fn slide(&self, name: &str, seconds: u32) -> i64 {
        if name != "box" {
            let photo = Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("target/photos")
                .join(format!("{name}.png"));
            assert!(
                photo.is_file(),
                "the test camera has no {name} photograph: {} is missing; \
                 `bash tests/camera/get_photos.sh target/photos` (run by tests/run.sh) \
                 puts it there",
                photo.display()
            );
        }
        self.scene(&format!("slide {name} {seconds}"))
    }

    /// SIGSTOP: a camera whose power or cable is cut, which sends nothing
    /// more and closes nothing (a killed one's sockets are closed at once).
    pub fn freeze(&self) {
        unsafe { libc::kill(self.child.id() as libc::pid_t, libc::SIGSTOP) };
    }

    /// `rtsp://[userinfo@]127.0.0.1:PORT{path}`.
    pub fn url(&self, userinfo: &str, path: &str) -> String {
        let userinfo = if userinfo.is_empty() {
            String::new()
        } else {
            format!("{userinfo}@")
        };
        format!("rtsp://{userinfo}127.0.0.1:{}{path}", self.port)
    }
}

impl Drop for Camera {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Runs `tests/e2e/live_view.mjs` (headless Debian Chromium via playwright-core)
/// on a live view page; returns its JSON verdict, with the command and its
/// output in `"output"` for failure messages.
pub fn live_view_in_browser(args: &[&str]) -> serde_json::Value {
    browser_script("live_view.mjs", args)
}

/// Runs a script of `tests/e2e/` that drives Chromium and prints a JSON
/// verdict as its last line; returns the verdict, `"ok"` false unless the
/// script also exited 0, and the command with its output in `"output"`.
pub fn browser_script(script: &str, args: &[&str]) -> serde_json::Value {
    browser_script_told(script, args, "")
}

/// As [`browser_script`], the script reading `secret` (a password the
/// person types) on its stdin: never on its command line, which the report
/// prints and every local user can read.
pub fn browser_script_told(script: &str, args: &[&str], secret: &str) -> serde_json::Value {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut command = Command::new("node");
    command.arg(root.join("tests/e2e").join(script)).args(args);
    let description = format!("{command:?}");
    let output = command
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut child| {
            // A script that ends before reading it says why in its verdict.
            let _ = child
                .stdin
                .take()
                .expect("a piped stdin")
                .write_all(secret.as_bytes());
            child.wait_with_output()
        })
        .unwrap_or_else(|e| panic!("cannot run node (Node.js, for playwright-core): {e}"));
    let stdout = String::from_utf8_lossy(&output.stdout);
    let report = format!(
        "command: {description}\nstatus: {}\nstdout: {stdout}\nstderr: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    let mut verdict = verdict_in(&stdout);
    if verdict["ok"] == true && !output.status.success() {
        verdict["ok"] = false.into();
    }
    assert_no_secret(&report, "the browser's page");
    verdict["output"] = report.into();
    verdict
}

/// Three person events of `camera` posted to `node`, each with a clip
/// file of its own under `data`'s `clips/`: "old" (3 days ago), "kept"
/// (as old, kept) and "new" (half a day ago); their ids in that order.
pub fn post_aged_events(node: &Node, data: &Path, camera: &str) -> Vec<String> {
    std::fs::create_dir_all(data.join("clips")).unwrap();
    let day = 24 * 3600 * 1000;
    let mut ids = Vec::new();
    for (name, ago) in [("old", 3 * day), ("kept", 3 * day - 1), ("new", day / 2)] {
        let clip = format!("clips/{name}.mp4");
        std::fs::write(data.join(&clip), b"x").unwrap();
        let at = iso(now_ms() - ago);
        let body = serde_json::json!({ "cameraId": camera, "kind": "person", "score": 0.5,
            "startedAt": at, "endedAt": at, "clipPath": clip });
        let response = node.post_json("/api/events", &body.to_string());
        assert_eq!(response.status, 201, "{response}");
        ids.push(response.json()["id"].as_str().unwrap().to_owned());
    }
    let kept = node.patch_json(&format!("/api/events/{}", ids[1]), r#"{"keep":true}"#);
    assert_eq!(kept.status, 200, "{kept}");
    ids
}

/// The last line of a script's output that is JSON: its verdict, or
/// `{"ok":false,"error":"no verdict printed"}`.
pub fn verdict_in(output: &str) -> serde_json::Value {
    output
        .lines()
        .rev()
        .find_map(|line| serde_json::from_str(line).ok())
        .unwrap_or_else(|| serde_json::json!({ "ok": false, "error": "no verdict printed" }))
}

/// A "camera" that accepts TCP connections and never says a word
/// (`nvr_standins::silent`), with the tests' password in its address.
pub struct SilentCamera(nvr_standins::silent::SilentCamera);

impl SilentCamera {
    pub fn start() -> SilentCamera {
        SilentCamera(nvr_standins::silent::SilentCamera::start())
    }

    pub fn url(&self) -> String {
        format!(
            "rtsp://admin:{}@127.0.0.1:{}/main",
            password("silent"),
            self.port
        )
    }
}

/// Its port and `accepted()`.
impl std::ops::Deref for SilentCamera {
    type Target = nvr_standins::silent::SilentCamera;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// Live `program` processes (ffprobe, ffmpeg) whose command line mentions `needle`.
pub fn processes_mentioning(program: &str, needle: &str) -> Vec<u32> {
    all_pids()
        .into_iter()
        .filter(|pid| {
            let line = command_line(*pid);
            line.contains(program) && line.contains(needle) && is_running(*pid)
        })
        .collect()
}

/// What only a motion watcher's receiver (the ffmpeg that copies the
/// camera's stream for the pacer) has in its command line.
pub const MOTION_RECEIVER: &str = "frag_every_frame";

/// The motion decoders `node` runs (fed by the node, not connected to a camera).
pub fn motion_decoders(node: u32) -> Vec<u32> {
    children_of(node)
        .into_iter()
        .filter(|pid| command_line(*pid).contains("image2pipe") && is_running(*pid))
        .collect()
}

/// Bytes `pid` has written (`/proc/PID/io`'s `wchar`).
pub fn bytes_written(pid: u32) -> u64 {
    let io = std::fs::read_to_string(format!("/proc/{pid}/io")).unwrap_or_default();
    io.lines()
        .find_map(|l| l.strip_prefix("wchar: ")?.trim().parse().ok())
        .unwrap_or(0)
}

/// Live processes whose command line mentions `program` (ffprobe, or an
/// argument such as ffmpeg's `image2pipe`) with a TCP connection to `port`
/// on this host: the node hands them a camera's address on stdin, so their
/// command lines do not name the camera.
pub fn processes_connected_to(program: &str, port: u16) -> Vec<u32> {
    let sockets = sockets_to(port);
    all_pids()
        .into_iter()
        .filter(|pid| command_line(*pid).contains(program) && is_running(*pid))
        .filter(|pid| {
            let Ok(fds) = std::fs::read_dir(format!("/proc/{pid}/fd")) else {
                return false;
            };
            fds.filter_map(|fd| std::fs::read_link(fd.ok()?.path()).ok())
                .any(|link| sockets.iter().any(|s| link.to_str() == Some(s.as_str())))
        })
        .collect()
}

/// A process's arguments, joined by spaces.
pub fn command_line(pid: u32) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    String::from_utf8_lossy(&cmdline).replace('\0', " ")
}

/// The TCP sockets (as `/proc/PID/fd` names them: `socket:[INODE]`) whose
/// far end is `port`, from the kernel's tables.
fn sockets_to(port: u16) -> Vec<String> {
    let far_port = format!(":{port:04X}");
    ["/proc/net/tcp", "/proc/net/tcp6"]
        .iter()
        .filter_map(|table| std::fs::read_to_string(table).ok())
        .flat_map(|table| {
            let far_port = far_port.clone();
            table
                .lines()
                .skip(1)
                .filter_map(move |line| {
                    let fields: Vec<&str> = line.split_whitespace().collect();
                    if !fields.get(2)?.ends_with(&far_port) {
                        return None;
                    }
                    Some(format!("socket:[{}]", fields.get(9)?))
                })
                .collect::<Vec<_>>()
        })
        .collect()
}

/// Live ffprobe processes connected to `port`.
pub fn ffprobes_connected_to(port: u16) -> Vec<u32> {
    processes_connected_to("ffprobe", port)
}

/// What ffprobe says of a file's `entries` (its `-show_entries`), as JSON.
pub fn ffprobe_entries(path: &Path, entries: &str) -> serde_json::Value {
    let output = Command::new("ffprobe")
        .args(["-v", "error", "-of", "json", "-show_entries", entries])
        .arg(path)
        .output()
        .expect("ffprobe (Debian package ffmpeg) runs");
    assert!(
        output.status.success(),
        "ffprobe cannot read {}: {}",
        path.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// What ffprobe says of a file: its streams' codecs and its duration.
pub fn probe_file(path: &Path) -> (Vec<String>, f64) {
    let info = ffprobe_entries(path, "stream=codec_name:format=duration");
    let codecs = info["streams"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["codec_name"].as_str().unwrap().to_owned())
        .collect();
    let duration = info["format"]["duration"]
        .as_str()
        .and_then(|d| d.parse().ok())
        .unwrap_or(0.0);
    (codecs, duration)
}
