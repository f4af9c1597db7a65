//! `bridgectl build`, `explain` and `diff` as a user runs them: reproducible plans for the seed in dev
//! and prod, located policy errors, nothing written on failure, and tampered plans refused.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use std::fs;
use std::path::Path;

use assert_cmd::Command;
use bridge_tests::repo_root;

fn bridgectl() -> Command {
    let mut cmd = Command::cargo_bin("bridgectl").expect("bridgectl binary is built");
    cmd.current_dir(repo_root());
    cmd
}

/// Test certificates and a users file for the prod profile.
struct ProdFiles {
    dir: tempfile::TempDir,
}

impl ProdFiles {
    fn new() -> Self {
        let dir = tempfile::tempdir().unwrap();
        let far = time::OffsetDateTime::now_utc() + time::Duration::days(400);
        write_cert(dir.path(), "bridge", &["scadabridge.example.com"], far);
        write_cert(dir.path(), "other", &["other.example.com"], far);
        write_cert(
            dir.path(),
            "soon",
            &["scadabridge.example.com"],
            time::OffsetDateTime::now_utc() + time::Duration::days(10),
        );
        fs::write(
            dir.path().join("dashboard.htpasswd"),
            "admin:$apr1$H6uskkkW$IgXLP6ewTrSuBkTrqE8wj/\n",
        )
        .unwrap();
        fs::write(dir.path().join("plain.htpasswd"), "admin:changeme\n").unwrap();
        Self { dir }
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_string_lossy().into_owned()
    }

    fn vars(&self, cert: &str, key: &str, users: &str) -> Vec<String> {
        vec![
            "--var".into(),
            "domain=scadabridge.example.com".into(),
            "--var".into(),
            format!("tls_cert={}", self.path(cert)),
            "--var".into(),
            format!("tls_key={}", self.path(key)),
            "--var".into(),
            format!("dashboard_users_file={}", self.path(users)),
        ]
    }

    fn good(&self) -> Vec<String> {
        self.vars("bridge.crt", "bridge.key", "dashboard.htpasswd")
    }
}

fn write_cert(dir: &Path, name: &str, sans: &[&str], not_after: time::OffsetDateTime) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params =
        rcgen::CertificateParams::new(sans.iter().map(|s| s.to_string()).collect::<Vec<_>>())
            .unwrap();
    params.not_before = time::OffsetDateTime::now_utc() - time::Duration::days(1);
    params.not_after = not_after;
    let cert = params.self_signed(&key).unwrap();
    fs::write(dir.join(format!("{name}.crt")), cert.pem()).unwrap();
    fs::write(dir.join(format!("{name}.key")), key.serialize_pem()).unwrap();
}

fn build(args: &[String], out: &Path) -> std::process::Output {
    bridgectl()
        .arg("build")
        .args(args)
        .arg("--out")
        .arg(out)
        .output()
        .unwrap()
}

fn s(v: &[&str]) -> Vec<String> {
    v.iter().map(|x| x.to_string()).collect()
}

#[test]
fn dev_plan_is_reproducible_and_golden() {
    let tmp = tempfile::tempdir().unwrap();
    let (a, b) = (tmp.path().join("a.json"), tmp.path().join("b.json"));
    let args = s(&["examples/scadabridge", "--profile", "dev"]);
    let out = build(&args, &a);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(build(&args, &b).status.code(), Some(0));
    let (ta, tb) = (
        fs::read_to_string(&a).unwrap(),
        fs::read_to_string(&b).unwrap(),
    );
    assert_eq!(
        ta, tb,
        "two builds of the same inputs must give identical bytes"
    );
    let plan: serde_json::Value = serde_json::from_str(&ta).unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        plan["hash"].as_str().unwrap()
    );
    assert!(
        fs::read_dir(tmp.path()).unwrap().all(|e| !e
            .unwrap()
            .file_name()
            .to_string_lossy()
            .contains(".tmp"))
    );
    insta::with_settings!({snapshot_path => "snapshots/plans", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("scadabridge-dev", ta);
    });
}

