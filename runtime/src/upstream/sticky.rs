//! Sticky sessions (Traefik's `sticky.cookie` on a load balancer), measured against Traefik
//! 3.7.15 in `docs/traefik-behaviour/load-balancing.md` §3.
//!
//! A server's cookie value is the first 16 hex digits of the SHA-256 of its URL as written, so
//! it is the same in every build and in Traefik: a reload, or a move between Traefik and
//! bridge-runtime, keeps every session where it was. The values Traefik wrote before (the URL
//! itself, its FNV-1 hash, the FNV-1 hash of that) are still read, and answered with the current
//! one. Everything is computed when the plan is loaded; a request only compares strings.

use http::{HeaderMap, HeaderValue, header};
use sha2::Digest as _;

/// A load balancer's cookie and its value for each server, in the servers' order.
#[derive(Debug)]
pub(crate) struct Sticky {
    name: Box<str>,
    servers: Vec<ServerCookie>,
}

#[derive(Debug)]
struct ServerCookie {
    current: Box<str>,
    /// The forms Traefik wrote before: the URL, its FNV-1 hash, the FNV-1 hash of that hash.
    legacy: [Box<str>; 3],
    /// The whole `Set-Cookie` value for this server.
    set_cookie: HeaderValue,
}

/// What a request's cookie says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Named {
    /// The server's position among the load balancer's servers.
    pub(crate) index: usize,
    /// The cookie was written in a form Traefik no longer writes: it is answered with the new one.
    pub(crate) legacy: bool,
}

impl Sticky {
    /// `None` when an attribute cannot be a field value (the compiler only writes ones that can).
    pub(crate) fn new<'a>(
        c: &bridge_plan::StickyCookie,
        urls: impl Iterator<Item = &'a str>,
    ) -> Option<Self> {
        // Go's `http.Cookie.String` order.
        let mut attributes = String::new();
        if let Some(p) = &c.path {
            attributes.push_str("; Path=");
            attributes.push_str(p);
        }
        if let Some(d) = &c.domain {
            attributes.push_str("; Domain=");
            attributes.push_str(d);
        }
        if let Some(age) = c.max_age {
            attributes.push_str(&format!("; Max-Age={age}"));
        }
        if c.http_only {
            attributes.push_str("; HttpOnly");
        }
        if c.secure {
            attributes.push_str("; Secure");
        }
        if let Some(s) = c.same_site {
            attributes.push_str("; SameSite=");
            attributes.push_str(s.as_str());
        }
        let servers = urls
            .map(|url| {
                let current = value(url);
                let fnv = format!("{:x}", fnv1(url.as_bytes()));
                let double = format!("{:x}", fnv1(fnv.as_bytes()));
                let set_cookie =
                    HeaderValue::try_from(format!("{}={current}{attributes}", c.name)).ok()?;
                Some(ServerCookie {
                    current: current.into(),
                    legacy: [url.into(), fnv.into(), double.into()],
                    set_cookie,
                })
            })
            .collect::<Option<Vec<_>>>()?;
        Some(Self {
            name: c.name.as_str().into(),
            servers,
        })
    }

    /// The server the request's cookie names, if it names one.
    pub(crate) fn named(&self, cookies: &[HeaderValue]) -> Option<Named> {
        let v = request_cookie(cookies, &self.name)?;
        if let Some(index) = self.servers.iter().position(|s| *s.current == *v) {
            return Some(Named {
                index,
                legacy: false,
            });
        }
        self.servers
            .iter()
            .position(|s| s.legacy.iter().any(|l| **l == *v))
            .map(|index| Named {
                index,
                legacy: true,
            })
    }

    /// The `Set-Cookie` value that sends the client back to the server at `index`.
    pub(crate) fn set_cookie(&self, index: usize) -> Option<&HeaderValue> {
        self.servers.get(index).map(|s| &s.set_cookie)
    }
}

/// The request's `Cookie` fields, for [`Sticky::named`] (copies share the request's bytes);
/// `None` when it has none.
pub(crate) fn cookies(fields: &HeaderMap) -> Option<Box<[HeaderValue]>> {
    let all = fields.get_all(header::COOKIE);
    all.iter()
        .next()
        .is_some()
        .then(|| all.iter().cloned().collect())
}

/// A server's cookie value: 16 hex digits of the SHA-256 of its URL as written.
fn value(url: &str) -> String {
    let digest = sha2::Sha256::digest(url.as_bytes());
    digest[..8].iter().map(|b| format!("{b:02x}")).collect()
}

/// 64-bit FNV-1 (multiply, then xor), which Traefik's older cookie values used.
fn fnv1(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h: u64, &b| {
        h.wrapping_mul(0x0000_0100_0000_01b3) ^ u64::from(b)
    })
}

