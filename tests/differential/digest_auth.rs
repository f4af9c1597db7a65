//! `digestAuth`: the same digest client against both proxies. Nonces and opaques are random
//! per proxy, so each answer is compared by what it is (status, body, the challenge's shape and
//! `stale`, the user the server sees), request by request.

use bridge_tests::backends::{Reply, backend};
use bridge_tests::traefik::{Answer, fetch, oracle, serve_twice};
use md5::{Digest as _, Md5};
use std::net::SocketAddr;

fn md5_hex(s: &str) -> String {
    Md5::digest(s.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A challenge's parameters, in order.
fn params(challenge: &str) -> Vec<(String, String)> {
    challenge
        .strip_prefix("Digest ")
        .unwrap_or_default()
        .split(", ")
        .filter_map(|kv| kv.split_once('='))
        .map(|(k, v)| (k.to_owned(), v.trim_matches('"').to_owned()))
        .collect()
}

/// What one answer is, without its random parts.
fn shape(a: &Answer) -> String {
    let challenge = a.header("www-authenticate").unwrap_or("-");
    let keys: Vec<String> = params(challenge)
        .into_iter()
        .map(|(k, v)| match k.as_str() {
            "nonce" | "opaque" => format!("{k}:{}", v.len()),
            _ => format!("{k}={v}"),
        })
        .collect();
    format!(
        "{} {:?} type={} [{}]",
        a.status,
        a.text(),
        a.header("content-type").unwrap_or("-"),
        keys.join(" ")
    )
}

/// The whole flow on one proxy: challenge, good answer, wrong password, replay, older nc, a
/// `uri` that is a prefix, one that is not, another method, Basic.
fn flow(addr: SocketAddr) -> Vec<String> {
    let ha1 = md5_hex("alice:traefik:s3cret");
    let get = |target: &str, auth: Option<&str>| {
        let fields: Vec<(&str, &str)> = auth.map(|a| ("Authorization", a)).into_iter().collect();
        fetch(addr, "GET", target, &fields, b"").unwrap()
    };
    let first = get("/d/x?q=1", None);
    let p = params(first.header("www-authenticate").unwrap_or(""));
    let value = |k: &str| {
        p.iter()
            .find(|(key, _)| key == k)
            .map(|(_, v)| v.clone())
            .unwrap_or_default()
    };
    let (nonce, opaque) = (value("nonce"), value("opaque"));
    let answer = |method: &str, uri: &str, nc: &str, ha1: &str| {
        let ha2 = md5_hex(&format!("{method}:{uri}"));
        let resp = md5_hex(&format!("{ha1}:{nonce}:{nc}:0a4f113b:auth:{ha2}"));
        format!(
            "Digest username=\"alice\", realm=\"traefik\", nonce=\"{nonce}\", uri=\"{uri}\", algorithm=MD5, qop=auth, nc={nc}, cnonce=\"0a4f113b\", response=\"{resp}\", opaque=\"{opaque}\""
        )
    };
    let mut out = vec![shape(&first)];
    for (target, auth) in [
        ("/d/x?q=1", answer("GET", "/d/x?q=1", "00000001", &ha1)),
        (
            "/d/x?q=1",
            answer(
                "GET",
                "/d/x?q=1",
                "00000002",
                &md5_hex("alice:traefik:wrong"),
            ),
        ),
        ("/d/x?q=1", answer("GET", "/d/x?q=1", "00000001", &ha1)),
        ("/d/x?q=1", answer("GET", "/d/x?q=1", "00000003", &ha1)),
        ("/d/x?q=1", answer("GET", "/d/x?q=1", "00000002", &ha1)),
        ("/d/x/y", answer("GET", "/d", "00000004", &ha1)),
        ("/d/x", answer("GET", "/d/x/y", "00000005", &ha1)),
        ("/d/x", answer("POST", "/d/x", "00000006", &ha1)),
        ("/d/x", "Basic YWxpY2U6czNjcmV0".to_owned()),
    ] {
        out.push(shape(&get(target, Some(&auth))));
    }
    out
}

#[test]
fn digest_auth_challenges_and_checks_as_traefik_does() {
    let oracle = oracle("digest_auth_challenges_and_checks_as_traefik_does");
    let app = backend("app")
        .answer(|r| {
            Reply::ok(format!(
                "user={} auth={}",
                r.header("x-webauth-user").unwrap_or("-"),
                r.header("authorization").map_or("-", |_| "kept")
            ))
        })
        .start();
    let dir = tempfile::tempdir().unwrap();
    let dynamic = format!(
        r#"http:
  routers:
    d:
      rule: "PathPrefix(`/d`)"
      entryPoints: [web]
      middlewares: [digest]
      service: app
  middlewares:
    digest:
      digestAuth:
        users:
          - "alice:traefik:{}"
          - "bob:other:{}"
        headerField: X-WebAuth-User
        removeHeader: true
  services:
    app:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:{}"
"#,
        md5_hex("alice:traefik:s3cret"),
        md5_hex("bob:other:pw"),
        app.port()
    );
    let twin = serve_twice(dir.path(), oracle.as_deref(), &dynamic, &["d"]);
    let ours = flow(twin.bridge);
    let challenge = "401 \"401 Unauthorized\\n\" type=text/plain [realm=traefik nonce:16 opaque:16 algorithm=MD5 qop=auth]";
    let stale = "401 \"401 Unauthorized\\n\" type=text/plain [realm=traefik nonce:16 opaque:16 stale=true algorithm=MD5 qop=auth]";
    let ok = "200 \"user=alice auth=-\" type=- []";
    assert_eq!(
        ours,
        [
            challenge, ok, challenge, challenge, ok, stale, ok, challenge, challenge, challenge
        ],
        "bridge-runtime"
    );
    if let Some(traefik) = twin.traefik {
        assert_eq!(flow(traefik), ours, "Traefik vs bridge-runtime");
    }
}