/// The plan without where things were written (provenance, input files, hash): what a TOML and
/// a YAML twin must agree on.
fn without_places(v: &mut serde_json::Value) {
    match v {
        serde_json::Value::Object(m) => {
            for k in ["source", "inputs", "hash"] {
                m.remove(k);
            }
            m.values_mut().for_each(without_places);
        }
        serde_json::Value::Array(a) => a.iter_mut().for_each(without_places),
        _ => {}
    }
}

#[test]
fn toml_files_build_the_same_plan_as_their_yaml_twins() {
    // The seed example written as Traefik users write it in TOML: traefik.toml and a .toml
    // dynamic file, tables and arrays of tables.
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("traefik.toml"),
        "[entryPoints.web]\n  address = \":80\"\n\n[api]\n  dashboard = true\n  insecure = true\n\n[ping]\n\n[providers.file]\n  filename = \"/etc/traefik/dynamic.toml\"\n",
    )
    .unwrap();
    fs::write(
        dir.path().join("dynamic.toml"),
        "[http.routers.central]\n  rule = \"PathPrefix(`/`)\"\n  service = \"central\"\n  entryPoints = [\"web\"]\n\n[http.services.central.loadBalancer.healthCheck]\n  path = \"/health/active\"\n  interval = \"5s\"\n  timeout = \"3s\"\n\n[[http.services.central.loadBalancer.servers]]\n  url = \"http://scadabridge-central-a:5000\"\n\n[[http.services.central.loadBalancer.servers]]\n  url = \"http://scadabridge-central-b:5000\"\n",
    )
    .unwrap();
    let (from_toml, from_yaml) = (dir.path().join("toml.json"), dir.path().join("yaml.json"));
    let out = build(
        &[
            dir.path().to_string_lossy().into_owned(),
            "--profile".into(),
            "dev".into(),
        ],
        &from_toml,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = build(
        &s(&["examples/scadabridge", "--profile", "dev"]),
        &from_yaml,
    );
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let read = |p: &Path| {
        let mut v: serde_json::Value =
            serde_json::from_str(&fs::read_to_string(p).unwrap()).unwrap();
        without_places(&mut v);
        v
    };
    assert_eq!(read(&from_toml), read(&from_yaml));
    // A TOML mistake is reported at its line and column, as a YAML one.
    fs::write(
        dir.path().join("dynamic.toml"),
        "[http.routers.central]\n  rule = \"PathPrefix(`/`)\"\n  servce = \"central\"\n",
    )
    .unwrap();
    let out = bridgectl().arg("check").arg(dir.path()).output().unwrap();
    let text = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{text}");
    assert!(
        text.contains("unknown key `servce`") && text.contains("dynamic.toml:3:3"),
        "{text}"
    );
}

#[test]
fn dev_plan_routes_the_seed_as_written() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("plan.json");
    assert_eq!(
        build(&s(&["examples/scadabridge", "--profile", "dev"]), &p)
            .status
            .code(),
        Some(0)
    );
    let plan: serde_json::Value = serde_json::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
    assert_eq!(plan["entrypoints"]["web"]["port"], 80);
    assert_eq!(
        plan["entrypoints"]["traefik"]["port"], 8080,
        "api.insecure creates the traefik entry point"
    );
    assert_eq!(
        plan["entrypoints"]["web"]["routers"],
        serde_json::json!(["central"])
    );
    let hc = &plan["services"]["central"]["kind"]["load_balancer"]["health_check"];
    assert_eq!(hc["path"], "/health/active");
    assert_eq!(hc["interval_ms"], 5000);
    assert_eq!(hc["timeout_ms"], 3000);
    assert_eq!(
        plan["routers"]["central"]["priority"], 15,
        "default priority is the rule length"
    );
    assert_eq!(plan["routers"]["central"]["source"]["file"], "dynamic.yml");
    assert_eq!(plan["routers"]["central"]["source"]["line"], 3);
    assert_eq!(plan["api"]["insecure"], true);
}

