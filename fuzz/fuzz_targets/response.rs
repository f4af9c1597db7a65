//! HTTP/1.1 responses from a backend server, as the proxy's connection pool reads them.
//!
//! `bridge_runtime::fuzzing::response` takes one control byte first (bit 0: the request was HEAD;
//! bits 1-7: the size of each read, at least 1), then the bytes the server sent. It parses the head
//! (skipping interim 1xx heads, as the pool does), then decodes the body by its framing
//! (`Content-Length`, chunked, until close), feeding the decoder read by read. Any input must be
//! decoded or refused, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    bridge_runtime::fuzzing::response(data);
});
