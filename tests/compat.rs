//! Compatibility corpus: every configuration file under `shared/compat/` (SchemaStore's examples and
//! Traefik's own reference and fixture YAML) is checked. A file must be accepted, or each of its
//! errors must be a named "not supported by bridgectl" (`unsupported`, `go-template`) or one of the
//! genuine errors documented for that file below. Never a crash, never an internal error, and never
//! `unknown-key` for a key Traefik v3 accepts (the only `unknown-key`s allowed are documented v2-only
//! or invalid keys).
//!
//! The directory is `../shared/compat` beside the checkout, or `$BRIDGECTL_COMPAT_DIR`. The corpus
//! is reference material beside the repository, not part of it: in a clone without it these tests
//! print that they were skipped and why. A `$BRIDGECTL_COMPAT_DIR` that does not exist fails.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::path::{Path, PathBuf};

use bridge_tests::repo_root;
use bridgectl::check::{CheckOptions, check};
use bridgectl::diag::{Code, Severity};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    /// The file as traefik.yml (no dynamic files).
    Static,
    /// The file as the only file-provider file (no static configuration).
    Dynamic,
    /// Traefik's integration fixtures: one file that is both, with the harness's Go-template
    /// placeholders filled in as the Go test harness does (server URLs, the file's own name).
    Mixed,
}

/// Placeholders of the reference files: every value is `foobar`, so references dangle, files do not
/// exist, URLs and addresses are not URLs and addresses. These are genuine errors of those files.
const PLACEHOLDER_ERRORS: &[Code] = &[
    Code::FileNotFound,
    Code::InvalidAddress,
    Code::InvalidDuration,
    Code::InvalidHash,
    Code::InvalidIp,
    Code::InvalidUrl,
    Code::InvalidValue,
    Code::Rule,
    Code::UndefinedReference,
];

struct Case {
    file: &'static str,
    mode: Mode,
    /// Genuine error codes of this file beyond `unsupported`/`go-template`; each must occur.
    genuine: &'static [Code],
    why: &'static str,
}

const fn case(file: &'static str, mode: Mode, genuine: &'static [Code], why: &'static str) -> Case {
    Case {
        file,
        mode,
        genuine,
        why,
    }
}

use Mode::{Dynamic, Mixed, Static};

