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
