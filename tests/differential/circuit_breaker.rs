//! `circuitBreaker` through bridge-runtime and Traefik: one backend whose status and delay the
//! query picks (`?code=502`, `?ms=150`), one breaker per router, each tripped by what its
//! expression watches (network errors, a status ratio, latency, a refused server), then the
//! fallback compared (status, text, fields), the breakers' independence, and the lazy recovery:
//! its first request refused, the breaker closed after the ramp.

use std::time::Duration;

use bridge_tests::backends::{Reply, backend};
use bridge_tests::traefik::{Probe, Twin, agree, free_port, oracle, serve_twice};

const FIELDS: &[&str] = &["content-type", "content-length", "retry-after", "x-backend"];

fn ask(twin: &Twin, method: &str, target: &str) -> bridge_tests::traefik::Answer {
    agree(
        twin,
        &Probe {
            method,
            target,
            headers: &[],
            compare: FIELDS,
            body: b"",
        },
    )
}

/// Waits out the default check period, so that the next answer is evaluated.
fn next_check() {
    std::thread::sleep(Duration::from_millis(120));
}

fn dynamic(app: u16, closed: u16) -> String {
    let router = |name: &str, mw: &str, service: &str| {
        format!(
            "    {name}:\n      rule: \"PathPrefix(`/{name}/`)\"\n      entryPoints: [web]\n      middlewares: [{mw}]\n      service: {service}\n"
        )
    };
    let mut out = String::from("http:\n  routers:\n");
    for (name, mw, service) in [
        ("net", "net", "app"),
        ("codes", "codes", "app"),
        ("slow", "slow", "app"),
        ("dead", "dead", "closed"),
        ("sh1", "shared", "app"),
        ("sh2", "shared", "app"),
        ("ramp", "ramp", "app"),
        ("both", "both", "app"),
    ] {
        out.push_str(&router(name, mw, service));
    }
    out.push_str(&format!(
        r#"  middlewares:
    net:
      circuitBreaker:
        expression: "NetworkErrorRatio() > 0.5"
    codes:
      circuitBreaker:
        expression: "ResponseCodeRatio(500, 600, 0, 600) > 0.5"
        responseCode: 418
    slow:
      circuitBreaker:
        expression: "LatencyAtQuantileMS(50.0) > 100"
    dead:
      circuitBreaker:
        expression: "NetworkErrorRatio() > 0.5 || LatencyAtQuantileMS(99.0) > 5000"
        responseCode: 413
    shared:
      circuitBreaker:
        expression: "ResponseCodeRatio(500, 600, 0, 600) >= 1.0"
        responseCode: 200
    ramp:
      circuitBreaker:
        expression: "NetworkErrorRatio() > 0.5"
        fallbackDuration: 1s
        recoveryDuration: 1s
    both:
      circuitBreaker:
        expression: "NetworkErrorRatio() > 0.1 && ResponseCodeRatio(500, 600, 0, 600) >= 0.5"
        checkPeriod: 0s
  services:
    app:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{app}"
    closed:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{closed}"
"#
    ));
    out
}

fn app() -> bridge_tests::backends::Backend {
    backend("app")
        .answer(|r| {
            let query = r.target.split_once('?').map_or("", |(_, q)| q);
            let mut status = "200 OK".to_owned();
            for (k, v) in query.split('&').filter_map(|kv| kv.split_once('=')) {
                match k {
                    "code" => status = format!("{v} Set"),
                    "ms" => std::thread::sleep(Duration::from_millis(v.parse().unwrap_or(0))),
                    _ => {}
                }
            }
            Reply {
                status,
                fields: "X-Backend: 1\r\n".to_owned(),
                body: "from the app".to_owned(),
            }
        })
        .start()
}

