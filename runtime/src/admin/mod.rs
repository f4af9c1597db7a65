//! What the proxy serves about itself: the Traefik-compatible API and the dashboard ([`api`]).

pub mod api;
