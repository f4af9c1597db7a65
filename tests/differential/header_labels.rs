//! `metrics.prometheus.headerLabels`: the request counters of the entry point, router and
//! service partitioned by request fields, as Traefik partitions them — a missing field is an
//! empty value, and `Host` is always empty (Go keeps it out of the header map).

use std::collections::BTreeMap;

use bridge_tests::backends::{Reply, backend};
use bridge_tests::traefik::{fetch, oracle, serve_twice_static};

/// The series of `metric` whose `useragent` starts with `probe`: labels → value.
fn series(text: &str, metric: &str) -> BTreeMap<BTreeMap<String, String>, String> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix(&format!("{metric}{{")) else {
            continue;
        };
        let Some((labels, value)) = rest.rsplit_once("} ") else {
            continue;
        };
        let labels: BTreeMap<String, String> = labels
            .split("\",")
            .filter_map(|kv| {
                let (k, v) = kv.split_once("=\"")?;
                Some((k.to_owned(), v.trim_end_matches('"').to_owned()))
            })
            .collect();
        if labels
            .get("useragent")
            .is_some_and(|u| u.starts_with("probe"))
        {
            out.insert(labels, value.trim().to_owned());
        }
    }
    out
}

#[test]
fn header_labels_partition_the_request_counters_as_traefik_does() {
    let oracle = oracle("header_labels_partition_the_request_counters_as_traefik_does");
    let app = backend("app").answer(|_| Reply::ok("ok")).start();
    let dynamic = format!(
        "http:\n  routers:\n    app:\n      rule: PathPrefix(`/app`)\n      service: app\n  services:\n    app:\n      loadBalancer:\n        servers:\n          - url: http://{}\n",
        app.addr
    );
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice_static(
        dir.path(),
        oracle.as_deref(),
        &dynamic,
        &["app"],
        "metrics:\n  prometheus:\n    entryPoint: web\n    addRoutersLabels: true\n    headerLabels:\n      useragent: User-Agent\n      site: Host\n      tenant: X-Tenant\n",
    );
    let mut seen = Vec::new();
    for (who, addr) in twin.targets() {
        for (agent, tenant) in [("probe-a", "t1"), ("probe-a", "t1"), ("probe-b", "")] {
            let mut h = vec![("User-Agent", agent), ("Host", "plant.test")];
            if !tenant.is_empty() {
                h.push(("X-Tenant", tenant));
            }
            let a = fetch(addr, "GET", "/app", &h, b"").unwrap();
            assert_eq!(a.status, 200, "{who}");
        }
        let text = fetch(addr, "GET", "/metrics", &[], b"").unwrap().text();
        let mut all = BTreeMap::new();
        for metric in [
            "traefik_entrypoint_requests_total",
            "traefik_router_requests_total",
            "traefik_service_requests_total",
        ] {
            let s = series(&text, metric);
            assert!(
                !s.is_empty(),
                "{who}: no {metric} with header labels in\n{text}"
            );
            all.insert(metric, s);
        }
        seen.push((who, all));
    }
    let ours = &seen[0].1;
    let ep = &ours["traefik_entrypoint_requests_total"];
    let a: BTreeMap<String, String> = [
        ("code", "200"),
        ("entrypoint", "web"),
        ("method", "GET"),
        ("protocol", "http"),
        ("site", ""),
        ("tenant", "t1"),
        ("useragent", "probe-a"),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v.to_owned()))
    .collect();
    assert_eq!(ep.get(&a).map(String::as_str), Some("2"), "{ep:#?}");
    assert_eq!(ep.len(), 2, "{ep:#?}");
    if let Some((_, theirs)) = seen.get(1) {
        assert_eq!(ours, theirs, "bridge-runtime and Traefik");
    }
}
