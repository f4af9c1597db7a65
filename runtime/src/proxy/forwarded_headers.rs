//! Request and response header rewriting for forwarding, as Traefik does it.
//!
//! Hop-by-hop headers never cross the proxy; `X-Forwarded-*` and `X-Real-Ip` describe the client
//! as this proxy saw it, and values sent by the client are kept only when the peer is trusted
//! (`forwardedHeaders.insecure` or `trustedIPs`) — otherwise a client could claim any address.
//! Pure functions over `http::HeaderMap`, so they are tested without sockets.

use std::net::IpAddr;

use bridge_plan::ForwardedHeaders;
use http::header::{self, HeaderMap, HeaderName, HeaderValue};

// Header names are constants: looking a `&str` name up in a `HeaderMap` parses and validates it
// on every call, which showed in profiles of the request path.
const KEEP_ALIVE: HeaderName = HeaderName::from_static("keep-alive");
const PROXY_CONNECTION: HeaderName = HeaderName::from_static("proxy-connection");
const X_FORWARDED_FOR: HeaderName = HeaderName::from_static("x-forwarded-for");
const X_FORWARDED_HOST: HeaderName = HeaderName::from_static("x-forwarded-host");
const X_FORWARDED_PORT: HeaderName = HeaderName::from_static("x-forwarded-port");
const X_FORWARDED_PROTO: HeaderName = HeaderName::from_static("x-forwarded-proto");
const X_FORWARDED_SERVER: HeaderName = HeaderName::from_static("x-forwarded-server");
const X_REAL_IP: HeaderName = HeaderName::from_static("x-real-ip");

/// Headers that describe one connection and are never forwarded (RFC 9110 §7.6.1). Statics,
/// not constants: a constant array of names is built and dropped at every use.
pub(crate) static HOP_BY_HOP: [HeaderName; 9] = [
    header::CONNECTION,
    KEEP_ALIVE,
    PROXY_CONNECTION,
    header::PROXY_AUTHENTICATE,
    header::PROXY_AUTHORIZATION,
    header::TE,
    header::TRAILER,
    header::TRANSFER_ENCODING,
    header::UPGRADE,
];

/// The forwarding headers a client may not forge unless trusted: Traefik's managed set
/// (`X-Forwarded-Scheme` and `X-Scheme` included, which it removes though it sets them only on
/// request).
pub(crate) static FORWARDED_HEADERS: [HeaderName; 13] = [
    X_FORWARDED_FOR,
    X_FORWARDED_HOST,
    X_FORWARDED_PORT,
    X_FORWARDED_PROTO,
    X_FORWARDED_SERVER,
    HeaderName::from_static("x-forwarded-prefix"),
    HeaderName::from_static("x-forwarded-uri"),
    HeaderName::from_static("x-forwarded-method"),
    HeaderName::from_static("x-forwarded-tls-client-cert"),
    HeaderName::from_static("x-forwarded-tls-client-cert-info"),
    HeaderName::from_static("x-forwarded-scheme"),
    HeaderName::from_static("x-scheme"),
    X_REAL_IP,
];

/// The index in [`HOP_BY_HOP`] of `name` (any case, as received). The name's length rules out
/// almost every other name at once (comparing names one by one showed in profiles).
fn hop_by_hop_index(name: &[u8]) -> Option<usize> {
    let candidates: &[usize] = match name.len() {
        2 => &[5],
        7 => &[6, 8],
        10 => &[0, 1],
        16 => &[2],
        17 => &[7],
        18 => &[3],
        19 => &[4],
        _ => &[],
    };
    candidates
        .iter()
        .copied()
        .find(|&i| HOP_BY_HOP[i].as_str().as_bytes().eq_ignore_ascii_case(name))
}

/// True when `name` (any case, as received) is one of [`HOP_BY_HOP`].
pub(crate) fn is_hop_by_hop(name: &[u8]) -> bool {
    hop_by_hop_index(name).is_some()
}

