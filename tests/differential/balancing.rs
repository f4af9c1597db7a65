//! Load balancing through bridge-runtime and Traefik.
//!
//! Sticky cookies: two servers that answer their name, load
//! balancers with a fully specified cookie, a default one (Traefik's derived name) and a name
//! with characters a cookie name cannot hold. A cookie naming a server, in today's form or in
//! one an older Traefik wrote, is compared field by field; the first pick of a request without
//! one is random in Traefik (it shuffles servers at every build), so there each proxy's own
//! `Set-Cookie` must name the server that answered.

use bridge_tests::backends::{Reply, backend};
use bridge_tests::traefik::{Probe, Twin, agree, fetch, free_port, oracle, serve_twice};

/// 16 hex digits of the SHA-256 of the URL: what Traefik writes for a server.
fn value(url: &str) -> String {
    use sha2::Digest as _;
    sha2::Sha256::digest(url.as_bytes())[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn fnv1(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h: u64, &b| {
        h.wrapping_mul(0x0000_0100_0000_01b3) ^ u64::from(b)
    })
}

fn ask(twin: &Twin, target: &str, cookie: &str) -> bridge_tests::traefik::Answer {
    let headers = [("Cookie", cookie)];
    agree(
        twin,
        &Probe {
            method: "GET",
            target,
            headers: if cookie.is_empty() { &[] } else { &headers },
            compare: &["set-cookie"],
            body: b"",
        },
    )
}

#[test]
fn sticky_cookies_are_read_and_written_as_traefik_does() {
    let oracle = oracle("sticky_cookies_are_read_and_written_as_traefik_does");
    let a = backend("a").answer(|_| Reply::ok("a")).start();
    let b = backend("b").answer(|_| Reply::ok("b")).start();
    let (ua, ub) = (
        format!("http://127.0.0.1:{}", a.port()),
        format!("http://127.0.0.1:{}", b.port()),
    );
    let closed = format!("http://127.0.0.1:{}", free_port());
    let dynamic = format!(
        r#"http:
  routers:
    full:
      rule: "PathPrefix(`/full/`)"
      entryPoints: [web]
      service: full
    plain:
      rule: "PathPrefix(`/plain/`)"
      entryPoints: [web]
      service: plain
    odd:
      rule: "PathPrefix(`/odd/`)"
      entryPoints: [web]
      service: odd
    dead:
      rule: "PathPrefix(`/dead/`)"
      entryPoints: [web]
      service: dead
  services:
    full:
      loadBalancer:
        sticky:
          cookie:
            name: st
            secure: true
            httpOnly: true
            sameSite: LAX
            maxAge: 60
            path: /full
            domain: .example.com
        servers:
          - url: "{ua}"
          - url: "{ub}"
    plain:
      loadBalancer:
        sticky:
          cookie: {{}}
        servers:
          - url: "{ua}"
          - url: "{ub}"
    odd:
      loadBalancer:
        sticky:
          cookie:
            name: "my cookie/é=1"
            maxAge: -5
            path: ""
        servers:
          - url: "{ua}"
          - url: "{ub}"
    dead:
      loadBalancer:
        sticky:
          cookie:
            name: dd
        servers:
          - url: "{ua}"
          - url: "{closed}"
"#
    );
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice(
        dir.path(),
        oracle.as_deref(),
        &dynamic,
        &["full", "plain", "odd", "dead"],
    );
    let attrs = "; Path=/full; Domain=example.com; Max-Age=60; HttpOnly; Secure; SameSite=Lax";

    // A cookie naming a server: that server, and no new cookie.
    for (url, name) in [(&ua, "a"), (&ub, "b")] {
        for _ in 0..3 {
            let r = ask(&twin, "/full/x", &format!("other=1; st={}", value(url)));
            assert_eq!((r.text().as_str(), r.header("set-cookie")), (name, None));
        }
        let r = ask(&twin, "/full/x", &format!("st=\"{}\"", value(url)));
        assert_eq!(r.text(), name, "quotes are removed");
    }
    // Older forms: the URL, its FNV-1 hash, the hash of that hash; answered with today's value.
    let fnv = format!("{:x}", fnv1(ub.as_bytes()));
    let double = format!("{:x}", fnv1(fnv.as_bytes()));
    for legacy in [ub.clone(), fnv, double] {
        let r = ask(&twin, "/full/x", &format!("st={legacy}"));
        assert_eq!(r.text(), "b", "{legacy}");
        let want = format!("st={}{attrs}", value(&ub));
        assert_eq!(r.header("set-cookie"), Some(want.as_str()));
    }

    // Without a cookie, or with one naming nothing: each proxy's cookie names its pick.
    for (who, addr) in twin.targets() {
        for cookie in ["", "st=0000000000000000", "ST=whatever"] {
            let headers = [("Cookie", cookie)];
            let r = fetch(
                addr,
                "GET",
                "/full/x",
                if cookie.is_empty() { &[] } else { &headers },
                b"",
            )
            .unwrap();
            let url = if r.text() == "a" { &ua } else { &ub };
            let want = format!("st={}{attrs}", value(url));
            assert_eq!(
                r.header("set-cookie"),
                Some(want.as_str()),
                "{who} {cookie:?}"
            );
        }
    }

    // The default cookie: `_` and 5 hex digits derived from the service's name, `Path=/`; a
    // name with other characters has them replaced; a negative Max-Age is 0, an empty path none.
    let cookies: Vec<(String, String)> = twin
        .targets()
        .into_iter()
        .flat_map(|(_, addr)| {
            ["/plain/x", "/odd/x"].map(|t| {
                let r = fetch(addr, "GET", t, &[], b"").unwrap();
                let url = if r.text() == "a" { &ua } else { &ub };
                let set = r.header("set-cookie").unwrap().to_owned();
                (set.replace(&value(url), "<value>"), t.to_owned())
            })
        })
        .collect();
    assert_eq!(cookies[0].0, "_196da=<value>; Path=/", "plain");
    assert_eq!(cookies[1].0, "my_cookie___1=<value>; Max-Age=0", "odd");
    if cookies.len() == 4 {
        assert_eq!(cookies[..2], cookies[2..], "bridge vs traefik");
    }

    // A cookie for a server that refuses connections (no health check): Traefik sends the
    // request there anyway, 502 and no new cookie; bridge-runtime retries a safe request that
    // could not reach its server on another one (docs/runtime.md), so the client gets that
    // server's answer and its cookie — a deliberate difference.
    let cookie = format!("dd={}", value(&closed));
    for (who, addr) in twin.targets() {
        let r = fetch(addr, "GET", "/dead/x", &[("Cookie", &cookie)], b"").unwrap();
        let got = (
            r.status,
            r.text(),
            r.header("set-cookie").map(str::to_owned),
        );
        let want = match who {
            "bridge" => (
                200,
                "a".to_owned(),
                Some(format!("dd={}; Path=/", value(&ua))),
            ),
            _ => (502, "Bad Gateway".to_owned(), None),
        };
        assert_eq!(got, want, "{who}");
    }
}

/// `hrw`: the same client goes to the same server in both, for several server sets and weights
/// (the key is the connection's address, 127.0.0.1 here; forwarding fields are not read).
#[test]
fn hrw_picks_the_server_traefik_picks() {
    let oracle = oracle("hrw_picks_the_server_traefik_picks");
    let backends: Vec<_> = ["a", "b", "c", "d"]
        .into_iter()
        .map(|n| backend(n).answer(move |_| Reply::ok(n)).start())
        .collect();
    let url = |i: usize| format!("http://127.0.0.1:{}", backends[i].port());
    let sets: [&[(usize, u32)]; 6] = [
        &[(0, 1), (1, 1)],
        &[(1, 1), (0, 1)],
        &[(0, 1), (1, 1), (2, 1), (3, 1)],
        &[(0, 5), (1, 1), (2, 1)],
        &[(0, 1), (1, 2), (2, 5)],
        &[(3, 1), (2, 1), (1, 0)],
    ];
    let mut dynamic = String::from("http:\n  routers:\n");
    for i in 0..sets.len() {
        dynamic.push_str(&format!(
            "    h{i}:\n      rule: \"PathPrefix(`/h{i}/`)\"\n      entryPoints: [web]\n      service: h{i}\n"
        ));
    }
    dynamic.push_str("  services:\n");
    for (i, set) in sets.iter().enumerate() {
        dynamic.push_str(&format!(
            "    h{i}:\n      loadBalancer:\n        strategy: hrw\n        servers:\n"
        ));
        for (s, w) in set.iter() {
            dynamic.push_str(&format!(
                "          - url: \"{}\"\n            weight: {w}\n",
                url(*s)
            ));
        }
    }
    let routers: Vec<String> = (0..sets.len()).map(|i| format!("h{i}")).collect();
    let routers: Vec<&str> = routers.iter().map(String::as_str).collect();
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice(dir.path(), oracle.as_deref(), &dynamic, &routers);
    for i in 0..sets.len() {
        let first = ask(&twin, &format!("/h{i}/x"), "").text();
        for forged in ["203.0.113.7", "198.51.100.1"] {
            let r = agree(
                &twin,
                &Probe {
                    method: "GET",
                    target: &format!("/h{i}/y"),
                    headers: &[("X-Forwarded-For", forged), ("X-Real-Ip", forged)],
                    compare: &["set-cookie"],
                    body: b"",
                },
            );
            assert_eq!(
                r.text(),
                first,
                "h{i}: forwarding fields do not move the client"
            );
        }
    }
}

/// `highestRandomWeight` services: the child is chosen by the client's address and the child's
/// name as written (`cb` and `cb@file` hash differently), as Traefik chooses it.
#[test]
fn highest_random_weight_services_pick_the_child_traefik_picks() {
    let oracle = oracle("highest_random_weight_services_pick_the_child_traefik_picks");
    let backends: Vec<_> = ["a", "b", "c"]
        .into_iter()
        .map(|n| backend(n).answer(move |_| Reply::ok(n)).start())
        .collect();
    // Each hrw service as (child as written, weight) over the one-server services ca, cb, cc.
    let sets: [&[(&str, u32)]; 5] = [
        &[("ca", 1), ("cb", 1)],
        &[("ca", 1), ("cb@file", 3)],
        &[("cb@file", 1), ("ca@file", 1), ("cc", 1)],
        &[("cc", 5), ("ca", 1)],
        &[("ca", 0), ("cc", 1)],
    ];
    let mut dynamic = String::from("http:\n  routers:\n");
    for i in 0..sets.len() {
        dynamic.push_str(&format!(
            "    h{i}:\n      rule: \"PathPrefix(`/h{i}/`)\"\n      entryPoints: [web]\n      service: h{i}\n"
        ));
    }
    dynamic.push_str("  services:\n");
    for (name, b) in ["ca", "cb", "cc"].iter().zip(&backends) {
        dynamic.push_str(&format!(
            "    {name}:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:{}\"\n",
            b.port()
        ));
    }
    for (i, set) in sets.iter().enumerate() {
        dynamic.push_str(&format!(
            "    h{i}:\n      highestRandomWeight:\n        services:\n"
        ));
        for (child, w) in set.iter() {
            dynamic.push_str(&format!(
                "          - name: \"{child}\"\n            weight: {w}\n"
            ));
        }
    }
    let routers: Vec<String> = (0..sets.len()).map(|i| format!("h{i}")).collect();
    let routers: Vec<&str> = routers.iter().map(String::as_str).collect();
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice(dir.path(), oracle.as_deref(), &dynamic, &routers);
    for i in 0..sets.len() {
        let first = ask(&twin, &format!("/h{i}/x"), "");
        assert_eq!(first.status, 200, "h{i}");
        assert_eq!(first.header("set-cookie"), None, "h{i}: no cookie");
        for _ in 0..3 {
            assert_eq!(
                ask(&twin, &format!("/h{i}/y"), "").text(),
                first.text(),
                "h{i} stays"
            );
        }
    }
}

/// `leasttime` and `p2c`: both follow the servers' load as Traefik's do. leasttime tries every
/// server once (all start at 0 ms), then keeps to the fastest; p2c sends nothing to a server
/// with a request in flight while another has none. Traefik shuffles the servers at every
/// build, so the order of the first tries is compared as a set.
#[test]
fn leasttime_and_p2c_follow_the_load_as_traefik_does() {
    let oracle = oracle("leasttime_and_p2c_follow_the_load_as_traefik_does");
    let slow: Vec<_> = [("s20", 20), ("s10", 10), ("s30", 30)]
        .into_iter()
        .map(|(n, ms)| {
            backend(n)
                .delay(std::time::Duration::from_millis(ms))
                .answer(move |_| Reply::ok(n))
                .start()
        })
        .collect();
    let pair: Vec<_> = ["p0", "p1"]
        .into_iter()
        .map(|n| backend(n).answer(move |_| Reply::ok(n)).start())
        .collect();
    let servers = |bs: &[bridge_tests::backends::Backend]| {
        bs.iter()
            .map(|b| format!("          - url: \"http://127.0.0.1:{}\"\n", b.port()))
            .collect::<String>()
    };
    let dynamic = format!(
        r#"http:
  routers:
    lt:
      rule: "PathPrefix(`/lt/`)"
      entryPoints: [web]
      service: lt
    p2c:
      rule: "PathPrefix(`/p2c/`)"
      entryPoints: [web]
      service: p2c
  services:
    lt:
      loadBalancer:
        strategy: leasttime
        servers:
{}    p2c:
      loadBalancer:
        strategy: p2c
        servers:
{}"#,
        servers(&slow),
        servers(&pair)
    );
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice(dir.path(), oracle.as_deref(), &dynamic, &["lt", "p2c"]);
    for (who, addr) in twin.targets() {
        let get = |target: &str| fetch(addr, "GET", target, &[], b"").unwrap().text();
        let mut first: Vec<String> = (0..3).map(|i| get(&format!("/lt/{i}"))).collect();
        first.sort();
        assert_eq!(
            first,
            ["s10", "s20", "s30"],
            "{who}: every server tried once"
        );
        for i in 0..6 {
            assert_eq!(
                get(&format!("/lt/after{i}")),
                "s10",
                "{who}: the fastest keeps them"
            );
        }
        // A request in flight on one p2c server: the others all go to the idle one.
        let slow_path = format!("/p2c/{who}/slow");
        let path = slow_path.clone();
        let slow_req =
            std::thread::spawn(move || fetch(addr, "GET", &path, &[], b"").unwrap().text());
        std::thread::sleep(std::time::Duration::from_millis(300));
        let busy = pair
            .iter()
            .position(|b| {
                b.seen()
                    .iter()
                    .any(|s| s.contains(&format!("{slow_path} host=")))
            })
            .unwrap();
        let idle = ["p0", "p1"][1 - busy];
        for i in 0..8 {
            assert_eq!(
                get(&format!("/p2c/{i}")),
                idle,
                "{who}: p2c avoids the busy server"
            );
        }
        assert_eq!(slow_req.join().unwrap(), ["p0", "p1"][busy]);
    }
}

/// A sticky `weighted` service over sticky load balancers (load-balancing.md §3.6): each level
/// reads and writes its own cookie, the outer one first; a child's value hashes its name as
/// written.
#[test]
fn nested_sticky_cookies_are_read_and_written_as_traefik_does() {
    let oracle = oracle("nested_sticky_cookies_are_read_and_written_as_traefik_does");
    let backends: Vec<_> = ["b0", "b1", "b2", "b3"]
        .into_iter()
        .map(|n| backend(n).answer(move |_| Reply::ok(n)).start())
        .collect();
    let url = |i: usize| format!("http://127.0.0.1:{}", backends[i].port());
    let dynamic = format!(
        r#"http:
  routers:
    top:
      rule: "PathPrefix(`/`)"
      entryPoints: [web]
      service: wtop
  services:
    wtop:
      weighted:
        sticky:
          cookie:
            name: lvl1
        services:
          - name: c1
          - name: c2
    c1:
      loadBalancer:
        sticky:
          cookie:
            name: lvl2
        servers:
          - url: "{}"
          - url: "{}"
    c2:
      loadBalancer:
        sticky:
          cookie:
            name: lvl2
        servers:
          - url: "{}"
          - url: "{}"
"#,
        url(0),
        url(1),
        url(2),
        url(3)
    );
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice(dir.path(), oracle.as_deref(), &dynamic, &["top"]);
    let child_of = |server: &str| {
        if server == "b0" || server == "b1" {
            "c1"
        } else {
            "c2"
        }
    };
    let index = |server: &str| server[1..].parse::<usize>().unwrap();
    // Known in their current form: served there, nothing set.
    let hit = ask(
        &twin,
        "/",
        &format!("lvl1={}; lvl2={}", value("c1"), value(&url(1))),
    );
    assert_eq!(
        (hit.text().as_str(), hit.header("set-cookie")),
        ("b1", None)
    );
    // Traefik's older forms (the name, the URL): served there, both rewritten.
    let legacy = ask(&twin, "/", &format!("lvl1=c1; lvl2={}", url(1)));
    assert_eq!(legacy.text(), "b1");
    assert_eq!(
        legacy.header_all("set-cookie"),
        Some(format!(
            "lvl1={}; Path=/, lvl2={}; Path=/",
            value("c1"),
            value(&url(1))
        ))
    );
    // The outer cookie names c1, the inner one a server of c2: c1 picks, only lvl2 is set.
    // Without cookies, or with a child name spelt otherwise (`c1@file`): both set, outer first.
    // Traefik's picks are random (it shuffles at every build): each proxy's answer is checked
    // against its own cookies.
    for (who, addr) in twin.targets() {
        let cross = fetch(
            addr,
            "GET",
            "/",
            &[(
                "Cookie",
                &format!("lvl1={}; lvl2={}", value("c1"), value(&url(2))),
            )],
            b"",
        )
        .unwrap();
        let server = cross.text();
        assert_eq!(child_of(&server), "c1", "{who}");
        assert_eq!(
            cross.header_all("set-cookie"),
            Some(format!("lvl2={}; Path=/", value(&url(index(&server))))),
            "{who}"
        );
        for cookie in ["", "lvl1=c1@file"] {
            let headers = [("Cookie", cookie)];
            let fresh = fetch(
                addr,
                "GET",
                "/",
                if cookie.is_empty() { &[] } else { &headers },
                b"",
            )
            .unwrap();
            let server = fresh.text();
            assert_eq!(
                fresh.header_all("set-cookie"),
                Some(format!(
                    "lvl1={}; Path=/, lvl2={}; Path=/",
                    value(child_of(&server)),
                    value(&url(index(&server)))
                )),
                "{who}: {cookie:?}"
            );
        }
    }
}
