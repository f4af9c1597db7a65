//! The start of a connection on an entry point with `proxyProtocol`: a PROXY protocol header,
//! version 1 (text) or 2 (binary), or none.
//!
//! `bridge_runtime::fuzzing::proxy_protocol` parses the bytes as the listener does before TLS or
//! HTTP: a header is found (its length and the client address it names), found incomplete,
//! absent, or refused. Any input must be one of those, never a panic; a header never claims more
//! bytes than there are, and parsing exactly its bytes again gives the same answer.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    bridge_runtime::fuzzing::proxy_protocol(data);
});
