//! Sending health-check probes: every probe URL gets its client at load, with its load
//! balancer's scheme (http, https, h2c) and servers transport, so a probe travels exactly as the
//! requests to that server do.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use bridge_plan::{Plan, ServiceKind};
use bytes::Bytes;
use http::{Request, Uri, header};
use http_body_util::Full;

use super::health::{ProbeResult, ProbeTarget, Prober};
use crate::runtime::ServeError;
use crate::transport::{ClientFactory, ServerClient, error_text};

/// The client of every health-check probe URL, with its load balancer's servers transport.
pub(crate) fn clients(
    plan: &Plan,
    resolve: &HashMap<String, IpAddr>,
    factory: &mut ClientFactory,
) -> Result<HashMap<String, ServerClient<Full<Bytes>>>, ServeError> {
    let mut out = HashMap::new();
    for s in plan.services.values() {
        let ServiceKind::LoadBalancer(lb) = &s.kind else {
            continue;
        };
        let Some(check) = &lb.health_check else {
            continue;
        };
        let (name, t) = crate::transport::transport_of(plan, lb)?;
        for srv in &lb.servers {
            let Ok(target) = ProbeTarget::new(check, &srv.url) else {
                continue; // reported by the health checker
            };
            if let std::collections::hash_map::Entry::Vacant(e) = out.entry(target.url) {
                let client = factory.client(e.key(), name, t, resolve)?;
                e.insert(client);
            }
        }
    }
    Ok(out)
}

/// Probes servers with the plan's clients ([`crate::Runtime::prober`]).
#[derive(Debug, Clone)]
pub struct HttpProber {
    clients: Arc<HashMap<String, ServerClient<Full<Bytes>>>>,
}

impl HttpProber {
    pub(crate) fn new(clients: Arc<HashMap<String, ServerClient<Full<Bytes>>>>) -> Self {
        Self { clients }
    }
}

impl Prober for HttpProber {
    async fn probe(&self, target: &ProbeTarget) -> ProbeResult {
        match self.clients.get(&target.url) {
            Some(client) => probe_with(client, target).await,
            None => ProbeResult::failed("no client for this probe URL"),
        }
    }
}

/// The probe request: the check's method and headers, `Host` from `hostname` or the server URL's
/// authority, sent to `uri`.
fn probe_request(
    target: &ProbeTarget,
    uri: Uri,
    authority: String,
) -> Option<Request<Full<Bytes>>> {
    let mut builder = Request::builder()
        .method(target.method.as_str())
        .uri(uri)
        .header(
            header::HOST,
            target.host_header.clone().unwrap_or(authority),
        );
    for (k, v) in &target.headers {
        builder = builder.header(k.as_str(), v.as_str());
    }
    builder.body(Full::new(Bytes::new())).ok()
}

/// One probe: the URL as the request URI (the client dials the server).
async fn probe_with(client: &ServerClient<Full<Bytes>>, target: &ProbeTarget) -> ProbeResult {
    if target.grpc {
        return match tokio::time::timeout(target.timeout, grpc_probe(client, target)).await {
            Err(_) => ProbeResult::failed("gRPC health check timed out"),
            Ok(result) => result,
        };
    }
    let Ok(uri) = target.url.parse::<Uri>() else {
        return ProbeResult::failed("invalid probe URL");
    };
    let authority = uri
        .authority()
        .map(|a| a.as_str().to_owned())
        .unwrap_or_default();
    let pq = uri.path_and_query().map_or("/", |p| p.as_str());
    // The client decides the wire scheme; the URI only carries host and path.
    let Ok(uri) = format!("http://{authority}{pq}").parse::<Uri>() else {
        return ProbeResult::failed("invalid probe URL");
    };
    let Some(req) = probe_request(target, uri, authority) else {
        return ProbeResult::failed("invalid probe request");
    };
    match tokio::time::timeout(target.timeout, client.send(req, false, None)).await {
        Err(_) => ProbeResult::failed("timed out"),
        Ok(Err(e)) => ProbeResult::failed(error_text(&e)),
        Ok(Ok(resp)) => ProbeResult::status(resp.status().as_u16()),
    }
}

