//! Shared formats of bridgectl: the routing plan and the rule AST.
//!
//! The plan ([`Plan`]) is the one contract between the compiler and the runtime: the compiler
//! resolves a Traefik-compatible configuration into it, seals it with a content hash and writes it
//! in canonical JSON ([`canonical`]); the runtime loads it only through [`load_verified`], which
//! refuses unknown format versions, edited files and dangling references. The format is described
//! for other implementations in `docs/plan.md`.
//!
//! This crate depends on serde, serde_json, sha2 and thiserror only; JSON Schema derivation
//! (module `schema`) is behind the `schema` feature so the runtime never links schemars.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod canonical;
pub mod error;
pub mod media_type;
pub mod plan;
pub mod rule;
#[cfg(feature = "schema")]
pub mod schema;

pub use canonical::{canonical_json, canonical_pretty, load_verified, sha256_of};
pub use error::PlanError;
pub use plan::*;
#[cfg(feature = "schema")]
pub use schema::plan_schema;
