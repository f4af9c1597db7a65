//! Compatibility corpus: Traefik configurations `check` must accept, or reject for a named reason.
//!
//! **In the repository (always run).** Every directory under `fixtures/compat/` holding an
//! `expected.txt` is a configuration directory (it plays `/etc/traefik`, as with `bridgectl check
//! DIR`) written for this project. `expected.txt` lists every finding of `check --profile dev` as
//! `severity code file:line` (notes included; the exact set, nothing missing, nothing extra), and
//! for a case without errors what `build --profile dev` makes of it: `build severity code
//! file:line` when the build refuses it, else `plan POINTER JSON` facts the plan must contain
//! (`plan POINTER absent`: nothing there). Every case asserts something. Together the cases use every configuration key listed in
//! `fixtures/compat/keys.txt`: the keys of the external corpus below, so this repository tests what
//! the corpus tests without needing it.
//!
//! **External (an extra run).** `../shared/compat` beside the checkout, or `$BRIDGECTL_COMPAT_DIR`
//! (CI sets it): SchemaStore's examples and Traefik's own reference and fixture YAML. Each file must
//! be accepted, or each of its errors must be a named "not supported by bridgectl" (`unsupported`,
//! `go-template`) or one of the genuine errors `fixtures/compat/external.txt` documents for it.
//! Never a crash, never an internal error, and never `unknown-key` for a key Traefik v3 accepts. The
//! keys the corpus uses must be exactly those of `keys.txt` (`BRIDGECTL_UPDATE_COMPAT_KEYS=1`
//! rewrites it; then cover the new keys with in-repository cases). Without the corpus these tests
//! print `external compatibility corpus: skipped (...)`; a `$BRIDGECTL_COMPAT_DIR` that does not
//! exist fails.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use std::collections::{BTreeMap, BTreeSet};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};

use bridge_tests::repo_root;
use bridgectl::check::{CheckOptions, CheckReport, check};
use bridgectl::diag::{Code, Diagnostic, Severity};
use bridgectl::schema::{ConfigKind, Cursor, schema};
use bridgectl::source::SourceMap;
use bridgectl::yaml::{Node, NodeKind};

fn fixtures() -> PathBuf {
    repo_root().join("tests/fixtures/compat")
}

// ---- which keys a configuration uses ------------------------------------------------------------

/// The configuration keys files use: `static:entryPoints.*.address`, `dynamic:http.routers.*.rule`.
/// Names the user chooses (entry points, routers, headers, ...) are `*`, list items `[]`; keys are
/// in Traefik's documented spelling, and each other spelling used is recorded as
/// `spelling written = documented`. The granularity is bridgectl's generated schema: a section it
/// leaves open (an unsupported provider, `tcp`, `tracing`) is one key `section.**`; a key it does
/// not know (a v2-only key) is kept as written.
#[derive(Debug, Default)]
struct Keys(BTreeSet<String>);

impl Keys {
    /// Adds the keys of one file, read as each of `roles` (a file can be both the static and the
    /// dynamic configuration): each top-level key belongs to the first role whose schema knows it.
    fn add_file(&mut self, text: &str, roles: &[ConfigKind]) {
        let Ok(Some(node)) = bridgectl::yaml::parse(bridgectl::source::FileId(0), text) else {
            return; // not YAML (a Go template): no keys
        };
        let NodeKind::Map(entries) = &node.kind else {
            return;
        };
        for (key, value) in entries {
            let kind = roles
                .iter()
                .copied()
                .find(|k| {
                    Cursor::root(schema(*k))
                        .properties()
                        .iter()
                        .any(|(n, _)| n.eq_ignore_ascii_case(&key.text))
                })
                .unwrap_or(roles[0]);
            let root = schema(kind);
            let one = NodeKind::Map(vec![(key.clone(), value.clone())]);
            self.walk(
                root,
                &Node {
                    kind: one,
                    span: node.span,
                },
                &Cursor::root(root),
                &format!("{}:", kind.as_str()),
            );
        }
    }

