//! The loaded configuration and its symbol table: what every stage after reading works on.
//!
//! [`Loaded`] is the result of reading (static file, dynamic files in Traefik's order, the applied
//! profile's name and variables); [`Symbols`] is the one index of the names defined in the dynamic
//! files, built once after the last file is read (Traefik's file provider sees one configuration,
//! so names are global and the first definition wins). The checker (`semantic`), the policy and
//! resolution (`resolve`) all find entities through it, and [`EntityRef`] is the one parser of a
//! written reference (`name` or `name@provider`). Traefik's defaults that depend only on what was
//! loaded ([`Loaded::default_entry_points`]) live here too, so no stage imports another for them.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use crate::canon::{Canonical, escape};
use crate::model::dynamic::{
    DynamicConfig, HttpConfig, Middleware, Router, ServersTransport, Service,
};
use crate::model::static_config::StaticConfig;
use crate::source::FileId;

/// One parsed dynamic configuration file.
#[derive(Debug, Clone)]
pub struct DynamicFile {
    /// Its source.
    pub file: FileId,
    /// Canonical JSON and places.
    pub canon: Canonical,
    /// The valid part of it, typed.
    pub model: DynamicConfig,
}

/// The profile applied to the configuration, as far as the stages after the check need it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AppliedProfile {
    /// Its name (`dev`, `prod`, or the file name).
    pub name: String,
    /// The variables in effect (given and defaults).
    pub vars: BTreeMap<String, String>,
}

/// Everything that was read, for the semantic checks, the policy and the plan.
#[derive(Debug, Clone, Default)]
pub struct Loaded {
    /// The configuration directory.
    pub dir: PathBuf,
    /// The static file, if any.
    pub static_file: Option<FileId>,
    /// Canonical static configuration.
    pub static_canon: Canonical,
    /// Typed static configuration.
    pub static_cfg: StaticConfig,
    /// Dynamic files in Traefik's reading order (the profile's overlay last).
    pub dynamic: Vec<DynamicFile>,
    /// The applied profile.
    pub profile: Option<AppliedProfile>,
}

impl Loaded {
    /// Entry points a router without `entryPoints` lands on (Traefik: asDefault ones, else all TCP
    /// entry points but `traefik`). The one definition used by the checks, the policy and resolution.
    pub fn default_entry_points(&self) -> Vec<String> {
        let eps = self.static_cfg.entry_points.iter().flatten();
        let as_default: Vec<String> = eps
            .clone()
            .filter(|(_, e)| e.as_default == Some(true))
            .map(|(n, _)| n.clone())
            .collect();
        if !as_default.is_empty() {
            return as_default;
        }
        eps.filter(|(n, e)| {
            n.as_str() != "traefik" && !e.address.as_deref().unwrap_or("").ends_with("/udp")
        })
        .map(|(n, _)| n.clone())
        .collect()
    }
}

/// Maps a path written in the configuration onto the checked directory.
pub fn resolve_config_path(dir: &Path, written: &str) -> PathBuf {
    for root in ["/etc/traefik/", "/etc/traefik"] {
        if let Some(rest) = written.strip_prefix(root)
            && (root.ends_with('/') || rest.is_empty())
        {
            return dir.join(rest);
        }
    }
    let p = Path::new(written);
    if p.is_absolute() {
        p.to_path_buf()
    } else {
        dir.join(p)
    }
}

/// The name shown for a path: relative to `dir` when inside it.
pub fn display_name(dir: &Path, path: &Path) -> String {
    path.strip_prefix(dir)
        .ok()
        .filter(|r| !r.as_os_str().is_empty())
        .unwrap_or(path)
        .to_string_lossy()
        .into_owned()
}

// ---- references ---------------------------------------------------------------------------------

/// A written reference to a router, service, middleware, transport or TLS options: `name` or
/// `name@provider` (split at the last `@`). A name without a provider belongs to the file provider.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EntityRef<'a> {
    /// The name, without the provider.
    pub name: &'a str,
    /// The provider after the last `@`, if written.
    pub provider: Option<&'a str>,
}

impl<'a> EntityRef<'a> {
    /// Splits `name@provider`.
    pub fn parse(written: &'a str) -> Self {
        match written.rsplit_once('@') {
            Some((name, provider)) => Self {
                name,
                provider: Some(provider),
            },
            None => Self {
                name: written,
                provider: None,
            },
        }
    }

    /// The name in the file provider (`x` for `x` and `x@file`); `None` for other providers.
    pub fn file_name(self) -> Option<&'a str> {
        matches!(self.provider, None | Some("file")).then_some(self.name)
    }
}

// ---- symbols ------------------------------------------------------------------------------------

/// The sections of `http:` whose entries are named and referenced.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Section {
    /// `http.routers`.
    Routers,
    /// `http.services`.
    Services,
    /// `http.middlewares`.
    Middlewares,
    /// `http.serversTransports`.
    ServersTransports,
}