#[test]
fn prod_plan_serves_https_redirects_http_and_secures_the_dashboard() {
    let files = ProdFiles::new();
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("plan.json");
    let mut args = s(&["examples/scadabridge", "--profile", "prod"]);
    args.extend(files.good());
    let out = build(&args, &p);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = fs::read_to_string(&p).unwrap();
    let plan: serde_json::Value = serde_json::from_str(&text).unwrap();
    let eps = &plan["entrypoints"];
    assert_eq!(
        eps["web"]["redirect"],
        serde_json::json!({"scheme": "https", "port": 443, "permanent": true, "priority": i64::MAX - 1})
    );
    assert_eq!(eps["web"]["routers"], serde_json::json!([]));
    assert_eq!(eps["websecure"]["port"], 443);
    assert_eq!(eps["websecure"]["tls"]["options"], "bridgectl-prod");
    assert_eq!(eps["websecure"]["routers"], serde_json::json!(["central"]));
    assert_eq!(eps["traefik"]["tls"]["options"], "bridgectl-prod");
    let central = &plan["routers"]["central"];
    assert_eq!(central["tls"]["options"], "bridgectl-prod");
    assert_eq!(
        central["middlewares"],
        serde_json::json!(["bridgectl-hsts"])
    );
    let hsts = &plan["middlewares"]["bridgectl-hsts"]["kind"]["headers"];
    assert_eq!(hsts["sts_seconds"], 31_536_000);
    assert_eq!(hsts["sts_include_subdomains"], true);
    let dash = &plan["routers"]["bridgectl-dashboard"];
    assert_eq!(dash["service"], "api@internal");
    assert_eq!(
        dash["middlewares"],
        serde_json::json!(["bridgectl-dashboard-auth", "bridgectl-hsts"])
    );
    assert_eq!(plan["api"]["insecure"], false);
    let opts = &plan["tls"]["options"]["bridgectl-prod"];
    assert_eq!(opts["min_version"], "1.2");
    assert_eq!(
        opts["alpn_protocols"],
        serde_json::json!(["h2", "http/1.1"])
    );
    assert_eq!(
        plan["tls"]["certificates"][0]["cert"]["file"],
        files.path("bridge.crt")
    );
    assert!(
        !text.contains("BEGIN"),
        "certificates given as files are referenced by path, never embedded"
    );
    let redacted = text.replace(&files.dir.path().to_string_lossy().into_owned(), "[CERTS]");
    let redacted = regex_lite_replace_hashes(&redacted);
    insta::with_settings!({snapshot_path => "snapshots/plans", prepend_module_to_snapshot => false}, {
        insta::assert_snapshot!("scadabridge-prod", redacted);
    });
}

