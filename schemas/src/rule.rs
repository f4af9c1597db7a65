//! The rule AST: what a Traefik router rule means once parsed.
//!
//! Both rule syntaxes (v3 and the legacy v2) compile into this one tree, so the runtime matches with a
//! single set of semantics. Every value is already normalised by the compiler (hosts lower-cased and
//! without a trailing dot, v2 `{name:re}` templates turned into anchored regexes, methods upper-cased),
//! which keeps the runtime free of parsing decisions.

use serde::{Deserialize, Serialize};

/// A boolean expression over request matchers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Rule {
    /// Every operand matches.
    And(Vec<Rule>),
    /// At least one operand matches.
    Or(Vec<Rule>),
    /// The operand does not match.
    Not(Box<Rule>),
    /// A single matcher.
    Match(Matcher),
}

impl Rule {
    /// The hosts of every `Host` matcher, in rule order, lower-case without a trailing dot and
    /// without duplicates; negated ones too (Traefik collects them without looking at `!`, for
    /// ACME orders and for choosing TLS options by SNI).
    pub fn hosts(&self) -> Vec<String> {
        fn walk(rule: &Rule, out: &mut Vec<String>) {
            match rule {
                Rule::And(v) | Rule::Or(v) => v.iter().for_each(|r| walk(r, out)),
                Rule::Not(r) => walk(r, out),
                Rule::Match(Matcher::Host { host }) => {
                    let h = host.trim().trim_end_matches('.').to_ascii_lowercase();
                    if !h.is_empty() && h != "*" && !out.contains(&h) {
                        out.push(h);
                    }
                }
                Rule::Match(_) => {}
            }
        }
        let mut out = Vec::new();
        walk(self, &mut out);
        out
    }
}

/// One request matcher, with Traefik v3 semantics.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "matcher", rename_all = "snake_case", deny_unknown_fields)]
pub enum Matcher {
    /// Request host (port stripped, lower-cased, trailing dot removed) equals `host`.
    /// `*.example.com` matches exactly one extra label; `*` matches every host.
    Host {
        /// Lower-case ASCII host without trailing dot.
        host: String,
    },
    /// The lower-cased request host matches the (unanchored unless written so) regex.
    HostRegexp {
        /// Regex in the syntax of the `regex` crate (RE2 family, like Go).
        regex: String,
    },
    /// The routing path equals `path`.
    Path {
        /// Starts with `/`.
        path: String,
    },
    /// The routing path starts with `prefix` (plain string prefix).
    PathPrefix {
        /// Starts with `/`.
        prefix: String,
    },
    /// The routing path matches the regex.
    PathRegexp {
        /// Regex; unanchored unless written so.
        regex: String,
    },
    /// The request method equals `method`.
    Method {
        /// Upper-case method name.
        method: String,
    },
    /// Some value of header `name` equals `value`.
    Header {
        /// Canonical header name (`X-Forwarded-Proto`).
        name: String,
        /// Exact value.
        value: String,
    },
    /// Some value of header `name` matches the regex.
    HeaderRegexp {
        /// Canonical header name.
        name: String,
        /// Regex; unanchored unless written so.
        regex: String,
    },
    /// Some value of query parameter `key` equals `value` (`""` means present with an empty value).
    Query {
        /// Parameter name, case-sensitive.
        key: String,
        /// Exact value.
        value: String,
    },
    /// Some value of query parameter `key` matches the regex.
    QueryRegexp {
        /// Parameter name, case-sensitive.
        key: String,
        /// Regex; unanchored unless written so.
        regex: String,
    },
    /// The peer address (never a forwarded header) is inside `cidr`.
    ClientIp {
        /// Network in CIDR form; a single address is written as /32 or /128.
        cidr: String,
    },
}

/// Go's `textproto.CanonicalMIMEHeaderKey` (the form header names take in rules and in Traefik's
/// access log): `x-forwarded-proto` becomes `X-Forwarded-Proto`. Keys containing a
/// byte that is not valid in a header name (a space, say, or non-ASCII) are returned unchanged.
pub fn canonical_header_key(key: &str) -> String {
    let valid = |b: u8| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b);
    if !key.bytes().all(valid) {
        return key.to_owned();
    }
    let mut out = String::with_capacity(key.len());
    let mut upper = true;
    for c in key.chars() {
        out.push(if upper {
            c.to_ascii_uppercase()
        } else {
            c.to_ascii_lowercase()
        });
        upper = c == '-';
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_keys_are_canonicalised_like_go() {
        assert_eq!(
            canonical_header_key("x-forwarded-proto"),
            "X-Forwarded-Proto"
        );
        assert_eq!(
            canonical_header_key("X-FORWARDED-PROTO"),
            "X-Forwarded-Proto"
        );
        assert_eq!(canonical_header_key("content-md5"), "Content-Md5");
        assert_eq!(canonical_header_key("x y"), "x y");
        assert_eq!(canonical_header_key("é-x"), "é-x");
    }
}