    fn walk(&mut self, root: &'static serde_json::Value, node: &Node, at: &Cursor, path: &str) {
        match &node.kind {
            NodeKind::Map(entries) => {
                for (key, value) in entries {
                    let known = at
                        .properties()
                        .iter()
                        .find(|(n, _)| n.eq_ignore_ascii_case(&key.text))
                        .copied();
                    let (segment, below) = if let Some((name, sub)) = known {
                        if name != key.text {
                            self.0.insert(format!("spelling {} = {name}", key.text));
                        }
                        (name.to_owned(), Some(at.child(sub)))
                    } else if let Some(values) = at.map_values() {
                        ("*".to_owned(), Some(values))
                    } else if at.is_open() || !at.is_closed() && at.properties().is_empty() {
                        ("**".to_owned(), None)
                    } else {
                        (key.text.clone(), Some(Cursor::any(root)))
                    };
                    let p = if path.ends_with(':') {
                        format!("{path}{segment}")
                    } else {
                        format!("{path}.{segment}")
                    };
                    self.0.insert(p.clone());
                    if let Some(below) = below {
                        self.walk(root, value, &below, &p);
                    }
                }
            }
            NodeKind::Seq(items) => {
                let below = at.items().unwrap_or_else(|| Cursor::any(root));
                for item in items {
                    self.walk(root, item, &below, &format!("{path}[]"));
                }
            }
            _ => {}
        }
    }
}

fn keys_file() -> PathBuf {
    fixtures().join("keys.txt")
}

fn listed_keys() -> BTreeSet<String> {
    fs::read_to_string(keys_file())
        .unwrap()
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

// ---- the cases in the repository ----------------------------------------------------------------

/// What `expected.txt` says about one case.
#[derive(Debug, Default)]
struct Expected {
    findings: Vec<String>,
    build: Vec<String>,
    /// `None`: the pointer must not resolve.
    plan: Vec<(String, Option<serde_json::Value>)>,
}

fn expected(dir: &Path) -> Expected {
    let path = dir.join("expected.txt");
    let text = fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut out = Expected::default();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if let Some(rest) = line.strip_prefix("build ") {
            out.build.push(rest.to_owned());
        } else if let Some(rest) = line.strip_prefix("plan ") {
            let (pointer, json) = rest
                .split_once(' ')
                .unwrap_or_else(|| panic!("{}: `plan POINTER JSON`: {line}", path.display()));
            let value = if json == "absent" {
                None
            } else {
                Some(
                    serde_json::from_str(json)
                        .unwrap_or_else(|e| panic!("{}: {line}: {e}", path.display())),
                )
            };
            out.plan.push((pointer.to_owned(), value));
        } else {
            out.findings.push(line.to_owned());
        }
    }
    out
}

/// `severity code file:line` for every diagnostic, notes included, sorted.
fn located(sources: &SourceMap, diags: &[Diagnostic]) -> Vec<String> {
    let mut lines: Vec<String> = bridgectl::render::locate(sources, diags)
        .into_iter()
        .map(|l| {
            format!(
                "{} {} {}:{}",
                l.diag.severity.as_str(),
                l.diag.code.as_str(),
                l.file.unwrap_or("-"),
                l.line.map_or_else(|| "-".to_owned(), |n| n.to_string())
            )
        })
        .collect();
    lines.sort();
    lines
}

fn in_repo_cases() -> Vec<PathBuf> {
    let mut cases: Vec<PathBuf> = fs::read_dir(fixtures())
        .expect("tests/fixtures/compat")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.join("expected.txt").is_file())
        .collect();
    cases.sort();
    cases
}