/// Hashes depend on the temporary certificate paths; replace them for the golden file.
fn regex_lite_replace_hashes(text: &str) -> String {
    text.lines()
        .map(|l| {
            let t = l.trim_start();
            if t.starts_with("\"hash\": \"sha256:")
                || t.starts_with("\"digest\": \"sha256:")
                || t.starts_with("\"sha256\": ")
            {
                let indent = &l[..l.len() - t.len()];
                let key = t.split(':').next().unwrap_or("");
                let comma = if t.ends_with(',') { "," } else { "" };
                format!("{indent}{key}: \"[HASH]\"{comma}")
            } else {
                l.to_owned()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

#[test]
fn missing_prod_variables_are_named_and_nothing_is_written() {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("plan.json");
    let out = build(
        &s(&[
            "examples/scadabridge",
            "--profile",
            "prod",
            "--var",
            "domain=x.example.com",
        ]),
        &p,
    );
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    for var in ["tls_cert", "tls_key", "dashboard_users_file"] {
        assert!(
            err.contains(&format!("needs the variable `{var}`")),
            "{err}"
        );
    }
    assert!(!err.contains("needs the variable `domain`"), "{err}");
    assert!(!p.exists(), "a failed build must not write a plan");
}

fn prod_error(extra_dir: Option<&Path>, vars: Vec<String>, profile: &str) -> String {
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("plan.json");
    let dir = extra_dir.map_or_else(
        || "examples/scadabridge".to_owned(),
        |d| d.to_string_lossy().into_owned(),
    );
    let mut args = vec![dir, "--profile".into(), profile.into()];
    args.extend(vars);
    let out = build(&args, &p);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!p.exists());
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// A copy of the seed with extra dynamic content appended.
fn seed_with(extra_dynamic: &str, extra_static: &str) -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let root = repo_root().join("examples/scadabridge");
    fs::write(
        d.path().join("traefik.yml"),
        fs::read_to_string(root.join("traefik.yml")).unwrap() + extra_static,
    )
    .unwrap();
    fs::write(
        d.path().join("dynamic.yml"),
        fs::read_to_string(root.join("dynamic.yml")).unwrap() + extra_dynamic,
    )
    .unwrap();
    d
}

#[test]
fn prod_refuses_a_certificate_that_does_not_match_its_key() {
    let files = ProdFiles::new();
    let err = prod_error(
        None,
        files.vars("bridge.crt", "other.key", "dashboard.htpasswd"),
        "prod",
    );
    assert!(
        err.contains("error[certificate]") && err.contains("does not match"),
        "{err}"
    );
    assert!(
        err.contains("profiles/prod.yml:"),
        "located in the profile: {err}"
    );
}

#[test]
fn prod_refuses_a_certificate_for_another_domain() {
    let files = ProdFiles::new();
    let err = prod_error(
        None,
        files.vars("other.crt", "other.key", "dashboard.htpasswd"),
        "prod",
    );
    assert!(
        err.contains("does not cover `scadabridge.example.com`"),
        "{err}"
    );
}

#[test]
fn prod_warns_about_a_certificate_expiring_soon() {
    let files = ProdFiles::new();
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("plan.json");
    let mut args = s(&["examples/scadabridge", "--profile", "prod"]);
    args.extend(files.vars("soon.crt", "soon.key", "dashboard.htpasswd"));
    let out = build(&args, &p);
    assert_eq!(out.status.code(), Some(0));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("warning[certificate]: the certificate expires in")
    );
    args.push("--deny-warnings".into());
    assert_eq!(
        build(&args, &tmp.path().join("p2.json")).status.code(),
        Some(1)
    );
}

#[test]
fn prod_warns_when_a_stapled_certificate_file_holds_no_issuer() {
    let files = ProdFiles::new();
    let ca = bridge_tests::ocsp::OcspCa::new(files.dir.path());
    let domain = "scadabridge.example.com";
    ca.leaf(
        files.dir.path(),
        domain,
        0x21,
        &["http://ocsp.example.com"],
        true,
    );
    let vars = |cert: &str| files.vars(cert, &format!("{domain}.key"), "dashboard.htpasswd");
    let warning = "the certificate names an OCSP responder, but its file holds no issuer";
    let tmp = tempfile::tempdir().unwrap();
    for (ocsp, warned) in [(true, true), (false, false)] {
        let seed = seed_with("", if ocsp { "ocsp: {}\n" } else { "" });
        let mut args = vec![
            seed.path().to_string_lossy().into_owned(),
            "--profile".into(),
            "prod".into(),
        ];
        args.extend(vars(&format!("{domain}.crt")));
        let out = build(&args, &tmp.path().join("plan.json"));
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(0), "{err}");
        assert_eq!(err.contains(warning), warned, "ocsp {ocsp}: {err}");
    }
    // With the issuer after the leaf: no warning.
    ca.leaf(
        files.dir.path(),
        domain,
        0x22,
        &["http://ocsp.example.com"],
        false,
    );
    let seed = seed_with("", "ocsp: {}\n");
    let mut args = vec![
        seed.path().to_string_lossy().into_owned(),
        "--profile".into(),
        "prod".into(),
    ];
    args.extend(vars(&format!("{domain}.crt")));
    let out = build(&args, &tmp.path().join("plan2.json"));
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(0), "{err}");
    assert!(!err.contains(warning), "{err}");
}

