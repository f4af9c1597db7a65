//! Mirroring services: a share of the requests to a `mirroring` service is copied to its mirror
//! services, fire-and-forget, never delaying or failing the main response.
//!
//! - Which requests: Traefik's counters — the n-th request goes to a mirror with `percent` p when
//!   that mirror has had fewer than `n × p / 100` copies so far (so 10 % is every tenth request,
//!   evenly spread, not random).
//! - Bodies (`mirrorBody`, default true): the request body is streamed to the main service as it
//!   arrives and copied on the way; once it is complete the copies are sent. A body larger than
//!   `maxBodySize` is not mirrored at all (the request still reaches the main service whole), as
//!   in Traefik. A body cut off (client gone, read timeout) is not mirrored. With `mirrorBody:
//!   false` copies are sent at once, without a body.
//! - Copies carry the same method, path (after the middlewares before the mirroring service),
//!   headers and `X-Forwarded-*` as the request had where the mirroring service is (a service
//!   with middlewares below it takes the copies before its chain runs), go to a server picked in
//!   the mirror service (none healthy: no copy), and their answers are read and dropped. A mirror
//!   service with middlewares on its way (its own, or a service's below it) gets its copy through
//!   that service's request path instead, in the copy's task. `Upgrade` requests are not
//!   mirrored.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};

use bytes::{Bytes, BytesMut};
use hyper::body::{Body, Frame, SizeHint};

use crate::body::BoxError;

/// The mirror selection state of one `mirroring` service.
#[derive(Debug)]
pub(crate) struct Mirroring {
    mirrors: Vec<(String, u8)>,
    /// Each mirror service resolved at load (`None`: not in the plan's upstreams).
    ids: Vec<Option<crate::upstream::ServiceId>>,
    /// Copy bodies.
    pub mirror_body: bool,
    /// Largest body copied; `None`: no limit.
    pub max_body_size: Option<u64>,
    /// Requests seen, and copies sent per mirror.
    counts: Mutex<(u64, Vec<u64>)>,
}

impl Mirroring {
    /// From the plan's service.
    pub(crate) fn from_plan(m: &bridge_plan::Mirroring, upstreams: &crate::Upstreams) -> Self {
        Self {
            mirrors: m
                .mirrors
                .iter()
                .map(|x| (x.service.clone(), x.percent.min(100)))
                .collect(),
            ids: m
                .mirrors
                .iter()
                .map(|x| upstreams.service_id(&x.service))
                .collect(),
            mirror_body: m.mirror_body,
            max_body_size: m.max_body_size,
            counts: Mutex::new((0, vec![0; m.mirrors.len()])),
        }
    }

    /// Counts one request and returns the positions of the mirrors it is copied to.
    fn select_positions(&self) -> Vec<usize> {
        let mut guard = match self.counts.lock() {
            Ok(g) => g,
            Err(poisoned) => poisoned.into_inner(),
        };
        let (total, counts) = &mut *guard;
        *total += 1;
        let mut out = Vec::new();
        for (i, ((_, percent), count)) in self.mirrors.iter().zip(counts.iter_mut()).enumerate() {
            if *count * 100 < *total * u64::from(*percent) {
                *count += 1;
                out.push(i);
            }
        }
        out
    }

    /// Counts one request and returns the mirror services it is copied to, resolved.
    pub(crate) fn select(&self) -> impl Iterator<Item = crate::upstream::ServiceId> + '_ {
        self.select_positions()
            .into_iter()
            .filter_map(|i| self.ids.get(i).copied().flatten())
    }

    /// [`Mirroring::select`] by name (tests).
    #[cfg(test)]
    fn select_names(&self) -> Vec<String> {
        self.select_positions()
            .into_iter()
            .filter_map(|i| self.mirrors.get(i).map(|(n, _)| n.clone()))
            .collect()
    }
}

/// A request body passed through unchanged while a copy is kept (up to a limit); the copy is sent
/// on `done` when the body ends, and nothing is sent if it grows too large or fails.
#[derive(Debug)]
pub(crate) struct Tee<B> {
    inner: B,
    copy: BytesMut,
    max: Option<u64>,
    done: Option<tokio::sync::oneshot::Sender<Bytes>>,
}

impl<B: Body<Data = Bytes> + Unpin> Tee<B> {
    /// Wraps `inner`; the receiver gets the whole body, or an error if it is not mirrored.
    pub(crate) fn new(inner: B, max: Option<u64>) -> (Self, tokio::sync::oneshot::Receiver<Bytes>) {
        let (tx, rx) = tokio::sync::oneshot::channel();
        let mut tee = Self {
            inner,
            copy: BytesMut::new(),
            max,
            done: Some(tx),
        };
        // A body that is already complete (no body at all) is never polled by the client.
        if tee.inner.is_end_stream() {
            tee.finish();
        }
        (tee, rx)
    }

