//! Mirroring services: a share of requests copied without delaying the main answer, also below
//! weighted and failover services.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use bridge_tests::backends::{answers, backend};

use crate::harness::{build_and_serve, get, request_raw};

#[test]
fn mirroring_copies_a_share_of_requests_without_delaying_the_main_response() {
    let main = backend("main").answer(answers::method_target_body).start();
    let copy = backend("copy")
        .answer(answers::method_target_body)
        .delay(Duration::from_secs(2))
        .start();
    let closed = TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let dynamic = format!(
        "http:\n  routers:\n    shadow:\n      rule: \"PathPrefix(`/`)\"\n      service: shadow\n  services:\n    shadow:\n      mirroring:\n        service: main\n        maxBodySize: 8\n        mirrors:\n          - name: copy\n            percent: 50\n          - name: gone\n            percent: 100\n    main:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:{}\"\n    copy:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:{}\"\n    gone:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:{}\"\n",
        main.port(),
        copy.port(),
        closed.port()
    );
    let rt = build_and_serve(
        dir.path(),
        "entryPoints:\n  web:\n    address: \":80\"\napi:\n  insecure: true\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
        &dynamic,
        &[],
    );
    let post = |path: &str, body: &str| {
        let raw = request_raw(
            rt.web,
            "POST",
            path,
            &format!("Content-Length: {}\r\n\r\n{body}", body.len()),
        );
        raw.split("\r\n\r\n").nth(1).unwrap_or("").to_owned()
    };
    // 50 %: requests 1, 3, 5 are picked (Traefik's counters); the copy backend takes 2 s to
    // answer and the other mirror refuses connections, yet every main answer comes at once.
    let started = Instant::now();
    assert_eq!(post("/p1", "small"), "main POST /p1 small");
    assert_eq!(post("/p2", "small"), "main POST /p2 small");
    assert_eq!(
        post("/p3", "too large for it"),
        "main POST /p3 too large for it"
    );
    assert_eq!(get(rt.web, "/p4").1, "main GET /p4 ");
    assert_eq!(get(rt.web, "/p5").1, "main GET /p5 ");
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "the mirrors delayed the main responses: {:?}",
        started.elapsed()
    );
    let deadline = Instant::now() + Duration::from_secs(5);
    while copy.seen().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    // /p3's body is over maxBodySize: not mirrored at all (it still reached the main service).
    // The copies travel from separate tasks, so their order at the mirror is not fixed.
    let mut copies = copy.seen();
    copies.sort();
    assert_eq!(
        copies,
        [
            "GET /p5 host=scadabridge.local ",
            "POST /p1 host=scadabridge.local small"
        ]
    );
    assert_eq!(main.seen().len(), 5);
}

#[test]
fn mirroring_below_weighted_and_failover_services_copies_requests() {
    let main = backend("main").answer(answers::method_target_body).start();
    let copy = backend("copy").answer(answers::method_target_body).start();
    let dir = tempfile::tempdir().unwrap();
    // Routers reach the mirroring service `shadow` only through a weighted and a failover
    // service; `direct` goes to `main` without it.
    let dynamic = format!(
        "http:\n  routers:\n    w:\n      rule: \"PathPrefix(`/w`)\"\n      service: top\n    f:\n      rule: \"PathPrefix(`/f`)\"\n      service: safe\n    direct:\n      rule: \"PathPrefix(`/d`)\"\n      service: main\n  services:\n    top:\n      weighted:\n        services:\n          - name: shadow\n            weight: 1\n    safe:\n      failover:\n        service: shadow\n        fallback: main\n    shadow:\n      mirroring:\n        service: main\n        mirrors:\n          - name: copy\n            percent: 100\n    main:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:{}\"\n    copy:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:{}\"\n",
        main.port(),
        copy.port()
    );
    let rt = build_and_serve(
        dir.path(),
        "entryPoints:\n  web:\n    address: \":80\"\napi:\n  insecure: true\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
        &dynamic,
        &[],
    );
    assert_eq!(get(rt.web, "/w/1").1, "main GET /w/1 ");
    let raw = request_raw(rt.web, "POST", "/f/2", "Content-Length: 4\r\n\r\nbody");
    assert_eq!(raw.split("\r\n\r\n").nth(1), Some("main POST /f/2 body"));
    assert_eq!(get(rt.web, "/d/3").1, "main GET /d/3 ");
    let deadline = Instant::now() + Duration::from_secs(5);
    while copy.seen().len() < 2 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    // Copies are sent from their own tasks: their order is not the requests' order.
    let mut copies = copy.seen();
    copies.sort();
    assert_eq!(
        copies,
        [
            "GET /w/1 host=scadabridge.local ",
            "POST /f/2 host=scadabridge.local body"
        ]
    );
    assert_eq!(main.seen().len(), 3);
}
