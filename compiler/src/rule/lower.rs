//! Lowering: matcher calls → the plan's rule tree ([`bridge_plan::rule::Rule`]), for v3 and v2, with
//! the matcher table (names per syntax) and every argument check Traefik makes.

use std::net::IpAddr;
use std::str::FromStr;

use bridge_plan::rule::{Matcher, Rule, canonical_header_key};
use ipnet::IpNet;

use super::display::quote;
use super::go_regex::{go_regex_to_rust, regex_error_message};
use super::parse::{Arg, Call, Expr};
use super::v2_template::{Template, v2_template};
use super::{MAX_ERRORS, RuleError, RuleSyntax};

// === Matcher table ===

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Host,
    HostRegexp,
    Path,
    PathPrefix,
    PathRegexp,
    Method,
    Header,
    HeaderRegexp,
    Query,
    QueryRegexp,
    ClientIp,
    // v2 only
    HostHeader,
    Headers,
    HeadersRegexp,
}

const V3_MATCHERS: &[(&str, Kind)] = &[
    ("ClientIP", Kind::ClientIp),
    ("Method", Kind::Method),
    ("Host", Kind::Host),
    ("HostRegexp", Kind::HostRegexp),
    ("Path", Kind::Path),
    ("PathRegexp", Kind::PathRegexp),
    ("PathPrefix", Kind::PathPrefix),
    ("Header", Kind::Header),
    ("HeaderRegexp", Kind::HeaderRegexp),
    ("Query", Kind::Query),
    ("QueryRegexp", Kind::QueryRegexp),
];

const V2_MATCHERS: &[(&str, Kind)] = &[
    ("Host", Kind::Host),
    ("HostHeader", Kind::HostHeader),
    ("HostRegexp", Kind::HostRegexp),
    ("ClientIP", Kind::ClientIp),
    ("Path", Kind::Path),
    ("PathPrefix", Kind::PathPrefix),
    ("Method", Kind::Method),
    ("Headers", Kind::Headers),
    ("HeadersRegexp", Kind::HeadersRegexp),
    ("Query", Kind::Query),
];

/// Matcher names that belong to TCP routers only.
const TCP_MATCHERS: &[&str] = &["HostSNI", "HostSNIRegexp", "ALPN"];

/// Traefik registers each matcher under four spellings: as defined, lower, upper and `strings.Title` of the
/// lower-case name (`PathPrefix`, `pathprefix`, `PATHPREFIX`, `Pathprefix`).
fn spelled_as(defined: &str, written: &str) -> bool {
    if written == defined {
        return true;
    }
    let lower = defined.to_ascii_lowercase();
    if written == lower || written == defined.to_ascii_uppercase() {
        return true;
    }
    let mut chars = lower.chars();
    let title: String = chars
        .next()
        .map(|c| c.to_ascii_uppercase())
        .into_iter()
        .chain(chars)
        .collect();
    written == title
}

pub(super) fn table(syntax: RuleSyntax) -> &'static [(&'static str, Kind)] {
    match syntax {
        RuleSyntax::V2 => V2_MATCHERS,
        RuleSyntax::V3 => V3_MATCHERS,
    }
}

fn defined_name(kind: Kind) -> &'static str {
    V3_MATCHERS
        .iter()
        .chain(V2_MATCHERS)
        .find(|(_, k)| *k == kind)
        .map(|(n, _)| *n)
        .unwrap_or("?")
}

/// An example call, for hints.
fn example(kind: Kind) -> &'static str {
    match kind {
        Kind::Host | Kind::HostHeader => "Host(`example.com`)",
        Kind::HostRegexp => "HostRegexp(`^[a-z]+\\.example\\.com$`)",
        Kind::Path => "Path(`/api`)",
        Kind::PathPrefix => "PathPrefix(`/api`)",
        Kind::PathRegexp => "PathRegexp(`^/api/v[0-9]+`)",
        Kind::Method => "Method(`GET`)",
        Kind::Header => "Header(`X-Forwarded-Proto`, `https`)",
        Kind::HeaderRegexp => "HeaderRegexp(`User-Agent`, `^curl/`)",
        Kind::Query => "Query(`debug`, `1`)",
        Kind::QueryRegexp => "QueryRegexp(`page`, `^[0-9]+$`)",
        Kind::ClientIp => "ClientIP(`10.0.0.0/8`)",
        Kind::Headers => "Headers(`X-Forwarded-Proto`, `https`)",
        Kind::HeadersRegexp => "HeadersRegexp(`User-Agent`, `^curl/`)",
    }
}