/// True for a name in [`FORWARDED_HEADERS`], also written with underscores for dashes
/// (`X_Forwarded_Proto`): servers behind the proxy (CGI, some frameworks) read that spelling as
/// the same field, so it is as forgeable. All begin with `x-`/`x_`, which few names do.
pub(crate) fn is_forwarding(name: &HeaderName) -> bool {
    let n = name.as_str().as_bytes();
    n.len() > 2
        && n[0] == b'x'
        && (n[1] == b'-' || n[1] == b'_')
        && FORWARDED_HEADERS.iter().any(|m| {
            let m = m.as_str().as_bytes();
            m.len() == n.len()
                && m.iter()
                    .zip(n)
                    .all(|(&a, &b)| a == b || (a == b'-' && b == b'_'))
        })
}

/// Parses CIDR ranges or single addresses (as `/32` / `/128`), skipping ones the compiler would
/// already have rejected. Done once per plan, never per request.
pub(crate) fn parse_nets(ranges: &[String]) -> Vec<ipnet::IpNet> {
    ranges
        .iter()
        .filter_map(|r| {
            r.parse::<ipnet::IpNet>().ok().or_else(|| {
                r.parse::<IpAddr>()
                    .ok()
                    .map(|ip| ipnet::IpNet::from(canonical_ip(ip)))
            })
        })
        .collect()
}

/// True when `ip` (IPv4-mapped addresses compare as IPv4) lies in one of `nets`.
pub(crate) fn in_nets(nets: &[ipnet::IpNet], ip: IpAddr) -> bool {
    let ip = canonical_ip(ip);
    nets.iter().any(|n| n.contains(&ip))
}

/// An entry point's `forwardedHeaders`, parsed once: which peers may pass their own
/// `X-Forwarded-*` values through.
#[derive(Debug, Clone, Default)]
pub(crate) struct Trust {
    insecure: bool,
    nets: Vec<ipnet::IpNet>,
}

impl Trust {
    /// Parses the plan's settings.
    pub(crate) fn new(cfg: &ForwardedHeaders) -> Self {
        Self {
            insecure: cfg.insecure,
            nets: parse_nets(&cfg.trusted_ips),
        }
    }

    /// Whether the peer may pass its own `X-Forwarded-*` values through.
    pub(crate) fn trusts(&self, peer: IpAddr) -> bool {
        self.insecure || in_nets(&self.nets, peer)
    }
}

/// IPv4-mapped IPv6 addresses (`::ffff:10.0.0.1`) compare as IPv4.
pub(crate) fn canonical_ip(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    }
}

/// True when the request asks to switch protocols to WebSocket (or any protocol) — its `Upgrade`
/// and `Connection: upgrade` must then be kept for the upstream.
pub(crate) fn is_upgrade(headers: &HeaderMap) -> bool {
    headers.contains_key(header::UPGRADE)
        && headers
            .get_all(header::CONNECTION)
            .iter()
            .filter_map(|v| v.to_str().ok())
            .flat_map(|v| v.split(','))
            .any(|t| t.trim().eq_ignore_ascii_case("upgrade"))
}

/// Removes hop-by-hop headers, including those named in `Connection`. When `keep_upgrade`, the
/// `Upgrade` header and `Connection: upgrade` are kept so the upstream can switch protocols.
pub(crate) fn strip_hop_by_hop(headers: &mut HeaderMap, keep_upgrade: bool) {
    // One pass over the (few) names finds which hop-by-hop ones are there: most messages carry
    // one (`Connection`) or none, and a removal costs a hash each.
    let mut present = 0u16;
    for name in headers.keys() {
        if let Some(i) = hop_by_hop_index(name.as_str().as_bytes()) {
            present |= 1 << i;
        }
    }
    if present & 1 != 0 {
        // The fields `Connection` names go too. Its values are shared bytes, so keeping them
        // while the map changes costs a reference count, not a copy; one value (the common case)
        // needs no list.
        let mut values = headers.get_all(header::CONNECTION).iter();
        let (first, rest) = (values.next().cloned(), values.cloned().collect::<Vec<_>>());
        for value in first.iter().chain(&rest) {
            let Ok(value) = value.to_str() else { continue };
            for token in value.split(',').map(str::trim) {
                // Hop-by-hop names go below anyway, and `close` names no field: no lookup.
                let listed = token.eq_ignore_ascii_case("close") || is_hop_by_hop(token.as_bytes());
                // Nor can a client remove the forwarding fields this way (as in Traefik): a
                // trusted peer's values stay, and the proxy's own are added after.
                let managed =
                    HeaderName::from_bytes(token.as_bytes()).is_ok_and(|n| is_forwarding(&n));
                if !token.is_empty() && !listed && !managed {
                    // A `&str` name is checked and lower-cased on the stack: no allocation.
                    headers.remove(token);
                }
            }
        }
    }
    for (i, name) in HOP_BY_HOP.iter().enumerate() {
        if present & (1 << i) == 0
            || (keep_upgrade && (name == header::UPGRADE || name == header::CONNECTION))
        {
            continue;
        }
        headers.remove(name);
    }
    if keep_upgrade {
        headers.insert(header::CONNECTION, HeaderValue::from_static("upgrade"));
    }
}

