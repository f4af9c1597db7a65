//! OCSP in DER (RFC 6960): the request for a certificate's status, and the checks a
//! responder's answer passes before it is stapled — the answer is for this certificate (serial
//! and issuer hashes), signed by its issuer or by a responder certificate the issuer signed for
//! OCSP signing, successful, and current. Only DER is read here: a tag-length-value walker over
//! the few structures involved, with signatures checked by rustls-webpki, the verifier rustls
//! itself uses.

use std::time::{Duration, SystemTime};

use rustls_pki_types::CertificateDer;
use sha1::Digest as _;

/// Why an answer is not stapled.
#[derive(Debug, Clone, thiserror::Error, PartialEq, Eq)]
pub(crate) enum OcspError {
    /// Not DER of the structure RFC 6960 defines.
    #[error("malformed OCSP {0}")]
    Malformed(&'static str),
    /// The responder answered with an error status (`tryLater`, `unauthorized`, …).
    #[error("the responder answered status {0}")]
    Status(u8),
    /// The answer does not cover this certificate.
    #[error("the answer is for another certificate")]
    OtherCertificate,
    /// The signature does not verify with the issuer's key, or a delegated responder
    /// certificate is not the issuer's.
    #[error("the answer's signature does not verify: {0}")]
    Signature(String),
    /// Its `nextUpdate` has passed, or its `thisUpdate` is in the future.
    #[error("the answer is not current")]
    NotCurrent,
    /// A certificate that cannot be read.
    #[error("certificate: {0}")]
    Certificate(String),
}

/// A DER element: its tag byte, its content, and the whole encoding.
#[derive(Debug, Clone, Copy)]
struct Tlv<'a> {
    tag: u8,
    content: &'a [u8],
    whole: &'a [u8],
}

/// Reads one element off the front of `input` (definite lengths only, as DER requires).
fn tlv<'a>(input: &mut &'a [u8]) -> Result<Tlv<'a>, OcspError> {
    let bad = OcspError::Malformed("element");
    let data = *input;
    let (&tag, rest) = data.split_first().ok_or(bad.clone())?;
    if tag & 0x1f == 0x1f {
        return Err(bad); // multi-byte tags appear in none of these structures
    }
    let (&first, mut rest) = rest.split_first().ok_or(bad.clone())?;
    let len = if first < 0x80 {
        usize::from(first)
    } else {
        let n = usize::from(first & 0x7f);
        if n == 0 || n > 4 || rest.len() < n {
            return Err(bad);
        }
        let (bytes, after) = rest.split_at(n);
        rest = after;
        bytes.iter().fold(0usize, |v, &b| (v << 8) | usize::from(b))
    };
    if rest.len() < len {
        return Err(bad);
    }
    let header = data.len() - rest.len();
    let (content, after) = rest.split_at(len);
    *input = after;
    Ok(Tlv {
        tag,
        content,
        whole: &data[..header + len],
    })
}

/// Reads an element that must carry `tag`.
fn expect<'a>(input: &mut &'a [u8], tag: u8, what: &'static str) -> Result<Tlv<'a>, OcspError> {
    let t = tlv(input)?;
    if t.tag == tag {
        Ok(t)
    } else {
        Err(OcspError::Malformed(what))
    }
}

const SEQUENCE: u8 = 0x30;
const OCTET_STRING: u8 = 0x04;
const INTEGER: u8 = 0x02;
const ENUMERATED: u8 = 0x0a;
const OID: u8 = 0x06;
const BIT_STRING: u8 = 0x03;
const GENERALIZED_TIME: u8 = 0x18;
/// id-pkix-ocsp-basic (1.3.6.1.5.5.7.48.1.1), content bytes.
const OCSP_BASIC: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x30, 0x01, 0x01];
/// id-kp-OCSPSigning (1.3.6.1.5.5.7.3.9), content bytes.
const OCSP_SIGNING: &[u8] = &[0x2b, 0x06, 0x01, 0x05, 0x05, 0x07, 0x03, 0x09];
/// The DER of AlgorithmIdentifier { sha1, NULL }.
const SHA1_ALG: &[u8] = &[
    0x30, 0x09, 0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a, 0x05, 0x00,
];
/// The same without its NULL parameter.
const SHA1_ALG_BARE: &[u8] = &[0x30, 0x07, 0x06, 0x05, 0x2b, 0x0e, 0x03, 0x02, 0x1a];

