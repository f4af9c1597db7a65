//! The storage file, in Traefik's acme.json format, so a Traefik acme.json is served as it is and
//! a file written here works in Traefik.
//!
//! The file is an object keyed by resolver name; each value holds `Account` (Traefik's: email,
//! registration, an RSA key in PKCS#1) and `Certificates` (`domain.main`/`sans`, base64 of the PEM
//! chain and of the PEM key, `Store`). The ACME client here signs with ECDSA P-256 only, so it
//! keeps its own account beside Traefik's under `BridgeAccount` and never touches `Account`:
//! Traefik ignores the extra key and keeps using (or creates) its own account. Everything else in
//! the file — other resolvers, keys this build does not know — is written back unchanged.
//!
//! Rules: a file readable or writable by group or others is refused (Traefik's check, but a clear
//! error at start instead of a disabled resolver); a file that is not this format is refused with
//! its path and left untouched; writes go to a temporary file in the same directory (mode 0600),
//! fsynced, renamed over the old one, and the directory fsynced, so a crash leaves the old or the
//! new file, never half of one.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use base64::engine::general_purpose::STANDARD;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Why a storage file cannot be used.
#[derive(Debug, thiserror::Error)]
pub(crate) enum StorageError {
    /// Group or others may read or write it (it holds private keys).
    #[error(
        "ACME storage {path}: permissions {mode:o} are too open (it holds private keys); run `chmod 600 {path}`"
    )]
    Mode {
        /// The file.
        path: String,
        /// Its permission bits.
        mode: u32,
    },
    /// Not Traefik's acme.json format; the file is left as it is.
    #[error("ACME storage {path} is not an acme.json file ({why}); it was left untouched")]
    Corrupt {
        /// The file.
        path: String,
        /// What is wrong.
        why: String,
    },
    /// Reading or writing failed.
    #[error("ACME storage {path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// What the system said.
        source: std::io::Error,
    },
}

/// A certificate as Traefik stores it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct StoredCert {
    /// The names it was ordered for.
    pub domain: StoredDomain,
    /// PEM certificate chain, leaf first (base64 in the file, as Go writes `[]byte`).
    #[serde(with = "go_bytes")]
    pub certificate: Vec<u8>,
    /// PEM private key.
    #[serde(with = "go_bytes")]
    pub key: Vec<u8>,
    /// TLS store; always `default` (the only store Traefik uses).
    #[serde(rename = "Store", default = "default_store")]
    pub store: String,
}

fn default_store() -> String {
    "default".to_owned()
}

/// Traefik's `types.Domain`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub(crate) struct StoredDomain {
    /// Main name.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub main: String,
    /// Further names.
    #[serde(
        default,
        skip_serializing_if = "Vec::is_empty",
        deserialize_with = "null_as_empty"
    )]
    pub sans: Vec<String>,
}

impl StoredDomain {
    /// Main name then the further names.
    pub(crate) fn names(&self) -> Vec<String> {
        std::iter::once(self.main.clone())
            .chain(self.sans.iter().cloned())
            .filter(|n| !n.is_empty())
            .collect()
    }
}

fn null_as_empty<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Vec<String>, D::Error> {
    Ok(Option::<Vec<String>>::deserialize(d)?.unwrap_or_default())
}

/// Go's `[]byte` in JSON: standard base64 with padding; `null` is empty.
mod go_bytes {
    use super::STANDARD;
    use base64::Engine as _;
    use serde::{Deserialize, Deserializer, Serializer};

    pub(super) fn serialize<S: Serializer>(v: &[u8], s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&STANDARD.encode(v))
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Vec<u8>, D::Error> {
        let text = Option::<String>::deserialize(d)?.unwrap_or_default();
        STANDARD.decode(text).map_err(serde::de::Error::custom)
    }
}

/// This client's account, kept beside Traefik's.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(crate) struct BridgeAccount {
    /// The contact it was registered with.
    #[serde(rename = "Email", default)]
    pub email: String,
    /// instant-acme's credentials (account URL, PKCS#8 key, directory URL).
    #[serde(rename = "Credentials")]
    pub credentials: Value,
}

