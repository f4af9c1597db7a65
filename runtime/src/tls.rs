//! TLS termination: rustls server configurations built from the plan's certificates and TLS
//! options, one per entry point that serves TLS.
//!
//! - Crypto: the aws-lc-rs provider, passed explicitly to every config (and installed as the
//!   process default at start by [`install_provider`]), so a dependency enabling `ring` cannot
//!   change what is used (aws-lc-rs is rustls's default and the FIPS-capable one).
//! - Certificates: PEM files read at load (and again on every SIGHUP reload, so a rotated
//!   certificate is picked up; a bad one fails the reload and the old one keeps serving). The key
//!   must match the certificate.
//! - SNI: exact DNS names of the certificates (subject alternative names, else the common name),
//!   then `*.parent` wildcards, then the default certificate — Traefik's order. `sniStrict` refuses
//!   handshakes without SNI or with an unknown name. Without any default certificate the runtime
//!   makes a self-signed one at start, as Traefik does.
//! - OCSP: with the plan's `ocsp`, each certificate file is handed to [`crate::ocsp`], which
//!   staples its responder's answer to the certificate as served here.
//! - Options: min/max version (rustls speaks TLS 1.2 and 1.3 only: a plan asking for 1.0 or 1.1 as
//!   the minimum is served with 1.2, stricter on purpose), TLS 1.2 cipher suites by their Go/IANA
//!   names (unknown or non-AEAD suites are refused by name), ALPN, client certificates (mTLS).
//!
//! Which connections are TLS is decided per connection by the first byte (a TLS handshake record
//! starts with 0x16), as Traefik does: on an entry point with TLS, plain HTTP requests are still
//! read, but only routers without TLS can match them.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use bridge_plan::{Certificate, ClientAuth, ClientAuthType, Plan, TlsOptions, TlsVersion};

use crate::acme::Acme;
use crate::ocsp::{Batch, Served};
use rustls::crypto::CryptoProvider;
use rustls::server::{ClientHello, ResolvesServerCert, WebPkiClientVerifier};
use rustls::sign::CertifiedKey;
use rustls::{CipherSuite, RootCertStore, ServerConfig, SupportedProtocolVersion};
use rustls_pki_types::pem::PemObject;
use rustls_pki_types::{CertificateDer, PrivateKeyDer};

/// Why TLS could not be set up from a plan.
#[derive(Debug, thiserror::Error)]
pub enum TlsError {
    /// A certificate or key file could not be used.
    #[error("certificate {cert} / key {key}: {why}")]
    Certificate {
        /// Certificate file as written in the plan, or `inline PEM`.
        cert: String,
        /// Key file as written in the plan, or `inline PEM`.
        key: String,
        /// What is wrong.
        why: String,
    },
    /// A TLS option set cannot be honoured.
    #[error("TLS options `{name}`: {why}")]
    Options {
        /// Option set name.
        name: String,
        /// What is wrong.
        why: String,
    },
    /// An entry point's TLS cannot be set up.
    #[error("entry point `{entrypoint}`: {why}")]
    EntryPoint {
        /// Entry point.
        entrypoint: String,
        /// What is wrong.
        why: String,
    },
}

/// Installs aws-lc-rs as the process-wide rustls provider. Call once at start; later calls and a
/// provider installed before are left alone (the configs here name their provider explicitly).
pub(crate) fn install_provider() {
    let _ = rustls::crypto::aws_lc_rs::default_provider().install_default();
}

fn provider() -> CryptoProvider {
    rustls::crypto::aws_lc_rs::default_provider()
}

/// The TLS server configurations of one entry point and which one a handshake gets, chosen by
/// the name the client asks for (SNI) as Traefik chooses TLS options by its routers' `Host`
/// rules: with one option set it serves every name; with several, a name a router's `Host`
/// names gets that router's options and any other name the `default` options.
#[derive(Debug)]
pub(crate) struct TlsChoice {
    /// The option sets in use here; the first is the one for names no router names.
    configs: Vec<Arc<ServerConfig>>,
    /// Lower-case host → index into `configs`; empty with one set.
    by_host: HashMap<String, u16>,
    /// Router key → index of the options its requests need (a request over a connection that
    /// got other options is answered 421, Traefik's SNI check); empty with one set.
    by_router: HashMap<String, u16>,
}

