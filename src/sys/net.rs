//! The network calls std has no method for: options on the HTTP listener
//! (which Linux passes on to each socket it accepts) and its backlog, the
//! interface a multicast leaves by, the machine's interfaces and their
//! addresses, and its host name.

use std::ffi::CStr;
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, TcpListener, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

/// TCP_NODELAY: each write leaves at once, without waiting for the ACK of
/// what went before (Nagle's algorithm).
pub fn set_no_delay(listener: &TcpListener) -> io::Result<()> {
    let one: libc::c_int = 1;
    set_option(listener, libc::IPPROTO_TCP, libc::TCP_NODELAY, &one)
}

/// SO_SNDTIMEO: a write that cannot go on for `timeout` fails.
pub fn set_send_timeout(listener: &TcpListener, timeout: Duration) -> io::Result<()> {
    let timeout = libc::timeval {
        tv_sec: timeout.as_secs() as _,
        tv_usec: timeout.subsec_micros() as _,
    };
    set_option(listener, libc::SOL_SOCKET, libc::SO_SNDTIMEO, &timeout)
}

/// Lets the kernel queue up to `backlog` connections not yet accepted.
pub fn set_backlog(listener: &TcpListener, backlog: i32) -> io::Result<()> {
    // SAFETY: a valid listening socket; listen again only resizes its queue.
    if unsafe { libc::listen(listener.as_raw_fd(), backlog) } != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// IP_MULTICAST_IF: what `socket` sends to a multicast group leaves by the
/// interface with `address`.
pub fn set_multicast_interface(socket: &UdpSocket, address: Ipv4Addr) -> io::Result<()> {
    let interface = libc::in_addr {
        s_addr: u32::from(address).to_be(),
    };
    set_option(socket, libc::IPPROTO_IP, libc::IP_MULTICAST_IF, &interface)
}

fn set_option<T>(
    socket: &impl AsRawFd,
    level: libc::c_int,
    name: libc::c_int,
    value: &T,
) -> io::Result<()> {
    // SAFETY: a valid socket, and an option value that lives across the
    // call, of the size given.
    let rc = unsafe {
        libc::setsockopt(
            socket.as_raw_fd(),
            level,
            name,
            (value as *const T).cast(),
            std::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// The name and IPv4 address of each interface that is up and not
/// loopback, in the kernel's order.
pub fn ipv4_interfaces() -> io::Result<Vec<(String, Ipv4Addr)>> {
    let interfaces = interfaces()?.into_iter();
    Ok(interfaces
        .filter_map(|(name, address)| match address {
            IpAddr::V4(v4) => Some((name, v4)),
            IpAddr::V6(_) => None,
        })
        .collect())
}

/// The IPv4 and IPv6 addresses of the interfaces that are up and not
/// loopback.
pub fn addresses() -> io::Result<Vec<IpAddr>> {
    Ok(interfaces()?.into_iter().map(|(_, a)| a).collect())
}

/// Every address of every interface, up or not, loopback too: the
/// addresses that reach the machine itself.
pub fn own_addresses() -> io::Result<Vec<IpAddr>> {
    Ok(walk(true)?.into_iter().map(|(_, a)| a).collect())
}

/// The name and each address of every interface that is up and not
/// loopback, in the kernel's order.
fn interfaces() -> io::Result<Vec<(String, IpAddr)>> {
    walk(false)
}

/// The name and each address of the interfaces, in the kernel's order: of
/// every one (`all`), or of those up and not loopback.
fn walk(all: bool) -> io::Result<Vec<(String, IpAddr)>> {
    let mut found = Vec::new();
    let mut list: *mut libc::ifaddrs = std::ptr::null_mut();
    // SAFETY: getifaddrs fills `list` with a linked list freed below; each
    // entry's name is a C string, and its address, when not null, a sockaddr
    // whose family says its type.
    unsafe {
        if libc::getifaddrs(&mut list) != 0 {
            return Err(io::Error::last_os_error());
        }
        let mut entry = list;
        while let Some(e) = entry.as_ref() {
            entry = e.ifa_next;
            let flags = e.ifa_flags as libc::c_int;
            let wanted = all || (flags & libc::IFF_UP != 0 && flags & libc::IFF_LOOPBACK == 0);
            if e.ifa_addr.is_null() || !wanted {
                continue;
            }
            let address = match (*e.ifa_addr).sa_family as libc::c_int {
                libc::AF_INET => {
                    let sin = &*(e.ifa_addr as *const libc::sockaddr_in);
                    IpAddr::V4(Ipv4Addr::from(u32::from_be(sin.sin_addr.s_addr)))
                }
                libc::AF_INET6 => {
                    let sin6 = &*(e.ifa_addr as *const libc::sockaddr_in6);
                    IpAddr::V6(Ipv6Addr::from(sin6.sin6_addr.s6_addr))
                }
                _ => continue,
            };
            let name = CStr::from_ptr(e.ifa_name).to_string_lossy().into_owned();
            found.push((name, address));
        }
        libc::freeifaddrs(list);
    }
    Ok(found)
}

/// The machine's host name, as the kernel has it.
pub fn host_name() -> io::Result<String> {
    let mut buf = [0u8; 256];
    // SAFETY: the buffer is valid for its length; gethostname writes within it.
    if unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) } != 0 {
        return Err(io::Error::last_os_error());
    }
    let name = CStr::from_bytes_until_nul(&buf).map_or(&buf[..], CStr::to_bytes);
    Ok(String::from_utf8_lossy(name).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn own_addresses_include_loopback_and_each_interfaces() {
        let own = own_addresses().unwrap();
        assert!(own.contains(&IpAddr::from([127, 0, 0, 1])), "{own:?}");
        for address in addresses().unwrap() {
            assert!(own.contains(&address), "{address} in {own:?}");
        }
    }

    #[test]
    fn the_host_name_is_the_kernels() {
        let kernels = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap();
        assert_eq!(host_name().unwrap(), kernels.trim_end());
    }
}
