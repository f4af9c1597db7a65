//! TLS certificate and private-key inspection for the production policy checks.
//!
//! [`inspect_pair`] reads a PEM certificate chain (leaf first) and its PEM private key, parses the leaf
//! with `x509-parser`, and proves that the key belongs to the leaf by deriving the key's public key with
//! rustls' aws-lc-rs key provider and comparing it with the leaf's SubjectPublicKeyInfo. [`covers`] answers
//! "does this certificate serve that host name?" following RFC 6125, [`days_until_expiry`] turns the
//! validity window into whole days, and [`inspect_ca_file`] counts the certificates in a CA bundle.
//!
//! None of these functions read the clock: callers pass `now_unix`, so checks and tests are deterministic.

use std::net::IpAddr;
use std::path::{Path, PathBuf};

use rustls::crypto::aws_lc_rs;
use rustls_pki_types::pem::{self, PemObject};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use x509_parser::prelude::{FromDer, GeneralName, X509Certificate};
use x509_parser::x509::SubjectPublicKeyInfo;

const SECS_PER_DAY: i64 = 86_400;

/// What the policy checks need to know about a certificate chain's leaf.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CertInfo {
    /// The leaf subject's most specific (last) commonName, if it has one that decodes as a string.
    pub subject_cn: Option<String>,
    /// The leaf's subjectAltName dNSName entries, as written in the certificate.
    pub dns_names: Vec<String>,
    /// The leaf's subjectAltName iPAddress entries.
    pub ip_addresses: Vec<IpAddr>,
    /// Start of the validity window, in seconds since the Unix epoch.
    pub not_before: i64,
    /// End of the validity window (`notAfter`), in seconds since the Unix epoch.
    pub not_after: i64,
    /// Number of certificates in the PEM file, leaf included.
    pub chain_len: usize,
    /// The leaf's OCSP responder URLs (Authority Information Access), in order.
    pub ocsp_urls: Vec<String>,
}

