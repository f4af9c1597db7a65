//! Connections to servers: `http://`, `https://` (rustls client) and `h2c://` (HTTP/2 with prior
//! knowledge), each with the settings of its load balancer's servers transport.
//!
//! - Every server gets its own pooled client whose connector always dials that server's address
//!   (after `--resolve`), so the request URI can carry what the server should see: for `https` and
//!   `h2c` the URI authority is the `Host` value (HTTP/2's `:authority`, or the HTTP/1.1 `Host`
//!   after ALPN picked HTTP/1.1), as Go's transport sends `req.Host`.
//! - Who speaks: `http://` the own HTTP/1.1 pool ([`crate::http1::pool`]); `h2c://` and HTTP/2
//!   over TLS the own HTTP/2 client ([`crate::http2::client`], which relays 1xx); HTTP/1.1 over
//!   TLS hyper-util's client.
//! - TLS: the aws-lc-rs provider, passed explicitly; ALPN `h2`, `http/1.1` (only `http/1.1` with
//!   `disableHTTP2`, and always for `Upgrade` requests, which HTTP/2 cannot carry, as Go does); SNI
//!   and the name checked in the certificate are `serverName`, else the server URL's host.
//!   Certificates are verified against `rootCAs` when given (only those, as Go's `RootCAs`), else
//!   the system's trust store (read once at start, via rustls-native-certs: like Traefik, and an
//!   appliance updates it with the OS); `insecureSkipVerify` accepts any certificate but still
//!   checks the handshake signatures.
//! - `dialTimeout` bounds connecting (TCP and TLS handshake), `responseHeaderTimeout` the wait
//!   for response headers (504), `idleConnTimeout` and `maxIdleConnsPerHost` the pool.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use crate::http1::pool::UpstreamBody;
use bridge_plan::ServersTransport;
use http::{Request, Response, Uri, header};
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::{Connected, Connection, HttpConnector};
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use rustls::ClientConfig;
use rustls::crypto::CryptoProvider;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};

use crate::body::BoxError;

/// Why connections to servers cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum TransportError {
    /// A servers transport cannot be honoured.
    #[error("servers transport `{name}`: {why}")]
    Transport {
        /// Transport name.
        name: String,
        /// What is wrong.
        why: String,
    },
    /// A server URL cannot be used.
    #[error("server `{url}`: {why}")]
    Server {
        /// Server URL.
        url: String,
        /// What is wrong.
        why: String,
    },
}

/// Why a request to a server failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum SendError {
    /// Connecting, the TLS handshake, or the exchange failed.
    #[error(transparent)]
    Client(#[from] hyper_util::client::legacy::Error),
    /// Connecting to an `http://` server or the exchange with it failed.
    #[error(transparent)]
    Pool(#[from] crate::http1::pool::PoolError),
    /// Connecting to an HTTP/2 server or the exchange with it failed.
    #[error(transparent)]
    H2(#[from] crate::http2::client::H2Error),
    /// No response headers within the transport's `responseHeaderTimeout`.
    #[error("no response headers within {0} ms (responseHeaderTimeout)")]
    HeaderTimeout(u128),
    /// No client was set up for this server (a plan inconsistency).
    #[error("no connection settings for this server")]
    NoClient,
}

/// How a server is spoken to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Scheme {
    /// HTTP/1.1 over TCP.
    Http,
    /// HTTP/1.1 or HTTP/2 (by ALPN) over TLS.
    Https,
    /// HTTP/2 with prior knowledge over TCP.
    H2c,
}

impl Scheme {
    fn of(scheme: &str) -> Option<Self> {
        match scheme {
            "http" => Some(Self::Http),
            "https" => Some(Self::Https),
            "h2c" => Some(Self::H2c),
            _ => None,
        }
    }
}

/// Dials one server, over TLS when configured.
#[derive(Clone)]
pub(crate) struct Connector {
    http: HttpConnector,
    /// `http://host:port` of the server (after `--resolve`), whatever the request URI says.
    dial: Uri,
    tls: Option<(Arc<ClientConfig>, ServerName<'static>)>,
    /// Bounds TCP connect plus TLS handshake.
    dial_timeout: Option<Duration>,
}

impl std::fmt::Debug for Connector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Connector")
            .field("dial", &self.dial)
            .field("tls", &self.tls.as_ref().map(|(_, n)| n))
            .finish_non_exhaustive()
    }
}

