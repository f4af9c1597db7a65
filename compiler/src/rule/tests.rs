#![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

use std::net::IpAddr;

use bridge_plan::rule::Matcher;
use ipnet::IpNet;
use proptest::prelude::*;

use super::display::quote;
use super::go_regex::go_regex_to_rust;
use super::lower::{and, or, table};
use super::*;

fn ok(rule: &str, syntax: RuleSyntax) -> Rule {
    parse_rule(rule, syntax).unwrap_or_else(|e| panic!("{rule:?} should parse, got {e:#?}"))
}
fn v3(rule: &str) -> Rule {
    ok(rule, RuleSyntax::V3)
}
fn v2(rule: &str) -> Rule {
    ok(rule, RuleSyntax::V2)
}
fn errs(rule: &str, syntax: RuleSyntax) -> Vec<RuleError> {
    match parse_rule(rule, syntax) {
        Ok(r) => panic!("{rule:?} should fail, got {r:?}"),
        Err(e) => e,
    }
}
/// The single error for a rule.
fn err(rule: &str, syntax: RuleSyntax) -> RuleError {
    let mut e = errs(rule, syntax);
    assert_eq!(e.len(), 1, "{rule:?}: {e:#?}");
    e.remove(0)
}
fn err3(rule: &str) -> RuleError {
    err(rule, RuleSyntax::V3)
}
/// The text an error points at.
fn at<'a>(rule: &'a str, e: &RuleError) -> &'a str {
    &rule[e.offset..e.offset + e.len]
}
fn hint(e: &RuleError) -> &str {
    e.hint.as_deref().unwrap_or("")
}

fn host(h: &str) -> Rule {
    Rule::Match(Matcher::Host { host: h.into() })
}
fn host_re(r: &str) -> Rule {
    Rule::Match(Matcher::HostRegexp { regex: r.into() })
}
fn path(p: &str) -> Rule {
    Rule::Match(Matcher::Path { path: p.into() })
}
fn prefix(p: &str) -> Rule {
    Rule::Match(Matcher::PathPrefix { prefix: p.into() })
}
fn path_re(r: &str) -> Rule {
    Rule::Match(Matcher::PathRegexp { regex: r.into() })
}
fn method(m: &str) -> Rule {
    Rule::Match(Matcher::Method { method: m.into() })
}
fn header(n: &str, v: &str) -> Rule {
    Rule::Match(Matcher::Header {
        name: n.into(),
        value: v.into(),
    })
}
fn header_re(n: &str, r: &str) -> Rule {
    Rule::Match(Matcher::HeaderRegexp {
        name: n.into(),
        regex: r.into(),
    })
}
fn query(k: &str, v: &str) -> Rule {
    Rule::Match(Matcher::Query {
        key: k.into(),
        value: v.into(),
    })
}
fn query_re(k: &str, r: &str) -> Rule {
    Rule::Match(Matcher::QueryRegexp {
        key: k.into(),
        regex: r.into(),
    })
}
fn ip(c: &str) -> Rule {
    Rule::Match(Matcher::ClientIp { cidr: c.into() })
}
fn not(r: Rule) -> Rule {
    Rule::Not(Box::new(r))
}
fn matches(re: &str, s: &str) -> bool {
    regex::Regex::new(re).unwrap().is_match(s)
}

// --- acceptance table (traefik-semantics.md §3), the parsing half of each row ---

#[test]
fn rows_01_to_04_host_is_lower_cased_without_trailing_dot() {
    assert_eq!(v3("Host(`example.com`)"), host("example.com"));
    assert_eq!(v3("Host(`EXAMPLE.COM`)"), host("example.com"));
    assert_eq!(v3("Host(`example.com.`)"), host("example.com"));
}

#[test]
fn row_05_multi_value_host_is_v2_only() {
    let rule = "Host(`example.com`, `example.org`)";
    let e = err3(rule);
    assert!(e.message.contains("exactly 1 argument, got 2"), "{e:?}");
    assert_eq!(at(rule, &e), "`example.org`");
    assert!(
        hint(&e).contains("Host(`example.com`) || Host(`example.org`)"),
        "{e:?}"
    );
    assert!(hint(&e).contains("ruleSyntax: v2"), "{e:?}");
    assert_eq!(
        v2(rule),
        Rule::Or(vec![host("example.com"), host("example.org")])
    );
}

#[test]
fn row_06_host_must_be_ascii() {
    let rule = "Host(`🦭.com`)";
    let e = err3(rule);
    assert_eq!(at(rule, &e), "`🦭.com`");
    assert!(hint(&e).contains("Host(`xn--9t9h.com`)"), "{e:?}");
    assert!(err(rule, RuleSyntax::V2).message.contains("ASCII"));
    assert_eq!(v3("Host(`xn--9t9h.com`)"), host("xn--9t9h.com"));
}

#[test]
fn rows_07_08_wildcards_are_kept_in_v3_and_rejected_in_v2() {
    assert_eq!(v3("Host(`*.Example.com`)"), host("*.example.com"));
    assert_eq!(v3("Host(`*`)"), host("*"));
    let e = err("Host(`*.example.com`)", RuleSyntax::V2);
    assert!(e.message.contains("never matches"), "{e:?}");
    assert!(hint(&e).contains("ruleSyntax: v3"), "{e:?}");
}

