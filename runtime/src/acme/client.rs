//! Talking to the CA: instant-acme over an HTTP client of our own (hyper-util + rustls), so the
//! ACME server's trust (`caCertificates`, `caSystemCertPool`), name (`caServerName`) and
//! timeouts come from the plan; and one order, from identifiers to a PEM chain and key.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use std::time::Duration;

use bridge_plan::{AcmeKeyType, CertificateResolver};
use bytes::Bytes;
use http::{Request, Uri};
use http_body_util::BodyExt as _;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::{TokioExecutor, TokioIo, TokioTimer};
use instant_acme::{
    Account, AuthorizationStatus, BodyWrapper, BytesResponse, ChallengeType, Identifier, NewOrder,
    OrderStatus, RetryPolicy,
};
use rustls::ClientConfig;
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, ServerName};

use super::challenge::Challenges;
use super::dns01::{Dns01, Record};
use super::schedule::Failure;
use crate::body::BoxError;
use crate::transport::Stream;

/// Why an order (or the account it needs) failed.
#[derive(Debug, thiserror::Error)]
#[error("{why}")]
pub(crate) struct OrderError {
    /// For the retry schedule.
    pub kind: Failure,
    /// What happened, for the log.
    pub why: String,
}

impl OrderError {
    fn from_acme(context: &str, e: &instant_acme::Error) -> Self {
        let kind = match e {
            instant_acme::Error::Api(_) | instant_acme::Error::Timeout(_) => Failure::Refused,
            _ => Failure::Unreachable,
        };
        let mut why = format!("{context}: {e}");
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            why.push_str(": ");
            why.push_str(&s.to_string());
            source = s.source();
        }
        Self { kind, why }
    }

    fn refused(why: String) -> Self {
        Self {
            kind: Failure::Refused,
            why,
        }
    }
}

/// The rustls configuration for the ACME server: the resolver's CA files, plus the system's
/// store when `caSystemCertPool` is set or no file is given.
pub(crate) fn tls_config(res: &CertificateResolver) -> Result<Arc<ClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    for file in &res.ca_certificates {
        let certs = CertificateDer::pem_file_iter(file)
            .map_err(|e| format!("caCertificates {file}: {e}"))?
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("caCertificates {file}: {e}"))?;
        if certs.is_empty() {
            return Err(format!("caCertificates {file} holds no certificate"));
        }
        for c in certs {
            roots
                .add(c)
                .map_err(|e| format!("caCertificates {file}: {e}"))?;
        }
    }
    if res.ca_system_cert_pool || res.ca_certificates.is_empty() {
        let found = rustls_native_certs::load_native_certs();
        let _ = roots.add_parsable_certificates(found.certs);
    }
    if roots.is_empty() {
        return Err(
            "no CA certificate to trust the ACME server with (install the system's CA bundle or set caCertificates)"
                .into(),
        );
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let mut cfg = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(Arc::new(cfg))
}

/// A TLS client trusting the system's CA store: for the OCSP responders and DNS-01's `httpreq`
/// endpoint, which name no CA of their own.
pub(crate) fn system_tls() -> Arc<ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    let _ = roots.add_parsable_certificates(rustls_native_certs::load_native_certs().certs);
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let cfg = ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map(|b| b.with_root_certificates(roots).with_no_client_auth())
        .unwrap_or_else(|_| {
            // The default provider always supports the default versions; keep a config that can
            // only fail its handshakes rather than none.
            ClientConfig::builder()
                .with_root_certificates(rustls::RootCertStore::empty())
                .with_no_client_auth()
        });
    Arc::new(cfg)
}

/// Dials the host of each request URI (DNS by the system), TLS for `https`. Also the OCSP
/// stapler's connector.
#[derive(Clone)]
pub(crate) struct Connector {
    http: HttpConnector,
    tls: Arc<ClientConfig>,
    /// `caServerName`: checked instead of the URI's host.
    server_name: Option<ServerName<'static>>,
}

impl Connector {
    /// `tls` for `https` URIs, checking `server_name` instead of the URI's host when given.
    pub(crate) fn new(
        http: HttpConnector,
        tls: Arc<ClientConfig>,
        server_name: Option<ServerName<'static>>,
    ) -> Self {
        Self {
            http,
            tls,
            server_name,
        }
    }
}

