//! ACME certificate resolvers (static `certificatesResolvers`) and the routers that use them:
//! values Traefik would only reject at run time (or silently fall back from), references, the
//! challenge entry point, and whether a router's names can be obtained at all.

use crate::acme::{Names, router_domains};
use crate::canon::escape;
use crate::diag::{Code, did_you_mean};
use crate::loaded::resolve_config_path;
use crate::model::dynamic::Domain;
use crate::model::static_config::{Acme, DnsChallenge};
use crate::rule::{RuleSyntax, parse_rule};

use super::Ctx;

/// The DNS providers bridgectl runs.
const DNS_PROVIDERS: [&str; 2] = ["exec", "httpreq"];

/// Traefik's `keyType` values.
const KEY_TYPES: &str = "EC256, EC384, RSA2048, RSA4096, RSA8192";

impl Ctx<'_> {
    pub(super) fn check_resolvers(&mut self) {
        let loaded = self.loaded;
        let eps = self.entry_points();
        for (name, res) in loaded.static_cfg.certificates_resolvers.iter().flatten() {
            let base = format!("/certificatesResolvers/{}", escape(name));
            let Some(acme) = &res.acme else {
                if res.tailscale.is_none() {
                    let span = loaded.static_canon.key_span(&base);
                    self.err(
                        Code::MissingKey,
                        format!("certificate resolver `{name}` configures neither `acme` nor `tailscale`"),
                        span,
                        base,
                    )
                    .hint = Some("add `acme:` with `email`, `storage` and a challenge".into());
                }
                continue;
            };
            self.check_acme(name, &format!("{base}/acme"), acme, &eps);
        }
        for (ep, e) in loaded.static_cfg.entry_points.iter().flatten() {
            let Some(res) = e
                .http
                .as_ref()
                .and_then(|h| h.tls.as_ref())
                .and_then(|t| t.cert_resolver.as_ref())
            else {
                continue;
            };
            let known = loaded
                .static_cfg
                .certificates_resolvers
                .as_ref()
                .is_some_and(|m| m.contains_key(res));
            if !known {
                let p = format!("/entryPoints/{}/http/tls/certResolver", escape(ep));
                let span = self.static_span(&p);
                self.err(
                    Code::UndefinedReference,
                    format!("entry point `{ep}`: certificate resolver `{res}` is not defined"),
                    span,
                    p,
                );
            }
        }
    }

    fn check_acme(
        &mut self,
        name: &str,
        base: &str,
        acme: &Acme,
        eps: &std::collections::BTreeSet<String>,
    ) {
        let loaded = self.loaded;
        let at = |p: &str| format!("{base}/{p}");
        let dns_provider = acme
            .dns_challenge
            .as_ref()
            .and_then(|d| d.provider.as_deref());
        if acme.http_challenge.is_none()
            && acme.tls_challenge.is_none()
            && dns_provider.is_none_or(str::is_empty)
        {
            let span = loaded.static_canon.key_span(base);
            let why = if acme.dns_challenge.is_some() {
                " (its dnsChallenge names no provider, so Traefik registers no DNS-01 solver)"
            } else {
                ""
            };
            self.err(
                Code::Acme,
                format!("certificate resolver `{name}` names no challenge bridgectl can answer{why}"),
                span,
                base.to_owned(),
            )
            .hint = Some(
                "add `httpChallenge: {entryPoint: web}` (HTTP-01 on port 80), `tlsChallenge: {}` (TLS-ALPN-01 on port 443) or `dnsChallenge: {provider: exec}` (DNS-01)"
                    .into(),
            );
        }
        if let Some(dns) = &acme.dns_challenge {
            self.check_dns_challenge(name, base, acme, dns);
        }
        if let Some(h) = &acme.http_challenge {
            let p = at("httpChallenge/entryPoint");
            match &h.entry_point {
                None => {
                    let span = loaded.static_canon.key_span(&at("httpChallenge"));
                    self.err(
                        Code::MissingKey,
                        format!("certificate resolver `{name}`: httpChallenge needs an entryPoint"),
                        span,
                        p,
                    )
                    .hint =
                        Some("the entry point listening on port 80, e.g. `entryPoint: web`".into());
                }
                Some(ep) if !eps.contains(ep) => {
                    let span = self.static_span(&p);
                    let hint = did_you_mean(ep, eps.iter().map(String::as_str))
                        .map(|s| format!("did you mean `{s}`?"));
                    self.err(
                        Code::UndefinedReference,
                        format!("certificate resolver `{name}`: entry point `{ep}` is not defined"),
                        span,
                        p,
                    )
                    .hint = hint;
                }
                Some(ep) => {
                    let tls = loaded
                        .static_cfg
                        .entry_points
                        .as_ref()
                        .and_then(|m| m.get(ep))
                        .and_then(|e| e.http.as_ref())
                        .and_then(|h| h.tls.as_ref())
                        .is_some();
                    if tls {
                        let span = self.static_span(&p);
                        self.err(
                            Code::Acme,
                            format!("certificate resolver `{name}`: HTTP-01 is answered over plain HTTP, but entry point `{ep}` serves TLS to every router"),
                            span,
                            p,
                        )
                        .hint = Some("name the plain-HTTP entry point on port 80 (often `web`), or use `tlsChallenge: {}`".into());
                    }
                }
            }
        }
        if let Some(kt) = acme.key_type.as_deref()
            && bridge_plan::AcmeKeyType::from_traefik(kt).is_none()
        {
            let p = at("keyType");
            let span = self.static_span(&p);
            let (code, msg) = (
                Code::InvalidValue,
                format!(
                    "certificate resolver `{name}`: unknown keyType `{kt}` (Traefik would silently use RSA4096)"
                ),
            );
            self.err(code, msg, span, p).hint = Some(format!("use one of {KEY_TYPES}"));
        }
        if let Some(h) = acme.certificates_duration
            && h < 1
        {
            let p = at("certificatesDuration");
            let span = self.static_span(&p);
            self.err(
                Code::InvalidValue,
                format!("certificate resolver `{name}`: certificatesDuration must be at least 1 hour, found {h}"),
                span,
                p,
            );
        }
        let client = acme
            .client_timeout
            .unwrap_or(crate::model::static_config::DEFAULT_ACME_CLIENT_TIMEOUT);
        let header = acme
            .client_response_header_timeout
            .unwrap_or(crate::model::static_config::DEFAULT_ACME_CLIENT_RESPONSE_HEADER_TIMEOUT);
        if client.nanos < header.nanos {
            let p = at("clientTimeout");
            let span = self
                .static_span(&p)
                .or_else(|| self.static_span(&at("clientResponseHeaderTimeout")));
            self.err(
                Code::InvalidValue,
                format!("certificate resolver `{name}`: clientTimeout must be at least clientResponseHeaderTimeout"),
                span,
                p,
            );
        }
        if acme.storage.as_deref().is_some_and(|s| s.trim().is_empty()) {
            let p = at("storage");
            let span = self.static_span(&p);
            self.err(
                Code::InvalidValue,
                format!("certificate resolver `{name}`: storage is empty"),
                span,
                p,
            )
            .hint = Some("a file the runtime can write, e.g. `/var/lib/bridge/acme.json`".into());
        }
        if let Some(server) = &acme.ca_server {
            let ok = url::Url::parse(server)
                .ok()
                .filter(|u| matches!(u.scheme(), "https" | "http") && u.host().is_some());
            if ok.is_none() {
                let p = at("caServer");
                let span = self.static_span(&p);
                self.err(
                    Code::InvalidUrl,
                    format!("certificate resolver `{name}`: caServer `{server}` is not an absolute https URL"),
                    span,
                    p,
                )
                .hint = Some("the ACME directory URL, e.g. https://acme-staging-v02.api.letsencrypt.org/directory".into());
            }
        }
        for (i, file) in acme.ca_certificates.iter().flatten().enumerate() {
            let p = at(&format!("caCertificates/{i}"));
            let path = resolve_config_path(&loaded.dir, file);
            if let Err(e) = crate::certs::inspect_ca_file(&path) {
                let span = self.static_span(&p);
                self.err(
                    Code::Certificate,
                    format!("certificate resolver `{name}`: caCertificates: {e}"),
                    span,
                    p,
                );
            }
        }
        if let Some(email) = acme.email.as_deref()
            && !email.is_empty()
            && !email.contains('@')
        {
            let p = at("email");
            let span = self.static_span(&p);
            self.err(
                Code::InvalidValue,
                format!("certificate resolver `{name}`: email `{email}` is not an address (the CA refuses the account)"),
                span,
                p,
            );
        }
        if let Some(eab) = &acme.eab {
            let p = at("eab");
            match (&eab.kid, &eab.hmac_encoded) {
                (Some(_), Some(h)) => {
                    if decode_hmac(h).is_none() {
                        let p = at("eab/hmacEncoded");
                        let span = self.static_span(&p);
                        self.err(
                            Code::InvalidValue,
                            format!(
                                "certificate resolver `{name}`: eab.hmacEncoded is not base64url"
                            ),
                            span,
                            p,
                        );
                    }
                }
                _ => {
                    let span = loaded.static_canon.key_span(&p);
                    self.err(
                        Code::MissingKey,
                        format!(
                            "certificate resolver `{name}`: eab needs both kid and hmacEncoded"
                        ),
                        span,
                        p,
                    );
                }
            }
        }
    }

    /// `dnsChallenge`: a provider bridgectl runs, resolvers it can dial.
    fn check_dns_challenge(&mut self, name: &str, base: &str, acme: &Acme, dns: &DnsChallenge) {
        let at = format!("{base}/dnsChallenge");
        match dns.provider.as_deref() {
            None | Some("") => {
                if acme.http_challenge.is_some() || acme.tls_challenge.is_some() {
                    let span = self.loaded.static_canon.key_span(&at);
                    self.warn(
                        Code::Ignored,
                        format!("certificate resolver `{name}`: dnsChallenge names no provider, so it is ignored (Traefik registers no DNS-01 solver then)"),
                        span,
                        at.clone(),
                    )
                    .hint = Some("add `provider: exec` or `provider: httpreq`, or remove dnsChallenge".into());
                }
            }
            Some(p) if acme.dns_provider().is_none() => {
                let pp = format!("{at}/provider");
                let span = self.static_span(&pp);
                let near = did_you_mean(p, DNS_PROVIDERS.iter().copied())
                    .map(|s| format!("did you mean `{s}`? "))
                    .unwrap_or_default();
                self.err(
                    Code::Unsupported,
                    format!("certificate resolver `{name}`: DNS provider `{p}` is not supported by bridgectl, which runs lego's generic providers `exec` and `httpreq` only"),
                    span,
                    pp,
                )
                .hint = Some(format!(
                    "{near}`exec` runs a program of yours with `present`/`cleanup` (EXEC_PATH); `httpreq` POSTs to an endpoint of yours (HTTPREQ_ENDPOINT) — either can drive any DNS service"
                ));
            }
            Some(_) => {}
        }
        for (i, r) in dns.resolvers.iter().flatten().enumerate() {
            if let Err(why) = crate::acme::nameserver(r) {
                let p = format!("{at}/resolvers/{i}");
                let span = self.static_span(&p);
                self.err(
                    Code::InvalidValue,
                    format!("certificate resolver `{name}`: resolver `{r}` {why}"),
                    span,
                    p,
                )
                .hint = Some("`host` or `host:port` (port 53 when left out), e.g. `192.0.2.53:53` or `[2001:db8::53]:53`".into());
            }
        }
    }

    /// A router's `certResolver` (its own or its entry point's): the resolver exists and is ACME,
    /// and the names it needs can be obtained. `pointer`/`file` locate the `certResolver` key
    /// (`file` `None`: the static configuration).
    pub(super) fn check_router_certificates(
        &mut self,
        router: &str,
        resolver: &str,
        domains: Option<&[Domain]>,
        (rule, syntax): (&str, RuleSyntax),
        file: Option<usize>,
        pointer: &str,
    ) {
        let span = match file {
            Some(fi) => self.span(fi, pointer),
            None => self.static_span(pointer),
        };
        let acme = self
            .loaded
            .static_cfg
            .certificates_resolvers
            .as_ref()
            .and_then(|m| m.get(resolver));
        let Some(def) = acme else {
            if file.is_none() {
                return; // the entry point's own check reports it once
            }
            let known: Vec<&str> = self
                .loaded
                .static_cfg
                .certificates_resolvers
                .iter()
                .flatten()
                .map(|(n, _)| n.as_str())
                .collect();
            let hint = did_you_mean(resolver, known.iter().copied())
                .map(|s| format!("did you mean `{s}`?"))
                .unwrap_or_else(|| {
                    "define it under certificatesResolvers in the static configuration".into()
                });
            self.err(
                Code::UndefinedReference,
                format!("router `{router}`: certificate resolver `{resolver}` is not defined in the static configuration"),
                span,
                pointer.to_owned(),
            )
            .hint = Some(hint);
            return;
        };
        let Some(acme) = &def.acme else {
            return; // tailscale: reported as unsupported where it is defined
        };
        let dns01 = acme.dns_provider().is_some();
        let Ok(matcher) = parse_rule(rule, syntax) else {
            return; // reported with the rule
        };
        let wanted: Vec<Names> = router_domains(domains, &matcher);
        if wanted.is_empty() {
            self.warn(
                Code::Acme,
                format!("router `{router}`: certificate resolver `{resolver}` gets no name for it — its rule has no Host matcher and it lists no tls.domains; it is served with the default certificate"),
                span,
                pointer.to_owned(),
            )
            .hint = Some("add `tls.domains: [{main: example.com}]`, or a Host(`…`) matcher".into());
        }
        for names in &wanted {
            for n in names {
                if let Some((why, hint)) = acme_name_problem(n, dns01) {
                    self.err(
                        Code::Acme,
                        format!("router `{router}`: {why}"),
                        span,
                        pointer.to_owned(),
                    )
                    .hint =
                        hint.map(|h| format!("{h}, or use a certificate file for the wildcard"));
                }
            }
        }
    }
}

