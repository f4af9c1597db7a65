//! The `basicAuth` middleware: htpasswd-compatible user checks, as Traefik does them.
//!
//! Users come from the plan's inline `users` and from its `usersFile` (one `name:hash` per line;
//! lines are trimmed, blank lines and lines starting with `#` are skipped). Both lists are merged
//! and an inline user replaces a file user of the same name. Hashes are recognised as Traefik's
//! `go-http-auth` does: `{SHA}` + base64(SHA-1), bcrypt (`$2a$`, `$2b$`, `$2x$`, `$2y$`), and
//! MD5-crypt (`$apr1$` as written by Apache `htpasswd`, `$1$`). Traefik silently keeps entries
//! that can never match (plain-text passwords, `$6$` hashes, truncated hashes); this module
//! refuses them when the middleware is built, naming the entry, so a typo does not lock a user
//! out without a word.
//!
//! A failed check is answered with [`unauthorized`], byte for byte Traefik's 401.
//!
//! bcrypt is deliberately slow (cost 10 is about 75 ms of CPU), so bcrypt checks run on Tokio's
//! blocking pool, at most about half the CPUs at a time for the whole process, and successful
//! checks are remembered (see [`BasicAuth::verify`]). SHA-1 and MD5-crypt digests are compared
//! in constant time. Nothing here logs or keeps a password in clear.

use std::collections::hash_map::RandomState;
use std::collections::{HashMap, HashSet};
use std::hash::BuildHasher;
use std::sync::{Arc, Mutex, OnceLock};

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD as BASE64;
use bytes::Bytes;
use http::header::{self, HeaderValue};
use http::{Response, StatusCode};
use md5::{Digest as _, Md5};
use sha1::Sha1;
use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq;
use tokio::sync::Semaphore;

/// How many successful (user, password) checks are remembered per middleware. When full, the
/// whole cache is emptied and refilled by the next logins.
pub(crate) const CACHE_CAPACITY: usize = 1024;

/// bcrypt only reads the first 72 bytes of a password.
const BCRYPT_MAX_PASSWORD: usize = 72;

/// Costs `bcrypt::verify` accepts (the crate keeps its bounds private).
const BCRYPT_MIN_COST: u32 = 4;
const BCRYPT_MAX_COST: u32 = 31;

/// Body of the 401 answer (Go's `fmt.Sprintf("%d %s\n", 401, http.StatusText(401))`).
const UNAUTHORIZED_BODY: &str = "401 Unauthorized\n";

/// Why a `basicAuth` middleware cannot be built.
#[derive(Debug, thiserror::Error)]
pub enum AuthError {
    /// The users file cannot be read (missing, unreadable, not UTF-8).
    #[error("cannot read basicAuth users file {path}: {source}")]
    UsersFile {
        /// The path as written in the plan.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A user entry is malformed or its hash can never match.
    #[error("basicAuth user entry {origin}: {reason}")]
    BadEntry {
        /// `users[<index>]` for inline users, `<path>:<line>` for users-file lines.
        origin: String,
        /// What is wrong with it (never contains the hash).
        reason: String,
    },
    /// Neither `users` nor `usersFile` define any user (Traefik: `no users found`).
    #[error("basicAuth defines no users")]
    NoUsers,
}

/// The outcome of [`BasicAuth::verify`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Verdict {
    /// The credentials match. `user` is a configured user name, free of control characters,
    /// so it is always a valid header value (for `headerField`).
    Allowed {
        /// The authenticated user name.
        user: String,
    },
    /// Missing, malformed or wrong credentials: answer with [`unauthorized`].
    Denied,
}

/// A parsed password hash.
enum Secret {
    /// `{SHA}` + base64 of the SHA-1 digest.
    Sha1([u8; 20]),
    /// `$<magic>$<salt>$<22 chars>`; `full` is the whole entry, compared in constant time with
    /// the recomputed one (as go-http-auth does).
    Md5Crypt {
        magic: String,
        salt: String,
        full: String,
    },
    /// A bcrypt hash, already checked to parse with a usable cost.
    Bcrypt(Arc<str>),
}

/// A built `basicAuth` middleware: the users and their hashes, the challenge realm, what to do
/// with the request after success, and the cache of successful bcrypt checks.
pub(crate) struct BasicAuth {
    users: HashMap<String, Secret>,
    realm: String,
    header_field: Option<String>,
    /// `header_field` as a field name, parsed at load (`None` if it is not a valid name).
    header_name: Option<http::HeaderName>,
    remove_header: bool,
    cache: SuccessCache,
    /// Number of bcrypt computations started (tests check the cache with it).
    #[cfg(test)]
    bcrypt_runs: std::sync::atomic::AtomicUsize,
}