// === Lowering: matcher calls to the plan's rule tree ===

pub(super) struct Lower {
    pub(super) syntax: RuleSyntax,
    pub(super) errors: Vec<RuleError>,
}

impl Lower {
    fn error(&mut self, err: RuleError) {
        if self.errors.len() < MAX_ERRORS {
            self.errors.push(err);
        }
    }

    pub(super) fn expr(&mut self, e: &Expr) -> Option<Rule> {
        match e {
            Expr::And(items) => {
                let parts: Vec<Option<Rule>> = items.iter().map(|i| self.expr(i)).collect();
                Some(and(parts.into_iter().collect::<Option<Vec<_>>>()?))
            }
            Expr::Or(items) => {
                let parts: Vec<Option<Rule>> = items.iter().map(|i| self.expr(i)).collect();
                Some(or(parts.into_iter().collect::<Option<Vec<_>>>()?))
            }
            Expr::Not(inner) => Some(Rule::Not(Box::new(self.expr(inner)?))),
            Expr::Call(call) => self.call(call),
        }
    }

    fn call(&mut self, call: &Call) -> Option<Rule> {
        let kind = self.resolve(call)?;
        let name = defined_name(kind);
        // Traefik's CheckRule: no argument list may be empty, and no argument may be empty.
        if call.args.is_empty() {
            self.error(
                RuleError::new(format!("`{name}` needs an argument"), call.span)
                    .hint(format!("e.g. {}", example(kind))),
            );
            return None;
        }
        let mut ok = true;
        for arg in &call.args {
            if arg.value.is_empty() {
                self.error(RuleError::new(
                    format!("empty argument to `{name}`"),
                    arg.span,
                ));
                ok = false;
            }
        }
        if !ok {
            return None;
        }
        match self.syntax {
            RuleSyntax::V3 => self.v3(kind, call),
            RuleSyntax::V2 => self.v2(kind, call),
        }
    }

    /// Finds the matcher a call names, or records why the name is not accepted.
    fn resolve(&mut self, call: &Call) -> Option<Kind> {
        let written = call.name.as_str();
        let own = table(self.syntax);
        if let Some((_, kind)) = own.iter().find(|(defined, _)| spelled_as(defined, written)) {
            return Some(*kind);
        }
        let span = call.name_span;
        let syntax = self.syntax.name();
        // A known matcher in a spelling Traefik does not register (`pathPrefix`).
        if let Some((defined, _)) = own.iter().find(|(d, _)| d.eq_ignore_ascii_case(written)) {
            let lower = defined.to_ascii_lowercase();
            let upper = defined.to_ascii_uppercase();
            let title = format!(
                "{}{}",
                upper.get(..1).unwrap_or(""),
                lower.get(1..).unwrap_or("")
            );
            self.error(
                RuleError::new(format!("unknown matcher `{written}`: Traefik accepts only four spellings of `{defined}`"), span)
                    .hint(format!("did you mean `{defined}`? (also accepted: `{lower}`, `{upper}`, `{title}`)")),
            );
            return None;
        }
        // A matcher of the other syntax.
        let other = match self.syntax {
            RuleSyntax::V2 => V3_MATCHERS,
            RuleSyntax::V3 => V2_MATCHERS,
        };
        if let Some((defined, kind)) = other.iter().find(|(d, _)| d.eq_ignore_ascii_case(written)) {
            let message = format!("`{defined}` is not a matcher in ruleSyntax {syntax}");
            let hint = match (self.syntax, kind) {
                (RuleSyntax::V3, Kind::Headers) => {
                    "in v3 it is called `Header`; or set `ruleSyntax: v2`".to_owned()
                }
                (RuleSyntax::V3, Kind::HeadersRegexp) => {
                    "in v3 it is called `HeaderRegexp`; or set `ruleSyntax: v2`".to_owned()
                }
                (RuleSyntax::V3, Kind::HostHeader) => {
                    "in v3 use `Host`; or set `ruleSyntax: v2`".to_owned()
                }
                (RuleSyntax::V2, Kind::Header) => {
                    "in v2 it is called `Headers`; or set `ruleSyntax: v3`".to_owned()
                }
                (RuleSyntax::V2, Kind::HeaderRegexp) => {
                    "in v2 it is called `HeadersRegexp`; or set `ruleSyntax: v3`".to_owned()
                }
                (RuleSyntax::V2, Kind::PathRegexp) => {
                    "in v2 use a `Path(`/{name:regex}`)` template; or set `ruleSyntax: v3`"
                        .to_owned()
                }
                (RuleSyntax::V2, Kind::QueryRegexp) => {
                    "in v2 use a `Query(`key={name:regex}`)` template; or set `ruleSyntax: v3`"
                        .to_owned()
                }
                _ => "set `ruleSyntax` to the syntax this rule is written in".to_owned(),
            };
            self.error(RuleError::new(message, span).hint(hint));
            return None;
        }
        if let Some(tcp) = TCP_MATCHERS
            .iter()
            .find(|t| t.eq_ignore_ascii_case(written))
        {
            self.error(
                RuleError::new(
                    format!("`{tcp}` is a TCP router matcher, not valid in an HTTP router rule"),
                    span,
                )
                .hint("for HTTP routers use `Host`"),
            );
            return None;
        }
        let mut err = RuleError::new(format!("unknown matcher `{written}`"), span);
        if let Some(best) = did_you_mean(written, own.iter().map(|(d, _)| *d)) {
            err = err.hint(format!("did you mean `{best}`?"));
        } else {
            let names: Vec<&str> = own.iter().map(|(d, _)| *d).collect();
            err = err.hint(format!(
                "ruleSyntax {syntax} matchers: {}",
                names.join(", ")
            ));
        }
        self.error(err);
        None
    }