impl tower_service::Service<Uri> for Connector {
    type Response = Stream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Stream, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        tower_service::Service::<Uri>::poll_ready(&mut self.http, cx).map_err(Into::into)
    }

    fn call(&mut self, _uri: Uri) -> Self::Future {
        let tcp = tower_service::Service::<Uri>::call(&mut self.http, self.dial.clone());
        let tls = self.tls.clone();
        let dial_timeout = self.dial_timeout;
        Box::pin(async move {
            let connect = async move {
                let tcp = tcp.await?.into_inner();
                let Some((config, name)) = tls else {
                    return Ok(Stream::Plain(TokioIo::new(tcp)));
                };
                let tls = tokio_rustls::TlsConnector::from(config)
                    .connect(name, tcp)
                    .await?;
                Ok::<_, BoxError>(Stream::Tls(Box::new(TokioIo::new(tls))))
            };
            match dial_timeout {
                Some(d) => tokio::time::timeout(d, connect).await.map_err(|_| {
                    Box::new(std::io::Error::new(
                        std::io::ErrorKind::TimedOut,
                        "connect timed out (dialTimeout)",
                    )) as BoxError
                })?,
                None => connect.await,
            }
        })
    }
}

/// A connection to a server.
#[derive(Debug)]
pub(crate) enum Stream {
    /// Plain TCP.
    Plain(TokioIo<tokio::net::TcpStream>),
    /// TLS over TCP.
    Tls(Box<TokioIo<tokio_rustls::client::TlsStream<tokio::net::TcpStream>>>),
}

impl Connection for Stream {
    fn connected(&self) -> Connected {
        match self {
            Self::Plain(s) => s.connected(),
            Self::Tls(s) => {
                let (tcp, session) = s.inner().get_ref();
                let connected = tcp.connected();
                if session.alpn_protocol() == Some(b"h2") {
                    connected.negotiated_h2()
                } else {
                    connected
                }
            }
        }
    }
}

impl hyper::rt::Read for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: hyper::rt::ReadBufCursor<'_>,
    ) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl hyper::rt::Write for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_flush(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }

    fn is_write_vectored(&self) -> bool {
        match self {
            Self::Plain(s) => s.is_write_vectored(),
            Self::Tls(s) => s.is_write_vectored(),
        }
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[std::io::IoSlice<'_>],
    ) -> Poll<std::io::Result<usize>> {
        match self.get_mut() {
            Self::Plain(s) => Pin::new(s).poll_write_vectored(cx, bufs),
            Self::Tls(s) => Pin::new(s.as_mut()).poll_write_vectored(cx, bufs),
        }
    }
}

/// The pooled client(s) of one server (cheap to clone: the pools are shared).
#[derive(Debug)]
pub(crate) struct ServerClient<B> {
    scheme: Scheme,
    /// The server URL's `host:port`, used as the authority when the `Host` value is unusable.
    authority: String,
    /// `http://` servers: the proxy's own HTTP/1.1 pool (see [`crate::http1::pool`]).
    pool: Option<Arc<crate::http1::pool::H1Pool<B>>>,
    /// `h2c://` servers, and `https://` ones unless `disableHTTP2`: the proxy's own HTTP/2
    /// client (see [`crate::http2::client`]).
    h2: Option<Arc<crate::http2::client::H2Pool>>,
    /// `https://` servers over HTTP/1.1 (ALPN `http/1.1` only): `Upgrade` requests, servers that
    /// do not negotiate `h2`, and every request with `disableHTTP2`; hyper-util's client.
    tls1: Option<Client<Connector, B>>,
    header_timeout: Option<Duration>,
}

