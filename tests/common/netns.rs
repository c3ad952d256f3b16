//! A network of the test's own for WS-Discovery, whose multicast must never
//! reach the machine's real interfaces: a network namespace `nvrt-<pid>`
//! joined to the root namespace by a veth pair in 10.213.77.0/24. The host
//! end (`nvrh…`, 10.213.77.1, plus any address added for a camera that
//! moves) is where the stand-ins and go2rtc listen; the namespace end
//! (`nvrn…`, 10.213.77.2) is the node's only interface besides `lo`, with a
//! route for multicast and no default route. Needs root and `ip` (iproute2).
//! Dropping it deletes the namespace and the pair, also after a panic.

use std::process::Command;
use std::sync::{Mutex, MutexGuard};

/// Address of the host end of the pair.
pub const HOST: &str = "10.213.77.1";
/// Address of the node's end, inside the namespace.
pub const NODE: &str = "10.213.77.2";
const SUBNET: &str = "10.213.77.";

/// The tests that use the network share its addresses: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Address of the other device (`TestNet::add_device`).
pub const OTHER: &str = "10.213.77.4";

pub struct TestNet {
    pub namespace: String,
    pub host_veth: String,
    pub node_veth: String,
    /// The namespace of another device on the network, with a hardware
    /// address of its own (`add_device`).
    pub device_namespace: String,
    device_link: String,
    _turn: MutexGuard<'static, ()>,
}

/// Runs `ip ARGS`; panics with its output unless it succeeds.
pub fn ip(args: &[&str]) -> String {
    let output = Command::new("ip").args(args).output().unwrap_or_else(|e| {
        panic!("cannot run `ip` (the iproute2 package) for tests/onvif.rs's network: {e}")
    });
    assert!(
        output.status.success(),
        "ip {}: {}\n{}",
        args.join(" "),
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8_lossy(&output.stdout).into_owned()
}

impl TestNet {
    pub fn new() -> TestNet {
        // SAFETY: geteuid has no preconditions.
        assert!(
            unsafe { libc::geteuid() } == 0,
            "tests/onvif.rs needs root to make a network namespace and a veth pair \
             (ip netns, ip link): run the tests as root"
        );
        let turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
        let pid = std::process::id();
        let net = TestNet {
            namespace: format!("nvrt-{pid}"),
            host_veth: format!("nvrh{}", pid % 10000),
            node_veth: format!("nvrn{}", pid % 10000),
            device_namespace: format!("nvrd-{pid}"),
            device_link: format!("nvrm{}", pid % 10000),
            _turn: turn,
        };
        net.remove();
        let routes = ip(&["-4", "route", "show", "table", "all"]);
        let addresses = ip(&["-4", "-o", "address", "show"]);
        assert!(
            !routes.contains(SUBNET) && !addresses.contains(SUBNET),
            "tests/onvif.rs needs 10.213.77.0/24 for its test network, but this machine \
             already uses it:\n{routes}\n{addresses}"
        );
        let (ns, host, node) = (&net.namespace, &net.host_veth, &net.node_veth);
        ip(&["netns", "add", ns]);
        ip(&["link", "add", host, "type", "veth", "peer", "name", node]);
        ip(&["link", "set", node, "netns", ns]);
        ip(&["address", "add", &format!("{HOST}/24"), "dev", host]);
        ip(&["link", "set", host, "up"]);
        let inside = |args: &[&str]| {
            let mut all = vec!["-n", ns.as_str()];
            all.extend_from_slice(args);
            ip(&all);
        };
        inside(&["link", "set", "lo", "up"]);
        inside(&["address", "add", &format!("{NODE}/24"), "dev", node]);
        inside(&["link", "set", node, "up"]);
        inside(&["route", "add", "224.0.0.0/4", "dev", node]);
        net
    }

    /// Adds a second address on the host end (a camera that moved there).
    pub fn add_host_address(&self, address: &str) {
        ip(&[
            "address",
            "add",
            &format!("{address}/24"),
            "dev",
            &self.host_veth,
        ]);
    }

    /// Another device on the network, at [`OTHER`]: a macvlan on the host
    /// end (so a hardware address of its own, as another box on the LAN)
    /// in a namespace of its own. [`TestNet::in_device`] makes its sockets.
    pub fn add_device(&self) {
        let (ns, link) = (&self.device_namespace, &self.device_link);
        ip(&["netns", "add", ns]);
        ip(&[
            "link",
            "add",
            "link",
            &self.host_veth,
            "name",
            link,
            "type",
            "macvlan",
            "mode",
            "bridge",
        ]);
        ip(&["link", "set", link, "netns", ns]);
        ip(&[
            "-n",
            ns,
            "address",
            "add",
            &format!("{OTHER}/24"),
            "dev",
            link,
        ]);
        ip(&["-n", ns, "link", "set", link, "up"]);
        ip(&["-n", ns, "route", "add", "224.0.0.0/4", "dev", link]);
    }

    /// Runs `f` on a thread in the other device's namespace: the sockets it
    /// makes, and the threads it starts, are the other device's.
    pub fn in_device<T: Send + 'static>(&self, f: impl FnOnce() -> T + Send + 'static) -> T {
        let path = format!("/var/run/netns/{}", self.device_namespace);
        std::thread::spawn(move || {
            let file = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            // SAFETY: setns on an open namespace file; it moves this thread only.
            let done =
                unsafe { libc::setns(std::os::fd::AsRawFd::as_raw_fd(&file), libc::CLONE_NEWNET) };
            assert_eq!(done, 0, "setns {path}: {}", std::io::Error::last_os_error());
            f()
        })
        .join()
        .expect("the other device's setup")
    }

    /// The hardware address of the host end (where the camera is), lowercase.
    pub fn host_mac(&self) -> String {
        let path = format!("/sys/class/net/{}/address", self.host_veth);
        let mac = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
        mac.trim().to_ascii_lowercase()
    }

    /// `program` run inside the namespace: `ip netns exec NS` execs it, so
    /// the child's pid is the program's.
    pub fn wrapper(&self) -> [&str; 4] {
        ["ip", "netns", "exec", &self.namespace]
    }

    /// Deletes what a run with these names left (deleting one end of the
    /// pair deletes the other).
    fn remove(&self) {
        for args in [
            ["link", "delete", self.host_veth.as_str()],
            ["netns", "delete", self.namespace.as_str()],
            ["netns", "delete", self.device_namespace.as_str()],
        ] {
            let _ = Command::new("ip").args(args).output();
        }
    }
}

impl Drop for TestNet {
    fn drop(&mut self) {
        self.remove();
    }
}
