//! Entry points for the cargo-fuzz targets in `fuzz/` (a separate workspace), so they reach the
//! parsers and renderers without the crate's internals being public. Not an API.

use crate::Runtime;

/// Parses `data` as pipelined request heads the way the own HTTP/1.1 server loop does.
pub fn request_heads(data: &[u8]) {
    crate::http1::server::fuzz_request_heads(data);
}

/// Decodes `data` as a server's response the way the own HTTP/1.1 client does (its first byte
/// chooses the request it answers; see the function it calls).
pub fn response(data: &[u8]) {
    crate::http1::client::fuzz_response(data);
}

/// Renders what a built runtime serves about itself: the metrics (when enabled) and the API's
/// pages.
pub fn render(runtime: &Runtime) {
    if let Some(metrics) = runtime.metrics() {
        let _ = metrics.render(runtime.plan(), runtime.upstreams());
    }
    let get = http::Method::GET;
    for path in [
        "/api/overview",
        "/api/rawdata",
        "/api/entrypoints",
        "/api/http/routers",
        "/api/http/services",
        "/api/http/middlewares",
    ] {
        let _ = crate::admin::api::handle(
            runtime.plan(),
            runtime.upstreams(),
            &get,
            path,
            None,
            "2026-01-01T00:00:00Z",
        );
    }
}

/// Runs `compress` over a request's `Accept-Encoding` and `Content-Type`, an answer's type and
/// body (NUL-separated; see the function it calls): negotiation, decision, encoder round trip.
pub fn compress(data: &[u8]) {
    crate::middleware::compress::fuzz(data);
}

/// Checks `data` as a responder's OCSP answer for a fixed certificate and issuer (the
/// openssl-made fixtures of runtime/tests/fixtures/ocsp), at a time inside their validity: the
/// checks a stapled answer passes. An accepted answer must be stapled byte for byte.
pub fn ocsp_answer(data: &[u8]) {
    crate::ocsp::fuzz_answer(data);
}

/// Parses `data` as the start of a connection on an entry point with `proxyProtocol`: the PROXY
/// protocol header (v1 or v2) if there is one.
pub fn proxy_protocol(data: &[u8]) {
    crate::proxy_protocol::fuzz(data);
}

/// Reads `data` as the body of a gRPC health check's answer (one message, a
/// HealthCheckResponse): the serving status or a refusal.
pub fn grpc_health_answer(data: &[u8]) {
    crate::upstream::probe::fuzz_grpc_answer(data);
}
