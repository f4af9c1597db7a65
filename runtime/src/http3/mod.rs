//! HTTP/3 entry points (Traefik's `entryPoints.<name>.http3`): QUIC on the entry point's address
//! over UDP (quinn), HTTP/3 on it (hyperium's h3), each request answered by the same
//! [`crate::Runtime::handle`] as over TCP — same routers, middlewares and services.
//!
//! As Traefik (quic-go): the TLS configuration is the entry point's own (SNI, certificates,
//! client authentication), with ALPN `h3` and no 0-RTT; a connection idle for 30 s is closed;
//! 100 concurrent requests per connection. The configuration current when a connection arrives
//! serves it, so a reload's rotated certificate applies to new connections. Shutdown: new
//! connections are refused, open ones get GOAWAY and their requests the entry point's
//! `graceTimeOut` to finish.
//!
//! `Alt-Svc` on TLS answers over TCP (what makes browsers try HTTP/3) is added by the request
//! path ([`crate::proxy`]), from the plan's `http3.advertised_port`.

mod body;

use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use std::future::Future;

use bytes::Bytes;
use http::{Request, Response, header};

pub(crate) use body::H3Body;

use crate::http1::server::RequestBody;
use crate::runtime::{EntryId, Runtime};

/// quic-go's default idle timeout, which Traefik keeps.
const IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// quic-go's default number of concurrent request streams a client may open.
const MAX_STREAMS: u32 = 100;
/// How long a finished connection waits for the client to close before it is dropped.
const LINGER: Duration = Duration::from_secs(2);
/// The ALPN protocol of HTTP/3 (RFC 9114 §3.1).
const ALPN_H3: &[u8] = b"h3";

type H3Conn = h3::server::Connection<h3_quinn::Connection, Bytes>;
type SendStream = h3::server::RequestStream<h3_quinn::SendStream<Bytes>, Bytes>;

/// The QUIC configuration derived from an entry point's TLS configuration, remembered while
/// that configuration is current (a reload replaces it).
#[derive(Default)]
struct Derived {
    from: Option<Arc<rustls::ServerConfig>>,
    quic: Option<Arc<quinn::ServerConfig>>,
}

impl Derived {
    /// The QUIC server configuration for `tls`; `Err` when QUIC cannot be served with it (no
    /// TLS 1.3 cipher suite that QUIC's initial packets need).
    fn for_tls(
        &mut self,
        tls: &Arc<rustls::ServerConfig>,
    ) -> Result<Arc<quinn::ServerConfig>, String> {
        if let (Some(from), Some(quic)) = (&self.from, &self.quic)
            && Arc::ptr_eq(from, tls)
        {
            return Ok(quic.clone());
        }
        let mut cfg = (**tls).clone();
        cfg.alpn_protocols = vec![ALPN_H3.to_vec()];
        cfg.max_early_data_size = 0;
        let crypto = quinn::crypto::rustls::QuicServerConfig::try_from(Arc::new(cfg))
            .map_err(|e| format!("the entry point's TLS settings cannot carry QUIC: {e}"))?;
        let mut server = quinn::ServerConfig::with_crypto(Arc::new(crypto));
        let mut transport = quinn::TransportConfig::default();
        transport
            .max_idle_timeout(quinn::IdleTimeout::try_from(IDLE_TIMEOUT).ok())
            .max_concurrent_bidi_streams(quinn::VarInt::from_u32(MAX_STREAMS));
        server.transport_config(Arc::new(transport));
        let quic = Arc::new(server);
        self.from = Some(tls.clone());
        self.quic = Some(quic.clone());
        Ok(quic)
    }
}