#[test]
fn row_09_ip_hosts() {
    assert_eq!(v3("Host(`10::10`)"), host("10::10"));
    assert_eq!(v3("Host(`127.0.0.1`)"), host("127.0.0.1"));
}

#[test]
fn rows_10_11_host_regexp_is_kept_as_written() {
    assert_eq!(
        v3(r"HostRegexp(`^[a-zA-Z-]+\.com$`)"),
        host_re(r"^[a-zA-Z-]+\.com$")
    );
    assert_eq!(
        v3(r"HostRegexp(`^[A-Z]+\.com$`)"),
        host_re(r"^[A-Z]+\.com$")
    );
}

#[test]
fn row_12_v2_template_is_literal_in_v3_and_a_template_in_v2() {
    let rule = r"HostRegexp(`{domain:[a-zA-Z-]+\.com}`)";
    let Rule::Match(Matcher::HostRegexp { regex }) = v3(rule) else {
        panic!()
    };
    assert_eq!(regex, r"\{domain:[a-zA-Z-]+\.com}");
    assert!(!matches(&regex, "example.com"));
    let Rule::Match(Matcher::HostRegexp { regex }) = v2(rule) else {
        panic!()
    };
    assert_eq!(regex, r"(?i)^(?:[a-zA-Z-]+\.com)$");
    assert!(matches(&regex, "example.com"));
    assert!(!matches(&regex, "example.org"));
}

#[test]
fn row_13_bad_host_regexp() {
    let e = err3("HostRegexp(`(example.com`)");
    assert!(e.message.contains("unclosed group"), "{e:?}");
    // Traefik v2 accepts it (the text is a literal host that never matches); bridgectl says so and rejects.
    let e = err("HostRegexp(`(example.com`)", RuleSyntax::V2);
    assert!(
        e.message.contains("never matches") && e.message.contains("on purpose"),
        "{e:?}"
    );
}

#[test]
fn rows_14_to_16_paths() {
    assert_eq!(v3("Path(`/css`)"), path("/css"));
    let e = err3("Path(`css`)");
    assert!(e.message.contains("must start with `/`"), "{e:?}");
    assert_eq!(hint(&e), "write Path(`/css`)");
    let rule = "Path(``)";
    let e = err3(rule);
    assert!(e.message.contains("empty argument"), "{e:?}");
    assert_eq!(at(rule, &e), "``");
    assert_eq!(v3("PathPrefix(\"/css\")"), prefix("/css"));
}

#[test]
fn rows_17_18_path_regexp() {
    assert_eq!(v3("PathRegexp(`^/(css|js)`)"), path_re("^/(css|js)"));
    // Go reads `{` that is not a repetition as a literal; Rust needs it escaped.
    let Rule::Match(Matcher::PathRegexp { regex }) = v3("PathRegexp(\"/{path:(css|js)}\")") else {
        panic!()
    };
    assert_eq!(regex, r"/\{path:(css|js)}");
    assert!(matches(&regex, "/{path:css}"));
    assert!(!matches(&regex, "/css"));
}

#[test]
fn rows_19_20_method() {
    assert_eq!(v3("Method(`get`)"), method("GET"));
    let e = err3("Method(`GET`, `POST`)");
    assert!(
        hint(&e).contains("Method(`GET`) || Method(`POST`)"),
        "{e:?}"
    );
    assert_eq!(
        v2("Method(`GET`, `post`)"),
        Rule::Or(vec![method("GET"), method("POST")])
    );
}

#[test]
fn rows_21_to_23_headers() {
    assert_eq!(
        v3("Header(`X-Forwarded-Proto`, `https`)"),
        header("X-Forwarded-Proto", "https")
    );
    assert_eq!(
        v3("Header(`x-forwarded-proto`, `https`)"),
        header("X-Forwarded-Proto", "https")
    );
    let e = err3("Header(`X-Forwarded-Host`)");
    assert!(e.message.contains("exactly 2 arguments"), "{e:?}");
    let rule = "Header(`k`, ``)";
    assert_eq!(at(rule, &err3(rule)), "``");
    assert_eq!(
        v3("HeaderRegexp(`X-Forwarded-Proto`, `^https?$`)"),
        header_re("X-Forwarded-Proto", "^https?$")
    );
}

#[test]
fn rows_24_to_26_query() {
    assert_eq!(v3("Query(`q`, `traefik`)"), query("q", "traefik"));
    assert_eq!(v3("Query(`mobile`)"), query("mobile", ""));
    assert_eq!(v3("QueryRegexp(`q`, `^.*$`)"), query_re("q", "^.*$"));
    // Traefik's one-argument QueryRegexp is its Query matcher.
    assert_eq!(v3("QueryRegexp(`mobile`)"), query("mobile", ""));
    assert!(
        err3("Query(`a`, `b`, `c`)")
            .message
            .contains("1 or 2 arguments")
    );
}