    fn finish(&mut self) {
        if let Some(tx) = self.done.take() {
            let _ = tx.send(std::mem::take(&mut self.copy).freeze());
        }
    }
}

impl<B> Body for Tee<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        let this = self.get_mut();
        let polled = Pin::new(&mut this.inner).poll_frame(cx);
        match &polled {
            Poll::Ready(Some(Ok(frame))) => {
                if this.done.is_some()
                    && let Some(data) = frame.data_ref()
                {
                    let len = (this.copy.len() + data.len()) as u64;
                    if this.max.is_some_and(|max| len > max) {
                        // Too large to mirror: drop the copy and the sender (no mirroring).
                        this.done = None;
                        this.copy = BytesMut::new();
                    } else {
                        this.copy.extend_from_slice(data);
                    }
                }
                if this.inner.is_end_stream() {
                    this.finish();
                }
            }
            Poll::Ready(None) => this.finish(),
            Poll::Ready(Some(Err(_))) => this.done = None,
            Poll::Pending => {}
        }
        polled.map(|f| f.map(|r| r.map_err(Into::into)))
    }

    fn is_end_stream(&self) -> bool {
        self.inner.is_end_stream()
    }

    fn size_hint(&self) -> SizeHint {
        self.inner.size_hint()
    }
}

/// Mirroring state per `mirroring` service of a plan.
pub(crate) fn from_plan(
    upstreams: &crate::Upstreams,
    plan: &bridge_plan::Plan,
) -> std::collections::HashMap<String, Arc<Mirroring>> {
    plan.services
        .iter()
        .filter_map(|(name, s)| match &s.kind {
            bridge_plan::ServiceKind::Mirroring(m) if !m.mirrors.is_empty() => {
                Some((name.clone(), Arc::new(Mirroring::from_plan(m, upstreams))))
            }
            _ => None,
        })
        .collect()
}

/// Most mirroring services one request may pass through on its way to a server (a mirroring
/// service as the main service of another, or below weighted and failover services).
pub(crate) const MAX_CHAIN: usize = 4;

/// Services from which a request could pass through more than [`MAX_CHAIN`] mirroring services
/// (refused at start, by name: each one copies the request, so such a chain is almost surely a
/// mistake).
pub(crate) fn too_deep(plan: &bridge_plan::Plan) -> Vec<String> {
    fn chain(plan: &bridge_plan::Plan, name: &str, depth: usize) -> usize {
        let Some(s) = plan.services.get(name) else {
            return 0;
        };
        if depth > 32 {
            return 0;
        }
        match &s.kind {
            bridge_plan::ServiceKind::Mirroring(m) => {
                usize::from(!m.mirrors.is_empty()) + chain(plan, &m.service, depth + 1)
            }
            kind => kind
                .children()
                .into_iter()
                .map(|(_, child)| chain(plan, child, depth + 1))
                .max()
                .unwrap_or(0),
        }
    }
    plan.services
        .keys()
        .filter(|name| chain(plan, name, 0) > MAX_CHAIN)
        .map(|name| {
            format!(
                "service `{name}`: a request through it would pass more than {MAX_CHAIN} mirroring services"
            )
        })
        .collect()
}

/// A mirrored copy is abandoned when its answer has not been read completely within this long.
const MIRROR_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(30);

/// Where one copy goes.
enum CopyTo {
    /// Straight to a server of a mirror service without middlewares on the way.
    Server {
        /// Boxed: a client is large, and most copies are few.
        client: Box<crate::transport::ServerClient<crate::body::ReqBody>>,
        uri: String,
        host_value: String,
        url: String,
    },
    /// Through the request path of a mirror service that has middlewares of its own (or a
    /// service below it has): its chain runs on the copy, as Traefik runs the mirror's handler.
    Service(crate::upstream::ServiceId),
}

/// What a copy through a service's middlewares needs, owned by the task that sends it.
struct CopyPath {
    rt: Arc<crate::runtime::Runtime>,
    /// The entry point, by position.
    entry: usize,
    /// The client, without its interim relay (a copy's answers go nowhere).
    peer: super::Peer,
    tls: bool,
    host: Option<http::HeaderValue>,
    path_and_query: String,
}

/// A body passed on as it is, or with a copy kept for the mirrors.
#[derive(Debug)]
pub(crate) enum Teed<B> {
    Plain(B),
    Tee(Tee<B>),
}

