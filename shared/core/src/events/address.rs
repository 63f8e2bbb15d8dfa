//! Which addresses an endpoint may never be reached at: our own network and the cloud's
//! (private, loopback, link-local, the instance metadata service), and every form that
//! leads there (an IPv4 address inside IPv6: mapped, compatible, NAT64, 6to4, Teredo).
//! Checked on an endpoint's URL when it is made ([`super::target`]) and on every address its
//! name resolves to at each delivery, before connecting to that very address.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    Unspecified,
    Loopback,
    Private,
    LinkLocal,
    /// The cloud's instance metadata service (169.254.169.254, fd00:ec2::254, 100.100.100.200).
    Metadata,
    /// Shared address space (100.64.0.0/10, carrier-grade NAT: a cloud's internal network).
    Shared,
    Multicast,
    /// Reserved, documentation, benchmarking, broadcast: no public host is there.
    Reserved,
    /// An IPv6 form that hides an IPv4 address we cannot see through (Teredo, NAT64 local use).
    Tunnel,
}

impl Refused {
    pub fn as_str(self) -> &'static str {
        match self {
            Refused::Unspecified => "an unspecified address",
            Refused::Loopback => "a loopback address",
            Refused::Private => "a private address",
            Refused::LinkLocal => "a link-local address",
            Refused::Metadata => "the instance metadata service",
            Refused::Shared => "a shared (carrier-grade NAT) address",
            Refused::Multicast => "a multicast address",
            Refused::Reserved => "a reserved address",
            Refused::Tunnel => "a tunnelled address",
        }
    }
}

