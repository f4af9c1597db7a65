//! The proxy's HTTP/2 server (prior knowledge, h2c, and ALPN `h2` over TLS), on the h2 crate.
//!
//! hyper's HTTP/2 server has no way to send an interim (1xx) response, and RFC 9110 §15.2 says a
//! proxy MUST forward the ones a server sends (103 Early Hints is the case browsers act on, and
//! they act on it over HTTP/2 only). h2's `SendResponse::send_informational` can, so this module
//! does what hyper's server did around h2 — the same settings, one task per stream, connection
//! fields stripped from answers, `date` and `content-length` added, bodies piped under flow
//! control, a client's RST_STREAM ending the exchange — and sends the answer's interim responses
//! ahead of its head.

use std::future::Future;
use std::pin::Pin;
use std::task::Poll;
use std::time::Duration;

use bytes::Bytes;
use h2::Reason;
use h2::server::SendResponse;
use http::header;
use http::{Request, Response};
use tokio::io::{AsyncRead, AsyncWrite};

use super::stream::{H2Body, answer_head, interim_head, pipe};
use crate::http1::server::RequestBody;

/// hyper's defaults for its HTTP/2 server, kept: larger windows than the protocol's 64 KiB, which
/// hold back a fast link to a distant client.
const CONN_WINDOW: u32 = 1024 * 1024;
const STREAM_WINDOW: u32 = 1024 * 1024;
const MAX_FRAME: u32 = 16 * 1024;
const MAX_SEND_BUFFER: usize = 400 * 1024;
/// Streams a client may make the server reset before the connection is closed (the "rapid
/// reset" and "made you reset" floods).
const MAX_LOCAL_ERROR_RESETS: usize = 1024;

/// Limits of a connection, from the entry point.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// The client's preface and first SETTINGS must arrive within this.
    pub handshake: Duration,
    /// Largest header list a request may carry (SETTINGS_MAX_HEADER_LIST_SIZE).
    pub max_header_list: u32,
    /// Streams a client may have open at once (`http2.maxConcurrentStreams`).
    pub max_concurrent_streams: u32,
    /// HPACK table for decoding the client's header blocks (`http2.maxDecoderHeaderTableSize`).
    pub header_table_size: u32,
    /// `keepAliveMaxRequests`/`keepAliveMaxTime`: a GOAWAY once either is reached.
    pub keep_alive: crate::http1::server::KeepAlive,
}

/// Serves HTTP/2 on `io` until the connection ends; `stop` changing means shut down: GOAWAY,
/// the streams in progress finish, then the connection closes. `answer` answers one request (its
/// interim responses go to the relay it is given) and runs in a task of its own per stream.
pub(crate) async fn serve<I, A, F>(
    io: I,
    limits: Limits,
    mut stop: tokio::sync::watch::Receiver<()>,
    answer: A,
) where
    I: AsyncRead + AsyncWrite + Unpin,
    A: Fn(Request<RequestBody>, crate::interim::Relay) -> F,
    F: Future<Output = Response<crate::body::Body>> + Send + 'static,
{
    let mut builder = h2::server::Builder::new();
    builder
        .initial_window_size(STREAM_WINDOW)
        .initial_connection_window_size(CONN_WINDOW)
        .max_frame_size(MAX_FRAME)
        .max_header_list_size(limits.max_header_list)
        .max_local_error_reset_streams(Some(MAX_LOCAL_ERROR_RESETS))
        .max_send_buffer_size(MAX_SEND_BUFFER)
        .max_concurrent_streams(limits.max_concurrent_streams)
        .header_table_size(limits.header_table_size);
    let mut keep_alive = limits.keep_alive;
    let old = keep_alive.deadline();
    let mut conn =
        match tokio::time::timeout(limits.handshake, builder.handshake::<_, Bytes>(io)).await {
            Ok(Ok(conn)) => conn,
            Ok(Err(e)) => {
                tracing::debug!("HTTP/2 handshake failed: {e}");
                return;
            }
            Err(_) => {
                tracing::debug!("HTTP/2 handshake timed out");
                return;
            }
        };
    let mut closing = false;
    let aged = async {
        match old {
            Some(at) => tokio::time::sleep_until(at).await,
            None => std::future::pending().await,
        }
    };
    tokio::pin!(aged);
    loop {
        tokio::select! {
            accepted = conn.accept() => match accepted {
                Some(Ok((req, mut respond))) => {
                    if keep_alive.last() && !closing {
                        // Traefik's keep-alive limits: this stream is served, then GOAWAY.
                        closing = true;
                        conn.graceful_shutdown();
                    }
                    let (mut parts, recv) = req.into_parts();
                    // As Traefik over HTTP/2: `100 Continue` at once, and the expectation is
                    // not passed on (the body is forwarded as it comes).
                    if parts
                        .headers
                        .get(header::EXPECT)
                        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
                    {
                        parts.headers.remove(header::EXPECT);
                        let mut head = Response::new(());
                        *head.status_mut() = http::StatusCode::CONTINUE;
                        let _ = respond.send_informational(head);
                    }
                    let body = RequestBody::H2(H2Body::new(recv, &parts.headers, false));
                    let inbox = crate::interim::Inbox::new();
                    let fut = answer(Request::from_parts(parts, body), inbox.relay());
                    tokio::spawn(exchange(fut, inbox, respond));
                }
                Some(Err(e)) => {
                    tracing::debug!("HTTP/2 connection ended: {e}");
                    return;
                }
                None => return,
            },
            changed = stop.changed(), if !closing => {
                let _ = changed;
                closing = true;
                conn.graceful_shutdown();
            }
            () = &mut aged, if !closing => {
                closing = true;
                conn.graceful_shutdown();
            }
        }
    }
}

