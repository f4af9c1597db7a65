//! What travels between client, proxy and server: WebSocket tunnels, entry-point limits and
//! timeouts, HTTPS and h2c servers with serversTransports, and the request head a server gets.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use bridge_tests::backends::{answers, backend};
use bridge_tests::tls::TestCa;

use crate::harness::{build_and_serve, get, request_raw, start, start_full, websocket_echo};

#[test]
fn websocket_upgrades_are_tunnelled_both_ways() {
    let (a, b) = (backend("a").start(), backend("b").active(false).start());
    let dir = tempfile::tempdir().unwrap();
    let rt = start(&a, &b, dir.path());
    let mut s = TcpStream::connect(rt.web).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    websocket_echo(&mut s, "scadabridge.local");
}

#[test]
fn header_limits_and_timeouts_protect_the_entry_point() {
    // The nodes answer without waiting for request bodies, so the body the client never finishes
    // is only the entry point's business.
    let (a, b) = (
        backend("a").answer_before_body().start(),
        backend("b").active(false).answer_before_body().start(),
    );
    let dir = tempfile::tempdir().unwrap();
    let rt = start_full(
        &a,
        &b,
        dir.path(),
        |s| {
            s.replace(
                "    address: \":80\"\n",
                "    address: \":80\"\n    transport:\n      respondingTimeouts:\n        readTimeout: 1s\n        idleTimeout: 3s\n",
            )
        },
        |d| d,
    );
    // A header section over the 1 MiB default: 431, as Go's server answers.
    let mut s = TcpStream::connect(rt.web).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let big = "x".repeat(2 << 20);
    let _ = write!(
        s,
        "GET /ui HTTP/1.1\r\nHost: scadabridge.local\r\nX-Big: {big}\r\n\r\n"
    );
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let out = String::from_utf8_lossy(&out);
    assert!(
        out.starts_with("HTTP/1.1 431"),
        "{}",
        out.lines().next().unwrap_or("")
    );

    // readTimeout: a body that never completes is cut off after about a second.
    let mut s = TcpStream::connect(rt.web).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "POST /ui HTTP/1.1\r\nHost: scadabridge.local\r\nContent-Length: 100\r\n\r\nonly-part"
    )
    .unwrap();
    let started = Instant::now();
    let mut out = Vec::new();
    let _ = s.read_to_end(&mut out);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(900) && took < Duration::from_millis(2500),
        "slow body ended after {took:?}: {}",
        String::from_utf8_lossy(&out)
    );

    // idleTimeout: a keep-alive connection with nothing to do is closed after about 3 s.
    let mut s = TcpStream::connect(rt.web).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(s, "GET /ui HTTP/1.1\r\nHost: scadabridge.local\r\n\r\n").unwrap();
    let mut buf = [0u8; 4096];
    let n = s.read(&mut buf).unwrap();
    assert!(String::from_utf8_lossy(&buf[..n]).starts_with("HTTP/1.1 200"));
    let started = Instant::now();
    let mut rest = Vec::new();
    let _ = s.read_to_end(&mut rest);
    let took = started.elapsed();
    assert!(
        took >= Duration::from_millis(2900) && took < Duration::from_secs(6),
        "idle connection closed after {took:?}"
    );
    // The entry point still serves.
    assert_eq!(get(rt.web, "/ui").0, 200);
}