/// `bridgectl check DIR --profile dev`, in process.
fn check_case(dir: &Path) -> CheckReport {
    check(&CheckOptions {
        dir: dir.to_path_buf(),
        profile: Some(bridgectl::profile::ProfileSelector::parse("dev")),
        ..CheckOptions::default()
    })
    .unwrap_or_else(|e| panic!("check {} failed to start: {e}", dir.display()))
}

/// Compares one case with its `expected.txt`; returns what differs.
fn compare(dir: &Path) -> Vec<String> {
    let mut want = expected(dir);
    want.findings.sort();
    want.build.sort();
    let report = check_case(dir);
    let mut problems = Vec::new();
    let got = located(&report.sources, &report.diagnostics);
    if got != want.findings {
        problems.push(format!(
            "check findings\n  expected {:#?}\n  got      {got:#?}",
            want.findings
        ));
    }
    if report.diagnostics.iter().any(|d| d.code == Code::Internal) {
        problems.push("an internal error".to_owned());
    }
    if !report.ok() {
        if !want.build.is_empty() || !want.plan.is_empty() {
            problems.push("`build`/`plan` lines for a case that does not check".to_owned());
        }
        return problems;
    }
    match bridgectl::resolve::build_plan(&report, "dev") {
        Err(diags) => {
            let got = located(&report.sources, &diags);
            if got != want.build {
                problems.push(format!(
                    "build findings\n  expected {:#?}\n  got      {got:#?}",
                    want.build
                ));
            }
        }
        Ok(plan) => {
            if !want.build.is_empty() {
                problems.push(format!(
                    "the plan was built, expected the build to fail with {:?}",
                    want.build
                ));
            }
            if want.plan.is_empty() {
                problems.push(
                    "a case that builds must name facts of its plan (`plan POINTER JSON`)".into(),
                );
            }
            let json = serde_json::to_value(&plan).unwrap();
            for (pointer, value) in &want.plan {
                match (json.pointer(pointer), value) {
                    (None, None) => {}
                    (Some(v), Some(want)) if v == want => {}
                    (Some(v), Some(want)) => {
                        problems.push(format!("plan {pointer}: expected {want}, got {v}"));
                    }
                    (Some(v), None) => {
                        problems.push(format!("plan {pointer}: expected absent, got {v}"))
                    }
                    (None, Some(_)) => problems.push(format!("plan {pointer}: missing")),
                }
            }
        }
    }
    problems
}

#[test]
fn every_in_repo_compat_case_reports_exactly_its_expected_findings_and_plan() {
    let cases = in_repo_cases();
    assert!(
        cases.len() >= 20,
        "the in-repository compatibility corpus has {} cases",
        cases.len()
    );
    let mut failures = BTreeMap::new();
    for case in &cases {
        let problems = compare(case);
        if !problems.is_empty() {
            failures.insert(
                case.file_name().unwrap().to_string_lossy().into_owned(),
                problems.join("\n"),
            );
        }
    }
    assert!(
        failures.is_empty(),
        "{}",
        failures
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect::<Vec<_>>()
            .join("\n\n")
    );
}

/// The keys the in-repository cases use, each file read in the roles `check` read it in.
fn in_repo_keys() -> Keys {
    let mut keys = Keys::default();
    for case in in_repo_cases() {
        let report = check_case(&case);
        let mut roles: BTreeMap<PathBuf, Vec<ConfigKind>> = BTreeMap::new();
        let loaded = &report.loaded;
        let files = loaded
            .static_file
            .map(|f| (f, ConfigKind::Static))
            .into_iter()
            .chain(loaded.dynamic.iter().map(|d| (d.file, ConfigKind::Dynamic)));
        let mut texts = BTreeMap::new();
        for (id, kind) in files {
            let Some(src) = report.sources.get(id) else {
                continue;
            };
            if !src.path.starts_with(&case) {
                continue; // the profile's overlay
            }
            roles.entry(src.path.clone()).or_default().push(kind);
            texts.entry(src.path.clone()).or_insert(src.text.clone());
        }
        for (path, kinds) in &roles {
            keys.add_file(&texts[path], kinds);
        }
    }
    keys
}