    // --- v3 ---

    fn v3(&mut self, kind: Kind, call: &Call) -> Option<Rule> {
        let (min, max, expected) = match kind {
            Kind::Header | Kind::HeaderRegexp => (2, 2, "exactly 2 arguments (name, value)"),
            Kind::Query | Kind::QueryRegexp => (1, 2, "1 or 2 arguments (key, optional value)"),
            _ => (1, 1, "exactly 1 argument"),
        };
        let n = call.args.len();
        let name = defined_name(kind);
        if n < min || n > max {
            let span = match call.args.get(max) {
                Some(first_extra) if n > max => first_extra.span.to(call.args[n - 1].span),
                _ => call.span,
            };
            let mut err = RuleError::new(format!("`{name}` takes {expected}, got {n}"), span);
            err = if n > max && max == 1 {
                let alternatives: Vec<String> = call
                    .args
                    .iter()
                    .map(|a| format!("{name}({})", quote(&a.value)))
                    .collect();
                err.hint(format!(
                    "in ruleSyntax v3 every matcher takes one value; combine with ||: `{}`, or set `ruleSyntax: v2`",
                    alternatives.join(" || ")
                ))
            } else {
                err.hint(format!("e.g. {}", example(kind)))
            };
            self.error(err);
            return None;
        }
        let a0 = &call.args[0];
        let a1 = call.args.get(1);
        let matcher = match kind {
            Kind::Host => Matcher::Host {
                host: self.host(a0, true)?,
            },
            Kind::HostRegexp => {
                if !a0.value.is_ascii() {
                    self.error(
                        RuleError::new(
                            "`HostRegexp` only accepts ASCII; this regex has non-ASCII characters",
                            a0.span,
                        )
                        .hint("write internationalised names in their punycode form (xn--...)"),
                    );
                    return None;
                }
                Matcher::HostRegexp {
                    regex: self.regex(name, a0)?,
                }
            }
            Kind::Path => Matcher::Path {
                path: self.slash(name, a0)?,
            },
            Kind::PathPrefix => Matcher::PathPrefix {
                prefix: self.slash(name, a0)?,
            },
            Kind::PathRegexp => Matcher::PathRegexp {
                regex: self.regex(name, a0)?,
            },
            Kind::Method => Matcher::Method {
                method: a0.value.to_uppercase(),
            },
            Kind::Header => Matcher::Header {
                name: canonical_header_key(&a0.value),
                value: a1.map(|a| a.value.clone()).unwrap_or_default(),
            },
            Kind::HeaderRegexp => {
                let regex = self.regex(name, a1?)?;
                Matcher::HeaderRegexp {
                    name: canonical_header_key(&a0.value),
                    regex,
                }
            }
            Kind::Query => Matcher::Query {
                key: a0.value.clone(),
                value: a1.map(|a| a.value.clone()).unwrap_or_default(),
            },
            // Traefik's one-argument QueryRegexp is literally its Query matcher (key present with an empty
            // value), so it becomes a `Query` with value "".
            Kind::QueryRegexp => match a1 {
                None => Matcher::Query {
                    key: a0.value.clone(),
                    value: String::new(),
                },
                Some(re) => Matcher::QueryRegexp {
                    key: a0.value.clone(),
                    regex: self.regex(name, re)?,
                },
            },
            Kind::ClientIp => Matcher::ClientIp {
                cidr: self.client_ip(a0)?,
            },
            Kind::HostHeader | Kind::Headers | Kind::HeadersRegexp => return None,
        };
        Some(Rule::Match(matcher))
    }