/// One stream: the answer (abandoned when the client resets the stream) with the interim
/// responses relayed meanwhile sent as they come, its head, then its body.
async fn exchange<F>(answer: F, inbox: crate::interim::Inbox, mut respond: SendResponse<Bytes>)
where
    F: Future<Output = Response<crate::body::Body>>,
{
    let mut answer = std::pin::pin!(answer);
    let mut registered = false;
    let resp = loop {
        match first(answer.as_mut(), &inbox, &mut registered, &mut respond).await {
            Some(Ok(resp)) => break resp,
            Some(Err(interim)) => {
                if !informational(&mut respond, interim) {
                    return;
                }
            }
            // Dropping the answer's future cancels the request upstream, as a closed HTTP/1.1
            // connection does.
            None => return,
        }
    };
    while let Some(interim) = inbox.try_next() {
        if !informational(&mut respond, interim) {
            return;
        }
    }
    drop(inbox);
    let (head, body, end) = answer_head(resp);
    let tx = match respond.send_response(head, end) {
        Ok(tx) => tx,
        Err(e) => {
            tracing::debug!("HTTP/2 response not sent: {e}");
            respond.send_reset(Reason::INTERNAL_ERROR);
            return;
        }
    };
    if !end {
        pipe(body, tx, drop).await;
    }
}

/// Sends an interim response as HEADERS without END_STREAM; false when the stream is gone.
fn informational(
    respond: &mut SendResponse<Bytes>,
    interim: crate::http1::client::Interim,
) -> bool {
    respond.send_informational(interim_head(interim)).is_ok()
}

/// The answer (`Ok`), an interim response relayed before it (`Err`), or `None` when the client
/// reset the stream first.
async fn first<F>(
    mut answer: Pin<&mut F>,
    inbox: &crate::interim::Inbox,
    registered: &mut bool,
    respond: &mut SendResponse<Bytes>,
) -> Option<Result<Response<crate::body::Body>, crate::http1::client::Interim>>
where
    F: Future<Output = Response<crate::body::Body>>,
{
    std::future::poll_fn(|cx| {
        if let Poll::Ready(resp) = answer.as_mut().poll(cx) {
            return Poll::Ready(Some(Ok(resp)));
        }
        if let Poll::Ready(interim) = inbox.poll_next(cx, registered) {
            return Poll::Ready(Some(Err(interim)));
        }
        match respond.poll_reset(cx) {
            Poll::Ready(reason) => {
                tracing::debug!("HTTP/2 stream reset by the client: {reason:?}");
                Poll::Ready(None)
            }
            Poll::Pending => Poll::Pending,
        }
    })
    .await
}

/// True when the bytes a connection starts with are (the start of) HTTP/2's client preface.
pub(crate) fn is_preface(first: &[u8]) -> bool {
    const PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
    !first.is_empty() && PREFACE.starts_with(&first[..first.len().min(PREFACE.len())])
}
