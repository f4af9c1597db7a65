//! `passTLSClientCert`: the certificates a client sent over TLS, passed to the server as
//! Traefik passes them (docs/traefik-behaviour/digestauth-passtlsclientcert.md §2).

use bridge_tests::backends::{Reply, backend};
use bridge_tests::tls::{TestCa, tls_connect_as, tls_get_with};
use bridge_tests::traefik::{oracle, serve_twice};

#[test]
fn client_certificates_reach_the_server_as_traefik_passes_them() {
    let oracle = oracle("client_certificates_reach_the_server_as_traefik_passes_them");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = TestCa::new(d);
    ca.issue(d, "server", &[bridge_tests::prod::DOMAIN]);
    let mut params = rcgen::CertificateParams::new(vec!["client.example.com".to_owned()]).unwrap();
    params.distinguished_name = rcgen::DistinguishedName::new();
    let dn = &mut params.distinguished_name;
    dn.push(rcgen::DnType::CommonName, "client one");
    dn.push(rcgen::DnType::OrganizationalUnitName, "Ops Team");
    dn.push(rcgen::DnType::OrganizationName, "Client Org");
    dn.push(rcgen::DnType::LocalityName, "Toulouse");
    dn.push(rcgen::DnType::CountryName, "FR");
    dn.push(
        rcgen::DnType::CustomDnType(vec![0, 9, 2342, 19_200_300, 100, 1, 25]),
        "net",
    );
    params
        .subject_alt_names
        .push(rcgen::SanType::IpAddress("10.0.0.5".parse().unwrap()));
    params.serial_number = Some(rcgen::SerialNumber::from_slice(&[0x1a, 0x2b, 0x3c]));
    ca.issue_params(d, "client", &params);
    let app = backend("app")
        .answer(|r| {
            Reply::ok(format!(
                "pem={} info={}",
                r.header("x-forwarded-tls-client-cert").unwrap_or("-"),
                r.header("x-forwarded-tls-client-cert-info").unwrap_or("-")
            ))
        })
        .start();
    let p = |f: &str| d.join(f).to_string_lossy().into_owned();
    let dynamic = format!(
        r#"http:
  routers:
    pem:
      rule: "PathPrefix(`/pem`)"
      entryPoints: [web]
      middlewares: [pem]
      service: app
      tls: {{}}
    info:
      rule: "PathPrefix(`/info`)"
      entryPoints: [web]
      middlewares: [info]
      service: app
      tls: {{}}
    cn:
      rule: "PathPrefix(`/cn`)"
      entryPoints: [web]
      middlewares: [cn]
      service: app
      tls: {{}}
  middlewares:
    pem:
      passTLSClientCert:
        pem: true
    info:
      passTLSClientCert:
        info:
          notAfter: true
          notBefore: true
          sans: true
          serialNumber: true
          subject:
            country: true
            province: true
            locality: true
            organization: true
            organizationalUnit: true
            commonName: true
            serialNumber: true
            domainComponent: true
          issuer:
            country: true
            commonName: true
            domainComponent: true
    cn:
      passTLSClientCert:
        info:
          subject:
            commonName: true
  services:
    app:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{app}"
tls:
  certificates:
    - certFile: "{crt}"
      keyFile: "{key}"
  options:
    default:
      clientAuth:
        caFiles: ["{ca}"]
        clientAuthType: VerifyClientCertIfGiven
"#,
        app = app.port(),
        crt = p("server.crt"),
        key = p("server.key"),
        ca = p("ca.crt"),
    );
    let twin = serve_twice(d, oracle.as_deref(), &dynamic, &["pem", "info", "cn"]);
    let (cert, key) = (d.join("client.crt"), d.join("client.key"));
    let forged =
        "X-Forwarded-Tls-Client-Cert: forged\r\nX-Forwarded-Tls-Client-Cert-Info: forged\r\n";
    let ask = |addr, with_cert: bool, path: &str, fields: &str| {
        let client = with_cert.then_some((cert.as_path(), key.as_path()));
        let mut s = tls_connect_as(addr, client);
        tls_get_with(&mut s, path, fields)
    };
    let mut cases = Vec::new();
    for with_cert in [true, false] {
        for path in ["/pem", "/info", "/cn"] {
            for fields in ["", forged] {
                cases.push((with_cert, path, fields));
            }
        }
    }
    for (with_cert, path, fields) in cases {
        let ours = ask(twin.bridge, with_cert, path, fields);
        assert_eq!(ours.0, 200, "{path} cert={with_cert}");
        if !with_cert {
            // Nothing passed, and what the client forged was removed at the entry point.
            assert_eq!(ours.1, "pem=- info=-", "{path} {fields:?}");
        }
        if with_cert && path == "/cn" {
            assert_eq!(ours.1, "pem=- info=Subject%3D%22CN%3Dclient+one%22");
        }
        if let Some(traefik) = twin.traefik {
            let theirs = ask(traefik, with_cert, path, fields);
            assert_eq!(ours, theirs, "{path} cert={with_cert} {fields:?}");
        }
    }
}