/// Why a certificate, key or CA file could not be inspected.
#[derive(Debug, thiserror::Error)]
pub enum CertError {
    /// The file could not be opened or read.
    #[error("cannot read {}: {source}", path.display())]
    Io {
        /// The file that failed.
        path: PathBuf,
        /// The underlying I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The file holds no `CERTIFICATE` PEM section.
    #[error("{}: no PEM CERTIFICATE found", path.display())]
    NoCertificate {
        /// The certificate file.
        path: PathBuf,
    },
    /// A certificate could not be decoded (PEM framing, base64, DER or X.509 structure).
    #[error("{}: invalid certificate: {reason}", path.display())]
    BadCertificate {
        /// The certificate file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// The file holds no private-key PEM section (`PRIVATE KEY`, `RSA PRIVATE KEY` or `EC PRIVATE KEY`).
    #[error("{}: no PEM private key found", path.display())]
    NoKey {
        /// The key file.
        path: PathBuf,
    },
    /// The private key could not be decoded, is of an unsupported type, or its public half is unknown.
    #[error("{}: invalid private key: {reason}", path.display())]
    BadKey {
        /// The key file.
        path: PathBuf,
        /// What was wrong.
        reason: String,
    },
    /// The private key does not belong to the leaf certificate.
    #[error("private key {} does not match certificate {}", key.display(), cert.display())]
    KeyMismatch {
        /// The certificate file.
        cert: PathBuf,
        /// The key file.
        key: PathBuf,
    },
}

/// Inspects a certificate chain and its private key.
///
/// `cert_path` is a PEM file with one or more certificates, leaf first; `key_path` is a PEM private key in
/// PKCS#8 (`PRIVATE KEY`), PKCS#1 (`RSA PRIVATE KEY`) or SEC1 (`EC PRIVATE KEY`) form (the first key in the file
/// is used). Every certificate in the chain must parse; the leaf's names and validity are returned.
///
/// The key is loaded with rustls' aws-lc-rs key provider (RSA, ECDSA P-256/P-384/P-521, Ed25519) and its
/// public key must equal the leaf's SubjectPublicKeyInfo; otherwise [`CertError::KeyMismatch`]. A key type
/// whose public half the provider cannot report is a [`CertError::BadKey`], never a silent pass.
///
/// # Errors
/// [`CertError::Io`] when either file cannot be read, [`CertError::NoCertificate`] / [`CertError::BadCertificate`]
/// for the chain, [`CertError::NoKey`] / [`CertError::BadKey`] for the key, [`CertError::KeyMismatch`] when the
/// key belongs to another certificate.
pub fn inspect_pair(cert_path: &Path, key_path: &Path) -> Result<CertInfo, CertError> {
    let chain = read_certificates(cert_path)?;
    let leaf_der = chain.first().ok_or_else(|| CertError::NoCertificate {
        path: cert_path.to_path_buf(),
    })?;
    let leaf = parse_certificate(cert_path, 0, leaf_der)?;
    let mut info = leaf_info(cert_path, &leaf)?;
    info.chain_len = chain.len();

    let key_der = read_private_key(key_path)?;
    let signing_key = aws_lc_rs::default_provider()
        .key_provider
        .load_private_key(key_der)
        .map_err(|e| CertError::BadKey {
            path: key_path.to_path_buf(),
            reason: format!("unsupported or malformed key: {e}"),
        })?;
    let key_spki = signing_key.public_key().ok_or_else(|| CertError::BadKey {
        path: key_path.to_path_buf(),
        reason: format!(
            "the {:?} key does not expose its public key, so it cannot be matched to the certificate",
            signing_key.algorithm()
        ),
    })?;
    if !same_public_key(leaf.public_key(), key_spki.as_ref()) {
        return Err(CertError::KeyMismatch {
            cert: cert_path.to_path_buf(),
            key: key_path.to_path_buf(),
        });
    }
    Ok(info)
}

/// Whether the certificate described by `info` is valid for `domain`, following RFC 6125:
///
/// - comparison is ASCII case-insensitive and ignores one trailing dot;
/// - an IP literal (`192.0.2.1`, `2001:db8::1`, `[2001:db8::1]`) matches only iPAddress SANs;
/// - otherwise dNSName SANs are used, and the subject CN only when the certificate has no dNSName SAN;
/// - a wildcard is accepted only as the whole left-most label (`*.example.com`) with at least two labels
///   after it, and it matches exactly one non-empty label: `a.example.com`, not `example.com`, not
///   `a.b.example.com`. Partial wildcards (`f*.example.com`) and wildcards elsewhere never match.
#[must_use]
pub fn covers(info: &CertInfo, domain: &str) -> bool {
    let domain = domain.strip_suffix('.').unwrap_or(domain);
    let unbracketed = domain
        .strip_prefix('[')
        .and_then(|d| d.strip_suffix(']'))
        .unwrap_or(domain);
    if let Ok(ip) = unbracketed.parse::<IpAddr>() {
        return info.ip_addresses.contains(&ip);
    }
    if domain.is_empty() || domain.contains('*') {
        return false;
    }
    let domain = domain.to_ascii_lowercase();
    if info.dns_names.is_empty() {
        info.subject_cn
            .as_deref()
            .is_some_and(|cn| name_matches(cn, &domain))
    } else {
        info.dns_names
            .iter()
            .any(|name| name_matches(name, &domain))
    }
}

/// Whole days from `now_unix` until the certificate's `notAfter`, rounded down: 0 on its last day, negative
/// once it has expired (−1 during the first day after expiry).
#[must_use]
pub fn days_until_expiry(info: &CertInfo, now_unix: i64) -> i64 {
    info.not_after
        .saturating_sub(now_unix)
        .div_euclid(SECS_PER_DAY)
}

/// Reads a PEM CA bundle and returns how many certificates it holds; every one must parse as X.509.
///
/// # Errors
/// [`CertError::Io`] when the file cannot be read, [`CertError::NoCertificate`] when it holds no certificate,
/// [`CertError::BadCertificate`] when any certificate is malformed.
pub fn inspect_ca_file(path: &Path) -> Result<usize, CertError> {
    let certs = read_certificates(path)?;
    for (index, der) in certs.iter().enumerate() {
        parse_certificate(path, index, der)?;
    }
    Ok(certs.len())
}

/// All `CERTIFICATE` sections of a PEM file, in order; at least one.
fn read_certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, CertError> {
    let iter = CertificateDer::pem_file_iter(path).map_err(|e| pem_cert_error(path, e))?;
    let certs = iter
        .collect::<Result<Vec<_>, _>>()
        .map_err(|e| pem_cert_error(path, e))?;
    if certs.is_empty() {
        return Err(CertError::NoCertificate {
            path: path.to_path_buf(),
        });
    }
    Ok(certs)
}

fn pem_cert_error(path: &Path, error: pem::Error) -> CertError {
    match error {
        pem::Error::Io(source) => CertError::Io {
            path: path.to_path_buf(),
            source,
        },
        pem::Error::NoItemsFound => CertError::NoCertificate {
            path: path.to_path_buf(),
        },
        other => CertError::BadCertificate {
            path: path.to_path_buf(),
            reason: format!("PEM: {other}"),
        },
    }
}

/// The first private key (PKCS#8, PKCS#1 or SEC1) of a PEM file.
fn read_private_key(path: &Path) -> Result<PrivateKeyDer<'static>, CertError> {
    PrivateKeyDer::from_pem_file(path).map_err(|e| match e {
        pem::Error::Io(source) => CertError::Io {
            path: path.to_path_buf(),
            source,
        },
        pem::Error::NoItemsFound => CertError::NoKey {
            path: path.to_path_buf(),
        },
        other => CertError::BadKey {
            path: path.to_path_buf(),
            reason: format!("PEM: {other}"),
        },
    })
}

/// Parses one DER certificate; `index` (0 = first in the file) goes into the error message.
fn parse_certificate<'a>(
    path: &Path,
    index: usize,
    der: &'a CertificateDer<'_>,
) -> Result<X509Certificate<'a>, CertError> {
    let bad = |reason: String| CertError::BadCertificate {
        path: path.to_path_buf(),
        reason: format!("certificate #{}: {reason}", index + 1),
    };
    let (rest, cert) =
        X509Certificate::from_der(der.as_ref()).map_err(|e| bad(format!("X.509: {e}")))?;
    if !rest.is_empty() {
        return Err(bad(format!(
            "{} trailing bytes after the DER certificate",
            rest.len()
        )));
    }
    Ok(cert)
}

