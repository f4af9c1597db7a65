//! Middlewares: one kind each, chains and their cycles, regexes, redirects, prefixes, retry, IP
//! allow lists, and basicAuth users (inline or from a usersFile) with the hash kinds Traefik
//! verifies.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use crate::diag::Code;
use crate::loaded::{EntityRef, Found, Section, display_name, resolve_config_path};
use crate::model::dynamic::Middleware;
use crate::source::Span;

use super::{Ctx, canonical_cycle, cycle_pointer, find_cycle, parse_ip_or_cidr};

impl<'a> Ctx<'a> {
    pub(super) fn check_middlewares(&mut self) {
        let mws: Vec<Found<'a, Middleware>> = self.symbols.iter(self.loaded).collect();
        let mut graph: BTreeMap<String, Vec<(String, String)>> = BTreeMap::new();
        for def in &mws {
            let (name, m) = (def.name, def.value);
            let base = def.pointer.to_owned();
            let fi = def.file;
            let kinds = serde_json::to_value(m)
                .ok()
                .and_then(|v| v.as_object().map(|o| o.len()))
                .unwrap_or(0);
            if kinds == 0 {
                let span = self.key_span(fi, &base);
                self.err(
                    Code::KindCount,
                    format!("middleware `{name}` defines no kind"),
                    span,
                    base.clone(),
                );
            }
            if let Some(ba) = &m.basic_auth {
                self.check_basic_auth(name, fi, &format!("{base}/basicAuth"), ba);
            }
            if let Some(da) = &m.digest_auth {
                self.check_digest_auth(name, fi, &format!("{base}/digestAuth"), da);
            }
            if let Some(e) = &m.errors {
                self.check_errors(name, fi, &format!("{base}/errors"), e);
            }
            if let Some(r) = &m.rate_limit {
                self.check_rate_limit(name, fi, &format!("{base}/rateLimit"), r);
            }
            if let Some(f) = &m.forward_auth {
                self.check_forward_auth(name, fi, &format!("{base}/forwardAuth"), f);
            }
            if let Some(b) = &m.buffering {
                self.check_buffering(name, fi, &format!("{base}/buffering"), b);
            }
            if let Some(c) = &m.circuit_breaker {
                self.check_circuit_breaker(name, fi, &format!("{base}/circuitBreaker"), c);
            }
            if let Some(c) = &m.compress {
                self.check_compress(name, fi, &format!("{base}/compress"), c);
            }
            if let Some(f) = &m.in_flight_req {
                self.check_in_flight(name, fi, &format!("{base}/inFlightReq"), f);
            }
            for (kind, s) in [
                (
                    "ipAllowList",
                    m.ip_allow_list
                        .as_ref()
                        .and_then(|a| a.ip_strategy.as_ref()),
                ),
                (
                    "ipWhiteList",
                    m.ip_white_list
                        .as_ref()
                        .and_then(|a| a.ip_strategy.as_ref()),
                ),
            ] {
                if let Some(s) = s {
                    self.check_ip_strategy(name, fi, &format!("{base}/{kind}/ipStrategy"), s);
                }
            }
            if let Some(c) = &m.chain {
                let mut children = Vec::new();
                for (i, n) in c.middlewares.iter().flatten().enumerate() {
                    let p = format!("{base}/chain/middlewares/{i}");
                    self.entity_ref(Section::Middlewares, n, Some(fi), &p);
                    children.push((EntityRef::parse(n).name.to_owned(), p));
                }
                graph.insert(name.to_owned(), children);
            }
            let mut regexes: Vec<(String, String)> = Vec::new();
            if let Some(r) = &m.redirect_regex {
                regexes.extend(
                    r.regex
                        .iter()
                        .map(|x| (x.clone(), format!("{base}/redirectRegex/regex"))),
                );
            }
            if let Some(x) = m
                .forward_auth
                .as_ref()
                .and_then(|f| f.auth_response_headers_regex.clone())
                .filter(|x| !x.is_empty())
            {
                regexes.push((x, format!("{base}/forwardAuth/authResponseHeadersRegex")));
            }
            if let Some(r) = &m.replace_path_regex {
                regexes.extend(
                    r.regex
                        .iter()
                        .map(|x| (x.clone(), format!("{base}/replacePathRegex/regex"))),
                );
            }
            if let Some(r) = &m.strip_prefix_regex {
                regexes.extend(
                    r.regex
                        .iter()
                        .flatten()
                        .enumerate()
                        .map(|(i, x)| (x.clone(), format!("{base}/stripPrefixRegex/regex/{i}"))),
                );
            }
            if let Some(h) = &m.headers {
                regexes.extend(
                    h.access_control_allow_origin_list_regex
                        .iter()
                        .flatten()
                        .enumerate()
                        .map(|(i, x)| {
                            (
                                x.clone(),
                                format!("{base}/headers/accessControlAllowOriginListRegex/{i}"),
                            )
                        }),
                );
            }
            for (re, p) in regexes {
                if let Err(e) = regex::Regex::new(&re) {
                    let span = self.span(fi, &p);
                    self.err(
                        Code::InvalidRegex,
                        format!(
                            "middleware `{name}`: invalid regex: {}",
                            last_line(&e.to_string())
                        ),
                        span,
                        p,
                    );
                }
            }
            if let Some(rs) = &m.redirect_scheme {
                match rs.scheme.as_deref() {
                    None | Some("") => {
                        let span = self.key_span(fi, &format!("{base}/redirectScheme"));
                        self.err(Code::MissingKey, format!("middleware `{name}`: redirectScheme needs `scheme` (Traefik: \"you must provide a target scheme\")"), span, format!("{base}/redirectScheme/scheme"));
                    }
                    Some(_) => {}
                }
                if let Some(port) = &rs.port
                    && port.parse::<u16>().map_or(true, |p| p == 0)
                {
                    let p = format!("{base}/redirectScheme/port");
                    let span = self.span(fi, &p);
                    self.err(
                        Code::InvalidAddress,
                        format!("middleware `{name}`: redirect port `{port}` is not a port number"),
                        span,
                        p,
                    );
                }
            }
            if let Some(sp) = &m.strip_prefix {
                for (i, pre) in sp.prefixes.iter().flatten().enumerate() {
                    if !pre.starts_with('/') {
                        let p = format!("{base}/stripPrefix/prefixes/{i}");
                        let span = self.span(fi, &p);
                        self.warn(Code::InvalidValue, format!("middleware `{name}`: prefix `{pre}` does not start with `/` and never matches a path"), span, p);
                    }
                }
            }
            if let Some(r) = &m.retry
                && r.attempts.is_none_or(|a| a <= 0)
            {
                let p = format!("{base}/retry/attempts");
                let span = self.span(fi, &p);
                self.err(
                    Code::InvalidValue,
                    format!("middleware `{name}`: retry needs `attempts` greater than 0"),
                    span,
                    p,
                );
            }
            let allow = m
                .ip_allow_list
                .as_ref()
                .map(|a| (a.source_range.as_ref(), "ipAllowList"))
                .or_else(|| {
                    m.ip_white_list
                        .as_ref()
                        .map(|a| (a.source_range.as_ref(), "ipWhiteList"))
                });
            if let Some((ranges, kind)) = allow {
                if ranges.is_none_or(|r| r.is_empty()) {
                    let span = self.key_span(fi, &format!("{base}/{kind}"));
                    self.err(
                        Code::MissingKey,
                        format!("middleware `{name}`: {kind} needs at least one sourceRange"),
                        span,
                        format!("{base}/{kind}/sourceRange"),
                    );
                }
                for (i, r) in ranges.into_iter().flatten().enumerate() {
                    if parse_ip_or_cidr(r).is_err() {
                        let p = format!("{base}/{kind}/sourceRange/{i}");
                        let span = self.span(fi, &p);
                        self.err(
                            Code::InvalidIp,
                            format!(
                                "middleware `{name}`: `{r}` is not an IP address or CIDR range"
                            ),
                            span,
                            p,
                        );
                    }
                }
            }
        }
        let mut reported = BTreeSet::new();
        for start in graph.keys() {
            if let Some(cycle) = find_cycle(start, &graph)
                && reported.insert(canonical_cycle(&cycle))
            {
                let p = cycle_pointer(&graph, &cycle);
                let Some(def) = self.symbols.middlewares.get(&cycle[0]) else {
                    continue;
                };
                let span = self.span(def.file, &p);
                self.err(
                    Code::ReferenceCycle,
                    format!(
                        "middleware chains refer to each other in a loop: {}",
                        cycle.join(" -> ")
                    ),
                    span,
                    p,
                );
            }
        }
    }