/// Whether the keys `used` cover the key `listed`, also when the schema became coarser or finer
/// since keys.txt was written: an open section `P.**` covers every key below `P`, and a listed
/// `P.**` is covered by any key below `P`.
fn covered(listed: &str, used: &BTreeSet<String>) -> bool {
    if used.contains(listed) {
        return true;
    }
    if let Some(section) = listed.strip_suffix(".**") {
        let below = format!("{section}.");
        if used.iter().any(|k| k.starts_with(&below)) {
            return true;
        }
    }
    let mut above = listed;
    while let Some(dot) = above.rfind('.') {
        above = &above[..dot];
        if used.contains(&format!("{above}.**")) {
            return true;
        }
    }
    false
}

#[test]
fn the_in_repo_cases_use_every_key_the_external_corpus_uses() {
    let used = in_repo_keys().0;
    let listed = listed_keys();
    assert!(listed.len() > 500, "keys.txt lists {} keys", listed.len());
    let missing: Vec<_> = listed.iter().filter(|k| !covered(k, &used)).collect();
    assert!(
        missing.is_empty(),
        "keys of fixtures/compat/keys.txt no in-repository case uses ({}): {missing:#?}",
        missing.len()
    );
}

#[test]
fn the_key_list_names_user_chosen_names_and_list_items_generically() {
    let mut keys = Keys::default();
    keys.add_file(
        "entrypoints:\n  web:\n    address: ':80'\n    http:\n      tls:\n        domains:\n          - main: a.example\n",
        &[ConfigKind::Static],
    );
    keys.add_file(
        "http:\n  routers:\n    r:\n      rule: Host(`a`)\n  services:\n    s:\n      loadBalancer:\n        servers:\n          - url: http://x\ntcp:\n  routers:\n    t:\n      rule: HostSNI(`*`)\n",
        &[ConfigKind::Dynamic],
    );
    keys.add_file("marathon:\n  endpoint: x\n", &[ConfigKind::Static]);
    let got: Vec<&str> = keys.0.iter().map(String::as_str).collect();
    assert_eq!(
        got,
        [
            "dynamic:http",
            "dynamic:http.routers",
            "dynamic:http.routers.*",
            "dynamic:http.routers.*.rule",
            "dynamic:http.services",
            "dynamic:http.services.*",
            "dynamic:http.services.*.loadBalancer",
            "dynamic:http.services.*.loadBalancer.servers",
            "dynamic:http.services.*.loadBalancer.servers[].url",
            "dynamic:tcp",
            "dynamic:tcp.**",
            "spelling entrypoints = entryPoints",
            "static:entryPoints",
            "static:entryPoints.*",
            "static:entryPoints.*.address",
            "static:entryPoints.*.http",
            "static:entryPoints.*.http.tls",
            "static:entryPoints.*.http.tls.domains",
            "static:entryPoints.*.http.tls.domains[].main",
            "static:marathon",
            "static:marathon.**",
        ]
    );
}

#[test]
fn open_sections_cover_what_lies_below_them_either_way() {
    let used: BTreeSet<String> = ["dynamic:tcp.**", "dynamic:http.routers.*.rule"]
        .map(str::to_owned)
        .into();
    // keys.txt written when the schema modelled `tcp`, checked with a schema that leaves it open
    assert!(covered("dynamic:tcp.routers.*.rule", &used));
    // keys.txt written when `http.routers` was open, checked with a schema that models it
    assert!(covered("dynamic:http.routers.**", &used));
    assert!(!covered("dynamic:http.routers.*.service", &used));
    assert!(!covered("dynamic:http.services.**", &used));
}

// ---- the external corpus ------------------------------------------------------------------------

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

