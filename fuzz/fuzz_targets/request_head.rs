//! HTTP/1.1 request heads as the proxy's own server loop reads them.
//!
//! `bridge_runtime::fuzzing::request_heads` parses `data` as pipelined request heads the way
//! the server loop does and applies the proxy's RFC 9112 request checks (request line, header
//! fields, `Host`, `Content-Length`/`Transfer-Encoding` framing). Any input must be answered or
//! refused, never panic.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    bridge_runtime::fuzzing::request_heads(data);
});