/// What the proxy knows about the incoming connection.
#[derive(Debug, Clone)]
pub(crate) struct Incoming<'a> {
    /// TCP peer.
    pub peer: IpAddr,
    /// The connection is TLS.
    pub tls: bool,
    /// The request asks to switch protocols ([`is_upgrade`]).
    pub upgrade: bool,
    /// The request's host (authority or Host header), with port if any.
    pub host: Option<&'a HeaderValue>,
    /// The entry point's port, used when the host carries none.
    pub entrypoint_port: u16,
}

/// The value `X-Forwarded-For` and `X-Real-Ip` carry for a peer (IPv4-mapped addresses as IPv4).
pub(crate) fn peer_value(peer: IpAddr) -> HeaderValue {
    HeaderValue::from_str(&canonical_ip(peer).to_string())
        .unwrap_or_else(|_| HeaderValue::from_static("unknown"))
}

/// Where the values of the proxy's forwarding fields come from: the request's host and the
/// peer (per connection) and this proxy's name (per plan) are shared values already, so a
/// [`Forwarded`] only records which fields to write and never copies them.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sources<'a> {
    /// The request's host (authority or `Host`), for `X-Forwarded-Host`.
    pub host: Option<&'a HeaderValue>,
    /// The peer's address, for `X-Real-Ip`.
    pub peer: &'a HeaderValue,
    /// This proxy's host name, for `X-Forwarded-Server`.
    pub server_name: &'a HeaderValue,
}

/// The forwarding fields the proxy adds to a request, decided by [`forwarded`] when the request
/// arrives, before routing (Traefik's entry point step), so rules, middlewares and the access
/// log see them too ([`Forwarded::visible`]). None of them is in the request's map: they are
/// written after its fields (the proxy's own codec: no hash and insert each) or put into the
/// map with [`Forwarded::apply`]. `X-Forwarded-For` gets the peer appended only when the
/// request is forwarded ([`Forwarded::append_for`]), as in Traefik, where the reverse proxy
/// appends it. Small on purpose (it travels with every request's future): flags and a port,
/// the values come from [`Sources`] when written.
#[derive(Debug, Clone, Default)]
pub(crate) struct Forwarded {
    /// Bits of [`SLOT_NAMES`] the proxy sets (`X-Forwarded-For` only once appended).
    set: u8,
    /// Index into [`PROTOS`].
    proto: u8,
    port: u16,
    /// The map may hold `X-Forwarded-For` values (a trusted peer's, or a middleware's): only
    /// then is it looked up (hashing that name showed in profiles).
    for_in_map: bool,
    for_value: Option<HeaderValue>,
}

/// The fields in the order Traefik's forwarder sets them; a [`Forwarded`] bit per slot.
static SLOT_NAMES: [HeaderName; 6] = [
    X_FORWARDED_FOR,
    X_FORWARDED_PROTO,
    X_FORWARDED_HOST,
    X_FORWARDED_PORT,
    X_FORWARDED_SERVER,
    X_REAL_IP,
];
const FOR: u8 = 1;
const PROTO: u8 = 2;
const HOST: u8 = 4;
const PORT: u8 = 8;
const SERVER: u8 = 16;
const REAL_IP: u8 = 32;
/// `X-Forwarded-Proto` values.
const PROTOS: [&str; 4] = ["http", "https", "ws", "wss"];