impl tower_service::Service<Uri> for Connector {
    type Response = Stream;
    type Error = BoxError;
    type Future = Pin<Box<dyn Future<Output = Result<Stream, BoxError>> + Send>>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), BoxError>> {
        tower_service::Service::<Uri>::poll_ready(&mut self.http, cx).map_err(Into::into)
    }

    fn call(&mut self, uri: Uri) -> Self::Future {
        let https = uri.scheme_str() == Some("https");
        let plain = uri
            .host()
            .map(|h| h.trim_start_matches('[').trim_end_matches(']').to_owned());
        let dial = match (https, uri.port_u16(), uri.host()) {
            (true, None, Some(h)) => format!("http://{h}:443").parse::<Uri>().ok(),
            (_, _, Some(h)) => format!("http://{h}:{}", uri.port_u16().unwrap_or(80))
                .parse::<Uri>()
                .ok(),
            _ => None,
        };
        let tcp = dial.map(|d| tower_service::Service::<Uri>::call(&mut self.http, d));
        let tls = self.tls.clone();
        let name = self.server_name.clone();
        Box::pin(async move {
            let tcp = tcp.ok_or("the URL has no host")?.await?.into_inner();
            if !https {
                return Ok(Stream::Plain(TokioIo::new(tcp)));
            }
            let name = match name {
                Some(n) => n,
                None => ServerName::try_from(plain.unwrap_or_default())
                    .map_err(|_| "the URL's host is not a DNS name or IP address")?,
            };
            let tls = tokio_rustls::TlsConnector::from(tls)
                .connect(name, tcp)
                .await?;
            Ok::<_, BoxError>(Stream::Tls(Box::new(TokioIo::new(tls))))
        })
    }
}

/// instant-acme's HTTP, with the resolver's timeouts: the response head within
/// `clientResponseHeaderTimeout`, the whole exchange within `clientTimeout`.
pub(crate) struct AcmeHttp {
    client: Client<Connector, BodyWrapper<Bytes>>,
    header_timeout: Duration,
    total_timeout: Duration,
}

impl AcmeHttp {
    pub(crate) fn new(res: &CertificateResolver) -> Result<Self, String> {
        let tls = tls_config(res)?;
        let server_name = match &res.ca_server_name {
            Some(n) => Some(
                ServerName::try_from(n.clone())
                    .map_err(|_| format!("caServerName `{n}` is not a DNS name or IP address"))?,
            ),
            None => None,
        };
        let mut http = HttpConnector::new();
        http.enforce_http(false);
        http.set_nodelay(true);
        http.set_connect_timeout(Some(Duration::from_millis(res.client_timeout_ms.max(1))));
        let mut b = Client::builder(TokioExecutor::new());
        b.pool_timer(TokioTimer::new())
            .pool_idle_timeout(Duration::from_secs(30));
        Ok(Self {
            client: b.build(Connector::new(http, tls, server_name)),
            header_timeout: Duration::from_millis(res.client_response_header_timeout_ms.max(1)),
            total_timeout: Duration::from_millis(res.client_timeout_ms.max(1)),
        })
    }
}

fn io_error(kind: std::io::ErrorKind, msg: &'static str) -> instant_acme::Error {
    instant_acme::Error::Other(Box::new(std::io::Error::new(kind, msg)))
}

impl instant_acme::HttpClient for AcmeHttp {
    fn request(
        &self,
        req: Request<BodyWrapper<Bytes>>,
    ) -> Pin<Box<dyn Future<Output = Result<BytesResponse, instant_acme::Error>> + Send>> {
        let fut = self.client.request(req);
        let (header, total) = (self.header_timeout, self.total_timeout);
        Box::pin(async move {
            let whole = async move {
                let rsp = tokio::time::timeout(header, fut)
                    .await
                    .map_err(|_| {
                        io_error(
                            std::io::ErrorKind::TimedOut,
                            "no response head within clientResponseHeaderTimeout",
                        )
                    })?
                    .map_err(|e| instant_acme::Error::Other(Box::new(e)))?;
                let (parts, body) = rsp.into_parts();
                let body = body
                    .collect()
                    .await
                    .map_err(|e| instant_acme::Error::Other(Box::new(e)))?
                    .to_bytes();
                Ok(BytesResponse {
                    parts,
                    body: Box::new(body),
                })
            };
            tokio::time::timeout(total, whole).await.map_err(|_| {
                io_error(
                    std::io::ErrorKind::TimedOut,
                    "no whole response within clientTimeout",
                )
            })?
        })
    }
}

