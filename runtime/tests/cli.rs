//! The `bridge-runtime` binary's contract at its edges: help, and refusing what it cannot serve.
//! (Serving itself is tested end to end in `tests/e2e/`.)

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use std::process::Command;

fn bin() -> Command {
    Command::new(env!("CARGO_BIN_EXE_bridge-runtime"))
}

#[test]
fn help_names_the_flags() {
    let out = bin().arg("--help").output().unwrap();
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("--bind") && text.contains("--resolve"),
        "{text}"
    );
}

#[test]
fn a_missing_plan_exits_2_naming_it() {
    let out = bin().arg("/nonexistent/plan.json").output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/plan.json"));
}

#[test]
fn an_https_server_with_an_unreadable_root_ca_is_refused_naming_the_file() {
    let mut plan = bridge_plan::Plan::example();
    for s in plan.services.values_mut() {
        if let bridge_plan::ServiceKind::LoadBalancer(lb) = &mut s.kind {
            lb.servers_transport = Some("custom".into());
            lb.servers[0].url = "https://10.0.0.11:8443".into();
        }
    }
    let custom = bridge_plan::ServersTransport {
        root_cas: vec![bridge_plan::Pem::File("/nonexistent/ca.crt".into())],
        ..Default::default()
    };
    plan.servers_transports.insert("custom".into(), custom);
    let err =
        bridge_runtime::Runtime::new(std::sync::Arc::new(plan), Default::default()).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("servers transport `custom`"), "{text}");
    assert!(text.contains("/nonexistent/ca.crt"), "{text}");
}

#[test]
fn a_tls_plan_with_an_unreadable_certificate_is_refused_naming_the_file() {
    let mut plan = bridge_plan::Plan::example();
    for ep in plan.entrypoints.values_mut() {
        ep.tls = Some(bridge_plan::EntryPointTls {
            options: "default".into(),
        });
    }
    plan.tls.certificates.push(bridge_plan::Certificate {
        cert: bridge_plan::Pem::File("/nonexistent/bridge.crt".into()),
        key: bridge_plan::Pem::File("/nonexistent/bridge.key".into()),
    });
    let err =
        bridge_runtime::Runtime::new(std::sync::Arc::new(plan), Default::default()).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("/nonexistent/bridge.crt"), "{text}");
    assert!(text.contains("cannot read the certificate"), "{text}");
}

#[test]
fn mirroring_below_another_service_is_served_but_chains_of_more_than_four_are_refused() {
    use bridge_plan::{Mirror, Mirroring, Service, ServiceKind, Weighted, WeightedRef};
    let mut plan = bridge_plan::Plan::example();
    let source = plan.services["whoami"].source.clone();
    let service = |kind| Service {
        middlewares: Vec::new(),
        source: source.clone(),
        kind,
    };
    let mirroring = |main: &str| {
        service(ServiceKind::Mirroring(Mirroring {
            service: main.into(),
            mirrors: vec![Mirror {
                service: "whoami".into(),
                percent: 10,
            }],
            mirror_body: true,
            max_body_size: None,
        }))
    };
    plan.services.insert("shadow".into(), mirroring("whoami"));
    plan.services.insert(
        "split".into(),
        service(ServiceKind::Weighted(Weighted {
            services: vec![WeightedRef {
                service: "shadow".into(),
                name: "shadow".into(),
                weight: 1,
            }],
            health_check: false,
            sticky: None,
        })),
    );
    let accepted = std::sync::Arc::new(plan.clone());
    assert!(bridge_runtime::Runtime::new(accepted, Default::default()).is_ok());
    // shadow ← m1 ← m2 ← m3 ← m4: five mirroring services on one path.
    for (name, main) in [("m1", "shadow"), ("m2", "m1"), ("m3", "m2"), ("m4", "m3")] {
        plan.services.insert(name.into(), mirroring(main));
    }
    let err =
        bridge_runtime::Runtime::new(std::sync::Arc::new(plan), Default::default()).unwrap_err();
    let text = err.to_string();
    assert!(
        text.contains(
            "service `m4`: a request through it would pass more than 4 mirroring services"
        ),
        "{text}"
    );
}

#[test]
fn log_format_json_writes_one_json_object_per_line() {
    use std::io::BufRead;
    let mut plan = bridge_plan::Plan::example();
    plan.log.format = bridge_plan::LogFormat::Json;
    for s in plan.services.values_mut() {
        if let bridge_plan::ServiceKind::LoadBalancer(lb) = &mut s.kind {
            for srv in &mut lb.servers {
                srv.url = "http://127.0.0.1:1".into();
            }
        }
    }
    plan.seal().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("plan.json");
    std::fs::write(&path, plan.to_file_string().unwrap()).unwrap();
    let mut child = bin()
        .arg(&path)
        .args(["--bind", "web=127.0.0.1:0"])
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = child.stderr.take().unwrap();
    let mut listening = None;
    for line in std::io::BufReader::new(stderr).lines().take(50) {
        let line = line.unwrap();
        let v: serde_json::Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("not a JSON log line ({e}): {line}"));
        assert!(v["level"].is_string() && v["timestamp"].is_string(), "{v}");
        if v["message"]
            .as_str()
            .is_some_and(|m| m.starts_with("entry point web listening on 127.0.0.1:"))
        {
            listening = Some(v);
            break;
        }
    }
    let _ = child.kill();
    let _ = child.wait();
    let v = listening.expect("the listening line was logged");
    assert_eq!(v["level"], "INFO");
}
