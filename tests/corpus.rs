//! The bad-input corpus: every case under `fixtures/bad/` is a configuration directory with one kind
//! of mistake, and `expected.txt` lists every finding as `severity code file:line`. The test asserts
//! the exact set (nothing missing, nothing extra) and snapshots the human rendering. A few inputs
//! that are too big or too binary to commit are generated here.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use bridge_tests::{check_dir, finding_lines, human, repo_root};
use bridgectl::diag::Code;

fn expected(dir: &Path) -> Vec<String> {
    let text = fs::read_to_string(dir.join("expected.txt"))
        .unwrap_or_else(|e| panic!("{}/expected.txt: {e}", dir.display()));
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

#[test]
fn every_corpus_case_reports_exactly_its_expected_findings() {
    let root = repo_root().join("tests/fixtures/bad");
    let mut cases: Vec<_> = fs::read_dir(&root)
        .expect("corpus directory")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.is_dir())
        .collect();
    cases.sort();
    assert!(
        cases.len() >= 30,
        "the corpus must hold at least 30 cases, found {}",
        cases.len()
    );
    let mut failures = Vec::new();
    for case in &cases {
        let name = case
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default()
            .to_owned();
        let report = check_dir(case);
        let mut got = finding_lines(&report);
        got.sort();
        let mut want = expected(case);
        want.sort();
        if got != want {
            failures.push(format!(
                "{name}:\n  expected {want:#?}\n  got      {got:#?}"
            ));
        }
        assert!(
            !got.is_empty(),
            "{name}: a bad-input case must produce a finding"
        );
        insta::with_settings!({snapshot_path => "snapshots/corpus", prepend_module_to_snapshot => false}, {
            insta::assert_snapshot!(name.clone(), human(&report));
        });
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// Writes the seed's static file and the given dynamic bytes into a temporary directory.
fn seed_with_dynamic(dynamic: &[u8]) -> tempfile::TempDir {
    let dir = tempfile::tempdir().expect("tempdir");
    let seed = repo_root().join("examples/scadabridge/traefik.yml");
    fs::copy(seed, dir.path().join("traefik.yml")).expect("copy seed");
    fs::write(dir.path().join("dynamic.yml"), dynamic).expect("write dynamic");
    dir
}

fn codes(dir: &Path) -> Vec<(Code, Option<usize>)> {
    let report = check_dir(dir);
    bridgectl::render::locate(&report.sources, &report.diagnostics)
        .into_iter()
        .map(|l| (l.diag.code, l.line))
        .collect()
}

#[test]
fn deep_block_nesting_is_refused_without_overflowing_the_stack() {
    let text = "- ".repeat(100_000) + "x\n";
    let dir = seed_with_dynamic(text.as_bytes());
    let started = Instant::now();
    assert_eq!(codes(dir.path()), vec![(Code::YamlLimit, Some(1))]);
    assert!(started.elapsed() < Duration::from_secs(30));
}

#[test]
fn deep_flow_nesting_is_refused_without_overflowing_the_stack() {
    let text = "http: ".to_owned() + &"[".repeat(100_000);
    let dir = seed_with_dynamic(text.as_bytes());
    let found = codes(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        matches!(found[0].0, Code::YamlLimit | Code::YamlSyntax),
        "{found:?}"
    );
    assert_eq!(found[0].1, Some(1));
}

#[test]
fn binary_garbage_is_a_located_error() {
    let mut bytes: Vec<u8> = b"http:\n  routers:\n".to_vec();
    bytes.extend((0u32..4096).map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8));
    let dir = seed_with_dynamic(&bytes);
    let found = codes(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        matches!(found[0].0, Code::NotUtf8 | Code::YamlSyntax),
        "{found:?}"
    );
    assert!(found[0].1.is_some_and(|l| l >= 3), "{found:?}");
}

#[test]
fn a_nul_byte_is_reported_as_binary() {
    let dir = seed_with_dynamic(b"http:\n  routers: \0\0\0\n");
    assert_eq!(codes(dir.path()), vec![(Code::YamlSyntax, Some(2))]);
}

#[test]
fn a_50_mb_file_is_refused_by_size_before_parsing() {
    let dir = seed_with_dynamic(b"");
    let file = fs::File::create(dir.path().join("dynamic.yml")).expect("create");
    file.set_len(50 * 1024 * 1024).expect("grow to 50 MB");
    let started = Instant::now();
    let found = codes(dir.path());
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].0, Code::FileTooLarge);
    assert!(started.elapsed() < Duration::from_secs(5));
}

#[test]
fn an_empty_dynamic_file_is_valid_and_serves_nothing() {
    let dir = seed_with_dynamic(b"");
    assert_eq!(codes(dir.path()), vec![]);
}
