//! Profile transforms and policy checks, run on the loaded configuration after the overlay.
//!
//! Transforms rewrite routers the overlay cannot reach (they live in the user's files). Policies
//! refuse, with locations, what would make a deployment unsafe: an insecure API, plain-HTTP
//! routers, an unauthenticated dashboard, weak TLS, certificates that are unreadable, mismatched,
//! expired or not for the domain, and a certificate resolver that is not defined, not ACME, or
//! does not obtain a certificate for the domain.

use std::collections::BTreeSet;

use crate::canon::escape;
use crate::diag::{Code, Diagnostic};
use crate::loaded::{EntityRef, Loaded, resolve_config_path};
use crate::model::dynamic::{Domain, RouterTls};
use crate::profile::{Profile, ResolverPolicy, Transform};

/// Applies the profile's transforms to the user's dynamic files (never to the profile's own).
pub fn apply_transforms(loaded: &mut Loaded, profile: &Profile) {
    let defaults = loaded.default_entry_points();
    for t in &profile.transforms {
        // What Traefik gives a router written on `to` without `tls`: the entry point's resolver and
        // domains. A resolver the static configuration does not define is left out: the entry
        // point's own check reports it where it is written, once, instead of once per moved router
        // and without a place.
        let (resolver, domains) = match t {
            Transform::MoveRouters { to, .. } => {
                let ep_tls = loaded
                    .static_cfg
                    .entry_points
                    .as_ref()
                    .and_then(|m| m.get(to))
                    .and_then(|e| e.http.as_ref())
                    .and_then(|h| h.tls.as_ref());
                let resolver = ep_tls.and_then(|t| t.cert_resolver.clone()).filter(|r| {
                    loaded
                        .static_cfg
                        .certificates_resolvers
                        .as_ref()
                        .is_some_and(|m| m.contains_key(r))
                });
                let domains = ep_tls
                    .and_then(|t| t.domains.as_ref())
                    .filter(|_| resolver.is_some())
                    .map(|ds| {
                        ds.iter()
                            .map(|d| Domain {
                                main: d.main.clone(),
                                sans: d.sans.clone(),
                            })
                            .collect::<Vec<_>>()
                    });
                (resolver, domains)
            }
            Transform::AppendMiddleware { .. } => (None, None),
        };
        for f in loaded.dynamic.iter_mut().filter(|f| f.file != profile.file) {
            let Some(routers) = f.model.http.as_mut().and_then(|h| h.routers.as_mut()) else {
                continue;
            };
            for r in routers.values_mut() {
                let eps: Vec<String> = r.entry_points.clone().unwrap_or_else(|| defaults.clone());
                match t {
                    Transform::MoveRouters {
                        from,
                        to,
                        tls_options,
                    } => {
                        if eps.iter().any(|e| e == from) {
                            let mut moved: Vec<String> = eps
                                .iter()
                                .map(|e| if e == from { to.clone() } else { e.clone() })
                                .collect();
                            moved.dedup();
                            r.entry_points = Some(moved);
                            if r.tls.is_none() {
                                r.tls = Some(RouterTls {
                                    options: tls_options.clone(),
                                    cert_resolver: resolver.clone(),
                                    domains: domains.clone(),
                                });
                            }
                        }
                    }
                    Transform::AppendMiddleware {
                        middleware,
                        entrypoints,
                    } => {
                        if eps.iter().any(|e| entrypoints.contains(e)) {
                            let list = r.middlewares.get_or_insert_with(Vec::new);
                            if !list.contains(middleware) {
                                list.push(middleware.clone());
                            }
                        }
                    }
                }
            }
        }
        // The profile's own routers get appended middlewares too (the dashboard needs HSTS as well).
        if let Transform::AppendMiddleware {
            middleware,
            entrypoints,
        } = t
            && let Some(routers) = loaded
                .dynamic
                .iter_mut()
                .find(|f| f.file == profile.file)
                .and_then(|f| f.model.http.as_mut())
                .and_then(|h| h.routers.as_mut())
        {
            for r in routers.values_mut() {
                let on = r
                    .entry_points
                    .iter()
                    .flatten()
                    .any(|e| entrypoints.contains(e));
                let list = r.middlewares.get_or_insert_with(Vec::new);
                if on && !list.contains(middleware) {
                    list.push(middleware.clone());
                }
            }
        }
    }
}