/// `GET path` over TLS for the prod name with `client` (certificate, key) if given.
fn try_get(
    addr: std::net::SocketAddr,
    client: Option<(&std::path::Path, &std::path::Path)>,
    path: &str,
) -> Result<(u16, String), String> {
    let name = bridge_tests::prod::DOMAIN;
    bridge_tests::tls::try_tls_get(addr, (name, name, path), client)
}

#[test]
fn unverified_client_certificates_are_asked_for_and_passed_as_traefik_does() {
    let oracle = oracle("unverified_client_certificates_are_asked_for_and_passed_as_traefik_does");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = TestCa::new(d);
    ca.issue(d, "server", &[bridge_tests::prod::DOMAIN]);
    // A client certificate no configured CA vouches for.
    let stranger_dir = d.join("stranger");
    std::fs::create_dir_all(&stranger_dir).unwrap();
    TestCa::new(&stranger_dir).issue(&stranger_dir, "client", &["client.example.com"]);
    let (cert, key) = (
        stranger_dir.join("client.crt"),
        stranger_dir.join("client.key"),
    );
    let app = backend("app")
        .answer(|r| {
            Reply::ok(format!(
                "info={}",
                r.header("x-forwarded-tls-client-cert-info").unwrap_or("-")
            ))
        })
        .start();
    let p = |f: &str| d.join(f).to_string_lossy().into_owned();
    for (auth_type, without_cert_answers) in
        [("RequestClientCert", true), ("RequireAnyClientCert", false)]
    {
        let dynamic = format!(
            r#"http:
  routers:
    cn:
      rule: "PathPrefix(`/cn`)"
      entryPoints: [web]
      middlewares: [cn]
      service: app
      tls: {{}}
  middlewares:
    cn:
      passTLSClientCert:
        info:
          subject:
            commonName: true
  services:
    app:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{app}"
tls:
  certificates:
    - certFile: "{crt}"
      keyFile: "{key}"
  options:
    default:
      clientAuth:
        clientAuthType: {auth_type}
"#,
            app = app.port(),
            crt = p("server.crt"),
            key = p("server.key"),
        );
        let run = d.join(auth_type);
        std::fs::create_dir_all(&run).unwrap();
        let twin = serve_twice(&run, oracle.as_deref(), &dynamic, &["cn"]);
        for (who, addr) in twin.targets() {
            let with = try_get(addr, Some((&cert, &key)), "/cn");
            assert_eq!(
                with,
                Ok((200, "info=Subject%3D%22CN%3Dclient%22".to_owned())),
                "{who} {auth_type}: a certificate no CA vouches for is taken and passed on"
            );
            let without = try_get(addr, None, "/cn");
            if without_cert_answers {
                assert_eq!(without, Ok((200, "info=-".to_owned())), "{who} {auth_type}");
            } else {
                assert!(without.is_err(), "{who} {auth_type}: {without:?}");
            }
        }
    }
}
