//! A failover service's `errors` (Traefik v3.7) through bridge-runtime and Traefik: answers of
//! the listed statuses from the main service are replaced by the fallback's answer to the same
//! request, body included; other statuses pass; a body over `maxRequestBodyBytes` is 413; a
//! main service that cannot be reached (502) goes to the fallback too.

use bridge_tests::backends::{Backend, Reply, backend};
use bridge_tests::traefik::{Probe, agree, free_port, oracle, serve_twice};

/// The body says who answered and what arrived; the main service answers `?status=N` with that
/// status, the fallback always 200.
fn app(name: &'static str) -> Backend {
    backend(name)
        .answer(move |r| {
            let status = r
                .target
                .split_once("status=")
                .map(|(_, s)| s.chars().take(3).collect::<String>());
            let mut reply = Reply::ok(format!(
                "{name} {} {} len={} cl={}",
                r.method,
                r.target,
                r.body.len(),
                r.header("content-length").unwrap_or("-"),
            ));
            if let Some(s) = status.filter(|_| name == "main") {
                reply.status = format!("{s} Status");
            }
            reply
        })
        .start()
}

#[test]
fn failover_errors_replay_to_the_fallback_as_traefik_does() {
    let traefik = oracle("failover_errors");
    let (main, fb) = (app("main"), app("fb"));
    let closed = free_port();
    let dir = tempfile::tempdir().unwrap();
    let dynamic = format!(
        r#"http:
  routers:
    errs:
      rule: "PathPrefix(`/errs/`)"
      entryPoints: [web]
      service: errs
    small:
      rule: "PathPrefix(`/small/`)"
      entryPoints: [web]
      service: small
    down:
      rule: "PathPrefix(`/down/`)"
      entryPoints: [web]
      service: down
  services:
    errs:
      failover:
        service: main
        fallback: fb
        errors:
          status: ["500-599", "404"]
    small:
      failover:
        service: main
        fallback: fb
        errors:
          status: ["500-599"]
          maxRequestBodyBytes: 5
    down:
      failover:
        service: gone
        fallback: fb
        errors:
          status: ["502"]
    main:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{}"
    fb:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{}"
    gone:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{closed}"
"#,
        main.port(),
        fb.port()
    );
    let twin = serve_twice(
        dir.path(),
        traefik.as_deref(),
        &dynamic,
        &["errs", "small", "down"],
    );
    let compare: &[&str] = &["content-type"];
    let post = |target, body| Probe {
        method: "POST",
        target,
        headers: &[],
        compare,
        body,
    };
    // The main service's own answers pass, also an error status that is not listed.
    let a = agree(&twin, &Probe::get("/errs/ok"));
    assert_eq!(
        (a.status, a.text()),
        (200, "main GET /errs/ok len=0 cl=-".into())
    );
    let a = agree(&twin, &Probe::get("/errs/x?status=429"));
    assert_eq!(a.status, 429);
    assert!(a.text().starts_with("main "), "{}", a.text());
    // Listed statuses: the fallback answers the same request.
    for target in [
        "/errs/x?status=503",
        "/errs/x?status=404",
        "/errs/x?status=500",
    ] {
        let a = agree(&twin, &Probe::get(target));
        assert_eq!(
            (a.status, a.text()),
            (200, format!("fb GET {target} len=0 cl=-")),
            "{target}"
        );
    }
    // The body is replayed whole.
    let a = agree(&twin, &post("/errs/x?status=502", b"hello"));
    assert_eq!(a.text(), "fb POST /errs/x?status=502 len=5 cl=5");
    // maxRequestBodyBytes: at the limit replayed, past it 413 before the main service sees it.
    let a = agree(&twin, &post("/small/x?status=500", b"12345"));
    assert_eq!(a.text(), "fb POST /small/x?status=500 len=5 cl=5");
    let a = agree(&twin, &post("/small/x", b"123456"));
    assert_eq!(
        (a.status, a.text()),
        (413, "Request body too large\n".into())
    );
    // A main service that refuses the connection: the proxy's 502 is replayed too.
    let a = agree(&twin, &Probe::get("/down/x"));
    assert_eq!(
        (a.status, a.text()),
        (200, "fb GET /down/x len=0 cl=-".into())
    );
}

/// The main and fallback services of a failover with `errors` may have middlewares of their own
/// (Traefik v3.7): each pass runs that service's chain on the request as it reached the
/// failover, and the replayed answer carries only the fallback chain's response headers.
#[test]
fn failover_errors_run_the_middlewares_of_the_main_and_fallback_services() {
    let traefik = oracle("failover_errors_run_the_middlewares_of_the_main_and_fallback_services");
    let (main, fb) = (app("main"), app("fb"));
    let dir = tempfile::tempdir().unwrap();
    let dynamic = format!(
        r#"http:
  routers:
    errs:
      rule: "PathPrefix(`/errs/`)"
      entryPoints: [web]
      service: errs
  middlewares:
    main-strip:
      stripPrefix:
        prefixes: [/errs]
    main-mark:
      headers:
        customResponseHeaders:
          X-Pass: main
          X-Main: "yes"
    fb-path:
      replacePath:
        path: /sorry
    fb-mark:
      headers:
        customResponseHeaders:
          X-Pass: fallback
  services:
    errs:
      failover:
        service: main
        fallback: fb
        errors:
          status: ["500-599"]
    main:
      middlewares: [main-strip, main-mark]
      loadBalancer:
        servers:
          - url: "http://{}"
    fb:
      middlewares: [fb-path, fb-mark]
      loadBalancer:
        servers:
          - url: "http://{}"
"#,
        main.addr, fb.addr
    );
    let twin = serve_twice(dir.path(), traefik.as_deref(), &dynamic, &["errs"]);
    let probe = |target| Probe {
        method: "POST",
        target,
        headers: &[("content-type", "text/plain")],
        compare: &["x-pass", "x-main"],
        body: b"hello",
    };
    let passed = agree(&twin, &probe("/errs/a?status=201"));
    assert_eq!(passed.status, 201);
    assert_eq!(passed.text(), "main POST /a?status=201 len=5 cl=5");
    assert_eq!(passed.header("x-pass"), Some("main"));
    let replayed = agree(&twin, &probe("/errs/a?status=503"));
    assert_eq!(replayed.status, 200);
    assert_eq!(replayed.text(), "fb POST /sorry?status=503 len=5 cl=5");
    assert_eq!(replayed.header("x-pass"), Some("fallback"));
    assert_eq!(replayed.header("x-main"), None);
}