impl TlsChoice {
    /// The only configuration, when one option set serves every name.
    pub(crate) fn single(&self) -> Option<&Arc<ServerConfig>> {
        match self.configs.as_slice() {
            [one] => Some(one),
            _ => None,
        }
    }

    /// The configuration for a client that named no router's host (QUIC's, which cannot be
    /// chosen per handshake).
    pub(crate) fn fallback(&self) -> Option<&Arc<ServerConfig>> {
        self.configs.first()
    }

    /// The configuration for a handshake asking for `sni`, with its index.
    pub(crate) fn for_name(&self, sni: Option<&str>) -> Option<(u16, &Arc<ServerConfig>)> {
        let at = sni
            .and_then(|n| {
                let n = n.trim_end_matches('.');
                self.by_host
                    .get(n)
                    .or_else(|| self.by_host.get(&n.to_ascii_lowercase()))
            })
            .copied()
            .unwrap_or(0);
        self.configs.get(usize::from(at)).map(|c| (at, c))
    }

    /// The index of the options a router's requests need; `None`: any connection will do (one
    /// option set, or a router without TLS).
    pub(crate) fn of_router(&self, key: &str) -> Option<u16> {
        self.by_router.get(key).copied()
    }
}

/// TLS server configurations by entry point.
pub(crate) type Configs = HashMap<String, Arc<TlsChoice>>;

/// The TLS configurations of each entry point that serves TLS, and the names the plan's
/// certificate files cover (ACME never orders those). With `acme`, its certificates are served
/// by SNI after the files' exact names, and TLS-ALPN-01 handshakes get its challenge answers.
/// With `staples` (OCSP stapling on), every certificate loaded is added to it.
pub(crate) fn configs(
    plan: &Plan,
    acme: Option<&Arc<Acme>>,
    mut staples: Option<&mut Batch>,
) -> Result<(Configs, Vec<String>), TlsError> {
    let wanted: Vec<(&String, Wanted)> = plan
        .entrypoints
        .iter()
        .filter_map(|(name, ep)| Some((name, wanted(plan, ep)?)))
        .collect();
    if wanted.is_empty() {
        return Ok((HashMap::new(), Vec::new()));
    }
    let provider = provider();
    let mut by_options: HashMap<String, Arc<ServerConfig>> = HashMap::new();
    let mut covered: Vec<String> = Vec::new();
    let mut config = |opt_name: &str| -> Result<Arc<ServerConfig>, TlsError> {
        if let Some(c) = by_options.get(opt_name) {
            return Ok(c.clone());
        }
        let opts = plan
            .tls
            .options
            .get(opt_name)
            .ok_or_else(|| TlsError::Options {
                name: opt_name.to_owned(),
                why: "not defined in the plan".into(),
            })?;
        let resolver = Arc::new(SniResolver::load(
            plan,
            &provider,
            opts.sni_strict,
            acme.cloned(),
            staples.as_deref_mut(),
        )?);
        if covered.is_empty() {
            covered = resolver.names();
        }
        let alpn = plan
            .certificate_resolvers
            .values()
            .any(|r| r.tls_challenge.is_some());
        let c = Arc::new(server_config(opt_name, opts, resolver, &provider, alpn)?);
        by_options.insert(opt_name.to_owned(), c.clone());
        Ok(c)
    };
    let mut out = HashMap::new();
    for (ep, w) in wanted {
        let configs = w
            .options
            .iter()
            .map(|o| config(o))
            .collect::<Result<Vec<_>, _>>()?;
        out.insert(
            ep.clone(),
            Arc::new(TlsChoice {
                configs,
                by_host: w.by_host,
                by_router: w.by_router,
            }),
        );
    }
    Ok((out, covered))
}

