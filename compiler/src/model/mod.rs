//! The typed configuration model: Traefik v3's static (`traefik.yml`) and file-provider dynamic
//! configuration, as Rust types.
//!
//! These types are the single source of truth: the JSON Schemas in `schemas/` are generated from them
//! (`crate::schema`), and the checker deserializes validated YAML into them. Schema extensions steer the
//! checker without a second list of keys:
//! - `x-allow-empty: true` — Traefik's `file:"allowEmpty"`: `{}` or `true` enables the feature; other
//!   empty objects are errors ("cannot be a standalone element"), as in Traefik.
//! - `x-bridgectl: "unsupported"` — valid Traefik that bridgectl cannot serve: an error naming it.
//! - `x-bridgectl: "ignored"` — valid Traefik that has no effect in bridgectl: a warning.

pub mod common;
pub mod dynamic;
pub mod static_config;

pub use common::Duration;