#[test]
fn prod_refuses_plaintext_dashboard_users() {
    let files = ProdFiles::new();
    let err = prod_error(
        None,
        files.vars("bridge.crt", "bridge.key", "plain.htpasswd"),
        "prod",
    );
    assert!(
        err.contains("error[invalid-hash]") && err.contains("plain.htpasswd:1"),
        "{err}"
    );
}

#[test]
fn prod_refuses_a_plain_http_router() {
    let files = ProdFiles::new();
    let d = seed_with("", "");
    let dynamic = fs::read_to_string(d.path().join("dynamic.yml")).unwrap().replacen(
        "  services:\n",
        "    metrics:\n      rule: \"PathPrefix(`/metrics`)\"\n      service: central\n      entryPoints: [internal]\n  services:\n",
        1,
    );
    fs::write(d.path().join("dynamic.yml"), dynamic).unwrap();
    let st = fs::read_to_string(d.path().join("traefik.yml")).unwrap();
    fs::write(
        d.path().join("traefik.yml"),
        st.replacen(
            "entryPoints:\n",
            "entryPoints:\n  internal:\n    address: \":9100\"\n",
            1,
        ),
    )
    .unwrap();
    let err = prod_error(Some(d.path()), files.good(), "prod");
    assert!(
        err.contains("error[policy]")
            && err.contains("router `metrics` served over plain HTTP on entry point `internal`"),
        "{err}"
    );
    assert!(err.contains("dynamic.yml:"), "{err}");
}

#[test]
fn prod_refuses_a_dashboard_without_auth_and_weak_tls() {
    let files = ProdFiles::new();
    let d = seed_with(
        "\n  tls:\n    options:\n      legacy:\n        minVersion: VersionTLS11\n",
        "",
    );
    let dynamic = fs::read_to_string(d.path().join("dynamic.yml")).unwrap();
    let dynamic = dynamic.replace("\n  tls:", "\ntls:").replacen(
        "  services:\n",
        "    open-api:\n      rule: \"PathPrefix(`/api`)\"\n      service: api@internal\n      entryPoints: [websecure]\n      tls: {}\n  services:\n",
        1,
    );
    fs::write(d.path().join("dynamic.yml"), dynamic).unwrap();
    let err = prod_error(Some(d.path()), files.good(), "prod");
    assert!(
        err.contains("router `open-api`: it serves the dashboard/API without basicAuth"),
        "{err}"
    );
    assert!(
        err.contains("requires TLS 1.2 or newer; TLS options `legacy` allow VersionTLS11"),
        "{err}"
    );
}

#[test]
fn a_profile_that_leaves_the_api_insecure_is_refused_with_the_location() {
    let files = ProdFiles::new();
    let prod = fs::read_to_string(repo_root().join("profiles/prod.yml")).unwrap();
    let lax = prod.replace("    insecure: false\n", "");
    let tmp = tempfile::tempdir().unwrap();
    let profile = tmp.path().join("lax.yml");
    fs::write(&profile, lax).unwrap();
    let err = prod_error(None, files.good(), &profile.to_string_lossy());
    assert!(err.contains("refuses `api.insecure: true`"), "{err}");
    assert!(
        err.contains("examples/scadabridge/traefik.yml:7:"),
        "points at the seed's api.insecure: {err}"
    );
}

