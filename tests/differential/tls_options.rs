//! TLS options chosen by SNI: on an entry point whose routers use different TLS options, a
//! handshake gets the options of the router whose `Host` its server name names (the `default`
//! options for any other name), and a request whose router needs other options than those its
//! connection got is answered 421 (Traefik's SNI check).

use std::io::{Read, Write};
use std::net::SocketAddr;
use std::time::Duration;

use bridge_tests::backends::{Reply, backend};
use bridge_tests::tls::{TestCa, try_tls_get};
use bridge_tests::traefik::{oracle, serve_twice};

#[test]
fn tls_options_are_chosen_by_sni_and_a_mismatched_host_is_misdirected() {
    let oracle = oracle("tls_options_are_chosen_by_sni_and_a_mismatched_host_is_misdirected");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = TestCa::new(d);
    ca.issue(
        d,
        "server",
        &["ui.example.com", "api.example.com", "other.example.com"],
    );
    ca.issue(d, "client", &["client.example.com"]);
    let app = backend("app")
        .answer(|r| Reply::ok(format!("app {}", r.host)))
        .start();
    let p = |f: &str| d.join(f).to_string_lossy().into_owned();
    let dynamic = format!(
        r#"http:
  routers:
    ui:
      rule: "Host(`ui.example.com`)"
      entryPoints: [web]
      service: app
      tls: {{}}
    api:
      rule: "Host(`api.example.com`)"
      entryPoints: [web]
      service: app
      tls:
        options: mtls
    # Routers Traefik cannot give their options by SNI get the default ones (warned by check):
    # no host in the rule, or a host routers with other options name too.
    nohost:
      rule: "PathPrefix(`/x`)"
      entryPoints: [web]
      service: app
      tls:
        options: mtls
    clash:
      rule: "Host(`ui.example.com`) && Path(`/c`)"
      entryPoints: [web]
      service: app
      tls:
        options: mtls
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
    mtls:
      clientAuth:
        caFiles: ["{ca}"]
        clientAuthType: RequireAndVerifyClientCert
"#,
        app = app.port(),
        crt = p("server.crt"),
        key = p("server.key"),
        ca = p("ca.crt"),
    );
    // Traefik renames the routers it demotes (`web-conflicted-…`): wait for `api` only.
    let twin = serve_twice(d, oracle.as_deref(), &dynamic, &["api"]);
    let (cert, key) = (d.join("client.crt"), d.join("client.key"));
    let with_cert = Some((cert.as_path(), key.as_path()));
    let (api, ui, other) = ("api.example.com", "ui.example.com", "other.example.com");
    // `None`: the handshake is refused.
    let cases = [
        ((api, api, "/"), with_cert, Some(200)),
        // The API's options require a client certificate.
        ((api, api, "/"), None, None),
        ((ui, ui, "/"), None, Some(200)),
        // A connection for the UI cannot reach the API's router, nor one for the API the UI's.
        ((ui, api, "/"), None, Some(421)),
        ((api, ui, "/"), with_cert, Some(421)),
        // A name no router names gets the default options.
        ((other, ui, "/"), None, Some(200)),
        ((other, api, "/"), None, Some(421)),
        ((ui, ui, "/c"), None, Some(200)),
        ((other, other, "/x"), None, Some(200)),
        ((api, other, "/x"), with_cert, Some(421)),
    ];
    for ((sni, host, path), client, want) in cases {
        let ours = try_tls_get(twin.bridge, (sni, host, path), client);
        match (want, &ours) {
            (Some(status), Ok((got, body))) => {
                assert_eq!(*got, status, "SNI {sni}, Host {host}: {body}");
                if status == 421 {
                    assert_eq!(body, "Misdirected Request\n");
                }
            }
            (None, Err(_)) => {}
            _ => panic!("SNI {sni}, Host {host}: {ours:?}, want {want:?}"),
        }
        if let Some(traefik) = twin.traefik {
            let theirs = try_tls_get(traefik, (sni, host, path), client);
            assert_eq!(
                ours.as_ref().ok(),
                theirs.as_ref().ok(),
                "SNI {sni}, Host {host}: bridge {ours:?}, traefik {theirs:?}"
            );
        }
    }
}

