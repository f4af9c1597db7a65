//! Profile transforms and policy checks, run on the loaded configuration after the overlay.
//!
//! Transforms rewrite routers the overlay cannot reach (they live in the user's files). Policies
//! refuse, with locations, what would make a deployment unsafe: an insecure API, plain-HTTP
//! routers, an unauthenticated dashboard, weak TLS, and certificates that are unreadable,
//! mismatched, expired or not for the domain.

use std::collections::BTreeSet;

use crate::canon::escape;
use crate::diag::{Code, Diagnostic};
use crate::loaded::{EntityRef, Loaded, resolve_config_path};
use crate::model::dynamic::RouterTls;
use crate::profile::{Profile, Transform};

/// Applies the profile's transforms to the user's dynamic files (never to the profile's own).
pub fn apply_transforms(loaded: &mut Loaded, profile: &Profile) {
    let defaults = loaded.default_entry_points();
    for t in &profile.transforms {
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
                                    ..RouterTls::default()
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