#[test]
fn explain_and_diff_read_verified_plans() {
    let files = ProdFiles::new();
    let tmp = tempfile::tempdir().unwrap();
    let (dev, prod) = (tmp.path().join("dev.json"), tmp.path().join("prod.json"));
    assert_eq!(
        build(&s(&["examples/scadabridge", "--profile", "dev"]), &dev)
            .status
            .code(),
        Some(0)
    );
    let mut args = s(&["examples/scadabridge", "--profile", "prod"]);
    args.extend(files.good());
    assert_eq!(build(&args, &prod).status.code(), Some(0));

    let out = bridgectl().arg("explain").arg(&dev).output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("central") && text.contains("/health/active"),
        "{text}"
    );

    let out = bridgectl()
        .arg("diff")
        .arg(&dev)
        .arg(&dev)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0), "no change: exit 0");
    let out = bridgectl()
        .arg("diff")
        .arg(&dev)
        .arg(&prod)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(1), "changes: exit 1");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("websecure") && text.contains("bridgectl-hsts"),
        "{text}"
    );

    // A tampered plan is refused by every reader.
    let tampered = tmp.path().join("tampered.json");
    let t = fs::read_to_string(&dev)
        .unwrap()
        .replace("scadabridge-central-b", "evil-host");
    fs::write(&tampered, t).unwrap();
    let out = bridgectl().arg("explain").arg(&tampered).output().unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("hash"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn build_to_stdout() {
    let out = bridgectl()
        .args([
            "build",
            "examples/scadabridge",
            "--profile",
            "dev",
            "--out",
            "-",
        ])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    let plan: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(plan["plan_version"], bridge_plan::PLAN_VERSION);
}

#[test]
fn an_api_without_insecure_and_without_a_router_is_served_nowhere_as_in_traefik() {
    // Before, `build` failed with an internal error: the plan named a `traefik` entry point
    // that does not exist when nothing asks for it.
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("traefik.yml"),
        "entryPoints:\n  web:\n    address: \":80\"\napi:\n  dashboard: true\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
    )
    .unwrap();
    fs::write(
        dir.path().join("dynamic.yml"),
        "http:\n  routers:\n    r:\n      rule: \"PathPrefix(`/`)\"\n      service: s\n  services:\n    s:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:1\"\n",
    )
    .unwrap();
    let plan = bridge_tests::build_plan(dir.path(), "dev", "plan.json", &[]);
    let plan: serde_json::Value = serde_json::from_str(&fs::read_to_string(plan).unwrap()).unwrap();
    assert_eq!(plan["api"], serde_json::Value::Null);
    assert!(plan["entrypoints"].get("traefik").is_none());
}

#[test]
fn an_entry_points_tls_options_may_name_their_provider() {
    // `options: strict@file` on an entry point passed check and then failed build with an
    // internal error; it names the file provider's `strict`, as on a router.
    let dir = tempfile::tempdir().unwrap();
    fs::write(
        dir.path().join("traefik.yml"),
        "entryPoints:\n  websecure:\n    address: \":443\"\n    http:\n      tls:\n        options: strict@file\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n",
    )
    .unwrap();
    fs::write(
        dir.path().join("dynamic.yml"),
        "http:\n  routers:\n    r:\n      rule: \"PathPrefix(`/`)\"\n      service: s\n  services:\n    s:\n      loadBalancer:\n        servers:\n          - url: \"http://127.0.0.1:1\"\ntls:\n  options:\n    strict:\n      minVersion: VersionTLS13\n",
    )
    .unwrap();
    let plan = bridge_tests::build_plan(dir.path(), "dev", "plan.json", &[]);
    let plan: serde_json::Value = serde_json::from_str(&fs::read_to_string(plan).unwrap()).unwrap();
    assert_eq!(plan["entrypoints"]["websecure"]["tls"]["options"], "strict");
    assert_eq!(plan["routers"]["r"]["tls"]["options"], "strict");
    assert_eq!(plan["tls"]["options"]["strict"]["min_version"], "1.3");
}

/// An ACME resolver `le` for the seed's static configuration (HTTP-01 on `web`).
const LE_RESOLVER: &str = "\ncertificatesResolvers:\n  le:\n    acme:\n      email: ops@example.com\n      storage: /var/lib/bridge/acme.json\n      httpChallenge:\n        entryPoint: web\n";

fn resolver_vars(files: &ProdFiles, resolver: &str) -> Vec<String> {
    vec![
        "--var".into(),
        "domain=scadabridge.example.com".into(),
        "--var".into(),
        format!("dashboard_users_file={}", files.path("dashboard.htpasswd")),
        "--var".into(),
        format!("cert_resolver={resolver}"),
    ]
}

