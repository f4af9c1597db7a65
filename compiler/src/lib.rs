//! bridgectl's compiler: Traefik-compatible YAML in, diagnostics (and later a frozen plan) out.
#![forbid(unsafe_code)]

pub mod model;
pub mod rule;
