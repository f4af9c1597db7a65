//! Rendering a rule tree back into a v3 rule string (`explain`, `diff`, and the round-trip property
//! tested in `tests.rs`).

use std::fmt::Write as _;

use bridge_plan::rule::{Matcher, Rule};

/// Renders a rule tree as a v3 rule string. Parsing the result with [`RuleSyntax::V3`](super::RuleSyntax::V3) gives back the same tree
/// for every tree this module produces. Values use backticks unless they contain one, in which case a
/// double-quoted Go string is used. Empty `And`/`Or` lists are never produced by the parser and render as `()`.
pub fn to_rule_string(rule: &Rule) -> String {
    let mut out = String::new();
    render(rule, &mut out);
    out
}

fn render(rule: &Rule, out: &mut String) {
    match rule {
        Rule::Or(items) => render_list(items, " || ", out, |r| matches!(r, Rule::Or(_))),
        Rule::And(items) => render_list(items, " && ", out, |r| {
            matches!(r, Rule::Or(_) | Rule::And(_))
        }),
        Rule::Not(inner) => {
            out.push('!');
            if matches!(**inner, Rule::Match(_) | Rule::Not(_)) {
                render(inner, out);
            } else {
                out.push('(');
                render(inner, out);
                out.push(')');
            }
        }
        Rule::Match(m) => render_matcher(m, out),
    }
}

fn render_list(items: &[Rule], sep: &str, out: &mut String, needs_parens: impl Fn(&Rule) -> bool) {
    if items.is_empty() {
        out.push_str("()");
        return;
    }
    for (n, item) in items.iter().enumerate() {
        if n > 0 {
            out.push_str(sep);
        }
        if needs_parens(item) {
            out.push('(');
            render(item, out);
            out.push(')');
        } else {
            render(item, out);
        }
    }
}

fn render_matcher(m: &Matcher, out: &mut String) {
    // Parsing drops one trailing dot from a `Host` (as Traefik does): a host that still ends in
    // one was written with one more (found by the `rule` fuzz target).
    let dotted;
    let (name, args): (&str, Vec<&str>) = match m {
        Matcher::Host { host } if host.ends_with('.') => {
            dotted = format!("{host}.");
            ("Host", vec![dotted.as_str()])
        }
        Matcher::Host { host } => ("Host", vec![host]),
        Matcher::HostRegexp { regex } => ("HostRegexp", vec![regex]),
        Matcher::Path { path } => ("Path", vec![path]),
        Matcher::PathPrefix { prefix } => ("PathPrefix", vec![prefix]),
        Matcher::PathRegexp { regex } => ("PathRegexp", vec![regex]),
        Matcher::Method { method } => ("Method", vec![method]),
        Matcher::Header { name, value } => ("Header", vec![name, value]),
        Matcher::HeaderRegexp { name, regex } => ("HeaderRegexp", vec![name, regex]),
        Matcher::Query { key, value } if value.is_empty() => ("Query", vec![key]),
        Matcher::Query { key, value } => ("Query", vec![key, value]),
        // An empty regex cannot be written as an argument; `(?:)` matches the same.
        Matcher::QueryRegexp { key, regex } if regex.is_empty() => {
            ("QueryRegexp", vec![key, "(?:)"])
        }
        Matcher::QueryRegexp { key, regex } => ("QueryRegexp", vec![key, regex]),
        Matcher::ClientIp { cidr } => ("ClientIP", vec![cidr]),
    };
    out.push_str(name);
    out.push('(');
    for (n, a) in args.iter().enumerate() {
        if n > 0 {
            out.push_str(", ");
        }
        out.push_str(&quote(a));
    }
    out.push(')');
}

/// A Go string literal for `s`: backticks when possible, else a double-quoted string with Go escapes.
pub(super) fn quote(s: &str) -> String {
    if !s.contains(['`', '\r', '\0', '\u{FEFF}']) {
        return format!("`{s}`");
    }
    let mut out = String::with_capacity(s.len() + 2);
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{FEFF}' => out.push_str("\\ufeff"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{:04x}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out.push('"');
    out
}