/// A QUIC configuration whose handshakes all fail (no certificate): for an entry point that has
/// no TLS configuration when it starts.
fn without_certificate() -> Result<Arc<quinn::ServerConfig>, String> {
    #[derive(Debug)]
    struct NoCertificate;
    impl rustls::server::ResolvesServerCert for NoCertificate {
        fn resolve(
            &self,
            _: rustls::server::ClientHello<'_>,
        ) -> Option<Arc<rustls::sign::CertifiedKey>> {
            None
        }
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let tls = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_cert_resolver(Arc::new(NoCertificate));
    Derived::default().for_tls(&Arc::new(tls))
}

/// Binds the UDP socket of an HTTP/3 entry point: the TCP listener's address, so a port chosen
/// by the system (`:0`) is the same number for both.
pub(crate) fn bind(addr: SocketAddr) -> std::io::Result<std::net::UdpSocket> {
    let socket = socket2::Socket::new(
        socket2::Domain::for_address(addr),
        socket2::Type::DGRAM,
        Some(socket2::Protocol::UDP),
    )?;
    if addr.is_ipv6() {
        // Dual-stack like the TCP listener (`[::]` takes IPv4 too): a client told by Alt-Svc
        // over IPv4 must reach QUIC over IPv4.
        socket.set_only_v6(false)?;
    }
    socket.bind(&addr.into())?;
    Ok(socket.into())
}

/// Serves HTTP/3 on `socket` for entry point `ep` until `shutdown` changes, then lets open
/// requests finish for up to the entry point's grace time.
pub(crate) async fn serve_entrypoint(
    current: Arc<arc_swap::ArcSwap<Runtime>>,
    ep: Arc<str>,
    socket: std::net::UdpSocket,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
) {
    let rt = current.load_full();
    let Some(id) = rt.entry_id(&ep) else {
        tracing::error!("entry point {ep} is not in the plan: not serving HTTP/3 on it");
        return;
    };
    let entry = rt.plan().entrypoints.get(&*ep);
    let grace = entry.map_or(Duration::from_secs(10), |e| {
        Duration::from_millis(e.timeouts.grace_ms)
    });
    let limits = Limits {
        max_header: entry.map_or(1 << 20, |e| e.max_header_bytes),
        header_read: Duration::from_millis(
            entry.map_or(60_000, |e| e.timeouts.header_read_ms.max(1)),
        ),
    };
    // quinn drops the handshakes of an endpoint without a server configuration before they
    // are seen here: it gets the one of the TLS configuration current now (each connection is
    // then served with the one current when it arrives), or one that has no certificate.
    let derived = Mutex::new(Derived::default());
    let first = rt
        .tls_config(id)
        .and_then(|c| c.fallback().cloned())
        .ok_or_else(|| "no TLS configuration".to_owned())
        .and_then(|tls| {
            derived
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner)
                .for_tls(&tls)
        })
        .or_else(|_| without_certificate());
    drop(rt);
    let first = match first {
        Ok(c) => (*c).clone(),
        Err(e) => {
            tracing::error!("entry point {ep}: HTTP/3 not served: {e}");
            return;
        }
    };
    let endpoint = match quinn::Endpoint::new(
        quinn::EndpointConfig::default(),
        Some(first),
        socket,
        Arc::new(quinn::TokioRuntime),
    ) {
        Ok(e) => e,
        Err(e) => {
            tracing::error!("entry point {ep}: HTTP/3 not served: {e}");
            return;
        }
    };
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(());
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            incoming = endpoint.accept() => {
                let Some(incoming) = incoming else { break };
                // QUIC cannot choose TLS options per handshake: the options for names no
                // router names serve it, and a router needing others answers 421.
                let Some(tls) = current.load().tls_config(id).and_then(|c| c.fallback().cloned())
                else {
                    // No router with TLS here: there is nothing to answer a handshake with.
                    incoming.refuse();
                    continue;
                };
                let quic = derived
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner)
                    .for_tls(&tls);
                let quic = match quic {
                    Ok(q) => q,
                    Err(e) => {
                        tracing::warn!("entry point {ep}: HTTP/3 connection refused: {e}");
                        incoming.refuse();
                        continue;
                    }
                };
                let connecting = match incoming.accept_with(quic) {
                    Ok(c) => c,
                    Err(e) => {
                        tracing::debug!("entry point {ep}: HTTP/3 connection not accepted: {e}");
                        continue;
                    }
                };
                conns.spawn(connection(
                    connecting,
                    current.clone(),
                    id,
                    limits,
                    stop_rx.clone(),
                ));
            }
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
            changed = shutdown.changed() => {
                if changed.is_err() || *shutdown.borrow() {
                    break;
                }
            }
        }
    }
    // New connections are refused from here on; open ones get GOAWAY and the grace time.
    endpoint.set_server_config(None);
    let _ = stop_tx.send(());
    let _ = tokio::time::timeout(grace, async { while conns.join_next().await.is_some() {} }).await;
    endpoint.close(quinn::VarInt::from_u32(0x100), b"shutting down"); // H3_NO_ERROR
    let _ = tokio::time::timeout(Duration::from_secs(1), endpoint.wait_idle()).await;
}

