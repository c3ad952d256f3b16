//! Hosts on a LAN of the test's own, where the far ends of the node's alerts
//! listen: the node refuses loopback destinations, so a push service, an
//! ntfy server or a webhook receiver must be elsewhere. Each `Lan` is a
//! network namespace joined to the root namespace by a veth pair in a
//! /24 of 10.214.0.0/16 of its own (the host end, in the root namespace
//! with the node, `.1`; the namespace's end, where the servers listen,
//! `.2`), so that tests run side by side. Needs root and `ip`. Dropping it
//! deletes the namespace and the pair, also after a panic.

use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use super::netns::ip;

/// The next /24 of this test process.
static NEXT: AtomicU32 = AtomicU32::new(1);

pub struct Lan {
    pub namespace: String,
    host_veth: String,
    /// Where servers in the namespace listen.
    pub address: String,
    /// The host end's address: one of the node's own.
    pub host_address: String,
}

impl Lan {
    pub fn new() -> Lan {
        // SAFETY: geteuid has no preconditions.
        assert!(
            unsafe { libc::geteuid() } == 0,
            "alerts' tests need root to make a network namespace and a veth pair \
             (ip netns, ip link): run the tests as root"
        );
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        assert!(n < 255, "more LANs than the tests make");
        let pid = std::process::id() % 100_000;
        let subnet = format!("10.214.{n}.");
        let lan = Lan {
            namespace: format!("nvra-{pid}-{n}"),
            host_veth: format!("na{pid}h{n}"),
            address: format!("{subnet}2"),
            host_address: format!("{subnet}1"),
        };
        lan.remove();
        let routes = ip(&["-4", "route", "show", "table", "all"]);
        let addresses = ip(&["-4", "-o", "address", "show"]);
        assert!(
            !routes.contains(&subnet) && !addresses.contains(&subnet),
            "the alerts' tests need {subnet}0/24 for a test network, but this machine \
             already uses it:\n{routes}\n{addresses}"
        );
        let (ns, host) = (&lan.namespace, &lan.host_veth);
        let far = format!("na{pid}n{n}");
        ip(&["netns", "add", ns]);
        ip(&["link", "add", host, "type", "veth", "peer", "name", &far]);
        ip(&["link", "set", &far, "netns", ns]);
        ip(&["address", "add", &format!("{subnet}1/24"), "dev", host]);
        ip(&["link", "set", host, "up"]);
        ip(&["-n", ns, "link", "set", "lo", "up"]);
        ip(&[
            "-n",
            ns,
            "address",
            "add",
            &format!("{subnet}2/24"),
            "dev",
            &far,
        ]);
        ip(&["-n", ns, "link", "set", &far, "up"]);
        lan
    }

    /// A command that runs `program` in the namespace (`ip netns exec`
    /// execs it: the child's pid is the program's).
    pub fn command(&self, program: &str) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.namespace, program]);
        command
    }

    fn remove(&self) {
        let _ = Command::new("ip")
            .args(["link", "delete", &self.host_veth])
            .output();
        let _ = Command::new("ip")
            .args(["netns", "delete", &self.namespace])
            .output();
    }
}

impl Drop for Lan {
    fn drop(&mut self) {
        self.remove();
    }
}