impl Section {
    /// The key under `http:` (and in JSON pointers).
    pub fn key(self) -> &'static str {
        match self {
            Self::Routers => "routers",
            Self::Services => "services",
            Self::Middlewares => "middlewares",
            Self::ServersTransports => "serversTransports",
        }
    }

    /// One entry, in messages.
    pub fn noun(self) -> &'static str {
        match self {
            Self::Routers => "router",
            Self::Services => "service",
            Self::Middlewares => "middleware",
            Self::ServersTransports => "serversTransport",
        }
    }
}

/// A model type stored under a named section of `http:`.
pub trait Entity: Sized {
    /// Its section.
    const SECTION: Section;
    /// The entries of this type in one file.
    fn entries(http: &HttpConfig) -> Option<&BTreeMap<String, Self>>;
}

impl Entity for Router {
    const SECTION: Section = Section::Routers;
    fn entries(http: &HttpConfig) -> Option<&BTreeMap<String, Self>> {
        http.routers.as_ref()
    }
}

impl Entity for Service {
    const SECTION: Section = Section::Services;
    fn entries(http: &HttpConfig) -> Option<&BTreeMap<String, Self>> {
        http.services.as_ref()
    }
}

impl Entity for Middleware {
    const SECTION: Section = Section::Middlewares;
    fn entries(http: &HttpConfig) -> Option<&BTreeMap<String, Self>> {
        http.middlewares.as_ref()
    }
}

impl Entity for ServersTransport {
    const SECTION: Section = Section::ServersTransports;
    fn entries(http: &HttpConfig) -> Option<&BTreeMap<String, Self>> {
        http.servers_transports.as_ref()
    }
}

/// Where a named entity is defined: its file (index into [`Loaded::dynamic`]) and JSON pointer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Def {
    /// Index into [`Loaded::dynamic`].
    pub file: usize,
    /// `/http/<section>/<name>`.
    pub pointer: String,
}

/// A definition found through [`Symbols`], with its typed value.
#[derive(Debug)]
pub struct Found<'a, T> {
    /// The name.
    pub name: &'a str,
    /// Index into [`Loaded::dynamic`].
    pub file: usize,
    /// `/http/<section>/<name>`.
    pub pointer: &'a str,
    /// The definition.
    pub value: &'a T,
}

impl<T> Clone for Found<'_, T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Found<'_, T> {}

/// A name defined again in a later place; Traefik keeps the first definition and drops this one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Duplicate {
    /// Routers, services or middlewares.
    pub section: Section,
    /// The name.
    pub name: String,
    /// The dropped definition.
    pub at: Def,
    /// The definition that is kept.
    pub first: Def,
}

/// The names defined in the dynamic files, first definition wins (Traefik's file provider).
#[derive(Debug, Clone, Default)]
pub struct Symbols {
    /// Routers by name.
    pub routers: BTreeMap<String, Def>,
    /// Services by name.
    pub services: BTreeMap<String, Def>,
    /// Middlewares by name.
    pub middlewares: BTreeMap<String, Def>,
    /// Servers transports by name.
    pub transports: BTreeMap<String, Def>,
    /// Names of TLS options (`tls.options`) in any file.
    pub tls_options: BTreeSet<String>,
    /// `section/name` of routers, services and middlewares that are present in a file but were
    /// cut by validation (already reported): references to them are not dangling.
    pub broken: BTreeSet<String>,
    /// Routers, services and middlewares defined more than once, in reading order.
    pub duplicates: Vec<Duplicate>,
}

impl Symbols {
    /// Indexes the dynamic files of `loaded`; call it after the last file is added.
    pub fn build(loaded: &Loaded) -> Self {
        let mut s = Self::default();
        for (fi, f) in loaded.dynamic.iter().enumerate() {
            // Names present in the canonical value but missing from the model failed validation.
            for section in [Section::Routers, Section::Services, Section::Middlewares] {
                if let Some(serde_json::Value::Object(m)) =
                    f.canon.value.pointer(&format!("/http/{}", section.key()))
                {
                    for name in m.keys() {
                        s.broken.insert(format!("{}/{name}", section.key()));
                    }
                }
            }
            let Some(http) = &f.model.http else { continue };
            s.add::<Router>(fi, http);
            s.add::<Service>(fi, http);
            s.add::<Middleware>(fi, http);
            for name in ServersTransport::entries(http)
                .into_iter()
                .flat_map(|m| m.keys())
            {
                let pointer = format!("/http/serversTransports/{}", escape(name));
                s.transports
                    .entry(name.clone())
                    .or_insert(Def { file: fi, pointer });
            }
        }
        for f in &loaded.dynamic {
            if let Some(opts) = f.model.tls.as_ref().and_then(|t| t.options.as_ref()) {
                s.tls_options.extend(opts.keys().cloned());
            }
        }
        s
    }

