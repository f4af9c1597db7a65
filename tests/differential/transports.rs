//! serversTransport TLS versions and cipher suites through bridge-runtime and Traefik, against
//! one `https` server with an ECDSA certificate speaking TLS 1.2 and 1.3: a TLS 1.2 list without
//! an ECDSA suite leaves nothing to agree on (502); the same list with TLS 1.3 allowed does not
//! matter (Go never restricts TLS 1.3 suites).

use bridge_tests::backends::{Reply, backend};
use bridge_tests::tls::TestCa;
use bridge_tests::traefik::{Probe, agree, oracle, serve_twice};

#[test]
fn servers_transport_tls_versions_and_cipher_suites_as_traefik_uses_them() {
    let oracle = oracle("servers_transport_tls_versions_and_cipher_suites_as_traefik_uses_them");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = TestCa::new(d);
    ca.issue(d, "server", &["127.0.0.1"]);
    let app = backend("app")
        .tls(&d.join("server.crt"), &d.join("server.key"))
        .answer(|_| Reply::ok("tls ok"))
        .start();
    let ca_file = d.join("ca.crt").to_string_lossy().into_owned();
    let cases = [
        (
            "ecdsa12",
            "maxVersion: VersionTLS12\n      cipherSuites: [TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256]",
            200,
        ),
        (
            "rsa12",
            "maxVersion: VersionTLS12\n      cipherSuites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]",
            502,
        ),
        (
            "rsa13",
            "cipherSuites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256]",
            200,
        ),
        (
            "min13",
            "minVersion: VersionTLS13\n      maxVersion: VersionTLS13",
            200,
        ),
        ("max12", "maxVersion: VersionTLS12", 200),
    ];
    let mut dynamic = String::from("http:\n  routers:\n");
    for (name, _, _) in cases {
        dynamic.push_str(&format!(
            "    {name}:\n      rule: \"PathPrefix(`/{name}/`)\"\n      entryPoints: [web]\n      service: {name}\n"
        ));
    }
    dynamic.push_str("  serversTransports:\n");
    for (name, opts, _) in cases {
        dynamic.push_str(&format!(
            "    {name}:\n      rootCAs: [\"{ca_file}\"]\n      {opts}\n"
        ));
    }
    dynamic.push_str("  services:\n");
    for (name, _, _) in cases {
        dynamic.push_str(&format!(
            "    {name}:\n      loadBalancer:\n        serversTransport: {name}\n        servers:\n          - url: \"https://127.0.0.1:{}\"\n",
            app.port()
        ));
    }
    let routers: Vec<&str> = cases.iter().map(|(n, _, _)| *n).collect();
    let twin = serve_twice(d, oracle.as_deref(), &dynamic, &routers);
    for (name, _, status) in cases {
        let target = format!("/{name}/x");
        let got = agree(&twin, &Probe::get(&target));
        assert_eq!(got.status, status, "{name}");
    }
}

/// `peerCertURI`: the server's certificate must carry the URI among its SAN URIs (any case);
/// with `insecureSkipVerify` the chain is still verified against the CAs, without the name.
#[test]
fn peer_cert_uri_is_checked_as_traefik_checks_it() {
    let oracle = oracle("peer_cert_uri_is_checked_as_traefik_checks_it");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = TestCa::new(d);
    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()]).unwrap();
    params.subject_alt_names.push(rcgen::SanType::URI(
        "spiffe://plant.example/ns/scada/sa/app".try_into().unwrap(),
    ));
    ca.issue_params(d, "server", &params);
    // A second CA the server's certificate does not come from.
    let other = tempfile::tempdir().unwrap();
    TestCa::new(other.path());
    let app = backend("app")
        .tls(&d.join("server.crt"), &d.join("server.key"))
        .answer(|_| Reply::ok("uri ok"))
        .start();
    let ca_file = d.join("ca.crt").to_string_lossy().into_owned();
    let other_ca = other.path().join("ca.crt").to_string_lossy().into_owned();
    let cases = [
        (
            "same",
            format!(
                "rootCAs: [\"{ca_file}\"]\n      peerCertURI: \"spiffe://plant.example/ns/scada/sa/app\""
            ),
            200,
        ),
        (
            "case",
            format!(
                "rootCAs: [\"{ca_file}\"]\n      peerCertURI: \"SPIFFE://Plant.Example/ns/scada/sa/app\""
            ),
            200,
        ),
        (
            "other",
            format!(
                "rootCAs: [\"{ca_file}\"]\n      peerCertURI: \"spiffe://plant.example/ns/scada/sa/db\""
            ),
            502,
        ),
        (
            "skipname",
            format!(
                "rootCAs: [\"{ca_file}\"]\n      serverName: wrong.example\n      insecureSkipVerify: true\n      peerCertURI: \"spiffe://plant.example/ns/scada/sa/app\""
            ),
            200,
        ),
        (
            "skipchain",
            format!(
                "rootCAs: [\"{other_ca}\"]\n      insecureSkipVerify: true\n      peerCertURI: \"spiffe://plant.example/ns/scada/sa/app\""
            ),
            502,
        ),
    ];
    let mut dynamic = String::from("http:\n  routers:\n");
    for (name, _, _) in &cases {
        dynamic.push_str(&format!(
            "    {name}:\n      rule: \"PathPrefix(`/{name}/`)\"\n      entryPoints: [web]\n      service: {name}\n"
        ));
    }
    dynamic.push_str("  serversTransports:\n");
    for (name, opts, _) in &cases {
        dynamic.push_str(&format!("    {name}:\n      {opts}\n"));
    }
    dynamic.push_str("  services:\n");
    for (name, _, _) in &cases {
        dynamic.push_str(&format!(
            "    {name}:\n      loadBalancer:\n        serversTransport: {name}\n        servers:\n          - url: \"https://127.0.0.1:{}\"\n",
            app.port()
        ));
    }
    let routers: Vec<&str> = cases.iter().map(|(n, _, _)| *n).collect();
    let twin = serve_twice(d, oracle.as_deref(), &dynamic, &routers);
    for (name, _, status) in &cases {
        let target = format!("/{name}/x");
        let ours = bridge_tests::traefik::fetch(twin.bridge, "GET", &target, &[], b"").unwrap();
        assert_eq!(ours.status, *status, "{name}");
        if let Some(traefik) = twin.traefik {
            let theirs = bridge_tests::traefik::fetch(traefik, "GET", &target, &[], b"").unwrap();
            // A certificate this check refuses: Traefik's error is not a net error, so it
            // answers 500 (every time, measured); bridge-runtime answers 502, as for every
            // server it cannot reach (docs/compatibility.md). A success must agree exactly.
            if *status == 200 {
                assert_eq!(
                    (theirs.status, theirs.text()),
                    (200, "uri ok".to_owned()),
                    "{name}"
                );
            } else {
                assert_eq!(theirs.status, 500, "{name}: Traefik");
            }
        }
    }
}
