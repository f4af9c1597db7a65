//! Answers to the CA's challenges while an order is open, shared with the request path (HTTP-01)
//! and the TLS certificate resolver (TLS-ALPN-01).
//!
//! - HTTP-01 (RFC 8555 §8.3): `GET /.well-known/acme-challenge/<token>` on the challenge entry
//!   point, answered before the entry point's redirect and before routing, with the key
//!   authorization of that token *and host* (Traefik keys its answers the same way); any other
//!   path under the prefix is 404 and never reaches a backend.
//! - TLS-ALPN-01 (RFC 8737): a handshake whose only ALPN protocol is `acme-tls/1` gets a
//!   self-signed certificate for the SNI name carrying the critical `acmeIdentifier` extension
//!   (the SHA-256 of the key authorization); the connection then closes without HTTP.

use std::collections::HashMap;
use std::sync::{Arc, RwLock};

use rustls::sign::CertifiedKey;

/// The path prefix of HTTP-01 answers.
pub(crate) const HTTP_PREFIX: &str = "/.well-known/acme-challenge/";
/// The ALPN protocol of TLS-ALPN-01.
pub(crate) const ACME_TLS_ALPN: &[u8] = b"acme-tls/1";

/// The open challenges of every resolver.
#[derive(Debug, Default)]
pub(crate) struct Challenges {
    /// token → (host, key authorization).
    http: RwLock<HashMap<String, Vec<(String, String)>>>,
    /// host → challenge certificate.
    alpn: RwLock<HashMap<String, Arc<CertifiedKey>>>,
}

impl Challenges {
    /// The body answering `path` on `host` (port already stripped), if a challenge is open.
    pub(crate) fn http_answer(&self, path: &str, host: &str) -> Option<String> {
        let token = path.strip_prefix(HTTP_PREFIX)?;
        let token = token.strip_suffix('/').unwrap_or(token);
        if token.is_empty() || token.contains('/') {
            return None;
        }
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        let map = self
            .http
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.get(token)?
            .iter()
            .find(|(h, _)| *h == host)
            .map(|(_, k)| k.clone())
    }

    /// The TLS-ALPN-01 certificate for `host`, if a challenge is open.
    pub(crate) fn alpn_cert(&self, host: &str) -> Option<Arc<CertifiedKey>> {
        let host = host.trim_end_matches('.').to_ascii_lowercase();
        self.alpn
            .read()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .get(&host)
            .cloned()
    }

    pub(super) fn put_http(&self, token: &str, host: &str, key_auth: &str) {
        let mut map = self
            .http
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        map.entry(token.to_owned())
            .or_default()
            .push((host.to_ascii_lowercase(), key_auth.to_owned()));
    }

    pub(super) fn remove_http(&self, token: &str, host: &str) {
        let mut map = self
            .http
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some(v) = map.get_mut(token) {
            v.retain(|(h, _)| h != host);
            if v.is_empty() {
                map.remove(token);
            }
        }
    }

    pub(super) fn put_alpn(&self, host: &str, cert: Arc<CertifiedKey>) {
        self.alpn
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .insert(host.to_ascii_lowercase(), cert);
    }

    pub(super) fn remove_alpn(&self, host: &str) {
        self.alpn
            .write()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(host);
    }
}

/// The TLS-ALPN-01 certificate for `host`: self-signed, `host` as its only name, the critical
/// acmeIdentifier extension holding `digest` (SHA-256 of the key authorization).
pub(super) fn alpn_certificate(
    host: &str,
    digest: &[u8],
    provider: &rustls::crypto::CryptoProvider,
) -> Result<Arc<CertifiedKey>, String> {
    let key =
        rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).map_err(|e| e.to_string())?;
    let mut params =
        rcgen::CertificateParams::new(vec![host.to_owned()]).map_err(|e| e.to_string())?;
    params
        .custom_extensions
        .push(rcgen::CustomExtension::new_acme_identifier(digest));
    let cert = params.self_signed(&key).map_err(|e| e.to_string())?;
    let der = rustls_pki_types::PrivateKeyDer::Pkcs8(key.serialize_der().into());
    let signing = provider
        .key_provider
        .load_private_key(der)
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(CertifiedKey::new(
        vec![cert.der().clone()],
        signing,
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_answers_need_the_token_and_the_host_it_was_issued_for() {
        let c = Challenges::default();
        c.put_http("tok-1", "HMI.plant.example", "tok-1.thumb");
        assert_eq!(
            c.http_answer("/.well-known/acme-challenge/tok-1", "hmi.plant.example.")
                .as_deref(),
            Some("tok-1.thumb")
        );
        assert_eq!(
            c.http_answer("/.well-known/acme-challenge/tok-1/", "hmi.plant.example")
                .as_deref(),
            Some("tok-1.thumb")
        );
        for (path, host) in [
            ("/.well-known/acme-challenge/tok-1", "other.example"),
            ("/.well-known/acme-challenge/tok-2", "hmi.plant.example"),
            ("/.well-known/acme-challenge/", "hmi.plant.example"),
            ("/.well-known/acme-challenge/tok-1/x", "hmi.plant.example"),
            ("/tok-1", "hmi.plant.example"),
        ] {
            assert_eq!(c.http_answer(path, host), None, "{path} {host}");
        }
        c.remove_http("tok-1", "hmi.plant.example");
        assert_eq!(
            c.http_answer("/.well-known/acme-challenge/tok-1", "hmi.plant.example"),
            None
        );
    }

    #[test]
    fn the_alpn_certificate_names_the_host_and_carries_the_critical_acme_identifier() {
        let provider = rustls::crypto::aws_lc_rs::default_provider();
        let digest = [7u8; 32];
        let key = alpn_certificate("hmi.plant.example", &digest, &provider).unwrap();
        let (_, cert) = x509_parser::parse_x509_certificate(key.cert[0].as_ref()).unwrap();
        let ext = cert
            .extensions()
            .iter()
            .find(|e| e.oid.to_id_string() == "1.3.6.1.5.5.7.1.31")
            .expect("acmeIdentifier");
        assert!(ext.critical);
        // DER OCTET STRING of the 32-byte digest.
        assert_eq!(&ext.value[..2], &[0x04, 32]);
        assert_eq!(&ext.value[2..], &digest);
        let c = Challenges::default();
        c.put_alpn("HMI.plant.example", key);
        assert!(c.alpn_cert("hmi.plant.example").is_some());
        c.remove_alpn("hmi.plant.example");
        assert!(c.alpn_cert("hmi.plant.example").is_none());
    }
}
