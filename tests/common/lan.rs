//! Hosts on a LAN of the test's own, where the far ends of the node's alerts
//! listen: the node refuses loopback destinations, so a push service, an
//! ntfy server or a webhook receiver must be elsewhere. Each `Lan` is a
//! network namespace joined to the root namespace by a veth pair in a
//! /24 of 10.214.0.0/16 of its own (the host end, in the root namespace
//! with the node, `.1`; the namespace's end, where the servers listen,
//! `.2`), so that tests run side by side, in this process or another: the
//! /24 is claimed by making the namespace named after it, which only one
//! can. Needs root and `ip`. Dropping it deletes the namespace and the
//! pair, also after a panic.

use std::process::Command;

use super::netns::ip;

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
        let routes = ip(&["-4", "route", "show", "table", "all"]);
        let start = std::process::id() as usize;
        let n = (0..250)
            .map(|i| (start + i) % 250 + 1)
            .find(|n| {
                !routes.contains(&format!("10.214.{n}."))
                    && Command::new("ip")
                        .args(["netns", "add", &format!("nvra-{n}")])
                        .output()
                        .is_ok_and(|o| o.status.success())
            })
            .expect("a free /24 in 10.214.0.0/16 for a test network");
        let subnet = format!("10.214.{n}.");
        let lan = Lan {
            namespace: format!("nvra-{n}"),
            host_veth: format!("nvra{n}h"),
            address: format!("{subnet}2"),
            host_address: format!("{subnet}1"),
        };
        let (ns, host) = (&lan.namespace, &lan.host_veth);
        let far = format!("nvra{n}n");
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