fn der(tag: u8, content: &[u8]) -> Vec<u8> {
    let mut out = vec![tag];
    let len = content.len();
    if len < 0x80 {
        out.push(len as u8);
    } else {
        let bytes = len.to_be_bytes();
        let skip = bytes.iter().take_while(|&&b| b == 0).count();
        out.push(0x80 | (bytes.len() - skip) as u8);
        out.extend_from_slice(&bytes[skip..]);
    }
    out.extend_from_slice(content);
    out
}

/// The identity of a certificate in OCSP: SHA-1 of its issuer's name and key, and its serial
/// number (as Go's `ocsp.CreateRequest` makes it by default).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct CertId {
    name_hash: Vec<u8>,
    key_hash: Vec<u8>,
    /// The INTEGER's content bytes.
    serial: Vec<u8>,
}

impl CertId {
    /// The identity of `leaf`, issued by `issuer`.
    pub(crate) fn of(
        leaf: &CertificateDer<'_>,
        issuer: &CertificateDer<'_>,
    ) -> Result<Self, OcspError> {
        let (_, leaf) = x509_parser::parse_x509_certificate(leaf.as_ref())
            .map_err(|e| OcspError::Certificate(e.to_string()))?;
        let (_, issuer) = x509_parser::parse_x509_certificate(issuer.as_ref())
            .map_err(|e| OcspError::Certificate(e.to_string()))?;
        let serial = leaf.tbs_certificate.raw_serial().to_vec();
        Ok(Self {
            name_hash: sha1::Sha1::digest(issuer.subject().as_raw()).to_vec(),
            key_hash: sha1::Sha1::digest(issuer.public_key().subject_public_key.data.as_ref())
                .to_vec(),
            serial,
        })
    }

    fn der(&self) -> Vec<u8> {
        let mut content = SHA1_ALG.to_vec();
        content.extend(der(OCTET_STRING, &self.name_hash));
        content.extend(der(OCTET_STRING, &self.key_hash));
        content.extend(der(INTEGER, &self.serial));
        der(SEQUENCE, &content)
    }

    /// Whether the CertID element `t` names this certificate (any hash algorithm a responder
    /// chose is compared by its own hashes only when it is SHA-1, the one asked for).
    fn matches(&self, t: Tlv<'_>) -> bool {
        let mut inner = t.content;
        let (Ok(alg), Ok(name), Ok(key), Ok(serial)) = (
            expect(&mut inner, SEQUENCE, "hash algorithm"),
            expect(&mut inner, OCTET_STRING, "name hash"),
            expect(&mut inner, OCTET_STRING, "key hash"),
            expect(&mut inner, INTEGER, "serial"),
        ) else {
            return false;
        };
        // A NULL parameter may be left out.
        let sha1 = alg.whole == SHA1_ALG || alg.whole == SHA1_ALG_BARE;
        sha1 && name.content == self.name_hash
            && key.content == self.key_hash
            && serial.content == self.serial
    }

    /// The OCSPRequest for this certificate: one Request, no extensions (no nonce: stapled
    /// answers are shared by every client, RFC 6960 §4.4.1 leaves it optional).
    pub(crate) fn request(&self) -> Vec<u8> {
        let request = der(SEQUENCE, &self.der());
        let list = der(SEQUENCE, &request);
        let tbs = der(SEQUENCE, &list);
        der(SEQUENCE, &tbs)
    }
}

/// What a responder says of a certificate.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum CertStatus {
    Good,
    Revoked,
    Unknown,
}