/// The option sets of one entry point (the one for unnamed hosts first) and what chooses them.
#[derive(Debug, PartialEq, Eq)]
struct Wanted {
    options: Vec<String>,
    by_host: HashMap<String, u16>,
    by_router: HashMap<String, u16>,
}

/// Name of Traefik's default TLS options.
const DEFAULT_OPTIONS: &str = "default";

/// What TLS options entry point `ep` serves; `None` when it serves no TLS. Several option sets
/// are resolved as Traefik's aggregator resolves them: a router whose options are not the
/// default ones but whose rule names no host, and every router of a host that routers with
/// different options name, get the default options.
fn wanted(plan: &Plan, ep: &bridge_plan::EntryPoint) -> Option<Wanted> {
    let routers: Vec<(&String, &str, Vec<String>)> = ep
        .routers
        .iter()
        .filter_map(|key| {
            let r = plan.routers.get(key)?;
            let t = r.tls.as_ref()?;
            Some((key, t.options.as_str(), r.matcher.hosts()))
        })
        .collect();
    let distinct: BTreeSet<&str> = routers
        .iter()
        .map(|(_, o, _)| *o)
        .chain(ep.tls.as_ref().map(|t| t.options.as_str()))
        .collect();
    match distinct.len() {
        0 => return None,
        // One option set serves every name (stricter than Traefik, which gives a name no
        // router's `Host` names the default options).
        1 => {
            return Some(Wanted {
                options: distinct.iter().map(|o| (*o).to_owned()).collect(),
                by_host: HashMap::new(),
                by_router: HashMap::new(),
            });
        }
        _ => {}
    }
    let mut per_host: HashMap<&str, BTreeSet<&str>> = HashMap::new();
    for (_, o, hosts) in &routers {
        for h in hosts {
            per_host.entry(h.as_str()).or_default().insert(*o);
        }
    }
    let resolved = |o: &'static str, hosts: &[String], own: &str| -> String {
        let conflict = hosts.is_empty() && own != DEFAULT_OPTIONS
            || hosts
                .iter()
                .any(|h| per_host.get(h.as_str()).is_some_and(|s| s.len() > 1));
        if conflict {
            o.to_owned()
        } else {
            own.to_owned()
        }
    };
    let mut options = vec![DEFAULT_OPTIONS.to_owned()];
    let index = |o: &str, options: &mut Vec<String>| -> u16 {
        let at = options.iter().position(|x| x == o).unwrap_or_else(|| {
            options.push(o.to_owned());
            options.len() - 1
        });
        u16::try_from(at).unwrap_or(0)
    };
    let mut by_host = HashMap::new();
    let mut by_router = HashMap::new();
    for (key, o, hosts) in &routers {
        let r = resolved(DEFAULT_OPTIONS, hosts, o);
        let at = index(&r, &mut options);
        by_router.insert((*key).clone(), at);
        for h in hosts {
            by_host.insert(h.clone(), at);
        }
    }
    Some(Wanted {
        options,
        by_host,
        by_router,
    })
}

/// `provider` offering only `suites` for TLS 1.2 (all when empty; like Go, the list never
/// restricts TLS 1.3), and the versions from `min` to `max` that rustls speaks (1.2 and 1.3: a
/// lower minimum means 1.2, which the compiler warns about). Shared by the entry points' TLS
/// options and the servers transports.
pub(crate) fn restricted(
    provider: &CryptoProvider,
    suites: &[bridge_plan::CipherSuite],
    min_version: TlsVersion,
    max_version: Option<TlsVersion>,
) -> Result<(CryptoProvider, Vec<&'static SupportedProtocolVersion>), String> {
    let mut provider = provider.clone();
    if !suites.is_empty() {
        let wanted: Vec<CipherSuite> = suites.iter().map(|s| rustls_suite(*s)).collect();
        provider
            .cipher_suites
            .retain(|cs| cs.version() == &rustls::version::TLS13 || wanted.contains(&cs.suite()));
    }
    let min = min_version.max(TlsVersion::Tls12);
    let max = max_version
        .unwrap_or(TlsVersion::Tls13)
        .max(TlsVersion::Tls12);
    if min > max {
        return Err(format!(
            "minVersion {} is above maxVersion {}",
            min_version.as_str(),
            max.as_str()
        ));
    }
    let mut versions: Vec<&'static SupportedProtocolVersion> = Vec::new();
    if min == TlsVersion::Tls12 {
        versions.push(&rustls::version::TLS12);
    }
    if max == TlsVersion::Tls13 {
        versions.push(&rustls::version::TLS13);
    }
    Ok((provider, versions))
}