/// Why an ACME resolver cannot obtain a certificate for `name`, and what to do instead; `None`
/// when it can. `dns01`: the resolver answers DNS-01, the only challenge that proves a wildcard.
pub(super) fn acme_name_problem(name: &str, dns01: bool) -> Option<(String, Option<&'static str>)> {
    if name.starts_with("*.*") || name.chars().skip(1).any(|c| c == '*') {
        Some((
            format!("`{name}` is not a name a CA issues certificates for"),
            None,
        ))
    } else if name.starts_with('*') && !dns01 {
        Some((
            format!(
                "the wildcard `{name}` needs the DNS-01 challenge, which this resolver does not answer (HTTP-01 and TLS-ALPN-01 cannot prove a wildcard)"
            ),
            Some(
                "add `dnsChallenge: {provider: exec}` (or `httpreq`) to the resolver, or list the host names instead",
            ),
        ))
    } else {
        None
    }
}

/// The EAB HMAC key: base64url, with or without padding (CAs hand it out both ways).
pub(crate) fn decode_hmac(text: &str) -> Option<Vec<u8>> {
    use base64::Engine as _;
    let t = text.trim().trim_end_matches('=');
    base64::engine::general_purpose::URL_SAFE_NO_PAD
        .decode(t)
        .ok()
        .filter(|k| !k.is_empty())
}
