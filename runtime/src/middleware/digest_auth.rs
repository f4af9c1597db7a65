//! `digestAuth`: HTTP Digest authentication (RFC 2617, MD5, `qop=auth`) as Traefik 3.7.15
//! answers it (docs/traefik-behaviour/digestauth-passtlsclientcert.md §1): the challenge's
//! exact fields and order, the checks in Traefik's order, its path-prefix `uri` rule, its nonce
//! table (minted by every 401, at most 1100 before the 200 least recently seen go) and its
//! `nc` replay rule. One instance per router, as Traefik builds them: its own opaque and nonces.

use std::collections::HashMap;
use std::sync::Mutex;

use base64::Engine as _;
use bytes::Bytes;
use http::{HeaderMap, HeaderName, HeaderValue, Method, Response, StatusCode, header};
use md5::{Digest as _, Md5};

use super::basic_auth::AuthError;

/// Nonces kept before the table is purged (go-http-auth's ClientCacheSize + tolerance).
const TABLE_LIMIT: usize = 1100;
/// How many of the least recently seen go at a purge.
const PURGE: usize = 200;

/// A nonce's state: the largest `nc` accepted on it (0: none yet) and when it was last seen
/// (a tick, for the purge order).
#[derive(Debug, Clone, Copy)]
struct NonceState {
    last_nc: u64,
    seen: u64,
}

#[derive(Debug, Default)]
struct Nonces {
    table: HashMap<String, NonceState>,
    tick: u64,
}

/// A built `digestAuth`.
pub(crate) struct DigestAuth {
    /// User name to HA1, for the lines whose realm is the middleware's (others never match).
    users: HashMap<String, String>,
    realm: String,
    header_name: Option<HeaderName>,
    remove_header: bool,
    opaque: String,
    nonces: Mutex<Nonces>,
}

impl std::fmt::Debug for DigestAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DigestAuth")
            .field("users", &self.users.len())
            .field("realm", &self.realm)
            .finish_non_exhaustive()
    }
}

/// 12 random bytes in standard base64 without padding (16 characters), as go-http-auth's
/// nonces and opaques are.
fn random_token() -> String {
    let mut bytes = [0u8; 12];
    // The process's TLS provider's generator; a failure (no entropy) leaves a fixed token,
    // which only weakens the nonce, never opens the door: the response hash still decides.
    let _ = rustls::crypto::aws_lc_rs::default_provider()
        .secure_random
        .fill(&mut bytes);
    base64::engine::general_purpose::STANDARD_NO_PAD.encode(bytes)
}

fn md5_hex(parts: &[&[u8]]) -> String {
    let mut h = Md5::new();
    for (i, p) in parts.iter().enumerate() {
        if i > 0 {
            h.update(b":");
        }
        h.update(p);
    }
    h.finalize().iter().map(|b| format!("{b:02x}")).collect()
}

/// The `Authorization: Digest` parameters: comma-separated `key=value` items (commas inside
/// quotes kept), keys case-sensitive, a value unquoted when it starts and ends with `"`; items
/// without `=` ignored, a later key wins.
fn parse_pairs(s: &str) -> HashMap<&str, &str> {
    let mut out = HashMap::new();
    let mut start = 0;
    let mut quoted = false;
    let bytes = s.as_bytes();
    let mut items = Vec::new();
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'"' => quoted = !quoted,
            b',' if !quoted => {
                items.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    items.push(&s[start..]);
    for item in items {
        let item = item.trim();
        let Some((k, v)) = item.split_once('=') else {
            continue;
        };
        let v = v.trim();
        let v = if v.len() >= 2 && v.starts_with('"') && v.ends_with('"') {
            &v[1..v.len() - 1]
        } else {
            v
        };
        out.insert(k.trim(), v);
    }
    out
}

/// Go's `url.PathUnescape` of a path, `None` when an escape is malformed.
fn unescape(s: &str) -> Option<Vec<u8>> {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' {
            out.push(crate::routing::escape_at(&b[i..])?);
            i += 3;
        } else {
            out.push(b[i]);
            i += 1;
        }
    }
    Some(out)
}