/// The rustls key-exchange group of a plan's `curvePreferences` entry.
fn kx_group(g: bridge_plan::KxGroup) -> &'static dyn rustls::crypto::SupportedKxGroup {
    use bridge_plan::KxGroup as K;
    use rustls::crypto::aws_lc_rs::kx_group as aws;
    match g {
        K::X25519 => aws::X25519,
        K::Secp256r1 => aws::SECP256R1,
        K::Secp384r1 => aws::SECP384R1,
        K::X25519Mlkem768 => aws::X25519MLKEM768,
        K::Secp256r1Mlkem768 => aws::SECP256R1MLKEM768,
    }
}

/// The rustls suite of a plan's cipher suite.
fn rustls_suite(s: bridge_plan::CipherSuite) -> CipherSuite {
    use bridge_plan::CipherSuite as P;
    match s {
        P::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256 => {
            CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256
        }
        P::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 => {
            CipherSuite::TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384
        }
        P::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256 => {
            CipherSuite::TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256
        }
        P::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256 => {
            CipherSuite::TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256
        }
        P::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 => {
            CipherSuite::TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384
        }
        P::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256 => {
            CipherSuite::TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256
        }
        P::TLS_AES_128_GCM_SHA256 => CipherSuite::TLS13_AES_128_GCM_SHA256,
        P::TLS_AES_256_GCM_SHA384 => CipherSuite::TLS13_AES_256_GCM_SHA384,
        P::TLS_CHACHA20_POLY1305_SHA256 => CipherSuite::TLS13_CHACHA20_POLY1305_SHA256,
    }
}

fn server_config(
    name: &str,
    opts: &TlsOptions,
    resolver: Arc<SniResolver>,
    provider: &CryptoProvider,
    acme_tls_alpn: bool,
) -> Result<ServerConfig, TlsError> {
    let bad = |why: String| TlsError::Options {
        name: name.to_owned(),
        why,
    };
    let (mut provider, versions) = restricted(
        provider,
        &opts.cipher_suites,
        opts.min_version,
        opts.max_version,
    )
    .map_err(bad)?;
    if !opts.curve_preferences.is_empty() {
        provider.kx_groups = opts
            .curve_preferences
            .iter()
            .map(|g| kx_group(*g))
            .collect();
    }
    let provider = Arc::new(provider);
    let builder = ServerConfig::builder_with_provider(provider.clone())
        .with_protocol_versions(&versions)
        .map_err(|e| bad(e.to_string()))?;
    let builder = match &opts.client_auth {
        None => builder.with_no_client_auth(),
        Some(ca) => match client_verifier(ca, provider).map_err(bad)? {
            Some(v) => builder.with_client_cert_verifier(v),
            None => builder.with_no_client_auth(),
        },
    };
    let mut cfg = builder.with_cert_resolver(resolver);
    cfg.alpn_protocols = if opts.alpn_protocols.is_empty() {
        vec![b"h2".to_vec(), b"http/1.1".to_vec()]
    } else {
        opts.alpn_protocols
            .iter()
            .map(|p| p.as_bytes().to_vec())
            .collect()
    };
    if !opts.session_resumption {
        // Go's `SessionTicketsDisabled`: its server resumes only by ticket, so nothing resumes.
        cfg.session_storage = Arc::new(rustls::server::NoServerSessionStorage {});
        cfg.send_tls13_tickets = 0;
    }
    if acme_tls_alpn {
        // Offered last: only a client asking for nothing else (the CA's validator) gets it.
        cfg.alpn_protocols
            .push(crate::acme::challenge::ACME_TLS_ALPN.to_vec());
    }
    Ok(cfg)
}

