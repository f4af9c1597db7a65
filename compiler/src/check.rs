//! `bridgectl check`: find the inputs, run every stage on every file, and collect all findings.
//!
//! Inputs follow Traefik's container layout: the directory given plays the role of `/etc/traefik`, so
//! `providers.file.filename: /etc/traefik/dynamic.yml` resolves to `DIR/dynamic.yml` and relative paths
//! resolve against DIR. Each file goes YAML → canonical JSON → schema validation → typed model on its
//! own; the dynamic files are then merged (Traefik's file provider sees one configuration) and the
//! cross-file semantic checks run on the result. What was read is a [`Loaded`], indexed once as
//! [`Symbols`] for the checks, the policy and the plan (`crate::loaded`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::canon::canonicalize;
use crate::diag::{Code, Diagnostic, Severity};
use crate::loaded::{
    AppliedProfile, DynamicFile, Loaded, Symbols, display_name, resolve_config_path,
};
use crate::schema::ConfigKind;
use crate::source::{FileId, SourceFile, SourceMap, Span};
use crate::{semantic, template, validate, yaml};

/// What to check.
#[derive(Debug, Clone, Default)]
pub struct CheckOptions {
    /// The configuration directory (Traefik's `/etc/traefik`).
    pub dir: PathBuf,
    /// Overrides `DIR/traefik.yml`.
    pub static_file: Option<PathBuf>,
    /// Overrides `providers.file`: a file or a directory of dynamic configuration.
    pub dynamic: Option<PathBuf>,
    /// Values for `{{ name }}` in dynamic files and profiles.
    pub vars: BTreeMap<String, String>,
    /// The deployment profile to apply (overlay, transforms, policy), if any.
    pub profile: Option<crate::profile::ProfileSelector>,
    /// "Now" for certificate expiry checks, in Unix seconds; `None` reads the clock.
    pub now_unix: Option<i64>,
}

/// Problems that stop a run before any configuration is read (exit code 2).
#[derive(Debug, thiserror::Error)]
pub enum CheckError {
    /// The directory has no static configuration.
    #[error(
        "no traefik.toml, traefik.yaml or traefik.yml in {dir}; pass --static FILE or a directory that holds one"
    )]
    NoStaticConfig {
        /// The directory searched.
        dir: PathBuf,
    },
    /// The configuration directory does not exist.
    #[error("configuration directory {dir} does not exist or is not a directory")]
    NoDir {
        /// The directory.
        dir: PathBuf,
    },
    /// The profile could not be read.
    #[error(transparent)]
    Profile(#[from] crate::profile::ProfileError),
    /// A file named on the command line could not be read.
    #[error("cannot read {path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
}

/// The result of a run.
#[derive(Debug, Default)]
pub struct CheckReport {
    /// Every file that was read.
    pub sources: SourceMap,
    /// Sorted findings.
    pub diagnostics: Vec<Diagnostic>,
    /// What was loaded.
    pub loaded: Loaded,
    /// The names defined in `loaded` (the checks and the plan find entities through it).
    pub symbols: Symbols,
}

impl CheckReport {
    /// True when there is no error (warnings allowed).
    pub fn ok(&self) -> bool {
        !self
            .diagnostics
            .iter()
            .any(|d| d.severity == Severity::Error)
    }

    /// Number of files read.
    pub fn file_count(&self) -> usize {
        self.sources.iter().count()
    }
}