    // --- v2 ---

    fn v2(&mut self, kind: Kind, call: &Call) -> Option<Rule> {
        let name = defined_name(kind);
        match kind {
            Kind::Host | Kind::HostHeader => self.each(call, |l, a| {
                Some(Matcher::Host {
                    host: l.host(a, false)?,
                })
            }),
            Kind::HostRegexp => self.each(call, |l, a| {
                Some(Matcher::HostRegexp {
                    regex: l.v2_host_regexp(a)?,
                })
            }),
            Kind::Path | Kind::PathPrefix => {
                let prefix = kind == Kind::PathPrefix;
                self.each(call, |l, a| l.v2_path(name, a, prefix))
            }
            Kind::Method => self.each(call, |_, a| {
                Some(Matcher::Method {
                    method: a.value.to_uppercase(),
                })
            }),
            Kind::ClientIp => self.each(call, |l, a| {
                Some(Matcher::ClientIp {
                    cidr: l.client_ip(a)?,
                })
            }),
            Kind::Headers | Kind::HeadersRegexp => {
                if !call.args.len().is_multiple_of(2) {
                    self.error(
                        RuleError::new(
                            format!(
                                "`{name}` takes name/value pairs, got {} arguments",
                                call.args.len()
                            ),
                            call.span,
                        )
                        .hint(format!("e.g. {}", example(kind))),
                    );
                    return None;
                }
                let mut parts = Vec::new();
                for pair in call.args.chunks(2) {
                    let [key, value] = pair else { return None };
                    let header = canonical_header_key(&key.value);
                    parts.push(if kind == Kind::Headers {
                        Some(Rule::Match(Matcher::Header {
                            name: header,
                            value: value.value.clone(),
                        }))
                    } else {
                        self.regex(name, value).map(|regex| {
                            Rule::Match(Matcher::HeaderRegexp {
                                name: header,
                                regex,
                            })
                        })
                    });
                }
                Some(and(parts.into_iter().collect::<Option<Vec<_>>>()?))
            }
            Kind::Query => {
                let parts: Vec<Option<Rule>> = call
                    .args
                    .iter()
                    .map(|a| self.v2_query(a).map(Rule::Match))
                    .collect();
                Some(and(parts.into_iter().collect::<Option<Vec<_>>>()?))
            }
            Kind::HeaderRegexp | Kind::Header | Kind::PathRegexp | Kind::QueryRegexp => None,
        }
    }

    /// v2 multi-value matchers: one matcher per argument, any of which may match.
    fn each(
        &mut self,
        call: &Call,
        mut f: impl FnMut(&mut Self, &Arg) -> Option<Matcher>,
    ) -> Option<Rule> {
        let parts: Vec<Option<Rule>> = call
            .args
            .iter()
            .map(|a| f(self, a).map(Rule::Match))
            .collect();
        Some(or(parts.into_iter().collect::<Option<Vec<_>>>()?))
    }