    fn check_basic_auth(
        &mut self,
        name: &str,
        fi: usize,
        base: &str,
        ba: &crate::model::dynamic::BasicAuth,
    ) {
        let mut users = 0;
        for (i, u) in ba.users.iter().flatten().enumerate() {
            users += 1;
            if let Err(why) = check_htpasswd_line(u) {
                let p = format!("{base}/users/{i}");
                let span = self.span(fi, &p);
                self.err(Code::InvalidHash, format!("middleware `{name}`: user entry {}: {why}", i + 1), span, p)
                    .hint = Some("generate entries with `htpasswd -nB USER` (bcrypt); plain-text passwords never match in Traefik".into());
            }
        }
        if let Some(file) = &ba.users_file {
            let p = format!("{base}/usersFile");
            let span = self.span(fi, &p);
            let path = resolve_config_path(&self.loaded.dir, file);
            match std::fs::read_to_string(&path) {
                Err(e) => {
                    self.err(Code::FileNotFound, format!("middleware `{name}`: usersFile `{file}` cannot be read ({e}; looked for {})", display_name(&self.loaded.dir, &path)), span, p);
                }
                Ok(text) => {
                    for (ln, line) in text.lines().enumerate() {
                        let line = line.trim();
                        if line.is_empty() || line.starts_with('#') {
                            continue;
                        }
                        users += 1;
                        if let Err(why) = check_htpasswd_line(line) {
                            self.err(
                                Code::InvalidHash,
                                format!(
                                    "middleware `{name}`: {}:{}: {why}",
                                    display(&path),
                                    ln + 1
                                ),
                                span,
                                p.clone(),
                            )
                            .hint =
                                Some("generate entries with `htpasswd -nB USER` (bcrypt)".into());
                        }
                    }
                }
            }
        }
        if users == 0 && ba.users_file.is_none() {
            let span = self.key_span(fi, base);
            self.err(
                Code::MissingKey,
                format!(
                    "middleware `{name}`: basicAuth has no users (Traefik: \"no users found\")"
                ),
                span,
                format!("{base}/users"),
            );
        }
    }
}

