//! The middlewares that rewrite the path the server receives: `stripPrefix`,
//! `stripPrefixRegex`, `addPrefix`, `replacePath` and `replacePathRegex`, with Traefik's bookkeeping fields
//! (`X-Forwarded-Prefix` for what was stripped, `X-Replaced-Path` for what was replaced).

use std::borrow::Cow;

use http::{HeaderMap, HeaderName, HeaderValue};

use super::{Flow, MiddlewareError, RequestCtx};

static X_FORWARDED_PREFIX: HeaderName = HeaderName::from_static("x-forwarded-prefix");
static X_REPLACED_PATH: HeaderName = HeaderName::from_static("x-replaced-path");

/// `stripPrefix`: the first prefix the path starts with is removed.
#[derive(Debug)]
pub(crate) struct StripPrefix {
    prefixes: Vec<String>,
}

/// `stripPrefixRegex`: the first expression that matches at the start of the path is removed.
#[derive(Debug)]
pub(crate) struct StripPrefixRegex {
    regexes: Vec<regex::Regex>,
}

/// `addPrefix`: the prefix goes in front of the path.
#[derive(Debug)]
pub(crate) struct AddPrefix {
    /// Without its trailing `/` (the path brings its own).
    prefix: String,
}

/// `replacePath`: the whole path is replaced, the query kept.
#[derive(Debug)]
pub(crate) struct ReplacePath {
    path: String,
}

/// `replacePathRegex`: every match of the expression in the (escaped) path is replaced, the
/// query kept; an empty replacement leaves the path alone, as in Traefik.
#[derive(Debug)]
pub(crate) struct ReplacePathRegex {
    regex: regex::Regex,
    replacement: String,
}

impl StripPrefix {
    pub(crate) fn from_plan(c: &bridge_plan::StripPrefix) -> Self {
        Self {
            prefixes: c.prefixes.clone(),
        }
    }

    pub(crate) fn apply(&self, fields: &mut HeaderMap, ctx: &mut RequestCtx<'_>) -> Flow {
        let (p, _) = split_pq(&ctx.path_and_query);
        if let Some(prefix) = self.prefixes.iter().find(|pre| p.starts_with(pre.as_str())) {
            let len = prefix.len();
            strip(fields, ctx, len);
        }
        Flow::Continue
    }
}

impl StripPrefixRegex {
    pub(crate) fn from_plan(c: &bridge_plan::StripPrefixRegex) -> Result<Self, MiddlewareError> {
        let regexes = c
            .regex
            .iter()
            .map(|r| super::compile("regex", r))
            .collect::<Result<_, _>>()?;
        Ok(Self { regexes })
    }

    pub(crate) fn apply(&self, fields: &mut HeaderMap, ctx: &mut RequestCtx<'_>) -> Flow {
        let (p, _) = split_pq(&ctx.path_and_query);
        let matched = self.regexes.iter().find_map(|re| {
            re.find(p)
                .filter(|f| f.start() == 0)
                .map(|f| f.as_str().len())
        });
        if let Some(len) = matched {
            strip(fields, ctx, len);
        }
        Flow::Continue
    }
}

/// Removes the first `len` bytes of the path (a prefix that matched), keeps the query, and
/// records the prefix in `X-Forwarded-Prefix`; the rest always starts with `/`. The prefix is
/// added to the field's values (Go's `Header.Add`, as Traefik): after two strips, the first
/// value is the outer prefix.
fn strip(fields: &mut HeaderMap, ctx: &mut RequestCtx<'_>, len: usize) {
    let (p, q) = split_pq(&ctx.path_and_query);
    let (prefix, rest) = p.split_at(len);
    if let Ok(v) = HeaderValue::from_str(prefix) {
        fields.append(X_FORWARDED_PREFIX.clone(), v);
    }
    let rest = if rest.starts_with('/') {
        Cow::Borrowed(rest)
    } else {
        Cow::Owned(format!("/{rest}"))
    };
    let joined = join_pq(&rest, q);
    ctx.path_and_query = Cow::Owned(joined);
}

impl AddPrefix {
    pub(crate) fn from_plan(c: &bridge_plan::AddPrefix) -> Self {
        Self {
            prefix: c.prefix.trim_end_matches('/').to_owned(),
        }
    }

    pub(crate) fn apply(&self, ctx: &mut RequestCtx<'_>) -> Flow {
        let (p, q) = split_pq(&ctx.path_and_query);
        let joined = join_pq(&format!("{}{p}", self.prefix), q);
        ctx.path_and_query = Cow::Owned(joined);
        Flow::Continue
    }
}

impl ReplacePath {
    pub(crate) fn from_plan(c: &bridge_plan::ReplacePath) -> Self {
        Self {
            path: c.path.clone(),
        }
    }