#[test]
fn circuit_breakers_trip_answer_and_recover_as_traefik_does() {
    let oracle = oracle("circuit_breakers_trip_answer_and_recover_as_traefik_does");
    let app = app();
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice(
        dir.path(),
        oracle.as_deref(),
        &dynamic(app.port(), free_port()),
        &["net", "codes", "slow", "dead", "sh1", "sh2", "ramp", "both"],
    );

    // Network errors are 502 and 504 from anyone, here the server's own 502.
    assert_eq!(ask(&twin, "GET", "/net/?code=500").status, 500);
    next_check();
    let a = ask(&twin, "GET", "/net/?code=502");
    assert_eq!(a.status, 502, "1 of 2 is not more than half");
    next_check();
    let a = ask(&twin, "GET", "/net/?code=502");
    assert_eq!(a.status, 502, "2 of 3 trips it, after this answer");
    let a = ask(&twin, "GET", "/net/");
    assert_eq!((a.status, a.text().as_str()), (503, "Service Unavailable"));
    assert_eq!(a.header("x-backend"), None, "the server is not asked");
    let a = ask(&twin, "HEAD", "/net/");
    assert_eq!((a.status, a.text().as_str()), (503, ""));
    assert_eq!(ask(&twin, "POST", "/net/").status, 503);

    // A status ratio, with another fallback code and its Go status text.
    assert_eq!(ask(&twin, "GET", "/codes/?code=404").status, 404);
    assert_eq!(ask(&twin, "GET", "/codes/").text(), "from the app");
    assert_eq!(ask(&twin, "GET", "/codes/?code=503").status, 503, "1 of 3");
    next_check();
    let a = ask(&twin, "GET", "/codes/?code=500");
    assert_eq!(a.status, 500, "2 of 4 is not more than half");
    next_check();
    let a = ask(&twin, "GET", "/codes/?code=500");
    assert_eq!(
        a.status, 500,
        "this one trips it, and still reaches its client"
    );
    let a = ask(&twin, "GET", "/codes/");
    assert_eq!((a.status, a.text().as_str()), (418, "I'm a teapot"));

    // Latency: the median; the slow answers themselves outlast the check period.
    assert_eq!(ask(&twin, "GET", "/slow/?ms=5").status, 200);
    assert_eq!(ask(&twin, "GET", "/slow/?ms=150").status, 200);
    assert_eq!(
        ask(&twin, "GET", "/slow/").status,
        200,
        "median of 2 is the fast one"
    );
    assert_eq!(ask(&twin, "GET", "/slow/?ms=150").status, 200);
    assert_eq!(ask(&twin, "GET", "/slow/?ms=150").status, 200);
    assert_eq!(
        ask(&twin, "GET", "/slow/").status,
        503,
        "median of 5 is slow"
    );

    // A refused server: the proxy's own 502 counts.
    let a = ask(&twin, "GET", "/dead/");
    assert_eq!((a.status, a.text().as_str()), (502, "Bad Gateway"));
    let a = ask(&twin, "GET", "/dead/");
    assert_eq!(
        (a.status, a.text().as_str()),
        (413, "Request Entity Too Large")
    );

    // One middleware, two routers: two breakers.
    assert_eq!(ask(&twin, "GET", "/sh1/?code=500").status, 500);
    let a = ask(&twin, "GET", "/sh1/");
    assert_eq!((a.status, a.text().as_str()), (200, "OK"), "the fallback");
    let a = ask(&twin, "GET", "/sh2/");
    assert_eq!(
        a.text(),
        "from the app",
        "the other router's breaker is closed"
    );

    // Both sides of `&&`, evaluated on every answer (a check period of 0 is the default 100ms,
    // so the answers come 150 ms apart).
    assert_eq!(ask(&twin, "GET", "/both/?code=500").status, 500);
    std::thread::sleep(Duration::from_millis(150));
    assert_eq!(
        ask(&twin, "GET", "/both/?code=502").status,
        502,
        "1 of 2 ≥ 0.5, 1 of 2 > 0.1"
    );
    assert_eq!(ask(&twin, "GET", "/both/").status, 503);

    // Recovery is started by the first request after the fallback duration, which is refused;
    // the first request after the recovery closes the breaker.
    assert_eq!(ask(&twin, "GET", "/ramp/?code=504").status, 504);
    assert_eq!(ask(&twin, "GET", "/ramp/").status, 503);
    std::thread::sleep(Duration::from_millis(1_300));
    assert_eq!(
        ask(&twin, "GET", "/ramp/").status,
        503,
        "recovering: the first is refused"
    );
    std::thread::sleep(Duration::from_millis(1_300));
    let a = ask(&twin, "GET", "/ramp/");
    assert_eq!(
        (a.status, a.text().as_str()),
        (200, "from the app"),
        "closed again"
    );
    assert_eq!(ask(&twin, "GET", "/ramp/").status, 200);
}
