//! The middlewares that rewrite the path the server receives: `stripPrefix`,
//! `stripPrefixRegex`, `addPrefix` and `replacePath`, with Traefik's bookkeeping fields
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
            .map(|r| {
                regex::Regex::new(r).map_err(|source| MiddlewareError::Regex {
                    field: "regex",
                    regex: r.clone(),
                    source,
                })
            })
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
/// records the prefix in `X-Forwarded-Prefix`; the rest always starts with `/`.
fn strip(fields: &mut HeaderMap, ctx: &mut RequestCtx<'_>, len: usize) {
    let (p, q) = split_pq(&ctx.path_and_query);
    let (prefix, rest) = p.split_at(len);
    if let Ok(v) = HeaderValue::from_str(prefix) {
        fields.insert(X_FORWARDED_PREFIX.clone(), v);
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
