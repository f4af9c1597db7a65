//! OCSP stapling (static `ocsp`): which certificates get a staple and what it says, as Traefik
//! staples them (docs/traefik-behaviour/ocsp.md §5), against one responder both ask.

use std::time::{Duration, Instant};

use bridge_tests::backends::{Reply, backend};
use bridge_tests::ocsp::{OcspCa, Responder, Status, handshake};
use bridge_tests::traefik::{free_port, oracle, serve_twice_static};

/// Leaves by SNI name: (serial, what is stapled).
const WANT: [(&str, Option<(u8, Status)>); 8] = [
    ("good.test", Some((0x11, Status::Good))),
    ("revoked.test", Some((0x12, Status::Revoked))),
    ("unknown.test", Some((0x13, Status::Unknown))),
    // The file holds no issuer: never stapled.
    ("nochain.test", None),
    // No responder named.
    ("noocsp.test", None),
    // Its responder is closed; the override asks the test responder instead.
    ("over.test", Some((0x16, Status::Good))),
    // Two responders: the first is closed, the second answers.
    ("two.test", Some((0x17, Status::Good))),
    // No certificate for the name: the default certificate, stapled too.
    ("nomatch.test", Some((0x18, Status::Good))),
];

/// The CA, the responder, the leaves and the files: (responder, backend, dynamic file, static
/// `ocsp` section or nothing).
fn setup(
    d: &std::path::Path,
    closed: &str,
    ocsp: bool,
) -> (Responder, bridge_tests::backends::Backend, String, String) {
    let ca = OcspCa::new(d);
    // The responder's address is known only once it runs: issue after starting it.
    let responder = Responder::start(ca, Duration::from_secs(24 * 3600));
    let at = responder.url("/");
    let ca = responder.ca();
    for (name, serial, aia, leaf_only) in [
        ("good.test", 0x11, vec![at.as_str()], false),
        ("revoked.test", 0x12, vec![at.as_str()], false),
        ("unknown.test", 0x13, vec![at.as_str()], false),
        ("nochain.test", 0x14, vec![at.as_str()], true),
        ("noocsp.test", 0x15, vec![], false),
        ("over.test", 0x16, vec![closed], false),
        ("two.test", 0x17, vec![closed, at.as_str()], false),
        ("default.test", 0x18, vec![at.as_str()], false),
    ] {
        ca.leaf(d, name, serial, &aia, leaf_only);
    }
    for serial in [0x11, 0x16, 0x17, 0x18] {
        responder.set(serial, Status::Good);
    }
    responder.set(0x12, Status::Revoked);
    let app = backend("app").answer(|_| Reply::ok("ok")).start();
    let p = |f: &str| d.join(f).to_string_lossy().into_owned();
    let mut certs = String::new();
    for name in [
        "good.test",
        "revoked.test",
        "unknown.test",
        "nochain.test",
        "noocsp.test",
        "over.test",
        "two.test",
    ] {
        certs.push_str(&format!(
            "    - certFile: \"{}\"\n      keyFile: \"{}\"\n",
            p(&format!("{name}.crt")),
            p(&format!("{name}.key"))
        ));
    }
    let dynamic = format!(
        r#"http:
  routers:
    r:
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
{certs}  stores:
    default:
      defaultCertificate:
        certFile: "{dc}"
        keyFile: "{dk}"
"#,
        app = app.port(),
        dc = p("default.test.crt"),
        dk = p("default.test.key"),
    );
    let extra = if ocsp {
        format!(
            "ocsp:\n  responderOverrides:\n    \"{closed}\": \"{}\"\n",
            responder.url("/over")
        )
    } else {
        String::new()
    };
    (responder, app, dynamic, extra)
}

#[test]
fn certificates_are_stapled_as_traefik_staples_them() {
    let oracle = oracle("certificates_are_stapled_as_traefik_staples_them");
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let closed = format!("http://127.0.0.1:{}/Ocsp", free_port());
    let (responder, _app, dynamic, extra) = setup(d, &closed, true);
    let twin = serve_twice_static(d, oracle.as_deref(), &dynamic, &["r"], &extra);
    for (who, addr) in twin.targets() {
        // Staples come from the background: wait for the last one a pass fetches.
        let deadline = Instant::now() + Duration::from_secs(20);
        while WANT
            .iter()
            .filter(|(_, w)| w.is_some())
            .any(|(name, _)| handshake(addr, name, false).1.is_none())
        {
            assert!(
                Instant::now() < deadline,
                "{who}: not every staple within 20 s"
            );
            std::thread::sleep(Duration::from_millis(100));
        }
        for (name, want) in WANT {
            for tls12 in [false, true] {
                let (_, got) = handshake(addr, name, tls12);
                let got = got.map(|(serial, status)| (serial[0], status));
                assert_eq!(got, want, "{who}: {name} (TLS 1.2: {tls12})");
            }
        }
    }
    if let Some(t) = twin.traefik {
        for (name, _) in WANT {
            assert_eq!(
                handshake(twin.bridge, name, false).0,
                handshake(t, name, false).0,
                "{name}: a different certificate served"
            );
        }
    }
    let asked = responder.asked();
    assert!(
        asked
            .iter()
            .any(|(path, serial)| path == "/over" && serial == &[0x16]),
        "the override was not asked: {asked:?}"
    );
}

#[test]
fn without_the_ocsp_section_nothing_is_asked_or_stapled() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let closed = format!("http://127.0.0.1:{}/Ocsp", free_port());
    let (responder, _app, dynamic, extra) = setup(d, &closed, false);
    let twin = serve_twice_static(d, None, &dynamic, &["r"], &extra);
    std::thread::sleep(Duration::from_millis(500));
    for (name, _) in WANT {
        assert_eq!(handshake(twin.bridge, name, false).1, None, "{name}");
    }
    assert!(responder.asked().is_empty(), "{:?}", responder.asked());
}