/// A gRPC probe: `grpc.health.v1.Health/Check` for the whole server (an empty request), healthy
/// when the answer is `SERVING` — reported as status 200, anything else as a failure that says
/// why, as Traefik words it.
async fn grpc_probe(client: &ServerClient<Full<Bytes>>, target: &ProbeTarget) -> ProbeResult {
    use http_body_util::BodyExt as _;
    let Ok(uri) = target.url.parse::<Uri>() else {
        return ProbeResult::failed("invalid probe URL");
    };
    let authority = uri
        .authority()
        .map_or_else(String::new, |a| a.as_str().to_owned());
    let Ok(uri) = format!("http://{authority}{}", super::health::GRPC_HEALTH_PATH).parse::<Uri>()
    else {
        return ProbeResult::failed("invalid probe URL");
    };
    // An empty HealthCheckRequest (service "": the whole server) in one uncompressed message.
    let req = Request::builder()
        .method(http::Method::POST)
        .uri(uri)
        .header(header::HOST, authority)
        .header(header::CONTENT_TYPE, "application/grpc")
        .header(header::TE, "trailers")
        .body(Full::new(Bytes::from_static(&[0, 0, 0, 0, 0])));
    let Ok(req) = req else {
        return ProbeResult::failed("invalid probe request");
    };
    let resp = match client.send(req, false, None).await {
        Ok(resp) => resp,
        Err(e) => {
            return ProbeResult::failed(format!("gRPC health check failed: {}", error_text(&e)));
        }
    };
    if resp.status() != http::StatusCode::OK {
        return ProbeResult::failed(format!(
            "gRPC health check failed: HTTP status {}",
            resp.status().as_u16()
        ));
    }
    let head_status = resp.headers().get("grpc-status").cloned();
    let collected = match resp.into_body().collect().await {
        Ok(c) => c,
        Err(e) => return ProbeResult::failed(format!("gRPC health check failed: {e}")),
    };
    let status = collected
        .trailers()
        .and_then(|t| t.get("grpc-status").cloned())
        .or(head_status);
    match status.as_ref().map(http::HeaderValue::as_bytes) {
        Some(b"0") => {}
        Some(b"12") => {
            return ProbeResult::failed("gRPC server does not implement the health protocol");
        }
        Some(code) => {
            return ProbeResult::failed(format!(
                "gRPC health check failed: status {}",
                String::from_utf8_lossy(code)
            ));
        }
        None => return ProbeResult::failed("gRPC health check failed: no grpc-status"),
    }
    match serving_status(&collected.to_bytes()) {
        Some(1) => ProbeResult::status(200),
        Some(n) => ProbeResult::failed(format!(
            "received gRPC status code: {}",
            serving_status_name(n)
        )),
        None => ProbeResult::failed("gRPC health check failed: malformed answer"),
    }
}

/// The `status` of a HealthCheckResponse in one uncompressed gRPC message (`None`: not one).
/// Protocol Buffers: field 1, a varint; other fields are skipped; absent means 0 (`UNKNOWN`).
pub(crate) fn serving_status(body: &[u8]) -> Option<u64> {
    let (&flag, rest) = body.split_first()?;
    if flag != 0 || rest.len() < 4 {
        return None;
    }
    let len = usize::try_from(u32::from_be_bytes([rest[0], rest[1], rest[2], rest[3]])).ok()?;
    let mut msg = rest.get(4..4 + len)?;
    if rest.len() != 4 + len {
        return None;
    }
    let mut status = 0;
    while !msg.is_empty() {
        let key = varint(&mut msg)?;
        match (key >> 3, key & 7) {
            (1, 0) => status = varint(&mut msg)?,
            (_, 0) => {
                varint(&mut msg)?;
            }
            (_, 1) => msg = msg.get(8..)?,
            (_, 2) => {
                let n = usize::try_from(varint(&mut msg)?).ok()?;
                msg = msg.get(n..)?;
            }
            (_, 5) => msg = msg.get(4..)?,
            _ => return None,
        }
    }
    Some(status)
}

/// A base-128 varint off the front of `buf` (at most 10 bytes).
fn varint(buf: &mut &[u8]) -> Option<u64> {
    let mut value = 0u64;
    for i in 0..10 {
        let (&b, rest) = buf.split_first()?;
        *buf = rest;
        value |= u64::from(b & 0x7f) << (7 * i);
        if b & 0x80 == 0 {
            return Some(value);
        }
    }
    None
}

/// The names grpc-go prints for the serving statuses.
fn serving_status_name(n: u64) -> String {
    match n {
        0 => "UNKNOWN".to_owned(),
        1 => "SERVING".to_owned(),
        2 => "NOT_SERVING".to_owned(),
        3 => "SERVICE_UNKNOWN".to_owned(),
        n => n.to_string(),
    }
}

/// Fuzzing entry point (`fuzz/`): any bytes as a gRPC health answer's body; never panics.
#[doc(hidden)]
pub(crate) fn fuzz_grpc_answer(data: &[u8]) {
    let _ = serving_status(data);
}

#[cfg(test)]
mod tests {
    use super::serving_status;

    #[test]
    fn serving_statuses_are_read_from_one_grpc_message() {
        // SERVING, NOT_SERVING, the default (an empty message), an unknown field before it.
        assert_eq!(serving_status(&[0, 0, 0, 0, 2, 0x08, 1]), Some(1));
        assert_eq!(serving_status(&[0, 0, 0, 0, 2, 0x08, 2]), Some(2));
        assert_eq!(serving_status(&[0, 0, 0, 0, 0]), Some(0));
        assert_eq!(
            serving_status(&[0, 0, 0, 0, 6, 0x12, 2, b'h', b'i', 0x08, 1]),
            Some(1)
        );
        // Compressed, cut short, too long, a bad varint, a bad wire type.
        for bad in [
            &[1, 0, 0, 0, 2, 0x08, 1][..],
            &[0, 0, 0, 0, 3, 0x08, 1],
            &[0, 0, 0, 0, 2, 0x08, 1, 0],
            &[0, 0, 0, 0, 2, 0x08, 0x80],
            &[0, 0, 0, 0, 2, 0x0f, 1],
            &[0, 0, 0],
        ] {
            assert_eq!(serving_status(bad), None, "{bad:?}");
        }
    }
}
