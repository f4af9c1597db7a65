//! Helpers shared by the end-to-end tests: locating the repository, running `check` in-process, and
//! turning a report into stable `severity code file:line` lines that expectation files list.
#![forbid(unsafe_code)]

use std::path::{Path, PathBuf};

use bridgectl::check::{CheckOptions, CheckReport, check};
use bridgectl::diag::Severity;
use bridgectl::render;

/// The repository root.
pub fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// Runs `check` on a directory as `bridgectl check DIR` would.
pub fn check_dir(dir: &Path) -> CheckReport {
    check(&CheckOptions {
        dir: dir.to_path_buf(),
        ..CheckOptions::default()
    })
    .unwrap_or_else(|e| panic!("check {} failed to start: {e}", dir.display()))
}

/// `severity code file:line` for every error and warning (notes are style only).
pub fn finding_lines(report: &CheckReport) -> Vec<String> {
    render::locate(&report.sources, &report.diagnostics)
        .into_iter()
        .filter(|l| l.diag.severity != Severity::Note)
        .map(|l| {
            format!(
                "{} {} {}:{}",
                l.diag.severity.as_str(),
                l.diag.code.as_str(),
                l.file.unwrap_or("-"),
                l.line.map_or_else(|| "-".to_owned(), |n| n.to_string())
            )
        })
        .collect()
}

/// The human rendering without colours, as a user sees it.
pub fn human(report: &CheckReport) -> String {
    let mut out = render::human(&report.sources, &report.diagnostics, "", false);
    out.push_str(&render::summary(&report.diagnostics, report.file_count()));
    out.push('\n');
    out
}