fn tls_rank(v: &str) -> u8 {
    match v {
        "VersionTLS10" | "1.0" => 10,
        "VersionTLS11" | "1.1" => 11,
        "VersionTLS12" | "1.2" => 12,
        "VersionTLS13" | "1.3" => 13,
        _ => 0,
    }
}

/// Checks the profile's policy; `now_unix` is passed in so results do not depend on the clock in tests.
pub fn check(loaded: &Loaded, profile: &Profile, now_unix: i64, diags: &mut Vec<Diagnostic>) {
    let policy = &profile.policy;
    let st = &loaded.static_cfg;
    let sc = &loaded.static_canon;
    if policy.deny_insecure_api && st.api.as_ref().and_then(|a| a.insecure) == Some(true) {
        diags.push(
            Diagnostic::error(Code::Policy, format!("profile `{}` refuses `api.insecure: true`: the API and dashboard would be open to anyone", profile.name))
                .at(sc.value_span("/api/insecure"))
                .pointer("/api/insecure")
                .hint("remove api.insecure; the profile serves the dashboard behind basicAuth"),
        );
    }
    let redirecting: BTreeSet<String> = st
        .entry_points
        .iter()
        .flatten()
        .filter(|(_, e)| {
            e.http
                .as_ref()
                .and_then(|h| h.redirections.as_ref())
                .and_then(|r| r.entry_point.as_ref())
                .is_some()
        })
        .map(|(n, _)| n.clone())
        .collect();
    let tls_eps: BTreeSet<String> = st
        .entry_points
        .iter()
        .flatten()
        .filter(|(_, e)| e.http.as_ref().and_then(|h| h.tls.as_ref()).is_some())
        .map(|(n, _)| n.clone())
        .collect();
    let defaults = loaded.default_entry_points();
    let mut dashboard_routers = 0;
    for f in &loaded.dynamic {
        let Some(routers) = f.model.http.as_ref().and_then(|h| h.routers.as_ref()) else {
            continue;
        };
        for (name, r) in routers {
            let base = format!("/http/routers/{}", escape(name));
            let eps = r.entry_points.clone().unwrap_or_else(|| defaults.clone());
            if policy.require_tls && r.tls.is_none() {
                for ep in eps
                    .iter()
                    .filter(|e| !tls_eps.contains(*e) && !redirecting.contains(*e))
                {
                    diags.push(
                        Diagnostic::error(Code::Policy, format!("profile `{}` refuses router `{name}` served over plain HTTP on entry point `{ep}`", profile.name))
                            .at(f.canon.key_span(&base))
                            .pointer(base.clone())
                            .hint("serve it on a TLS entry point (the prod profile moves routers from `web` to `websecure`) or add `tls: {}`"),
                    );
                }
            }
            let internal = matches!(r.service.as_str(), "api@internal" | "dashboard@internal");
            if internal {
                dashboard_routers += 1;
                if policy.dashboard_requires_auth
                    && !has_basic_auth(loaded, r.middlewares.as_deref().unwrap_or(&[]))
                {
                    diags.push(
                        Diagnostic::error(Code::Policy, format!("profile `{}` refuses router `{name}`: it serves the dashboard/API without basicAuth", profile.name))
                            .at(f.canon.key_span(&base))
                            .pointer(base.clone())
                            .hint("add a basicAuth middleware to the router"),
                    );
                }
            }
        }
    }
    let _ = dashboard_routers;
    if let Some(min) = &policy.min_tls_version {
        let floor = tls_rank(min);
        for f in &loaded.dynamic {
            for (oname, o) in f.model.tls.iter().flat_map(|t| t.options.iter().flatten()) {
                let v = o.min_version.as_deref().unwrap_or("VersionTLS12");
                if tls_rank(v) < floor {
                    let p = format!("/tls/options/{}/minVersion", escape(oname));
                    diags.push(
                        Diagnostic::error(Code::Policy, format!("profile `{}` requires TLS {min} or newer; TLS options `{oname}` allow {v}", profile.name))
                            .at(f.canon.value_span(&p).or_else(|| f.canon.key_span(&format!("/tls/options/{}", escape(oname)))))
                            .pointer(p),
                    );
                }
            }
        }
    }
    if let Some(rp) = &policy.certificate_resolver {
        check_resolver(loaded, profile, rp, diags);
    }
    if let Some(cp) = &policy.certificate {
        let cert = resolve_config_path(&loaded.dir, &cp.cert);
        let key = resolve_config_path(&loaded.dir, &cp.key);
        let at = loaded
            .dynamic
            .iter()
            .find(|f| f.file == profile.file)
            .and_then(|f| f.canon.value_span("/tls/certificates/0/certFile"));
        match crate::certs::inspect_pair(&cert, &key) {
            Err(e) => diags.push(
                Diagnostic::error(Code::Certificate, format!("certificate check failed: {e}"))
                    .at(at)
                    .hint(
                        "tls_cert must be a PEM certificate chain and tls_key its PEM private key",
                    ),
            ),
            Ok(info) => {
                if !crate::certs::covers(&info, &cp.domain) {
                    let names = if info.dns_names.is_empty() {
                        info.subject_cn.clone().unwrap_or_default()
                    } else {
                        info.dns_names.join(", ")
                    };
                    diags.push(
                        Diagnostic::error(Code::Certificate, format!("the certificate does not cover `{}` (it is for: {names})", cp.domain))
                            .at(at)
                            .hint("use a certificate whose subjectAltName lists the domain, or fix --var domain"),
                    );
                }
                let days = crate::certs::days_until_expiry(&info, now_unix);
                if days < 0 {
                    diags.push(
                        Diagnostic::error(
                            Code::Certificate,
                            format!("the certificate expired {} days ago", -days),
                        )
                        .at(at),
                    );
                } else if days < cp.warn_expiry_days {
                    diags.push(
                        Diagnostic::warning(
                            Code::Certificate,
                            format!("the certificate expires in {days} days"),
                        )
                        .at(at)
                        .hint("renew it before deploying"),
                    );
                }
                if loaded.static_cfg.ocsp.is_some()
                    && !info.ocsp_urls.is_empty()
                    && info.chain_len < 2
                {
                    diags.push(
                        Diagnostic::warning(
                            Code::Certificate,
                            "the certificate names an OCSP responder, but its file holds no issuer certificate after it: it will not be stapled",
                        )
                        .at(at)
                        .hint("put the issuing CA's certificate second in the certificate file"),
                    );
                }
                if info.not_before > now_unix {
                    diags.push(
                        Diagnostic::error(Code::Certificate, "the certificate is not valid yet")
                            .at(at),
                    );
                }
            }
        }
    }
}