const CASES: &[Case] = &[
    // ---- SchemaStore examples (JSON is YAML) ----
    case(
        "schemastore/test/traefik-v3/example.json",
        Static,
        &[
            Code::InvalidAddress,
            Code::InvalidIp,
            Code::InvalidValue,
            Code::UndefinedReference,
        ],
        "every value is the placeholder `foobar`",
    ),
    case(
        "schemastore/test/traefik-v3-file-provider/example.json",
        Dynamic,
        &[
            Code::FileNotFound,
            Code::InvalidAddress,
            Code::InvalidHash,
            Code::InvalidIp,
            Code::InvalidUrl,
            Code::InvalidValue,
            Code::Rule,
            Code::UndefinedReference,
        ],
        "every value is the placeholder `foobar`",
    ),
    case(
        "schemastore/test/traefik-v2/example.json",
        Static,
        &[
            Code::InvalidAddress,
            Code::InvalidIp,
            Code::InvalidValue,
            Code::UndefinedReference,
            Code::UnknownKey,
        ],
        "placeholder `foobar` values; `providers.marathon`, `providers.rancher` and `metrics.influxDB` were removed in Traefik v3 (unknown-key, as in Traefik v3)",
    ),
    case(
        "schemastore/test/traefik-v2-file-provider/example.json",
        Dynamic,
        PLACEHOLDER_ERRORS,
        "every value is the placeholder `foobar`",
    ),
    // ---- Traefik reference files ----
    case(
        "traefik-fixtures/v3.7.9/docs/content/reference/static-configuration/file.yaml",
        Static,
        &[
            Code::InvalidAddress,
            Code::InvalidIp,
            Code::InvalidValue,
            Code::UndefinedReference,
        ],
        "placeholder `foobar` values",
    ),
    case(
        "traefik-fixtures/v3.7.9/docs/content/reference/dynamic-configuration/file.yaml",
        Dynamic,
        &[
            Code::FileNotFound,
            Code::InvalidAddress,
            Code::InvalidHash,
            Code::InvalidIp,
            Code::InvalidUrl,
            Code::InvalidValue,
            Code::Rule,
            Code::UndefinedReference,
        ],
        "placeholder `foobar` values",
    ),
    case(
        "traefik-fixtures/v2.11.53/docs/content/reference/static-configuration/file.yaml",
        Static,
        &[
            Code::InvalidAddress,
            Code::InvalidIp,
            Code::InvalidValue,
            Code::UndefinedReference,
            Code::UnknownKey,
        ],
        "placeholder values; marathon, rancher and influxDB are v2-only keys Traefik v3 rejects",
    ),
    case(
        "traefik-fixtures/v2.11.53/docs/content/reference/dynamic-configuration/file.yaml",
        Dynamic,
        PLACEHOLDER_ERRORS,
        "placeholder `foobar` values",
    ),
    case(
        "traefik-fixtures/v3.7.9/docs/content/https/ref-acme.yaml",
        Static,
        &[],
        "ACME resolvers are unsupported",
    ),
    case(
        "traefik-fixtures/v3.7.9/traefik.sample.yml",
        Static,
        &[],
        "the commented sample is accepted",
    ),
    // ---- file-provider unit-test fixtures ----
    case(
        "traefik-fixtures/v3.7.9/pkg/provider/file/fixtures/yaml/simple_file_01.yml",
        Dynamic,
        &[Code::FileNotFound, Code::MissingKey],
        "routers without a rule (Traefik disables them at runtime) and certificate paths of Traefik's test tree",
    ),
    case(
        "traefik-fixtures/v3.7.9/pkg/provider/file/fixtures/yaml/dir01_file01.yml",
        Dynamic,
        &[Code::MissingKey],
        "routers without a rule",
    ),
    case(
        "traefik-fixtures/v3.7.9/pkg/provider/file/fixtures/yaml/dir01_file02.yml",
        Dynamic,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/pkg/provider/file/fixtures/yaml/dir01_file03.yml",
        Dynamic,
        &[Code::FileNotFound],
        "certificate paths of Traefik's test tree",
    ),
    case(
        "traefik-fixtures/v3.7.9/pkg/provider/file/fixtures/yaml/simple_empty_store.yml",
        Dynamic,
        &[],
        "an empty TLS store entry is accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/pkg/provider/file/fixtures/yaml/template_file.yml",
        Dynamic,
        &[],
        "Go template loops are unsupported",
    ),
    case(
        "traefik-fixtures/v3.7.9/pkg/provider/file/fixtures/yaml/template_in_directory_file01.yml",
        Dynamic,
        &[],
        "Go template loops are unsupported",
    ),
    case(
        "traefik-fixtures/v3.7.9/pkg/provider/file/fixtures/yaml/template_in_directory_file02.yml",
        Dynamic,
        &[],
        "Go template loops are unsupported",
    ),
    // ---- integration fixtures (converted from TOML; static and dynamic in one file) ----
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/custom_ping_termination_status_code.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/failover.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/failover_statuscode.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/file/simple.yml",
        Mixed,
        &[],
        "circuitBreaker is unsupported",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/headers/cors.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/headers/secure.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/healthcheck/multiple-entrypoints.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/healthcheck/multiple-routers-one-same-service.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/healthcheck/port_overload.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/healthcheck/propagate.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/healthcheck/propagate_no_healthcheck.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/healthcheck/reload_with_healthcheck.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/healthcheck/reload_without_healthcheck.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/healthcheck/simple.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/healthcheck/simple_passive.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/https/dynamic_https.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/https/https_entrypoint_tls.yml",
        Mixed,
        &[Code::FileNotFound],
        "certificates live in Traefik's test tree",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/https/https_invalid_tls_options.yml",
        Mixed,
        &[Code::FileNotFound],
        "certificates live in Traefik's test tree",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/https/https_redirect.yml",
        Mixed,
        &[],
        "replacePathRegex is unsupported",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/https/https_sni.yml",
        Mixed,
        &[Code::FileNotFound],
        "certificates live in Traefik's test tree",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/https/https_sni_strict.yml",
        Mixed,
        &[Code::FileNotFound],
        "certificates live in Traefik's test tree",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/https/https_tls_options.yml",
        Mixed,
        &[Code::FileNotFound, Code::UndefinedReference],
        "certificates live in Traefik's test tree; a router deliberately names TLS options `unknown`",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/mirror.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/ratelimit/simple.yml",
        Mixed,
        &[],
        "rateLimit is unsupported",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/retry/backoff.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/retry/simple.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/retry/strip_prefix.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/router_errors.yml",
        Mixed,
        &[Code::UndefinedReference],
        "the fixture tests Traefik's router errors: a router uses middleware `unknown`",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/service_errors.yml",
        Mixed,
        &[Code::KindCount],
        "the fixture tests Traefik's service errors: `service1` defines no kind",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/simple_acme_bypass_redirect.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/simple_allowlist.yml",
        Mixed,
        &[],
        "the docker provider is unsupported",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/simple_auth.yml",
        Mixed,
        &[Code::UnknownKey],
        "`api.middlewares` does not exist in Traefik v3 (its test using this fixture is skipped upstream)",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/simple_default.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/simple_secure_api.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/with_default_rule_syntax.yml",
        Mixed,
        &[Code::InvalidType, Code::Rule],
        "`servers: {}` from the conversion; the fixture tests that Traefik disables a v2 router using QueryRegexp and a v3 router with two PathPrefix arguments",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/without_default_rule_syntax.yml",
        Mixed,
        &[Code::InvalidType, Code::Rule],
        "`servers: {}` from the conversion; rules deliberately use v2 syntax without ruleSyntax v2 (Traefik disables those routers)",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/wrr.yml",
        Mixed,
        &[],
        "accepted",
    ),
    case(
        "traefik-fixtures/v3.7.9/converted-from-toml/wrr_sticky.yml",
        Mixed,
        &[],
        "sticky sessions are unsupported",
    ),
];