/// Names and validity of the leaf (`chain_len` is left at 1 for the caller to fill in).
fn leaf_info(path: &Path, leaf: &X509Certificate<'_>) -> Result<CertInfo, CertError> {
    let bad = |reason: String| CertError::BadCertificate {
        path: path.to_path_buf(),
        reason: format!("certificate #1: {reason}"),
    };
    let subject_cn = leaf
        .subject()
        .iter_common_name()
        .filter_map(|attr| attr.as_str().ok())
        .last()
        .map(str::to_owned);

    let mut dns_names = Vec::new();
    let mut ip_addresses = Vec::new();
    let san = leaf
        .subject_alternative_name()
        .map_err(|e| bad(format!("subjectAltName: {e}")))?;
    for name in san.iter().flat_map(|ext| ext.value.general_names.iter()) {
        match name {
            GeneralName::DNSName(dns) => dns_names.push((*dns).to_owned()),
            GeneralName::IPAddress(bytes) => {
                let ip = match *bytes {
                    [a, b, c, d] => IpAddr::from([*a, *b, *c, *d]),
                    _ => match <[u8; 16]>::try_from(*bytes) {
                        Ok(v6) => IpAddr::from(v6),
                        Err(_) => {
                            return Err(bad(format!(
                                "subjectAltName iPAddress has {} bytes (want 4 or 16)",
                                bytes.len()
                            )));
                        }
                    },
                };
                ip_addresses.push(ip);
            }
            _ => {}
        }
    }

    let mut ocsp_urls = Vec::new();
    for ext in leaf.extensions() {
        if let x509_parser::extensions::ParsedExtension::AuthorityInfoAccess(aia) =
            ext.parsed_extension()
        {
            for d in aia.iter() {
                if d.access_method == x509_parser::oid_registry::OID_PKIX_ACCESS_DESCRIPTOR_OCSP
                    && let GeneralName::URI(u) = d.access_location
                {
                    ocsp_urls.push(u.to_owned());
                }
            }
        }
    }
    let validity = leaf.validity();
    Ok(CertInfo {
        subject_cn,
        dns_names,
        ip_addresses,
        not_before: validity.not_before.timestamp(),
        not_after: validity.not_after.timestamp(),
        chain_len: 1,
        ocsp_urls,
    })
}