/// What an entry point bounds on each request.
#[derive(Debug, Clone, Copy)]
struct Limits {
    /// Largest request header section (`maxHeaderBytes`), advertised as
    /// SETTINGS_MAX_FIELD_SECTION_SIZE.
    max_header: u64,
    /// A request stream must deliver its header section within this.
    header_read: Duration,
}

/// One QUIC connection: the handshake, then its requests, each in a task of its own.
async fn connection(
    connecting: quinn::Connecting,
    current: Arc<arc_swap::ArcSwap<Runtime>>,
    id: EntryId,
    limits: Limits,
    mut stop: tokio::sync::watch::Receiver<()>,
) {
    let conn = match tokio::time::timeout(limits.header_read, connecting).await {
        Ok(Ok(c)) => c,
        Ok(Err(e)) => {
            tracing::debug!("HTTP/3 handshake failed: {e}");
            return;
        }
        Err(_) => {
            tracing::debug!("HTTP/3 handshake timed out");
            return;
        }
    };
    let mut peer = crate::proxy::Peer::new(conn.remote_address());
    peer.client_certs = conn
        .peer_identity()
        .and_then(|any| {
            any.downcast::<Vec<rustls_pki_types::CertificateDer<'static>>>()
                .ok()
        })
        .filter(|c| !c.is_empty())
        .map(|c| Arc::from(c.into_boxed_slice()));
    // Kept to let the last answers reach the client before the connection is dropped: dropping
    // every handle closes it at once, abandoning what is still unacknowledged.
    let quic = conn.clone();
    let mut h3: H3Conn = match h3::server::builder()
        .max_field_section_size(limits.max_header)
        .build(h3_quinn::Connection::new(conn))
        .await
    {
        Ok(h) => h,
        Err(e) => {
            tracing::debug!("HTTP/3 connection not set up: {e}");
            return;
        }
    };
    let mut requests = tokio::task::JoinSet::new();
    let mut closing = false;
    loop {
        tokio::select! {
            accepted = h3.accept() => match accepted {
                Ok(Some(resolver)) => {
                    requests.spawn(request(resolver, current.clone(), id, peer.clone(), limits));
                }
                Ok(None) => break,
                Err(e) => {
                    tracing::debug!("HTTP/3 connection ended: {e}");
                    break;
                }
            },
            Some(_) = requests.join_next(), if !requests.is_empty() => {}
            changed = stop.changed(), if !closing => {
                let _ = changed;
                closing = true;
                // GOAWAY naming the stream after the last accepted one (RFC 9114 §5.2: lower
                // IDs are processed): no new request; the ones in progress go on.
                let _ = h3.shutdown(1).await;
                if requests.is_empty() {
                    break;
                }
            }
        }
        if closing && requests.is_empty() {
            break;
        }
    }
    while requests.join_next().await.is_some() {}
    // Dropping `h3` closes the connection at once: first a short linger for the client to close
    // once it has what it asked for (at once when it closed first), so a shutdown is not held
    // by clients that keep idle connections.
    let _ = tokio::time::timeout(LINGER, quic.closed()).await;
    drop(h3);
}

