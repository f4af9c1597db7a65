//! Who a request comes from, as Traefik decides it: its `ipStrategy` (the peer, the depth-th
//! `X-Forwarded-For` entry from the right, or the rightmost entry not excluded; IPv6 grouped by
//! subnet) for `ipAllowList`, and its `sourceCriterion` (that, a request field, or the host) for
//! `rateLimit` and `inFlightReq`. The `X-Forwarded-For` seen here is the one the entry point
//! kept: a client that is not trusted cannot put its own addresses in it.

use std::net::IpAddr;

use http::{HeaderMap, HeaderName};

use crate::proxy::forwarded_headers::{in_nets, parse_nets};

/// Traefik's ipStrategy, built at load.
#[derive(Debug, Clone)]
pub(crate) struct IpStrategy {
    depth: usize,
    excluded: Vec<ipnet::IpNet>,
    ipv6_subnet: Option<u8>,
}

/// A source as a key: the address when there is one (no allocation for the common case), else
/// the text Traefik would use (an entry that is not an address, a field's value, a host) —
/// shared, so inFlightReq's table and the request's slot hold one copy.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    Ip(IpAddr),
    Text(std::sync::Arc<str>),
}

impl IpStrategy {
    pub(crate) fn new(depth: u32, excluded: &[String], ipv6_subnet: Option<u8>) -> Self {
        Self {
            depth: usize::try_from(depth).unwrap_or(usize::MAX),
            excluded: parse_nets(excluded),
            ipv6_subnet,
        }
    }

    pub(crate) fn from_plan(s: &bridge_plan::IpStrategy) -> Self {
        Self::new(s.depth, &s.excluded_ips, s.ipv6_subnet)
    }

    /// The client as this strategy sees it; `Text("")` when it finds none (Traefik's empty
    /// source).
    pub(crate) fn key(&self, peer: IpAddr, fields: &HeaderMap) -> Key {
        if self.depth == 0 && self.excluded.is_empty() {
            return Key::Ip(self.subnet(peer));
        }
        // The entry point joined several lines into one list; so do we.
        let entries = || {
            fields
                .get_all("x-forwarded-for")
                .iter()
                .filter_map(|v| v.to_str().ok())
                .flat_map(|v| v.split(','))
                .map(str::trim)
        };
        if self.depth > 0 {
            let n = entries().count();
            let Some(i) = n.checked_sub(self.depth) else {
                return Key::Text("".into());
            };
            return match entries().nth(i) {
                Some(e) => self.entry_key(e, true),
                None => Key::Text("".into()),
            };
        }
        let all: Vec<&str> = entries().collect();
        all.iter()
            .rev()
            .filter(|e| !e.is_empty())
            .find(|e| {
                e.parse::<IpAddr>()
                    .map_or(true, |ip| !in_nets(&self.excluded, ip))
            })
            .map_or(Key::Text("".into()), |e| self.entry_key(e, false))
    }

    /// An `X-Forwarded-For` entry as a key; the subnet applies with `depth` only, as in Traefik.
    fn entry_key(&self, entry: &str, subnet: bool) -> Key {
        match entry.parse::<IpAddr>() {
            Ok(ip) if subnet => Key::Ip(self.subnet(ip)),
            Ok(ip) => Key::Ip(ip),
            Err(_) => Key::Text(entry.into()),
        }
    }

    /// An IPv6 address as the network of `ipv6Subnet` bits (IPv4 untouched).
    fn subnet(&self, ip: IpAddr) -> IpAddr {
        match (ip, self.ipv6_subnet) {
            (IpAddr::V6(v6), Some(bits)) => {
                ipnet::Ipv6Net::new(v6, bits).map_or(ip, |n| IpAddr::V6(n.network()))
            }
            _ => ip,
        }
    }
}

/// Traefik's sourceCriterion, built at load.
#[derive(Debug, Clone)]
pub(crate) enum Source {
    Ip(IpStrategy),
    Header(HeaderName),
    Host,
}