impl Forwarded {
    /// The fields as `(name, value)` bytes, in order, values from `src` (`visible`: without
    /// `X-Forwarded-For`, as before forwarding). The port is written on `digits`: no string.
    fn each<'s>(
        &'s self,
        src: &Sources<'s>,
        visible: bool,
        digits: &'s mut [u8; 5],
        mut f: impl FnMut(&'static HeaderName, &'s [u8]),
    ) {
        let port = port_digits(self.port, digits);
        for (bit, name) in SLOT_NAMES.iter().enumerate() {
            let bit = 1u8 << bit;
            if self.set & bit == 0 || (visible && bit == FOR) {
                continue;
            }
            let value: &[u8] = match bit {
                FOR => self
                    .for_value
                    .as_ref()
                    .map_or(&[][..], HeaderValue::as_bytes),
                PROTO => PROTOS[usize::from(self.proto)].as_bytes(),
                HOST => src.host.map_or(&[][..], HeaderValue::as_bytes),
                PORT => port,
                SERVER => src.server_name.as_bytes(),
                _ => src.peer.as_bytes(),
            };
            f(name, value);
        }
    }

    /// Writes the fields as header lines (the proxy's own codec).
    pub(crate) fn write(&self, src: &Sources<'_>, out: &mut Vec<u8>) {
        let mut digits = [0u8; 5];
        self.each(src, false, &mut digits, |name, value| {
            crate::http1::client::put_field(out, name.as_str().as_bytes(), value);
        });
    }

    /// The fields as routing, middlewares and the access log see them (text values only):
    /// before forwarding, `X-Forwarded-For` is only what a trusted peer sent (in the map).
    pub(crate) fn visible(&self, src: &Sources<'_>) -> Vec<(&'static str, String)> {
        let mut out = Vec::with_capacity(5);
        let mut digits = [0u8; 5];
        self.visible_each(src, &mut digits, |name, value| {
            out.push((name, value.to_owned()));
        });
        out
    }

    /// Calls `f` with each visible field as text, without copying values (routing).
    pub(crate) fn visible_each<'s>(
        &'s self,
        src: &Sources<'s>,
        digits: &'s mut [u8; 5],
        mut f: impl FnMut(&'static str, &'s str),
    ) {
        self.each(src, true, digits, |name, value| {
            if let Ok(v) = std::str::from_utf8(value) {
                f(name.as_str(), v);
            }
        });
    }

    /// Drops the proxy's value for `name`: a middleware set or removed that field, and the
    /// middleware's choice wins, as when Traefik's headers middleware overwrites it.
    pub(crate) fn forget(&mut self, name: &HeaderName) {
        match SLOT_NAMES.iter().position(|n| n == name) {
            Some(0) => self.for_in_map = true,
            Some(i) => self.set &= !(1 << i),
            None => {}
        }
    }

    /// Sets `X-Forwarded-For`: the values in `headers` (a trusted peer's, or a middleware's),
    /// joined as Go's reverse proxy joins them, then `peer`; they leave the map.
    pub(crate) fn append_for(&mut self, headers: &mut HeaderMap, peer: &HeaderValue) {
        let xff = if self.for_in_map && headers.contains_key(&X_FORWARDED_FOR) {
            let mut joined = String::new();
            for prior in headers.get_all(&X_FORWARDED_FOR) {
                let Ok(prior) = prior.to_str() else { continue };
                if !prior.trim().is_empty() {
                    joined.push_str(prior);
                    joined.push_str(", ");
                }
            }
            headers.remove(&X_FORWARDED_FOR);
            joined.push_str(peer.to_str().unwrap_or_default());
            HeaderValue::from_str(&joined).unwrap_or_else(|_| peer.clone())
        } else {
            peer.clone()
        };
        self.for_value = Some(xff);
        self.set |= FOR;
    }

    /// Adds the fields to `headers` (the paths through hyper's client).
    pub(crate) fn apply(self, src: &Sources<'_>, headers: &mut HeaderMap) {
        let mut digits = [0u8; 5];
        self.each(src, false, &mut digits, |name, value| {
            if let Ok(v) = HeaderValue::from_bytes(value) {
                headers.insert(name, v);
            }
        });
    }
}