/// The account of a resolver: the stored one when it was registered with this CA, else a new
/// registration (with EAB when configured). Returns the credentials to store when new.
pub(crate) async fn account(
    res: &CertificateResolver,
    stored: Option<&serde_json::Value>,
) -> Result<(Account, Option<serde_json::Value>), OrderError> {
    let http = || {
        AcmeHttp::new(res)
            .map(|h| Box::new(h) as Box<dyn instant_acme::HttpClient>)
            .map_err(OrderError::refused)
    };
    if let Some(v) = stored
        && v.get("directory").and_then(|d| d.as_str()) == Some(res.ca_server.as_str())
        && let Ok(creds) = serde_json::from_value::<instant_acme::AccountCredentials>(v.clone())
    {
        let account = Account::builder_with_http(http()?)
            .from_credentials(creds)
            .await
            .map_err(|e| OrderError::from_acme("the ACME directory", &e))?;
        return Ok((account, None));
    }
    let contact: Vec<String> = res.email.iter().map(|e| format!("mailto:{e}")).collect();
    let contact: Vec<&str> = contact.iter().map(String::as_str).collect();
    let eab = match &res.eab {
        Some(e) => {
            use base64::Engine as _;
            let key = base64::engine::general_purpose::URL_SAFE_NO_PAD
                .decode(e.hmac_encoded.trim().trim_end_matches('='))
                .map_err(|_| OrderError::refused("eab.hmacEncoded is not base64url".into()))?;
            Some(instant_acme::ExternalAccountKey::new(e.kid.clone(), &key))
        }
        None => None,
    };
    let (account, creds) = Account::builder_with_http(http()?)
        .create(
            &instant_acme::NewAccount {
                contact: &contact,
                terms_of_service_agreed: true,
                only_return_existing: false,
            },
            res.ca_server.clone(),
            eab.as_ref(),
        )
        .await
        .map_err(|e| OrderError::from_acme("registering the ACME account", &e))?;
    let value = serde_json::to_value(&creds)
        .map_err(|e| OrderError::refused(format!("account credentials: {e}")))?;
    Ok((account, Some(value)))
}

/// A certificate just issued: PEM chain (leaf first) and PEM private key.
#[derive(Debug)]
pub(crate) struct Issued {
    pub chain_pem: String,
    pub key_pem: String,
}

/// DNS-01 records written for an order: removed when the order ends, and by a task of their own
/// when the order is dropped before (a reload or shutdown cancels it), since removal is async.
struct Records {
    dns01: Option<Dns01>,
    written: Vec<Record>,
}

impl Records {
    async fn clean_up(&mut self) {
        if let Some(d) = &self.dns01 {
            for r in std::mem::take(&mut self.written) {
                if let Err(e) = d.cleanup(&r).await {
                    tracing::warn!(target: "acme", "{e}");
                }
            }
        }
    }
}

impl Drop for Records {
    fn drop(&mut self) {
        if self.written.is_empty() {
            return;
        }
        let mut rest = Self {
            dns01: self.dns01.take(),
            written: std::mem::take(&mut self.written),
        };
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(async move { rest.clean_up().await });
        }
    }
}

/// Removes the answers of an order when it ends, however it ends.
struct Presented<'a> {
    challenges: &'a Challenges,
    http: Vec<(String, String)>,
    alpn: Vec<String>,
}

impl Drop for Presented<'_> {
    fn drop(&mut self) {
        for (token, host) in &self.http {
            self.challenges.remove_http(token, host);
        }
        for host in &self.alpn {
            self.challenges.remove_alpn(host);
        }
    }
}