#[test]
fn https_and_h2c_servers_with_servers_transports() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = TestCa::new(d);
    ca.issue(d, "backend", &["backend.test"]);
    let tls = backend("tls")
        .tls(&d.join("backend.crt"), &d.join("backend.key"))
        .answer(answers::version_and_host)
        .start();
    let tls1 = backend("tls1")
        .tls_http1_only(&d.join("backend.crt"), &d.join("backend.key"))
        .answer(answers::version_and_host)
        .start();
    let h2c = backend("h2c")
        .h2c()
        .answer(answers::version_and_host)
        .start();
    let ca_file = d.join("ca.crt").to_string_lossy().into_owned();
    let (t, t1, c) = (tls.port(), tls1.port(), h2c.port());
    let route = |name: &str| {
        format!("    {name}:\n      rule: \"PathPrefix(`/{name}`)\"\n      service: {name}\n")
    };
    let routers: String = [
        "verified", "system", "insecure", "sni", "h1", "alpnh1", "h2c", "timeout",
    ]
    .iter()
    .map(|n| route(n))
    .collect();
    let check = "        healthCheck:\n          path: /health\n          interval: 1s\n";
    let lb = |name: &str, transport: &str, check: &str, url: String| {
        format!(
            "    {name}:\n      loadBalancer:\n{transport}{check}        servers:\n          - url: \"{url}\"\n"
        )
    };
    let via = |t: &str| format!("        serversTransport: {t}\n");
    let services = [
        lb(
            "verified",
            &via("ca"),
            check,
            format!("https://backend.test:{t}"),
        ),
        lb("system", "", "", format!("https://backend.test:{t}")),
        lb(
            "insecure",
            &via("insecure@file"),
            "",
            format!("https://127.0.0.1:{t}"),
        ),
        lb("sni", &via("sni"), "", format!("https://127.0.0.1:{t}")),
        lb("h1", &via("h1"), "", format!("https://backend.test:{t}")),
        lb(
            "alpnh1",
            &via("ca"),
            "",
            format!("https://backend.test:{t1}"),
        ),
        lb("h2c", "", check, format!("h2c://127.0.0.1:{c}")),
        lb("timeout", &via("slow"), "", format!("h2c://127.0.0.1:{c}")),
    ]
    .concat();
    let transports = [
        format!("    ca:\n      rootCAs: [{ca_file}]\n"),
        "    insecure:\n      insecureSkipVerify: true\n".to_owned(),
        format!("    sni:\n      serverName: backend.test\n      rootCAs: [{ca_file}]\n"),
        format!("    h1:\n      disableHTTP2: true\n      rootCAs: [{ca_file}]\n"),
        "    slow:\n      forwardingTimeouts:\n        responseHeaderTimeout: 300ms\n".to_owned(),
    ]
    .concat();
    let dynamic = format!(
        "http:\n  routers:\n{routers}  services:\n{services}  serversTransports:\n{transports}"
    );
    let rt = build_and_serve(
        d,
        "entryPoints:\n  web:\n    address: \":80\"\napi:\n  insecure: true\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
        &dynamic,
        &["--resolve", "backend.test=127.0.0.1"],
    );
    // Verified against rootCAs, HTTP/2 by ALPN, :authority = the client's Host; the health check
    // probed over TLS first (else no traffic before a probe answered).
    assert_eq!(
        get(rt.web, "/verified/x"),
        (
            200,
            "tls HTTP/2.0 host=scadabridge.local /verified/x".into()
        )
    );
    // The system trust store does not know the test CA: the handshake fails, 502.
    assert_eq!(get(rt.web, "/system").0, 502);
    assert_eq!(
        get(rt.web, "/insecure").1,
        "tls HTTP/2.0 host=scadabridge.local /insecure"
    );
    // serverName: SNI and the checked name differ from the URL's host (an IP address).
    assert_eq!(
        get(rt.web, "/sni").1,
        "tls HTTP/2.0 host=scadabridge.local /sni"
    );
    // disableHTTP2: ALPN offers only http/1.1.
    assert_eq!(
        get(rt.web, "/h1").1,
        "tls HTTP/1.1 host=scadabridge.local /h1"
    );
    // A server that chooses http/1.1 by ALPN is spoken to over HTTP/1.1, the first request
    // included, and remembered as such.
    for _ in 0..2 {
        assert_eq!(
            get(rt.web, "/alpnh1").1,
            "tls1 HTTP/1.1 host=scadabridge.local /alpnh1"
        );
    }
    // h2c: HTTP/2 with prior knowledge, health-checked the same way.
    assert_eq!(
        get(rt.web, "/h2c").1,
        "h2c HTTP/2.0 host=scadabridge.local /h2c"
    );
    // responseHeaderTimeout: a fast answer passes; a slow one is 504 after 300 ms, not 1.5 s.
    assert_eq!(
        get(rt.web, "/timeout").1,
        "h2c HTTP/2.0 host=scadabridge.local /timeout"
    );
    let started = Instant::now();
    assert_eq!(get(rt.web, "/timeout/slow").0, 504);
    assert!(
        started.elapsed() < Duration::from_millis(1200),
        "{:?}",
        started.elapsed()
    );
    // The API reports the servers probed over TLS and h2c as UP.
    let mut s = TcpStream::connect(rt.api).unwrap();
    write!(
        s,
        "GET /api/http/services HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(
        out.contains(&format!("\"https://backend.test:{t}\":\"UP\"")),
        "{out}"
    );
    assert!(
        out.contains(&format!("\"h2c://127.0.0.1:{c}\":\"UP\"")),
        "{out}"
    );
}