fn client_verifier(
    ca: &ClientAuth,
    provider: Arc<CryptoProvider>,
) -> Result<Option<Arc<dyn rustls::server::danger::ClientCertVerifier>>, String> {
    let auth_type = ca.auth_type.as_str();
    let optional = match ca.auth_type {
        ClientAuthType::NoClientCert => return Ok(None),
        ClientAuthType::VerifyClientCertIfGiven => true,
        ClientAuthType::RequireAndVerifyClientCert => false,
        // Go's meaning: asked for (or required), not checked against any CA — the client must
        // still prove it holds the key (the handshake's signature is verified), and what it
        // sent reaches `passTLSClientCert` for a server that does its own checking.
        ClientAuthType::RequestClientCert => {
            return Ok(Some(Arc::new(AnyClientCert::new(false, &provider))));
        }
        ClientAuthType::RequireAnyClientCert => {
            return Ok(Some(Arc::new(AnyClientCert::new(true, &provider))));
        }
    };
    let roots = root_store(&ca.cas, "CA")?;
    if roots.is_empty() {
        return Err(format!(
            "clientAuthType {auth_type} needs caFiles with at least one CA certificate"
        ));
    }
    let builder = WebPkiClientVerifier::builder_with_provider(Arc::new(roots), provider);
    let builder = if optional {
        builder.allow_unauthenticated()
    } else {
        builder
    };
    builder.build().map(Some).map_err(|e| e.to_string())
}

/// Traefik's `RequestClientCert` and `RequireAnyClientCert`: a client certificate is asked for
/// (required by the second) and accepted without a CA vouching for it; the handshake signature
/// that proves the client holds its key is still checked.
#[derive(Debug)]
struct AnyClientCert {
    mandatory: bool,
    algorithms: rustls::crypto::WebPkiSupportedAlgorithms,
}

impl AnyClientCert {
    fn new(mandatory: bool, provider: &CryptoProvider) -> Self {
        Self {
            mandatory,
            algorithms: provider.signature_verification_algorithms,
        }
    }
}

impl rustls::server::danger::ClientCertVerifier for AnyClientCert {
    fn offer_client_auth(&self) -> bool {
        true
    }

    fn client_auth_mandatory(&self) -> bool {
        self.mandatory
    }

    fn root_hint_subjects(&self) -> &[rustls::DistinguishedName] {
        &[]
    }

    fn verify_client_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _now: rustls_pki_types::UnixTime,
    ) -> Result<rustls::server::danger::ClientCertVerified, rustls::Error> {
        Ok(rustls::server::danger::ClientCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(message, cert, dss, &self.algorithms)
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &rustls::DigitallySignedStruct,
    ) -> Result<rustls::client::danger::HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(message, cert, dss, &self.algorithms)
    }

    fn supported_verify_schemes(&self) -> Vec<rustls::SignatureScheme> {
        self.algorithms.supported_schemes()
    }
}

/// Chooses the certificate for a handshake by SNI (see the module documentation).
#[derive(Debug)]
struct SniResolver {
    exact: HashMap<String, Arc<Served>>,
    /// By the parent domain of a `*.parent` name.
    wildcard: HashMap<String, Arc<Served>>,
    default: Arc<Served>,
    /// `sniStrict` of the option set this resolver serves.
    strict: bool,
    /// Certificates from ACME resolvers, and their TLS-ALPN-01 answers.
    acme: Option<Arc<Acme>>,
    /// The main name of the default store's `defaultGeneratedCert` (no `defaultCertificate`):
    /// its ACME certificate, once obtained, is served instead of `default`.
    generated_default: Option<String>,
}