impl Mode {
    fn roles(self) -> &'static [ConfigKind] {
        match self {
            Mode::Static => &[ConfigKind::Static],
            Mode::Dynamic => &[ConfigKind::Dynamic],
            Mode::Mixed => &[ConfigKind::Static, ConfigKind::Dynamic],
        }
    }
}

/// One file of the external corpus and what `external.txt` documents for it.
#[derive(Debug)]
struct Case {
    file: String,
    mode: Mode,
    /// Genuine error codes of this file beyond `unsupported`/`go-template`; each must occur.
    genuine: Vec<Code>,
    why: String,
}

fn code(name: &str) -> Code {
    Code::ALL
        .iter()
        .copied()
        .find(|c| c.as_str() == name)
        .unwrap_or_else(|| panic!("external.txt: unknown diagnostic code `{name}`"))
}

/// The next whitespace-separated word of `rest`, which is advanced past it.
fn word(rest: &mut &str) -> String {
    let t = rest.trim_start();
    let end = t.find(char::is_whitespace).unwrap_or(t.len());
    *rest = &t[end..];
    t[..end].to_owned()
}

/// `fixtures/compat/external.txt`: `FILE MODE CODES WHY...` per line, CODES comma-separated or `-`.
fn external_cases() -> Vec<Case> {
    let text = fs::read_to_string(fixtures().join("external.txt")).unwrap();
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(|line| {
            let mut rest = line;
            let (file, mode, codes) = (word(&mut rest), word(&mut rest), word(&mut rest));
            let why = rest.trim().to_owned();
            let mode = match mode.as_str() {
                "static" => Mode::Static,
                "dynamic" => Mode::Dynamic,
                "mixed" => Mode::Mixed,
                other => panic!("external.txt: mode `{other}` (static, dynamic, mixed): {line}"),
            };
            let genuine = if codes == "-" {
                Vec::new()
            } else {
                codes.split(',').map(code).collect()
            };
            assert!(!why.is_empty(), "external.txt: no reason given: {line}");
            Case {
                file,
                mode,
                genuine,
                why,
            }
        })
        .collect()
}

/// Printed where the test harness does not capture it, so a normal `cargo test` run shows it.
fn say(line: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{line}");
}

/// The corpus directory, or `None` (with the reason printed, once) when this clone has none beside
/// it.
fn compat_dir() -> Option<PathBuf> {
    static DIR: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    DIR.get_or_init(find_compat_dir).clone()
}