    fn v2_host_regexp(&mut self, arg: &Arg) -> Option<String> {
        if !arg.value.is_ascii() {
            self.error(
                RuleError::new(
                    "`HostRegexp` only accepts ASCII; this value has non-ASCII characters",
                    arg.span,
                )
                .hint("write internationalised names in their punycode form (xn--...)"),
            );
            return None;
        }
        let compiled = v2_template(&arg.value, Template::Host).map(|re| {
            re.unwrap_or_else(|| format!("^{}$", regex::escape(&arg.value.to_ascii_lowercase())))
        });
        match compiled {
            Ok(re) => self.compiles("HostRegexp", arg, re),
            Err(message) => {
                self.error(RuleError::new(message, arg.span).hint(
                    "in ruleSyntax v2, HostRegexp takes a gorilla/mux template: literal host text plus \
                     `{name:regex}` placeholders, e.g. HostRegexp(`{sub:[a-z0-9-]+}.example.com`); \
                     or set `ruleSyntax: v3` to write a plain regex",
                ));
                None
            }
        }
    }

    fn v2_path(&mut self, name: &str, arg: &Arg, prefix: bool) -> Option<Matcher> {
        let path = self.slash(name, arg)?;
        let kind = if prefix {
            Template::Prefix
        } else {
            Template::Path
        };
        match v2_template(&path, kind) {
            Ok(None) if prefix => Some(Matcher::PathPrefix { prefix: path }),
            Ok(None) => Some(Matcher::Path { path }),
            Ok(Some(re)) => Some(Matcher::PathRegexp {
                regex: self.compiles(name, arg, re)?,
            }),
            Err(message) => {
                self.error(
                    RuleError::new(format!("invalid `{name}` template: {message}"), arg.span).hint(
                        "in ruleSyntax v2, placeholders are written `{name}` or `{name:regex}`; \
                     literal braces are not allowed",
                    ),
                );
                None
            }
        }
    }

    /// v2 `Query(`key=value`)`. gorilla/mux matches the first value of `key` against `^key=value$`, where the
    /// value may hold `{name:re}` placeholders and an empty value means "present with any value".
    fn v2_query(&mut self, arg: &Arg) -> Option<Matcher> {
        let Some((key, value)) = arg.value.split_once('=') else {
            // Traefik splits every argument at `=` and pairs the pieces up: a lone `Query(`k`)` fails
            // ("number of parameters must be multiple of 2") and `Query(`a`, `b`)` quietly means a=b. Both are
            // rejected here.
            self.error(
                RuleError::new("in ruleSyntax v2, `Query` arguments are `key=value` pairs", arg.span).hint(format!(
                    "write Query({}) to require `{}` with any value, or set `ruleSyntax: v3` to use Query({})",
                    quote(&format!("{}=", arg.value)),
                    arg.value,
                    quote(&arg.value),
                )),
            );
            return None;
        };
        if key.is_empty() {
            self.error(
                RuleError::new("empty query parameter name", arg.span)
                    .hint("e.g. Query(`debug=1`)"),
            );
            return None;
        }
        if key.contains(['{', '}']) {
            self.error(RuleError::new(
                "placeholders in query parameter names are not supported by bridgectl",
                arg.span,
            ));
            return None;
        }
        if value.is_empty() {
            return Some(Matcher::QueryRegexp {
                key: key.to_owned(),
                regex: "^.*$".to_owned(),
            });
        }
        match v2_template(value, Template::Query) {
            Ok(None) => Some(Matcher::Query {
                key: key.to_owned(),
                value: value.to_owned(),
            }),
            Ok(Some(re)) => Some(Matcher::QueryRegexp {
                key: key.to_owned(),
                regex: self.compiles("Query", arg, re)?,
            }),
            Err(message) => {
                self.error(RuleError::new(
                    format!("invalid `Query` template: {message}"),
                    arg.span,
                ));
                None
            }
        }
    }

    // --- argument checks ---

    fn host(&mut self, arg: &Arg, wildcards: bool) -> Option<String> {
        let value = arg.value.as_str();
        if !value.is_ascii() {
            let mut err = RuleError::new(
                format!(
                    "`Host` only accepts ASCII host names; {} has non-ASCII characters",
                    quote(value)
                ),
                arg.span,
            );
            err = match url::Host::parse(value) {
                Ok(url::Host::Domain(puny)) if puny.is_ascii() => {
                    err.hint(format!("use the punycode form: Host({})", quote(&puny)))
                }
                _ => err.hint("write the host in its punycode form (xn--...)"),
            };
            self.error(err);
            return None;
        }
        let mut host = value.to_ascii_lowercase();
        if host.ends_with('.') {
            host.pop();
        }
        if host.is_empty() {
            self.error(RuleError::new(
                format!("{} is not a host name", quote(value)),
                arg.span,
            ));
            return None;
        }
        if !wildcards && host.contains('*') {
            self.error(
                RuleError::new(
                    "`*` wildcards in `Host` need ruleSyntax v3 (Traefik v3.7+); in ruleSyntax v2 the `*` is literal, \
                     so Traefik accepts this rule but it never matches (bridgectl rejects it on purpose)",
                    arg.span,
                )
                .hint("set `ruleSyntax: v3`, or use HostRegexp(`{sub:[a-z0-9-]+}.example.com`)"),
            );
            return None;
        }
        Some(host)
    }