/// An answer that passed every check: the bytes to staple and until when they hold. A
/// `revoked` or `unknown` answer is stapled too, as Traefik staples it: it is what the CA says.
#[derive(Debug, Clone)]
pub(crate) struct Staple {
    /// The OCSPResponse as the responder sent it.
    pub(crate) der: Vec<u8>,
    pub(crate) status: CertStatus,
    pub(crate) this_update: SystemTime,
    /// `None`: the responder gives no end (newer information may come at any time).
    pub(crate) next_update: Option<SystemTime>,
}

/// GeneralizedTime `YYYYMMDDHHMMSS[.fff]Z`.
fn generalized_time(t: Tlv<'_>) -> Result<SystemTime, OcspError> {
    let bad = OcspError::Malformed("time");
    let s = std::str::from_utf8(t.content).map_err(|_| bad.clone())?;
    let s = s.strip_suffix('Z').ok_or(bad.clone())?;
    let whole = s.split('.').next().unwrap_or_default();
    if whole.len() != 14 || !whole.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad);
    }
    let n = |r: std::ops::Range<usize>| whole[r].parse::<u32>().unwrap_or(0);
    let (y, mo, d, h, mi, se) = (n(0..4), n(4..6), n(6..8), n(8..10), n(10..12), n(12..14));
    let month = time::Month::try_from(u8::try_from(mo).unwrap_or(0)).map_err(|_| bad.clone())?;
    let date = time::Date::from_calendar_date(
        i32::try_from(y).unwrap_or(0),
        month,
        u8::try_from(d).unwrap_or(0),
    )
    .map_err(|_| bad.clone())?;
    let at = date
        .with_hms(
            u8::try_from(h).unwrap_or(99),
            u8::try_from(mi).unwrap_or(99),
            u8::try_from(se).unwrap_or(99),
        )
        .map_err(|_| bad.clone())?
        .assume_utc();
    let secs = u64::try_from(at.unix_timestamp()).map_err(|_| bad)?;
    Ok(SystemTime::UNIX_EPOCH + Duration::from_secs(secs))
}

/// Checks a responder's answer for `id` (the certificate `leaf` of `issuer`) at `now`.
pub(crate) fn check(
    answer: &[u8],
    id: &CertId,
    issuer: &CertificateDer<'_>,
    now: SystemTime,
) -> Result<Staple, OcspError> {
    let mut top = answer;
    let resp = expect(&mut top, SEQUENCE, "response")?;
    if !top.is_empty() {
        return Err(OcspError::Malformed("response"));
    }
    let mut body = resp.content;
    let status = expect(&mut body, ENUMERATED, "response status")?;
    match status.content {
        [0] => {}
        [s] => return Err(OcspError::Status(*s)),
        _ => return Err(OcspError::Malformed("response status")),
    }
    let bytes = expect(&mut body, 0xa0, "response bytes")?;
    let mut rb = bytes.content;
    let rb = expect(&mut rb, SEQUENCE, "response bytes")?;
    let mut rb = rb.content;
    let kind = expect(&mut rb, OID, "response type")?;
    if kind.content != OCSP_BASIC {
        return Err(OcspError::Malformed("response type (not basic)"));
    }
    let basic = expect(&mut rb, OCTET_STRING, "basic response")?;
    let mut b = basic.content;
    let basic = expect(&mut b, SEQUENCE, "basic response")?;
    let mut b = basic.content;
    let tbs = expect(&mut b, SEQUENCE, "response data")?;
    let alg = expect(&mut b, SEQUENCE, "signature algorithm")?;
    let sig = expect(&mut b, BIT_STRING, "signature")?;
    let certs = if b.is_empty() {
        Vec::new()
    } else {
        let wrapped = expect(&mut b, 0xa0, "certificates")?;
        let mut w = wrapped.content;
        let seq = expect(&mut w, SEQUENCE, "certificates")?;
        let mut list = seq.content;
        let mut out = Vec::new();
        while !list.is_empty() {
            out.push(expect(&mut list, SEQUENCE, "certificate")?.whole);
        }
        out
    };
    let Some((0, signature)) = sig.content.split_first() else {
        return Err(OcspError::Malformed("signature"));
    };
    // The data is read before the signature is checked (both must hold), so what it says is
    // reached by the fuzz target too.
    let found = single_response(tbs, id)?;
    verify(tbs.whole, alg.content, signature, issuer, &certs, now)?;
    let (status, this_update, next_update) = found;
    if this_update > now + SLACK || next_update.is_some_and(|n| n + SLACK < now) {
        return Err(OcspError::NotCurrent);
    }
    Ok(Staple {
        der: answer.to_vec(),
        status,
        this_update,
        next_update,
    })
}

