//! HTTP/3 entry points end to end: TLS options (client certificates) hold over QUIC as over TCP,
//! interim responses and request bodies go through, a malformed request is refused, and answers
//! are verified against the entry point's certificate.

use std::sync::Arc;
use std::time::Duration;

use bridge_tests::h3client::{H3Request, request};
use bridge_tests::tls::TestCa;
use rustls::pki_types::pem::PemObject;

use crate::harness::build_and_serve;

/// A client trusting only `ca.crt` of `dir`, sending `client` (certificate, key) when given.
fn client(dir: &std::path::Path, client: Option<&str>) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for c in rustls::pki_types::CertificateDer::pem_file_iter(dir.join("ca.crt")).unwrap() {
        roots.add(c.unwrap()).unwrap();
    }
    let provider = Arc::new(rustls::crypto::aws_lc_rs::default_provider());
    let builder = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots);
    let cfg = match client {
        Some(name) => {
            let chain =
                rustls::pki_types::CertificateDer::pem_file_iter(dir.join(format!("{name}.crt")))
                    .unwrap()
                    .collect::<Result<Vec<_>, _>>()
                    .unwrap();
            let key =
                rustls::pki_types::PrivateKeyDer::from_pem_file(dir.join(format!("{name}.key")))
                    .unwrap();
            builder.with_client_auth_cert(chain, key).unwrap()
        }
        None => builder.with_no_client_auth(),
    };
    Arc::new(cfg)
}

#[test]
fn http3_serves_the_routers_with_the_entry_point_s_tls_options() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = TestCa::new(d);
    ca.issue(d, "site", &["site.test"]);
    ca.issue(d, "operator", &["operator"]);
    let pause = Duration::from_millis(300);
    let hints = bridge_tests::h2server::early_hints(None, pause);
    let dynamic = format!(
        "http:\n  routers:\n    hints:\n      rule: Host(`site.test`) && PathPrefix(`/hints`)\n      service: hints\n  services:\n    hints:\n      loadBalancer:\n        servers:\n          - url: h2c://{hints}\n\
         tls:\n  certificates:\n    - certFile: {d}/site.crt\n      keyFile: {d}/site.key\n  options:\n    default:\n      clientAuth:\n        caFiles: [{d}/ca.crt]\n        clientAuthType: RequireAndVerifyClientCert\n",
        d = d.display()
    );
    let rt = build_and_serve(
        d,
        "entryPoints:\n  web:\n    address: \":443\"\n    http:\n      tls: {}\n    http3: {}\napi:\n  insecure: true\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
        &dynamic,
        &[],
    );
    // Without a client certificate the QUIC handshake is refused, as the TCP one is.
    let refused = request(
        rt.web,
        "site.test",
        H3Request::get("/hints"),
        client(d, None),
    );
    assert!(refused.is_err(), "no client certificate: {refused:?}");
    // With one: the body goes through, and the server's interim responses come first, in order.
    let a = request(
        rt.web,
        "site.test",
        H3Request::post("/hints", b"abcd"),
        client(d, Some("operator")),
    )
    .unwrap();
    assert_eq!((a.status, a.text().as_str()), (200, "got 4 bytes"));
    assert_eq!(a.interims, [103, 102], "{a:?}");
    // A body longer than its Content-Length is malformed (RFC 9114 §4.1.2): no answer from
    // the server.
    let bad = request(
        rt.web,
        "site.test",
        H3Request::post("/hints", b"abcdef").header("content-length", "2"),
        client(d, Some("operator")),
    );
    assert!(bad.as_ref().map_or(true, |a| a.status != 200), "{bad:?}");
    // A request for no router: the proxy's own 404 over HTTP/3.
    let a = request(
        rt.web,
        "site.test",
        H3Request::get("/elsewhere"),
        client(d, Some("operator")),
    )
    .unwrap();
    assert_eq!(a.status, 404);
}
