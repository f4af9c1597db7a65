//! `bridgectl` as a user runs it: real processes, exit codes, and every output format.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use std::fs;

use assert_cmd::Command;
use bridge_tests::repo_root;
use serde_json::Value;

fn bridgectl() -> Command {
    let mut cmd = Command::cargo_bin("bridgectl").expect("bridgectl binary is built");
    cmd.current_dir(repo_root());
    cmd.env_remove("NO_COLOR");
    cmd
}

#[test]
fn the_seed_configuration_passes_unchanged() {
    let out = bridgectl()
        .args(["check", "examples/scadabridge"])
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("ok: 2 files checked, 0 warnings"),
        "{stderr}"
    );
    assert!(
        !stderr.contains('\x1b'),
        "no colours when stderr is not a terminal"
    );
}

#[test]
fn errors_exit_1_with_file_line_column() {
    let out = bridgectl()
        .args(["check", "tests/fixtures/bad/09-undefined-service"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("error[undefined-reference]: service `centrall` is not defined"),
        "{stderr}"
    );
    assert!(
        stderr.contains("tests/fixtures/bad/09-undefined-service/dynamic.yml:5:16"),
        "{stderr}"
    );
    assert!(stderr.contains("did you mean `central`?"), "{stderr}");
}

#[test]
fn json_output_is_the_documented_shape() {
    let out = bridgectl()
        .args([
            "check",
            "tests/fixtures/bad/06-unknown-nested-key",
            "--format",
            "json",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).expect("stdout is JSON");
    assert_eq!(v["ok"], Value::Bool(false));
    let diags = v["diagnostics"].as_array().expect("diagnostics");
    let unknown = diags
        .iter()
        .find(|d| d["code"] == "unknown-key")
        .expect("an unknown-key diagnostic");
    for key in [
        "severity", "code", "message", "file", "line", "column", "pointer", "hint",
    ] {
        assert!(unknown.get(key).is_some(), "missing {key} in {unknown}");
    }
    assert_eq!(unknown["file"], "dynamic.yml");
    assert_eq!(unknown["line"], 4);
    assert_eq!(unknown["column"], 7);
    assert_eq!(unknown["pointer"], "/http/routers/central/rulee");
    assert_eq!(unknown["hint"], "did you mean `rule`?");
}

#[test]
fn json_ok_is_true_for_the_seed() {
    let out = bridgectl()
        .args(["check", "examples/scadabridge", "--format", "json"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    let v: Value = serde_json::from_slice(&out.stdout).expect("JSON");
    assert_eq!(v, serde_json::json!({"ok": true, "diagnostics": []}));
}

#[test]
fn github_annotations_point_at_repository_paths() {
    let out = bridgectl()
        .args([
            "check",
            "tests/fixtures/bad/09-undefined-service",
            "--format",
            "github",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.starts_with("::error title=bridgectl undefined-reference,file=tests/fixtures/bad/09-undefined-service/dynamic.yml,line=5,col=16::service `centrall` is not defined%0Ahelp: did you mean `central`?"),
        "{stdout}"
    );
}

#[test]
fn sarif_output_has_rules_results_and_no_empty_regions() {
    let out = bridgectl()
        .args([
            "check",
            "tests/fixtures/bad/28-cert-file-missing",
            "--format",
            "sarif",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    let v: Value = serde_json::from_slice(&out.stdout).expect("SARIF is JSON");
    assert_eq!(v["version"], "2.1.0");
    let run = &v["runs"][0];
    assert_eq!(run["tool"]["driver"]["name"], "bridgectl");
    assert_eq!(run["tool"]["driver"]["rules"][0]["id"], "file-not-found");
    let results = run["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    for r in results {
        let region = &r["locations"][0]["physicalLocation"]["region"];
        assert!(region["startLine"].as_u64().is_some_and(|l| l > 0), "{r}");
        assert!(region["startColumn"].as_u64().is_some_and(|c| c > 0), "{r}");
    }
}

#[test]
fn warnings_pass_unless_denied() {
    let case = "tests/fixtures/bad/07-unknown-top-level-key";
    let out = bridgectl().args(["check", case]).output().expect("run");
    assert_eq!(out.status.code(), Some(0));
    let out = bridgectl()
        .args(["check", case, "--deny-warnings"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
}

#[test]
fn usage_and_io_problems_exit_2() {
    let out = bridgectl()
        .args(["check", "no/such/dir"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no/such/dir"));
    let empty = tempfile::tempdir().expect("tempdir");
    let out = bridgectl()
        .arg("check")
        .arg(empty.path())
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("no traefik.toml, traefik.yaml or traefik.yml")
    );
    let out = bridgectl()
        .args(["check", "--format", "xml"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let out = bridgectl()
        .args(["check", "--var", "novalue"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn template_variables_fill_dynamic_files() {
    let case = "tests/fixtures/bad/32-undefined-template-variable";
    let out = bridgectl().args(["check", case]).output().expect("run");
    assert_eq!(out.status.code(), Some(1));
    let out = bridgectl()
        .args(["check", case, "--var", "central_a=scadabridge-central-a"])
        .output()
        .expect("run");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn static_and_dynamic_can_be_given_explicitly() {
    let out = bridgectl()
        .args([
            "check",
            "--static",
            "examples/scadabridge/traefik.yml",
            "--dynamic",
            "tests/fixtures/bad/09-undefined-service/dynamic.yml",
        ])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("centrall"));
}

#[test]
fn schema_command_prints_the_committed_schemas() {
    for (kind, file) in [
        ("static", "traefik-static.schema.json"),
        ("dynamic", "traefik-dynamic.schema.json"),
    ] {
        let out = bridgectl().args(["schema", kind]).output().expect("run");
        assert_eq!(out.status.code(), Some(0));
        let committed =
            fs::read_to_string(repo_root().join("schemas").join(file)).expect("committed schema");
        assert_eq!(String::from_utf8_lossy(&out.stdout), committed, "{file}");
    }
}

#[test]
fn help_teaches_the_command() {
    let out = bridgectl().args(["check", "--help"]).output().expect("run");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("Examples:"), "{text}");
    assert!(text.contains("Exit codes"), "{text}");
    assert!(text.contains("--format"), "{text}");
}

#[test]
fn a_service_with_two_kinds_is_refused_as_traefik_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("traefik.yml"),
        "entryPoints:\n  web:\n    address: \":80\"\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
    )
    .unwrap();
    fs::write(
        dir.path().join("dynamic.yml"),
        "http:\n  routers:\n    r:\n      rule: \"PathPrefix(`/`)\"\n      service: s\n  services:\n    s:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:1\"\n      failover:\n        service: a\n        fallback: b\n    a:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:2\"\n    b:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:3\"\n",
    )
    .unwrap();
    let out = bridgectl().arg("check").arg(dir.path()).output().unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("service `s` defines more than one kind: loadBalancer, failover"),
        "{text}"
    );
}

#[test]
fn grpc_health_checks_are_accepted_over_h2c_and_refused_over_tls() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("traefik.yml"),
        "entryPoints:\n  web:\n    address: \":80\"\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
    )
    .unwrap();
    let dynamic = |check: &str| {
        format!(
            "http:\n  routers:\n    r:\n      rule: \"PathPrefix(`/`)\"\n      service: s\n  services:\n    s:\n      loadBalancer:\n        healthCheck:\n{check}        servers:\n          - url: \"h2c://127.0.0.1:1\"\n"
        )
    };
    let check = |yaml: &str| {
        fs::write(dir.path().join("dynamic.yml"), dynamic(yaml)).unwrap();
        let out = bridgectl().arg("check").arg(dir.path()).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code(), text)
    };
    // gRPC needs no path (none is sent), so no warning about probing `/`.
    let (code, text) = check("          mode: grpc\n");
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("probes `/`"), "{text}");
    // Traefik's gRPC check has no TLS: with scheme https it always fails, here it is an error.
    let (code, text) = check("          mode: grpc\n          scheme: https\n");
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("without TLS"), "{text}");
    let (code, text) = check("          mode: tcp\n          path: /\n");
    assert_eq!(code, Some(1), "{text}");
    assert!(text.contains("must be http or grpc"), "{text}");
}

#[test]
fn host_resolver_is_a_no_op_unless_it_flattens_cnames_which_is_refused_where_written() {
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("dynamic.yml"),
        "http:\n  routers:\n    r:\n      rule: \"Host(`a.example`)\"\n      service: s\n  services:\n    s:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:1\"\n",
    )
    .unwrap();
    let check = |resolver: &str| {
        fs::write(
            dir.path().join("traefik.yml"),
            format!("entryPoints:\n  web:\n    address: \":80\"\n{resolver}providers:\n  file:\n    filename: /etc/traefik/dynamic.yml\n"),
        )
        .unwrap();
        let out = bridgectl().arg("check").arg(dir.path()).output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout).into_owned()
            + &String::from_utf8_lossy(&out.stderr);
        (out.status.code(), text)
    };
    // Without flattening Traefik's resolver is never asked: accepted, nothing to say.
    let (code, text) = check("hostResolver:\n  resolvConfig: /etc/resolv.conf\n  resolvDepth: 3\n");
    assert_eq!(code, Some(0), "{text}");
    assert!(!text.contains("hostResolver"), "{text}");
    let (code, text) = check("hostResolver:\n  cnameFlattening: true\n");
    assert_eq!(code, Some(1), "{text}");
    assert!(
        text.contains("error[unsupported]")
            && text.contains("cnameFlattening")
            && text.contains("traefik.yml:5:"),
        "{text}"
    );
}