impl Ctx<'_> {
    /// Traefik's `digestAuth` rules: every line `name:realm:HA1` (else the middleware and its
    /// routers are disabled), a readable `usersFile`; a user of another realm, a hash that is
    /// not lower-case hex MD5, or no user at all never lets anyone in (warnings).
    fn check_digest_auth(
        &mut self,
        name: &str,
        fi: usize,
        base: &str,
        da: &crate::model::dynamic::DigestAuth,
    ) {
        let realm = da
            .realm
            .as_deref()
            .filter(|r| !r.is_empty())
            .unwrap_or("traefik")
            .to_owned();
        let mut users = 0;
        let mut lines: Vec<(String, String, Option<Span>, String)> = Vec::new();
        for (i, u) in da.users.iter().flatten().enumerate() {
            let p = format!("{base}/users/{i}");
            let span = self.span(fi, &p);
            lines.push((
                u.trim().to_owned(),
                format!("user entry {}", i + 1),
                span,
                p,
            ));
        }
        if let Some(file) = da.users_file.as_deref().filter(|f| !f.is_empty()) {
            let p = format!("{base}/usersFile");
            let span = self.span(fi, &p);
            let path = resolve_config_path(&self.loaded.dir, file);
            match std::fs::read_to_string(&path) {
                Err(e) => {
                    self.err(Code::FileNotFound, format!("middleware `{name}`: usersFile `{file}` cannot be read ({e}; looked for {})", display_name(&self.loaded.dir, &path)), span, p);
                }
                Ok(text) => {
                    for (ln, line) in text.split('\n').enumerate() {
                        let line = line.trim();
                        if line.is_empty() || line.starts_with('#') {
                            continue;
                        }
                        lines.push((
                            line.to_owned(),
                            format!("{}:{}", display(&path), ln + 1),
                            span,
                            p.clone(),
                        ));
                    }
                }
            }
        }
        for (line, origin, span, p) in lines {
            users += 1;
            let parts: Vec<&str> = line.split(':').collect();
            let [user, line_realm, ha1] = parts.as_slice() else {
                self.err(
                    Code::InvalidValue,
                    format!("middleware `{name}`: {origin} is not `name:realm:hash` (Traefik: \"error parsing DigestUser\", and disables the routers using it)"),
                    span,
                    p,
                )
                .hint = Some("generate entries with `htdigest` (name:realm:MD5 of name:realm:password)".into());
                continue;
            };
            if ha1.is_empty() {
                self.err(
                    Code::InvalidHash,
                    format!("middleware `{name}`: {origin} (user `{user}`) has an empty hash: anyone could log in as `{user}` without a password"),
                    span,
                    p,
                )
                .hint = Some("generate entries with `htdigest` (name:realm:MD5 of name:realm:password)".into());
            } else if *line_realm != realm {
                self.warn(
                    Code::InvalidValue,
                    format!("middleware `{name}`: {origin} (user `{user}`) is for realm `{line_realm}`, not `{realm}`: it never logs in"),
                    span,
                    p,
                );
            } else if ha1.len() != 32
                || !ha1
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
            {
                self.warn(
                    Code::InvalidHash,
                    format!("middleware `{name}`: {origin} (user `{user}`): the hash is not 32 lower-case hex digits, so no password a client types matches it"),
                    span,
                    p,
                );
            }
        }
        if users == 0 && da.users_file.as_deref().is_none_or(str::is_empty) {
            let span = self.key_span(fi, base);
            self.warn(
                Code::MissingKey,
                format!("middleware `{name}`: digestAuth has no users: Traefik answers every request 401"),
                span,
                format!("{base}/users"),
            );
        }
    }
}