impl<B> Clone for ServerClient<B> {
    fn clone(&self) -> Self {
        Self {
            scheme: self.scheme,
            authority: self.authority.clone(),
            pool: self.pool.clone(),
            h2: self.h2.clone(),
            tls1: self.tls1.clone(),
            header_timeout: self.header_timeout,
        }
    }
}

impl<B> ServerClient<B>
where
    B: hyper::body::Body + Send + Unpin + 'static,
    B::Data: Send,
    B::Error: Into<BoxError>,
{
    /// Sends `req` (URI `/path?query` or `scheme://anything/path?query`, `Host` header set) to
    /// this server.
    /// Interim responses go to `interims` as they arrive.
    pub(crate) async fn send(
        &self,
        mut req: Request<B>,
        upgrade: bool,
        interims: Option<&crate::interim::Relay>,
    ) -> Result<Response<UpstreamBody<B>>, SendError> {
        if let Some(pool) = &self.pool {
            if req.uri().scheme().is_some() {
                // HTTP/1.1 to an origin server: origin-form.
                let pq = req
                    .uri()
                    .path_and_query()
                    .cloned()
                    .unwrap_or_else(|| http::uri::PathAndQuery::from_static("/"));
                *req.uri_mut() = Uri::from(pq);
            }
            // Each arm makes its own future: one shared local would be stored twice.
            return match self.header_timeout {
                Some(d) => {
                    match Box::pin(tokio::time::timeout(d, pool.send(req, interims))).await {
                        Ok(r) => r.map_err(SendError::from),
                        Err(_) => Err(SendError::HeaderTimeout(d.as_millis())),
                    }
                }
                None => pool.send(req, interims).await.map_err(SendError::from),
            };
        }
        // Boxed: this path's state (an HTTP/2 exchange, hyper-util's request future, their
        // timeout) would otherwise make every `http://` exchange's future larger.
        let fut = Box::pin(self.send_other(req, upgrade, interims));
        match self.header_timeout {
            Some(d) => match tokio::time::timeout(d, fut).await {
                Ok(r) => r,
                Err(_) => Err(SendError::HeaderTimeout(d.as_millis())),
            },
            None => fut.await,
        }
    }

    /// True when [`ServerClient::send_bodiless`] can carry requests (`http://` servers).
    pub(crate) fn takes_bodiless(&self) -> bool {
        self.pool.is_some()
    }

    /// Sends a borrowed request without a body (see [`crate::http1::client::Bodiless`]); `None` when this
    /// server's scheme needs an owned request ([`ServerClient::takes_bodiless`] is false).
    pub(crate) async fn send_bodiless(
        &self,
        req: crate::http1::client::Bodiless<'_>,
        interims: Option<&crate::interim::Relay>,
    ) -> Option<Result<Response<UpstreamBody<B>>, SendError>> {
        let pool = self.pool.as_ref()?;
        Some(match self.header_timeout {
            Some(d) => {
                match Box::pin(tokio::time::timeout(d, pool.send_bodiless(req, interims))).await {
                    Ok(r) => r.map_err(SendError::from),
                    Err(_) => Err(SendError::HeaderTimeout(d.as_millis())),
                }
            }
            None => pool
                .send_bodiless(req, interims)
                .await
                .map_err(SendError::from),
        })
    }

    /// `https://` and `h2c://`: HTTP/2 by the own client, HTTP/1.1 over TLS by hyper-util's;
    /// both want absolute URIs, whose authority is the `Host` value.
    async fn send_other(
        &self,
        mut req: Request<B>,
        upgrade: bool,
        interims: Option<&crate::interim::Relay>,
    ) -> Result<Response<UpstreamBody<B>>, SendError> {
        {
            let pq = req
                .uri()
                .path_and_query()
                .map_or_else(|| "/".to_owned(), |p| p.as_str().to_owned());
            let scheme = if self.scheme == Scheme::Https {
                "https"
            } else {
                "http"
            };
            // HTTP/2 carries the host as `:authority` (from the URI), not as a `Host` header.
            let host = req.headers_mut().remove(header::HOST);
            let from_host = host
                .as_ref()
                .and_then(|h| h.to_str().ok())
                .and_then(|h| format!("{scheme}://{h}{pq}").parse::<Uri>().ok());
            let uri = match from_host {
                Some(u) => u,
                None => format!("{scheme}://{}{pq}", self.authority)
                    .parse::<Uri>()
                    .map_err(|_| SendError::NoClient)?,
            };
            *req.uri_mut() = uri;
        }
        if let Some(h2) = &self.h2
            && !(upgrade && self.tls1.is_some())
            && !h2.h1_only()
        {
            if upgrade {
                return Err(crate::http2::client::H2Error::Upgrade.into());
            }
            match h2.lease().await {
                Ok(lease) => {
                    let resp = lease.send(req, interims).await?;
                    return Ok(resp.map(UpstreamBody::h2));
                }
                // The server chose HTTP/1.1: the request goes to the HTTP/1.1 client below.
                Err(crate::http2::client::H2Error::NotH2) if self.tls1.is_some() => {}
                Err(e) => return Err(e.into()),
            }
        }
        let client = self.tls1.as_ref().ok_or(SendError::NoClient)?;
        let sink = crate::interim::Sink::attach(&mut req, interims);
        let resp = client.request(req).await?;
        if sink.flooded() {
            return Err(SendError::Pool(
                crate::http1::client::H1Error::Invalid("more than 16 interim responses").into(),
            ));
        }
        Ok(resp.map(UpstreamBody::unpooled))
    }
}