impl std::fmt::Debug for BasicAuth {
    /// Names the realm and counts users; never prints hashes.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BasicAuth")
            .field("users", &self.users.len())
            .field("realm", &self.realm)
            .field("header_field", &self.header_field)
            .field("remove_header", &self.remove_header)
            .finish_non_exhaustive()
    }
}

impl BasicAuth {
    /// Reads `users_file` (path as written in the plan, relative to the working directory) and
    /// merges the inline users over it (an inline user wins over a file user of the same name;
    /// within one list the last entry wins, as in Traefik).
    pub(crate) fn from_plan(cfg: &bridge_plan::BasicAuth) -> Result<Self, AuthError> {
        let mut users = HashMap::new();
        if let Some(path) = &cfg.users_file {
            let text = std::fs::read_to_string(path).map_err(|source| AuthError::UsersFile {
                path: path.clone(),
                source,
            })?;
            for (index, raw) in text.split('\n').enumerate() {
                let line = raw.trim();
                if line.is_empty() || line.starts_with('#') {
                    continue;
                }
                let (name, secret) = parse_entry(line)
                    .map_err(|reason| bad_entry(format!("{path}:{}", index + 1), reason))?;
                users.insert(name, secret);
            }
        }
        for (index, entry) in cfg.users.iter().enumerate() {
            let (name, secret) = parse_entry(entry)
                .map_err(|reason| bad_entry(format!("users[{index}]"), reason))?;
            users.insert(name, secret);
        }
        if users.is_empty() {
            return Err(AuthError::NoUsers);
        }
        Ok(Self {
            users,
            realm: cfg.realm.clone(),
            header_field: cfg.header_field.clone(),
            header_name: cfg
                .header_field
                .as_deref()
                .and_then(|f| http::HeaderName::from_bytes(f.as_bytes()).ok()),
            remove_header: cfg.remove_header,
            cache: SuccessCache::new(),
            #[cfg(test)]
            bcrypt_runs: std::sync::atomic::AtomicUsize::new(0),
        })
    }

    /// Verifies the `Authorization` header value (`None`: the header is missing).
    ///
    /// The value must be `Basic <base64(user:password)>`: the scheme is case-insensitive and
    /// followed by exactly one space, the base64 is standard with padding, the decoded text is
    /// UTF-8 and the user name ends at the first `:` (the password may contain `:`). Anything
    /// else, an unknown user or a wrong password is [`Verdict::Denied`].
    ///
    /// Successful bcrypt checks are cached by a keyed SHA-256 of (user, password) — the key is
    /// random per middleware, so the cache holds no plain, offline-testable password digests —
    /// and a repeated login costs no bcrypt run. Failures are never cached: a guesser sends a
    /// new password each time so a failure cache would not save work, and the bounded cache could
    /// then be flushed by anyone without credentials. bcrypt work is instead bounded by a
    /// process-wide limit of concurrent runs. Never logs credentials.
    pub(crate) async fn verify(&self, authorization: Option<&HeaderValue>) -> Verdict {
        let Some((user, password)) = authorization.and_then(parse_authorization) else {
            return Verdict::Denied;
        };
        let Some(secret) = self.users.get(&user) else {
            return Verdict::Denied;
        };
        let matches = match secret {
            Secret::Sha1(digest) => {
                let presented = Sha1::digest(password.as_bytes());
                bool::from(presented.as_slice().ct_eq(digest))
            }
            Secret::Md5Crypt { magic, salt, full } => {
                let computed = md5_crypt(password.as_bytes(), magic.as_bytes(), salt.as_bytes());
                bool::from(computed.as_slice().ct_eq(full.as_bytes()))
            }
            Secret::Bcrypt(hash) => self.verify_bcrypt(&user, password, hash).await,
        };
        if matches {
            Verdict::Allowed { user }
        } else {
            Verdict::Denied
        }
    }