/// What the file holds for one resolver.
#[derive(Debug, Clone, Default)]
pub(crate) struct ResolverData {
    /// Traefik has an account here (kept untouched; its RSA key cannot be used by this client).
    pub traefik_account: bool,
    /// This client's account, if one was registered before.
    pub account: Option<BridgeAccount>,
    /// The certificates, in file order.
    pub certificates: Vec<StoredCert>,
}

/// One storage file, shared by every resolver naming it.
#[derive(Debug)]
pub(crate) struct StorageFile {
    path: PathBuf,
    data: Mutex<Map<String, Value>>,
}

impl StorageFile {
    /// Reads and checks the file. A missing file is fine (it is created, mode 0600, at the first
    /// write) as long as its directory exists.
    pub(crate) fn open(path: &Path) -> Result<Self, StorageError> {
        let shown = path.display().to_string();
        let io = |source| StorageError::Io {
            path: shown.clone(),
            source,
        };
        let data = match std::fs::metadata(path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                let dir = parent(path);
                if !dir.is_dir() {
                    return Err(io(std::io::Error::new(
                        std::io::ErrorKind::NotFound,
                        format!(
                            "the directory {} does not exist (it must be writable by the runtime)",
                            dir.display()
                        ),
                    )));
                }
                Map::new()
            }
            Err(e) => return Err(io(e)),
            Ok(meta) => {
                check_mode(&shown, &meta)?;
                let bytes = std::fs::read(path).map_err(io)?;
                parse(&shown, &bytes)?
            }
        };
        Ok(Self {
            path: path.to_path_buf(),
            data: Mutex::new(data),
        })
    }

    /// The file's path.
    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// What the file holds for `resolver` (nothing yet: empty).
    pub(crate) fn resolver(&self, resolver: &str) -> Result<ResolverData, StorageError> {
        let data = self
            .data
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let Some(Value::Object(entry)) = data.get(resolver) else {
            return Ok(ResolverData::default());
        };
        decode_resolver(&self.path.display().to_string(), resolver, entry)
    }

    /// Replaces `resolver`'s certificates and writes the file.
    pub(crate) fn save_certificates(
        &self,
        resolver: &str,
        certs: &[StoredCert],
    ) -> Result<(), StorageError> {
        let value = serde_json::to_value(certs).map_err(|e| self.corrupt(e.to_string()))?;
        self.update(resolver, "Certificates", value)
    }

    /// Stores this client's account for `resolver` and writes the file.
    pub(crate) fn save_account(
        &self,
        resolver: &str,
        account: &BridgeAccount,
    ) -> Result<(), StorageError> {
        let value = serde_json::to_value(account).map_err(|e| self.corrupt(e.to_string()))?;
        self.update(resolver, "BridgeAccount", value)
    }

    fn corrupt(&self, why: String) -> StorageError {
        StorageError::Corrupt {
            path: self.path.display().to_string(),
            why,
        }
    }

    fn update(&self, resolver: &str, key: &str, value: Value) -> Result<(), StorageError> {
        let mut data = self
            .data
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let mut next = data.clone();
        let entry = next
            .entry(resolver.to_owned())
            .or_insert_with(|| Value::Object(Map::new()));
        if !entry.is_object() {
            *entry = Value::Object(Map::new());
        }
        if let Value::Object(m) = entry {
            m.insert(key.to_owned(), value);
        }
        let text = serde_json::to_vec_pretty(&Value::Object(next.clone()))
            .map_err(|e| self.corrupt(e.to_string()))?;
        write_atomically(&self.path, &text).map_err(|source| StorageError::Io {
            path: self.path.display().to_string(),
            source,
        })?;
        *data = next;
        Ok(())
    }
}

fn parent(path: &Path) -> &Path {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    }
}

#[cfg(unix)]
fn check_mode(path: &str, meta: &std::fs::Metadata) -> Result<(), StorageError> {
    use std::os::unix::fs::PermissionsExt as _;
    let mode = meta.permissions().mode() & 0o777;
    if mode & 0o077 != 0 {
        return Err(StorageError::Mode {
            path: path.to_owned(),
            mode,
        });
    }
    Ok(())
}

#[cfg(not(unix))]
fn check_mode(_: &str, _: &std::fs::Metadata) -> Result<(), StorageError> {
    Ok(())
}

