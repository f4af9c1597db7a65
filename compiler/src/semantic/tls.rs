//! TLS: certificates and stores, TLS options (versions, cipher suites, client authentication),
//! servers transports' certificates, and the PEM values they name (a file that must exist, or
//! inline PEM).

use crate::canon::escape;
use crate::diag::{Code, did_you_mean};
use crate::loaded::{display_name, resolve_config_path};

use super::Ctx;

impl Ctx<'_> {
    pub(super) fn check_tls(&mut self) {
        let loaded = self.loaded;
        for (fi, f) in loaded.dynamic.iter().enumerate() {
            let Some(tls) = &f.model.tls else { continue };
            for (i, c) in tls.certificates.iter().flatten().enumerate() {
                let base = format!("/tls/certificates/{i}");
                self.pem_ref(
                    fi,
                    &format!("{base}/certFile"),
                    c.cert_file.as_deref(),
                    "certificate",
                );
                self.pem_ref(
                    fi,
                    &format!("{base}/keyFile"),
                    c.key_file.as_deref(),
                    "private key",
                );
            }
            for (sname, store) in tls.stores.iter().flatten() {
                let base = format!("/tls/stores/{}", escape(sname));
                if sname != "default" {
                    let span = self.key_span(fi, &base);
                    self.warn(
                        Code::Ignored,
                        format!(
                            "TLS store `{sname}` is ignored; Traefik only uses the `default` store"
                        ),
                        span,
                        base.clone(),
                    );
                }
                if let Some(c) = &store.default_certificate {
                    self.pem_ref(
                        fi,
                        &format!("{base}/defaultCertificate/certFile"),
                        c.cert_file.as_deref(),
                        "certificate",
                    );
                    self.pem_ref(
                        fi,
                        &format!("{base}/defaultCertificate/keyFile"),
                        c.key_file.as_deref(),
                        "private key",
                    );
                }
                if let Some(g) = &store.default_generated_cert
                    && sname == "default"
                {
                    self.check_generated_default(fi, &base, g, store.default_certificate.is_some());
                }
            }
            for (oname, o) in tls.options.iter().flatten() {
                let base = format!("/tls/options/{}", escape(oname));
                self.check_versions_and_suites(
                    fi,
                    &base,
                    &format!("TLS options `{oname}`"),
                    [o.min_version.as_deref(), o.max_version.as_deref()],
                    o.cipher_suites.as_deref().unwrap_or_default(),
                    "clients",
                );
                self.check_curves(fi, &base, oname, o.curve_preferences.as_deref());
                if let Some(ca) = &o.client_auth {
                    if let Some(t) = &ca.client_auth_type
                        && bridge_plan::ClientAuthType::from_name(t).is_none()
                    {
                        let p = format!("{base}/clientAuth/clientAuthType");
                        let span = self.span(fi, &p);
                        self.err(
                            Code::InvalidValue,
                            format!("TLS options `{oname}`: unknown clientAuthType `{t}`"),
                            span,
                            p,
                        );
                    }
                    for (i, f) in ca.ca_files.iter().flatten().enumerate() {
                        self.pem_ref(
                            fi,
                            &format!("{base}/clientAuth/caFiles/{i}"),
                            Some(f),
                            "CA certificate",
                        );
                    }
                }
            }
        }
    }

    pub(super) fn check_transports(&mut self) {
        let loaded = self.loaded;
        for (fi, f) in loaded.dynamic.iter().enumerate() {
            for (tname, t) in f
                .model
                .http
                .iter()
                .flat_map(|h| h.servers_transports.iter().flatten())
            {
                let base = format!("/http/serversTransports/{}", escape(tname));
                self.check_versions_and_suites(
                    fi,
                    &base,
                    &format!("serversTransport `{tname}`"),
                    [t.min_version.as_deref(), t.max_version.as_deref()],
                    t.cipher_suites.as_deref().unwrap_or_default(),
                    "servers",
                );
                // Traefik 3.7 compares the minimum against the maximum even when no maximum is
                // set (0), so any minVersion alone fails the transport.
                use bridge_plan::TlsVersion;
                let min = t.min_version.as_deref();
                let max = t.max_version.as_deref();
                if let Some(min) = min {
                    let p = format!("{base}/minVersion");
                    let span = self.span(fi, &p);
                    match (
                        TlsVersion::from_go_name(min),
                        max.map(TlsVersion::from_go_name),
                    ) {
                        (Some(_), None) => {
                            self.err(Code::InvalidValue, format!("serversTransport `{tname}`: Traefik refuses a minVersion without maxVersion (\"TLS minimum version {min} is above the maximum version\"; its services then answer 500); set maxVersion too"), span, p);
                        }
                        (Some(lo), Some(Some(hi))) if lo > hi => {
                            self.err(Code::InvalidValue, format!("serversTransport `{tname}`: TLS minimum version {min} is above the maximum version {}", max.unwrap_or_default()), span, p);
                        }
                        _ => {}
                    }
                }
                for (i, ca) in t.root_cas.iter().flatten().enumerate() {
                    self.pem_ref(
                        fi,
                        &format!("{base}/rootCAs/{i}"),
                        Some(ca),
                        "CA certificate",
                    );
                }
                for (i, c) in t.certificates.iter().flatten().enumerate() {
                    self.pem_ref(
                        fi,
                        &format!("{base}/certificates/{i}/certFile"),
                        c.cert_file.as_deref(),
                        "certificate",
                    );
                    self.pem_ref(
                        fi,
                        &format!("{base}/certificates/{i}/keyFile"),
                        c.key_file.as_deref(),
                        "private key",
                    );
                }
            }
        }
    }

    /// `minVersion`/`maxVersion` among Go's names (1.0 and 1.1 warned about: rustls speaks 1.2
    /// and 1.3) and cipher suites bridgectl can offer, for TLS options and servers transports.
    fn check_versions_and_suites(
        &mut self,
        fi: usize,
        base: &str,
        what: &str,
        [min, max]: [Option<&str>; 2],
        suites: &[String],
        peers: &str,
    ) {
        use bridge_plan::TlsVersion;
        for (field, v) in [("minVersion", min), ("maxVersion", max)] {
            let Some(v) = v else { continue };
            let p = format!("{base}/{field}");
            let span = self.span(fi, &p);
            match TlsVersion::from_go_name(v) {
                Some(TlsVersion::Tls12 | TlsVersion::Tls13) => {}
                Some(TlsVersion::Tls10 | TlsVersion::Tls11) => {
                    self.warn(Code::Unsupported, format!("{what}: {v} is valid Traefik, but bridgectl (rustls) only speaks TLS 1.2 and 1.3; older {peers} are refused"), span, p);
                }
                None => {
                    self.err(Code::InvalidValue, format!("{what}: {field} `{v}` must be VersionTLS10, VersionTLS11, VersionTLS12 or VersionTLS13"), span, p);
                }
            }
        }
        for (i, cs) in suites.iter().enumerate() {
            if bridge_plan::CipherSuite::from_go_name(cs).is_none() {
                let p = format!("{base}/cipherSuites/{i}");
                let span = self.span(fi, &p);
                let hint = did_you_mean(cs, bridge_plan::CipherSuite::go_names())
                    .map(|s| format!("did you mean `{s}`?"));
                self.err(
                    Code::InvalidValue,
                    format!("{what}: cipher suite `{cs}` is not one bridgectl can offer"),
                    span,
                    p,
                )
                .hint = hint;
            }
        }
    }

    /// `curvePreferences`: Traefik refuses an unknown name; a name Traefik knows but rustls
    /// cannot offer is left out (a warning), or refused when nothing would be left.
    fn check_curves(&mut self, fi: usize, base: &str, oname: &str, curves: Option<&[String]>) {
        let Some(curves) = curves else { return };
        let mut offered = 0;
        let mut left_out = Vec::new();
        for (i, c) in curves.iter().enumerate() {
            let p = format!("{base}/curvePreferences/{i}");
            match bridge_plan::KxGroup::from_go_name(c) {
                Ok(_) => offered += 1,
                Err(true) => left_out.push((p, c)),
                Err(false) => {
                    let span = self.span(fi, &p);
                    let hint = did_you_mean(c, bridge_plan::KxGroup::GO_NAMES.iter().copied())
                        .map(|s| format!("did you mean `{s}`?"));
                    self.err(
                        Code::InvalidValue,
                        format!("TLS options `{oname}`: curve `{c}` is not one Traefik knows (it refuses to load the options)"),
                        span,
                        p,
                    )
                    .hint = hint;
                }
            }
        }
        for (p, c) in left_out {
            let span = self.span(fi, &p);
            let msg = format!(
                "TLS options `{oname}`: curve `{c}` is valid Traefik, but bridgectl (rustls) cannot offer it"
            );
            if offered == 0 {
                self.err(
                    Code::Unsupported,
                    format!("{msg}, and no other curve is listed"),
                    span,
                    p,
                )
            } else {
                self.warn(Code::Unsupported, format!("{msg}; it is left out"), span, p)
            }
            .hint = Some(
                "rustls offers X25519, CurveP256, CurveP384, X25519MLKEM768 and SecP256r1MLKEM768"
                    .into(),
            );
        }
    }

    /// A PEM value: a path (must exist) or inline PEM text (Traefik's FileOrContent).
    fn pem_ref(&mut self, fi: usize, pointer: &str, value: Option<&str>, what: &str) {
        let span = self.span(fi, pointer);
        let Some(v) = value.filter(|v| !v.trim().is_empty()) else {
            let parent = pointer.rsplit_once('/').map_or(pointer, |(p, _)| p);
            let span = self.key_span(fi, parent);
            self.err(
                Code::MissingKey,
                format!("{what} file is missing"),
                span,
                pointer.into(),
            );
            return;
        };
        if bridge_plan::Pem::is_inline(v) {
            // Inline PEM (Traefik's FileOrContent): it goes into the plan as written, so a
            // broken one is found here rather than when the runtime starts.
            if let Some(why) = inline_pem_problem(v, what == "private key") {
                self.err(
                    Code::Certificate,
                    format!("the inline {what} PEM is not usable: {why}"),
                    span,
                    pointer.into(),
                );
            }
            return;
        }
        let path = resolve_config_path(&self.loaded.dir, v);
        if !path.is_file() {
            self.err(
                Code::FileNotFound,
                format!(
                    "{what} file `{v}` does not exist (looked for {})",
                    display_name(&self.loaded.dir, &path)
                ),
                span,
                pointer.into(),
            )
            .hint = Some("paths under /etc/traefik/ are looked up in the checked directory".into());
        }
    }
}

