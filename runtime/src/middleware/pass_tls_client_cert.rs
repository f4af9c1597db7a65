//! `passTLSClientCert`: the certificates a client sent on a TLS connection, passed to the server
//! in `X-Forwarded-Tls-Client-Cert` (base64 DER, one line per certificate, joined with `,`) and
//! `X-Forwarded-Tls-Client-Cert-Info` (chosen fields, Go's `url.QueryEscape` of the whole), as
//! Traefik 3.7 writes them (docs/traefik-behaviour/digestauth-passtlsclientcert.md §2). Without
//! a client certificate the middleware leaves the fields alone, as Traefik does (the entry
//! point's forwarded-headers step already removed a forged one from an untrusted client).
//!
//! The values are built per request from the connection's certificates: only routers with the
//! middleware pay for it, and the certificates are parsed where they are used.

use base64::Engine as _;
use bridge_plan::{ClientCertInfo, DistinguishedNameFields, PassTlsClientCert};
use http::{HeaderMap, HeaderName, HeaderValue};
use rustls_pki_types::CertificateDer;
use x509_parser::prelude::{FromDer as _, GeneralName, X509Certificate, X509Name};

static CERT: HeaderName = HeaderName::from_static("x-forwarded-tls-client-cert");
static INFO: HeaderName = HeaderName::from_static("x-forwarded-tls-client-cert-info");

/// A built `passTLSClientCert`.
#[derive(Debug)]
pub(crate) struct PassClientCert {
    pem: bool,
    info: Option<ClientCertInfo>,
}

impl PassClientCert {
    pub(crate) fn from_plan(p: &PassTlsClientCert) -> Self {
        Self {
            pem: p.pem,
            info: p.info.clone(),
        }
    }