/// One order for `names` (first name main): answers every authorization by HTTP-01 when the
/// resolver has it and the CA offers it, else TLS-ALPN-01, else DNS-01 (the only way to a
/// wildcard), then finalizes with a fresh key of the resolver's type. DNS records presented are
/// removed however the order ends.
pub(crate) async fn obtain(
    account: &Account,
    res: &CertificateResolver,
    names: &[String],
    challenges: &Challenges,
) -> Result<Issued, OrderError> {
    let ids: Vec<Identifier> = names.iter().map(|n| Identifier::Dns(n.clone())).collect();
    let mut new = NewOrder::new(&ids);
    if let Some(p) = &res.profile {
        new = new.profile(p);
    }
    // As Traefik builds lego's client: a DNS provider without its settings fails every order.
    let dns01 = match &res.dns_challenge {
        Some(d) => Some(
            Dns01::from_env(d, &|k| std::env::var(k).ok(), &|| {
                std::fs::read_to_string("/etc/resolv.conf").ok()
            })
            .map_err(OrderError::refused)?,
        ),
        None => None,
    };
    let mut order = account
        .new_order(&new)
        .await
        .map_err(|e| OrderError::from_acme("new order", &e))?;
    let mut presented = Presented {
        challenges,
        http: Vec::new(),
        alpn: Vec::new(),
    };
    let mut records = Records {
        dns01: dns01.clone(),
        written: Vec::new(),
    };
    let answered = answer(
        &mut order,
        res,
        dns01.as_ref(),
        &mut presented,
        &mut records.written,
    )
    .await;
    drop(presented);
    records.clean_up().await;
    let status = answered?;
    if status != OrderStatus::Ready {
        return Err(OrderError::refused(format!(
            "the order is {status:?}: the CA could not validate {}",
            names.join(", ")
        )));
    }
    let key = new_key(res.key_type).map_err(OrderError::refused)?;
    let mut params = rcgen::CertificateParams::new(names.to_vec())
        .map_err(|e| OrderError::refused(format!("certificate request: {e}")))?;
    params.distinguished_name = rcgen::DistinguishedName::new();
    if !res.disable_common_name
        && let Some(first) = names.first()
    {
        params
            .distinguished_name
            .push(rcgen::DnType::CommonName, first.clone());
    }
    for email in &res.email_addresses {
        let e = email
            .clone()
            .try_into()
            .map_err(|_| OrderError::refused(format!("emailAddresses `{email}`")))?;
        params.subject_alt_names.push(rcgen::SanType::Rfc822Name(e));
    }
    let csr = params
        .serialize_request(&key)
        .map_err(|e| OrderError::refused(format!("certificate request: {e}")))?;
    order
        .finalize_csr(csr.der())
        .await
        .map_err(|e| OrderError::from_acme("finalize", &e))?;
    let chain_pem = order
        .poll_certificate(
            &RetryPolicy::new().timeout(Duration::from_millis(res.certificate_timeout_ms.max(1))),
        )
        .await
        .map_err(|e| OrderError::from_acme("certificate", &e))?;
    Ok(Issued {
        chain_pem,
        key_pem: key.serialize_pem(),
    })
}