/// `policy.certificate_resolver`: the resolver exists and is ACME, `domain` is a name a CA issues
/// a certificate for by HTTP-01/TLS-ALPN-01, and the resolver obtains one that covers it for some
/// router (the names are derived as for the plan, by `crate::acme`).
fn check_resolver(
    loaded: &Loaded,
    profile: &Profile,
    rp: &ResolverPolicy,
    diags: &mut Vec<Diagnostic>,
) {
    let at_resolver = profile.policy_span(&["certificate_resolver", "resolver"]);
    let at_domain = profile.policy_span(&["certificate_resolver", "domain"]);
    // The variable that gave the name, for the hint (`--var cert_resolver=…` in prod).
    let given_as = |value: &str| {
        profile
            .vars
            .iter()
            .find(|(_, v)| *v == value)
            .map_or_else(|| "the profile".to_owned(), |(k, _)| format!("--var {k}"))
    };
    let resolvers = loaded.static_cfg.certificates_resolvers.as_ref();
    let known: Vec<&str> = resolvers
        .iter()
        .flat_map(|m| m.iter())
        .filter(|(_, r)| r.acme.is_some())
        .map(|(n, _)| n.as_str())
        .collect();
    let name = &rp.resolver;
    let refused = match resolvers.and_then(|m| m.get(name)) {
        None => Some(format!(
            "profile `{}` takes its certificates from the resolver `{name}`, which the static configuration does not define",
            profile.name
        )),
        Some(r) if r.acme.is_none() => Some(format!(
            "profile `{}` takes its certificates from the resolver `{name}`, which is not an ACME resolver",
            profile.name
        )),
        Some(_) => None,
    };
    if let Some(message) = refused {
        let hint = match crate::diag::did_you_mean(name, known.iter().copied()) {
            Some(s) => format!(
                "did you mean `{s}`? ({} names the resolver)",
                given_as(name)
            ),
            None if known.is_empty() => format!(
                "the static configuration defines no ACME resolver: add certificatesResolvers.{name}.acme (email, storage, a challenge), or fix {}",
                given_as(name)
            ),
            None => format!(
                "ACME resolvers of the static configuration: {}; {} names the resolver",
                known.join(", "),
                given_as(name)
            ),
        };
        diags.push(
            Diagnostic::error(Code::Policy, message)
                .at(at_resolver)
                .pointer("/certificate_resolver/resolver")
                .hint(hint),
        );
        return;
    }
    let domain = crate::acme::clean(&rp.domain);
    if !is_host_name(&domain) {
        diags.push(
            Diagnostic::error(
                Code::Policy,
                format!(
                    "profile `{}`: `{}` is not a host name the resolver `{name}` can obtain a certificate for",
                    profile.name, rp.domain
                ),
            )
            .at(at_domain)
            .pointer("/certificate_resolver/domain")
            .hint(format!(
                "{} must be a DNS name such as scadabridge.example.com (no wildcard: HTTP-01 and TLS-ALPN-01 cannot prove one, no IP address)",
                given_as(&rp.domain)
            )),
        );
        return;
    }
    let obtained = resolver_names(loaded, name);
    if !obtained.iter().any(|n| crate::acme::covers(n, &domain)) {
        let what = if obtained.is_empty() {
            "nothing: no router takes its certificate from it".to_owned()
        } else {
            obtained.join(", ")
        };
        diags.push(
            Diagnostic::error(
                Code::Policy,
                format!(
                    "profile `{}`: the resolver `{name}` obtains no certificate for `{domain}` (it obtains: {what})",
                    profile.name
                ),
            )
            .at(at_domain)
            .pointer("/certificate_resolver/domain")
            .hint("give the routers `tls.domains: [{main: DOMAIN}]` (or a Host matcher) with the resolver"),
        );
    }
}

