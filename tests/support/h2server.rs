//! A bare HTTP/2 server on the h2 crate, for what hyper's server cannot do: send interim (1xx)
//! responses ahead of the final one.

#![allow(clippy::unwrap_used, reason = "test helper: a panic is a test failure")]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;

/// Serves HTTP/2 on 127.0.0.1 (prior knowledge, or TLS with ALPN `h2` when `tls` is given) on a
/// background thread: every request gets `103 Early Hints` (`link: </s.css>; rel=preload`) at
/// once, `102 Processing` after `pause`, then `200` whose body is `got N bytes`, N the length of
/// the request body it read.
pub fn early_hints(tls: Option<rustls::ServerConfig>, pause: Duration) -> SocketAddr {
    let acceptor = tls.map(|mut cfg| {
        cfg.alpn_protocols = vec![b"h2".to_vec()];
        tokio_rustls::TlsAcceptor::from(Arc::new(cfg))
    });
    crate::serve_connections(move |tcp| {
        let acceptor = acceptor.clone();
        async move {
            match acceptor {
                Some(a) => {
                    if let Ok(tls) = a.accept(tcp).await {
                        serve(tls, pause).await;
                    }
                }
                None => serve(tcp, pause).await,
            }
        }
    })
}

async fn serve<T>(io: T, pause: Duration)
where
    T: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let Ok(mut conn) = h2::server::handshake(io).await else {
        return;
    };
    while let Some(Ok((req, mut respond))) = conn.accept().await {
        tokio::spawn(async move {
            let interim = |status: u16, link: bool| {
                let mut b = http::Response::builder().status(status);
                if link {
                    b = b.header("link", "</s.css>; rel=preload");
                }
                b.body(()).unwrap()
            };
            if respond.send_informational(interim(103, true)).is_err() {
                return;
            }
            tokio::time::sleep(pause).await;
            let _ = respond.send_informational(interim(102, false));
            let mut body = req.into_body();
            let mut n = 0;
            while let Some(Ok(chunk)) = body.data().await {
                n += chunk.len();
                let _ = body.flow_control().release_capacity(chunk.len());
            }
            let text = format!("got {n} bytes");
            let head = http::Response::builder()
                .status(200)
                .header("content-length", text.len())
                .body(())
                .unwrap();
            if let Ok(mut tx) = respond.send_response(head, false) {
                let _ = tx.send_data(Bytes::from(text), true);
            }
        });
    }
}