/// The path of the `uri` parameter parsed as Go's `url.Parse` would (scheme and authority off,
/// query and fragment off, decoded).
fn uri_path(uri: &str) -> Option<Vec<u8>> {
    let rest = match uri.split_once("://") {
        Some((scheme, rest)) if !scheme.is_empty() && !scheme.contains('/') => {
            rest.find('/').map_or("", |i| &rest[i..])
        }
        _ => uri,
    };
    let end = rest.find(['?', '#']).unwrap_or(rest.len());
    unescape(&rest[..end])
}

/// Why a request was refused: whether the challenge says `stale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refused {
    Plain,
    Stale,
}

impl DigestAuth {
    /// Reads `users_file` (relative to the working directory) and the inline users over it.
    pub(crate) fn from_plan(cfg: &bridge_plan::DigestAuth) -> Result<Self, AuthError> {
        let mut all: HashMap<(String, String), String> = HashMap::new();
        let mut add = |line: &str, origin: String| -> Result<(), AuthError> {
            let parts: Vec<&str> = line.split(':').collect();
            let [name, realm, ha1] = parts.as_slice() else {
                return Err(AuthError::BadEntry {
                    origin,
                    reason: "not `name:realm:hash` (Traefik: error parsing DigestUser)".into(),
                });
            };
            // An empty HA1 is known to anyone: the answer computed from it needs no password.
            if ha1.is_empty() {
                return Err(AuthError::BadEntry {
                    origin,
                    reason: "the hash is empty: anyone could log in without a password".into(),
                });
            }
            all.insert(((*name).to_owned(), (*realm).to_owned()), (*ha1).to_owned());
            Ok(())
        };
        if let Some(path) = &cfg.users_file {
            let text = std::fs::read_to_string(path).map_err(|source| AuthError::UsersFile {
                path: path.clone(),
                source,
            })?;
            for (index, raw) in text.split('\n').enumerate() {
                let line = raw.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                add(line, format!("{path}:{}", index + 1))?;
            }
        }
        for (index, entry) in cfg.users.iter().enumerate() {
            add(entry.trim(), format!("users[{index}]"))?;
        }
        let users = all
            .into_iter()
            .filter(|((name, realm), _)| *realm == cfg.realm && !name.is_empty())
            .map(|((name, _), ha1)| (name, ha1))
            .collect();
        Ok(Self {
            users,
            realm: cfg.realm.clone(),
            header_name: cfg
                .header_field
                .as_deref()
                .and_then(|f| HeaderName::from_bytes(f.as_bytes()).ok()),
            remove_header: cfg.remove_header,
            opaque: random_token(),
            nonces: Mutex::new(Nonces::default()),
        })
    }

    /// Checks the request (`path_and_query` as it is at the middleware); on success the fields
    /// are edited as Traefik edits them.
    pub(crate) fn apply(
        &self,
        method: &Method,
        path_and_query: &str,
        fields: &mut HeaderMap,
    ) -> super::Flow {
        match self.check(method, path_and_query, fields.get(header::AUTHORIZATION)) {
            Ok(user) => {
                if let Some(name) = &self.header_name {
                    fields.remove(name);
                    if let Ok(v) = HeaderValue::from_str(&user) {
                        fields.insert(name.clone(), v);
                    }
                }
                if self.remove_header {
                    fields.remove(header::AUTHORIZATION);
                }
                crate::observe::note(|s| s.user = Some(user));
                super::Flow::Continue
            }
            Err(why) => super::Flow::Respond(self.challenge(why).map(crate::body::full)),
        }
    }