impl Source {
    pub(crate) fn from_plan(
        c: &bridge_plan::SourceCriterion,
    ) -> Result<Self, super::MiddlewareError> {
        Ok(match c {
            bridge_plan::SourceCriterion::Ip(s) => Self::Ip(IpStrategy::from_plan(s)),
            bridge_plan::SourceCriterion::RequestHeader(h) => {
                Self::Header(HeaderName::from_bytes(h.as_bytes()).map_err(|_| {
                    super::MiddlewareError::Value {
                        option: "sourceCriterion.requestHeaderName",
                        value: h.clone(),
                    }
                })?)
            }
            bridge_plan::SourceCriterion::RequestHost => Self::Host,
        })
    }

    /// The source of a request: its address, its first `field` value, or its host as sent.
    pub(crate) fn key(&self, peer: IpAddr, fields: &HeaderMap, host: Option<&str>) -> Key {
        match self {
            Self::Ip(s) => s.key(peer, fields),
            Self::Header(name) => Key::Text(
                fields
                    .get(name)
                    .and_then(|v| v.to_str().ok())
                    .unwrap_or_default()
                    .into(),
            ),
            Self::Host => Key::Text(host.unwrap_or_default().into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(xff: &[&str]) -> HeaderMap {
        let mut f = HeaderMap::new();
        for v in xff {
            f.append("x-forwarded-for", v.parse().unwrap());
        }
        f
    }

    fn ip(s: &str) -> Key {
        Key::Ip(s.parse().unwrap())
    }

    fn text(s: &str) -> Key {
        Key::Text(s.into())
    }

    const PEER: IpAddr = IpAddr::V4(std::net::Ipv4Addr::new(127, 0, 0, 1));

    #[test]
    fn depth_takes_the_nth_entry_from_the_right_as_traefik_does() {
        // Traefik 3.7.15 with depth 2 (research against the binary).
        let s = IpStrategy::new(2, &[], None);
        for (xff, want) in [
            (&["1.1.1.1"][..], text("")),
            (&["10.0.0.1, 11.0.0.1"], ip("10.0.0.1")),
            (&["9.9.9.9, 10.0.0.2 , 12.0.0.1"], ip("10.0.0.2")),
            (&[","], text("")),
            (&["10.0.0.3", "5.5.5.5"], ip("10.0.0.3")),
            (&[], text("")),
        ] {
            assert_eq!(s.key(PEER, &fields(xff)), want, "{xff:?}");
        }
    }

    #[test]
    fn excluded_ips_skip_addresses_and_networks_from_the_right() {
        let s = IpStrategy::new(0, &["12.0.0.1".into(), "13.0.0.0/8".into()], None);
        for (xff, want) in [
            (&["10.0.0.1, 11.0.0.1, 12.0.0.1"][..], ip("11.0.0.1")),
            (&["11.0.0.1,13.5.5.5"], ip("11.0.0.1")),
            (&["12.0.0.1"], text("")),
            // Not an address: never excluded, and it is the source.
            (&["garbage"], text("garbage")),
            (&["1.2.3.4, , 12.0.0.1"], ip("1.2.3.4")),
        ] {
            assert_eq!(s.key(PEER, &fields(xff)), want, "{xff:?}");
        }
    }

    #[test]
    fn the_peer_by_default_and_ipv6_by_subnet() {
        let s = IpStrategy::new(0, &[], None);
        assert_eq!(s.key(PEER, &fields(&["1.2.3.4"])), ip("127.0.0.1"));
        let s = IpStrategy::new(0, &[], Some(64));
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        assert_eq!(s.key(a, &HeaderMap::new()), s.key(b, &HeaderMap::new()));
        assert_eq!(s.key(a, &HeaderMap::new()), ip("2001:db8:1:2::"));
        assert_eq!(s.key(PEER, &HeaderMap::new()), ip("127.0.0.1"));
        let s = IpStrategy::new(1, &[], Some(64));
        assert_eq!(
            s.key(PEER, &fields(&["2001:db8:1:2:aaaa::1"])),
            ip("2001:db8:1:2::")
        );
    }

    #[test]
    fn a_field_or_the_host_as_sent() {
        let mut f = HeaderMap::new();
        f.append("x-key", "c".parse().unwrap());
        f.append("x-key", "a".parse().unwrap());
        let by_field = Source::Header(HeaderName::from_static("x-key"));
        assert_eq!(by_field.key(PEER, &f, None), text("c"));
        assert_eq!(by_field.key(PEER, &HeaderMap::new(), None), text(""));
        assert_eq!(Source::Host.key(PEER, &f, Some("FOO:80")), text("FOO:80"));
    }
}