fn parse(path: &str, bytes: &[u8]) -> Result<Map<String, Value>, StorageError> {
    let corrupt = |why: String| StorageError::Corrupt {
        path: path.to_owned(),
        why,
    };
    // Traefik treats an empty file as no data.
    if bytes.iter().all(u8::is_ascii_whitespace) {
        return Ok(Map::new());
    }
    let value: Value = serde_json::from_slice(bytes).map_err(|e| corrupt(e.to_string()))?;
    let Value::Object(map) = value else {
        return Err(corrupt(
            "the top level is not an object keyed by resolver name".into(),
        ));
    };
    for (name, entry) in &map {
        match entry {
            Value::Null => {}
            Value::Object(m) => {
                decode_resolver(path, name, m)?;
            }
            _ => return Err(corrupt(format!("`{name}` is not an object"))),
        }
    }
    Ok(map)
}

fn decode_resolver(
    path: &str,
    name: &str,
    entry: &Map<String, Value>,
) -> Result<ResolverData, StorageError> {
    let corrupt = |why: String| StorageError::Corrupt {
        path: path.to_owned(),
        why: format!("`{name}`: {why}"),
    };
    let certificates = match entry.get("Certificates") {
        None | Some(Value::Null) => Vec::new(),
        Some(v) => Vec::<Option<StoredCert>>::deserialize(v)
            .map_err(|e| corrupt(format!("Certificates: {e}")))?
            .into_iter()
            .flatten()
            .collect(),
    };
    let account = match entry.get("BridgeAccount") {
        None | Some(Value::Null) => None,
        Some(v) => Some(
            BridgeAccount::deserialize(v).map_err(|e| corrupt(format!("BridgeAccount: {e}")))?,
        ),
    };
    let traefik_account = matches!(entry.get("Account"), Some(Value::Object(_)));
    Ok(ResolverData {
        traefik_account,
        account,
        certificates,
    })
}