    fn check(
        &self,
        method: &Method,
        path_and_query: &str,
        auth: Option<&HeaderValue>,
    ) -> Result<String, Refused> {
        let auth = auth.and_then(|v| v.to_str().ok()).ok_or(Refused::Plain)?;
        let (scheme, rest) = auth.split_once(' ').ok_or(Refused::Plain)?;
        if scheme != "Digest" {
            return Err(Refused::Plain);
        }
        let p = parse_pairs(rest.trim());
        let get = |k: &str| p.get(k).copied().filter(|v| !v.is_empty());
        if p.get("opaque").copied() != Some(self.opaque.as_str()) {
            return Err(Refused::Plain);
        }
        if p.get("algorithm").is_some_and(|a| *a != "MD5") || p.get("qop").copied() != Some("auth")
        {
            return Err(Refused::Plain);
        }
        let uri = p.get("uri").copied().unwrap_or_default();
        if uri != path_and_query {
            let request_path = path_and_query.split('?').next().unwrap_or_default();
            let decoded = unescape(request_path).ok_or(Refused::Plain)?;
            let wanted = uri_path(uri).ok_or(Refused::Plain)?;
            if !decoded.starts_with(&wanted) {
                return Err(Refused::Plain);
            }
        }
        let user = get("username").ok_or(Refused::Plain)?;
        let ha1 = self.users.get(user).ok_or(Refused::Plain)?;
        let (nonce, nc, cnonce) = (
            get("nonce").ok_or(Refused::Plain)?,
            get("nc").ok_or(Refused::Plain)?,
            get("cnonce").ok_or(Refused::Plain)?,
        );
        let response = get("response").ok_or(Refused::Plain)?;
        let ha2 = md5_hex(&[method.as_str().as_bytes(), uri.as_bytes()]);
        let want = md5_hex(&[
            ha1.as_bytes(),
            nonce.as_bytes(),
            nc.as_bytes(),
            cnonce.as_bytes(),
            b"auth",
            ha2.as_bytes(),
        ]);
        if !constant_time_eq(want.as_bytes(), response.as_bytes()) {
            return Err(Refused::Plain);
        }
        // Go's ParseUint(nc, 16, 64): hex digits only, leading zeros allowed, no overflow.
        if !nc.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(Refused::Plain);
        }
        let nc = u64::from_str_radix(nc, 16).map_err(|_| Refused::Plain)?;
        let mut n = self
            .nonces
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        n.tick += 1;
        let tick = n.tick;
        let state = n.table.get_mut(nonce).ok_or(Refused::Plain)?;
        if state.last_nc != 0 && nc == state.last_nc {
            return Err(Refused::Plain);
        }
        if state.last_nc != 0 && nc < state.last_nc {
            return Err(Refused::Stale);
        }
        state.last_nc = nc;
        state.seen = tick;
        Ok(user.to_owned())
    }

    /// Traefik's 401: a fresh nonce, stored (the table purged first when full).
    fn challenge(&self, why: Refused) -> Response<Bytes> {
        let nonce = random_token();
        {
            let mut n = self
                .nonces
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner);
            if n.table.len() > TABLE_LIMIT {
                let mut by_age: Vec<(u64, String)> =
                    n.table.iter().map(|(k, s)| (s.seen, k.clone())).collect();
                by_age.sort_unstable();
                for (_, k) in by_age.into_iter().take(PURGE) {
                    n.table.remove(&k);
                }
            }
            n.tick += 1;
            let seen = n.tick;
            n.table
                .insert(nonce.clone(), NonceState { last_nc: 0, seen });
        }
        let realm: String = self
            .realm
            .chars()
            .filter(|c| *c == '\t' || !c.is_ascii_control())
            .collect();
        let stale = if why == Refused::Stale {
            "stale=\"true\", "
        } else {
            ""
        };
        let value = format!(
            "Digest realm=\"{realm}\", nonce=\"{nonce}\", opaque=\"{}\", {stale}algorithm=\"MD5\", qop=\"auth\"",
            self.opaque
        );
        let mut resp = super::basic_auth::unauthorized(&self.realm);
        // Bytes, not str: a realm with non-ASCII characters goes out as UTF-8 (control
        // characters were left out above); the Basic challenge never stays.
        match HeaderValue::from_bytes(value.as_bytes()) {
            Ok(v) => {
                resp.headers_mut().insert(header::WWW_AUTHENTICATE, v);
            }
            Err(_) => {
                resp.headers_mut().remove(header::WWW_AUTHENTICATE);
            }
        }
        *resp.status_mut() = StatusCode::UNAUTHORIZED;
        resp
    }

    #[cfg(test)]
    fn nonces(&self) -> usize {
        self.nonces.lock().map(|n| n.table.len()).unwrap_or(0)
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    fn auth(users: &[&str]) -> DigestAuth {
        DigestAuth::from_plan(&bridge_plan::DigestAuth {
            users: users.iter().map(|u| (*u).to_owned()).collect(),
            users_file: None,
            realm: "traefik".into(),
            header_field: Some("X-WebAuth-User".into()),
            remove_header: false,
        })
        .unwrap()
    }

    fn ha1(user: &str, realm: &str, password: &str) -> String {
        md5_hex(&[user.as_bytes(), realm.as_bytes(), password.as_bytes()])
    }

    /// A fresh nonce and the middleware's opaque, from a challenge.
    fn challenge(a: &DigestAuth) -> (String, String) {
        let mut h = HeaderMap::new();
        let super::super::Flow::Respond(r) = a.apply(&Method::GET, "/x", &mut h) else {
            panic!("no challenge")
        };
        let v = r.headers()[header::WWW_AUTHENTICATE]
            .to_str()
            .unwrap()
            .to_owned();
        let p = parse_pairs(v.strip_prefix("Digest ").unwrap());
        (p["nonce"].to_owned(), p["opaque"].to_owned())
    }

    #[allow(clippy::too_many_arguments, reason = "a test's digest client")]
    fn header(
        user: &str,
        password: &str,
        method: &str,
        uri: &str,
        nonce: &str,
        opaque: &str,
        nc: &str,
    ) -> HeaderValue {
        let ha1 = ha1(user, "traefik", password);
        let ha2 = md5_hex(&[method.as_bytes(), uri.as_bytes()]);
        let resp = md5_hex(&[
            ha1.as_bytes(),
            nonce.as_bytes(),
            nc.as_bytes(),
            b"c0ffee",
            b"auth",
            ha2.as_bytes(),
        ]);
        HeaderValue::from_str(&format!(
            "Digest username=\"{user}\", realm=\"traefik\", nonce=\"{nonce}\", uri=\"{uri}\", \
             algorithm=MD5, qop=auth, nc={nc}, cnonce=\"c0ffee\", response=\"{resp}\", \
             opaque=\"{opaque}\""
        ))
        .unwrap()
    }

    fn status(a: &DigestAuth, method: Method, pq: &str, v: HeaderValue) -> (u16, Option<String>) {
        let mut h = HeaderMap::new();
        h.insert(header::AUTHORIZATION, v);
        h.insert("x-webauth-user", HeaderValue::from_static("forged"));
        match a.apply(&method, pq, &mut h) {
            super::super::Flow::Continue => (
                200,
                h.get("x-webauth-user")
                    .map(|v| v.to_str().unwrap().to_owned()),
            ),
            super::super::Flow::Respond(r) => (
                r.status().as_u16(),
                r.headers()[header::WWW_AUTHENTICATE]
                    .to_str()
                    .unwrap()
                    .contains("stale=\"true\"")
                    .then(|| "stale".to_owned()),
            ),
            _ => panic!("unexpected flow"),
        }
    }

    #[test]
    fn the_challenge_is_traefiks() {
        let a = auth(&[]);
        let r = a.challenge(Refused::Plain);
        assert_eq!(r.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(r.body().as_ref(), b"401 Unauthorized\n");
        assert_eq!(r.headers()[header::CONTENT_TYPE], "text/plain");
        let v = r.headers()[header::WWW_AUTHENTICATE].to_str().unwrap();
        let re = regex::Regex::new(
            r#"^Digest realm="traefik", nonce="[A-Za-z0-9+/]{16}", opaque="[A-Za-z0-9+/]{16}", algorithm="MD5", qop="auth"$"#,
        )
        .unwrap();
        assert!(re.is_match(v), "{v}");
        assert_eq!(a.nonces(), 1);
    }

    /// §1.3 steps 6-10, measured on Traefik 3.7.15.
    #[test]
    fn checks_follow_traefik_step_by_step() {
        let a = auth(&[&format!("alice:traefik:{}", ha1("alice", "traefik", "pw"))]);
        let (nonce, opaque) = challenge(&a);
        let ok = |pq: &str, uri: &str, nc: &str| {
            status(
                &a,
                Method::GET,
                pq,
                header("alice", "pw", "GET", uri, &nonce, &opaque, nc),
            )
        };
        // nc 0 may be replayed while nothing larger was accepted.
        assert_eq!(
            ok("/dA/x?q=1", "/dA/x?q=1", "00000000"),
            (200, Some("alice".into()))
        );
        assert_eq!(ok("/dA/x?q=1", "/dA/x?q=1", "00000000").0, 200);
        // The uri rule: the raw target, or a plain prefix of the decoded path.
        assert_eq!(ok("/dA/x?q=1", "/dA", "1").0, 200);
        assert_eq!(ok("/dA/x?q=1", "", "3").0, 200);
        assert_eq!(ok("/dA/x?q=1", "http://h:1/dA/x?q=9", "4").0, 200);
        assert_eq!(ok("/dA/a%20b", "/dA/a b", "5").0, 200);
        assert_eq!(ok("/dA/x?q=1", "/dA/x/y", "6").0, 401);
        // Replay of the last nc: plain 401; an older one: stale.
        assert_eq!(ok("/dA/x", "/dA/x", "5"), (401, None));
        assert_eq!(ok("/dA/x", "/dA/x", "2"), (401, Some("stale".into())));
        assert_eq!(ok("/dA/x", "/dA/x", "ffffffffffffffff").0, 200);
        assert_eq!(ok("/dA/x", "/dA/x", "1ffffffffffffffff").0, 401);
        // Leading zeros beyond 16 digits are still a number to Go; a sign is not a digit.
        assert_eq!(
            ok("/dA/x", "/dA/x", "00000000000000000000000000000001"),
            (401, Some("stale".into()))
        );
        assert_eq!(ok("/dA/x", "/dA/x", "+fffffffffffffffe"), (401, None));
        assert_eq!(ok("/dA/a", "/%+1", "fffffffffffffffe"), (401, None));
        // Wrong password, unknown nonce, wrong method, unknown user.
        let (nonce2, _) = challenge(&a);
        let bad = header("alice", "nope", "GET", "/x", &nonce2, &opaque, "1");
        assert_eq!(status(&a, Method::GET, "/x", bad).0, 401);
        let good = header("alice", "pw", "GET", "/x", &nonce2, &opaque, "1");
        assert_eq!(status(&a, Method::GET, "/x", good.clone()).0, 200);
        let unknown = header("alice", "pw", "GET", "/x", "AAAAAAAAAAAAAAAA", &opaque, "1");
        assert_eq!(status(&a, Method::GET, "/x", unknown), (401, None));
        let (nonce3, _) = challenge(&a);
        let post = header("alice", "pw", "GET", "/x", &nonce3, &opaque, "1");
        assert_eq!(status(&a, Method::POST, "/x", post).0, 401);
        let nobody = header("mallory", "pw", "GET", "/x", &nonce3, &opaque, "1");
        assert_eq!(status(&a, Method::GET, "/x", nobody).0, 401);
        // The scheme is case-sensitive; Basic gets the digest challenge.
        let lower =
            HeaderValue::from_str(&good.to_str().unwrap().replacen("Digest", "digest", 1)).unwrap();
        assert_eq!(status(&a, Method::GET, "/x", lower).0, 401);
    }

    #[test]
    fn lines_of_another_realm_never_match_and_bad_lines_are_refused() {
        let a = auth(&[&format!("bob:other:{}", ha1("bob", "other", "pw"))]);
        let (nonce, opaque) = challenge(&a);
        let h = header("bob", "pw", "GET", "/", &nonce, &opaque, "1");
        assert_eq!(status(&a, Method::GET, "/", h).0, 401);
        for bad in ["bad-line", "a:b:c:d", "alice:traefik:"] {
            let r = DigestAuth::from_plan(&bridge_plan::DigestAuth {
                users: vec![bad.into()],
                users_file: None,
                realm: "traefik".into(),
                header_field: None,
                remove_header: false,
            });
            assert!(r.is_err(), "{bad}");
        }
    }

    #[test]
    fn the_table_keeps_at_most_1100_and_drops_the_200_least_recently_seen() {
        let a = auth(&[]);
        let mut first = Vec::new();
        for i in 0..1300 {
            let (n, _) = challenge(&a);
            if i < 200 {
                first.push(n);
            }
        }
        // Purged at the 1102nd challenge down to 901, then 198 more.
        assert_eq!(a.nonces(), 1100);
        let n = a.nonces.lock().unwrap();
        assert!(first.iter().all(|f| !n.table.contains_key(f)));
    }

    #[test]
    fn pairs_parse_as_go_http_auth_reads_them() {
        let p = parse_pairs(r#"username="a,b", nc=1, Username=x, , foo, uri="/p""#);
        assert_eq!(p["username"], "a,b");
        assert_eq!(p["nc"], "1");
        assert_eq!(p["Username"], "x");
        assert_eq!(p["uri"], "/p");
        assert!(!p.contains_key("foo"));
    }
}