fn display(p: &Path) -> String {
    p.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default()
}

/// The last non-empty line: the regex crate puts the actual complaint there.
fn last_line(s: &str) -> String {
    s.lines()
        .rfind(|l| !l.trim().is_empty())
        .unwrap_or(s)
        .trim()
        .to_owned()
}

/// Password hash kinds Traefik verifies (go-http-auth): bcrypt, MD5-crypt (`$apr1$`, `$1$`), `{SHA}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HashKind {
    /// `$2a$`, `$2b$`, `$2x$`, `$2y$`.
    Bcrypt,
    /// `$apr1$` or `$1$`.
    Md5Crypt,
    /// `{SHA}` + base64 of SHA-1.
    Sha1,
}

/// Classifies the hash of a `user:hash` line.
pub fn check_htpasswd_line(line: &str) -> Result<(String, HashKind), String> {
    let (user, hash) = line.split_once(':').ok_or("expected `user:hash`")?;
    if user.is_empty() {
        return Err("empty user name".into());
    }
    let kind = hash_kind(hash)?;
    Ok((user.to_owned(), kind))
}

/// Classifies a password hash.
pub fn hash_kind(hash: &str) -> Result<HashKind, String> {
    use base64::Engine as _;
    if let Some(b64) = hash.strip_prefix("{SHA}") {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(b64)
            .map_err(|_| "{SHA} hash is not valid base64".to_owned())?;
        return if bytes.len() == 20 {
            Ok(HashKind::Sha1)
        } else {
            Err("{SHA} hash is not 20 bytes".into())
        };
    }
    for prefix in ["$2a$", "$2b$", "$2x$", "$2y$"] {
        if let Some(rest) = hash.strip_prefix(prefix) {
            let ok = rest.len() == 56
                && rest.as_bytes()[2] == b'$'
                && rest[..2].parse::<u8>().is_ok_and(|c| (4..=31).contains(&c));
            return if ok {
                Ok(HashKind::Bcrypt)
            } else {
                Err("malformed bcrypt hash".into())
            };
        }
    }
    for prefix in ["$apr1$", "$1$"] {
        if let Some(rest) = hash.strip_prefix(prefix) {
            let ok = rest
                .split_once('$')
                .is_some_and(|(salt, h)| !salt.is_empty() && salt.len() <= 8 && h.len() == 22);
            return if ok {
                Ok(HashKind::Md5Crypt)
            } else {
                Err("malformed MD5-crypt hash".into())
            };
        }
    }
    if hash.is_empty() {
        return Err("no password hash".into());
    }
    if hash.starts_with('$') {
        return Err("unsupported hash kind (use bcrypt, $apr1$ or {SHA})".into());
    }
    Err("the password is not hashed (plain text never matches in Traefik)".into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes() {
        assert_eq!(
            hash_kind("$apr1$H6uskkkW$IgXLP6ewTrSuBkTrqE8wj/"),
            Ok(HashKind::Md5Crypt)
        );
        assert_eq!(
            hash_kind("$2y$05$.2Ldnmvxj2Aa.LPz7xFjAuWGdBLT.kqPRHRMpjAXlVDT0Y1Qek0AW"),
            Ok(HashKind::Bcrypt)
        );
        assert_eq!(
            hash_kind("{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M="),
            Ok(HashKind::Sha1)
        );
        assert!(hash_kind("secret").is_err());
        assert!(hash_kind("$5$abc$def").is_err());
        assert!(check_htpasswd_line("nocolon").is_err());
    }
}