impl<B> Body for Teed<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    type Data = Bytes;
    type Error = BoxError;

    fn poll_frame(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
    ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
        match self.get_mut() {
            Self::Plain(b) => Pin::new(b)
                .poll_frame(cx)
                .map(|f| f.map(|r| r.map_err(Into::into))),
            Self::Tee(t) => Pin::new(t).poll_frame(cx),
        }
    }

    fn is_end_stream(&self) -> bool {
        match self {
            Self::Plain(b) => b.is_end_stream(),
            Self::Tee(t) => t.is_end_stream(),
        }
    }

    fn size_hint(&self) -> SizeHint {
        match self {
            Self::Plain(b) => b.size_hint(),
            Self::Tee(t) => t.size_hint(),
        }
    }
}

/// For a request through mirroring service `m`: picks the mirrors this request is copied to and
/// a server in each (or, for a mirror service with middlewares on the way, the service itself),
/// and sends the copies from a task once the body is complete. `parts` are the request's as the
/// copies carry them; `out` says where it came from and its path. Returns the body to forward to
/// the main service.
pub(crate) fn fan_out<B>(
    rt: &crate::runtime::Runtime,
    m: &Mirroring,
    parts: &http::request::Parts,
    out: &super::forward::Outbound<'_>,
    body: B,
) -> Teed<B>
where
    B: Body<Data = Bytes> + Unpin,
    B::Error: Into<BoxError>,
{
    use http_body_util::BodyExt as _;
    let host = out.host.and_then(|h| h.to_str().ok());
    let mut copies = Vec::new();
    for id in m.select() {
        if rt.upstreams.chains_from(id) {
            copies.push(CopyTo::Service(id));
            continue;
        }
        let crate::upstream::Pick::Server(server) = rt.upstreams.pick_id(id) else {
            continue; // no healthy server: no copy
        };
        let Some(target) = rt.server(&server) else {
            continue;
        };
        let host_value = match host {
            Some(h) if target.pass_host => h.to_owned(),
            _ => target.addr.authority.clone(),
        };
        let uri = format!(
            "http://{}{}",
            target.addr.connect,
            target.target(out.path_and_query)
        );
        copies.push(CopyTo::Server {
            client: Box::new(target.client.clone()),
            uri,
            host_value,
            url: server.url().to_owned(),
        });
    }
    if copies.is_empty() {
        return Teed::Plain(body);
    }
    let path = if copies.iter().any(|c| matches!(c, CopyTo::Service(_))) {
        let shared = rt.this.upgrade();
        let entry = rt.entries.iter().position(|e| std::ptr::eq(e, out.entry));
        match (shared, entry) {
            (Some(rt), Some(entry)) => Some(CopyPath {
                rt,
                entry,
                peer: super::Peer {
                    interims: None,
                    ..out.peer.clone()
                },
                tls: out.tls,
                host: out.host.cloned(),
                path_and_query: out.path_and_query.to_owned(),
            }),
            _ => {
                tracing::debug!("mirror: the runtime is not shared; no copy through middlewares");
                None
            }
        }
    } else {
        None
    };
    let (method, mut headers) = (parts.method.clone(), parts.headers.clone());
    headers.remove(http::header::CONTENT_LENGTH);
    headers.remove(http::header::TRANSFER_ENCODING);
    let (body, done) = if m.mirror_body {
        let (tee, rx) = Tee::new(body, m.max_body_size);
        (Teed::Tee(tee), Some(rx))
    } else {
        (Teed::Plain(body), None)
    };
    tokio::spawn(async move {
        let copy = match done {
            Some(rx) => match rx.await {
                Ok(b) => b,
                Err(_) => return, // too large, or cut off: no mirroring
            },
            None => Bytes::new(),
        };
        for to in copies {
            match to {
                CopyTo::Server {
                    client,
                    uri,
                    host_value,
                    url,
                } => {
                    let Ok(uri) = uri.parse::<http::Uri>() else {
                        continue;
                    };
                    let mut req = http::Request::new(crate::body::full_request(copy.clone()));
                    *req.method_mut() = method.clone();
                    *req.uri_mut() = uri;
                    *req.headers_mut() = headers.clone();
                    if let Ok(v) = http::HeaderValue::from_str(&host_value) {
                        req.headers_mut().insert(http::header::HOST, v);
                    }
                    let sent = async {
                        let resp = client.send(req, false, None).await?;
                        // Read and drop the answer, so the connection can be reused.
                        let mut b = resp.into_body();
                        while let Some(frame) = b.frame().await {
                            if frame.is_err() {
                                break;
                            }
                        }
                        Ok::<_, crate::transport::SendError>(())
                    };
                    match tokio::time::timeout(MIRROR_TIMEOUT, sent).await {
                        Ok(Ok(())) => {}
                        Ok(Err(e)) => {
                            tracing::warn!("mirror → {url}: {}", crate::transport::error_text(&e));
                        }
                        Err(_) => tracing::warn!(
                            "mirror → {url}: no complete answer within {} s",
                            MIRROR_TIMEOUT.as_secs()
                        ),
                    }
                }
                CopyTo::Service(id) => {
                    let Some(path) = &path else { continue };
                    let served = through_path(path, id, &method, &headers, copy.clone());
                    if tokio::time::timeout(MIRROR_TIMEOUT, served).await.is_err() {
                        tracing::warn!(
                            "mirror → a service with middlewares: no complete answer within {} s",
                            MIRROR_TIMEOUT.as_secs()
                        );
                    }
                }
            }
        }
    });
    body
}