    pub(crate) fn apply(&self, fields: &mut HeaderMap, ctx: &mut RequestCtx<'_>) -> Flow {
        let (p, q) = split_pq(&ctx.path_and_query);
        if let Ok(v) = HeaderValue::from_str(p) {
            fields.insert(X_REPLACED_PATH.clone(), v);
        }
        let joined = join_pq(&self.path, q);
        ctx.path_and_query = Cow::Owned(joined);
        Flow::Continue
    }
}

impl ReplacePathRegex {
    pub(crate) fn from_plan(c: &bridge_plan::ReplacePathRegex) -> Result<Self, MiddlewareError> {
        Ok(Self {
            regex: super::compile("regex", &c.regex)?,
            replacement: c.replacement.clone(),
        })
    }

    pub(crate) fn apply(&self, fields: &mut HeaderMap, ctx: &mut RequestCtx<'_>) -> Flow {
        let (p, q) = split_pq(&ctx.path_and_query);
        if self.replacement.is_empty() || !self.regex.is_match(p) {
            return Flow::Continue;
        }
        let replaced = self.regex.replace_all(p, self.replacement.as_str());
        // Traefik unescapes the new path and answers 500 with Go's message when it cannot.
        let new_path = match escape_path(&replaced) {
            Ok(path) => path,
            Err(bad) => {
                tracing::debug!("replacePathRegex produced `{replaced}`: {bad}");
                return Flow::Respond(crate::body::text_owned(
                    http::StatusCode::INTERNAL_SERVER_ERROR,
                    format!("{bad}\n"),
                ));
            }
        };
        if let Ok(v) = HeaderValue::from_str(p) {
            fields.insert(X_REPLACED_PATH.clone(), v);
        }
        let joined = join_pq(&new_path, q);
        ctx.path_and_query = Cow::Owned(joined);
        Flow::Continue
    }
}

