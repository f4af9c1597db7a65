//! Loading the plan the runtime serves.

use std::path::{Path, PathBuf};

use bridge_plan::{Plan, PlanError};

/// Why a plan file could not be loaded.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The file could not be read.
    #[error("cannot read plan file {}: {source}", path.display())]
    Io {
        /// The plan file.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// The file was read but is not a plan this runtime accepts (unknown version, hash mismatch,
    /// malformed or inconsistent content).
    #[error(transparent)]
    Plan(#[from] PlanError),
}

/// Reads and verifies the plan at `path` with [`bridge_plan::load_verified`]: supported
/// `plan_version`, content matching its `hash`, exact shape, consistent references.
pub fn load_plan_file(path: &Path) -> Result<Plan, LoadError> {
    let bytes = std::fs::read(path).map_err(|source| LoadError::Io {
        path: path.to_owned(),
        source,
    })?;
    Ok(bridge_plan::load_verified(&bytes)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &tempfile::TempDir, text: &str) -> PathBuf {
        let path = dir.path().join("plan.json");
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn a_sealed_plan_loads() {
        let dir = tempfile::tempdir().unwrap();
        let plan = Plan::example();
        let path = write(&dir, &plan.to_file_string().unwrap());
        assert_eq!(load_plan_file(&path).unwrap(), plan);
    }

    #[test]
    fn a_tampered_plan_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let plan = Plan::example();
        let text = plan.to_file_string().unwrap();
        let tampered = text.replace("http://10.0.0.12:8080", "http://203.0.113.9:8080");
        assert_ne!(tampered, text);
        let path = write(&dir, &tampered);
        match load_plan_file(&path) {
            Err(LoadError::Plan(PlanError::HashMismatch { expected, actual })) => {
                assert_eq!(expected, plan.hash);
                assert_ne!(actual, plan.hash);
            }
            other => panic!("expected a hash mismatch, got {other:?}"),
        }
    }

    #[test]
    fn an_unknown_plan_version_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let mut plan = Plan::example();
        plan.plan_version = bridge_plan::PLAN_VERSION + 1;
        // Correctly sealed, so only the version can be the reason.
        let path = write(&dir, &plan.to_file_string().unwrap());
        let err = load_plan_file(&path).unwrap_err();
        assert!(
            matches!(
                err,
                LoadError::Plan(PlanError::UnsupportedVersion { found, supported })
                    if found == u64::from(bridge_plan::PLAN_VERSION + 1) && supported == bridge_plan::PLAN_VERSION
            ),
            "{err:?}"
        );
        assert!(
            err.to_string().contains(&format!(
                "plan_version {} is not supported",
                bridge_plan::PLAN_VERSION + 1
            )),
            "{err}"
        );
    }

    #[test]
    fn a_missing_file_names_its_path() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("absent.json");
        let err = load_plan_file(&path).unwrap_err();
        assert!(matches!(err, LoadError::Io { .. }));
        assert!(err.to_string().contains("absent.json"), "{err}");
    }
}