/// One copy through mirror service `id`'s request path (its middlewares, its pick, its server);
/// the answer is read and dropped.
async fn through_path(
    path: &CopyPath,
    id: crate::upstream::ServiceId,
    method: &http::Method,
    headers: &http::HeaderMap,
    body: Bytes,
) {
    use http_body_util::BodyExt as _;
    let rt = &*path.rt;
    let Some(entry) = rt.entries.get(path.entry) else {
        return;
    };
    let Ok(uri) = path.path_and_query.parse::<http::Uri>() else {
        return;
    };
    let mut req = http::Request::new(crate::http1::server::RequestBody::Buffered(
        (!body.is_empty()).then_some(body),
    ));
    *req.method_mut() = method.clone();
    *req.uri_mut() = uri;
    *req.headers_mut() = headers.clone();
    if let Some(len) = req_len(&req) {
        req.headers_mut()
            .insert(http::header::CONTENT_LENGTH, http::HeaderValue::from(len));
    }
    let fields = super::strict::Fields::of(req.headers());
    let out = super::forward::Outbound {
        service: id,
        service_name: "",
        peer: &path.peer,
        entry,
        tls: path.tls,
        host: path.host.as_ref(),
        path_and_query: &path.path_and_query,
        retry: crate::middleware::retry::Retry::DEFAULT,
        upgrade: false,
        fields: &fields,
        slots: Vec::new(),
        // The copy's fields are the main request's: the proxy's forwarding fields are in.
        append_for: false,
    };
    let forwarded = super::forwarded_headers::Forwarded::default();
    let resp = if rt.service_router(id).is_some() {
        let via = crate::upstream::Via::default();
        Box::pin(rt.through_service(id, &out, forwarded, req, &via, true)).await
    } else {
        Box::pin(rt.forward(out, forwarded, req)).await
    };
    let mut b = resp.into_body();
    while let Some(frame) = b.frame().await {
        if frame.is_err() {
            break;
        }
    }
}