/// A replacement's result as a path the server can be sent: escapes kept as they are, every
/// byte a path may not carry literally (space, `?`, `#`, controls, non-ASCII) percent-encoded,
/// as Go re-escapes a path that is not a valid encoding. A `%` not followed by two hex digits
/// is an error, worded as Go's `url.PathUnescape` words it.
fn escape_path(path: &str) -> Result<Cow<'_, str>, String> {
    let bytes = path.as_bytes();
    let allowed = |b: u8| b.is_ascii_alphanumeric() || b"-._~!$&'()*+,;=:@/%".contains(&b);
    for (i, &b) in bytes.iter().enumerate() {
        if b == b'%' {
            let hex = bytes.get(i + 1..i + 3).unwrap_or(&bytes[i..]);
            if hex.len() != 2 || !hex.iter().all(u8::is_ascii_hexdigit) {
                let end = (i + 3).min(bytes.len());
                return Err(format!(
                    "invalid URL escape \"{}\"",
                    String::from_utf8_lossy(&bytes[i..end])
                ));
            }
        }
    }
    if bytes.iter().all(|&b| allowed(b)) {
        return Ok(Cow::Borrowed(path));
    }
    let mut out = String::with_capacity(path.len() + 8);
    for &b in bytes {
        if allowed(b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    Ok(Cow::Owned(out))
}

/// Path and query (without its `?`).
pub(crate) fn split_pq(pq: &str) -> (&str, Option<&str>) {
    match pq.split_once('?') {
        Some((p, q)) => (p, Some(q)),
        None => (pq, None),
    }
}

/// A path and an optional query joined again; an empty path is `/`.
fn join_pq(p: &str, q: Option<&str>) -> String {
    let p = if p.is_empty() { "/" } else { p };
    match q {
        Some(q) => format!("{p}?{q}"),
        None => p.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::middleware::test_support::ctx;

    fn strip_prefix(prefixes: &[&str]) -> StripPrefix {
        StripPrefix::from_plan(&bridge_plan::StripPrefix {
            prefixes: prefixes.iter().map(|p| (*p).to_owned()).collect(),
        })
    }

    #[test]
    fn strip_prefix_removes_the_first_matching_prefix_and_records_it() {
        let cases = [
            // (prefixes, request, forwarded path and query, X-Forwarded-Prefix)
            (&["/api"][..], "/api/users?x=1", "/users?x=1", Some("/api")),
            (
                &["/api/"][..],
                "/api/users?x=1",
                "/users?x=1",
                Some("/api/"),
            ),
            (&["/api"][..], "/apiv2", "/v2", Some("/api")),
            (&["/api"][..], "/api", "/", Some("/api")),
            (&["/a", "/ab"][..], "/abc", "/bc", Some("/a")),
            (&["/x"][..], "/api", "/api", None),
        ];
        for (prefixes, pq, want, prefix) in cases {
            let m = strip_prefix(prefixes);
            let mut fields = HeaderMap::new();
            let mut c = ctx(None, pq);
            m.apply(&mut fields, &mut c);
            assert_eq!(c.path_and_query, want, "{prefixes:?} {pq}");
            assert_eq!(
                fields
                    .get("x-forwarded-prefix")
                    .and_then(|v| v.to_str().ok()),
                prefix,
                "{prefixes:?} {pq}"
            );
        }
    }

    #[test]
    fn strip_prefix_regex_only_strips_a_match_at_the_start() {
        let m = StripPrefixRegex::from_plan(&bridge_plan::StripPrefixRegex {
            regex: vec!["/v[0-9]+".into(), "/tenant/[a-z]+".into()],
        })
        .unwrap();
        for (pq, want, prefix) in [
            ("/v2/items?q", "/items?q", Some("/v2")),
            ("/tenant/acme/x", "/x", Some("/tenant/acme")),
            ("/api/v2/items", "/api/v2/items", None),
            ("/v12", "/", Some("/v12")),
        ] {
            let mut fields = HeaderMap::new();
            let mut c = ctx(None, pq);
            m.apply(&mut fields, &mut c);
            assert_eq!(c.path_and_query, want, "{pq}");
            assert_eq!(
                fields
                    .get("x-forwarded-prefix")
                    .and_then(|v| v.to_str().ok()),
                prefix
            );
        }
    }

    #[test]
    fn a_strip_prefix_regex_that_does_not_compile_is_refused_at_load() {
        let err = StripPrefixRegex::from_plan(&bridge_plan::StripPrefixRegex {
            regex: vec!["/(".into()],
        })
        .unwrap_err();
        assert!(
            err.to_string().starts_with("regex `/(` does not compile"),
            "{err}"
        );
    }

    fn replace_path_regex(regex: &str, replacement: &str) -> ReplacePathRegex {
        ReplacePathRegex::from_plan(&bridge_plan::ReplacePathRegex {
            regex: regex.into(),
            replacement: replacement.into(),
        })
        .unwrap()
    }

    #[test]
    fn replace_path_regex_replaces_every_match_and_keeps_the_query() {
        let cases = [
            // (regex, replacement, request, forwarded, X-Replaced-Path)
            (
                "^/foo/(.*)",
                "/bar/$1",
                "/foo/x/y?q=1",
                "/bar/x/y?q=1",
                Some("/foo/x/y"),
            ),
            ("o", "0", "/foo/boo", "/f00/b00", Some("/foo/boo")),
            // Go's and the regex crate's expansion: `$1x` names a group `1x` (empty).
            ("^/(a)", "/$1x", "/a/b", "//b", Some("/a/b")),
            ("^/(a)", "/${1}x", "/a/b", "/ax/b", Some("/a/b")),
            (
                "^/(?P<name>[a-z]+)",
                "/u/${name}",
                "/bob",
                "/u/bob",
                Some("/bob"),
            ),
            // No match, or an empty replacement: untouched, no bookkeeping field.
            ("^/nomatch", "/x", "/foo", "/foo", None),
            ("^/foo", "", "/foo", "/foo", None),
            // The path as escaped on the wire; what may not stand literally is escaped.
            ("^/a%20b", "/c d", "/a%20b", "/c%20d", Some("/a%20b")),
            ("^/x", "/y?z", "/x", "/y%3Fz", Some("/x")),
        ];
        for (re, rep, pq, want, replaced) in cases {
            let m = replace_path_regex(re, rep);
            let mut fields = HeaderMap::new();
            let mut c = ctx(None, pq);
            assert!(matches!(m.apply(&mut fields, &mut c), Flow::Continue));
            assert_eq!(c.path_and_query, want, "{re} {rep} {pq}");
            assert_eq!(
                fields.get("x-replaced-path").and_then(|v| v.to_str().ok()),
                replaced,
                "{re} {rep} {pq}"
            );
        }
    }

    #[test]
    fn a_replacement_that_is_not_a_valid_escape_is_a_500_with_gos_message() {
        let m = replace_path_regex("^/x", "/%zz");
        let mut fields = HeaderMap::new();
        let mut c = ctx(None, "/x");
        let Flow::Respond(r) = m.apply(&mut fields, &mut c) else {
            panic!("expected an answer");
        };
        assert_eq!(r.status(), 500);
        assert_eq!(
            crate::middleware::test_support::body_text(r),
            "invalid URL escape \"%zz\"\n"
        );
        assert_eq!(c.path_and_query, "/x");
    }

    #[test]
    fn add_prefix_and_replace_path_keep_the_query() {
        let add = AddPrefix::from_plan(&bridge_plan::AddPrefix {
            prefix: "/base/".into(),
        });
        let mut c = ctx(None, "/x?y=1");
        add.apply(&mut c);
        assert_eq!(c.path_and_query, "/base/x?y=1");

        let replace = ReplacePath::from_plan(&bridge_plan::ReplacePath {
            path: "/fixed".into(),
        });
        let mut fields = HeaderMap::new();
        let mut c = ctx(None, "/old/path?y=1");
        replace.apply(&mut fields, &mut c);
        assert_eq!(c.path_and_query, "/fixed?y=1");
        assert_eq!(fields["x-replaced-path"], "/old/path");
    }
}