/// RFC 9110 §15.2: the 1xx responses of HTTP/2 servers (h2c, and https by ALPN h2) reach the
/// client as they arrive, over HTTP/1.1 and HTTP/2, with and without a request body.
#[test]
fn interim_responses_of_http2_servers_are_forwarded_as_they_arrive() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let ca = TestCa::new(d);
    ca.issue(d, "backend", &["backend.test"]);
    let pause = Duration::from_millis(700);
    let h2c = bridge_tests::h2server::early_hints(None, pause);
    let tls = bridge_tests::h2server::early_hints(
        Some(bridge_tests::tls::server_config(
            &d.join("backend.crt"),
            &d.join("backend.key"),
            &[b"h2"],
        )),
        pause,
    );
    let ca_file = d.join("ca.crt").to_string_lossy().into_owned();
    let dynamic = format!(
        "http:\n  routers:\n    h2c:\n      rule: \"PathPrefix(`/h2c`)\"\n      service: h2c\n    tls:\n      rule: \"PathPrefix(`/tls`)\"\n      service: tls\n  services:\n    h2c:\n      loadBalancer:\n        servers:\n          - url: \"h2c://{h2c}\"\n    tls:\n      loadBalancer:\n        serversTransport: ca\n        servers:\n          - url: \"https://backend.test:{}\"\n  serversTransports:\n    ca:\n      rootCAs: [{ca_file}]\n",
        tls.port()
    );
    let rt = build_and_serve(
        d,
        "entryPoints:\n  web:\n    address: \":80\"\napi:\n  insecure: true\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
        &dynamic,
        &["--resolve", "backend.test=127.0.0.1"],
    );
    for server in ["h2c", "tls"] {
        let url = format!("http://{}/{server}", rt.web);
        bridge_tests::assert_interims_relayed(&url, "scadabridge.local", pause, server);
        // The body went through alongside.
        let out = std::process::Command::new("curl")
            .args(["-s", "--max-time", "10", "--data-binary", "abcd", "-H"])
            .arg("Host: scadabridge.local")
            .arg(&url)
            .output()
            .unwrap();
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "got 4 bytes",
            "{server}"
        );
    }
}