/// Why `ip` may not be connected to, or `None` when it is a public address.
pub fn refused(ip: IpAddr) -> Option<Refused> {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<Refused> {
    let [a, b, c, _] = ip.octets();
    let metadata = [Ipv4Addr::new(169, 254, 169, 254), Ipv4Addr::new(100, 100, 100, 200)];
    Some(match (a, b, c) {
        _ if metadata.contains(&ip) => Refused::Metadata,
        _ if ip.is_unspecified() => Refused::Unspecified,
        (0, _, _) => Refused::Reserved,
        (127, _, _) => Refused::Loopback,
        (10, _, _) | (192, 168, _) => Refused::Private,
        (172, 16..=31, _) => Refused::Private,
        (169, 254, _) => Refused::LinkLocal,
        (100, 64..=127, _) => Refused::Shared,
        // IETF protocol assignments (some clouds' metadata among them), documentation,
        // the 6to4 relay, benchmarking.
        (192, 0, 0) | (192, 0, 2) | (198, 51, 100) | (203, 0, 113) | (192, 88, 99) => Refused::Reserved,
        (198, 18..=19, _) => Refused::Reserved,
        (224..=239, _, _) => Refused::Multicast,
        (240..=255, _, _) => Refused::Reserved,
        _ => return None,
    })
}

fn refused_v6(ip: Ipv6Addr) -> Option<Refused> {
    let s = ip.segments();
    let embedded = |hi: u16, lo: u16| refused_v4(Ipv4Addr::new((hi >> 8) as u8, hi as u8, (lo >> 8) as u8, lo as u8));
    if ip == Ipv6Addr::new(0xfd00, 0x0ec2, 0, 0, 0, 0, 0, 0x254) {
        return Some(Refused::Metadata);
    }
    match s {
        [0, 0, 0, 0, 0, 0, 0, 0] => Some(Refused::Unspecified),
        [0, 0, 0, 0, 0, 0, 0, 1] => Some(Refused::Loopback),
        // IPv4-mapped (::ffff:a.b.c.d): the IPv4 address it carries decides.
        [0, 0, 0, 0, 0, 0xffff, hi, lo] => embedded(hi, lo),
        // NAT64's well-known prefix (64:ff9b::/96) reaches the IPv4 address it carries.
        [0x64, 0xff9b, 0, 0, 0, 0, hi, lo] => embedded(hi, lo),
        // NAT64 for local use (64:ff9b:1::/48): a network's own translator.
        [0x64, 0xff9b, 1, ..] => Some(Refused::Tunnel),
        // The rest of ::/8 (compatible, SIIT's ::ffff:0:a.b.c.d, unassigned): no public host.
        [first, ..] if first < 0x0100 => Some(Refused::Reserved),
        // 6to4 (2002::/16) carries an IPv4 address in its next 32 bits.
        [0x2002, hi, lo, ..] => embedded(hi, lo),
        // Teredo (2001::/32) hides its IPv4 address (inverted): never reached.
        [0x2001, 0, ..] => Some(Refused::Tunnel),
        // Documentation.
        [0x2001, 0x0db8, ..] => Some(Refused::Reserved),
        // Discard-only (100::/64).
        [0x0100, 0, 0, 0, ..] => Some(Refused::Reserved),
        [first, ..] if first & 0xfe00 == 0xfc00 => Some(Refused::Private), // fc00::/7 unique local
        [first, ..] if first & 0xffc0 == 0xfe80 => Some(Refused::LinkLocal), // fe80::/10
        [first, ..] if first & 0xffc0 == 0xfec0 => Some(Refused::Private), // fec0::/10 site-local
        [first, ..] if first & 0xff00 == 0xff00 => Some(Refused::Multicast),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str) -> Option<Refused> {
        refused(text.parse().unwrap())
    }

    #[test]
    fn our_networks_and_the_clouds_are_refused_in_every_form() {
        for (address, why) in [
            ("10.0.0.1", Refused::Private),
            ("172.16.0.1", Refused::Private),
            ("172.31.255.255", Refused::Private),
            ("192.168.1.1", Refused::Private),
            ("127.0.0.1", Refused::Loopback),
            ("127.1.2.3", Refused::Loopback),
            ("0.0.0.0", Refused::Unspecified),
            ("0.1.2.3", Refused::Reserved),
            ("169.254.169.254", Refused::Metadata),
            ("169.254.1.1", Refused::LinkLocal),
            ("100.100.100.200", Refused::Metadata),
            ("100.64.0.1", Refused::Shared),
            ("192.0.0.192", Refused::Reserved),
            ("198.18.0.1", Refused::Reserved),
            ("224.0.0.1", Refused::Multicast),
            ("255.255.255.255", Refused::Reserved),
            ("::", Refused::Unspecified),
            ("::1", Refused::Loopback),
            ("::ffff:127.0.0.1", Refused::Loopback),
            ("::ffff:7f00:1", Refused::Loopback),
            ("::ffff:10.0.0.1", Refused::Private),
            ("::ffff:169.254.169.254", Refused::Metadata),
            ("::127.0.0.1", Refused::Reserved),
            ("::8.8.8.8", Refused::Reserved),
            ("::ffff:0:7f00:1", Refused::Reserved),
            ("1::1", Refused::Reserved),
            ("64:ff9b::10.0.0.1", Refused::Private),
            ("64:ff9b::169.254.169.254", Refused::Metadata),
            ("64:ff9b:1::1", Refused::Tunnel),
            ("2002:a00:1::", Refused::Private),
            ("2002:7f00:1::1", Refused::Loopback),
            ("2001:0:4136:e378:8000:63bf:3fff:fdd2", Refused::Tunnel),
            ("2001:db8::1", Refused::Reserved),
            ("fd00:ec2::254", Refused::Metadata),
            ("fd12:3456::1", Refused::Private),
            ("fc00::1", Refused::Private),
            ("fe80::1", Refused::LinkLocal),
            ("febf::1", Refused::LinkLocal),
            ("fec0::1", Refused::Private),
            ("ff02::1", Refused::Multicast),
        ] {
            assert_eq!(check(address), Some(why), "{address}");
        }
    }

    #[test]
    fn public_addresses_pass() {
        for address in [
            "8.8.8.8",
            "1.1.1.1",
            "172.15.255.255",
            "172.32.0.1",
            "100.63.255.255",
            "100.128.0.1",
            "169.253.255.255",
            "192.169.0.1",
            "2606:4700:4700::1111",
            "2a00:1450:4001:80b::200e",
            "64:ff9b::8.8.8.8",
            "2002:808:808::1",
            "::ffff:8.8.8.8",
        ] {
            assert_eq!(check(address), None, "{address}");
        }
    }
}
