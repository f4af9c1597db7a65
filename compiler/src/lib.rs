//! bridgectl's compiler: Traefik-compatible YAML in, located diagnostics (and later a frozen plan) out.
//!
//! ```text
//! file text ─template─▶ yaml::Node (spans) ─canon─▶ serde_json::Value + places
//!      ─validate (jsonschema, generated from model)─▶ model::{StaticConfig, DynamicConfig}
//!      ─semantic (references, rules, files, hashes)─▶ Vec<Diagnostic> ─render─▶ human/json/github/sarif
//! ```
//! `check` drives the stages over all files; every stage records diagnostics and carries on, so one run
//! reports every problem.
#![forbid(unsafe_code)]

pub mod canon;
pub mod certs;
pub mod check;
pub mod diag;
pub mod emit;
pub mod explain;
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
pub mod validate;
pub mod yaml;