fn find_compat_dir() -> Option<PathBuf> {
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
        say(&format!(
            "external compatibility corpus: skipped ({} does not exist and BRIDGECTL_COMPAT_DIR is \
             not set; the in-repository cases under tests/fixtures/compat ran)",
            d.display()
        ));
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

/// The text `check` reads for a case (Mixed: with the placeholders filled, written to `filled`).
fn case_text(case: &Case, root: &Path, filled: &Path) -> String {
    let text = fs::read_to_string(root.join(&case.file)).unwrap();
    match case.mode {
        Mode::Mixed => fill_harness_placeholders(&text, &filled.to_string_lossy()),
        Mode::Static | Mode::Dynamic => text,
    }
}

fn run(case: &Case, root: &Path, scratch: &Path) -> Vec<(Code, Option<usize>, String)> {
    let file = root.join(&case.file);
    let empty = scratch.join("empty.yml");
    fs::write(&empty, "").unwrap();
    let opts = match case.mode {
        Mode::Static => CheckOptions {
            dir: scratch.to_path_buf(),
            static_file: Some(file),
            dynamic: Some(empty),
            ..Default::default()
        },
        Mode::Dynamic => CheckOptions {
            dir: scratch.to_path_buf(),
            static_file: None,
            dynamic: Some(file),
            ..Default::default()
        },
        Mode::Mixed => {
            let filled = scratch.join("fixture.yml");
            fs::write(&filled, case_text(case, root, &filled)).unwrap();
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

/// Every YAML/JSON configuration under the corpus (not SchemaStore's schemas themselves).
fn corpus_files(root: &Path) -> BTreeSet<String> {
    let mut on_disk = BTreeSet::new();
    let mut stack = vec![root.to_path_buf()];
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
                on_disk.insert(p.strip_prefix(root).unwrap().to_string_lossy().into_owned());
            }
        }
    }
    on_disk
}

#[test]
fn every_compat_file_is_accepted_or_rejected_for_a_documented_reason() {
    let Some(root) = compat_dir() else { return };
    let cases = external_cases();
    // Every YAML/JSON config under the corpus must be listed, so new fixtures are not skipped.
    let listed: BTreeSet<String> = cases.iter().map(|c| c.file.clone()).collect();
    let on_disk = corpus_files(&root);
    let missing: Vec<_> = on_disk.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "compat files without an expectation in fixtures/compat/external.txt: {missing:#?}"
    );

    let mut failures = BTreeMap::new();
    for case in &cases {
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
                case.file.clone(),
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
    say(&format!(
        "external compatibility corpus: {} files checked in {}",
        cases.len(),
        root.display()
    ));
}

#[test]
fn unknown_key_is_never_reported_for_keys_of_traefik_v3_references() {
    let Some(root) = compat_dir() else { return };
    for (file, mode) in [
        (
            "traefik-fixtures/v3.7.9/docs/content/reference/static-configuration/file.yaml",
            Mode::Static,
        ),
        (
            "traefik-fixtures/v3.7.9/docs/content/reference/dynamic-configuration/file.yaml",
            Mode::Dynamic,
        ),
        ("schemastore/test/traefik-v3/example.json", Mode::Static),
        (
            "schemastore/test/traefik-v3-file-provider/example.json",
            Mode::Dynamic,
        ),
    ] {
        let scratch = tempfile::tempdir().unwrap();
        let c = Case {
            file: file.to_owned(),
            mode,
            genuine: Vec::new(),
            why: String::new(),
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
fn the_external_corpus_uses_exactly_the_keys_of_keys_txt() {
    let Some(root) = compat_dir() else { return };
    let mut keys = Keys::default();
    let scratch = tempfile::tempdir().unwrap();
    for case in external_cases() {
        let text = case_text(&case, &root, &scratch.path().join("fixture.yml"));
        keys.add_file(&text, case.mode.roles());
    }
    if std::env::var_os("BRIDGECTL_UPDATE_COMPAT_KEYS").is_some() {
        let mut out = String::from(
            "# The configuration keys the external compatibility corpus uses (tests/compat.rs, `Keys`):\n\
             # every one must be used by an in-repository case under tests/fixtures/compat.\n\
             # Regenerate with BRIDGECTL_UPDATE_COMPAT_KEYS=1 cargo test -p bridge-tests --test compat\n",
        );
        for k in &keys.0 {
            out.push_str(k);
            out.push('\n');
        }
        fs::write(keys_file(), out).unwrap();
        return;
    }
    let listed = listed_keys();
    let new: Vec<_> = keys.0.difference(&listed).collect();
    let gone: Vec<_> = listed.difference(&keys.0).collect();
    assert!(
        new.is_empty() && gone.is_empty(),
        "fixtures/compat/keys.txt is out of date (BRIDGECTL_UPDATE_COMPAT_KEYS=1 rewrites it, then \
         cover new keys with in-repository cases)\n  used by the corpus, not listed: {new:#?}\n  \
         listed, no longer used: {gone:#?}"
    );
}

#[test]
fn fixture_placeholders_are_filled_like_the_go_harness() {
    let text = "url: '{{ .Server1 }}'\nb: http://{{ .WhoamiIP }}:80\nc: {{ .SelfFilename }}\n";
    assert_eq!(
        fill_harness_placeholders(text, "/tmp/x.yml"),
        "url: 'http://127.0.0.1:8081'\nb: http://127.0.0.1:80\nc: /tmp/x.yml\n"
    );
}