/// Go's `Request.Cookie(name)`: the first cookie of that name in any `Cookie` field whose value
/// Go accepts (surrounding quotes removed).
fn request_cookie<'a>(cookies: &'a [HeaderValue], name: &str) -> Option<&'a str> {
    cookies
        .iter()
        .filter_map(|f| f.to_str().ok())
        .flat_map(|line| line.split(';'))
        .find_map(|part| {
            let (n, v) = part.trim_matches([' ', '\t']).split_once('=')?;
            if n != name {
                return None;
            }
            let v = v
                .strip_prefix('"')
                .and_then(|v| v.strip_suffix('"'))
                .unwrap_or(v);
            v.bytes()
                .all(|b| (0x20..0x7f).contains(&b) && !matches!(b, b'"' | b';' | b'\\'))
                .then_some(v)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cookie(overrides: serde_json::Value) -> bridge_plan::StickyCookie {
        let mut base = serde_json::json!({
            "name": "st", "path": "/", "domain": null, "max_age": null,
            "http_only": false, "secure": false, "same_site": null
        });
        for (k, v) in overrides.as_object().into_iter().flatten() {
            base[k] = v.clone();
        }
        serde_json::from_value(base).unwrap()
    }

    const A: &str = "http://127.0.0.1:18310";
    const B: &str = "http://127.0.0.1:18311";

    #[test]
    fn values_are_traefiks() {
        // Read off Traefik 3.7.15's Set-Cookie fields.
        assert_eq!(value(A), "cbe53ad99e94c64b");
        assert_eq!(value(B), "0331f92f4cc2b732");
        assert_eq!(value("http://127.0.0.1:18311/"), "e277b98e1499e8cc");
        assert_eq!(value("c1"), "d0f631ca1ddba8db");
        // And the legacy forms Traefik routed to B.
        assert_eq!(format!("{:x}", fnv1(B.as_bytes())), "ab1cc60d64b7bd88");
        assert_eq!(
            format!("{:x}", fnv1(b"ab1cc60d64b7bd88")),
            "8a4f545f92def3ae"
        );
    }

    #[test]
    fn set_cookie_has_gos_attribute_order() {
        let s = Sticky::new(
            &cookie(serde_json::json!({
                "name": "sc", "path": "/app", "domain": "example.com", "max_age": 60,
                "http_only": true, "secure": true, "same_site": "lax"
            })),
            [A, B].into_iter(),
        )
        .unwrap();
        assert_eq!(
            s.set_cookie(1).unwrap(),
            "sc=0331f92f4cc2b732; Path=/app; Domain=example.com; Max-Age=60; HttpOnly; Secure; SameSite=Lax"
        );
        let s = Sticky::new(&cookie(serde_json::json!({"path": null})), [A].into_iter()).unwrap();
        assert_eq!(s.set_cookie(0).unwrap(), "st=cbe53ad99e94c64b");
    }

    #[test]
    fn the_request_cookie_is_read_as_go_reads_it() {
        let s = Sticky::new(&cookie(serde_json::json!({})), [A, B].into_iter()).unwrap();
        let named = |lines: &[&str]| {
            let v: Vec<HeaderValue> = lines
                .iter()
                .map(|l| HeaderValue::from_str(l).unwrap())
                .collect();
            s.named(&v)
        };
        let b = Some(Named {
            index: 1,
            legacy: false,
        });
        assert_eq!(named(&["st=0331f92f4cc2b732"]), b);
        assert_eq!(
            named(&["a=1; st=\"0331f92f4cc2b732\";"]),
            b,
            "quoted, trailing ;"
        );
        assert_eq!(
            named(&["a=1", "st=0331f92f4cc2b732"]),
            b,
            "second field (HTTP/2)"
        );
        assert_eq!(
            named(&["st=cbe53ad99e94c64b; st=0331f92f4cc2b732"]).map(|n| n.index),
            Some(0),
            "first wins"
        );
        assert_eq!(
            named(&["ST=0331f92f4cc2b732"]),
            None,
            "the name is case-sensitive"
        );
        assert_eq!(named(&["st=0331F92F4CC2B732"]), None, "so is the value");
        assert_eq!(named(&["st=unknown"]), None);
        for legacy in [B, "ab1cc60d64b7bd88", "8a4f545f92def3ae"] {
            assert_eq!(
                named(&[&format!("st={legacy}")]),
                Some(Named {
                    index: 1,
                    legacy: true
                }),
                "{legacy}"
            );
        }
        // A value Go refuses is not read, so a later one is.
        assert_eq!(
            named(&["st=a\\b; st=cbe53ad99e94c64b"]).map(|n| n.index),
            Some(0)
        );
    }
}