/// Runs the whole check.
pub fn check(opts: &CheckOptions) -> Result<CheckReport, CheckError> {
    let dir = opts.dir.clone();
    let static_path = match &opts.static_file {
        Some(p) => Some(p.clone()),
        None => {
            if !dir.is_dir() {
                return Err(CheckError::NoDir { dir });
            }
            // Traefik's own order of extensions.
            let found = ["traefik.toml", "traefik.yaml", "traefik.yml"]
                .iter()
                .map(|n| dir.join(n))
                .find(|p| p.is_file());
            match found {
                Some(p) => Some(p),
                None if opts.dynamic.is_some() => None,
                None => return Err(CheckError::NoStaticConfig { dir }),
            }
        }
    };
    let mut report = CheckReport::default();
    let mut diags: Vec<Diagnostic> = Vec::new();
    report.loaded.dir = dir.clone();

    let profile = match &opts.profile {
        Some(sel) => crate::profile::load(sel, &opts.vars, &mut report.sources, &mut diags)?,
        None => None,
    };
    report.loaded.profile = profile.as_ref().map(|p| AppliedProfile {
        name: p.name.clone(),
        vars: p.vars.clone(),
    });

    if let Some(path) = &static_path {
        let name = display_name(&dir, path);
        let text = read_text(path).map_err(|source| CheckError::Io {
            path: path.clone(),
            source,
        })?;
        let (id, node) = parse_file(
            &mut report.sources,
            &dir,
            &name,
            path,
            text,
            None,
            &mut diags,
        );
        let mut canon = canonicalize(node.as_ref(), ConfigKind::Static, &mut diags);
        if let Some(p) = &profile {
            crate::profile::merge_static(&mut canon, &p.static_overlay);
        }
        let broken = validate::validate(ConfigKind::Static, &canon, &mut diags);
        report.loaded.static_cfg = validate::into_model(&canon, &broken, &mut diags);
        report.loaded.static_canon = canon;
        report.loaded.static_file = Some(id);
    }

    for path in dynamic_paths(opts, &report, &mut diags)? {
        let name = display_name(&dir, &path);
        let text = match read_text(&path) {
            Ok(t) => t,
            Err(e) => {
                let code = if e.kind() == std::io::ErrorKind::FileTooLarge {
                    Code::FileTooLarge
                } else {
                    Code::Io
                };
                diags.push(Diagnostic::error(code, format!("cannot read {name}: {e}")));
                continue;
            }
        };
        let (id, node) = parse_file(
            &mut report.sources,
            &dir,
            &name,
            &path,
            text,
            Some(&opts.vars),
            &mut diags,
        );
        let canon = canonicalize(node.as_ref(), ConfigKind::Dynamic, &mut diags);
        drop(node); // the tree is large and no longer needed: keeps peak memory down
        let broken = validate::validate(ConfigKind::Dynamic, &canon, &mut diags);
        let model = validate::into_model(&canon, &broken, &mut diags);
        report.loaded.dynamic.push(DynamicFile {
            file: id,
            canon,
            model,
        });
    }

    if let Some(p) = &profile {
        report.loaded.dynamic.push(p.dynamic.clone());
        crate::policy::apply_transforms(&mut report.loaded, p);
    }
    report.symbols = Symbols::build(&report.loaded);
    semantic::check(&report.loaded, &report.symbols, &report.sources, &mut diags);
    if let Some(p) = &profile {
        let now = opts.now_unix.unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| i64::try_from(d.as_secs()).unwrap_or(i64::MAX))
        });
        crate::policy::check(&report.loaded, p, now, &mut diags);
    }

    let mut all = crate::diag::Diagnostics::default();
    all.extend(diags);
    all.sort();
    report.diagnostics = all.into_vec();
    Ok(report)
}

fn read_text(path: &Path) -> std::io::Result<Vec<u8>> {
    let meta = std::fs::metadata(path)?;
    if meta.len() > yaml::MAX_FILE_BYTES as u64 {
        return Err(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!(
                "{} bytes is over the {} byte limit",
                meta.len(),
                yaml::MAX_FILE_BYTES
            ),
        ));
    }
    std::fs::read(path)
}

/// Decodes, renders (dynamic files) and parses one file, registering it in the source map.
fn parse_file(
    sources: &mut SourceMap,
    dir: &Path,
    name: &str,
    path: &Path,
    bytes: Vec<u8>,
    vars: Option<&BTreeMap<String, String>>,
    diags: &mut Vec<Diagnostic>,
) -> (FileId, Option<yaml::Node>) {
    let text = match String::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let at = e.utf8_error().valid_up_to();
            let lossy = String::from_utf8_lossy(e.as_bytes()).into_owned();
            let id =
                sources.add(SourceFile::new(name, path, lossy).outside_dir(!path.starts_with(dir)));
            diags.push(
                Diagnostic::error(
                    Code::NotUtf8,
                    format!("{name} is not UTF-8 text (invalid byte at offset {at})"),
                )
                .at(Some(Span::new(id, at, at + 1)))
                .hint("YAML files must be UTF-8; is this a binary file?"),
            );
            return (id, None);
        }
    };
    let text = text
        .strip_prefix('\u{feff}')
        .map(str::to_owned)
        .unwrap_or(text);
    let rendered = match vars {
        Some(vars) if template::has_markup(&text) => {
            let placeholder = sources
                .add(SourceFile::new(name, path, text.clone()).outside_dir(!path.starts_with(dir)));
            match template::render(placeholder, &text, vars) {
                Ok(r) => {
                    // Re-register with the rendered text; positions below refer to it.
                    let id = sources.replace(
                        placeholder,
                        SourceFile::new(name, path, r.clone()).outside_dir(!path.starts_with(dir)),
                    );
                    return parse_registered(id, &r, is_toml(path), diags);
                }
                Err(ds) => {
                    diags.extend(ds);
                    return (placeholder, None);
                }
            }
        }
        _ => text,
    };
    let id = sources
        .add(SourceFile::new(name, path, rendered.clone()).outside_dir(!path.starts_with(dir)));
    parse_registered(id, &rendered, is_toml(path), diags)
}

/// True for a `.toml` file: Traefik reads it as TOML, anything else as YAML.
fn is_toml(path: &Path) -> bool {
    path.extension()
        .is_some_and(|e| e.eq_ignore_ascii_case("toml"))
}

