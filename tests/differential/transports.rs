//! serversTransport TLS versions and cipher suites through bridge-runtime and Traefik, against
//! one `https` server with an ECDSA certificate speaking TLS 1.2 and 1.3: a TLS 1.2 list without
//! an ECDSA suite leaves nothing to agree on (502); the same list with TLS 1.3 allowed does not
//! matter (Go never restricts TLS 1.3 suites).

use bridge_tests::backends::{Reply, backend};
use bridge_tests::tls::TestCa;
use bridge_tests::traefik::{Probe, agree, oracle, parse_answer, serve_twice, serve_twice_with};

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

/// The answers on one connection to `count` GETs sent one after the other: for each, whether it
/// said `Connection: close`; stops when the proxy closes the connection.
fn closes_after(addr: std::net::SocketAddr, count: usize) -> Vec<bool> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .ok();
    let mut out = Vec::new();
    for _ in 0..count {
        if s.write_all(b"GET /k HTTP/1.1\r\nHost: test.local\r\n\r\n")
            .is_err()
        {
            break;
        }
        let mut raw = Vec::new();
        let mut piece = [0u8; 4096];
        // One small answer with a length: read until its body is in.
        let done = loop {
            match s.read(&mut piece) {
                Ok(0) | Err(_) => break false,
                Ok(n) => raw.extend_from_slice(&piece[..n]),
            }
            if let Some(a) = parse_answer(&raw, false)
                && a.text() == "k"
            {
                break true;
            }
        };
        if !done {
            break;
        }
        let text = String::from_utf8_lossy(&raw).to_ascii_lowercase();
        out.push(text.contains("\r\nconnection: close\r\n"));
    }
    out
}

/// The value of setting `id` in the first SETTINGS frame a server sends after the client preface
/// (prior knowledge).
fn h2_setting(addr: std::net::SocketAddr, id: u16) -> Option<u32> {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(std::time::Duration::from_secs(5)))
        .ok();
    // The preface, then an empty SETTINGS frame.
    s.write_all(b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0")
        .ok()?;
    let mut head = [0u8; 9];
    s.read_exact(&mut head).ok()?;
    let len = usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
    if head[3] != 0x4 {
        return None;
    }
    let mut payload = vec![0u8; len];
    s.read_exact(&mut payload).ok()?;
    payload.chunks_exact(6).find_map(|p| {
        (u16::from_be_bytes([p[0], p[1]]) == id)
            .then(|| u32::from_be_bytes([p[2], p[3], p[4], p[5]]))
    })
}

#[test]
fn keep_alive_limits_and_http2_streams_are_as_in_traefik() {
    let oracle = oracle("keep_alive_limits_and_http2_streams_are_as_in_traefik");
    let app = backend("app").answer(|_| Reply::ok("k")).start();
    let dir = tempfile::tempdir().unwrap();
    let dynamic = format!(
        "http:\n  routers:\n    k:\n      rule: \"PathPrefix(`/k`)\"\n      entryPoints: [web]\n      service: app\n  services:\n    app:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:{}\"\n",
        app.port()
    );
    let web_extra = "    transport:\n      keepAliveMaxRequests: 3\n    http2:\n      maxConcurrentStreams: 42\n";
    let twin = serve_twice_with(dir.path(), oracle.as_deref(), &dynamic, &["k"], web_extra);
    for (who, addr) in twin.targets() {
        // The third answer says close, and nothing more is answered on that connection.
        assert_eq!(closes_after(addr, 5), [false, false, true], "{who}");
        // HTTP/2: the server's first SETTINGS frame carries the stream limit.
        assert_eq!(h2_setting(addr, 0x3), Some(42), "{who}");
    }
}