#[test]
fn prod_with_a_cert_resolver_takes_the_certificates_from_acme() {
    let files = ProdFiles::new();
    let seed = seed_with("", LE_RESOLVER);
    let tmp = tempfile::tempdir().unwrap();
    let p = tmp.path().join("plan.json");
    let mut args = vec![
        seed.path().to_string_lossy().into_owned(),
        "--profile".into(),
        "prod".into(),
    ];
    args.extend(resolver_vars(&files, "le"));
    let out = build(&args, &p);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plan: serde_json::Value = serde_json::from_str(&fs::read_to_string(&p).unwrap()).unwrap();
    let eps = &plan["entrypoints"];
    assert_eq!(eps["websecure"]["routers"], serde_json::json!(["central"]));
    for router in ["central", "bridgectl-dashboard"] {
        assert_eq!(
            plan["routers"][router]["tls"],
            serde_json::json!({"cert_resolver": "le", "options": "bridgectl-prod"}),
            "{router}"
        );
    }
    let le = &plan["certificate_resolvers"]["le"];
    assert_eq!(
        le["domains"],
        serde_json::json!([{
            "main": "scadabridge.example.com",
            "sans": [],
            "routers": ["bridgectl-dashboard", "central"],
            "default_certificate": false
        }])
    );
    assert_eq!(le["http_challenge"]["entrypoint"], "web");
    // No certificate files from the profile: the `tls_cert` section is not applied.
    assert_eq!(plan["tls"]["certificates"], serde_json::json!([]));
    assert_eq!(plan["tls"]["default_certificate"], serde_json::Value::Null);
    // Everything else of prod is still there.
    assert_eq!(
        eps["web"]["redirect"],
        serde_json::json!({"scheme": "https", "port": 443, "permanent": true, "priority": i64::MAX - 1})
    );
    assert_eq!(eps["web"]["routers"], serde_json::json!([]));
    assert_eq!(
        plan["routers"]["central"]["middlewares"],
        serde_json::json!(["bridgectl-hsts"])
    );
    assert_eq!(
        plan["routers"]["bridgectl-dashboard"]["middlewares"],
        serde_json::json!(["bridgectl-dashboard-auth", "bridgectl-hsts"])
    );
    assert_eq!(plan["api"]["insecure"], false);
    assert_eq!(
        plan["tls"]["options"]["bridgectl-prod"]["min_version"],
        "1.2"
    );
    let vars = &plan["inputs"]["vars"];
    assert_eq!(vars["cert_resolver"], "le");
    assert!(vars.get("tls_cert").is_none(), "{vars}");
}

#[test]
fn prod_refuses_a_cert_resolver_the_static_configuration_does_not_define() {
    let files = ProdFiles::new();
    let seed = seed_with("", LE_RESOLVER);
    let err = prod_error(Some(seed.path()), resolver_vars(&files, "acme"), "prod");
    assert!(
        err.contains("error[policy]: profile `prod` takes its certificates from the resolver `acme`, which the static configuration does not define"),
        "{err}"
    );
    assert!(
        err.contains("profiles/prod.yml:") && err.contains("resolver: \"acme\""),
        "located in the profile, where the variable is used: {err}"
    );
    assert!(
        err.contains(
            "ACME resolvers of the static configuration: le; --var cert_resolver names the resolver"
        ),
        "{err}"
    );
    // The seed as it is defines no resolver at all.
    let err = prod_error(None, resolver_vars(&files, "le"), "prod");
    assert!(
        err.contains("error[policy]")
            && err.contains("resolver `le`, which the static configuration does not define"),
        "{err}"
    );
}

#[test]
fn prod_takes_certificate_files_or_a_cert_resolver_not_both() {
    let files = ProdFiles::new();
    let seed = seed_with("", LE_RESOLVER);
    let mut vars = files.good();
    vars.extend(["--var".into(), "cert_resolver=le".into()]);
    let err = prod_error(Some(seed.path()), vars, "prod");
    assert!(
        err.contains("error[invalid-value]: profile `prod` takes `tls_cert` and `tls_key` or `cert_resolver`, not more than one"),
        "{err}"
    );
    assert!(err.contains("profiles/prod.yml:"), "{err}");
}