/// Every name `resolver` obtains a certificate for, over the routers that use it (their own `tls`,
/// else their first TLS entry point's `http.tls`, as the plan resolves it).
fn resolver_names(loaded: &Loaded, resolver: &str) -> Vec<String> {
    use crate::rule::{RuleSyntax, parse_rule};
    let st = &loaded.static_cfg;
    let default_syntax = match st
        .core
        .as_ref()
        .and_then(|c| c.default_rule_syntax.as_deref())
    {
        Some("v2") => RuleSyntax::V2,
        _ => RuleSyntax::V3,
    };
    let defaults = loaded.default_entry_points();
    let mut out: Vec<String> = Vec::new();
    for f in &loaded.dynamic {
        for r in f
            .model
            .http
            .iter()
            .flat_map(|h| h.routers.iter().flatten())
            .map(|(_, r)| r)
        {
            let (res, domains) = match &r.tls {
                Some(t) => (t.cert_resolver.clone(), t.domains.clone()),
                None => {
                    let eps = r.entry_points.clone().unwrap_or_else(|| defaults.clone());
                    let ep_tls = eps.iter().find_map(|e| {
                        st.entry_points
                            .as_ref()?
                            .get(e)?
                            .http
                            .as_ref()?
                            .tls
                            .as_ref()
                    });
                    let Some(t) = ep_tls else { continue };
                    let domains = t.domains.as_ref().map(|ds| {
                        ds.iter()
                            .map(|d| Domain {
                                main: d.main.clone(),
                                sans: d.sans.clone(),
                            })
                            .collect::<Vec<_>>()
                    });
                    (t.cert_resolver.clone(), domains)
                }
            };
            if res.as_deref() != Some(resolver) {
                continue;
            }
            let syntax = RuleSyntax::from_router(r.rule_syntax.as_deref(), default_syntax);
            let Ok(rule) = parse_rule(&r.rule, syntax) else {
                continue; // reported with the rule
            };
            for n in crate::acme::router_domains(domains.as_deref(), &rule)
                .into_iter()
                .flatten()
            {
                if !out.contains(&n) {
                    out.push(n);
                }
            }
        }
    }
    out
}

/// A DNS name of at least two labels (letters, digits, `-`; no wildcard, not an IP address).
fn is_host_name(name: &str) -> bool {
    let labels: Vec<&str> = name.split('.').collect();
    name.len() <= 253
        && labels.len() >= 2
        && name.parse::<std::net::IpAddr>().is_err()
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.len() <= 63
                && !l.starts_with('-')
                && !l.ends_with('-')
                && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-')
        })
        && labels
            .last()
            .is_some_and(|tld| !tld.chars().all(|c| c.is_ascii_digit()))
}