/// The length of a copy's stored body, for its `Content-Length` (none for a bodiless copy of a
/// request that had none).
fn req_len(req: &http::Request<crate::http1::server::RequestBody>) -> Option<u64> {
    match req.body() {
        crate::http1::server::RequestBody::Buffered(Some(b)) => Some(b.len() as u64),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code")]

    use http_body_util::{BodyExt, Full};

    use super::*;

    #[test]
    fn chains_of_more_than_four_mirroring_services_are_refused() {
        let mirroring = |to: &str| {
            bridge_plan::ServiceKind::Mirroring(bridge_plan::Mirroring {
                service: to.into(),
                mirrors: vec![bridge_plan::Mirror {
                    service: "a".into(),
                    percent: 10,
                }],
                mirror_body: true,
                max_body_size: None,
            })
        };
        // a ← m0 ← m1 ← … : m(i) mirrors with m(i-1) as its main service.
        let chain = |n: usize| {
            let mut p = bridge_plan::Plan::example();
            let lb = p.services["whoami"].clone();
            p.services.clear();
            p.services.insert("a".into(), lb.clone());
            for i in 0..n {
                let to = if i == 0 {
                    "a".to_owned()
                } else {
                    format!("m{}", i - 1)
                };
                let mut s = lb.clone();
                s.kind = mirroring(&to);
                p.services.insert(format!("m{i}"), s);
            }
            p
        };
        assert!(too_deep(&chain(4)).is_empty());
        let refused = too_deep(&chain(5));
        assert_eq!(
            refused,
            ["service `m4`: a request through it would pass more than 4 mirroring services"]
        );
    }

    fn mirroring(percents: &[u8]) -> Mirroring {
        Mirroring::from_plan(
            &bridge_plan::Mirroring {
                service: "main".into(),
                mirrors: percents
                    .iter()
                    .enumerate()
                    .map(|(i, p)| bridge_plan::Mirror {
                        service: format!("m{i}"),
                        percent: *p,
                    })
                    .collect(),
                mirror_body: true,
                max_body_size: None,
            },
            &crate::Upstreams::from_plan(&bridge_plan::Plan::example()).unwrap(),
        )
    }

    #[test]
    fn percentages_are_spread_evenly_as_traefik_counts() {
        let m = mirroring(&[10, 50, 100, 0]);
        let mut got = [0; 4];
        let mut first_m0 = None;
        for n in 1..=100 {
            for s in m.select_names() {
                let i: usize = s[1..].parse().unwrap();
                got[i] += 1;
                if i == 0 && first_m0.is_none() {
                    first_m0 = Some(n);
                }
            }
        }
        assert_eq!(got, [10, 50, 100, 0]);
        // count*100 < total*percent: the first request already qualifies for any percent > 0.
        assert_eq!(first_m0, Some(1));
        // 50 %: every other request.
        let m = mirroring(&[50]);
        let picks: Vec<bool> = (0..6).map(|_| !m.select_names().is_empty()).collect();
        assert_eq!(picks, [true, false, true, false, true, false]);
    }

    /// A body of several chunks, never reporting its end before the last poll.
    struct Chunks(std::collections::VecDeque<Bytes>);

    impl Body for Chunks {
        type Data = Bytes;
        type Error = BoxError;
        fn poll_frame(
            self: Pin<&mut Self>,
            _cx: &mut Context<'_>,
        ) -> Poll<Option<Result<Frame<Bytes>, BoxError>>> {
            Poll::Ready(self.get_mut().0.pop_front().map(|b| Ok(Frame::data(b))))
        }
    }

    fn chunks(parts: &[&'static str]) -> Chunks {
        Chunks(
            parts
                .iter()
                .map(|p| Bytes::from_static(p.as_bytes()))
                .collect(),
        )
    }

    #[tokio::test]
    async fn the_copy_is_the_whole_body_and_the_main_body_is_unchanged() {
        let (tee, rx) = Tee::new(Full::new(Bytes::from_static(b"hello")), Some(5));
        let main = tee.collect().await.unwrap().to_bytes();
        assert_eq!(&main[..], b"hello");
        assert_eq!(&rx.await.unwrap()[..], b"hello");
    }

    #[tokio::test]
    async fn chunks_are_copied_in_order_up_to_the_limit() {
        let (tee, rx) = Tee::new(chunks(&["ab", "cd", "e"]), Some(5));
        assert_eq!(&tee.collect().await.unwrap().to_bytes()[..], b"abcde");
        assert_eq!(&rx.await.unwrap()[..], b"abcde");
        let (tee, rx) = Tee::new(chunks(&["ab", "cd", "ef"]), Some(5));
        assert_eq!(&tee.collect().await.unwrap().to_bytes()[..], b"abcdef");
        assert!(rx.await.is_err());
    }

    #[tokio::test]
    async fn a_body_over_the_limit_is_not_mirrored_but_still_forwarded() {
        let (tee, rx) = Tee::new(Full::new(Bytes::from_static(b"hello!")), Some(5));
        let main = tee.collect().await.unwrap().to_bytes();
        assert_eq!(&main[..], b"hello!");
        assert!(rx.await.is_err());
    }

    #[tokio::test]
    async fn an_empty_body_is_mirrored_at_once_and_no_limit_means_none() {
        let (_tee, rx) = Tee::new(http_body_util::Empty::<Bytes>::new(), Some(0));
        assert!(rx.await.unwrap().is_empty());
        let big = Bytes::from(vec![b'x'; 1 << 20]);
        let (tee, rx) = Tee::new(Full::new(big.clone()), None);
        let _ = tee.collect().await.unwrap();
        assert_eq!(rx.await.unwrap(), big);
    }

    #[tokio::test]
    async fn a_body_dropped_before_its_end_is_not_mirrored() {
        let (mut tee, rx) = Tee::new(chunks(&["a", "b"]), None);
        let first = tee.frame().await.unwrap().unwrap();
        assert_eq!(first.data_ref().map(|d| &d[..]), Some(&b"a"[..]));
        drop(tee);
        assert!(rx.await.is_err());
    }
}
