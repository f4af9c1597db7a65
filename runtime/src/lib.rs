//! bridge-runtime: serves a bridgectl routing plan.
//!
//! The runtime knows nothing about Traefik's YAML, templates or JSON Schemas. Its only input is a
//! plan file written by `bridgectl build`, which it loads through [`load::load_plan_file`]: the
//! plan's format version, content hash and internal references are verified before anything is
//! served, so an edited, damaged or too-new plan is refused at start instead of half-applied.
//!
//! The plan format is defined by the `bridge-plan` crate and documented in `docs/plan.md`.
#![forbid(unsafe_code)]
#![warn(missing_docs)]
// The workspace's lints, plus one the runtime keeps (the compiler's model types would need a
// sweep of their own first).
#![warn(clippy::use_self)]

// What the binaries, `bridgectl run` and embedders use; everything else is internal.
pub mod app;
#[doc(hidden)]
pub mod fuzzing;
pub mod load;
pub mod notify;
pub mod operator;
pub mod peer;
pub mod self_probe;

mod acme;
mod admin;
mod body;
mod deadline;
mod http1;
mod http2;
mod http3;
mod interim;
mod listener;
mod middleware;
mod observe;
mod ocsp;
mod proxy;
mod proxy_protocol;
mod routing;
mod runtime;
mod tls;
mod transport;
mod upstream;

pub use app::{ServeArgs, ServeOptions, serve, serve_with};
pub use observe::logging::init as init_logging;
pub use observe::metrics::Metrics;
pub use runtime::{Runtime, ServeError};
pub use upstream::health::{HealthChecker, Prober};
pub use upstream::probe::HttpProber;
pub use upstream::{AdminState, ServerState, StateChange, Upstreams};

/// The maps the runtime looks plan names up in when it loads a plan (the request path does not).
/// Their keys come from the plan, never from a client, so a fast seeded hash (foldhash) is used
/// instead of the standard library's SipHash, which showed in profiles.
pub(crate) type FastMap<K, V> = foldhash::HashMap<K, V>;

#[cfg(test)]
mod dependency_policy {
    /// The runtime never links YAML, JSON Schema or template crates, nor the plan crate's schema
    /// feature (which pulls in schemars).
    #[test]
    fn no_configuration_crates() {
        let manifest = include_str!("../Cargo.toml");
        let deps = manifest
            .split("\n[")
            .filter(|section| section.starts_with("dependencies]"))
            .collect::<String>();
        for forbidden in [
            "granit-parser",
            "serde-saphyr",
            "serde_yaml",
            "schemars",
            "jsonschema",
            "minijinja",
            "\"schema\"",
        ] {
            let used = deps
                .lines()
                .filter(|l| !l.trim_start().starts_with('#'))
                .any(|l| l.contains(forbidden));
            assert!(!used, "bridge-runtime must not depend on {forbidden}");
        }
    }
}