/// `port` in decimal on `buf`.
fn port_digits(port: u16, buf: &mut [u8; 5]) -> &[u8] {
    let mut n = port;
    let mut at = buf.len();
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

/// Traefik's entry point `forwardedHeaders` step, applied when a request arrives: unless the
/// peer is trusted, every forwarding field the client sent is removed (underscore spellings
/// too); then `X-Forwarded-Proto/-Host/-Port/-Server` and `X-Real-Ip` are set (a trusted peer's
/// values kept, except `-Server`). Returns the fields to add; the ones it replaces are removed
/// from `headers`.
pub(crate) fn forwarded(headers: &mut HeaderMap, inc: &Incoming<'_>, trust: &Trust) -> Forwarded {
    // Clients rarely send any of these: when none is there, no lookup is needed below.
    let any = headers.keys().any(is_forwarding);
    let kept = any && trust.trusts(inc.peer);
    let mut out = Forwarded {
        set: SERVER,
        proto: 0,
        port: 0,
        for_in_map: kept,
        for_value: None,
    };
    if any && !kept {
        let forged: Vec<HeaderName> = headers
            .keys()
            .filter(|n| is_forwarding(n))
            .cloned()
            .collect();
        for name in forged {
            headers.remove(name);
        }
    }
    let has = |headers: &HeaderMap, name: &HeaderName| kept && headers.contains_key(name);
    let proto_kept = if has(headers, &X_FORWARDED_PROTO) {
        headers
            .get(&X_FORWARDED_PROTO)
            .is_some_and(|v| v == "https" || v == "wss")
    } else {
        let websocket = inc.upgrade
            && headers
                .get(header::UPGRADE)
                .and_then(|v| v.to_str().ok())
                .is_some_and(|v| v.eq_ignore_ascii_case("websocket"));
        out.proto = u8::from(inc.tls) + 2 * u8::from(websocket);
        out.set |= PROTO;
        false
    };
    if !has(headers, &X_FORWARDED_HOST) && inc.host.is_some() {
        out.set |= HOST;
    }
    if !has(headers, &X_FORWARDED_PORT) {
        let host = inc.host.and_then(|h| h.to_str().ok());
        out.port = host.and_then(host_port).unwrap_or(if host.is_some() {
            // Traefik: a trusted `X-Forwarded-Proto: https` means 443 too.
            if inc.tls || proto_kept { 443 } else { 80 }
        } else {
            inc.entrypoint_port
        });
        out.set |= PORT;
    }
    if kept {
        headers.remove(&X_FORWARDED_SERVER);
    }
    if !has(headers, &X_REAL_IP) {
        out.set |= REAL_IP;
    }
    out
}

/// The port of `host[:port]` / `[v6]:port`, if written. A bare IPv6 address (more than one
/// colon, no brackets) has none.
pub(crate) fn host_port(host: &str) -> Option<u16> {
    let b = host.as_bytes();
    // One scan from the end (ports are short), then the part before the colon: a bracketed
    // address must end there, an unbracketed host must have no other colon.
    let colon = b.iter().rposition(|&c| c == b':')?;
    let (head, port) = b.split_at(colon);
    let whole = if head.first() == Some(&b'[') {
        head.last() == Some(&b']')
    } else {
        !head.contains(&b':')
    };
    if !whole {
        return None;
    }
    crate::http1::client::parse_decimal(&port[1..]).and_then(|p| u16::try_from(p).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The peer's value of a test connection (leaked: tests only).
    fn pv(inc: &Incoming<'_>) -> &'static HeaderValue {
        Box::leak(Box::new(peer_value(inc.peer)))
    }

    /// The proxy's name in these tests.
    fn server() -> &'static HeaderValue {
        Box::leak(Box::new(HeaderValue::from_static("bridge-1")))
    }

    /// [`forwarded`] applied to the map, as requests to other than `http://` servers get it.
    fn set_forwarded(headers: &mut HeaderMap, inc: &Incoming<'_>, trust: &Trust) {
        let mut f = forwarded(headers, inc, trust);
        f.append_for(headers, pv(inc));
        f.apply(&src(inc), headers);
    }

    fn src<'a>(inc: &Incoming<'a>) -> Sources<'a> {
        Sources {
            host: inc.host,
            peer: pv(inc),
            server_name: server(),
        }
    }

    /// The fields as the own codec writes them: `(name, value)` lines.
    fn written(f: &Forwarded, inc: &Incoming<'_>) -> Vec<(String, String)> {
        let mut out = Vec::new();
        f.write(&src(inc), &mut out);
        String::from_utf8(out)
            .unwrap()
            .lines()
            .map(|l| {
                let (n, v) = l.split_once(": ").unwrap();
                (n.to_owned(), v.to_owned())
            })
            .collect()
    }

    fn cfg(insecure: bool, trusted: &[&str]) -> Trust {
        Trust::new(&ForwardedHeaders {
            insecure,
            trusted_ips: trusted.iter().map(|s| s.to_string()).collect(),
        })
    }

    fn inc(peer: &str, tls: bool, host: Option<&'static str>) -> Incoming<'static> {
        let peer: IpAddr = peer.parse().unwrap();
        Incoming {
            peer,
            tls,
            upgrade: false,
            host: host.map(|h| &*Box::leak(Box::new(HeaderValue::from_static(h)))),
            entrypoint_port: 80,
        }
    }

    #[test]
    fn untrusted_clients_cannot_forge_forwarded_headers() {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", HeaderValue::from_static("6.6.6.6"));
        h.insert("x-real-ip", HeaderValue::from_static("6.6.6.6"));
        h.insert("x-forwarded-proto", HeaderValue::from_static("https"));
        set_forwarded(
            &mut h,
            &inc("192.0.2.7", false, Some("app.example.com")),
            &cfg(false, &[]),
        );
        assert_eq!(h["x-forwarded-for"], "192.0.2.7");
        assert_eq!(h["x-real-ip"], "192.0.2.7");
        assert_eq!(h["x-forwarded-proto"], "http");
        assert_eq!(h["x-forwarded-host"], "app.example.com");
        assert_eq!(h["x-forwarded-port"], "80");
        assert_eq!(h["x-forwarded-server"], "bridge-1");
    }

    #[test]
    fn trusted_peers_keep_their_values_and_for_is_appended() {
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", HeaderValue::from_static("203.0.113.9"));
        h.insert("x-forwarded-proto", HeaderValue::from_static("https"));
        set_forwarded(
            &mut h,
            &inc("10.1.2.3", false, Some("app.example.com:8443")),
            &cfg(false, &["10.0.0.0/8"]),
        );
        assert_eq!(h["x-forwarded-for"], "203.0.113.9, 10.1.2.3");
        assert_eq!(h["x-forwarded-proto"], "https");
        assert_eq!(h["x-forwarded-port"], "8443");
        assert_eq!(h["x-real-ip"], "10.1.2.3");
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-for", HeaderValue::from_static("203.0.113.9"));
        set_forwarded(&mut h, &inc("::ffff:10.1.2.3", true, None), &cfg(true, &[]));
        assert_eq!(h["x-forwarded-for"], "203.0.113.9, 10.1.2.3");
        assert_eq!(h["x-forwarded-proto"], "https");
        // Every value a trusted peer sent is kept, in order (Go joins them alike).
        let mut h = HeaderMap::new();
        h.append("x-forwarded-for", HeaderValue::from_static("198.51.100.1"));
        h.append("x-forwarded-for", HeaderValue::from_static("203.0.113.9"));
        set_forwarded(&mut h, &inc("10.1.2.3", false, None), &cfg(true, &[]));
        let all: Vec<_> = h.get_all("x-forwarded-for").iter().collect();
        assert_eq!(all, ["198.51.100.1, 203.0.113.9, 10.1.2.3"]);
    }

    #[test]
    fn websocket_proto_and_hop_by_hop() {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONNECTION,
            HeaderValue::from_static("Upgrade, X-Secret"),
        );
        h.insert(header::UPGRADE, HeaderValue::from_static("websocket"));
        h.insert("x-secret", HeaderValue::from_static("1"));
        h.insert("keep-alive", HeaderValue::from_static("timeout=5"));
        h.insert(header::TE, HeaderValue::from_static("trailers"));
        assert!(is_upgrade(&h));
        let upgrading = Incoming {
            upgrade: true,
            ..inc("192.0.2.1", true, Some("a"))
        };
        set_forwarded(&mut h, &upgrading, &cfg(false, &[]));
        assert_eq!(h["x-forwarded-proto"], "wss");
        strip_hop_by_hop(&mut h, true);
        assert_eq!(h[header::UPGRADE], "websocket");
        assert_eq!(h[header::CONNECTION], "upgrade");
        assert!(
            !h.contains_key("x-secret")
                && !h.contains_key("keep-alive")
                && !h.contains_key(header::TE)
        );
        strip_hop_by_hop(&mut h, false);
        assert!(!h.contains_key(header::UPGRADE) && !h.contains_key(header::CONNECTION));
    }

    #[test]
    fn hop_by_hop_and_forwarding_names_are_recognised_by_their_text() {
        for (i, name) in HOP_BY_HOP.iter().enumerate() {
            assert_eq!(
                hop_by_hop_index(name.as_str().as_bytes()),
                Some(i),
                "{name}"
            );
        }
        for name in [
            "host",
            "trailers",
            "connectio",
            "keep-alives",
            "x-forwarded",
            "tf",
        ] {
            let name = HeaderName::from_static(name);
            assert_eq!(hop_by_hop_index(name.as_str().as_bytes()), None, "{name}");
            assert!(!is_forwarding(&name), "{name}");
        }
        assert!(FORWARDED_HEADERS.iter().all(is_forwarding));
        assert_eq!(
            hop_by_hop_index(FORWARDED_HEADERS[0].as_str().as_bytes()),
            None
        );
    }

    #[test]
    fn added_fields_are_never_already_in_the_map() {
        // Trusted peer with every forwarding field set: kept ones are not added again, replaced
        // ones (For, Server) leave the map, so writing map + added fields duplicates none.
        let mut h = HeaderMap::new();
        for name in &FORWARDED_HEADERS {
            h.insert(name, HeaderValue::from_static("203.0.113.9"));
        }
        let i = inc("10.1.2.3", false, Some("a"));
        let mut f = forwarded(&mut h, &i, &cfg(true, &[]));
        f.append_for(&mut h, pv(&i));
        let fields = written(&f, &i);
        for (name, _) in &fields {
            assert!(!h.contains_key(name), "{name} is in the map and added");
        }
        let added: Vec<&str> = fields.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(added, ["x-forwarded-for", "x-forwarded-server"]);
        assert_eq!(fields[0].1, "203.0.113.9, 10.1.2.3");
        // Untrusted: all six are added, and the client's are gone.
        let mut h = HeaderMap::new();
        h.insert("x-forwarded-host", HeaderValue::from_static("evil"));
        let i = inc("10.1.2.3", false, Some("a"));
        let mut f = forwarded(&mut h, &i, &cfg(false, &[]));
        assert!(h.is_empty());
        assert_eq!(
            written(&f, &i).len(),
            5,
            "X-Forwarded-For waits for forwarding"
        );
        assert!(
            f.visible(&src(&i))
                .iter()
                .all(|(n, _)| *n != "x-forwarded-for")
        );
        f.append_for(&mut h, pv(&i));
        assert_eq!(
            written(&f, &i),
            [
                ("x-forwarded-for", "10.1.2.3"),
                ("x-forwarded-proto", "http"),
                ("x-forwarded-host", "a"),
                ("x-forwarded-port", "80"),
                ("x-forwarded-server", "bridge-1"),
                ("x-real-ip", "10.1.2.3"),
            ]
            .map(|(n, v)| (n.to_owned(), v.to_owned()))
        );
    }

    #[test]
    fn underscore_spellings_are_forged_fields_too() {
        let mut h = HeaderMap::new();
        h.insert("x_forwarded_proto", HeaderValue::from_static("https"));
        h.insert("x_real_ip", HeaderValue::from_static("6.6.6.6"));
        h.insert("x-forwarded-scheme", HeaderValue::from_static("https"));
        h.insert("x_kept", HeaderValue::from_static("1"));
        let i = inc("192.0.2.7", false, Some("a"));
        let f = forwarded(&mut h, &i, &cfg(false, &[]));
        let left: Vec<&str> = h.keys().map(HeaderName::as_str).collect();
        assert_eq!(left, ["x_kept"]);
        assert!(
            f.visible(&src(&i))
                .contains(&("x-forwarded-proto", "http".to_owned()))
        );
        // A trusted peer's are left alone.
        let mut h = HeaderMap::new();
        h.insert("x_forwarded_proto", HeaderValue::from_static("https"));
        forwarded(&mut h, &inc("10.0.0.1", false, Some("a")), &cfg(true, &[]));
        assert!(h.contains_key("x_forwarded_proto"));
    }

    #[test]
    fn connection_cannot_remove_a_trusted_peers_forwarding_fields() {
        let mut h = HeaderMap::new();
        h.insert(
            header::CONNECTION,
            HeaderValue::from_static("X-Forwarded-For, x-real-ip, X-Other"),
        );
        h.insert("x-forwarded-for", HeaderValue::from_static("203.0.113.9"));
        h.insert("x-real-ip", HeaderValue::from_static("203.0.113.9"));
        h.insert("x-other", HeaderValue::from_static("1"));
        strip_hop_by_hop(&mut h, false);
        assert!(h.contains_key("x-forwarded-for") && h.contains_key("x-real-ip"));
        assert!(!h.contains_key("x-other"));
    }

    #[test]
    fn a_middleware_value_replaces_the_proxys_and_for_is_appended_last() {
        let mut h = HeaderMap::new();
        let i = inc("192.0.2.7", false, Some("a"));
        let mut f = forwarded(&mut h, &i, &cfg(false, &[]));
        let visible: Vec<&str> = f.visible(&src(&i)).iter().map(|(n, _)| *n).collect();
        assert_eq!(
            visible,
            [
                "x-forwarded-proto",
                "x-forwarded-host",
                "x-forwarded-port",
                "x-forwarded-server",
                "x-real-ip"
            ]
        );
        f.forget(&X_FORWARDED_PROTO);
        h.insert(X_FORWARDED_PROTO, HeaderValue::from_static("https"));
        f.forget(&X_FORWARDED_FOR); // not the proxy's before forwarding: nothing to forget
        h.insert(X_FORWARDED_FOR, HeaderValue::from_static("198.51.100.1"));
        f.append_for(&mut h, pv(&i));
        f.apply(&src(&i), &mut h);
        assert_eq!(h["x-forwarded-proto"], "https");
        assert_eq!(h["x-forwarded-for"], "198.51.100.1, 192.0.2.7");
        assert_eq!(h.get_all("x-forwarded-proto").iter().count(), 1);
    }

    #[test]
    fn fields_named_in_every_connection_line_are_removed() {
        let mut h = HeaderMap::new();
        h.append(header::CONNECTION, HeaderValue::from_static("close, X-A"));
        h.append(
            header::CONNECTION,
            HeaderValue::from_static(" x-b ,,Keep-Alive"),
        );
        for name in ["x-a", "x-b", "keep-alive", "x-kept"] {
            h.insert(name, HeaderValue::from_static("1"));
        }
        strip_hop_by_hop(&mut h, false);
        let left: Vec<&str> = h.keys().map(HeaderName::as_str).collect();
        assert_eq!(left, ["x-kept"]);
    }

    #[test]
    fn ports_are_written_without_a_string() {
        let mut buf = [0u8; 5];
        for p in [0u16, 7, 80, 443, 8080, 18282, 65535] {
            assert_eq!(port_digits(p, &mut buf), p.to_string().as_bytes());
        }
    }

    #[test]
    fn ports_from_hosts() {
        assert_eq!(host_port("a.example.com:8080"), Some(8080));
        assert_eq!(host_port("a.example.com"), None);
        assert_eq!(host_port("[::1]:9000"), Some(9000));
        assert_eq!(host_port("[::1]"), None);
        assert_eq!(host_port("::1"), None);
        assert_eq!(host_port("a:"), None);
        assert_eq!(host_port("a:65536"), None);
        assert_eq!(host_port("a:+80"), None);
        assert_eq!(host_port("[::1]x:80"), None);
        assert_eq!(host_port("[::1"), None);
        assert_eq!(host_port("[::1]:"), None);
        assert_eq!(host_port("a:b:80"), None);
        assert_eq!(host_port("[::1]x"), None);
    }
}
