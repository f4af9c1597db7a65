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
//! 4. an accepted plan, with the settings that name files (or open one) removed, is built by
//!    `bridge_runtime::Runtime::new` — every middleware, route table, upstream, TLS configuration
//!    and client, as when serving it; when it is accepted, the metrics and the API pages are
//!    rendered from it. Left out because they read files named in the plan or start a writer:
//!    TLS certificates and client-auth CA files, servers-transport CA files, a basicAuth
//!    `usersFile`, the access log.
#![no_main]

use std::sync::Arc;

use bridge_plan::canonical::hashed_content;
use bridge_plan::{MiddlewareKind, Plan, load_verified, sha256_of};
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

/// `plan` without the settings that read files or start a log writer.
fn without_files(plan: &Plan) -> Plan {
    let mut plan = plan.clone();
    plan.tls.certificates.clear();
    plan.tls.default_certificate = None;
    for options in plan.tls.options.values_mut() {
        if let Some(auth) = &mut options.client_auth {
            auth.cas.clear();
        }
    }
    for t in plan.servers_transports.values_mut() {
        t.root_cas.clear();
    }
    for m in plan.middlewares.values_mut() {
        if let MiddlewareKind::BasicAuth(cfg) = &mut m.kind {
            cfg.users_file = None;
        }
    }
    plan.access_log = None;
    plan
}

/// What bridge-runtime builds from a plan before serving it, and what it renders from it.
fn runtime_builds(plan: &Plan) {
    let plan = Arc::new(without_files(plan));
    let Ok(runtime) = bridge_runtime::Runtime::new(plan, Default::default()) else {
        return;
    };
    bridge_runtime::fuzzing::render(&runtime);
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