impl SniResolver {
    fn load(
        plan: &Plan,
        provider: &CryptoProvider,
        strict: bool,
        acme: Option<Arc<Acme>>,
        mut staples: Option<&mut Batch>,
    ) -> Result<Self, TlsError> {
        let mut exact = HashMap::new();
        let mut wildcard = HashMap::new();
        let mut add = |key: &Arc<Served>, names: Vec<String>| {
            for n in names {
                let n = n.to_ascii_lowercase();
                match n.strip_prefix("*.") {
                    Some(parent) => {
                        wildcard
                            .entry(parent.to_owned())
                            .or_insert_with(|| key.clone());
                    }
                    None => {
                        exact.entry(n).or_insert_with(|| key.clone());
                    }
                }
            }
        };
        let mut load = |c: &Certificate| -> Result<_, TlsError> {
            let (key, names) = load_certificate(c, provider)?;
            let served = Served::new(key);
            if let Some(b) = staples.as_deref_mut() {
                b.add(&served, &c.cert.to_string());
            }
            Ok((served, names))
        };
        for c in &plan.tls.certificates {
            let (key, names) = load(c)?;
            add(&key, names);
        }
        let default = match &plan.tls.default_certificate {
            Some(c) => {
                let (key, names) = load(c)?;
                add(&key, names);
                key
            }
            // Never stapled: it names no responder (as Traefik's generated certificate).
            None => Served::new(self_signed(provider)?),
        };
        let generated_default = plan
            .tls
            .default_certificate
            .is_none()
            .then(|| {
                plan.certificate_resolvers
                    .values()
                    .flat_map(|r| &r.domains)
                    .find(|d| d.default_certificate)
                    .map(|d| d.main.to_ascii_lowercase())
            })
            .flatten();
        Ok(Self {
            exact,
            wildcard,
            default,
            strict,
            acme,
            generated_default,
        })
    }

    /// The default certificate: `defaultGeneratedCert`'s once ACME has it, else the plan's
    /// default certificate or the self-signed one (as Traefik falls back).
    fn default_key(&self) -> Arc<CertifiedKey> {
        self.generated_default
            .as_deref()
            .zip(self.acme.as_ref())
            .and_then(|(name, acme)| acme.find_exact(name).or_else(|| acme.find_wildcard(name)))
            .unwrap_or_else(|| self.default.key())
    }

    /// The names the certificate files cover (`*.parent` for wildcards).
    fn names(&self) -> Vec<String> {
        let mut v: Vec<String> = self.exact.keys().cloned().collect();
        v.extend(self.wildcard.keys().map(|p| format!("*.{p}")));
        v.sort();
        v
    }

    /// Traefik's order, with ACME certificates in the same store: exact names (files, then
    /// ACME), then wildcards (files, then ACME).
    fn find(&self, name: &str) -> Option<Arc<CertifiedKey>> {
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        if let Some(k) = self.exact.get(&name) {
            return Some(k.key());
        }
        if let Some(k) = self.acme.as_ref().and_then(|a| a.find_exact(&name)) {
            return Some(k);
        }
        if let Some(k) = name
            .split_once('.')
            .and_then(|(_, parent)| self.wildcard.get(parent))
        {
            return Some(k.key());
        }
        self.acme.as_ref().and_then(|a| a.find_wildcard(&name))
    }
}

impl ResolvesServerCert for SniResolver {
    fn resolve(&self, hello: ClientHello<'_>) -> Option<Arc<CertifiedKey>> {
        if let Some(acme) = &self.acme {
            // RFC 8737 §3: the validator offers `acme-tls/1` and nothing else.
            let mut alpn = hello.alpn().into_iter().flatten();
            let only_acme =
                alpn.next() == Some(crate::acme::challenge::ACME_TLS_ALPN) && alpn.next().is_none();
            if only_acme {
                return hello
                    .server_name()
                    .and_then(|n| acme.challenges.alpn_cert(n));
            }
        }
        match hello.server_name().and_then(|n| self.find(n)) {
            Some(k) => Some(k),
            None if self.strict => None,
            None => Some(self.default_key()),
        }
    }
}

