//! The YAML front end of `bridgectl check` and `bridgectl build`, in memory.
//!
//! `bridgectl::check::check` only reads a directory, so this runs its stages for one dynamic file
//! the same way (compiler/src/check.rs, `check` and `parse_file`), without files:
//! UTF-8 → BOM strip → `template::render` (when the text has markup) → `yaml::parse` →
//! `canon::canonicalize` → `validate::validate` → `validate::into_model` → `loaded::Symbols::build`
//! → `semantic::check`, with a fixed static configuration (`STATIC_YML`, parsed once per
//! process). The findings are sorted and rendered in all four output formats, and a configuration
//! without errors is built into a plan (`resolve::build_plan`) that must seal, write and load back
//! (`bridge_plan::load_verified`).
//! The same YAML is also canonicalised and validated as a static configuration.
//!
//! Files: the configuration directory is a path that does not exist, so relative `usersFile` or
//! certificate paths (`..` included) never resolve; an absolute `usersFile` outside it is replaced
//! before the semantic checks, so an input naming `/dev/zero` cannot make an iteration read
//! forever. Nothing is written.
#![no_main]

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;
use std::sync::OnceLock;

use bridgectl::canon::canonicalize;
use bridgectl::check::CheckReport;
use bridgectl::diag::{Code, Diagnostic, Diagnostics, Severity};
use bridgectl::loaded::{DynamicFile, Loaded, Symbols, resolve_config_path};
use bridgectl::model::dynamic::DynamicConfig;
use bridgectl::model::static_config::StaticConfig;
use bridgectl::schema::ConfigKind;
use bridgectl::source::{FileId, SourceFile, SourceMap, Span};
use bridgectl::{render, resolve, semantic, template, validate, yaml};
use libfuzzer_sys::fuzz_target;

/// The static configuration every input is checked against: one entry point, the file provider.
const STATIC_YML: &str = "\
entryPoints:
  web:
    address: \":8080\"
  websecure:
    address: \":8443\"
providers:
  file:
    filename: /etc/traefik/dynamic.yml
";

/// What the static file leaves behind: the source map holding it and the loaded static part.
struct Base {
    sources: SourceMap,
    loaded: Loaded,
    vars: BTreeMap<String, String>,
}

fn base() -> &'static Base {
    static BASE: OnceLock<Base> = OnceLock::new();
    BASE.get_or_init(|| {
        // Never created: relative paths in the input resolve below it and so never to a file.
        let dir = std::env::temp_dir().join(format!(
            "bridgectl-fuzz-{}-absent/etc-traefik",
            std::process::id()
        ));
        let mut sources = SourceMap::default();
        let mut diags = Vec::new();
        let id = sources.add(SourceFile::new(
            "traefik.yml",
            dir.join("traefik.yml"),
            STATIC_YML.to_owned(),
        ));
        let node = yaml::parse(id, STATIC_YML).expect("the fixed static configuration parses");
        let canon = canonicalize(node.as_ref(), ConfigKind::Static, &mut diags);
        let broken = validate::validate(ConfigKind::Static, &canon, &mut diags);
        let static_cfg: StaticConfig = validate::into_model(&canon, &broken, &mut diags);
        assert!(
            diags.iter().all(|d| d.severity != Severity::Error),
            "the fixed static configuration has errors: {diags:?}"
        );
        let loaded = Loaded {
            dir,
            static_file: Some(id),
            static_canon: canon,
            static_cfg,
            dynamic: Vec::new(),
            profile: None,
        };
        let vars = [
            ("domain", "example.com"),
            ("port", "8080"),
            ("stage", "prod"),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
        Base {
            sources,
            loaded,
            vars,
        }
    })
}

/// Keeps `usersFile` inside the (absent) configuration directory; see the module comment.
fn confine_files(dir: &std::path::Path, model: &mut DynamicConfig) {
    let confine = |f: &mut Option<String>| {
        if let Some(path) = f {
            if !resolve_config_path(dir, path).starts_with(dir) {
                *f = Some("users-outside-the-directory".to_owned());
            }
        }
    };
    let middlewares = model.http.as_mut().and_then(|h| h.middlewares.as_mut());
    for m in middlewares.into_iter().flat_map(|m| m.values_mut()) {
        if let Some(b) = m.basic_auth.as_mut() {
            confine(&mut b.users_file);
        }
        if let Some(d) = m.digest_auth.as_mut() {
            confine(&mut d.users_file);
        }
    }
}