/// The corpus directory, or `None` (with the reason printed) when this clone has none beside it.
fn compat_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("BRIDGECTL_COMPAT_DIR") {
        let d = PathBuf::from(d);
        assert!(
            d.is_dir(),
            "BRIDGECTL_COMPAT_DIR={} is not a directory",
            d.display()
        );
        return Some(d);
    }
    let d = repo_root().join("../shared/compat");
    if d.is_dir() {
        Some(d)
    } else {
        eprintln!(
            "SKIPPED: the compatibility corpus is not beside this checkout ({} is missing; set \
             BRIDGECTL_COMPAT_DIR to run it)",
            d.display()
        );
        None
    }
}

/// Fills the integration harness's placeholders: full server URLs where a quoted value is only a
/// placeholder, an IP elsewhere, and the file's own name for `{{ .SelfFilename }}`.
fn fill_harness_placeholders(text: &str, self_name: &str) -> String {
    let quoted = regex_lite(text, |inner| {
        inner.contains("Server") || inner.contains("AcmeSolverURL")
    });
    let mut out = String::with_capacity(quoted.len());
    let mut rest = quoted.as_str();
    while let Some(start) = rest.find("{{") {
        let Some(end) = rest[start..].find("}}") else {
            break;
        };
        let inner = rest[start + 2..start + end].trim().trim_start_matches('.');
        out.push_str(&rest[..start]);
        out.push_str(if inner == "SelfFilename" {
            self_name
        } else {
            "127.0.0.1"
        });
        rest = &rest[start + end + 2..];
    }
    out.push_str(rest);
    out
}

/// Replaces `'{{ .X }}'` (a whole quoted value) with a full URL when `pred(X)`.
fn regex_lite(text: &str, pred: impl Fn(&str) -> bool) -> String {
    let mut out = String::new();
    let mut rest = text;
    while let Some(start) = rest.find("'{{") {
        let Some(end) = rest[start..].find("}}'") else {
            break;
        };
        let inner = rest[start + 3..start + end].trim().trim_start_matches('.');
        out.push_str(&rest[..start]);
        if pred(inner) {
            out.push_str("'http://127.0.0.1:8081'");
        } else {
            out.push_str(&rest[start..start + end + 3]);
        }
        rest = &rest[start + end + 3..];
    }
    out.push_str(rest);
    out
}