/// The clock difference tolerated either way.
pub(crate) const SLACK: Duration = Duration::from_secs(60);

/// What the ResponseData says of `id`: its status, `thisUpdate` and `nextUpdate`.
fn single_response(
    tbs: Tlv<'_>,
    id: &CertId,
) -> Result<(CertStatus, SystemTime, Option<SystemTime>), OcspError> {
    // ResponseData: [0] version?, responderID, producedAt, responses, [1] extensions?
    let mut data = tbs.content;
    let mut first = tlv(&mut data)?;
    if first.tag == 0xa0 {
        first = tlv(&mut data)?;
    }
    if first.tag != 0xa1 && first.tag != 0xa2 {
        return Err(OcspError::Malformed("responder id"));
    }
    expect(&mut data, GENERALIZED_TIME, "produced at")?;
    let responses = expect(&mut data, SEQUENCE, "responses")?;
    let mut list = responses.content;
    while !list.is_empty() {
        let single = expect(&mut list, SEQUENCE, "single response")?;
        let mut s = single.content;
        let cert_id = expect(&mut s, SEQUENCE, "cert id")?;
        if !id.matches(cert_id) {
            continue;
        }
        let status = match tlv(&mut s)?.tag {
            0x80 => CertStatus::Good,
            0xa1 => CertStatus::Revoked,
            0x82 => CertStatus::Unknown,
            _ => return Err(OcspError::Malformed("cert status")),
        };
        let this_update = generalized_time(expect(&mut s, GENERALIZED_TIME, "this update")?)?;
        let next_update = if s.first() == Some(&0xa0) {
            let wrapped = tlv(&mut s)?;
            let mut w = wrapped.content;
            Some(generalized_time(expect(
                &mut w,
                GENERALIZED_TIME,
                "next update",
            )?)?)
        } else {
            None
        };
        // singleExtensions: one marked critical is not understood here, so the answer is not
        // taken (as Go's parser refuses it).
        if s.first() == Some(&0xa1) {
            let wrapped = tlv(&mut s)?;
            let mut w = wrapped.content;
            let exts = expect(&mut w, SEQUENCE, "single extensions")?;
            let mut exts = exts.content;
            while !exts.is_empty() {
                let ext = expect(&mut exts, SEQUENCE, "single extension")?;
                let mut e = ext.content;
                expect(&mut e, OID, "single extension id")?;
                if e.first() == Some(&0x01) && expect(&mut e, 0x01, "critical")?.content != [0] {
                    return Err(OcspError::Malformed("critical single extension"));
                }
            }
        }
        return Ok((status, this_update, next_update));
    }
    Err(OcspError::OtherCertificate)
}