fn parse_registered(
    id: FileId,
    text: &str,
    toml: bool,
    diags: &mut Vec<Diagnostic>,
) -> (FileId, Option<yaml::Node>) {
    let parsed = if toml {
        crate::toml_doc::parse(id, text)
    } else {
        yaml::parse(id, text)
    };
    match parsed {
        Ok(node) => (id, node),
        Err(mut d) => {
            if d.span.is_none() {
                d.span = Some(Span::new(id, 0, 0));
            }
            diags.push(d);
            (id, None)
        }
    }
}

/// The dynamic files to read, in Traefik's order.
fn dynamic_paths(
    opts: &CheckOptions,
    report: &CheckReport,
    diags: &mut Vec<Diagnostic>,
) -> Result<Vec<PathBuf>, CheckError> {
    let dir = &report.loaded.dir;
    if let Some(p) = &opts.dynamic {
        if p.is_dir() {
            let mut out = Vec::new();
            walk_dir(p, &mut out, diags, dir);
            return Ok(out);
        }
        if !p.exists() {
            return Err(CheckError::Io {
                path: p.clone(),
                source: std::io::Error::new(
                    std::io::ErrorKind::NotFound,
                    "no such file or directory",
                ),
            });
        }
        return Ok(vec![p.clone()]);
    }
    let file = report
        .loaded
        .static_cfg
        .providers
        .as_ref()
        .and_then(|p| p.file.as_ref());
    let Some(file) = file else {
        if report.loaded.static_file.is_some() && !report.loaded.static_canon.places.is_empty() {
            diags.push(
                Diagnostic::warning(
                    Code::NoEntryPoint,
                    "no providers.file in the static configuration: there are no routers to serve",
                )
                .at(report.loaded.static_file.map(|f| Span::new(f, 0, 0)))
                .hint("add `providers: {file: {filename: /etc/traefik/dynamic.yml}}`"),
            );
        }
        return Ok(Vec::new());
    };
    let canon = &report.loaded.static_canon;
    if let Some(directory) = &file.directory {
        if file.filename.is_some() {
            diags.push(
                Diagnostic::warning(
                    Code::InvalidValue,
                    "providers.file sets both `filename` and `directory`; Traefik uses `directory` only",
                )
                .at(canon.key_span("/providers/file/filename"))
                .pointer("/providers/file/filename"),
            );
        }
        let path = resolve_config_path(dir, directory);
        if !path.is_dir() {
            diags.push(
                Diagnostic::error(
                    Code::FileNotFound,
                    format!(
                        "providers.file.directory `{directory}` does not exist (looked for {})",
                        display_name(dir, &path)
                    ),
                )
                .at(canon.value_span("/providers/file/directory"))
                .pointer("/providers/file/directory")
                .hint("paths under /etc/traefik/ are looked up in the checked directory"),
            );
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        walk_dir(&path, &mut out, diags, dir);
        return Ok(out);
    }
    if let Some(filename) = &file.filename {
        let path = resolve_config_path(dir, filename);
        if !path.is_file() {
            diags.push(
                Diagnostic::error(
                    Code::FileNotFound,
                    format!(
                        "providers.file.filename `{filename}` does not exist (looked for {})",
                        display_name(dir, &path)
                    ),
                )
                .at(canon.value_span("/providers/file/filename"))
                .pointer("/providers/file/filename")
                .hint("paths under /etc/traefik/ are looked up in the checked directory"),
            );
            return Ok(Vec::new());
        }
        return Ok(vec![path]);
    }
    diags.push(
        Diagnostic::error(
            Code::MissingKey,
            "providers.file needs `filename` or `directory`",
        )
        .at(canon.key_span("/providers/file"))
        .pointer("/providers/file"),
    );
    Ok(Vec::new())
}

/// Traefik reads a directory recursively in name order and only `.yml`, `.yaml` and `.toml` files.
fn walk_dir(path: &Path, out: &mut Vec<PathBuf>, diags: &mut Vec<Diagnostic>, dir: &Path) {
    let entries = match std::fs::read_dir(path) {
        Ok(e) => e,
        Err(e) => {
            diags.push(Diagnostic::error(
                Code::Io,
                format!("cannot read directory {}: {e}", display_name(dir, path)),
            ));
            return;
        }
    };
    let mut items: Vec<PathBuf> = entries.filter_map(|e| e.ok().map(|e| e.path())).collect();
    items.sort();
    for p in items {
        if p.is_dir() {
            walk_dir(&p, out, diags, dir);
        } else if p
            .extension()
            .and_then(|e| e.to_str())
            .is_some_and(|e| ["yml", "yaml", "toml"].contains(&e.to_ascii_lowercase().as_str()))
        {
            out.push(p);
        }
    }
}