/// A client offering only `groups` (all of the provider's when empty) that keeps sessions to
/// resume them.
fn client_with(
    groups: &[&'static dyn rustls::crypto::SupportedKxGroup],
) -> std::sync::Arc<rustls::ClientConfig> {
    let mut provider = rustls::crypto::aws_lc_rs::default_provider();
    if !groups.is_empty() {
        provider.kx_groups = groups.to_vec();
    }
    let provider = std::sync::Arc::new(provider);
    let cfg = rustls::ClientConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap()
        .dangerous()
        .with_custom_certificate_verifier(std::sync::Arc::new(bridge_tests::tls::AnyServerCert(
            provider,
        )))
        .with_no_client_auth();
    std::sync::Arc::new(cfg)
}

/// One `GET /` over TLS with `cfg`: whether the handshake resumed a session, or `Err` when it
/// failed.
fn handshake(addr: SocketAddr, cfg: &std::sync::Arc<rustls::ClientConfig>) -> Result<bool, String> {
    let name = bridge_tests::prod::DOMAIN.try_into().unwrap();
    let conn = rustls::ClientConnection::new(cfg.clone(), name).map_err(|e| e.to_string())?;
    let tcp = std::net::TcpStream::connect(addr).map_err(|e| e.to_string())?;
    tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let mut s = rustls::StreamOwned::new(conn, tcp);
    write!(
        s,
        "GET / HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
        bridge_tests::prod::DOMAIN
    )
    .map_err(|e| e.to_string())?;
    let mut out = Vec::new();
    s.read_to_end(&mut out).map_err(|e| e.to_string())?;
    if !out.starts_with(b"HTTP/1.1 200") {
        return Err(String::from_utf8_lossy(&out).into_owned());
    }
    Ok(s.conn.handshake_kind() == Some(rustls::HandshakeKind::Resumed))
}

#[test]
fn curve_preferences_and_disable_session_tickets_are_served_as_traefik_serves_them() {
    use rustls::crypto::aws_lc_rs::kx_group::{SECP256R1, SECP384R1, X25519};
    let oracle =
        oracle("curve_preferences_and_disable_session_tickets_are_served_as_traefik_serves_them");
    let app = backend("app").answer(|_| Reply::ok("ok")).start();
    for (options, x25519_ok, resumes) in [
        ("", true, true),
        (
            "      curvePreferences: [CurveP384, secp256r1]\n      disableSessionTickets: true\n",
            false,
            false,
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        TestCa::new(d).issue(d, "server", &[bridge_tests::prod::DOMAIN]);
        let p = |f: &str| d.join(f).to_string_lossy().into_owned();
        let dynamic = format!(
            r#"http:
  routers:
    app:
      rule: "PathPrefix(`/`)"
      entryPoints: [web]
      service: app
      tls: {{}}
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
      minVersion: VersionTLS12
{options}"#,
            app = app.port(),
            crt = p("server.crt"),
            key = p("server.key"),
        );
        let twin = serve_twice(d, oracle.as_deref(), &dynamic, &["app"]);
        for (who, addr) in twin.targets() {
            let only_x25519 = handshake(addr, &client_with(&[X25519]));
            assert_eq!(
                only_x25519.is_ok(),
                x25519_ok,
                "{who} {options}: {only_x25519:?}"
            );
            assert!(
                handshake(addr, &client_with(&[SECP384R1])).is_ok(),
                "{who} {options}"
            );
            assert!(
                handshake(addr, &client_with(&[SECP256R1])).is_ok(),
                "{who} {options}"
            );
            // The same client again: its session is resumed unless tickets are disabled.
            let cfg = client_with(&[]);
            assert_eq!(handshake(addr, &cfg), Ok(false), "{who} {options}");
            assert_eq!(handshake(addr, &cfg), Ok(resumes), "{who} {options}");
        }
    }
}
