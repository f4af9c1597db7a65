//! Traefik's HTTP middlewares, each built once from the plan.

pub mod basic_auth;
pub mod cors;