#[test]
fn the_upstream_gets_traefiks_request_head_with_and_without_a_body() {
    let echo = backend("echo").answer(answers::head_echo).start();
    let dir = tempfile::tempdir().unwrap();
    let dynamic = format!(
        "http:\n  routers:\n    keep:\n      rule: \"PathPrefix(`/keep`)\"\n      service: keep\n    own:\n      rule: \"PathPrefix(`/own`)\"\n      service: own\n  services:\n    keep:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:{port}\"\n    own:\n      loadBalancer:\n        passHostHeader: false\n        servers:\n          - url: \"http://127.0.0.1:{port}\"\n",
        port = echo.port()
    );
    let rt = build_and_serve(
        dir.path(),
        "entryPoints:\n  web:\n    address: \":80\"\napi:\n  insecure: true\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
        &dynamic,
        &[],
    );
    // Hop-by-hop fields (also those `Connection` names) and forged forwarding fields from an
    // untrusted client must not reach the server; everything else must, once.
    let sent = "Connection: X-Drop\r\nX-Drop: 1\r\nKeep-Alive: timeout=5\r\nTE: trailers\r\nX-Forwarded-For: 6.6.6.6\r\nX-Real-Ip: 6.6.6.6\r\nX-Forwarded-Proto: https\r\nX-Kept: yes\r\n";
    for (method, path, body, host) in [
        ("GET", "/keep/a?x=1", "", "scadabridge.local".to_owned()),
        ("POST", "/keep/b", "hello", "scadabridge.local".to_owned()),
        ("HEAD", "/own/c", "", format!("127.0.0.1:{}", echo.port())),
        (
            "POST",
            "/own/d",
            "hello",
            format!("127.0.0.1:{}", echo.port()),
        ),
    ] {
        let length = if body.is_empty() {
            String::new()
        } else {
            format!("Content-Length: {}\r\n", body.len())
        };
        let raw = request_raw(rt.web, method, path, &format!("{sent}{length}\r\n{body}"));
        let (resp_head, resp_body) = raw.split_once("\r\n\r\n").unwrap();
        assert!(resp_head.starts_with("HTTP/1.1 200"), "{raw}");
        // The server's own hop-by-hop fields do not reach the client either.
        let resp_lower = resp_head.to_ascii_lowercase();
        assert!(!resp_lower.contains("x-upstream-only"), "{resp_head}");
        if method == "HEAD" {
            assert_eq!(resp_body, "", "a HEAD answer has no body");
            // The head echo is in the body, which HEAD drops: ask again with GET for the fields.
            let raw = request_raw(rt.web, "GET", path, &format!("{sent}\r\n"));
            check_upstream_head(
                raw.split_once("\r\n\r\n").unwrap().1,
                "GET",
                path,
                "",
                &host,
            );
            continue;
        }
        check_upstream_head(resp_body, method, path, body, &host);
    }
}

/// Checks the head echoed by [`answers::head_echo`].
fn check_upstream_head(echoed: &str, method: &str, path: &str, body: &str, host: &str) {
    let (head, got_body) = echoed.split_once("--\r\n").unwrap();
    assert_eq!(got_body, body);
    let mut lines = head.split("\r\n").filter(|l| !l.is_empty());
    assert_eq!(lines.next().unwrap(), format!("{method} {path} HTTP/1.1"));
    let fields: Vec<(String, String)> = lines
        .map(|l| {
            let (k, v) = l.split_once(':').unwrap();
            (k.trim().to_ascii_lowercase(), v.trim().to_owned())
        })
        .collect();
    let values = |name: &str| -> Vec<&str> {
        fields
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    };
    assert_eq!(values("host"), [host], "{head}");
    assert_eq!(values("x-forwarded-for"), ["127.0.0.1"], "{head}");
    assert_eq!(values("x-real-ip"), ["127.0.0.1"], "{head}");
    assert_eq!(values("x-forwarded-proto"), ["http"], "{head}");
    assert_eq!(values("x-forwarded-host"), ["scadabridge.local"], "{head}");
    assert_eq!(values("x-forwarded-port"), ["80"], "{head}");
    assert_eq!(values("x-forwarded-server").len(), 1, "{head}");
    assert_eq!(values("x-kept"), ["yes"], "{head}");
    for gone in ["x-drop", "keep-alive", "te"] {
        assert!(values(gone).is_empty(), "{gone} reached the server: {head}");
    }
    // `Connection` is the proxy's own business with the server: never the client's value.
    assert!(
        values("connection")
            .iter()
            .all(|v| !v.to_ascii_lowercase().contains("x-drop")),
        "{head}"
    );
    if body.is_empty() {
        assert!(values("content-length").iter().all(|v| *v == "0"), "{head}");
    } else {
        assert_eq!(values("content-length"), [body.len().to_string()], "{head}");
    }
}

