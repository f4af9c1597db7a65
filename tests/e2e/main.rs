//! bridge-runtime as deployed: real processes serving real plans in front of real backends on
//! 127.0.0.1, one module per topic. One test binary (one link, not eight, on a small machine); the
//! backends, TLS and process helpers are the support library's (`tests/support/`).

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

mod harness;

mod acme;
mod failover;
mod http3;
mod https;
mod lifecycle;
mod middlewares;
mod mirroring;
mod observability;
mod operator;
mod pair;
mod transports;
mod tunnels;