/// Which challenge answers an authorization: HTTP-01 when configured and offered, else
/// TLS-ALPN-01 when configured, else DNS-01 when configured and offered. lego prefers TLS-ALPN-01
/// over HTTP-01; bridgectl prefers HTTP-01 because an appliance pair can relay it to the node that
/// placed the order (TLS-ALPN-01 reaches only the address holder).
fn choose(res: &CertificateResolver, offered: &[instant_acme::Challenge]) -> ChallengeType {
    let offers = |t: ChallengeType| offered.iter().any(|c| c.r#type == t);
    if res.http_challenge.is_some() && offers(ChallengeType::Http01) {
        ChallengeType::Http01
    } else if res.tls_challenge.is_some() && offers(ChallengeType::TlsAlpn01) {
        ChallengeType::TlsAlpn01
    } else if res.dns_challenge.is_some() && offers(ChallengeType::Dns01) {
        ChallengeType::Dns01
    } else if res.http_challenge.is_some() {
        ChallengeType::Http01
    } else if res.tls_challenge.is_some() {
        ChallengeType::TlsAlpn01
    } else {
        ChallengeType::Dns01
    }
}

/// Answers every pending authorization of `order` and waits until the CA has validated them.
/// HTTP-01 and TLS-ALPN-01 answers go into `presented`, DNS records into `records` as soon as
/// they are written, so the caller removes them whatever happens here.
async fn answer(
    order: &mut instant_acme::Order,
    res: &CertificateResolver,
    dns01: Option<&Dns01>,
    presented: &mut Presented<'_>,
    records: &mut Vec<Record>,
) -> Result<OrderStatus, OrderError> {
    let provider = rustls::crypto::aws_lc_rs::default_provider();
    let challenges = presented.challenges;
    let mut delay_ms = 0;
    // DNS-01 authorizations: (position in the order, record).
    let mut dns: Vec<(usize, Record)> = Vec::new();
    {
        let mut authorizations = order.authorizations();
        let mut position = 0;
        while let Some(next) = authorizations.next().await {
            let at = position;
            position += 1;
            let mut authz = next.map_err(|e| OrderError::from_acme("authorization", &e))?;
            match authz.status {
                AuthorizationStatus::Pending => {}
                AuthorizationStatus::Valid => continue,
                other => {
                    return Err(OrderError::refused(format!(
                        "authorization is {other:?} before any challenge"
                    )));
                }
            }
            let host = authz.identifier().to_string();
            let kind = choose(res, &authz.challenges);
            let mut challenge = authz.challenge(kind.clone()).ok_or_else(|| {
                OrderError::refused(format!(
                    "the CA offers no {kind:?} challenge for {host}{}",
                    if host.starts_with("*.") && res.dns_challenge.is_none() {
                        " (a wildcard needs DNS-01)"
                    } else {
                        ""
                    }
                ))
            })?;
            let key_auth = challenge.key_authorization();
            match kind {
                ChallengeType::Http01 => {
                    challenges.put_http(&challenge.token, &host, key_auth.as_str());
                    presented
                        .http
                        .push((challenge.token.clone(), host.to_ascii_lowercase()));
                    delay_ms = delay_ms.max(res.http_challenge.as_ref().map_or(0, |h| h.delay_ms));
                }
                ChallengeType::Dns01 => {
                    let Some(d) = dns01 else {
                        return Err(OrderError::refused(format!(
                            "the CA offers only DNS-01 for {host}, which this resolver does not answer"
                        )));
                    };
                    // The identifier without `*.`: where lego writes the record and what RAW
                    // mode passes.
                    let domain = host.strip_prefix("*.").unwrap_or(&host).to_owned();
                    let record = d
                        .record(
                            &domain,
                            &challenge.token,
                            key_auth.as_str(),
                            key_auth.dns_value(),
                        )
                        .await
                        .map_err(OrderError::refused)?;
                    if !d.sequential() {
                        // Cleaned up even when present fails halfway (lego cleans up after a
                        // failed present too).
                        records.push(record.clone());
                        d.present(&record).await.map_err(OrderError::refused)?;
                    }
                    dns.push((at, record));
                    continue; // told ready once the record has propagated
                }
                _ => {
                    let cert = super::challenge::alpn_certificate(
                        &host,
                        key_auth.digest().as_ref(),
                        &provider,
                    )
                    .map_err(OrderError::refused)?;
                    challenges.put_alpn(&host, cert);
                    presented.alpn.push(host.to_ascii_lowercase());
                    delay_ms = delay_ms.max(res.tls_challenge.as_ref().map_or(0, |t| t.delay_ms));
                }
            }
            if delay_ms > 0 {
                tokio::time::sleep(Duration::from_millis(delay_ms)).await;
            }
            challenge
                .set_ready()
                .await
                .map_err(|e| OrderError::from_acme("challenge ready", &e))?;
        }
    }
    if let Some(d) = dns01 {
        let last = dns.len();
        for (n, (at, record)) in dns.into_iter().enumerate() {
            if d.sequential() {
                records.push(record.clone());
                d.present(&record).await.map_err(OrderError::refused)?;
            }
            d.wait_propagation(&record)
                .await
                .map_err(OrderError::refused)?;
            {
                let mut authorizations = order.authorizations();
                let mut authz = nth(&mut authorizations, at).await?;
                authz
                    .challenge(ChallengeType::Dns01)
                    .ok_or_else(|| OrderError::refused("the DNS-01 challenge went away".into()))?
                    .set_ready()
                    .await
                    .map_err(|e| OrderError::from_acme("challenge ready", &e))?;
            }
            if d.sequential() {
                // lego's sequential solve: this record is validated and removed before the next
                // is written (two values of one name never coexist).
                {
                    let mut authorizations = order.authorizations();
                    let mut authz = nth(&mut authorizations, at).await?;
                    validated(&mut authz, &record.domain).await?;
                }
                // A cleanup that fails is logged, not the order's failure (as lego).
                if let Some(r) = records.pop()
                    && let Err(e) = d.cleanup(&r).await
                {
                    tracing::warn!(target: "acme", "{e}");
                }
                if n + 1 < last {
                    tokio::time::sleep(d.sequence_interval()).await;
                }
            }
        }
    }
    order
        .poll_ready(
            &RetryPolicy::new()
                .initial_delay(Duration::from_millis(250))
                .timeout(Duration::from_secs(90)),
        )
        .await
        .map_err(|e| OrderError::from_acme("validation", &e))
}

/// The authorization at `at` in the order (its state is cached: no request).
async fn nth<'a>(
    authorizations: &'a mut instant_acme::Authorizations<'_>,
    at: usize,
) -> Result<instant_acme::AuthorizationHandle<'a>, OrderError> {
    for _ in 0..at {
        if let Some(Err(e)) = authorizations.next().await {
            return Err(OrderError::from_acme("authorization", &e));
        }
    }
    match authorizations.next().await {
        Some(Ok(a)) => Ok(a),
        Some(Err(e)) => Err(OrderError::from_acme("authorization", &e)),
        None => Err(OrderError::refused("an authorization went away".into())),
    }
}

