//! bridgectl's compiler: Traefik-compatible YAML in, located diagnostics and a frozen routing plan
//! (`bridge_plan::Plan`) out.
//!
//! ```text
//! check: files (DIR = /etc/traefik) ─template─▶ text ─yaml─▶ yaml::Node (spans)
//!   ─canon─▶ serde_json::Value + places ─validate (jsonschema, generated from model)─▶
//!   model::{StaticConfig, DynamicConfig}   (profile: overlays merged, one more dynamic file)
//!   ─policy (transforms)─▶ loaded::{Loaded, Symbols}
//!   ─semantic (references, rules, files, hashes) + policy (profile policy)─▶ Vec<Diagnostic>
//!   ─render─▶ human/json/github/sarif                            (`bridgectl check` stops here)
//! build: ─resolve (Traefik's defaults, chains flattened)─▶ Plan ─emit─▶ plan.json
//! explain, diff: plan.json ─bridge_plan::load_verified─▶ text for reviews
//! ```
//! `check` drives the stages over all files; every stage records diagnostics and carries on, so one run
//! reports every problem. `loaded` holds what was read and the one index of its names, which the
//! checks, the policy and resolution share.
#![forbid(unsafe_code)]

pub mod acme;
pub mod breaker_expr;
pub mod canon;
pub mod certs;
pub mod check;
pub mod diag;
pub mod emit;
pub mod explain;
pub mod ha;
pub mod loaded;
pub mod model;
pub mod policy;
pub mod profile;
pub mod render;
pub mod resolve;
pub mod rule;
pub mod schema;
pub mod semantic;
pub mod source;
pub mod template;
pub mod toml_doc;
pub mod validate;
pub mod yaml;
