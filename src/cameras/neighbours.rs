//! The kernel's IPv4 neighbour table (`/proc/net/arp`, this network
//! namespace's): which hardware address answers for an IP address on the
//! LAN. How the follower of moved cameras tells a camera from another
//! device that answers with its ONVIF endpoint reference.

use std::net::Ipv4Addr;

/// ATF_COM: the entry is resolved (an incomplete one has no address yet).
const COMPLETE: u32 = 0x2;

/// The hardware address the kernel has for `ip` (lowercase, colon
/// separated), if it has a resolved one.
pub fn mac_of(ip: Ipv4Addr) -> Option<String> {
    let table = std::fs::read_to_string("/proc/net/arp").ok()?;
    mac_in(&table, ip)
}

/// The last two octets of a hardware address, as `…:ee:ff`: what a person
/// matches against the sticker, and too little to pass for the device. The
/// whole address is the node's evidence (see `background/follow.rs`); the
/// API and its messages show this.
pub fn shown(mac: &str) -> String {
    match mac.rsplitn(3, ':').collect::<Vec<_>>()[..] {
        [last, before, _] => format!("…:{before}:{last}"),
        _ => "…".into(),
    }
}

/// `ip`'s hardware address in a `/proc/net/arp` text.
fn mac_in(table: &str, ip: Ipv4Addr) -> Option<String> {
    table.lines().skip(1).find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [address, _, flags, mac, ..] = fields[..] else {
            return None;
        };
        let flags = u32::from_str_radix(flags.trim_start_matches("0x"), 16).ok()?;
        let mac = mac.to_ascii_lowercase();
        (address.parse() == Ok(ip) && flags & COMPLETE != 0 && mac != "00:00:00:00:00:00")
            .then_some(mac)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hardware_address_is_shown_by_its_end() {
        assert_eq!(shown("02:1a:2b:3c:4d:5e"), "…:4d:5e");
        assert_eq!(shown("021a2b3c4d5e"), "…");
    }

    #[test]
    fn resolved_entries_only() {
        let table = "IP address       HW type     Flags       HW address            Mask     Device
10.213.77.1      0x1         0x2         CA:1e:ef:47:ea:7c     *        nvrn1
10.213.77.4      0x1         0x0         00:00:00:00:00:00     *        nvrn1
10.213.77.40     0x1         0x6         be:22:38:4a:bc:a8     *        nvrn1
";
        let at = |last| mac_in(table, Ipv4Addr::new(10, 213, 77, last));
        assert_eq!(at(1).as_deref(), Some("ca:1e:ef:47:ea:7c"));
        assert_eq!(at(4), None, "incomplete");
        assert_eq!(at(40).as_deref(), Some("be:22:38:4a:bc:a8"));
        assert_eq!(at(9), None);
        assert_eq!(mac_in("", Ipv4Addr::LOCALHOST), None);
    }
}