/// A TCP relay to `to` that can stop carrying bytes (both ways) while keeping its sockets open,
/// as a server behind a dead link looks; it counts the connections the client side closed.
struct Relay {
    port: u16,
    paused: std::sync::Arc<std::sync::atomic::AtomicBool>,
    closed: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

fn relay(to: std::net::SocketAddr) -> Relay {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let paused = Arc::new(AtomicBool::new(false));
    let closed = Arc::new(AtomicUsize::new(0));
    let (p, c) = (paused.clone(), closed.clone());
    std::thread::spawn(move || {
        for client in listener.incoming().take(16) {
            let Ok(client) = client else { return };
            let Ok(server) = TcpStream::connect(to) else {
                return;
            };
            for (mut from, mut into, counts) in [
                (
                    client.try_clone().unwrap(),
                    server.try_clone().unwrap(),
                    true,
                ),
                (server, client, false),
            ] {
                let (p, c) = (p.clone(), c.clone());
                std::thread::spawn(move || {
                    from.set_read_timeout(Some(Duration::from_millis(50)))
                        .unwrap();
                    let mut buf = [0u8; 16384];
                    // Bounded: a relay thread lives at most a minute.
                    let deadline = Instant::now() + Duration::from_secs(60);
                    while Instant::now() < deadline {
                        match from.read(&mut buf) {
                            Ok(0) => {
                                if counts {
                                    c.fetch_add(1, Ordering::SeqCst);
                                }
                                let _ = into.shutdown(std::net::Shutdown::Both);
                                return;
                            }
                            // Paused: what arrives is lost, as on a dead link.
                            Ok(_) if p.load(Ordering::SeqCst) => {}
                            Ok(n) => {
                                if into.write_all(&buf[..n]).is_err() {
                                    return;
                                }
                            }
                            Err(e)
                                if matches!(
                                    e.kind(),
                                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                                ) => {}
                            Err(_) => {
                                if counts {
                                    c.fetch_add(1, Ordering::SeqCst);
                                }
                                return;
                            }
                        }
                    }
                });
            }
        }
    });
    Relay {
        port,
        paused,
        closed,
    }
}

/// `forwardingTimeouts.readIdleTimeout`/`pingTimeout`: an HTTP/2 connection to a server that
/// stops answering (a dead link, the socket still open) is pinged after readIdleTimeout and
/// closed after pingTimeout, so the next request gets a fresh connection instead of hanging on
/// the dead one. Without them the connection stays open.
#[test]
fn unanswered_http2_pings_close_the_connection_to_a_server() {
    use std::sync::atomic::Ordering;
    let h2c = backend("h2c")
        .h2c()
        .answer(answers::version_and_host)
        .start();
    let (pinged, quiet) = (relay(h2c.addr), relay(h2c.addr));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let dynamic = format!(
        "http:\n  routers:\n    pinged:\n      rule: \"PathPrefix(`/pinged`)\"\n      service: pinged\n    quiet:\n      rule: \"PathPrefix(`/quiet`)\"\n      service: quiet\n  services:\n    pinged:\n      loadBalancer:\n        serversTransport: pings\n        servers:\n          - url: \"h2c://127.0.0.1:{}\"\n    quiet:\n      loadBalancer:\n        servers:\n          - url: \"h2c://127.0.0.1:{}\"\n  serversTransports:\n    pings:\n      forwardingTimeouts:\n        readIdleTimeout: 500ms\n        pingTimeout: 500ms\n",
        pinged.port, quiet.port
    );
    let rt = build_and_serve(
        d,
        "entryPoints:\n  web:\n    address: \":80\"\napi:\n  insecure: true\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
        &dynamic,
        &[],
    );
    assert_eq!(get(rt.web, "/pinged/a").0, 200);
    assert_eq!(get(rt.web, "/quiet/a").0, 200);
    // A healthy idle connection answers its pings and stays.
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(
        pinged.closed.load(Ordering::SeqCst),
        0,
        "an answered ping closed it"
    );
    pinged.paused.store(true, Ordering::SeqCst);
    quiet.paused.store(true, Ordering::SeqCst);
    // readIdleTimeout + pingTimeout is 1 s; the pinged connection is gone well within 4 s.
    let deadline = Instant::now() + Duration::from_secs(4);
    while pinged.closed.load(Ordering::SeqCst) == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        pinged.closed.load(Ordering::SeqCst),
        1,
        "the dead connection stayed open"
    );
    assert_eq!(
        quiet.closed.load(Ordering::SeqCst),
        0,
        "no pings without readIdleTimeout"
    );
    // The link is back: the next request opens a new connection and is answered.
    pinged.paused.store(false, Ordering::SeqCst);
    assert_eq!(get(rt.web, "/pinged/b").0, 200);
}
