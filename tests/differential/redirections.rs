//! An entry point's redirect (`http.redirections.entryPoint`) is Traefik's router
//! `<ep>-to-<target>` for any host at its `priority`: by default above every router, and when
//! lowered, the routers and internal routes above it are served instead of redirected.

use bridge_tests::backends::{Reply, backend};
use bridge_tests::traefik::{Probe, agree, oracle, serve_twice_full, serve_twice_with};

fn case(app_port: u16) -> String {
    format!(
        r#"http:
  routers:
    health:
      rule: "Path(`/status`)"
      priority: 200
      entryPoints: [web]
      service: app
    tie:
      rule: "Path(`/tie`)"
      priority: 100
      entryPoints: [web]
      service: app
    app:
      rule: "PathPrefix(`/`)"
      entryPoints: [web]
      service: app
    long:
      rule: "Path(`/abcdefghij`)"
      entryPoints: [web]
      service: app
    short:
      rule: "Path(`/abcdefgh`)"
      entryPoints: [web]
      service: app
  services:
    app:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{app_port}"
"#
    )
}

const ROUTERS: [&str; 5] = ["health", "tie", "app", "long", "short"];

fn redirect_to(priority: &str) -> String {
    format!(
        "    http:\n      redirections:\n        entryPoint:\n          to: \":8443\"\n          \
         scheme: https\n{priority}"
    )
}

#[test]
fn routers_above_a_lowered_redirect_priority_are_served_instead_of_redirected() {
    let oracle =
        oracle("routers_above_a_lowered_redirect_priority_are_served_instead_of_redirected");
    let app = backend("app")
        .answer(|r| Reply::ok(format!("app {}", r.target)))
        .start();
    let dynamic = case(app.port());
    let location = ["location"];
    let redirected = |twin, target: &str| {
        let got = agree(
            twin,
            &Probe {
                compare: &location,
                ..Probe::get(target)
            },
        );
        assert_eq!(got.status, 301, "{target}");
        assert_eq!(
            got.header("location"),
            Some(format!("https://test.local:8443{target}").as_str())
        );
    };
    let served = |twin, target: &str| {
        let got = agree(twin, &Probe::get(target));
        assert_eq!((got.status, got.text()), (200, format!("app {target}")));
    };

    // By default every request is redirected, the highest router's included.
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice_with(
        dir.path(),
        oracle.as_deref(),
        &dynamic,
        &ROUTERS,
        &redirect_to(""),
    );
    for target in ["/status", "/x?y=1", "/abcdefghij"] {
        redirected(&twin, target);
    }

    // Priority 100: `health` (200) is served, the rest (and the unmatched) redirected; ping,
    // an internal router at MaxInt-1, is served too.
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice_full(
        dir.path(),
        oracle.as_deref(),
        &dynamic,
        &ROUTERS,
        &redirect_to("          priority: 100\n"),
        "ping:\n  entryPoint: web\n",
    );
    served(&twin, "/status");
    for target in ["/x", "/abcdefghij", "/status/more"] {
        redirected(&twin, target);
    }
    let ping = agree(&twin, &Probe::get("/ping"));
    assert_eq!((ping.status, ping.text().as_str()), (200, "OK"));

    // Priority 0 is the generated rule's length, 18: `long` (19) is served, `short` (17) not.
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice_with(
        dir.path(),
        oracle.as_deref(),
        &dynamic,
        &ROUTERS,
        &redirect_to("          priority: 0\n"),
    );
    served(&twin, "/abcdefghij");
    served(&twin, "/status");
    served(&twin, "/tie");
    redirected(&twin, "/abcdefgh");
    redirected(&twin, "/elsewhere");
}

#[test]
fn allow_acme_bypass_lets_a_router_answer_acme_s_path_instead_of_the_redirect() {
    let oracle =
        oracle("allow_acme_bypass_lets_a_router_answer_acme_s_path_instead_of_the_redirect");
    let solver = backend("solver")
        .answer(|r| Reply::ok(format!("solver {}", r.target)))
        .start();
    let dynamic = format!(
        r#"http:
  routers:
    acme-http-01:
      rule: "PathPrefix(`/.well-known/acme-challenge/`)"
      entryPoints: [web]
      service: solver
  services:
    solver:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{}"
"#,
        solver.port()
    );
    let token = "/.well-known/acme-challenge/t0k3n";
    let location = ["location"];
    for (bypass, priority, served) in [
        ("", "", false),
        ("    allowACMEByPass: true\n", "", true),
        // 0 is the bypassing rule's length, 65: above the solver's 42, but the rule leaves
        // ACME's path out.
        (
            "    allowACMEByPass: true\n",
            "          priority: 0\n",
            true,
        ),
    ] {
        let dir = tempfile::tempdir().unwrap();
        let web = format!("{bypass}{}", redirect_to(priority));
        let twin = serve_twice_with(
            dir.path(),
            oracle.as_deref(),
            &dynamic,
            &["acme-http-01"],
            &web,
        );
        let got = agree(
            &twin,
            &Probe {
                compare: &location,
                ..Probe::get(token)
            },
        );
        if served {
            assert_eq!(
                (got.status, got.text()),
                (200, format!("solver {token}")),
                "{web}"
            );
        } else {
            assert_eq!(got.status, 301, "{web}");
        }
        let other = agree(
            &twin,
            &Probe {
                compare: &location,
                ..Probe::get("/.well-known/other")
            },
        );
        assert_eq!(other.status, 301, "{web}");
    }
}