    fn add<T: Entity>(&mut self, fi: usize, http: &HttpConfig) {
        let section = T::SECTION;
        for name in T::entries(http).into_iter().flat_map(|m| m.keys()) {
            self.broken.remove(&format!("{}/{name}", section.key()));
            let at = Def {
                file: fi,
                pointer: format!("/http/{}/{}", section.key(), escape(name)),
            };
            let table = self.table_mut(section);
            if let Some(first) = table.get(name) {
                let first = first.clone();
                self.duplicates.push(Duplicate {
                    section,
                    name: name.clone(),
                    at,
                    first,
                });
                continue;
            }
            table.insert(name.clone(), at);
        }
    }

    fn table_mut(&mut self, section: Section) -> &mut BTreeMap<String, Def> {
        match section {
            Section::Routers => &mut self.routers,
            Section::Services => &mut self.services,
            Section::Middlewares => &mut self.middlewares,
            Section::ServersTransports => &mut self.transports,
        }
    }

    /// The names of one section.
    pub fn table(&self, section: Section) -> &BTreeMap<String, Def> {
        match section {
            Section::Routers => &self.routers,
            Section::Services => &self.services,
            Section::Middlewares => &self.middlewares,
            Section::ServersTransports => &self.transports,
        }
    }

    /// True when `name` is defined in `section` but was cut by validation.
    pub fn is_broken(&self, section: Section, name: &str) -> bool {
        self.broken.contains(&format!("{}/{name}", section.key()))
    }

    /// The definition of a (file-provider) name.
    pub fn get<'a, T: Entity>(&'a self, loaded: &'a Loaded, name: &str) -> Option<Found<'a, T>> {
        let (name, def) = self.table(T::SECTION).get_key_value(name)?;
        Self::found(loaded, name, def)
    }

    /// Every definition of a section, by name.
    pub fn iter<'a, T: Entity + 'a>(
        &'a self,
        loaded: &'a Loaded,
    ) -> impl Iterator<Item = Found<'a, T>> + 'a {
        self.table(T::SECTION)
            .iter()
            .filter_map(move |(name, def)| Self::found(loaded, name, def))
    }

    /// Every definition of a section in reading order: by file, then by name within a file.
    pub fn in_reading_order<'a, T: Entity + 'a>(&'a self, loaded: &'a Loaded) -> Vec<Found<'a, T>> {
        let mut all: Vec<Found<'a, T>> = self.iter(loaded).collect();
        all.sort_by_key(|f| f.file); // stable: names stay in order within a file
        all
    }

    fn found<'a, T: Entity>(
        loaded: &'a Loaded,
        name: &'a str,
        def: &'a Def,
    ) -> Option<Found<'a, T>> {
        let value = loaded
            .dynamic
            .get(def.file)?
            .model
            .http
            .as_ref()
            .and_then(T::entries)?
            .get(name)?;
        Some(Found {
            name,
            file: def.file,
            pointer: &def.pointer,
            value,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn references_split_at_the_last_at() {
        assert_eq!(
            EntityRef::parse("api@internal"),
            EntityRef {
                name: "api",
                provider: Some("internal")
            }
        );
        assert_eq!(EntityRef::parse("web").file_name(), Some("web"));
        assert_eq!(EntityRef::parse("web@file").file_name(), Some("web"));
        assert_eq!(EntityRef::parse("a@file@file").file_name(), Some("a@file"));
        assert_eq!(EntityRef::parse("web@docker").file_name(), None);
    }

    #[test]
    fn first_definition_wins_and_duplicates_are_kept_in_reading_order() {
        let file = |routers: &[&str]| {
            let http = HttpConfig {
                routers: Some(
                    routers
                        .iter()
                        .map(|n| ((*n).to_owned(), Router::default()))
                        .collect(),
                ),
                ..HttpConfig::default()
            };
            DynamicFile {
                file: FileId(0),
                canon: Canonical::default(),
                model: DynamicConfig {
                    http: Some(http),
                    ..DynamicConfig::default()
                },
            }
        };
        let loaded = Loaded {
            dynamic: vec![file(&["b", "z"]), file(&["a", "b"])],
            ..Loaded::default()
        };
        let s = Symbols::build(&loaded);
        assert_eq!(s.routers["b"].file, 0);
        assert_eq!(s.duplicates.len(), 1);
        assert_eq!(s.duplicates[0].name, "b");
        assert_eq!(s.duplicates[0].at.file, 1);
        let order: Vec<&str> = s
            .in_reading_order::<Router>(&loaded)
            .iter()
            .map(|f| f.name)
            .collect();
        assert_eq!(order, ["b", "z", "a"]);
        assert!(s.get::<Router>(&loaded, "a").is_some());
        assert!(s.get::<Service>(&loaded, "a").is_none());
    }
}
