//! Shared formats of bridgectl.
//!
//! This crate holds the types both halves agree on: the rule AST the compiler produces and the runtime
//! matches with. The plan itself lands here with the `bridgectl build` issue. It depends on serde only;
//! JSON Schema derivation is behind the `schema` feature so the runtime never links schemars.
#![forbid(unsafe_code)]

pub mod rule;
