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

pub mod admin;
pub mod app;
pub mod body;
pub mod deadline;
pub mod http1;
pub mod listener;
pub mod load;
pub mod middleware;
pub mod notify;
pub mod observe;
pub mod proxy;
pub mod routing;
pub mod runtime;
pub mod self_probe;
pub mod tls;
pub mod transport;
pub mod upstream;

pub use listener::{listen_addr, serve_entrypoint};
pub use runtime::{EntryId, Runtime, ServeError};
pub use upstream::probe::HttpProber;

/// The maps the request path looks names up in (routers, services, server URLs, entry points).
/// Their keys come from the plan, never from a client, so a fast seeded hash (foldhash) is used
/// instead of the standard library's SipHash, which showed in profiles.
pub type FastMap<K, V> = foldhash::HashMap<K, V>;

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