    fn slash(&mut self, name: &str, arg: &Arg) -> Option<String> {
        if arg.value.starts_with('/') {
            return Some(arg.value.clone());
        }
        self.error(
            RuleError::new(format!("`{name}` must start with `/`"), arg.span).hint(format!(
                "write {name}({})",
                quote(&format!("/{}", arg.value))
            )),
        );
        None
    }

    fn client_ip(&mut self, arg: &Arg) -> Option<String> {
        match parse_client_ip(&arg.value) {
            Some(cidr) => Some(cidr),
            None => {
                self.error(
                    RuleError::new(
                        format!("{} is not an IP address or CIDR range", quote(&arg.value)),
                        arg.span,
                    )
                    .hint("e.g. ClientIP(`192.168.1.0/24`) or ClientIP(`10.0.0.1`)"),
                );
                None
            }
        }
    }

    /// A Go regex written by the user, translated for the `regex` crate and compiled.
    fn regex(&mut self, name: &str, arg: &Arg) -> Option<String> {
        match go_regex_to_rust(&arg.value) {
            Ok(re) => self.compiles(name, arg, re),
            Err(message) => {
                self.error(RuleError::new(
                    format!("invalid regex in `{name}`: {message}"),
                    arg.span,
                ));
                None
            }
        }
    }

    fn compiles(&mut self, name: &str, arg: &Arg, re: String) -> Option<String> {
        match regex::Regex::new(&re) {
            Ok(_) => Some(re),
            Err(e) => {
                let mut err = RuleError::new(
                    format!("invalid regex in `{name}`: {}", regex_error_message(&e)),
                    arg.span,
                );
                if self.syntax == RuleSyntax::V3
                    && arg.value.contains('{')
                    && arg.value.contains(':')
                {
                    err = err.hint(
                        "this looks like a v2 `{name:regex}` template; in ruleSyntax v3 write a plain regex, \
                         or set `ruleSyntax: v2`",
                    );
                }
                self.error(err);
                None
            }
        }
    }
}

/// `And` of the parts, flattening nested `And`s and never wrapping a single part.
pub(super) fn and(parts: Vec<Rule>) -> Rule {
    let mut out = Vec::with_capacity(parts.len());
    for p in parts {
        match p {
            Rule::And(inner) => out.extend(inner),
            other => out.push(other),
        }
    }
    if out.len() == 1 {
        out.swap_remove(0)
    } else {
        Rule::And(out)
    }
}

/// `Or` of the parts, flattening nested `Or`s and never wrapping a single part.
pub(super) fn or(parts: Vec<Rule>) -> Rule {
    let mut out = Vec::with_capacity(parts.len());
    for p in parts {
        match p {
            Rule::Or(inner) => out.extend(inner),
            other => out.push(other),
        }
    }
    if out.len() == 1 {
        out.swap_remove(0)
    } else {
        Rule::Or(out)
    }
}

fn did_you_mean<'a>(got: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let got = got.to_lowercase();
    let mut best: Option<(f64, &str)> = None;
    for c in candidates {
        let score = strsim::jaro_winkler(&got, &c.to_ascii_lowercase());
        if score >= 0.8 && best.is_none_or(|(s, _)| score > s) {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c)
}

/// A bare address becomes a /32 or /128 network; a CIDR keeps its prefix with the host bits cleared, as Go's
/// `net.ParseCIDR` does.
fn parse_client_ip(value: &str) -> Option<String> {
    if value.contains('/') {
        IpNet::from_str(value)
            .ok()
            .map(|net| net.trunc().to_string())
    } else {
        IpAddr::from_str(value)
            .ok()
            .map(|ip| IpNet::from(ip).to_string())
    }
}