/// Builds clients for servers, caching one TLS configuration per transport and the system's
/// trust store.
#[derive(Debug, Default)]
pub(crate) struct ClientFactory {
    native: Option<Arc<rustls::RootCertStore>>,
    configs: HashMap<String, (Arc<ClientConfig>, Arc<ClientConfig>)>,
}

fn provider() -> Arc<CryptoProvider> {
    Arc::new(rustls::crypto::aws_lc_rs::default_provider())
}

impl ClientFactory {
    /// The client(s) for the server at `url` under transport `name`; `resolve` pins host names.
    pub(crate) fn client<B>(
        &mut self,
        url: &str,
        name: &str,
        t: &ServersTransport,
        resolve: &HashMap<String, std::net::IpAddr>,
    ) -> Result<ServerClient<B>, TransportError>
    where
        B: hyper::body::Body + Send + Unpin + 'static,
        B::Data: Send,
        B::Error: Into<BoxError>,
    {
        let bad = |why: &str| TransportError::Server {
            url: url.to_owned(),
            why: why.to_owned(),
        };
        let uri = url.parse::<Uri>().map_err(|_| bad("not a URL"))?;
        let scheme = uri
            .scheme_str()
            .and_then(Scheme::of)
            .ok_or_else(|| bad("only http, https and h2c servers can be served"))?;
        let host = uri.host().ok_or_else(|| bad("the URL has no host"))?;
        let bare_host = host.trim_start_matches('[').trim_end_matches(']');
        let port = uri
            .port_u16()
            .unwrap_or(if scheme == Scheme::Https { 443 } else { 80 });
        let dial_host = match resolve.get(host) {
            Some(ip) if ip.is_ipv6() => format!("[{ip}]"),
            Some(ip) => ip.to_string(),
            None => host.to_owned(),
        };
        let dial = format!("http://{dial_host}:{port}")
            .parse::<Uri>()
            .map_err(|_| bad("cannot dial this host"))?;
        let authority = uri
            .authority()
            .map_or_else(|| host.to_owned(), |a| a.as_str().to_owned());
        let dial_timeout =
            (t.dial_timeout_ms > 0).then(|| Duration::from_millis(t.dial_timeout_ms));
        let mut http = HttpConnector::new();
        http.set_nodelay(true);
        // No connect timeout of its own: `Connector` bounds connect and handshake together and
        // fails with `io::ErrorKind::TimedOut`, which the proxy classifies by type (504).
        let tls = if scheme == Scheme::Https {
            let sni = t.server_name.as_deref().unwrap_or(bare_host).to_owned();
            let sni = ServerName::try_from(sni)
                .map_err(|_| bad("the TLS server name is not a DNS name or IP address"))?;
            Some((self.configs(name, t)?, sni))
        } else {
            None
        };
        let idle_timeout =
            (t.idle_conn_timeout_ms > 0).then(|| Duration::from_millis(t.idle_conn_timeout_ms));
        // HTTP/1.1 over TLS only: HTTP/2 goes through the own client, with Go's HTTP/2 health
        // check (readIdleTimeout, pingTimeout).
        let tls1 = |tls: (Arc<ClientConfig>, ServerName<'static>)| {
            let mut b = Client::builder(TokioExecutor::new());
            b.pool_timer(TokioTimer::new())
                .pool_idle_timeout(idle_timeout)
                .pool_max_idle_per_host(usize::try_from(t.max_idle_conns_per_host).unwrap_or(0));
            b.build(Connector {
                http: http.clone(),
                dial: dial.clone(),
                tls: Some(tls),
                dial_timeout,
            })
        };
        let h2 = |tls: Option<(Arc<ClientConfig>, ServerName<'static>)>| {
            Arc::new(crate::http2::client::H2Pool::new(
                crate::http2::client::Dial {
                    addr: format!("{dial_host}:{port}"),
                    tls,
                    timeout: dial_timeout,
                },
                crate::http2::client::Timers {
                    read_idle: (t.read_idle_timeout_ms > 0)
                        .then(|| Duration::from_millis(t.read_idle_timeout_ms)),
                    ping_timeout: Duration::from_millis(t.ping_timeout_ms),
                    idle: idle_timeout,
                },
            ))
        };
        let pool = (scheme == Scheme::Http).then(|| {
            crate::http1::pool::H1Pool::new(
                format!("{dial_host}:{port}"),
                dial_timeout,
                usize::try_from(t.max_idle_conns_per_host).unwrap_or(usize::MAX),
                idle_timeout,
            )
        });
        let (h2, tls1) = match (scheme, tls) {
            (Scheme::Http, _) => (None, None),
            (Scheme::H2c, _) => (Some(h2(None)), None),
            (Scheme::Https, Some((configs, sni))) if !t.disable_http2 => (
                Some(h2(Some((configs.0, sni.clone())))),
                Some(tls1((configs.1, sni))),
            ),
            (Scheme::Https, Some((configs, sni))) => (None, Some(tls1((configs.1, sni)))),
            (Scheme::Https, None) => return Err(bad("an https server needs TLS settings")),
        };
        Ok(ServerClient {
            scheme,
            authority,
            pool,
            h2,
            tls1,
            header_timeout: (t.response_header_timeout_ms > 0)
                .then(|| Duration::from_millis(t.response_header_timeout_ms)),
        })
    }