/// One request stream: its head, the answer (interim responses relayed as they come), the
/// answer's head and body.
async fn request(
    resolver: h3::server::RequestResolver<h3_quinn::Connection, Bytes>,
    current: Arc<arc_swap::ArcSwap<Runtime>>,
    id: EntryId,
    mut peer: crate::proxy::Peer,
    limits: Limits,
) {
    let (req, stream) =
        match tokio::time::timeout(limits.header_read, resolver.resolve_request()).await {
            Ok(Ok(r)) => r,
            Ok(Err(e)) => {
                tracing::debug!("HTTP/3 request not read: {e}");
                return;
            }
            Err(_) => {
                tracing::debug!("HTTP/3 request head not complete in time");
                return;
            }
        };
    let (mut send, recv) = stream.split();
    let (mut parts, ()) = req.into_parts();
    // RFC 9114 §4.2: connection-specific fields make a request malformed (HTTP/3 has no
    // Upgrade: a WebSocket stays on HTTP/1.1), and TE may only say `trailers`.
    if connection_specific(&parts.headers) {
        send.stop_stream(h3::error::Code::H3_MESSAGE_ERROR);
        return;
    }
    // As over HTTP/2: `100 Continue` at once, and the expectation is not passed on.
    if parts
        .headers
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
    {
        parts.headers.remove(header::EXPECT);
        let mut head = Response::new(());
        *head.status_mut() = http::StatusCode::CONTINUE;
        if send.send_response(head).await.is_err() {
            return;
        }
    }
    let Ok(body) = H3Body::new(recv, &parts.headers) else {
        // RFC 9114 §4.1.2: a malformed request is a stream error H3_MESSAGE_ERROR.
        send.stop_stream(h3::error::Code::H3_MESSAGE_ERROR);
        return;
    };
    let inbox = crate::interim::Inbox::new();
    peer.interims = Some(inbox.relay());
    let answer = current.load_full().handle(
        id,
        peer,
        true,
        Request::from_parts(parts, RequestBody::H3(Box::new(body))),
    );
    exchange(answer, inbox, send).await;
}

/// Whether a request carries a field RFC 9114 §4.2 forbids in HTTP/3.
fn connection_specific(fields: &http::HeaderMap) -> bool {
    const FORBIDDEN: [&str; 5] = [
        "connection",
        "keep-alive",
        "proxy-connection",
        "transfer-encoding",
        "upgrade",
    ];
    FORBIDDEN.iter().any(|n| fields.contains_key(*n))
        || fields
            .get_all(header::TE)
            .iter()
            .any(|v| !v.as_bytes().eq_ignore_ascii_case(b"trailers"))
}

/// The answer with the interim responses relayed meanwhile sent ahead of it, then its head and
/// body.
async fn exchange<F>(answer: F, inbox: crate::interim::Inbox, mut send: SendStream)
where
    F: Future<Output = Response<crate::body::Body>>,
{
    let mut answer = std::pin::pin!(answer);
    let mut registered = false;
    let resp = loop {
        let next = std::future::poll_fn(|cx| {
            if let std::task::Poll::Ready(resp) = answer.as_mut().poll(cx) {
                return std::task::Poll::Ready(Ok(resp));
            }
            inbox.poll_next(cx, &mut registered).map(Err)
        })
        .await;
        match next {
            Ok(resp) => break resp,
            Err(interim) => {
                if !informational(&mut send, interim).await {
                    return;
                }
            }
        }
    };
    while let Some(interim) = inbox.try_next() {
        if !informational(&mut send, interim).await {
            return;
        }
    }
    drop(inbox);
    let (head, body, end) = crate::http2::stream::answer_head(resp);
    if let Err(e) = send.send_response(head).await {
        tracing::debug!("HTTP/3 response not sent: {e}");
        return;
    }
    if !end {
        body::pipe(body, &mut send).await;
    }
    let _ = send.finish().await;
}

/// Sends an interim response as a HEADERS frame of its own; false when the stream is gone.
async fn informational(send: &mut SendStream, interim: crate::http1::client::Interim) -> bool {
    send.send_response(crate::http2::stream::interim_head(interim))
        .await
        .is_ok()
}

#[cfg(test)]
mod tests {
    use super::connection_specific;

    #[test]
    fn connection_specific_fields_make_a_request_malformed() {
        let fields = |pairs: &[(&'static str, &'static str)]| {
            let mut h = http::HeaderMap::new();
            for (n, v) in pairs {
                h.append(*n, http::HeaderValue::from_static(v));
            }
            h
        };
        assert!(!connection_specific(&fields(&[
            ("te", "trailers"),
            ("x-a", "1")
        ])));
        for bad in [
            &[("connection", "upgrade"), ("upgrade", "websocket")][..],
            &[("upgrade", "websocket")],
            &[("keep-alive", "timeout=5")],
            &[("transfer-encoding", "chunked")],
            &[("te", "gzip")],
        ] {
            assert!(connection_specific(&fields(bad)), "{bad:?}");
        }
    }
}