/// Whether `key_spki` (DER SubjectPublicKeyInfo derived from the private key) is the certificate's key.
///
/// Byte equality is the normal case. As a fallback the two are compared structurally (same algorithm OID and
/// same public-key bits), so that an encoder's choice of algorithm parameters (e.g. an RSA key written
/// without the NULL parameter) cannot produce a false mismatch. Identical key bits under the same algorithm
/// are the same key.
fn same_public_key(cert_spki: &SubjectPublicKeyInfo<'_>, key_spki: &[u8]) -> bool {
    if cert_spki.raw == key_spki {
        return true;
    }
    match SubjectPublicKeyInfo::from_der(key_spki) {
        Ok((_, key)) => {
            key.algorithm.algorithm == cert_spki.algorithm.algorithm
                && key.subject_public_key.unused_bits == cert_spki.subject_public_key.unused_bits
                && key.subject_public_key.data == cert_spki.subject_public_key.data
        }
        Err(_) => false,
    }
}

/// RFC 6125 §6.4: `domain` is already lower-case, without a trailing dot, not an IP and without `*`.
fn name_matches(pattern: &str, domain: &str) -> bool {
    let pattern = pattern
        .strip_suffix('.')
        .unwrap_or(pattern)
        .to_ascii_lowercase();
    if pattern.is_empty() {
        return false;
    }
    match pattern.strip_prefix("*.") {
        Some(suffix) => {
            // `*.com` or `*.` would cover a whole TLD: refuse; `*` anywhere else in the pattern is not a wildcard.
            if suffix.contains('*') || !suffix.contains('.') || suffix.split('.').any(str::is_empty)
            {
                return false;
            }
            domain
                .split_once('.')
                .is_some_and(|(first, rest)| !first.is_empty() && rest == suffix)
        }
        None => !pattern.contains('*') && pattern == domain,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::Engine as _;
    use rcgen::{
        BasicConstraints, CertificateParams, DistinguishedName, DnType, IsCa, Issuer, KeyPair,
        SignatureAlgorithm, date_time_ymd,
    };
    use std::net::{Ipv4Addr, Ipv6Addr};

    const JAN_1_2025: i64 = 1_735_689_600;
    const JAN_1_2026: i64 = 1_767_225_600;

    /// A leaf certificate valid 2025-01-01 .. 2026-01-01 with the given SANs (strings that parse as IPs
    /// become iPAddress SANs) and CN, self-signed by a new key of `alg`.
    fn leaf(
        alg: &'static SignatureAlgorithm,
        sans: &[&str],
        cn: &str,
    ) -> (rcgen::Certificate, KeyPair) {
        let key = KeyPair::generate_for(alg).unwrap();
        let params = leaf_params(sans, cn);
        let cert = params.self_signed(&key).unwrap();
        (cert, key)
    }

    fn leaf_params(sans: &[&str], cn: &str) -> CertificateParams {
        let mut params =
            CertificateParams::new(sans.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>())
                .unwrap();
        let mut dn = DistinguishedName::new();
        dn.push(DnType::CommonName, cn);
        params.distinguished_name = dn;
        params.not_before = date_time_ymd(2025, 1, 1);
        params.not_after = date_time_ymd(2026, 1, 1);
        params
    }

    fn write(dir: &tempfile::TempDir, name: &str, contents: &str) -> PathBuf {
        let path = dir.path().join(name);
        std::fs::write(&path, contents).unwrap();
        path
    }

    fn pem(label: &str, der: &[u8]) -> String {
        let b64 = base64::engine::general_purpose::STANDARD.encode(der);
        let mut out = format!("-----BEGIN {label}-----\n");
        for chunk in b64.as_bytes().chunks(64) {
            out.push_str(std::str::from_utf8(chunk).unwrap());
            out.push('\n');
        }
        out.push_str(&format!("-----END {label}-----\n"));
        out
    }

    /// One DER TLV at the start of `der`: (tag, contents, rest).
    fn tlv(der: &[u8]) -> (u8, &[u8], &[u8]) {
        let tag = der[0];
        let (len, header) = match der[1] {
            n if n < 0x80 => (usize::from(n), 2),
            n => {
                let count = usize::from(n & 0x7f);
                let len = der[2..2 + count]
                    .iter()
                    .fold(0usize, |acc, b| (acc << 8) | usize::from(*b));
                (len, 2 + count)
            }
        };
        (tag, &der[header..header + len], &der[header + len..])
    }

    /// The `privateKey` OCTET STRING of a PKCS#8 PrivateKeyInfo: an RSAPrivateKey (PKCS#1) for RSA,
    /// an ECPrivateKey (SEC1) for EC.
    fn pkcs8_inner(pkcs8: &[u8]) -> Vec<u8> {
        let (seq_tag, body, _) = tlv(pkcs8);
        assert_eq!(seq_tag, 0x30);
        let (_version, _, rest) = tlv(body);
        let (_algorithm, _, rest) = tlv(rest);
        let (octet_tag, inner, _) = tlv(rest);
        assert_eq!(octet_tag, 0x04);
        inner.to_vec()
    }

    fn assert_matching_pair(alg: &'static SignatureAlgorithm) {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = leaf(
            alg,
            &["example.com", "*.example.com", "192.0.2.7", "2001:db8::1"],
            "example.com",
        );
        let cert_path = write(&dir, "cert.pem", &cert.pem());
        let key_path = write(&dir, "key.pem", &key.serialize_pem());

        let info = inspect_pair(&cert_path, &key_path).unwrap();
        assert_eq!(info.subject_cn.as_deref(), Some("example.com"));
        assert_eq!(info.dns_names, ["example.com", "*.example.com"]);
        assert_eq!(
            info.ip_addresses,
            [
                IpAddr::V4(Ipv4Addr::new(192, 0, 2, 7)),
                IpAddr::V6(Ipv6Addr::new(0x2001, 0xdb8, 0, 0, 0, 0, 0, 1))
            ]
        );
        assert_eq!(info.not_before, JAN_1_2025);
        assert_eq!(info.not_after, JAN_1_2026);
        assert_eq!(info.chain_len, 1);
        assert!(covers(&info, "api.example.com"));
        assert_eq!(inspect_ca_file(&cert_path).unwrap(), 1);
    }

    #[test]
    fn matching_pair_ecdsa_p256() {
        assert_matching_pair(&rcgen::PKCS_ECDSA_P256_SHA256);
    }

    #[test]
    fn matching_pair_ecdsa_p384() {
        assert_matching_pair(&rcgen::PKCS_ECDSA_P384_SHA384);
    }

    #[test]
    fn matching_pair_ed25519() {
        assert_matching_pair(&rcgen::PKCS_ED25519);
    }

    #[test]
    fn matching_pair_rsa() {
        assert_matching_pair(&rcgen::PKCS_RSA_SHA256);
    }

    #[test]
    fn pkcs1_rsa_and_sec1_ec_keys_are_accepted() {
        let dir = tempfile::tempdir().unwrap();
        for (alg, label) in [
            (&rcgen::PKCS_RSA_SHA256, "RSA PRIVATE KEY"),
            (&rcgen::PKCS_ECDSA_P256_SHA256, "EC PRIVATE KEY"),
        ] {
            let (cert, key) = leaf(alg, &["legacy.example.com"], "legacy");
            let cert_path = write(&dir, "cert.pem", &cert.pem());
            let key_path = write(
                &dir,
                "key.pem",
                &pem(label, &pkcs8_inner(&key.serialize_der())),
            );
            let info =
                inspect_pair(&cert_path, &key_path).unwrap_or_else(|e| panic!("{label}: {e}"));
            assert_eq!(info.dns_names, ["legacy.example.com"]);

            // The same legacy encoding of an unrelated key is still caught.
            let (_, other) = leaf(alg, &["other.example.com"], "other");
            let other_path = write(
                &dir,
                "other.pem",
                &pem(label, &pkcs8_inner(&other.serialize_der())),
            );
            assert!(
                matches!(
                    inspect_pair(&cert_path, &other_path),
                    Err(CertError::KeyMismatch { .. })
                ),
                "{label}"
            );
        }
    }

    #[test]
    fn key_of_another_certificate_is_a_mismatch() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, _) = leaf(&rcgen::PKCS_ECDSA_P256_SHA256, &["a.example.com"], "a");
        let (_, other_key) = leaf(&rcgen::PKCS_ECDSA_P256_SHA256, &["b.example.com"], "b");
        let (_, ed_key) = leaf(&rcgen::PKCS_ED25519, &["c.example.com"], "c");
        let cert_path = write(&dir, "cert.pem", &cert.pem());
        for (name, key) in [("same-type.pem", other_key), ("other-type.pem", ed_key)] {
            let key_path = write(&dir, name, &key.serialize_pem());
            match inspect_pair(&cert_path, &key_path) {
                Err(CertError::KeyMismatch { cert, key }) => {
                    assert_eq!(cert, cert_path);
                    assert_eq!(key, key_path);
                }
                other => panic!("{name}: expected KeyMismatch, got {other:?}"),
            }
        }
    }

    #[test]
    fn chain_is_counted_and_leaf_is_first() {
        let dir = tempfile::tempdir().unwrap();
        let ca_key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let mut ca_params = leaf_params(&[], "Test CA");
        ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
        let ca_cert = ca_params.self_signed(&ca_key).unwrap();
        let issuer = Issuer::new(ca_params, ca_key);

        let leaf_key = KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256).unwrap();
        let leaf_cert = leaf_params(&["www.example.com"], "www")
            .signed_by(&leaf_key, &issuer)
            .unwrap();

        let cert_path = write(
            &dir,
            "chain.pem",
            &format!("{}{}", leaf_cert.pem(), ca_cert.pem()),
        );
        let key_path = write(&dir, "key.pem", &leaf_key.serialize_pem());
        let info = inspect_pair(&cert_path, &key_path).unwrap();
        assert_eq!(info.chain_len, 2);
        assert_eq!(info.subject_cn.as_deref(), Some("www"));
        assert_eq!(info.dns_names, ["www.example.com"]);
        assert_eq!(inspect_ca_file(&cert_path).unwrap(), 2);

        // Leaf must come first: with the CA first, the leaf key no longer matches.
        let reversed = write(
            &dir,
            "reversed.pem",
            &format!("{}{}", ca_cert.pem(), leaf_cert.pem()),
        );
        assert!(matches!(
            inspect_pair(&reversed, &key_path),
            Err(CertError::KeyMismatch { .. })
        ));
    }

    #[test]
    fn garbage_certificates_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let (_, key) = leaf(
            &rcgen::PKCS_ECDSA_P256_SHA256,
            &["example.com"],
            "example.com",
        );
        let key_path = write(&dir, "key.pem", &key.serialize_pem());

        let no_pem = write(&dir, "no-pem.pem", "this is not a certificate\n");
        assert!(matches!(
            inspect_pair(&no_pem, &key_path),
            Err(CertError::NoCertificate { .. })
        ));
        assert!(matches!(
            inspect_ca_file(&no_pem),
            Err(CertError::NoCertificate { .. })
        ));

        // Only a key in the "certificate" file.
        assert!(matches!(
            inspect_pair(&key_path, &key_path),
            Err(CertError::NoCertificate { .. })
        ));

        let bad_base64 = write(
            &dir,
            "bad-b64.pem",
            "-----BEGIN CERTIFICATE-----\n!!!not base64!!!\n-----END CERTIFICATE-----\n",
        );
        assert!(matches!(
            inspect_pair(&bad_base64, &key_path),
            Err(CertError::BadCertificate { .. })
        ));

        let not_der = write(
            &dir,
            "not-der.pem",
            &pem("CERTIFICATE", b"definitely not DER"),
        );
        match inspect_pair(&not_der, &key_path) {
            Err(CertError::BadCertificate { reason, .. }) => {
                assert!(reason.contains("certificate #1"), "{reason}")
            }
            other => panic!("expected BadCertificate, got {other:?}"),
        }

        let unterminated = write(
            &dir,
            "unterminated.pem",
            "-----BEGIN CERTIFICATE-----\nMIIB\n",
        );
        assert!(matches!(
            inspect_ca_file(&unterminated),
            Err(CertError::BadCertificate { .. })
        ));

        // A good certificate followed by a broken one: the bundle is rejected and the second one is named.
        let (cert, _) = leaf(
            &rcgen::PKCS_ECDSA_P256_SHA256,
            &["example.com"],
            "example.com",
        );
        let mixed = write(
            &dir,
            "mixed.pem",
            &format!("{}{}", cert.pem(), pem("CERTIFICATE", b"junk")),
        );
        match inspect_ca_file(&mixed) {
            Err(CertError::BadCertificate { reason, .. }) => {
                assert!(reason.contains("certificate #2"), "{reason}")
            }
            other => panic!("expected BadCertificate, got {other:?}"),
        }
    }

    #[test]
    fn missing_or_bad_keys_are_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, _) = leaf(
            &rcgen::PKCS_ECDSA_P256_SHA256,
            &["example.com"],
            "example.com",
        );
        let cert_path = write(&dir, "cert.pem", &cert.pem());

        // The certificate file holds no key.
        assert!(matches!(
            inspect_pair(&cert_path, &cert_path),
            Err(CertError::NoKey { .. })
        ));

        let junk_key = write(
            &dir,
            "junk-key.pem",
            &pem("PRIVATE KEY", b"not a key at all"),
        );
        match inspect_pair(&cert_path, &junk_key) {
            Err(CertError::BadKey { path, .. }) => assert_eq!(path, junk_key),
            other => panic!("expected BadKey, got {other:?}"),
        }
    }

    #[test]
    fn missing_files_are_io_errors() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = leaf(
            &rcgen::PKCS_ECDSA_P256_SHA256,
            &["example.com"],
            "example.com",
        );
        let cert_path = write(&dir, "cert.pem", &cert.pem());
        let key_path = write(&dir, "key.pem", &key.serialize_pem());
        let missing = dir.path().join("missing.pem");

        for result in [
            inspect_pair(&missing, &key_path),
            inspect_pair(&cert_path, &missing),
        ] {
            match result {
                Err(CertError::Io { path, source }) => {
                    assert_eq!(path, missing);
                    assert_eq!(source.kind(), std::io::ErrorKind::NotFound);
                }
                other => panic!("expected Io, got {other:?}"),
            }
        }
        assert!(matches!(
            inspect_ca_file(&missing),
            Err(CertError::Io { .. })
        ));
        let message = inspect_ca_file(&missing).unwrap_err().to_string();
        assert!(message.contains("missing.pem"), "{message}");
    }

    #[test]
    fn certificate_without_sans_reports_only_the_cn() {
        let dir = tempfile::tempdir().unwrap();
        let (cert, key) = leaf(&rcgen::PKCS_ECDSA_P256_SHA256, &[], "legacy.example.com");
        let cert_path = write(&dir, "cert.pem", &cert.pem());
        let key_path = write(&dir, "key.pem", &key.serialize_pem());
        let info = inspect_pair(&cert_path, &key_path).unwrap();
        assert!(info.dns_names.is_empty() && info.ip_addresses.is_empty());
        assert_eq!(info.subject_cn.as_deref(), Some("legacy.example.com"));
        assert!(covers(&info, "LEGACY.example.com"));
    }

    fn info(cn: Option<&str>, dns: &[&str], ips: &[&str]) -> CertInfo {
        CertInfo {
            subject_cn: cn.map(str::to_owned),
            dns_names: dns.iter().map(|s| (*s).to_owned()).collect(),
            ip_addresses: ips.iter().map(|s| s.parse().unwrap()).collect(),
            not_before: JAN_1_2025,
            not_after: JAN_1_2026,
            chain_len: 1,
            ocsp_urls: Vec::new(),
        }
    }

    #[test]
    fn covers_follows_rfc_6125() {
        let sans = info(
            Some("cn-only.example.org"),
            &["example.com", "*.Example.NET", "Mixed.Example.com"],
            &["192.0.2.1", "2001:db8::1"],
        );
        let cn_only = info(Some("Legacy.Example.com"), &[], &[]);
        let cn_with_ip_san = info(Some("legacy.example.com"), &[], &["192.0.2.1"]);
        let cn_wildcard = info(Some("*.example.com"), &[], &[]);
        let nothing = info(None, &[], &[]);
        let tld_wildcard = info(
            None,
            &["*.com", "*", "*.", "f*.example.org", "a.*.example.org"],
            &[],
        );

        let table: &[(&str, &CertInfo, &str, bool)] = &[
            ("exact", &sans, "example.com", true),
            ("exact, trailing dot", &sans, "example.com.", true),
            ("case-insensitive domain", &sans, "EXAMPLE.com", true),
            ("case-insensitive SAN", &sans, "mixed.example.com", true),
            ("not listed", &sans, "other.com", false),
            ("subdomain of exact name", &sans, "www.example.com", false),
            ("wildcard one label", &sans, "api.example.net", true),
            ("wildcard, case", &sans, "API.EXAMPLE.NET", true),
            ("wildcard not apex", &sans, "example.net", false),
            ("wildcard not two labels", &sans, "a.b.example.net", false),
            ("wildcard not empty label", &sans, ".example.net", false),
            ("literal * domain", &sans, "*.example.net", false),
            (
                "CN ignored when DNS SANs exist",
                &sans,
                "cn-only.example.org",
                false,
            ),
            (
                "CN fallback without SANs",
                &cn_only,
                "legacy.example.com",
                true,
            ),
            ("CN fallback, case", &cn_only, "LEGACY.EXAMPLE.COM", true),
            (
                "CN fallback, other name",
                &cn_only,
                "www.legacy.example.com",
                false,
            ),
            (
                "CN fallback with only IP SANs",
                &cn_with_ip_san,
                "legacy.example.com",
                true,
            ),
            ("CN wildcard fallback", &cn_wildcard, "a.example.com", true),
            ("CN wildcard not apex", &cn_wildcard, "example.com", false),
            ("no names", &nothing, "example.com", false),
            ("empty domain", &sans, "", false),
            ("IPv4 SAN", &sans, "192.0.2.1", true),
            ("IPv4 not listed", &sans, "192.0.2.2", false),
            ("IPv6 SAN", &sans, "2001:DB8:0::1", true),
            ("IPv6 bracketed", &sans, "[2001:db8::1]", true),
            (
                "IP never matches CN",
                &info(Some("192.0.2.9"), &[], &[]),
                "192.0.2.9",
                false,
            ),
            (
                "IP never matches DNS SAN",
                &info(None, &["192.0.2.9"], &[]),
                "192.0.2.9",
                false,
            ),
            (
                "IP SAN does not match a host name",
                &cn_with_ip_san,
                "192.0.2.1.example.com",
                false,
            ),
            ("*.com refused", &tld_wildcard, "example.com", false),
            ("bare * refused", &tld_wildcard, "localhost", false),
            (
                "partial wildcard refused",
                &tld_wildcard,
                "foo.example.org",
                false,
            ),
            (
                "inner wildcard refused",
                &tld_wildcard,
                "a.b.example.org",
                false,
            ),
        ];
        for (what, cert, domain, want) in table {
            assert_eq!(covers(cert, domain), *want, "{what}: covers({domain:?})");
        }
    }

    #[test]
    fn days_until_expiry_uses_the_given_clock() {
        let cert = info(None, &["example.com"], &[]);
        assert_eq!(days_until_expiry(&cert, JAN_1_2025), 365);
        assert_eq!(days_until_expiry(&cert, JAN_1_2026 - 30 * SECS_PER_DAY), 30);
        assert_eq!(
            days_until_expiry(&cert, JAN_1_2026 - 30 * SECS_PER_DAY - 1),
            30
        );
        assert_eq!(days_until_expiry(&cert, JAN_1_2026 - 1), 0);
        assert_eq!(days_until_expiry(&cert, JAN_1_2026), 0);
        assert_eq!(days_until_expiry(&cert, JAN_1_2026 + 1), -1);
        assert_eq!(
            days_until_expiry(&cert, JAN_1_2026 + 10 * SECS_PER_DAY),
            -10
        );
        assert_eq!(days_until_expiry(&cert, i64::MIN), i64::MAX / SECS_PER_DAY);
    }
}