    /// The transport's TLS client configurations: (normal ALPN, HTTP/1.1 only).
    fn configs(
        &mut self,
        name: &str,
        t: &ServersTransport,
    ) -> Result<(Arc<ClientConfig>, Arc<ClientConfig>), TransportError> {
        if let Some(c) = self.configs.get(name) {
            return Ok(c.clone());
        }
        let err = |why: String| TransportError::Transport {
            name: name.to_owned(),
            why,
        };
        let (provider, versions) =
            crate::tls::restricted(&provider(), &t.cipher_suites, t.min_version, t.max_version)
                .map_err(err)?;
        let provider = Arc::new(provider);
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_protocol_versions(&versions)
            .map_err(|e| err(e.to_string()))?;
        let builder = if let Some(uri) = &t.peer_cert_uri {
            // Traefik's check runs on top of Go's: the chain against the CAs (also with
            // insecureSkipVerify, without the name then), and the URI among the leaf's SANs.
            let roots = if t.root_cas.is_empty() {
                self.native_roots().map_err(err)?
            } else {
                Arc::new(crate::tls::root_store(&t.root_cas, "rootCAs").map_err(err)?)
            };
            let inner = if t.insecure_skip_verify {
                None
            } else {
                Some(
                    rustls::client::WebPkiServerVerifier::builder_with_provider(
                        roots.clone(),
                        provider.clone(),
                    )
                    .build()
                    .map_err(|e| err(e.to_string()))?,
                )
            };
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(PeerCertUri {
                    inner,
                    roots,
                    uri: uri.clone(),
                    provider: provider.clone(),
                }))
        } else if t.insecure_skip_verify {
            builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(AnyCertificate(provider.clone())))
        } else {
            let roots = if t.root_cas.is_empty() {
                self.native_roots().map_err(err)?
            } else {
                Arc::new(crate::tls::root_store(&t.root_cas, "rootCAs").map_err(err)?)
            };
            builder.with_root_certificates(roots)
        };
        let config = if t.certificates.is_empty() {
            builder.with_no_client_auth()
        } else {
            let certs = t
                .certificates
                .iter()
                .map(|c| client_certificate(c, &provider))
                .collect::<Result<Vec<_>, _>>()
                .map_err(err)?;
            builder.with_client_cert_resolver(Arc::new(ClientCertificates(certs)))
        };
        let mut main = config.clone();
        main.alpn_protocols = if t.disable_http2 {
            vec![b"http/1.1".to_vec()]
        } else {
            vec![b"h2".to_vec(), b"http/1.1".to_vec()]
        };
        let mut h1 = config;
        h1.alpn_protocols = vec![b"http/1.1".to_vec()];
        let pair = (Arc::new(main), Arc::new(h1));
        self.configs.insert(name.to_owned(), pair.clone());
        Ok(pair)
    }

    fn native_roots(&mut self) -> Result<Arc<rustls::RootCertStore>, String> {
        if let Some(r) = &self.native {
            return Ok(r.clone());
        }
        let found = rustls_native_certs::load_native_certs();
        let mut roots = rustls::RootCertStore::empty();
        let (_, _) = roots.add_parsable_certificates(found.certs);
        if roots.is_empty() {
            return Err(format!(
                "no CA certificate found in the system's trust store ({} errors); set rootCAs or install the CA bundle",
                found.errors.len()
            ));
        }
        let roots = Arc::new(roots);
        self.native = Some(roots.clone());
        Ok(roots)
    }
}

