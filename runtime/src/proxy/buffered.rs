//! `buffering`'s attempt loop (the middleware's pure parts are
//! [`crate::middleware::buffering`]): the request body is read whole first, under the entry
//! point's read timeout; then the rest of the router's chain and its service run once per
//! attempt on a copy of the request with the stored body, each answer is read whole, and the
//! last attempt's answer goes to the client. As in oxy, each attempt goes through the rest of
//! the chain and the load balancer again, and the answers of replaced attempts are dropped.

use std::time::Duration;

use http::{Method, Request, Response};

use crate::body::Body;
use crate::http1::server::RequestBody;
use crate::middleware::RequestCtx;
use crate::middleware::buffering::{self as buf, Buffering, RequestRefusal, ResponseRefusal};
use crate::runtime::{Router, Runtime};

use super::{Here, strict};

impl Runtime {
    /// Serves a request through `b` and the chain after it (from middleware `rest` of
    /// `router`); `outer` is the request's context at the middleware. Also whether a
    /// `contentType` after it asked for sniffing.
    pub(super) async fn buffered<'a>(
        &'a self,
        b: &'a Buffering,
        router: &'a Router,
        rest: usize,
        mut req: Request<RequestBody>,
        outer: &RequestCtx<'a>,
        at: &Here<'a>,
    ) -> (Response<Body>, bool) {
        if b.declared_too_large(req.headers()) {
            tracing::debug!("buffering: declared request body over maxRequestBodyBytes");
            let (parts, mut body) = req.into_parts();
            let drained = buf::drain(&parts.headers, &mut body).await;
            return (buf::too_large_after(drained), false);
        }
        let stored = if hyper::body::Body::is_end_stream(req.body()) {
            buf::store::Stored::default()
        } else {
            let read = b.read_request(req.body_mut());
            let read = match at.entry.timeouts.read_ms {
                0 => read.await,
                ms => tokio::time::timeout(Duration::from_millis(ms), read)
                    .await
                    .unwrap_or(Err(RequestRefusal::ClientGone)),
            };
            match read {
                Ok(stored) => stored,
                Err(RequestRefusal::TooLarge) => {
                    tracing::debug!("buffering: request body over maxRequestBodyBytes");
                    let (parts, mut body) = req.into_parts();
                    let drained = buf::drain(&parts.headers, &mut body).await;
                    return (buf::too_large_after(drained), false);
                }
                Err(RequestRefusal::ClientGone) => {
                    tracing::debug!("buffering: the client went away before its body ended");
                    return (buf::client_gone(), false);
                }
                Err(RequestRefusal::Storage) => return (buf::internal_error(), false),
            }
        };
        let (mut parts, _) = req.into_parts();
        buf::request_fields(&mut parts.headers, &parts.method, stored.len());
        let mut attempt: u32 = 0;
        loop {
            attempt += 1;
            let copy = buf::stored_request(&parts, &stored);
            let mut ctx = RequestCtx::new(
                outer.tls,
                outer.host,
                outer.peer,
                &outer.path_and_query,
                outer.forwarded.clone(),
            );
            ctx.retry = outer.retry;
            ctx.sources = outer.sources;
            ctx.client_certs = outer.client_certs;
            let fields = strict::Fields::of(copy.headers());
            let (resp, sniff) =
                Box::pin(self.serve_chain(router, rest, copy, ctx, fields, at)).await;
            let (head, body) = resp.into_parts();
            let status = head.status;
            let (held, trailers) = match b.read_response(body).await {
                Ok(held) => held,
                // The write error is seen before the condition: no replay.
                Err(ResponseRefusal::TooLarge) => return (buf::internal_error(), false),
                // Traefik's proxy aborts the client's connection here; a 502 says what happened.
                Err(ResponseRefusal::Failed) => return (crate::body::bad_gateway(), false),
            };
            if b.replays(attempt, status.as_u16(), &parts.method, stored.len()) {
                tracing::debug!(
                    "buffering: retry {} {} attempt {} (attempt {attempt} answered {status})",
                    parts.method,
                    outer.path_and_query,
                    attempt + 1
                );
                continue;
            }
            let resp = if parts.method == Method::HEAD {
                // The server's fields, its length among them, and no body.
                Response::from_parts(head, crate::body::full(bytes::Bytes::new()))
            } else {
                buf::held_answer(head, &held, trailers)
            };
            return (resp, sniff);
        }
    }
}