/// Temporary file (0600) in the same directory, fsync, rename, fsync of the directory.
fn write_atomically(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = parent(path);
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "acme.json".into());
    let tmp = dir.join(format!(".{name}.tmp-{}", std::process::id()));
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        options.mode(0o600);
    }
    let result = (|| {
        let mut f = options.open(&tmp)?;
        #[cfg(unix)]
        {
            // An old temporary file may have other bits; the key material must not.
            use std::os::unix::fs::PermissionsExt as _;
            f.set_permissions(std::fs::Permissions::from_mode(0o600))?;
        }
        f.write_all(bytes)?;
        f.sync_all()?;
        drop(f);
        std::fs::rename(&tmp, path)?;
        if let Ok(d) = std::fs::File::open(dir) {
            let _ = d.sync_all();
        }
        Ok(())
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

/// Base64 of a PEM text as Traefik stores it, for tests and diagnostics.
#[cfg(test)]
pub(crate) fn go_base64(bytes: &[u8]) -> String {
    use base64::Engine as _;
    STANDARD.encode(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::PermissionsExt as _;

    /// The shape Traefik v3 writes (values shortened; `KeyType` from older versions).
    fn traefik_file() -> String {
        serde_json::json!({
            "le": {
                "Account": {
                    "Email": "ops@plant.example",
                    "Registration": {"body": {"status": "valid", "contact": ["mailto:ops@plant.example"]}, "uri": "https://acme.example/acct/1"},
                    "PrivateKey": "MIIJKQIBAAKCAgEA",
                    "KeyType": "4096"
                },
                "Certificates": [
                    {"domain": {"main": "hmi.plant.example", "sans": ["hmi2.plant.example"]},
                     "certificate": go_base64(b"-----BEGIN CERTIFICATE-----\n"),
                     "key": go_base64(b"-----BEGIN EC PRIVATE KEY-----\n"),
                     "Store": "default"},
                    {"domain": {"main": "api.plant.example"}, "certificate": go_base64(b"c"), "key": go_base64(b"k"), "Store": "default"}
                ]
            },
            "other": {"Account": null, "Certificates": null, "Future": 1}
        })
        .to_string()
    }

    fn write(dir: &Path, text: &str, mode: u32) -> PathBuf {
        let p = dir.join("acme.json");
        std::fs::write(&p, text).unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(mode)).unwrap();
        p
    }

    #[test]
    fn a_traefik_file_is_read_as_it_is() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), &traefik_file(), 0o600);
        let s = StorageFile::open(&p).unwrap();
        let le = s.resolver("le").unwrap();
        assert!(le.traefik_account);
        assert!(le.account.is_none());
        assert_eq!(le.certificates.len(), 2);
        assert_eq!(
            le.certificates[0].domain.names(),
            ["hmi.plant.example", "hmi2.plant.example"]
        );
        assert_eq!(
            le.certificates[0].certificate,
            b"-----BEGIN CERTIFICATE-----\n"
        );
        assert_eq!(le.certificates[1].domain.sans, Vec::<String>::new());
        let other = s.resolver("other").unwrap();
        assert!(!other.traefik_account && other.certificates.is_empty());
        assert!(s.resolver("absent").unwrap().certificates.is_empty());
    }

    #[test]
    fn writes_keep_what_others_wrote_and_are_private_and_whole() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), &traefik_file(), 0o600);
        let s = StorageFile::open(&p).unwrap();
        let cert = StoredCert {
            domain: StoredDomain {
                main: "new.plant.example".into(),
                sans: vec![],
            },
            certificate: b"chain".to_vec(),
            key: b"key".to_vec(),
            store: "default".into(),
        };
        s.save_certificates("le", std::slice::from_ref(&cert))
            .unwrap();
        s.save_account(
            "le",
            &BridgeAccount {
                email: "ops@plant.example".into(),
                credentials: serde_json::json!({"id": "https://acme.example/acct/2"}),
            },
        )
        .unwrap();
        let mode = std::fs::metadata(&p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600);
        let written: Value = serde_json::from_slice(&std::fs::read(&p).unwrap()).unwrap();
        // Traefik's account, the other resolver and its unknown key are untouched.
        assert_eq!(written["le"]["Account"]["PrivateKey"], "MIIJKQIBAAKCAgEA");
        assert_eq!(written["other"]["Future"], 1);
        // Go's field names and base64; no `sans` when empty (omitempty).
        let c = &written["le"]["Certificates"][0];
        assert_eq!(
            c["domain"],
            serde_json::json!({"main": "new.plant.example"})
        );
        assert_eq!(c["certificate"], go_base64(b"chain"));
        assert_eq!(c["Store"], "default");
        assert_eq!(written["le"]["BridgeAccount"]["Email"], "ops@plant.example");
        // No temporary file is left behind; a fresh reader sees the new state.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["acme.json"]);
        let again = StorageFile::open(&p).unwrap().resolver("le").unwrap();
        assert_eq!(again.certificates, vec![cert]);
        assert!(again.account.is_some());
    }

    #[test]
    fn a_missing_file_is_created_private_at_the_first_write() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("acme.json");
        let s = StorageFile::open(&p).unwrap();
        assert!(!p.exists());
        s.save_certificates("le", &[]).unwrap();
        assert_eq!(
            std::fs::metadata(&p).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let err = StorageFile::open(&dir.path().join("nodir/acme.json")).unwrap_err();
        assert!(err.to_string().contains("does not exist"), "{err}");
    }

    #[test]
    fn a_wide_mode_or_a_corrupt_file_is_refused_and_left_untouched() {
        let dir = tempfile::tempdir().unwrap();
        let p = write(dir.path(), &traefik_file(), 0o644);
        let err = StorageFile::open(&p).unwrap_err();
        assert!(
            matches!(err, StorageError::Mode { mode: 0o644, .. }),
            "{err}"
        );
        assert!(err.to_string().contains("chmod 600"), "{err}");
        for bad in [
            "{\"le\": ",
            "[]",
            "{\"le\": 3}",
            "{\"le\": {\"Certificates\": [{\"certificate\": \"not base64!\"}]}}",
        ] {
            let p = write(dir.path(), bad, 0o600);
            let err = StorageFile::open(&p).unwrap_err();
            assert!(matches!(err, StorageError::Corrupt { .. }), "{bad}: {err}");
            assert!(err.to_string().contains(&p.display().to_string()));
            assert_eq!(std::fs::read_to_string(&p).unwrap(), bad);
        }
        let p = write(dir.path(), "  \n", 0o600);
        assert!(
            StorageFile::open(&p)
                .unwrap()
                .resolver("le")
                .unwrap()
                .certificates
                .is_empty()
        );
    }
}
