//! The `compress` middleware on hostile fields and bodies.
//!
//! `bridge_runtime::fuzzing::compress` reads the input as `Accept-Encoding` lines (split on LF),
//! the request's `Content-Type`, the answer's `Content-Type` and the answer's body, separated by
//! NUL bytes; the body's first byte also picks the encodings, the minimum size, the type list and
//! whether the answer has a length. It negotiates as Traefik does, decides as Traefik's handlers
//! do, sniffs the body, encodes it and checks that the encoded answer decodes to the body. Any
//! input must pass through, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    bridge_runtime::fuzzing::compress(data);
});
