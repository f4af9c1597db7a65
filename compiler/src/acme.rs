//! Which certificates an ACME resolver must obtain, derived from routers as Traefik derives them.
//!
//! A router with `tls.certResolver` needs either the certificates its `tls.domains` list (each a
//! main name plus SANs; duplicates and names a wildcard of the list already covers are dropped, as
//! Traefik's `deleteUnnecessaryDomains` does), or one certificate for the hosts of its rule's
//! `Host` matchers (first host main, the others SANs; Traefik's `ParseDomains`). Used by the
//! semantic checks (located errors) and by resolve (the plan's `certificate_resolvers`), so the
//! two cannot disagree.

use bridge_plan::rule::Rule;

use crate::model::dynamic::Domain;

/// One certificate: main name then further names, lower-case, no trailing dot.
pub type Names = Vec<String>;

/// A name as an ACME order carries it: lower-case ASCII, trailing dot removed.
pub fn clean(name: &str) -> String {
    name.trim().trim_end_matches('.').to_ascii_lowercase()
}

/// The hosts of every `Host` matcher of a rule, in rule order, without duplicates (negated ones
/// too: Traefik collects them without looking at `!`).
pub fn rule_hosts(rule: &Rule) -> Vec<String> {
    rule.hosts()
}

/// Does certificate name `pattern` (possibly `*.parent`) cover `name`?
pub fn covers(pattern: &str, name: &str) -> bool {
    if pattern == name {
        return true;
    }
    match (pattern.strip_prefix("*."), name.split_once('.')) {
        (Some(parent), Some((label, rest))) => !label.is_empty() && rest == parent,
        _ => false,
    }
}

/// The certificates a router needs: its `tls.domains` when it lists any, else its rule's hosts
/// as one certificate. Empty when neither gives a name.
pub fn router_domains(explicit: Option<&[Domain]>, rule: &Rule) -> Vec<Names> {
    let listed: Vec<Names> = explicit
        .unwrap_or_default()
        .iter()
        .map(|d| {
            let mut names: Names = Vec::new();
            for n in d
                .main
                .iter()
                .chain(d.sans.iter().flatten())
                .map(|n| clean(n))
            {
                if !n.is_empty() && !names.contains(&n) {
                    names.push(n);
                }
            }
            names
        })
        .filter(|n| !n.is_empty())
        .collect();
    if listed.is_empty() {
        let hosts = rule_hosts(rule);
        return if hosts.is_empty() {
            vec![]
        } else {
            vec![hosts]
        };
    }
    prune(listed)
}