    async fn verify_bcrypt(&self, user: &str, password: String, hash: &Arc<str>) -> bool {
        // bcrypt ignores bytes past 72, so the cache key does too: every password bcrypt accepts
        // for this user maps to one entry, and nobody can flush the cache by varying the tail.
        let significant = &password.as_bytes()[..password.len().min(BCRYPT_MAX_PASSWORD)];
        let key = self.cache.key(user, significant);
        if self.cache.contains(&key) {
            return true;
        }
        let Ok(permit) = bcrypt_slots().acquire_owned().await else {
            return false;
        };
        // Concurrent first requests of one client (a browser opening several connections) wait
        // here; the first one fills the cache for the others.
        if self.cache.contains(&key) {
            return true;
        }
        #[cfg(test)]
        self.bcrypt_runs
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let hash = Arc::clone(hash);
        // The permit travels through the blocking task: if the request is dropped meanwhile, the
        // slot stays taken until the computation really ends. It comes back so that it is
        // released only after the cache is filled, so no waiter can miss the fresh entry.
        let outcome = tokio::task::spawn_blocking(move || {
            let matches = bcrypt::verify(password.as_bytes(), &hash).unwrap_or(false);
            (matches, permit)
        })
        .await;
        let Ok((matches, permit)) = outcome else {
            return false;
        };
        if matches {
            self.cache.insert(key);
        }
        drop(permit);
        matches
    }

    /// The middleware's step in a chain: a request with valid credentials goes on (the user
    /// noted for the access log, put in `headerField`, `Authorization` removed with
    /// `removeHeader`); any other is answered 401 with the realm's challenge.
    pub(crate) async fn apply(&self, fields: &mut http::HeaderMap) -> super::Flow {
        match self.verify(fields.get(header::AUTHORIZATION)).await {
            Verdict::Allowed { user } => {
                if let Some(name) = &self.header_name
                    && let Ok(value) = HeaderValue::from_str(&user)
                {
                    fields.insert(name.clone(), value);
                }
                crate::observe::note(|s| s.user = Some(user));
                if self.remove_header {
                    fields.remove(header::AUTHORIZATION);
                }
                super::Flow::Continue
            }
            Verdict::Denied => {
                super::Flow::Respond(unauthorized(&self.realm).map(crate::body::full))
            }
        }
    }

    /// Realm of the `WWW-Authenticate` challenge.
    #[cfg(test)]
    pub(crate) fn realm(&self) -> &str {
        &self.realm
    }

    /// Request header that receives the authenticated user name, if any.
    #[cfg(test)]
    pub(crate) fn header_field(&self) -> Option<&str> {
        self.header_field.as_deref()
    }

    /// Whether the `Authorization` header is removed before forwarding.
    #[cfg(test)]
    pub(crate) fn remove_header(&self) -> bool {
        self.remove_header
    }