/// Why an inline PEM value cannot serve as a private key (`key`) or a certificate chain; `None`
/// when it can.
fn inline_pem_problem(pem: &str, key: bool) -> Option<String> {
    use rustls_pki_types::pem::Error;
    use rustls_pki_types::pem::PemObject;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let describe = |e: Error| match e {
        Error::MissingSectionEnd { .. } => "a `-----BEGIN` line without its `-----END` line".into(),
        Error::IllegalSectionStart { .. } => "a malformed `-----BEGIN` line".into(),
        Error::Base64Decode(why) => format!("its base64 does not decode ({why})"),
        Error::NoItemsFound => "it holds no PEM block of the expected kind".into(),
        other => other.to_string(),
    };
    if key {
        return PrivateKeyDer::from_pem_slice(pem.as_bytes())
            .err()
            .map(|e| format!("no private key: {}", describe(e)));
    }
    match CertificateDer::pem_slice_iter(pem.as_bytes()).collect::<Result<Vec<_>, _>>() {
        Ok(certs) if certs.is_empty() => Some("it holds no CERTIFICATE block".into()),
        Ok(_) => None,
        Err(e) => Some(describe(e)),
    }
}

impl Ctx<'_> {
    /// The default store's `defaultGeneratedCert`: an ACME resolver and a main name (Traefik
    /// only warns and serves its self-signed certificate without them; here it is an error).
    fn check_generated_default(
        &mut self,
        fi: usize,
        base: &str,
        g: &crate::model::dynamic::GeneratedCert,
        with_default_certificate: bool,
    ) {
        let p = format!("{base}/defaultGeneratedCert");
        let resolver = g.resolver.as_deref().filter(|r| !r.is_empty());
        let main = g
            .domain
            .as_ref()
            .and_then(|d| d.main.as_deref())
            .filter(|m| !m.is_empty());
        match (resolver, main) {
            (None, _) => {
                let span = self.key_span(fi, &p);
                self.err(
                    Code::MissingKey,
                    "defaultGeneratedCert needs `resolver` (Traefik ignores it then and serves its self-signed certificate)".into(),
                    span,
                    format!("{p}/resolver"),
                );
            }
            (Some(_), None) => {
                let span = self.key_span(fi, &p);
                self.err(
                    Code::MissingKey,
                    "defaultGeneratedCert needs `domain.main` (Traefik ignores it then and serves its self-signed certificate)".into(),
                    span,
                    format!("{p}/domain/main"),
                );
            }
            (Some(r), Some(_)) => {
                let acme = self
                    .loaded
                    .static_cfg
                    .certificates_resolvers
                    .as_ref()
                    .and_then(|all| all.get(r))
                    .and_then(|res| res.acme.as_ref());
                let dns01 = acme.is_some_and(|a| a.dns_provider().is_some());
                if acme.is_none() {
                    let rp = format!("{p}/resolver");
                    let span = self.span(fi, &rp);
                    self.err(
                        Code::InvalidValue,
                        format!("defaultGeneratedCert names `{r}`, which is not an ACME certificate resolver of the static configuration"),
                        span,
                        rp,
                    );
                }
                // As for routers' names: what the resolver's challenges can prove.
                let names = g
                    .domain
                    .iter()
                    .flat_map(|d| d.main.iter().chain(d.sans.iter().flatten()));
                for (why, hint) in names.filter_map(|n| super::acme::acme_name_problem(n, dns01)) {
                    let dp = format!("{p}/domain");
                    let span = self.key_span(fi, &dp);
                    self.err(Code::Acme, format!("defaultGeneratedCert: {why}"), span, dp)
                        .hint = hint.map(|h| format!("{h}, or use a defaultCertificate file"));
                }
            }
        }
        if with_default_certificate {
            let span = self.key_span(fi, &p);
            self.warn(
                Code::InvalidValue,
                "defaultCertificate and defaultGeneratedCert are both set: the defaultCertificate is served and nothing is ordered for defaultGeneratedCert (Traefik warns the same)".into(),
                span,
                p,
            );
        }
    }
}