    /// Sets the fields on a request from a client that sent `certs` (leaf first, as sent).
    pub(crate) fn apply(&self, headers: &mut HeaderMap, certs: Option<&[CertificateDer<'_>]>) {
        let Some(certs) = certs.filter(|c| !c.is_empty()) else {
            return;
        };
        if self.pem {
            let value = certs
                .iter()
                .map(|c| base64::engine::general_purpose::STANDARD.encode(c.as_ref()))
                .collect::<Vec<_>>()
                .join(",");
            if let Ok(v) = HeaderValue::from_str(&value) {
                headers.insert(CERT.clone(), v);
            }
        }
        if let Some(info) = &self.info {
            let value = certs
                .iter()
                .map(|c| cert_info(info, c.as_ref()))
                .collect::<Vec<_>>()
                .join(",");
            if let Ok(v) = HeaderValue::from_str(&query_escape(&value)) {
                headers.insert(INFO.clone(), v);
            }
        }
    }
}

/// One certificate's part of the info field: `Subject="…";Issuer="…";SerialNumber="…";NB="…";
/// NA="…";SAN="…"`, each left out when not chosen or empty. A certificate Go would have
/// refused never gets here (the handshake verified it); one this parser cannot read gives an
/// empty part, which Traefik keeps too for a certificate with nothing chosen.
fn cert_info(info: &ClientCertInfo, der: &[u8]) -> String {
    let Ok((_, cert)) = X509Certificate::from_der(der) else {
        return String::new();
    };
    let mut values: Vec<String> = Vec::new();
    let subject = distinguished_name(&info.subject, cert.subject(), true);
    if !subject.is_empty() {
        values.push(format!("Subject=\"{subject}\""));
    }
    let issuer = distinguished_name(&info.issuer, cert.issuer(), false);
    if !issuer.is_empty() {
        values.push(format!("Issuer=\"{issuer}\""));
    }
    if info.serial_number {
        values.push(format!("SerialNumber=\"{}\"", cert.tbs_certificate.serial));
    }
    // Go casts the Unix time to uint64: a date before 1970 wraps.
    #[allow(clippy::cast_sign_loss, reason = "Go's uint64 cast, wrapping included")]
    let unix = |t: i64| t as u64;
    if info.not_before {
        values.push(format!(
            "NB=\"{}\"",
            unix(cert.validity().not_before.timestamp())
        ));
    }
    if info.not_after {
        values.push(format!(
            "NA=\"{}\"",
            unix(cert.validity().not_after.timestamp())
        ));
    }
    if info.sans {
        let sans = subject_alt_names(&cert);
        if !sans.is_empty() {
            values.push(format!("SAN=\"{}\"", sans.join(",")));
        }
    }
    values.join(";")
}

/// An attribute value as Go's `asn1` reads it into a string (its string types; others are
/// skipped, as Go's `pkix.Name` skips them).
fn attribute_text(atv: &x509_parser::x509::AttributeTypeAndValue<'_>) -> Option<String> {
    if let Ok(s) = atv.as_str() {
        return Some(s.to_owned());
    }
    use x509_parser::der_parser::asn1_rs::Tag;
    let bytes = atv.as_slice();
    match atv.attr_value().tag() {
        Tag::BmpString => {
            let units: Vec<u16> = bytes
                .chunks_exact(2)
                .map(|p| u16::from_be_bytes([p[0], p[1]]))
                .collect();
            String::from_utf16(&units).ok()
        }
        Tag::T61String => Some(bytes.iter().map(|&b| char::from(b)).collect()),
        _ => None,
    }
}

/// Traefik's DN string: every `DC`, then every `C`, `ST`, `L`, `O` (and `OU` for a subject),
/// then the last `SN` and the last `CN`, in that order whatever the certificate's; empty values
/// left out (but for `DC`), nothing escaped.
fn distinguished_name(
    fields: &DistinguishedNameFields,
    name: &X509Name<'_>,
    subject: bool,
) -> String {
    const DC: &[u64] = &[0, 9, 2342, 19_200_300, 100, 1, 25];
    let mut dc = Vec::new();
    let (mut c, mut st, mut l, mut o, mut ou) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut sn, mut cn) = (String::new(), String::new());
    for atv in name.iter_attributes() {
        let Some(arcs) = atv.attr_type().iter() else {
            continue;
        };
        let arcs: Vec<u64> = arcs.collect();
        let Some(text) = attribute_text(atv) else {
            continue;
        };
        match arcs.as_slice() {
            a if a == DC => dc.push(text),
            [2, 5, 4, 3] => cn = text,
            [2, 5, 4, 5] => sn = text,
            [2, 5, 4, 6] => c.push(text),
            [2, 5, 4, 7] => l.push(text),
            [2, 5, 4, 8] => st.push(text),
            [2, 5, 4, 10] => o.push(text),
            [2, 5, 4, 11] => ou.push(text),
            _ => {}
        }
    }
    let mut out = String::new();
    let mut part = |prefix: &str, value: &str, keep_empty: bool| {
        if keep_empty || !value.is_empty() {
            out.push_str(prefix);
            out.push('=');
            out.push_str(value);
            out.push(',');
        }
    };
    if fields.domain_component {
        dc.iter().for_each(|v| part("DC", v, true));
    }
    for (on, prefix, values) in [
        (fields.country, "C", &c),
        (fields.province, "ST", &st),
        (fields.locality, "L", &l),
        (fields.organization, "O", &o),
        (fields.organizational_unit && subject, "OU", &ou),
    ] {
        if on {
            values.iter().for_each(|v| part(prefix, v, false));
        }
    }
    if fields.serial_number {
        part("SN", &sn, false);
    }
    if fields.common_name {
        part("CN", &cn, false);
    }
    // Traefik trims one trailing separator.
    if out.ends_with(',') {
        out.pop();
    }
    out
}

/// DNS names, then e-mail addresses, then IP addresses (Go's `net.IP.String`: an IPv4-mapped
/// address as IPv4), then URIs, each group in certificate order.
fn subject_alt_names(cert: &X509Certificate<'_>) -> Vec<String> {
    let Ok(Some(ext)) = cert.subject_alternative_name() else {
        return Vec::new();
    };
    let names = &ext.value.general_names;
    let mut out = Vec::new();
    for g in names {
        if let GeneralName::DNSName(d) = g {
            out.push((*d).to_owned());
        }
    }
    for g in names {
        if let GeneralName::RFC822Name(e) = g {
            out.push((*e).to_owned());
        }
    }
    for g in names {
        if let GeneralName::IPAddress(ip) = g
            && let Some(ip) = go_ip(ip)
        {
            out.push(ip);
        }
    }
    for g in names {
        if let GeneralName::URI(u) = g {
            out.push((*u).to_owned());
        }
    }
    out
}

