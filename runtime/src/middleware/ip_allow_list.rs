//! `ipAllowList`: requests from addresses outside `sourceRange` are refused (403 unless
//! `rejectStatusCode` says otherwise). The address judged is the peer's, or with
//! `ipStrategy.depth` the depth-th `X-Forwarded-For` entry from the right, or with
//! `ipStrategy.excludedIPs` the rightmost entry not in those addresses or networks, IPv6 by
//! `ipv6Subnet` — Traefik's ipStrategy ([`super::source`]). The
//! `X-Forwarded-For` seen here is the one the entry point kept: a client that is not trusted
//! cannot put its own addresses in it.

use std::net::IpAddr;

use http::{HeaderMap, StatusCode};

use super::source::{IpStrategy, Key};
use super::{Flow, RequestCtx};
use crate::body::text;
use crate::proxy::forwarded_headers::{in_nets, parse_nets};

#[derive(Debug)]
pub(crate) struct IpAllowList {
    nets: Vec<ipnet::IpNet>,
    strategy: IpStrategy,
    reject: StatusCode,
}

impl IpAllowList {
    pub(crate) fn from_plan(c: &bridge_plan::IpAllowList) -> Self {
        Self {
            nets: parse_nets(&c.source_range),
            strategy: IpStrategy::new(c.depth, &c.excluded_ips, c.ipv6_subnet),
            reject: StatusCode::from_u16(c.reject_status_code).unwrap_or(StatusCode::FORBIDDEN),
        }
    }

    pub(crate) fn apply(&self, fields: &HeaderMap, ctx: &RequestCtx<'_>) -> Flow {
        let client = self.client_ip(ctx.peer, fields);
        if client.is_some_and(|ip| in_nets(&self.nets, ip)) {
            Flow::Continue
        } else {
            Flow::Respond(text(self.reject, "Forbidden"))
        }
    }

    /// The address this middleware judges; `None` when the strategy finds none, or an entry
    /// that is not an address (refused, as in Traefik).
    fn client_ip(&self, peer: IpAddr, fields: &HeaderMap) -> Option<IpAddr> {
        match self.strategy.key(peer, fields) {
            Key::Ip(ip) => Some(ip),
            Key::Text(_) => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::middleware::test_support::ctx;

    fn allow(range: &[&str], depth: u32, excluded: &[&str], status: u16) -> IpAllowList {
        IpAllowList::from_plan(&bridge_plan::IpAllowList {
            source_range: range.iter().map(|r| (*r).to_owned()).collect(),
            reject_status_code: status,
            depth,
            excluded_ips: excluded.iter().map(|r| (*r).to_owned()).collect(),
            ipv6_subnet: None,
        })
    }

    fn verdict(m: &IpAllowList, xff: Option<&str>) -> u16 {
        let mut fields = HeaderMap::new();
        if let Some(x) = xff {
            fields.insert("x-forwarded-for", x.parse().unwrap());
        }
        // The peer of `ctx` is 192.0.2.1.
        match m.apply(&fields, &ctx(None, "/")) {
            Flow::Continue => 200,
            Flow::Respond(r) => r.status().as_u16(),
            Flow::Wait(_) => panic!("ipAllowList never waits"),
        }
    }

    #[test]
    fn the_peer_is_judged_without_a_strategy() {
        assert_eq!(verdict(&allow(&["192.0.2.0/24"], 0, &[], 403), None), 200);
        assert_eq!(verdict(&allow(&["192.0.2.1"], 0, &[], 403), None), 200);
        assert_eq!(
            verdict(&allow(&["10.0.0.0/8"], 0, &[], 403), Some("10.0.0.1")),
            403
        );
        assert_eq!(verdict(&allow(&["10.0.0.0/8"], 0, &[], 404), None), 404);
    }

    #[test]
    fn depth_counts_forwarded_for_entries_from_the_right() {
        let m = allow(&["10.0.0.2/32"], 2, &[], 403);
        assert_eq!(verdict(&m, Some("10.0.0.1, 10.0.0.2, 10.0.0.3")), 200);
        assert_eq!(verdict(&m, Some("10.0.0.2")), 403, "too few entries");
        assert_eq!(verdict(&m, None), 403);
    }

    #[test]
    fn excluded_addresses_are_skipped_from_the_right() {
        let m = allow(&["10.0.0.1/32"], 0, &["10.0.0.3", "10.0.0.2"], 403);
        assert_eq!(verdict(&m, Some("10.0.0.1, 10.0.0.2,10.0.0.3")), 200);
        assert_eq!(verdict(&m, Some("10.0.0.9, 10.0.0.3")), 403);
        // Networks exclude too, and an entry that is not an address is the one judged (and
        // refused), as in Traefik — not skipped in favour of an entry further left.
        let m = allow(&["10.0.0.1/32"], 0, &["10.9.0.0/16"], 403);
        assert_eq!(verdict(&m, Some("10.0.0.1, 10.9.1.1, 10.9.2.2")), 200);
        assert_eq!(verdict(&m, Some("10.0.0.1, garbage")), 403);
    }
}