#[test]
fn rows_27_28_client_ip() {
    assert_eq!(v3("ClientIP(`192.168.1.0/24`)"), ip("192.168.1.0/24"));
    let rule = "ClientIP(`1`)";
    let e = err3(rule);
    assert!(e.message.contains("not an IP address or CIDR"), "{e:?}");
    assert_eq!(at(rule, &e), "`1`");
    assert_eq!(v3("ClientIP(`10.0.0.1`)"), ip("10.0.0.1/32"));
    assert_eq!(v3("ClientIP(`::1`)"), ip("::1/128"));
    assert_eq!(v3("ClientIP(`192.168.1.5/24`)"), ip("192.168.1.0/24"));
    assert!(parse_rule("ClientIP(`10.0.0.0/33`)", RuleSyntax::V3).is_err());
    assert!(parse_rule("ClientIP(`fe80::1%eth0`)", RuleSyntax::V3).is_err());
    assert_eq!(
        v2("ClientIP(`10.0.0.1`, `10.1.0.0/16`)"),
        Rule::Or(vec![ip("10.0.0.1/32"), ip("10.1.0.0/16")])
    );
}

#[test]
fn rows_29_to_32_operators() {
    assert_eq!(
        v3("Host(`localhost`) && PathPrefix(`/css`)"),
        Rule::And(vec![host("localhost"), prefix("/css")])
    );
    assert_eq!(
        v3(r#"Host("example.com") || Host("example.org") && Path("/css")"#),
        Rule::Or(vec![
            host("example.com"),
            Rule::And(vec![host("example.org"), path("/css")])
        ])
    );
    assert_eq!(
        v3(r#"(Host("example.com") || Host("example.org")) && Path("/css")"#),
        Rule::And(vec![
            Rule::Or(vec![host("example.com"), host("example.org")]),
            path("/css")
        ])
    );
    assert_eq!(
        v3(r#"!(Host("example.com") && !Path("/css"))"#),
        not(Rule::And(vec![host("example.com"), not(path("/css"))]))
    );
}

#[test]
fn row_33_four_spellings_of_every_matcher() {
    for syntax in [RuleSyntax::V2, RuleSyntax::V3] {
        for (defined, _) in table(syntax) {
            let lower = defined.to_ascii_lowercase();
            let title = format!("{}{}", &defined[..1], &lower[1..]);
            for name in [
                defined.to_string(),
                lower.clone(),
                defined.to_ascii_uppercase(),
                title,
            ] {
                let rule = format!("{name}(`x`)");
                // Arguments may be wrong for the matcher; the name itself must be accepted.
                if let Err(e) = parse_rule(&rule, syntax) {
                    assert!(
                        !e.iter().any(|e| e.message.contains("matcher `")),
                        "{rule}: {e:?}"
                    );
                }
            }
        }
    }
    for rule in [
        r#"PATHPREFIX("/css")"#,
        r#"pathprefix("/css")"#,
        r#"Pathprefix("/css")"#,
    ] {
        assert_eq!(v3(rule), prefix("/css"));
    }
    let rule = "pathPrefix(`/css`)";
    let e = err3(rule);
    assert_eq!(at(rule, &e), "pathPrefix");
    assert!(hint(&e).starts_with("did you mean `PathPrefix`?"), "{e:?}");
    assert!(parse_rule("ClientIp(`10.0.0.1`)", RuleSyntax::V3).is_err());
    assert_eq!(v3("Clientip(`10.0.0.1`)"), ip("10.0.0.1/32"));
}

#[test]
fn row_34_not_a_rule() {
    let rule = "Host(example.com)";
    let e = err3(rule);
    assert!(e.message.contains("quoted strings"), "{e:?}");
    assert_eq!(at(rule, &e), "example.com");
    assert_eq!(hint(&e), "write Host(`example.com`)");
    let rule = "rulewithnotmatcher";
    let e = err3(rule);
    assert!(e.message.contains("not a matcher call"), "{e:?}");
    assert_eq!(at(rule, &e), rule);
    for empty in ["", "   ", "\n\t", "/* nothing */"] {
        assert!(err3(empty).message.contains("empty"), "{empty:?}");
    }
}

#[test]
fn row_35_path_with_space() {
    assert_eq!(v3("PathPrefix(`/foo bar`)"), prefix("/foo bar"));
}

#[test]
fn rows_37_to_39_default_priority_is_the_byte_length() {
    assert_eq!(default_priority("Host(`example.org`)"), 19);
    assert!(default_priority("PathPrefix(`/mypath`)") > default_priority("PathPrefix(`/my`)"));
    assert_eq!(default_priority("Host(`é.org`)"), 14);
}

#[test]
fn row_40_v2_path_template() {
    let Rule::Match(Matcher::PathRegexp { regex }) = v2("Path(`/css{path:(/.*)?}`)") else {
        panic!()
    };
    assert_eq!(regex, "^/css(?:(/.*)?)$");
    assert!(matches(&regex, "/css/main.css"));
    assert!(matches(&regex, "/css/components/component.css"));
    assert!(!matches(&regex, "/css.css"));
    assert!(!matches(&regex, "/js/main.js"));
}

// --- grammar ---

#[test]
fn precedence_and_flattening() {
    let (a, b, c) = (host("a"), host("b"), host("c"));
    assert_eq!(
        v3("Host(`a`) || Host(`b`) && Host(`c`)"),
        Rule::Or(vec![a.clone(), Rule::And(vec![b.clone(), c.clone()])])
    );
    assert_eq!(
        v3("Host(`a`) && Host(`b`) || Host(`c`)"),
        Rule::Or(vec![Rule::And(vec![a.clone(), b.clone()]), c.clone()])
    );
    let flat = Rule::And(vec![a.clone(), b.clone(), c.clone()]);
    assert_eq!(v3("Host(`a`) && Host(`b`) && Host(`c`)"), flat);
    assert_eq!(v3("(Host(`a`) && Host(`b`)) && Host(`c`)"), flat);
    assert_eq!(v3("Host(`a`) && ((Host(`b`) && (Host(`c`))))"), flat);
    assert_eq!(v3("((Host(`a`)))"), a);
    assert_eq!(v3("!Host(`a`)"), not(a.clone()));
    assert_eq!(v3("!!Host(`a`)"), not(not(a.clone())));
    assert_eq!(v3("! ( Host(`a`) )"), not(a.clone()));
    // v2 multi-value matchers merge into a surrounding `||`.
    assert_eq!(v2("Host(`a`, `b`) || Host(`c`)"), Rule::Or(vec![a, b, c]));
}

#[test]
fn whitespace_line_breaks_and_comments() {
    let want = Rule::And(vec![host("a"), path("/b")]);
    assert_eq!(v3(" \tHost( `a` )\t&&\r\n  Path(`/b`)\n"), want);
    assert_eq!(v3("Host(`a`) && /* c */ Path(`/b`) // trailing"), want);
    // Go inserts a semicolon after `)` at a line break, so the rule ends there.
    let rule = "Host(`a`)\n&& Path(`/b`)";
    let e = err3(rule);
    assert_eq!((e.offset, e.len), (9, 1));
    assert!(hint(&e).contains("end of the line"), "{e:?}");
    let e = err3("(Host(`a`)\n|| Host(`b`))");
    assert!(e.message.contains("line break"), "{e:?}");
    let e = err3("Host(`a`\n)");
    assert!(e.message.contains("missing `,`"), "{e:?}");
    // A trailing comma is Go syntax, and lets arguments span lines.
    assert_eq!(
        v2("Host(\n  `a`,\n  `b`,\n)"),
        Rule::Or(vec![host("a"), host("b")])
    );
    let e = err3("Host(`a`)\u{a0}&& Path(`/b`)");
    assert!(e.message.contains("U+00A0"), "{e:?}");
}

#[test]
fn string_literals() {
    assert_eq!(v3(r#"Path("/caf\u00e9")"#), path("/café"));
    assert_eq!(v3(r#"Path("/caf\xc3\xa9")"#), path("/café"));
    assert_eq!(v3(r#"Path("/\101\t")"#), path("/A\t"));
    assert_eq!(v3(r#"Header("X", "a\"b\\c")"#), header("X", "a\"b\\c"));
    assert_eq!(v3(r"PathRegexp(`^/a\.b$`)"), path_re(r"^/a\.b$"));
    assert_eq!(v3("Path(`/a\r\nb`)"), path("/a\nb"));
    let rule = r#"Path("/\q")"#;
    let e = err3(rule);
    assert_eq!(at(rule, &e), r"\q");
    assert!(err3(r#"Path("/\'")"#).message.contains(r"\'"));
    assert!(err3(r#"Path("/\xff")"#).message.contains("UTF-8"));
    assert!(err3(r#"Path("/\ud800")"#).message.contains("code point"));
    assert!(err3(r#"Path("/\400")"#).message.contains("255"));
    let rule = "Path(\"/a\nb\")";
    assert_eq!(at(rule, &err3(rule)), "\"");
    let rule = "Path(`/a";
    assert_eq!(at(rule, &err3(rule)), "`");
    assert!(err3("Path(`/\0`)").message.contains("NUL"));
}

#[test]
fn single_quotes_are_rejected_with_a_hint() {
    let rule = "Host('example.com')";
    let e = err3(rule);
    assert_eq!(at(rule, &e), "'example.com'");
    assert!(hint(&e).contains("`example.com`"), "{e:?}");
}

#[test]
fn syntax_error_offsets() {
    let rule = "Host(`a`) && ";
    let e = err3(rule);
    assert_eq!((e.offset, e.len), (rule.len(), 0));
    let rule = "(Host(`a`) && Path(`/b`)";
    let e = err3(rule);
    assert_eq!((e.offset, e.len), (0, 1));
    assert!(e.message.contains("never closed"));
    let rule = "Host(`a`))";
    assert_eq!(at(rule, &err3(rule)), ")");
    let rule = "Host(`a`) Path(`/b`)";
    let e = err3(rule);
    assert_eq!(at(rule, &e), "Path");
    assert!(e.message.contains("`&&` or `||`"));
    let rule = "Host(`a`) and Path(`/b`)";
    let e = err3(rule);
    assert_eq!(at(rule, &e), "and");
    assert_eq!(hint(&e), "use `&&`");
    let rule = "Host(`a`) | Path(`/b`)";
    assert_eq!(hint(&err3(rule)), "use `||`");
    let rule = "Host(`a` `b`)";
    let e = err3(rule);
    assert_eq!(at(rule, &e), "`b`");
    assert!(e.message.contains("missing `,`"));
    let rule = "Host(,)";
    assert_eq!(at(rule, &err3(rule)), ",");
    let rule = "Host(`a`) && ()";
    assert_eq!(at(rule, &err3(rule)), ")");
    let rule = "Host(1)";
    assert_eq!(at(rule, &err3(rule)), "1");
    let rule = "`a`";
    assert!(err3(rule).message.contains("argument of a matcher"));
}

#[test]
fn semantic_errors_are_all_collected_with_offsets() {
    let rule = "Hots(`a`) && Path(`x`) || ClientIP(`1`) && Method(``)";
    let e = errs(rule, RuleSyntax::V3);
    let spots: Vec<&str> = e.iter().map(|e| at(rule, e)).collect();
    assert_eq!(spots, ["Hots", "`x`", "`1`", "``"]);
    assert_eq!(hint(&e[0]), "did you mean `Host`?");
    let rule = "Host(`🦭`, `ok`, `*.x`)";
    let e = errs(rule, RuleSyntax::V2);
    assert_eq!(
        e.iter().map(|e| at(rule, e)).collect::<Vec<_>>(),
        ["`🦭`", "`*.x`"]
    );
}

#[test]
fn empty_argument_lists_and_arities() {
    for rule in ["Host()", "Path()", "Header()", "ClientIP()"] {
        let e = err3(rule);
        assert!(e.message.contains("needs an argument"), "{rule}: {e:?}");
        assert_eq!(at(rule, &e), rule);
    }
    let e = err3("Path(`/a`, `/b`)");
    assert!(hint(&e).contains("Path(`/a`) || Path(`/b`)"), "{e:?}");
    assert!(
        err3("HeaderRegexp(`a`, `b`, `c`)")
            .message
            .contains("exactly 2")
    );
    assert!(
        err(" Headers(`a`)", RuleSyntax::V2)
            .message
            .contains("pairs")
    );
}

#[test]
fn names_of_the_other_syntax_and_tcp() {
    let e = err3("Headers(`X`, `y`)");
    assert!(hint(&e).contains("`Header`"), "{e:?}");
    assert!(hint(&err3("HeadersRegexp(`X`, `y`)")).contains("`HeaderRegexp`"));
    assert!(hint(&err3("HostHeader(`a`)")).contains("`Host`"));
    assert!(hint(&err("Header(`X`, `y`)", RuleSyntax::V2)).contains("`Headers`"));
    assert!(hint(&err("QueryRegexp(`a`, `b`)", RuleSyntax::V2)).contains("ruleSyntax: v3"));
    assert!(hint(&err("PathRegexp(`^/a`)", RuleSyntax::V2)).contains("template"));
    assert!(err3("HostSNI(`a`)").message.contains("TCP"));
    let e = err3("Frobnicate(`a`)");
    assert!(hint(&e).contains("ClientIP"), "{e:?}");
}

#[test]
fn depth_is_capped() {
    let nested = |n: usize| format!("{}Host(`a`){}", "(".repeat(n), ")".repeat(n));
    assert_eq!(v3(&nested(MAX_DEPTH)), host("a"));
    assert!(err3(&nested(MAX_DEPTH + 1)).message.contains("levels deep"));
    assert!(err3(&nested(100_000)).message.contains("levels deep"));
    assert!(
        err3(&format!("{}Host(`a`)", "!".repeat(100_000)))
            .message
            .contains("levels deep")
    );
    // Long flat rules are fine.
    let long = vec!["Host(`a`)"; 20_000].join(" || ");
    let Rule::Or(items) = v3(&long) else { panic!() };
    assert_eq!(items.len(), 20_000);
}

// --- v2 specifics ---

#[test]
fn v2_headers_and_query() {
    assert_eq!(v2("Headers(`x-a`, `1`)"), header("X-A", "1"));
    assert_eq!(
        v2("Headers(`x-a`, `1`, `x-b`, `2`)"),
        Rule::And(vec![header("X-A", "1"), header("X-B", "2")])
    );
    assert_eq!(
        v2("HeadersRegexp(`Content-Type`, `application/(text|json)`)"),
        header_re("Content-Type", "application/(text|json)")
    );
    assert!(
        err("HeadersRegexp(`X`, `(a`)", RuleSyntax::V2)
            .message
            .contains("unclosed group")
    );
    assert_eq!(
        v2("Query(`foo=bar`, `bar=baz`)"),
        Rule::And(vec![query("foo", "bar"), query("bar", "baz")])
    );
    assert_eq!(v2("Query(`foo=b=ar`)"), query("foo", "b=ar"));
    assert_eq!(v2("Query(`mobile=`)"), query_re("mobile", "^.*$"));
    assert_eq!(
        v2("Query(`id={id:[0-9]+}`)"),
        query_re("id", "^(?:[0-9]+)$")
    );
    assert_eq!(v2("Query(`id=a{x}`)"), query_re("id", "^a(?:.*)$"));
    let e = err("Query(`mobile`)", RuleSyntax::V2);
    assert!(hint(&e).contains("Query(`mobile=`)"), "{e:?}");
    assert!(
        err("Query(`titi={test`)", RuleSyntax::V2)
            .message
            .contains("unbalanced")
    );
    assert!(
        err("Query(`=x`)", RuleSyntax::V2)
            .message
            .contains("empty query")
    );
}

#[test]
fn v2_host_regexp_templates() {
    assert_eq!(
        v2("HostRegexp(`{sub:[a-z]+}.Example.com`)"),
        host_re(r"^(?:[a-z]+)\.example\.com$")
    );
    assert_eq!(
        v2("HostRegexp(`{sub}.example.com`)"),
        host_re(r"^(?:[^.]+)\.example\.com$")
    );
    assert_eq!(v2("HostRegexp(`Example.com`)"), host_re(r"^example\.com$"));
    assert_eq!(
        v2("HostRegexp(`a.com`, `{x:b}.com`)"),
        Rule::Or(vec![host_re(r"^a\.com$"), host_re(r"^(?:b)\.com$")])
    );
    let Rule::Match(Matcher::HostRegexp { regex }) =
        v2(r"HostRegexp(`{subdomain:(foo\.)?bar\.com}`)")
    else {
        panic!()
    };
    assert!(
        matches(&regex, "foo.bar.com")
            && matches(&regex, "bar.com")
            && !matches(&regex, "fooubar.com")
    );
    let Rule::Match(Matcher::HostRegexp { regex }) = v2(r"HostRegexp(`{dummy:[A-Z]+}.bar.com`)")
    else {
        panic!()
    };
    assert!(matches(&regex, "foo.bar.com"), "{regex}");
    assert!(
        err("HostRegexp(`{test`)", RuleSyntax::V2)
            .message
            .contains("unbalanced")
    );
    assert!(
        err("HostRegexp(`{:a}.com`)", RuleSyntax::V2)
            .message
            .contains("missing name")
    );
    assert!(
        err("HostRegexp(`{a:(}.com`)", RuleSyntax::V2)
            .message
            .contains("invalid regex")
    );
    assert!(
        err("HostRegexp(`^a\\.com$`)", RuleSyntax::V2)
            .message
            .contains("never matches")
    );
    assert!(
        err("HostRegexp(`lo\u{e0}calhost`)", RuleSyntax::V2)
            .message
            .contains("ASCII")
    );
    assert!(
        err3("HostRegexp(`lo\u{e0}calhost`)")
            .message
            .contains("ASCII")
    );
}

#[test]
fn v2_path_templates() {
    assert_eq!(
        v2("Path(`/css`, `/js`)"),
        Rule::Or(vec![path("/css"), path("/js")])
    );
    assert_eq!(v2("PathPrefix(`/css`)"), prefix("/css"));
    let Rule::Match(Matcher::PathRegexp { regex }) = v2("PathPrefix(`/css-{name:[0-9]?}`)") else {
        panic!()
    };
    assert_eq!(regex, r"^/css\-(?:[0-9]?)");
    assert!(
        matches(&regex, "/css-1/main.css")
            && matches(&regex, "/css-/x")
            && !matches(&regex, "/css.css")
    );
    assert_eq!(v2("Path(`/user/{id}`)"), path_re("^/user/(?:[^/]+)$"));
    assert!(
        err("Path(`{id}/a`)", RuleSyntax::V2)
            .message
            .contains("must start with `/`")
    );
    assert!(
        err("Path(`/a}`)", RuleSyntax::V2)
            .message
            .contains("unbalanced")
    );
    assert!(
        err("Path(`titi`)", RuleSyntax::V2)
            .message
            .contains("must start")
    );
}

// --- helpers ---

#[test]
fn syntax_from_router() {
    use RuleSyntax::{V2, V3};
    assert_eq!(RuleSyntax::from_router(None, V2), V2);
    assert_eq!(RuleSyntax::from_router(Some(""), V2), V2);
    assert_eq!(RuleSyntax::from_router(Some("v2"), V3), V2);
    assert_eq!(RuleSyntax::from_router(Some("v3"), V2), V3);
    assert_eq!(RuleSyntax::from_router(Some("V2"), V2), V3);
    assert_eq!(RuleSyntax::from_router(Some("v4"), V2), V3);
}

#[test]
fn rule_error_displays_its_message() {
    let e = err3("Path(`x`)");
    assert_eq!(e.to_string(), e.message);
}

#[test]
fn go_regexes_are_translated() {
    let t = |s: &str| go_regex_to_rust(s);
    assert_eq!(t("a{").unwrap(), r"a\{");
    assert_eq!(t("a{2}b{2,}c{2,5}?").unwrap(), "a{2}b{2,}c{2,5}?");
    assert_eq!(t("a{01}").unwrap(), r"a\{01}");
    assert_eq!(t("a{,3}").unwrap(), r"a\{,3}");
    assert_eq!(t("x{secure:s?}").unwrap(), r"x\{secure:s?}");
    assert_eq!(t(r"\d+\w\s").unwrap(), r"[0-9]+[0-9A-Za-z_][\t\n\f\r ]");
    assert_eq!(
        t(r"[\d_][^\D][\W]").unwrap(),
        r"[0-9_][^[:^digit:]][[:^word:]]"
    );
    let not_space = t(r"^[\S]+$").unwrap();
    assert!(
        matches(&not_space, "a\u{b}\u{e9}")
            && !matches(&not_space, "a b")
            && !matches(&not_space, "\t")
    );
    assert_eq!(t("[[a]").unwrap(), r"[\[a]");
    assert_eq!(t("[a&&b~~c]").unwrap(), r"[a\&\&b\~\~c]");
    assert_eq!(t("[+--]").unwrap(), r"[+-\-]");
    assert_eq!(t("[]a]").unwrap(), r"[\]a]");
    assert_eq!(t("[[:alpha:]-]").unwrap(), "[[:alpha:]-]");
    assert_eq!(t(r"\Qa.b\E+").unwrap(), r"a\.b+");
    assert_eq!(t(r"\101\0").unwrap(), r"\x{41}\x{0}");
    assert_eq!(t(r"\<\ \%\.").unwrap(), r"< %\.");
    assert_eq!(
        t(r"\p{Greek}\pL\x41\x{263a}").unwrap(),
        r"\p{Greek}\pL\x41\x{263a}"
    );
    assert_eq!(
        t("(?i)a(?P<n>b)(?<m>c)(?:d)(?s-m:e)").unwrap(),
        "(?i)a(?P<n>b)(?<m>c)(?:d)(?s-m:e)"
    );
    for bad in [
        "a**", "a+*", "a{2}{3}", "a??*", "a{1001}", "a{3,2}", r"\1", "(?x)a", "(?=a)", r"\u0041",
        r"\C", "a\\",
    ] {
        assert!(t(bad).is_err(), "{bad} should be rejected like Go does");
    }
    for good in [
        "a*?",
        "a+?b??",
        "(a*)*",
        r"^/(css|js)$",
        r"[^/]+\.png$",
        "a|{",
    ] {
        assert!(t(good).is_ok(), "{good}");
    }
}

#[test]
fn translation_is_a_fixed_point() {
    for s in [
        r"a{x\d[\w&]}",
        r"\Q{}\E",
        r"[+--][[:digit:]][\S\D\W]",
        r"\101",
        r"\<",
        "(?i)[]a]",
    ] {
        let once = go_regex_to_rust(s).unwrap();
        assert_eq!(go_regex_to_rust(&once).unwrap(), once, "{s}");
        regex::Regex::new(&once).unwrap();
    }
}

#[test]
fn a_host_with_trailing_dots_renders_back_to_itself() {
    // Regression input of the `rule` fuzz target (fuzz/regressions/rule/).
    for text in ["Host(`a..`)", "Host(`a...`)", "Host(`a.`)", "Host(`a`)"] {
        let tree = parse_rule(text, RuleSyntax::V3).unwrap();
        let again = parse_rule(&to_rule_string(&tree), RuleSyntax::V3).unwrap();
        assert_eq!(again, tree, "{text} rendered as {}", to_rule_string(&tree));
    }
}

#[test]
fn to_rule_string_renders_v3() {
    let rule = Rule::And(vec![
        Rule::Or(vec![host("a.com"), host("b.com")]),
        not(prefix("/x`y")),
        not(Rule::And(vec![method("GET"), query("k", "")])),
        query("k", "v"),
        header("X-A", "1"),
        ip("10.0.0.0/8"),
    ]);
    let text = to_rule_string(&rule);
    assert_eq!(
        text,
        "(Host(`a.com`) || Host(`b.com`)) && !PathPrefix(\"/x`y\") && !(Method(`GET`) && Query(`k`)) \
             && Query(`k`, `v`) && Header(`X-A`, `1`) && ClientIP(`10.0.0.0/8`)"
    );
    assert_eq!(v3(&text), rule);
    assert_eq!(quote("a\r\"\\\u{1}"), r#""a\r\"\\\u0001""#);
}

#[test]
fn parsed_rules_render_back_to_the_same_tree() {
    for (rule, syntax) in [
        (
            "Path(`/css{path:(/.*)?}`) && Host(`a`, `b`)",
            RuleSyntax::V2,
        ),
        (r"HostRegexp(`{domain:[a-zA-Z-]+\.com}`)", RuleSyntax::V2),
        (r"HostRegexp(`{domain:[a-zA-Z-]+\.com}`)", RuleSyntax::V3),
        (
            "Path(`/{path:(css|js)}`) || !Query(`id={id:[0-9]+}`)",
            RuleSyntax::V2,
        ),
        (
            "PathRegexp(`/{path:(css|js)}`) || !QueryRegexp(`id`, `[\\S\\d]{2}`)",
            RuleSyntax::V3,
        ),
        (r"PathRegexp(`\d+[\s\w]\Q.\E`)", RuleSyntax::V3),
        ("Query(`mobile=`)", RuleSyntax::V2),
    ] {
        let tree = ok(rule, syntax);
        assert_eq!(v3(&to_rule_string(&tree)), tree, "{rule}");
    }
}

// --- properties ---

fn arb_regex() -> impl Strategy<Value = String> {
    prop_oneof![
        prop::sample::select(vec![
            r"^[a-z]+\.example\.com$",
            "^/api/v[0-9]+",
            "(?i)^foo(?:bar)?$",
            "^(css|js)$",
            r"[^/]+\.png$",
            "a{2,3}b*?",
            r"\x{41}",
            r"^\p{Greek}+$",
            "[[:alpha:]]",
        ])
        .prop_map(str::to_owned),
        "[a-z0-9.{}()*+?|^$-]{1,10}".prop_map(|s| regex::escape(&s)),
    ]
}

fn arb_text() -> impl Strategy<Value = String> {
    prop_oneof!["[a-z0-9_.~-]{1,12}", "\\PC{1,10}", "[`\"\\\\ a\u{e9}]{1,6}"]
}

fn arb_matcher() -> impl Strategy<Value = Matcher> {
    prop_oneof![
        (
            proptest::option::of(Just("*.")),
            "[a-z0-9-]{1,10}(\\.[a-z0-9-]{1,10}){0,2}"
        )
            .prop_map(|(w, h)| Matcher::Host {
                host: format!("{}{h}", w.unwrap_or(""))
            }),
        Just(Matcher::Host { host: "*".into() }),
        "[a-z0-9.-]{1,12}".prop_map(|s| Matcher::HostRegexp {
            regex: regex::escape(&s)
        }),
        arb_regex()
            .prop_filter("ASCII", |r| r.is_ascii())
            .prop_map(|regex| Matcher::HostRegexp { regex }),
        arb_text().prop_map(|p| Matcher::Path {
            path: format!("/{p}")
        }),
        arb_text().prop_map(|p| Matcher::PathPrefix {
            prefix: format!("/{p}")
        }),
        arb_regex().prop_map(|regex| Matcher::PathRegexp { regex }),
        "[A-Z]{1,7}".prop_map(|method| Matcher::Method { method }),
        ("[A-Z][a-z0-9]{0,5}(-[A-Z][a-z0-9]{0,5}){0,2}", arb_text())
            .prop_map(|(name, value)| Matcher::Header { name, value }),
        ("[A-Z][a-z0-9]{0,5}", arb_regex())
            .prop_map(|(name, regex)| Matcher::HeaderRegexp { name, regex }),
        (arb_text(), prop_oneof![Just(String::new()), arb_text()])
            .prop_map(|(key, value)| Matcher::Query { key, value }),
        (arb_text(), arb_regex()).prop_map(|(key, regex)| Matcher::QueryRegexp { key, regex }),
        (any::<[u8; 4]>(), 0u8..=32).prop_map(|(o, p)| Matcher::ClientIp {
            cidr: IpNet::new(IpAddr::from(o), p).unwrap().trunc().to_string()
        }),
        (any::<[u16; 8]>(), 0u8..=128).prop_map(|(o, p)| Matcher::ClientIp {
            cidr: IpNet::new(IpAddr::from(o), p).unwrap().trunc().to_string()
        }),
    ]
}

fn arb_rule() -> impl Strategy<Value = Rule> {
    arb_matcher()
        .prop_map(Rule::Match)
        .prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                prop::collection::vec(inner.clone(), 2..4).prop_map(Rule::And),
                prop::collection::vec(inner.clone(), 2..4).prop_map(Rule::Or),
                inner.prop_map(|r| Rule::Not(Box::new(r))),
            ]
        })
}

/// The shape the parser produces: no `And` directly inside `And`, no `Or` directly inside `Or`.
fn normalise(rule: Rule) -> Rule {
    match rule {
        Rule::And(items) => and(items.into_iter().map(normalise).collect()),
        Rule::Or(items) => or(items.into_iter().map(normalise).collect()),
        Rule::Not(inner) => Rule::Not(Box::new(normalise(*inner))),
        m @ Rule::Match(_) => m,
    }
}

fn check_spans(rule: &str, result: &Result<Rule, Vec<RuleError>>) {
    if let Err(errors) = result {
        assert!(!errors.is_empty());
        for e in errors {
            assert!(e.offset + e.len <= rule.len(), "{e:?} out of {rule:?}");
            assert!(
                rule.is_char_boundary(e.offset) && rule.is_char_boundary(e.offset + e.len),
                "{e:?}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_on_any_string(s in any::<String>()) {
        for syntax in [RuleSyntax::V2, RuleSyntax::V3] {
            check_spans(&s, &parse_rule(&s, syntax));
        }
    }

    #[test]
    fn never_panics_on_rule_like_strings(s in "[HhPpQqMmCcIi() `\"'!&|,\\\\{}\\[\\]:*.=/\\n\u{e9}ostheadrpxgq0-9-]{0,80}") {
        for syntax in [RuleSyntax::V2, RuleSyntax::V3] {
            check_spans(&s, &parse_rule(&s, syntax));
        }
    }

    #[test]
    fn never_panics_on_mutated_rules(rule in arb_rule(), cut in 0usize..400, insert in "[()`\"'!&|,{}\\\\ \n]{0,3}") {
        let text = to_rule_string(&rule);
        let mut at = cut.min(text.len());
        while !text.is_char_boundary(at) { at -= 1; }
        let mutated = format!("{}{insert}{}", &text[..at], &text[at..]);
        for syntax in [RuleSyntax::V2, RuleSyntax::V3] {
            check_spans(&mutated, &parse_rule(&mutated, syntax));
        }
    }

    #[test]
    fn rendering_then_parsing_gives_the_same_tree(rule in arb_rule()) {
        let rule = normalise(rule);
        let text = to_rule_string(&rule);
        let parsed = parse_rule(&text, RuleSyntax::V3);
        prop_assert_eq!(parsed.as_ref(), Ok(&rule), "rendered as {}", text);
        prop_assert_eq!(default_priority(&text), text.len() as i64);
    }

    #[test]
    fn go_translation_is_idempotent(s in "[a-z{}()\\[\\]^$.*+?|\\\\dDwWsSQE0-9,:&~-]{0,16}") {
        if let Ok(once) = go_regex_to_rust(&s) {
            prop_assert_eq!(go_regex_to_rust(&once), Ok(once), "from {}", s);
        }
    }
}