fn run(case: &Case, root: &Path, scratch: &Path) -> Vec<(Code, Option<usize>, String)> {
    let file = root.join(case.file);
    let empty = scratch.join("empty.yml");
    fs::write(&empty, "").unwrap();
    let opts = match case.mode {
        Static => CheckOptions {
            dir: scratch.to_path_buf(),
            static_file: Some(file),
            dynamic: Some(empty),
            ..Default::default()
        },
        Dynamic => CheckOptions {
            dir: scratch.to_path_buf(),
            static_file: None,
            dynamic: Some(file),
            ..Default::default()
        },
        Mixed => {
            let filled = scratch.join("fixture.yml");
            let text = fs::read_to_string(&file).unwrap();
            fs::write(
                &filled,
                fill_harness_placeholders(&text, &filled.to_string_lossy()),
            )
            .unwrap();
            CheckOptions {
                dir: scratch.to_path_buf(),
                static_file: Some(filled.clone()),
                dynamic: Some(filled),
                ..Default::default()
            }
        }
    };
    let report = check(&opts).unwrap_or_else(|e| panic!("{}: {e}", case.file));
    bridgectl::render::locate(&report.sources, &report.diagnostics)
        .into_iter()
        .filter(|l| l.diag.severity == Severity::Error)
        .map(|l| (l.diag.code, l.line, l.diag.message.clone()))
        .collect()
}

#[test]
fn every_compat_file_is_accepted_or_rejected_for_a_documented_reason() {
    let Some(root) = compat_dir() else { return };
    // Every YAML/JSON config under the corpus must be in the table, so new fixtures are not skipped.
    let mut on_disk = BTreeSet::new();
    let mut stack = vec![root.clone()];
    while let Some(d) = stack.pop() {
        for e in fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                stack.push(p);
            } else if matches!(
                p.extension().and_then(|e| e.to_str()),
                Some("yml" | "yaml" | "json")
            ) && p
                .parent()
                .and_then(|p| p.file_name())
                .is_none_or(|n| n != "schemastore")
            {
                on_disk.insert(
                    p.strip_prefix(&root)
                        .unwrap()
                        .to_string_lossy()
                        .into_owned(),
                );
            }
        }
    }
    let listed: BTreeSet<String> = CASES.iter().map(|c| c.file.to_owned()).collect();
    let missing: Vec<_> = on_disk.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "compat files without an expectation: {missing:#?}"
    );

    let mut failures = BTreeMap::new();
    for case in CASES {
        let scratch = tempfile::tempdir().unwrap();
        let errors = run(case, &root, scratch.path());
        let allowed: BTreeSet<Code> = case
            .genuine
            .iter()
            .copied()
            .chain([Code::Unsupported, Code::GoTemplate])
            .collect();
        let unexplained: Vec<_> = errors
            .iter()
            .filter(|(c, _, _)| !allowed.contains(c))
            .collect();
        let seen: BTreeSet<Code> = errors.iter().map(|(c, _, _)| *c).collect();
        let stale: Vec<_> = case.genuine.iter().filter(|c| !seen.contains(c)).collect();
        if !unexplained.is_empty() || !stale.is_empty() {
            failures.insert(
                case.file,
                format!(
                    "({}) unexplained: {unexplained:#?}\n  documented but not found: {stale:?}",
                    case.why
                ),
            );
        }
        assert!(
            !seen.contains(&Code::Internal),
            "{}: internal error {errors:?}",
            case.file
        );
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn unknown_key_is_never_reported_for_keys_of_traefik_v3_references() {
    let Some(root) = compat_dir() else { return };
    for (file, mode) in [
        (
            "traefik-fixtures/v3.7.9/docs/content/reference/static-configuration/file.yaml",
            Static,
        ),
        (
            "traefik-fixtures/v3.7.9/docs/content/reference/dynamic-configuration/file.yaml",
            Dynamic,
        ),
        ("schemastore/test/traefik-v3/example.json", Static),
        (
            "schemastore/test/traefik-v3-file-provider/example.json",
            Dynamic,
        ),
    ] {
        let scratch = tempfile::tempdir().unwrap();
        let c = Case {
            file,
            mode,
            genuine: &[],
            why: "",
        };
        let unknown: Vec<_> = run(&c, &root, scratch.path())
            .into_iter()
            .filter(|(code, _, _)| {
                matches!(
                    code,
                    Code::UnknownKey | Code::InvalidType | Code::MissingKey | Code::EmptyElement
                )
            })
            .collect();
        assert!(unknown.is_empty(), "{file}: {unknown:#?}");
    }
}

#[test]
fn fixture_placeholders_are_filled_like_the_go_harness() {
    let text = "url: '{{ .Server1 }}'\nb: http://{{ .WhoamiIP }}:80\nc: {{ .SelfFilename }}\n";
    assert_eq!(
        fill_harness_placeholders(text, "/tmp/x.yml"),
        "url: 'http://127.0.0.1:8081'\nb: http://127.0.0.1:80\nc: /tmp/x.yml\n"
    );
}