/// Traefik's `deleteUnnecessaryDomains`: a domain equal to an earlier one goes; a name an earlier
/// domain already lists, or that another domain's wildcard main covers, is dropped from it; a
/// domain left without names goes.
fn prune(domains: Vec<Names>) -> Vec<Names> {
    let mut out: Vec<Names> = Vec::new();
    for (i, d) in domains.iter().enumerate() {
        if domains[..i].contains(d) {
            continue;
        }
        let kept: Names = d
            .iter()
            .filter(|name| {
                let earlier = domains[..i]
                    .iter()
                    .any(|o| o.iter().any(|n| covers(n, name)));
                let wildcard = domains.iter().enumerate().any(|(j, o)| {
                    j != i && o[0].starts_with("*.") && o[0] != **name && covers(&o[0], name)
                });
                !earlier && !wildcard
            })
            .cloned()
            .collect();
        if !kept.is_empty() {
            out.push(kept);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rule::{RuleSyntax, parse_rule};

    fn domain(main: &str, sans: &[&str]) -> Domain {
        Domain {
            main: Some(main.into()),
            sans: Some(sans.iter().map(|s| (*s).to_owned()).collect()),
        }
    }

    fn rule(text: &str) -> Rule {
        parse_rule(text, RuleSyntax::V3).unwrap()
    }

    #[test]
    fn hosts_of_the_rule_make_one_certificate_first_host_main() {
        let r = rule(
            "(Host(`A.example.com.`) || Host(`b.example.com`)) && PathPrefix(`/x`) || !Host(`c.example.com`) || Host(`a.example.com`)",
        );
        assert_eq!(
            router_domains(None, &r),
            vec![vec![
                "a.example.com".to_owned(),
                "b.example.com".into(),
                "c.example.com".into()
            ]]
        );
        assert!(router_domains(None, &rule("PathPrefix(`/api`)")).is_empty());
        assert!(router_domains(None, &rule("HostRegexp(`^.+\\.example\\.com$`)")).is_empty());
    }

    #[test]
    fn listed_domains_win_over_the_rule_and_are_pruned_like_traefik() {
        let r = rule("Host(`ignored.example.com`)");
        let got = router_domains(
            Some(&[
                domain("*.example.com", &["example.com"]),
                domain("www.example.com", &["api.example.com", "example.org"]),
                domain("*.example.com", &["example.com"]),
                domain("example.org", &[]),
            ]),
            &r,
        );
        assert_eq!(
            got,
            vec![
                vec!["*.example.com".to_owned(), "example.com".into()],
                vec!["example.org".to_owned()],
            ]
        );
    }

    #[test]
    fn a_wildcard_covers_exactly_one_label() {
        assert!(covers("*.example.com", "a.example.com"));
        assert!(!covers("*.example.com", "a.b.example.com"));
        assert!(!covers("*.example.com", "example.com"));
        assert!(covers("example.com", "example.com"));
    }
}

/// A `dnsChallenge.resolvers` entry as lego dials it: `host:port`, port 53 added when none is
/// written (`::1` becomes `[::1]:53`, as Go's `JoinHostPort` writes it). `Err`: why it cannot be
/// dialled.
pub fn nameserver(entry: &str) -> Result<String, &'static str> {
    let e = entry.trim();
    if let Ok(ip) = e.parse::<std::net::IpAddr>() {
        return Ok(std::net::SocketAddr::new(ip, 53).to_string());
    }
    let (host, port) = match e.rsplit_once(':') {
        Some((h, p)) if h.starts_with('[') => (h.trim_start_matches('[').trim_end_matches(']'), p),
        Some((h, p)) => (h, p),
        None => (e, "53"),
    };
    if host.is_empty() {
        return Err("has no host");
    }
    let port: u16 = port
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .ok_or("has no valid port (1-65535)")?;
    if let Ok(ip) = host.parse::<std::net::IpAddr>() {
        return Ok(std::net::SocketAddr::new(ip, port).to_string());
    }
    let name_ok = host.len() <= 253
        && host.split('.').all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && l.chars()
                    .all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_')
        });
    if !name_ok {
        return Err("is neither an IP address nor a host name");
    }
    Ok(format!("{}:{port}", host.to_ascii_lowercase()))
}

#[cfg(test)]
mod nameserver_tests {
    use super::nameserver;

    #[test]
    fn entries_get_lego_s_default_port_and_bracketed_ipv6() {
        let table = [
            ("10.0.0.53", Ok("10.0.0.53:53")),
            ("10.0.0.53:5353", Ok("10.0.0.53:5353")),
            ("::1", Ok("[::1]:53")),
            ("[::1]:5353", Ok("[::1]:5353")),
            ("NS1.Example.com", Ok("ns1.example.com:53")),
            ("ns1.example.com:54", Ok("ns1.example.com:54")),
            (":53", Err("has no host")),
            ("10.0.0.53:0", Err("has no valid port (1-65535)")),
            ("10.0.0.53:dns", Err("has no valid port (1-65535)")),
            (
                "ns 1.example.com",
                Err("is neither an IP address nor a host name"),
            ),
        ];
        for (entry, want) in table {
            assert_eq!(nameserver(entry), want.map(str::to_owned), "{entry}");
        }
    }
}