/// The signature over the ResponseData: by the issuer's key, or by a certificate in the answer
/// that the issuer signed and that carries the OCSP-signing purpose (RFC 6960 §4.2.2.2).
fn verify(
    tbs: &[u8],
    alg: &[u8],
    signature: &[u8],
    issuer: &CertificateDer<'_>,
    certs: &[&[u8]],
    now: SystemTime,
) -> Result<(), OcspError> {
    let by = |signer: &[u8], alg: &[u8], message: &[u8], signature: &[u8]| -> Result<(), String> {
        let der = CertificateDer::from(signer.to_vec());
        let cert = webpki::EndEntityCert::try_from(&der).map_err(|e| e.to_string())?;
        let candidates = webpki::ALL_VERIFICATION_ALGS
            .iter()
            .filter(|a| a.signature_alg_id().as_ref() == alg);
        let mut last = "no supported signature algorithm".to_owned();
        for a in candidates {
            match cert.verify_signature(*a, message, signature) {
                Ok(()) => return Ok(()),
                Err(e) => last = e.to_string(),
            }
        }
        Err(last)
    };
    if by(issuer.as_ref(), alg, tbs, signature).is_ok() {
        return Ok(());
    }
    for &responder in certs {
        // The responder certificate must be the issuer's, for OCSP signing, and current.
        let Ok((_, parsed)) = x509_parser::parse_x509_certificate(responder) else {
            continue;
        };
        let for_ocsp = parsed
            .extended_key_usage()
            .ok()
            .flatten()
            .is_some_and(|eku| {
                eku.value.other.iter().any(|o| o.as_bytes() == OCSP_SIGNING)
                    || eku.value.ocsp_signing
            });
        let secs = now
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let current = i64::try_from(secs)
            .ok()
            .and_then(|s| x509_parser::time::ASN1Time::from_timestamp(s).ok())
            .is_some_and(|t| parsed.validity().is_valid_at(t));
        let mut cert = responder;
        let Ok(outer) = expect(&mut cert, SEQUENCE, "responder certificate") else {
            continue;
        };
        let mut parts = outer.content;
        let (Ok(rtbs), Ok(ralg), Ok(rsig)) = (
            tlv(&mut parts),
            expect(&mut parts, SEQUENCE, "algorithm"),
            expect(&mut parts, BIT_STRING, "signature"),
        ) else {
            continue;
        };
        let issued = match rsig.content.split_first() {
            Some((0, bits)) => by(issuer.as_ref(), ralg.content, rtbs.whole, bits).is_ok(),
            _ => false,
        };
        if for_ocsp && current && issued && by(responder, alg, tbs, signature).is_ok() {
            return Ok(());
        }
    }
    Err(OcspError::Signature(
        "neither the issuer nor an OCSP responder certificate it issued signed it".into(),
    ))
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "test code: a panic is a test failure")]

    use super::*;

    /// Made with openssl (`openssl ca`, `openssl ocsp -index … -reqin … -respout … -ndays 7`): a
    /// P-256 CA, `good` and `revoked` leaves with an AIA OCSP URL, a delegated `ocsp-signer`
    /// (EKU OCSPSigning) and an unrelated CA; answers signed by the CA, by the signer, by the
    /// unrelated CA, on 2026-12-04, valid 7 days.
    fn pem(name: &str) -> CertificateDer<'static> {
        let text = match name {
            "ca" => include_str!("../../tests/fixtures/ocsp/ca.crt"),
            "good" => include_str!("../../tests/fixtures/ocsp/good.crt"),
            "revoked" => include_str!("../../tests/fixtures/ocsp/revoked.crt"),
            _ => include_str!("../../tests/fixtures/ocsp/other-ca.crt"),
        };
        use rustls_pki_types::pem::PemObject as _;
        CertificateDer::from_pem_slice(text.as_bytes()).unwrap()
    }

    /// 2026-12-05: inside every fixture answer's validity.
    fn now() -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(1_796_428_800)
    }

    #[test]
    fn the_request_is_openssls_byte_for_byte() {
        let id = CertId::of(&pem("good"), &pem("ca")).unwrap();
        assert_eq!(
            id.request(),
            include_bytes!("../../tests/fixtures/ocsp/req-good.der")
        );
    }

    #[test]
    fn answers_signed_by_the_ca_or_its_responder_are_stapled_with_their_status() {
        let ca = pem("ca");
        let good = CertId::of(&pem("good"), &ca).unwrap();
        for answer in [
            &include_bytes!("../../tests/fixtures/ocsp/resp-good-ca.der")[..],
            &include_bytes!("../../tests/fixtures/ocsp/resp-good-signer.der")[..],
        ] {
            let staple = check(answer, &good, &ca, now()).unwrap();
            assert_eq!(staple.status, CertStatus::Good);
            assert_eq!(staple.der, answer);
            let next = staple.next_update.unwrap();
            assert_eq!(
                next.duration_since(staple.this_update).unwrap(),
                Duration::from_secs(7 * 24 * 3600)
            );
        }
        let revoked = CertId::of(&pem("revoked"), &ca).unwrap();
        let answer = include_bytes!("../../tests/fixtures/ocsp/resp-revoked.der");
        assert_eq!(
            check(answer, &revoked, &ca, now()).unwrap().status,
            CertStatus::Revoked
        );
    }

    #[test]
    fn answers_that_do_not_hold_are_refused() {
        let ca = pem("ca");
        let good = CertId::of(&pem("good"), &ca).unwrap();
        let revoked = CertId::of(&pem("revoked"), &ca).unwrap();
        let answer = include_bytes!("../../tests/fixtures/ocsp/resp-good-ca.der");
        // For another certificate.
        assert_eq!(
            check(answer, &revoked, &ca, now()).unwrap_err(),
            OcspError::OtherCertificate
        );
        // Signed by a CA that did not issue the certificate.
        let other = include_bytes!("../../tests/fixtures/ocsp/resp-good-other.der");
        assert!(matches!(
            check(other, &good, &ca, now()),
            Err(OcspError::Signature(_))
        ));
        // Checked against the wrong issuer.
        assert!(matches!(
            check(answer, &good, &pem("other"), now()),
            Err(OcspError::Signature(_))
        ));
        // Out of date, and from the future.
        let late = now() + Duration::from_secs(30 * 24 * 3600);
        assert_eq!(
            check(answer, &good, &ca, late).unwrap_err(),
            OcspError::NotCurrent
        );
        let early = now() - Duration::from_secs(30 * 24 * 3600);
        assert_eq!(
            check(answer, &good, &ca, early).unwrap_err(),
            OcspError::NotCurrent
        );
        // A responder's error status, and bytes that are not an answer.
        assert_eq!(
            check(&[0x30, 0x03, 0x0a, 0x01, 0x03], &good, &ca, now()).unwrap_err(),
            OcspError::Status(3)
        );
        let mut cut = answer.to_vec();
        cut.truncate(cut.len() - 10);
        assert!(matches!(
            check(&cut, &good, &ca, now()),
            Err(OcspError::Malformed(_))
        ));
        let mut tampered = answer.to_vec();
        let at = tampered.len() / 3;
        tampered[at] ^= 1;
        assert!(check(&tampered, &good, &ca, now()).is_err());
    }

    #[test]
    fn a_critical_single_extension_is_refused_and_another_one_is_not() {
        let id = CertId::of(&pem("good"), &pem("ca")).unwrap();
        let data = |critical: bool| {
            let mut ext = der(OID, &[0x2b, 0x06, 0x01, 0x04, 0x01, 0x82, 0x37, 0x15, 0x01]);
            if critical {
                ext.extend(der(0x01, &[0xff]));
            }
            ext.extend(der(OCTET_STRING, &der(0x05, &[])));
            let mut single = id.der();
            single.extend([0x80, 0x00]);
            single.extend(der(GENERALIZED_TIME, b"20261204025756Z"));
            single.extend(der(0xa1, &der(SEQUENCE, &der(SEQUENCE, &ext))));
            let mut data = der(0xa2, &der(OCTET_STRING, &[0; 20]));
            data.extend(der(GENERALIZED_TIME, b"20261204025756Z"));
            data.extend(der(SEQUENCE, &der(SEQUENCE, &single)));
            der(SEQUENCE, &data)
        };
        for (critical, refused) in [(true, true), (false, false)] {
            let bytes = data(critical);
            let mut input = bytes.as_slice();
            let tbs = tlv(&mut input).unwrap();
            assert_eq!(single_response(tbs, &id).is_err(), refused, "{critical}");
        }
    }

    #[test]
    fn arbitrary_bytes_never_panic() {
        let ca = pem("ca");
        let good = CertId::of(&pem("good"), &ca).unwrap();
        let answer = include_bytes!("../../tests/fixtures/ocsp/resp-good-ca.der");
        for cut in 0..answer.len() {
            let _ = check(&answer[..cut], &good, &ca, now());
        }
        for i in 0..answer.len() {
            let mut b = answer.to_vec();
            b[i] = b[i].wrapping_add(0x41);
            let _ = check(&b, &good, &ca, now());
        }
    }
}