/// True when the (flattened) middleware list contains a basicAuth middleware.
fn has_basic_auth(loaded: &Loaded, names: &[String]) -> bool {
    let file_name = |n: &String| EntityRef::parse(n).file_name().unwrap_or(n).to_owned();
    let mut stack: Vec<String> = names.iter().map(file_name).collect();
    let mut seen = BTreeSet::new();
    while let Some(n) = stack.pop() {
        if !seen.insert(n.clone()) {
            continue;
        }
        for f in &loaded.dynamic {
            if let Some(m) = f
                .model
                .http
                .as_ref()
                .and_then(|h| h.middlewares.as_ref())
                .and_then(|m| m.get(&n))
            {
                if m.basic_auth.is_some() {
                    return true;
                }
                if let Some(c) = &m.chain {
                    stack.extend(c.middlewares.iter().flatten().map(file_name));
                }
            }
        }
    }
    false
}

#[cfg(test)]
mod tests {
    #![allow(
        clippy::unwrap_used,
        clippy::expect_used,
        reason = "test code: a panic is a test failure"
    )]

    use std::collections::BTreeMap;

    use super::*;
    use crate::check::{CheckOptions, CheckReport, check};
    use crate::diag::Severity;
    use crate::profile::ProfileSelector;

    const STATIC: &str = "entryPoints:\n  web:\n    address: \":80\"\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n";
    const DYNAMIC: &str = "http:\n  routers:\n    central:\n      rule: \"PathPrefix(`/`)\"\n      service: central\n      entryPoints: [web]\n  services:\n    central:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:5000\"\n";
    const LE: &str = "certificatesResolvers:\n  le:\n    acme:\n      email: ops@example.com\n      storage: /var/lib/bridge/acme.json\n      httpChallenge:\n        entryPoint: web\n";

    fn run(static_extra: &str, dynamic: &str, profile: &str, vars: &[(&str, &str)]) -> CheckReport {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("traefik.yml"),
            format!("{STATIC}{static_extra}"),
        )
        .unwrap();
        std::fs::write(dir.path().join("dynamic.yml"), dynamic).unwrap();
        std::fs::write(
            dir.path().join("users"),
            "admin:$apr1$H6uskkkW$IgXLP6ewTrSuBkTrqE8wj/\n",
        )
        .unwrap();
        let users = dir.path().join("users").to_string_lossy().into_owned();
        let mut v: BTreeMap<String, String> = vars
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect();
        v.insert("dashboard_users_file".into(), users);
        let profile = if profile == "prod" {
            ProfileSelector::Builtin("prod".into())
        } else {
            let p = dir.path().join("custom.yml");
            std::fs::write(&p, profile).unwrap();
            ProfileSelector::File(p)
        };
        check(&CheckOptions {
            dir: dir.path().to_path_buf(),
            vars: v,
            profile: Some(profile),
            now_unix: Some(1_800_000_000),
            ..CheckOptions::default()
        })
        .unwrap()
    }

    fn errors(r: &CheckReport) -> Vec<&Diagnostic> {
        r.diagnostics
            .iter()
            .filter(|d| d.severity == Severity::Error)
            .collect()
    }

    fn located_text<'a>(r: &'a CheckReport, d: &Diagnostic) -> (&'a str, &'a str) {
        let span = d.span.expect("located");
        let f = r.sources.get(span.file).unwrap();
        (f.name.as_str(), &f.text[span.start..])
    }

    const DOMAIN: (&str, &str) = ("domain", "scadabridge.example.com");

    #[test]
    fn moved_routers_get_the_resolver_and_domains_of_their_new_entry_point() {
        let r = run(LE, DYNAMIC, "prod", &[DOMAIN, ("cert_resolver", "le")]);
        assert!(errors(&r).is_empty(), "{:?}", r.diagnostics);
        let central = r
            .loaded
            .dynamic
            .iter()
            .find_map(|f| f.model.http.as_ref()?.routers.as_ref()?.get("central"))
            .unwrap();
        assert_eq!(
            central.entry_points.as_deref(),
            Some(&["websecure".to_owned()][..])
        );
        let tls = central.tls.as_ref().unwrap();
        assert_eq!(tls.options.as_deref(), Some("bridgectl-prod"));
        assert_eq!(tls.cert_resolver.as_deref(), Some("le"));
        assert_eq!(
            tls.domains.as_ref().unwrap()[0].main.as_deref(),
            Some("scadabridge.example.com")
        );
        assert_eq!(
            resolver_names(&r.loaded, "le"),
            vec!["scadabridge.example.com".to_owned()]
        );
    }

    #[test]
    fn an_undefined_resolver_is_refused_in_the_profile_and_not_spread_to_moved_routers() {
        let r = run(LE, DYNAMIC, "prod", &[DOMAIN, ("cert_resolver", "lee")]);
        let errs = errors(&r);
        let policy: Vec<_> = errs.iter().filter(|d| d.code == Code::Policy).collect();
        assert_eq!(policy.len(), 1, "{errs:?}");
        assert!(
            policy[0]
                .message
                .contains("resolver `lee`, which the static configuration does not define")
        );
        assert!(
            policy[0]
                .hint
                .as_deref()
                .unwrap()
                .contains("did you mean `le`? (--var cert_resolver")
        );
        let (file, at) = located_text(&r, policy[0]);
        assert_eq!(file, "profiles/prod.yml");
        assert!(at.starts_with("\"lee\""), "{at}");
        assert!(
            errs.iter().all(|d| d.span.is_some()),
            "every error is located: {errs:?}"
        );
        let central = r
            .loaded
            .dynamic
            .iter()
            .find_map(|f| f.model.http.as_ref()?.routers.as_ref()?.get("central"))
            .unwrap();
        assert_eq!(central.tls.as_ref().unwrap().cert_resolver, None);
    }

    #[test]
    fn a_resolver_that_is_not_acme_is_refused() {
        let tailscale = "certificatesResolvers:\n  ts:\n    tailscale: {}\n";
        let r = run(
            tailscale,
            DYNAMIC,
            "prod",
            &[DOMAIN, ("cert_resolver", "ts")],
        );
        let errs = errors(&r);
        let d = errs
            .iter()
            .find(|d| d.code == Code::Policy)
            .unwrap_or_else(|| panic!("{errs:?}"));
        assert!(
            d.message
                .contains("resolver `ts`, which is not an ACME resolver"),
            "{}",
            d.message
        );
        assert!(located_text(&r, d).1.starts_with("\"ts\""));
    }

    #[test]
    fn the_domain_must_be_a_host_name() {
        for bad in [
            "*.example.com",
            "localhost",
            "10.0.0.1",
            "a..example.com",
            "-a.example.com",
        ] {
            let r = run(
                LE,
                DYNAMIC,
                "prod",
                &[("domain", bad), ("cert_resolver", "le")],
            );
            let errs = errors(&r);
            let d = errs
                .iter()
                .find(|d| d.code == Code::Policy)
                .unwrap_or_else(|| panic!("{bad}: {errs:?}"));
            assert!(
                d.message.contains("is not a host name"),
                "{bad}: {}",
                d.message
            );
            assert!(located_text(&r, d).1.starts_with(&format!("\"{bad}\"")));
        }
        assert!(is_host_name("scadabridge.example.com") && is_host_name("a-1.b.example"));
    }

    #[test]
    fn the_resolver_must_obtain_the_domain() {
        let profile = "\
description: t
vars:
  required:
    dashboard_users_file: unused here
policy:
  certificate_resolver:
    resolver: le
    domain: other.example.com
";
        let dynamic = DYNAMIC.replace(
            "      entryPoints: [web]\n",
            "      entryPoints: [web]\n      tls:\n        certResolver: le\n    host:\n      rule: \"Host(`a.example.com`)\"\n      service: central\n      tls:\n        certResolver: le\n",
        );
        let r = run(LE, &dynamic, profile, &[]);
        let errs = errors(&r);
        let d = errs
            .iter()
            .find(|d| d.code == Code::Policy)
            .unwrap_or_else(|| panic!("{errs:?}"));
        assert!(
            d.message
                .contains("the resolver `le` obtains no certificate for `other.example.com` (it obtains: a.example.com)"),
            "{}",
            d.message
        );
        assert!(located_text(&r, d).1.starts_with("other.example.com"));
        let ok = profile.replace("other.example.com", "A.example.com.");
        assert!(errors(&run(LE, &dynamic, &ok, &[])).is_empty());
    }
}