/// A client certificate chain and its key (files or inline PEM).
fn client_certificate(
    c: &bridge_plan::Certificate,
    provider: &CryptoProvider,
) -> Result<Arc<rustls::sign::CertifiedKey>, String> {
    let what = |e: &dyn std::fmt::Display| format!("certificate {}: {e}", c.cert);
    let pem = c.cert.read().map_err(|e| what(&e))?;
    let chain = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| what(&e))?;
    if chain.is_empty() {
        return Err(what(&"holds no certificate"));
    }
    let key = c.key.read().map_err(|e| format!("key {}: {e}", c.key))?;
    let key = rustls_pki_types::PrivateKeyDer::from_pem_slice(&key)
        .map_err(|e| format!("key {}: {e}", c.key))?;
    rustls::sign::CertifiedKey::from_der(chain, key, provider)
        .map(Arc::new)
        .map_err(|e| what(&format!("does not fit key {}: {e}", c.key)))
}

/// The client certificates of a transport: the first whose key signs with a scheme the server
/// accepts, else the first, as Go's client chooses among `Certificates`.
#[derive(Debug)]
struct ClientCertificates(Vec<Arc<rustls::sign::CertifiedKey>>);

impl rustls::client::ResolvesClientCert for ClientCertificates {
    fn resolve(
        &self,
        _root_hint_subjects: &[&[u8]],
        sigschemes: &[rustls::SignatureScheme],
    ) -> Option<Arc<rustls::sign::CertifiedKey>> {
        self.0
            .iter()
            .find(|c| c.key.choose_scheme(sigschemes).is_some())
            .or_else(|| self.0.first())
            .cloned()
    }