/// The CAs in `files` (files or inline PEM); `what` names them in errors (`rootCAs`, `CA`).
pub(crate) fn root_store(files: &[bridge_plan::Pem], what: &str) -> Result<RootCertStore, String> {
    let mut roots = RootCertStore::empty();
    for file in files {
        let pem = file.read().map_err(|e| format!("{what} {file}: {e}"))?;
        let certs = CertificateDer::pem_slice_iter(&pem)
            .collect::<Result<Vec<_>, _>>()
            .map_err(|e| format!("{what} {file}: {e}"))?;
        if certs.is_empty() {
            return Err(format!("{what} {file} holds no certificate"));
        }
        for c in certs {
            roots.add(c).map_err(|e| format!("{what} {file}: {e}"))?;
        }
    }
    Ok(roots)
}

/// Reads a certificate chain and its key, checks they belong together, and returns the DNS names
/// the leaf certificate covers.
fn load_certificate(
    c: &Certificate,
    provider: &CryptoProvider,
) -> Result<(CertifiedKey, Vec<String>), TlsError> {
    let err = |why: String| TlsError::Certificate {
        cert: c.cert.to_string(),
        key: c.key.to_string(),
        why,
    };
    let pem = c
        .cert
        .read()
        .map_err(|e| err(format!("cannot read the certificate: {e}")))?;
    let chain = CertificateDer::pem_slice_iter(&pem)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| err(format!("bad PEM certificate: {e}")))?;
    let Some(leaf) = chain.first() else {
        return Err(err("the certificate file holds no certificate".into()));
    };
    let names = dns_names(leaf).map_err(|e| err(format!("bad certificate: {e}")))?;
    let key = c
        .key
        .read()
        .map_err(|e| err(format!("cannot read the private key: {e}")))?;
    let key = PrivateKeyDer::from_pem_slice(&key)
        .map_err(|e| err(format!("cannot read the private key: {e}")))?;
    let certified = CertifiedKey::from_der(chain, key, provider)
        .map_err(|e| err(format!("the key does not fit the certificate: {e}")))?;
    Ok((certified, names))
}

fn dns_names(leaf: &CertificateDer<'_>) -> Result<Vec<String>, String> {
    let (_, cert) =
        x509_parser::parse_x509_certificate(leaf.as_ref()).map_err(|e| e.to_string())?;
    let mut names = Vec::new();
    if let Ok(Some(san)) = cert.subject_alternative_name() {
        for n in &san.value.general_names {
            if let x509_parser::extensions::GeneralName::DNSName(d) = n {
                names.push((*d).to_owned());
            }
        }
    }
    if names.is_empty() {
        names.extend(
            cert.subject()
                .iter_common_name()
                .filter_map(|cn| cn.as_str().ok().map(str::to_owned)),
        );
    }
    Ok(names)
}