/// `check.rs`'s `parse_file` for one dynamic file: registers it and parses it, recording findings.
fn parse_dynamic(
    sources: &mut SourceMap,
    path: &PathBuf,
    bytes: &[u8],
    vars: &BTreeMap<String, String>,
    diags: &mut Vec<Diagnostic>,
) -> (FileId, Option<yaml::Node>) {
    let name = "dynamic.yml";
    let text = match std::str::from_utf8(bytes) {
        Ok(t) => t,
        Err(e) => {
            let at = e.valid_up_to();
            let lossy = String::from_utf8_lossy(bytes).into_owned();
            let id = sources.add(SourceFile::new(name, path, lossy));
            diags.push(
                Diagnostic::error(Code::NotUtf8, "not UTF-8").at(Some(Span::new(id, at, at + 1))),
            );
            return (id, None);
        }
    };
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let mut id = sources.add(SourceFile::new(name, path, text.to_owned()));
    let rendered;
    let text = if template::has_markup(text) {
        match template::render(id, text, vars) {
            Ok(r) => {
                id = sources.replace(id, SourceFile::new(name, path, r.clone()));
                rendered = r;
                rendered.as_str()
            }
            Err(ds) => {
                diags.extend(ds);
                return (id, None);
            }
        }
    } else {
        text
    };
    match yaml::parse(id, text) {
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

fuzz_target!(|data: &[u8]| {
    let base = base();
    let mut sources = base.sources.clone();
    let mut loaded = base.loaded.clone();
    let mut diags = Vec::new();
    let path = loaded.dir.join("dynamic.yml");

    let (id, node) = parse_dynamic(&mut sources, &path, data, &base.vars, &mut diags);
    {
        // The same tree read as a static configuration (traefik.yml goes through these stages too).
        let mut static_diags = Vec::new();
        let canon = canonicalize(node.as_ref(), ConfigKind::Static, &mut static_diags);
        let broken = validate::validate(ConfigKind::Static, &canon, &mut static_diags);
        let _: StaticConfig = validate::into_model(&canon, &broken, &mut static_diags);

        let canon = canonicalize(node.as_ref(), ConfigKind::Dynamic, &mut diags);
        drop(node);
        let broken: BTreeSet<String> = validate::validate(ConfigKind::Dynamic, &canon, &mut diags);
        let mut model: DynamicConfig = validate::into_model(&canon, &broken, &mut diags);
        confine_files(&loaded.dir, &mut model);
        loaded.dynamic.push(DynamicFile {
            file: id,
            canon,
            model,
        });
    }
    let symbols = Symbols::build(&loaded);
    semantic::check(&loaded, &symbols, &sources, &mut diags);

    let mut all = Diagnostics::default();
    all.extend(diags);
    all.sort();
    let diagnostics = all.into_vec();
    let ok = diagnostics.iter().all(|d| d.severity != Severity::Error);
    let _ = render::human(&sources, &diagnostics, "etc/", false);
    let _ = render::summary(&diagnostics, 2);
    let _ = render::json(&sources, &diagnostics, ok);
    let _ = render::github(&sources, &diagnostics, "etc/");
    let _ = render::sarif(&sources, &diagnostics, "etc/");

    if !ok {
        return;
    }
    let report = CheckReport {
        sources,
        diagnostics,
        loaded,
        symbols,
    };
    match resolve::build_plan(&report, "none") {
        Err(diags) => {
            let internal: Vec<_> = diags.iter().filter(|d| d.code == Code::Internal).collect();
            assert!(
                internal.is_empty(),
                "a configuration that checks clean hit an internal error in build: {internal:?}"
            );
        }
        Ok(plan) => {
            let text = plan
                .to_file_string()
                .unwrap_or_else(|e| panic!("a built plan does not serialise: {e}"));
            match bridge_plan::load_verified(text.as_bytes()) {
                Ok(loaded) => assert!(loaded == plan, "a built plan loads back different"),
                Err(e) => panic!("a built plan is refused by the loader: {e}\n{text}"),
            }
        }
    }
});