/// Polls one authorization until the CA has decided it (at most 90 s, as the order's poll).
async fn validated(
    authz: &mut instant_acme::AuthorizationHandle<'_>,
    domain: &str,
) -> Result<(), OrderError> {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(90);
    let mut pause = Duration::from_millis(250);
    loop {
        let state = authz
            .refresh()
            .await
            .map_err(|e| OrderError::from_acme("authorization", &e))?;
        match state.status {
            AuthorizationStatus::Valid => return Ok(()),
            AuthorizationStatus::Pending if tokio::time::Instant::now() < deadline => {}
            other => {
                let why = state
                    .challenges
                    .iter()
                    .find_map(|c| c.error.as_ref())
                    .map(|p| format!(": {p}"))
                    .unwrap_or_default();
                return Err(OrderError::refused(format!(
                    "the CA could not validate the DNS record of {domain} (authorization {other:?}){why}"
                )));
            }
        }
        tokio::time::sleep(pause).await;
        pause = (pause * 2).min(Duration::from_secs(2));
    }
}

/// A fresh private key of a Traefik key type.
fn new_key(kind: AcmeKeyType) -> Result<rcgen::KeyPair, String> {
    let r = match kind {
        AcmeKeyType::Ec256 => rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256),
        AcmeKeyType::Ec384 => rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P384_SHA384),
        AcmeKeyType::Rsa2048 => {
            rcgen::KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, rcgen::RsaKeySize::_2048)
        }
        AcmeKeyType::Rsa4096 => {
            rcgen::KeyPair::generate_rsa_for(&rcgen::PKCS_RSA_SHA256, rcgen::RsaKeySize::_4096)
        }
        // rcgen makes RSA keys up to 4096 bits; aws-lc-rs (its backend) makes 8192.
        AcmeKeyType::Rsa8192 => {
            use aws_lc_rs::encoding::AsDer as _;
            let pair = aws_lc_rs::rsa::KeyPair::generate(aws_lc_rs::rsa::KeySize::Rsa8192)
                .map_err(|e| format!("generating an RSA8192 key: {e}"))?;
            let der = pair
                .as_der()
                .map_err(|e| format!("encoding an RSA8192 key: {e}"))?;
            let der = rustls_pki_types::PrivatePkcs8KeyDer::from(der.as_ref().to_vec());
            rcgen::KeyPair::from_pkcs8_der_and_sign_algo(&der, &rcgen::PKCS_RSA_SHA256)
        }
    };
    r.map_err(|e| format!("generating a {} key: {e}", kind.as_str()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_key_type_makes_a_key_rustls_can_serve() {
        let provider = rustls::crypto::aws_lc_rs::default_provider();
        for kind in [
            AcmeKeyType::Ec256,
            AcmeKeyType::Ec384,
            AcmeKeyType::Rsa2048,
            AcmeKeyType::Rsa8192,
        ] {
            let key = new_key(kind).unwrap();
            let der =
                rustls_pki_types::PrivateKeyDer::from_pem_slice(key.serialize_pem().as_bytes())
                    .unwrap();
            provider.key_provider.load_private_key(der).unwrap();
        }
    }
}