    fn has_certs(&self) -> bool {
        !self.0.is_empty()
    }
}

/// `peerCertURI`: the usual verification (or, with `insecureSkipVerify`, the chain alone), and
/// a SAN URI of the leaf equal to `uri` without regard to case (Traefik's
/// `verifyServerCertMatchesURI`).
#[derive(Debug)]
pub(crate) struct PeerCertUri {
    inner: Option<Arc<rustls::client::WebPkiServerVerifier>>,
    roots: Arc<rustls::RootCertStore>,
    uri: String,
    provider: Arc<CryptoProvider>,
}

/// Whether the certificate carries `uri` among its SAN URIs.
fn has_san_uri(der: &[u8], uri: &str) -> bool {
    use x509_parser::prelude::{FromDer as _, GeneralName, X509Certificate};
    let Ok((_, cert)) = X509Certificate::from_der(der) else {
        return false;
    };
    let Ok(Some(san)) = cert.subject_alternative_name() else {
        return false;
    };
    san.value
        .general_names
        .iter()
        .any(|g| matches!(g, GeneralName::URI(u) if u.eq_ignore_ascii_case(uri)))
}

impl rustls::client::danger::ServerCertVerifier for PeerCertUri {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        intermediates: &[CertificateDer<'_>],
        server_name: &ServerName<'_>,
        ocsp_response: &[u8],
        now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        match &self.inner {
            Some(v) => {
                v.verify_server_cert(end_entity, intermediates, server_name, ocsp_response, now)?;
            }
            None => {
                let cert = rustls::server::ParsedCertificate::try_from(end_entity)?;
                rustls::client::verify_server_cert_signed_by_trust_anchor(
                    &cert,
                    &self.roots,
                    intermediates,
                    now,
                    self.provider.signature_verification_algorithms.all,
                )?;
            }
        }
        if has_san_uri(end_entity.as_ref(), &self.uri) {
            Ok(rustls::client::danger::ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::Other(rustls::OtherError(Arc::new(NoSanUri(
                    self.uri.clone(),
                )))),
            ))
        }
    }

    // Handshake signatures as every verifier here checks them.
    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        AnyCertificate(self.provider.clone()).verify_tls12_signature(message, cert, dss)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        AnyCertificate(self.provider.clone()).verify_tls13_signature(message, cert, dss)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        AnyCertificate(self.provider.clone()).supported_verify_schemes()
    }
}

/// Traefik's words for a certificate without the URI.
#[derive(Debug, thiserror::Error)]
#[error("peer certificate mismatch: no SAN URI in peer certificate matches {0}")]
struct NoSanUri(String);

/// `insecureSkipVerify`: any certificate is accepted; handshake signatures are still verified.
#[derive(Debug)]
pub(crate) struct AnyCertificate(pub(crate) Arc<CryptoProvider>);

impl rustls::client::danger::ServerCertVerifier for AnyCertificate {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::client::danger::ServerCertVerified, rustls::Error> {
        Ok(rustls::client::danger::ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// The servers transport of a load balancer: (name, settings).
pub(crate) fn transport_of<'p>(
    plan: &'p bridge_plan::Plan,
    lb: &'p bridge_plan::LoadBalancer,
) -> Result<(&'p str, &'p ServersTransport), TransportError> {
    let name = lb
        .servers_transport
        .as_deref()
        .unwrap_or(bridge_plan::DEFAULT_SERVERS_TRANSPORT);
    match plan.servers_transports.get(name) {
        Some(t) => Ok((name, t)),
        None => Err(TransportError::Transport {
            name: name.to_owned(),
            why: "not defined in the plan".into(),
        }),
    }
}

/// An error with its sources (`connect error: ...: invalid peer certificate`).
pub(crate) fn error_text(e: &(dyn std::error::Error + 'static)) -> String {
    let mut out = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        out.push_str(": ");
        out.push_str(&s.to_string());
        cur = s.source();
    }
    out
}
