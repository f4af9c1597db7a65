//! `ipAllowList`: requests from addresses outside `sourceRange` are refused (403 unless
//! `rejectStatusCode` says otherwise). The address judged is the peer's, or with
//! `ipStrategy.depth` the depth-th `X-Forwarded-For` entry from the right, or with
//! `ipStrategy.excludedIPs` the rightmost entry not excluded — Traefik's ipStrategy. The
//! `X-Forwarded-For` seen here is the one the entry point kept: a client that is not trusted
//! cannot put its own addresses in it.

use std::net::IpAddr;

use http::{HeaderMap, StatusCode};

use super::{Flow, RequestCtx};
use crate::body::text;
use crate::proxy::forwarded_headers::{in_nets, parse_nets};

#[derive(Debug)]
pub(crate) struct IpAllowList {
    nets: Vec<ipnet::IpNet>,
    depth: u32,
    excluded: Vec<String>,
    reject: StatusCode,
}

impl IpAllowList {
    pub(crate) fn from_plan(c: &bridge_plan::IpAllowList) -> Self {
        Self {
            nets: parse_nets(&c.source_range),
            depth: c.depth,
            excluded: c.excluded_ips.clone(),
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

    /// The address this middleware judges; `None` when the strategy finds none (refused).
    fn client_ip(&self, peer: IpAddr, fields: &HeaderMap) -> Option<IpAddr> {
        if self.depth == 0 && self.excluded.is_empty() {
            return Some(peer);
        }
        let xff: Vec<&str> = fields
            .get_all("x-forwarded-for")
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .map(str::trim)
            .collect();
        if self.depth > 0 {
            let i = xff.len().checked_sub(usize::try_from(self.depth).ok()?)?;
            return xff.get(i).and_then(|s| s.parse().ok());
        }
        xff.iter()
            .rev()
            .filter(|s| !self.excluded.iter().any(|e| e == *s))
            .find_map(|s| s.parse().ok())
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
    }
}