    #[cfg(test)]
    fn bcrypt_runs(&self) -> usize {
        self.bcrypt_runs.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The 401 answer exactly as Traefik sends it: `WWW-Authenticate: Basic realm="<realm>"`,
/// `Content-Type: text/plain`, body `401 Unauthorized\n`. The realm is not escaped (Traefik does
/// not escape it either); control characters, which no header may carry, are dropped.
pub(crate) fn unauthorized(realm: &str) -> Response<Bytes> {
    let mut response = Response::new(Bytes::from_static(UNAUTHORIZED_BODY.as_bytes()));
    *response.status_mut() = StatusCode::UNAUTHORIZED;
    let realm: String = realm
        .chars()
        .filter(|c| *c == '\t' || !c.is_ascii_control())
        .collect();
    let challenge = HeaderValue::from_str(&format!("Basic realm=\"{realm}\""))
        .unwrap_or_else(|_| HeaderValue::from_static("Basic realm=\"traefik\""));
    let headers = response.headers_mut();
    headers.insert(header::WWW_AUTHENTICATE, challenge);
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/plain"));
    headers.insert(
        header::CONTENT_LENGTH,
        HeaderValue::from(UNAUTHORIZED_BODY.len()),
    );
    response
}

fn bad_entry(origin: String, reason: String) -> AuthError {
    AuthError::BadEntry { origin, reason }
}

/// Splits `name:hash` (exactly one `:`, as Traefik's parser requires) and parses the hash.
fn parse_entry(entry: &str) -> Result<(String, Secret), String> {
    let mut parts = entry.split(':');
    let (Some(name), Some(hash), None) = (parts.next(), parts.next(), parts.next()) else {
        return Err("expected `name:hash` with exactly one `:`".to_owned());
    };
    if name.chars().any(|c| c.is_control()) {
        return Err("the user name contains a control character".to_owned());
    }
    Ok((name.to_owned(), parse_hash(hash)?))
}

/// Recognises the hash formats in go-http-auth's order: `{SHA}`, bcrypt, then MD5-crypt.
/// Messages never quote the hash.
fn parse_hash(hash: &str) -> Result<Secret, String> {
    if let Some(encoded) = hash.strip_prefix("{SHA}") {
        let digest = BASE64
            .decode(encoded)
            .ok()
            .and_then(|bytes| <[u8; 20]>::try_from(bytes).ok())
            .ok_or("`{SHA}` must be followed by the base64 of a 20-byte SHA-1 digest")?;
        return Ok(Secret::Sha1(digest));
    }
    if ["$2a$", "$2b$", "$2x$", "$2y$"]
        .iter()
        .any(|prefix| hash.starts_with(prefix))
    {
        let parts: bcrypt::HashParts = hash
            .parse()
            .map_err(|e| format!("malformed bcrypt hash ({e})"))?;
        let cost = parts.get_cost();
        if !(BCRYPT_MIN_COST..=BCRYPT_MAX_COST).contains(&cost) {
            return Err(format!(
                "bcrypt cost {cost} is outside {BCRYPT_MIN_COST}..={BCRYPT_MAX_COST}"
            ));
        }
        return Ok(Secret::Bcrypt(Arc::from(hash)));
    }
    if let Some(rest) = hash.strip_prefix('$') {
        let mut parts = rest.splitn(3, '$');
        if let (Some(magic), Some(salt), Some(digest)) = (parts.next(), parts.next(), parts.next())
            && (magic == "apr1" || magic == "1")
        {
            if digest.len() != 22 || !digest.bytes().all(|b| ITOA64.contains(&b)) {
                return Err(format!(
                    "malformed `${magic}$` MD5-crypt hash: expected 22 characters after the salt"
                ));
            }
            return Ok(Secret::Md5Crypt {
                magic: format!("${magic}$"),
                salt: salt.to_owned(),
                full: hash.to_owned(),
            });
        }
    }
    Err(
        "not a supported hash (bcrypt `$2y$`, MD5-crypt `$apr1$`/`$1$` or `{SHA}`); \
         plain-text passwords never match"
            .to_owned(),
    )
}

/// Parses `Basic <base64(user:password)>` (see [`BasicAuth::verify`]).
fn parse_authorization(value: &HeaderValue) -> Option<(String, String)> {
    const SCHEME: &[u8] = b"basic ";
    let bytes = value.as_bytes();
    let (scheme, encoded) = bytes.split_at_checked(SCHEME.len())?;
    if !scheme.eq_ignore_ascii_case(SCHEME) {
        return None;
    }
    let decoded = String::from_utf8(BASE64.decode(encoded).ok()?).ok()?;
    let (user, password) = decoded.split_once(':')?;
    Some((user.to_owned(), password.to_owned()))
}

/// At most this many bcrypt computations run at once in the process: half the CPUs, rounded up,
/// so that a flood of bcrypt logins cannot take all cores from proxying. Waiting checks queue
/// as tasks, not as blocking threads.
fn bcrypt_slots() -> Arc<Semaphore> {
    static SLOTS: OnceLock<Arc<Semaphore>> = OnceLock::new();
    Arc::clone(SLOTS.get_or_init(|| {
        let cpus = std::thread::available_parallelism().map_or(1, usize::from);
        Arc::new(Semaphore::new(cpus.div_ceil(2).max(1)))
    }))
}

/// Successful bcrypt checks, as keyed SHA-256 digests of (user, password).
struct SuccessCache {
    /// Random per cache, so digests cannot be tested offline against password lists.
    key: [u8; 16],
    entries: Mutex<HashSet<[u8; 32]>>,
}

impl SuccessCache {
    fn new() -> Self {
        // std's RandomState is seeded from the OS; two of its outputs make a 128-bit key.
        let state = RandomState::new();
        let mut key = [0u8; 16];
        for (chunk, word) in key
            .chunks_mut(8)
            .zip([state.hash_one(1u8), state.hash_one(2u8)])
        {
            chunk.copy_from_slice(&word.to_le_bytes());
        }
        Self {
            key,
            entries: Mutex::new(HashSet::new()),
        }
    }

    fn key(&self, user: &str, password: &[u8]) -> [u8; 32] {
        Sha256::new()
            .chain_update(self.key)
            .chain_update((user.len() as u64).to_le_bytes())
            .chain_update(user.as_bytes())
            .chain_update(password)
            .finalize()
            .into()
    }

    fn contains(&self, key: &[u8; 32]) -> bool {
        self.lock().contains(key)
    }

    fn insert(&self, key: [u8; 32]) {
        let mut entries = self.lock();
        if entries.len() >= CACHE_CAPACITY {
            entries.clear();
        }
        entries.insert(key);
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.lock().len()
    }

    /// A panic while holding the lock cannot leave the set inconsistent (a `HashSet` insert
    /// either happens or not), so a poisoned lock is simply taken over.
    fn lock(&self) -> std::sync::MutexGuard<'_, HashSet<[u8; 32]>> {
        self.entries
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The crypt(3) base64 alphabet.
const ITOA64: &[u8; 64] = b"./0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// MD5-crypt (`$1$`, Apache `$apr1$`: only the magic string differs), as go-http-auth's
/// `MD5Crypt`: returns `<magic><salt>$<22 chars>`. The salt is used whole, like go-http-auth.
fn md5_crypt(password: &[u8], magic: &[u8], salt: &[u8]) -> Vec<u8> {
    const FINAL_ORDER: [usize; 16] = [12, 6, 0, 13, 7, 1, 14, 8, 2, 15, 9, 3, 5, 10, 4, 11];

    let mixin = Md5::new()
        .chain_update(password)
        .chain_update(salt)
        .chain_update(password)
        .finalize();
    let mut d = Md5::new()
        .chain_update(password)
        .chain_update(magic)
        .chain_update(salt);
    for i in 0..password.len() {
        d.update([mixin[i % 16]]);
    }
    let first = password.first().copied().unwrap_or(0);
    let mut i = password.len();
    while i != 0 {
        d.update([if i & 1 == 0 { first } else { 0 }]);
        i >>= 1;
    }
    let mut digest = d.finalize();
    for round in 0..1000 {
        let mut d = Md5::new();
        if round & 1 == 0 {
            d.update(digest);
        } else {
            d.update(password);
        }
        if round % 3 != 0 {
            d.update(salt);
        }
        if round % 7 != 0 {
            d.update(password);
        }
        if round & 1 == 0 {
            d.update(password);
        } else {
            d.update(digest);
        }
        digest = d.finalize();
    }

    let mut out = Vec::with_capacity(magic.len() + salt.len() + 1 + 22);
    out.extend_from_slice(magic);
    out.extend_from_slice(salt);
    out.push(b'$');
    let mut value: u32 = 0;
    let mut bits = 0;
    for index in FINAL_ORDER {
        value |= u32::from(digest[index]) << bits;
        bits += 8;
        while bits > 6 {
            out.push(ITOA64[(value & 0x3f) as usize]);
            value >>= 6;
            bits -= 6;
        }
    }
    out.push(ITOA64[(value & 0x3f) as usize]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    const APR1_TEST: &str = "$apr1$H6uskkkW$IgXLP6ewTrSuBkTrqE8wj/"; // openssl passwd -apr1 -salt H6uskkkW test
    const MD5_TEST: &str = "$1$saltsalt$tTWg0JeO/sYmHvtKmZE8c."; // openssl passwd -1 -salt saltsalt test
    const SHA_TEST: &str = "{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M="; // "test"

    fn cfg(users: &[&str], users_file: Option<&str>) -> bridge_plan::BasicAuth {
        bridge_plan::BasicAuth {
            users: users.iter().map(|u| (*u).to_owned()).collect(),
            users_file: users_file.map(str::to_owned),
            realm: "traefik".to_owned(),
            header_field: None,
            remove_header: false,
        }
    }

    fn auth(users: &[&str]) -> BasicAuth {
        BasicAuth::from_plan(&cfg(users, None)).unwrap()
    }

    fn basic(user: &str, password: &str) -> HeaderValue {
        let encoded = BASE64.encode(format!("{user}:{password}"));
        HeaderValue::from_str(&format!("Basic {encoded}")).unwrap()
    }

    fn allowed(user: &str) -> Verdict {
        Verdict::Allowed {
            user: user.to_owned(),
        }
    }

    fn bad_entry_origin(result: Result<BasicAuth, AuthError>) -> String {
        match result {
            Err(AuthError::BadEntry { origin, .. }) => origin,
            other => panic!("expected BadEntry, got {other:?}"),
        }
    }

    fn users_file(text: &str) -> tempfile::NamedTempFile {
        let mut file = tempfile::NamedTempFile::new().unwrap();
        file.write_all(text.as_bytes()).unwrap();
        file
    }

    #[test]
    fn md5_crypt_matches_openssl() {
        assert_eq!(
            md5_crypt(b"test", b"$apr1$", b"H6uskkkW"),
            APR1_TEST.as_bytes()
        );
        assert_eq!(md5_crypt(b"test", b"$1$", b"saltsalt"), MD5_TEST.as_bytes());
        // Empty password: the bit loop never reads password[0].
        assert_eq!(md5_crypt(b"", b"$apr1$", b"x").len(), "$apr1$x$".len() + 22);
    }

    #[tokio::test]
    async fn apr1_and_md5_users() {
        let a = auth(&[&format!("alice:{APR1_TEST}"), &format!("bob:{MD5_TEST}")]);
        assert_eq!(
            a.verify(Some(&basic("alice", "test"))).await,
            allowed("alice")
        );
        assert_eq!(a.verify(Some(&basic("bob", "test"))).await, allowed("bob"));
        assert_eq!(
            a.verify(Some(&basic("alice", "Test"))).await,
            Verdict::Denied
        );
        assert_eq!(
            a.verify(Some(&basic("alice", "test "))).await,
            Verdict::Denied
        );
        assert_eq!(a.verify(Some(&basic("alice", ""))).await, Verdict::Denied);
        assert_eq!(a.bcrypt_runs(), 0);
    }

    #[tokio::test]
    async fn sha_user() {
        let a = auth(&[&format!("carol:{SHA_TEST}")]);
        assert_eq!(
            a.verify(Some(&basic("carol", "test"))).await,
            allowed("carol")
        );
        assert_eq!(
            a.verify(Some(&basic("carol", "test1"))).await,
            Verdict::Denied
        );
    }

    #[tokio::test]
    async fn bcrypt_users_all_prefixes() {
        let parts = bcrypt::hash_with_result("s3cret:with:colons", 4).unwrap();
        let hashes = [
            bcrypt::Version::TwoA,
            bcrypt::Version::TwoB,
            bcrypt::Version::TwoX,
            bcrypt::Version::TwoY,
        ]
        .map(|v| parts.format_for_version(v));
        let entries: Vec<String> = hashes
            .iter()
            .enumerate()
            .map(|(i, h)| format!("u{i}:{h}"))
            .collect();
        let entries: Vec<&str> = entries.iter().map(String::as_str).collect();
        let a = auth(&entries);
        for i in 0..4 {
            let user = format!("u{i}");
            assert_eq!(
                a.verify(Some(&basic(&user, "s3cret:with:colons"))).await,
                allowed(&user)
            );
            assert_eq!(
                a.verify(Some(&basic(&user, "s3cret"))).await,
                Verdict::Denied
            );
        }
    }

    #[tokio::test]
    async fn unknown_user_denied() {
        let a = auth(&[&format!("alice:{APR1_TEST}")]);
        assert_eq!(
            a.verify(Some(&basic("mallory", "test"))).await,
            Verdict::Denied
        );
        assert_eq!(
            a.verify(Some(&basic("Alice", "test"))).await,
            Verdict::Denied
        );
        assert_eq!(a.verify(Some(&basic("", "test"))).await, Verdict::Denied);
    }

    #[tokio::test]
    async fn missing_or_garbled_header_denied() {
        let a = auth(&[&format!("alice:{SHA_TEST}")]);
        let good = BASE64.encode("alice:test");
        assert_eq!(a.verify(None).await, Verdict::Denied);
        for value in [
            String::new(),
            "Basic".to_owned(),
            "Basic ".to_owned(),
            format!("Bearer {good}"),
            format!("Basic  {good}"),                        // two spaces
            format!("Basic {good} "),                        // trailing space
            format!("Basic {}", good.trim_end_matches('=')), // no padding
            "Basic !!!!".to_owned(),
            format!("Basic {}", BASE64.encode("alicetest")), // no colon
            format!("Basic {}", BASE64.encode(b"alice:te\xffst")), // not UTF-8
            format!("Digest {good}"),
        ] {
            let header = HeaderValue::from_str(&value).unwrap();
            assert_eq!(a.verify(Some(&header)).await, Verdict::Denied, "{value:?}");
        }
        // Scheme is case-insensitive.
        for scheme in ["basic", "BASIC", "bAsIc"] {
            let header = HeaderValue::from_str(&format!("{scheme} {good}")).unwrap();
            assert_eq!(a.verify(Some(&header)).await, allowed("alice"));
        }
        // Non-UTF-8 header bytes.
        let header = HeaderValue::from_bytes(b"Basic \xff\xfe").unwrap();
        assert_eq!(a.verify(Some(&header)).await, Verdict::Denied);
    }

    #[test]
    fn plain_text_and_unusable_entries_rejected_at_load() {
        for entry in [
            "admin:secret",
            "admin:",
            "admin",
            "admin:a:b",
            "admin:{SHA}notbase64!",
            "admin:{SHA}dGVzdA==", // valid base64, but not 20 bytes
            "admin:$6$salt$abcdefghijklmnopqrstuv",
            "admin:$apr1$H6uskkkW$short",
            "admin:$apr1$H6uskkkW",
            "admin:$2y$10$tooshort",
            "admin:$2y$03$aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", // cost 3
            "ad\u{7}min:{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=",
        ] {
            let result = BasicAuth::from_plan(&cfg(&[SHA_TEST_ENTRY, entry], None));
            assert_eq!(bad_entry_origin(result), "users[1]", "{entry:?}");
        }
        // The reason never echoes the hash.
        let err = BasicAuth::from_plan(&cfg(&["admin:hunter2"], None)).unwrap_err();
        assert!(!err.to_string().contains("hunter2"), "{err}");
        assert!(err.to_string().contains("plain-text"), "{err}");
    }

    const SHA_TEST_ENTRY: &str = "ok:{SHA}qUqP5cyxm6YcTAhz05Hph5gvu9M=";

    #[tokio::test]
    async fn users_file_with_comments_blank_lines_and_crlf() {
        let file = users_file(&format!(
            "# users\n\n   \nalice:{APR1_TEST}\r\n  # indented comment\n\tbob:{SHA_TEST}  \n\n"
        ));
        let path = file.path().to_str().unwrap();
        let a = BasicAuth::from_plan(&cfg(&[], Some(path))).unwrap();
        assert_eq!(a.users.len(), 2);
        assert_eq!(
            a.verify(Some(&basic("alice", "test"))).await,
            allowed("alice")
        );
        assert_eq!(a.verify(Some(&basic("bob", "test"))).await, allowed("bob"));
        assert_eq!(
            a.verify(Some(&basic("# users", "test"))).await,
            Verdict::Denied
        );
    }

    #[test]
    fn users_file_errors_name_path_and_line() {
        let file = users_file(&format!("# c\nalice:{APR1_TEST}\n\nbob:plaintext\n"));
        let path = file.path().to_str().unwrap();
        let origin = bad_entry_origin(BasicAuth::from_plan(&cfg(&[], Some(path))));
        assert_eq!(origin, format!("{path}:4"));

        let missing = file.path().with_extension("missing");
        let missing = missing.to_str().unwrap();
        match BasicAuth::from_plan(&cfg(&[SHA_TEST_ENTRY], Some(missing))) {
            Err(AuthError::UsersFile { path, .. }) => assert_eq!(path, missing),
            other => panic!("expected UsersFile, got {other:?}"),
        }
    }

    #[test]
    fn no_users() {
        assert!(matches!(
            BasicAuth::from_plan(&cfg(&[], None)),
            Err(AuthError::NoUsers)
        ));
        let file = users_file("# nobody\n\n");
        let path = file.path().to_str().unwrap();
        assert!(matches!(
            BasicAuth::from_plan(&cfg(&[], Some(path))),
            Err(AuthError::NoUsers)
        ));
    }

    #[tokio::test]
    async fn inline_user_overrides_file_user() {
        // In the file alice's password is "test"; inline, it is "inline".
        let inline = bcrypt::hash("inline", 4).unwrap();
        let file = users_file(&format!("alice:{APR1_TEST}\nbob:{SHA_TEST}\n"));
        let path = file.path().to_str().unwrap();
        let a = BasicAuth::from_plan(&cfg(&[&format!("alice:{inline}")], Some(path))).unwrap();
        assert_eq!(
            a.verify(Some(&basic("alice", "inline"))).await,
            allowed("alice")
        );
        assert_eq!(
            a.verify(Some(&basic("alice", "test"))).await,
            Verdict::Denied
        );
        assert_eq!(a.verify(Some(&basic("bob", "test"))).await, allowed("bob"));
        // Within one list, the last entry wins.
        let a = auth(&[&format!("carol:{SHA_TEST}"), &format!("carol:{APR1_TEST}")]);
        assert!(matches!(
            a.users.get("carol"),
            Some(Secret::Md5Crypt { .. })
        ));
    }

    #[test]
    fn unauthorized_response_shape() {
        let response = unauthorized("my realm");
        assert_eq!(response.status(), StatusCode::UNAUTHORIZED);
        assert_eq!(response.headers().len(), 3);
        assert_eq!(response.headers()[header::CONTENT_LENGTH], "17");
        assert_eq!(
            response.headers()[header::WWW_AUTHENTICATE],
            "Basic realm=\"my realm\""
        );
        assert_eq!(response.headers()[header::CONTENT_TYPE], "text/plain");
        assert_eq!(response.body().as_ref(), b"401 Unauthorized\n");
        // Control characters cannot reach the header.
        let response = unauthorized("a\r\nSet-Cookie: x");
        assert_eq!(
            response.headers()[header::WWW_AUTHENTICATE],
            "Basic realm=\"aSet-Cookie: x\""
        );
    }

    #[test]
    fn accessors() {
        let mut c = cfg(&[SHA_TEST_ENTRY], None);
        c.realm = "intranet".to_owned();
        c.header_field = Some("X-User".to_owned());
        c.remove_header = true;
        let a = BasicAuth::from_plan(&c).unwrap();
        assert_eq!(a.realm(), "intranet");
        assert_eq!(a.header_field(), Some("X-User"));
        assert!(a.remove_header());
        let debug = format!("{a:?}");
        assert!(!debug.contains("qUqP5"), "{debug}");
    }

    #[tokio::test]
    async fn successful_bcrypt_checks_are_cached_failures_are_not() {
        let hash = bcrypt::hash("pw", 4).unwrap();
        let a = auth(&[&format!("dave:{hash}"), &format!("erin:{hash}")]);
        assert_eq!(a.verify(Some(&basic("dave", "pw"))).await, allowed("dave"));
        assert_eq!(a.bcrypt_runs(), 1);
        assert_eq!(a.verify(Some(&basic("dave", "pw"))).await, allowed("dave"));
        assert_eq!(a.bcrypt_runs(), 1, "second login must come from the cache");

        // Another user with the same password is a separate entry.
        assert_eq!(a.verify(Some(&basic("erin", "pw"))).await, allowed("erin"));
        assert_eq!(a.bcrypt_runs(), 2);

        // Failures run bcrypt every time and are not remembered.
        assert_eq!(
            a.verify(Some(&basic("dave", "nope"))).await,
            Verdict::Denied
        );
        assert_eq!(
            a.verify(Some(&basic("dave", "nope"))).await,
            Verdict::Denied
        );
        assert_eq!(a.bcrypt_runs(), 4);
        assert_eq!(a.cache.len(), 2);
    }

    #[tokio::test]
    async fn bcrypt_cache_key_ignores_bytes_bcrypt_ignores() {
        let long = "x".repeat(72);
        let hash = bcrypt::hash(&long, 4).unwrap();
        let a = auth(&[&format!("frank:{hash}")]);
        assert_eq!(
            a.verify(Some(&basic("frank", &long))).await,
            allowed("frank")
        );
        // bcrypt accepts any tail past 72 bytes; all of them share the one cache entry.
        for tail in ["a", "bb", "ccc"] {
            let pw = format!("{long}{tail}");
            assert_eq!(a.verify(Some(&basic("frank", &pw))).await, allowed("frank"));
        }
        assert_eq!(a.bcrypt_runs(), 1);
        assert_eq!(a.cache.len(), 1);
    }

    #[test]
    fn cache_is_bounded() {
        let cache = SuccessCache::new();
        for i in 0..CACHE_CAPACITY {
            cache.insert(cache.key("u", i.to_string().as_bytes()));
        }
        assert_eq!(cache.len(), CACHE_CAPACITY);
        let newest = cache.key("u", b"newest");
        cache.insert(newest);
        assert_eq!(cache.len(), 1);
        assert!(cache.contains(&newest));
        // Keys differ per cache and per (user, password) split.
        assert_ne!(SuccessCache::new().key("u", b"p"), cache.key("u", b"p"));
        assert_ne!(cache.key("ab", b"c"), cache.key("a", b"bc"));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_first_logins_share_bcrypt_runs() {
        let hash = bcrypt::hash("pw", 4).unwrap();
        let a = Arc::new(auth(&[&format!("gina:{hash}")]));
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let a = Arc::clone(&a);
                tokio::spawn(async move { a.verify(Some(&basic("gina", "pw"))).await })
            })
            .collect();
        for task in tasks {
            assert_eq!(task.await.unwrap(), allowed("gina"));
        }
        // Only checks that got a bcrypt slot at the same time can miss the cache together.
        let slots = std::thread::available_parallelism()
            .map_or(1, usize::from)
            .div_ceil(2);
        assert!(a.bcrypt_runs() <= slots, "{} runs", a.bcrypt_runs());
    }
}