/// The certificate served when the plan has none for a name: self-signed, made at start.
fn self_signed(provider: &CryptoProvider) -> Result<CertifiedKey, TlsError> {
    let err = |why: String| TlsError::Certificate {
        cert: "(self-signed default)".into(),
        key: "(generated)".into(),
        why,
    };
    let made = rcgen::generate_simple_self_signed(vec!["bridge-runtime-default-cert".to_owned()])
        .map_err(|e| err(e.to_string()))?;
    let key =
        PrivateKeyDer::try_from(made.signing_key.serialize_der()).map_err(|e| err(e.to_owned()))?;
    let certified = CertifiedKey::from_der(vec![made.cert.der().clone()], key, provider)
        .map_err(|e| err(e.to_string()))?;
    Ok(certified)
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, clippy::expect_used, reason = "test code")]

    use super::*;

    fn cert(dir: &std::path::Path, name: &str, sans: &[&str]) -> Certificate {
        let key = rcgen::KeyPair::generate().unwrap();
        let params =
            rcgen::CertificateParams::new(sans.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
                .unwrap();
        let c = params.self_signed(&key).unwrap();
        let (cf, kf) = (
            dir.join(format!("{name}.crt")),
            dir.join(format!("{name}.key")),
        );
        std::fs::write(&cf, c.pem()).unwrap();
        std::fs::write(&kf, key.serialize_pem()).unwrap();
        Certificate {
            cert: bridge_plan::Pem::File(cf.to_string_lossy().into_owned()),
            key: bridge_plan::Pem::File(kf.to_string_lossy().into_owned()),
        }
    }

    fn tls_plan(dir: &std::path::Path) -> Plan {
        let mut plan = Plan::example();
        for ep in plan.entrypoints.values_mut() {
            ep.tls = Some(bridge_plan::EntryPointTls {
                options: "default".into(),
            });
        }
        plan.tls.certificates = vec![
            cert(dir, "exact", &["app.example.com"]),
            cert(dir, "wild", &["*.example.com"]),
        ];
        plan.tls.default_certificate = Some(cert(dir, "default", &["default.example.net"]));
        plan
    }

    #[test]
    fn sni_picks_exact_then_wildcard_then_default() {
        let dir = tempfile::tempdir().unwrap();
        let plan = tls_plan(dir.path());
        let r = SniResolver::load(&plan, &provider(), false, None, None).unwrap();
        let exact = r.find("App.Example.COM.").unwrap();
        let wild = r.find("other.example.com").unwrap();
        assert!(!Arc::ptr_eq(&exact, &wild));
        assert!(Arc::ptr_eq(
            &r.find("default.example.net").unwrap(),
            &r.default.key()
        ));
        // A wildcard covers one label only.
        assert!(r.find("a.b.example.com").is_none());
        assert!(r.find("unknown.test").is_none());
        assert_eq!(
            configs(&plan, None, None).unwrap().0.len(),
            plan.entrypoints.len()
        );
    }

    #[test]
    fn a_key_of_another_certificate_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut plan = tls_plan(dir.path());
        let other = cert(dir.path(), "other", &["x.example.com"]);
        plan.tls.certificates[0].key = other.key;
        let err = configs(&plan, None, None).unwrap_err().to_string();
        assert!(
            err.contains("the key does not fit the certificate"),
            "{err}"
        );
    }

    #[test]
    fn every_cipher_suite_of_the_plan_is_one_rustls_offers() {
        let dir = tempfile::tempdir().unwrap();
        let mut plan = tls_plan(dir.path());
        let offered: Vec<CipherSuite> = rustls::crypto::aws_lc_rs::default_provider()
            .cipher_suites
            .iter()
            .map(|s| s.suite())
            .collect();
        for suite in bridge_plan::CipherSuite::ALL {
            assert!(offered.contains(&rustls_suite(suite)), "{suite}");
            let opts = plan.tls.options.get_mut("default").unwrap();
            opts.cipher_suites = vec![suite];
            assert!(configs(&plan, None, None).is_ok(), "{suite}");
        }
    }

    #[test]
    fn a_verifying_client_auth_type_needs_cas_and_the_unverified_ones_do_not() {
        let dir = tempfile::tempdir().unwrap();
        let mut plan = tls_plan(dir.path());
        let ca = cert(dir.path(), "ca", &["ca.example.com"]);
        for (auth_type, files, ok) in [
            (
                ClientAuthType::RequireAndVerifyClientCert,
                vec![ca.cert.clone()],
                true,
            ),
            (
                ClientAuthType::VerifyClientCertIfGiven,
                vec![ca.cert.clone()],
                true,
            ),
            (ClientAuthType::RequireAnyClientCert, vec![ca.cert], true),
            (ClientAuthType::RequestClientCert, vec![], true),
            (ClientAuthType::RequireAndVerifyClientCert, vec![], false),
        ] {
            plan.tls.options.get_mut("default").unwrap().client_auth = Some(ClientAuth {
                cas: files,
                auth_type,
            });
            assert_eq!(configs(&plan, None, None).is_ok(), ok, "{auth_type}");
        }
    }
}