fn go_ip(bytes: &[u8]) -> Option<String> {
    match bytes.len() {
        4 => <[u8; 4]>::try_from(bytes)
            .ok()
            .map(|b| std::net::Ipv4Addr::from(b).to_string()),
        16 => <[u8; 16]>::try_from(bytes).ok().map(|b| {
            let v6 = std::net::Ipv6Addr::from(b);
            v6.to_ipv4_mapped()
                .map_or_else(|| v6.to_string(), |v4| v4.to_string())
        }),
        _ => None,
    }
}

/// Go's `url.QueryEscape`: ALPHA, DIGIT and `-_.~` kept, space as `+`, every other byte as
/// `%XX` with upper-case hex.
fn query_escape(s: &str) -> String {
    const HEX: &[u8; 16] = b"0123456789ABCDEF";
    let mut out = String::with_capacity(s.len() * 3 / 2);
    for &b in s.as_bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                out.push(char::from(b));
            }
            b' ' => out.push('+'),
            _ => {
                out.push('%');
                out.push(char::from(HEX[usize::from(b >> 4)]));
                out.push(char::from(HEX[usize::from(b & 0xf)]));
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn query_escape_is_gos() {
        assert_eq!(
            query_escape("Subject=\"CN=client one\";NA=\"1\""),
            "Subject%3D%22CN%3Dclient+one%22%3BNA%3D%221%22"
        );
        assert_eq!(query_escape("Jörg*%+,~"), "J%C3%B6rg%2A%25%2B%2C~");
        assert_eq!(query_escape(","), "%2C");
    }

    const DC: &[u64] = &[0, 9, 2342, 19_200_300, 100, 1, 25];

    /// A CA and a leaf it signed, with every field Traefik can pass.
    fn chain() -> (Vec<u8>, Vec<u8>) {
        use rcgen::{CertificateParams, DnType, KeyPair, SanType};
        let ca_key = KeyPair::generate().unwrap();
        let mut ca = CertificateParams::new(Vec::<String>::new()).unwrap();
        ca.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
        ca.distinguished_name = rcgen::DistinguishedName::new();
        ca.distinguished_name
            .push(DnType::CustomDnType(DC.to_vec()), "org");
        ca.distinguished_name.push(DnType::CountryName, "FR");
        ca.distinguished_name
            .push(DnType::OrganizationName, "Cheese Root");
        ca.distinguished_name
            .push(DnType::OrganizationalUnitName, "Issuing");
        ca.distinguished_name
            .push(DnType::CommonName, "Test Root CA");
        let ca_cert = ca.self_signed(&ca_key).unwrap();
        let issuer = rcgen::Issuer::new(ca, ca_key);
        let key = KeyPair::generate().unwrap();
        let mut leaf = CertificateParams::new(Vec::<String>::new()).unwrap();
        leaf.distinguished_name = rcgen::DistinguishedName::new();
        // In an order Traefik does not write them in.
        leaf.distinguished_name
            .push(DnType::CommonName, "client one");
        leaf.distinguished_name
            .push(DnType::CustomDnType(vec![2, 5, 4, 5]), "CLI-0042");
        leaf.distinguished_name
            .push(DnType::OrganizationalUnitName, "Ops Team");
        leaf.distinguished_name
            .push(DnType::OrganizationName, "Client Org");
        leaf.distinguished_name
            .push(DnType::LocalityName, "Toulouse");
        leaf.distinguished_name
            .push(DnType::StateOrProvinceName, "Occitanie");
        leaf.distinguished_name.push(DnType::CountryName, "FR");
        leaf.distinguished_name
            .push(DnType::CustomDnType(DC.to_vec()), "net");
        leaf.subject_alt_names = vec![
            SanType::URI(
                "spiffe://example.org/ns/default/sa/client"
                    .try_into()
                    .unwrap(),
            ),
            SanType::IpAddress("10.0.0.5".parse().unwrap()),
            SanType::Rfc822Name("client@example.com".try_into().unwrap()),
            SanType::DnsName("client.example.com".try_into().unwrap()),
            SanType::IpAddress("2001:db8::1".parse().unwrap()),
        ];
        leaf.serial_number = Some(rcgen::SerialNumber::from_slice(&[
            0x1a, 0x2b, 0x3c, 0x4d, 0x5e, 0x6f, 0x70, 0x81,
        ]));
        leaf.not_before = rcgen::date_time_ymd(2025, 6, 1);
        leaf.not_after = rcgen::date_time_ymd(2030, 6, 1);
        let leaf_cert = leaf.signed_by(&key, &issuer).unwrap();
        (leaf_cert.der().to_vec(), ca_cert.der().to_vec())
    }

    fn all_fields() -> ClientCertInfo {
        let every = DistinguishedNameFields {
            country: true,
            province: true,
            locality: true,
            organization: true,
            organizational_unit: true,
            common_name: true,
            serial_number: true,
            domain_component: true,
        };
        ClientCertInfo {
            not_after: true,
            not_before: true,
            sans: true,
            serial_number: true,
            subject: every.clone(),
            issuer: DistinguishedNameFields {
                organizational_unit: false,
                ..every
            },
        }
    }

    /// The rules of docs/traefik-behaviour/digestauth-passtlsclientcert.md §2.4, which its
    /// model matched against Traefik 3.7.15 byte for byte.
    #[test]
    fn info_is_written_in_traefiks_order_and_escaping() {
        let (leaf, ca) = chain();
        let got = cert_info(&all_fields(), &leaf);
        assert_eq!(
            got,
            "Subject=\"DC=net,C=FR,ST=Occitanie,L=Toulouse,O=Client Org,OU=Ops Team,SN=CLI-0042,CN=client one\";\
             Issuer=\"DC=org,C=FR,O=Cheese Root,CN=Test Root CA\";\
             SerialNumber=\"1885667171979194497\";NB=\"1748736000\";NA=\"1906502400\";\
             SAN=\"client.example.com,client@example.com,10.0.0.5,2001:db8::1,spiffe://example.org/ns/default/sa/client\""
        );
        let only_cn = ClientCertInfo {
            subject: DistinguishedNameFields {
                common_name: true,
                ..DistinguishedNameFields::default()
            },
            ..ClientCertInfo::default()
        };
        let mut headers = HeaderMap::new();
        headers.append(&INFO, HeaderValue::from_static("forged"));
        headers.append(&INFO, HeaderValue::from_static("forged too"));
        let certs = [CertificateDer::from(leaf.clone()), CertificateDer::from(ca)];
        PassClientCert {
            pem: true,
            info: Some(only_cn),
        }
        .apply(&mut headers, Some(&certs));
        assert_eq!(
            headers.get_all(&INFO).iter().collect::<Vec<_>>(),
            ["Subject%3D%22CN%3Dclient+one%22%2CSubject%3D%22CN%3DTest+Root+CA%22"]
        );
        let pem = headers.get(&CERT).unwrap().to_str().unwrap();
        let parts: Vec<&str> = pem.split(',').collect();
        assert_eq!(parts.len(), 2);
        assert_eq!(
            base64::engine::general_purpose::STANDARD
                .decode(parts[0])
                .unwrap(),
            leaf
        );
        // Info with nothing chosen: present and empty; no certificate: nothing touched.
        let mut headers = HeaderMap::new();
        PassClientCert {
            pem: false,
            info: Some(ClientCertInfo::default()),
        }
        .apply(&mut headers, Some(&certs[..1]));
        assert_eq!(headers.get(&INFO).unwrap(), "");
        let mut headers = HeaderMap::new();
        headers.insert(&CERT, HeaderValue::from_static("kept"));
        PassClientCert {
            pem: true,
            info: Some(all_fields()),
        }
        .apply(&mut headers, None);
        assert_eq!(headers.get(&CERT).unwrap(), "kept");
        assert!(headers.get(&INFO).is_none());
    }

    #[test]
    fn ips_print_as_go_prints_them() {
        assert_eq!(go_ip(&[10, 0, 0, 5]).as_deref(), Some("10.0.0.5"));
        let mut mapped = [0u8; 16];
        mapped[10] = 0xff;
        mapped[11] = 0xff;
        mapped[12..].copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(go_ip(&mapped).as_deref(), Some("1.2.3.4"));
        let v6: std::net::Ipv6Addr = "2001:db8::1".parse().unwrap();
        assert_eq!(go_ip(&v6.octets()).as_deref(), Some("2001:db8::1"));
        assert_eq!(go_ip(&[1, 2, 3]), None);
    }
}
