//! Plan loading (`bridge_plan::load_verified`, schemas/src/canonical.rs) and what bridge-runtime
//! builds from a loaded plan.
//!
//! The runtime's own loader, `bridge_runtime::load::load_plan_file`, only reads a path and hands
//! the bytes to `load_verified`, so the bytes go to `load_verified` directly:
//!
//! 1. `data` as it is: UTF-8, strict JSON, version, hash (a fuzzer almost never gets past the hash);
//! 2. `data` re-sealed: when it is a JSON object, its `hash` is replaced by the hash of its content,
//!    so the shape checks and `Plan::check_consistency` see every mutation;
//! 3. an accepted plan, written with `Plan::to_file_string`, must load back equal (but for `hash`:
//!    see `accepted`), and writing it again must give the same text;
//! 4. an accepted plan goes through the file-free steps of `bridge_runtime::server::Runtime::new`,
//!    in its order and stopping where it would refuse the plan: middleware kinds and
//!    `mirror::too_deep`, `Upstreams::from_plan`, `RouteTable::build` per entry point (plain and
//!    TLS), basicAuth users, middleware regexes, forwarded-header trust, IP allow lists, CORS,
//!    mirroring state; then the health-check targets, metrics rendering and the API pages.
//!    Left out because they read files named in the plan: TLS certificates, servers-transport CA
//!    files, the access log, a basicAuth `usersFile` (cleared here).
#![no_main]

use bridge_plan::canonical::hashed_content;
use bridge_plan::{MiddlewareKind, Plan, ServiceKind, load_verified, sha256_of};
use bridge_runtime::routing::RouteTable;
use bridge_runtime::upstream::Upstreams;
use libfuzzer_sys::fuzz_target;
use serde_json::Value;

/// `data` with its `hash` set to the hash of its content, if it is a JSON object.
fn resealed(data: &[u8]) -> Option<Vec<u8>> {
    let Value::Object(mut obj) = serde_json::from_slice::<Value>(data).ok()? else {
        return None;
    };
    obj.remove("hash");
    let hash = sha256_of(&hashed_content(Value::Object(obj.clone()))).ok()?;
    obj.insert("hash".to_owned(), Value::String(hash));
    serde_json::to_vec(&Value::Object(obj)).ok()
}

/// What `Runtime::new` does with a plan, minus the steps that read files.
fn runtime_builds(plan: &Plan) {
    let implemented = plan.middlewares.values().all(|m| {
        matches!(
            m.kind,
            MiddlewareKind::Headers(_)
                | MiddlewareKind::BasicAuth(_)
                | MiddlewareKind::StripPrefix(_)
                | MiddlewareKind::AddPrefix(_)
                | MiddlewareKind::ReplacePath(_)
                | MiddlewareKind::StripPrefixRegex(_)
                | MiddlewareKind::RedirectScheme(_)
                | MiddlewareKind::RedirectRegex(_)
                | MiddlewareKind::IpAllowList(_)
                | MiddlewareKind::Retry(_)
        )
    });
    if !implemented || !bridge_runtime::proxy::mirror::too_deep(plan).is_empty() {
        return;
    }
    let Ok(upstreams) = Upstreams::from_plan(plan) else {
        return;
    };
    for name in plan.entrypoints.keys() {
        for tls in [false, true] {
            if RouteTable::build(plan, name, tls).is_err() {
                return;
            }
        }
    }
    for m in plan.middlewares.values() {
        match &m.kind {
            MiddlewareKind::BasicAuth(cfg) => {
                let mut cfg = cfg.clone();
                cfg.users_file = None;
                if bridge_runtime::middleware::basic_auth::BasicAuth::from_plan(&cfg).is_err() {
                    return;
                }
            }
            MiddlewareKind::StripPrefixRegex(x) => {
                if x.regex.iter().any(|r| regex::Regex::new(r).is_err()) {
                    return;
                }
            }
            MiddlewareKind::RedirectRegex(x) => {
                if regex::Regex::new(&x.regex).is_err() {
                    return;
                }
            }
            MiddlewareKind::IpAllowList(al) => {
                let _ = bridge_runtime::proxy::forwarded_headers::parse_nets(&al.source_range);
            }
            MiddlewareKind::Headers(h) => {
                if bridge_runtime::middleware::cors::Cors::from_plan(h).is_err() {
                    return;
                }
            }
            _ => {}
        }
    }
    for ep in plan.entrypoints.values() {
        let _ = bridge_runtime::proxy::forwarded_headers::Trust::new(&ep.forwarded_headers);
    }
    let _ = bridge_runtime::proxy::mirror::from_plan(plan);

    for service in plan.services.values() {
        if let ServiceKind::LoadBalancer(lb) = &service.kind
            && let Some(check) = &lb.health_check
        {
            for srv in &lb.servers {
                let _ = bridge_runtime::upstream::health::ProbeTarget::new(check, &srv.url);
            }
        }
    }
    if let Some(cfg) = &plan.metrics {
        let _ = bridge_runtime::observe::metrics::Metrics::new(cfg).render(plan, &upstreams);
    }
    let get = http::Method::GET;
    for path in [
        "/api/overview",
        "/api/rawdata",
        "/api/entrypoints",
        "/api/http/routers",
        "/api/http/services",
        "/api/http/middlewares",
    ] {
        let _ =
            bridge_runtime::admin::api::handle(plan, &upstreams, &get, path, None, "2026-01-01T00:00:00Z");
    }
}

fn accepted(plan: &Plan) {
    let text = plan
        .to_file_string()
        .unwrap_or_else(|e| panic!("an accepted plan does not serialise: {e}"));
    match load_verified(text.as_bytes()) {
        Ok(again) => {
            // The hash may differ: it covers the JSON as written, and a file may leave out
            // optional (`null`) fields that the written-back plan spells out (docs/plan.md,
            // "Verifying a plan", step 4). Everything else must be the same.
            let mut same = plan.clone();
            same.hash.clone_from(&again.hash);
            assert!(
                again == same,
                "an accepted plan, written back, loads different"
            );
            let resealed = again
                .to_file_string()
                .unwrap_or_else(|e| panic!("a reloaded plan does not serialise: {e}"));
            assert_eq!(resealed, text, "writing a plan is not stable");
        }
        Err(e) => panic!("an accepted plan, written back, is refused: {e}\n{text}"),
    }
    runtime_builds(plan);
}

fuzz_target!(|data: &[u8]| {
    if let Ok(plan) = load_verified(data) {
        accepted(&plan);
    }
    if let Some(sealed) = resealed(data)
        && let Ok(plan) = load_verified(&sealed)
    {
        accepted(&plan);
    }
});
