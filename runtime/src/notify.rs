//! Service-manager integration: `sd_notify` readiness and state messages, and listening sockets
//! passed by socket activation (`LISTEN_FDS` / `LISTEN_FDNAMES`).
//!
//! Everything here is a no-op when the process was not started by a service manager: without
//! `NOTIFY_SOCKET` no message is sent (containers, tests, a shell), without `LISTEN_FDS` every entry
//! point binds its own address. A failure to notify is logged and never stops serving.

use std::collections::HashMap;
use std::sync::Mutex;

/// Readiness: every listener is bound and the first health probe round is done.
pub fn ready(hash: &str) {
    send(&[
        sd_notify::NotifyState::Ready,
        sd_notify::NotifyState::Status(&format!("serving plan {hash}")),
    ]);
}

/// A SIGHUP reload started. `MONOTONIC_USEC` lets `Type=notify-reload` (systemd 253+) match the
/// reload to its request; older managers ignore it.
pub fn reloading() {
    let mut states = vec![sd_notify::NotifyState::Reloading];
    if let Ok(now) = sd_notify::NotifyState::monotonic_usec_now() {
        states.push(now);
    }
    send(&states);
}

/// A reload finished (or was rejected): ready again, with the plan being served as status.
pub fn reloaded(hash: &str, rejected: Option<&str>) {
    let status = match rejected {
        None => format!("serving plan {hash}"),
        Some(why) => format!("serving plan {hash}; reload rejected: {why}"),
    };
    send(&[
        sd_notify::NotifyState::Ready,
        sd_notify::NotifyState::Status(&status),
    ]);
}

/// SIGTERM (or Ctrl-C): draining before exit.
pub fn stopping() {
    send(&[
        sd_notify::NotifyState::Stopping,
        sd_notify::NotifyState::Status("draining in-flight requests"),
    ]);
}

fn send(states: &[sd_notify::NotifyState<'_>]) {
    if let Err(e) = sd_notify::notify(states) {
        tracing::warn!("cannot notify the service manager: {e}");
    }
}

/// Listening sockets handed over by the service manager, by `FileDescriptorName=`.
static ACTIVATED: Mutex<Option<HashMap<String, std::net::TcpListener>>> = Mutex::new(None);

/// Why socket activation could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ActivationError {
    /// A passed descriptor is not a listening TCP socket.
    #[error("socket activation: descriptor {index} (`{name}`) is not a TCP listener: {source}")]
    NotTcp {
        /// Position among the passed descriptors.
        index: usize,
        /// Its `LISTEN_FDNAMES` entry.
        name: String,
        /// Why.
        source: std::io::Error,
    },
    /// Two descriptors carry the same name.
    #[error("socket activation: two descriptors are named `{0}`")]
    Duplicate(String),
    /// Activated sockets whose names are not entry points of the plan.
    #[error("socket activation: no entry point named {names} in the plan (it has {known})")]
    Unmatched {
        /// The unmatched socket names.
        names: String,
        /// The plan's entry points.
        known: String,
    },
    /// `LISTEN_FDNAMES` does not give one name per descriptor.
    #[error(
        "socket activation: {fds} descriptors but {names} names in LISTEN_FDNAMES (name each socket with FileDescriptorName=<entry point>)"
    )]
    Names {
        /// Passed descriptors.
        fds: usize,
        /// Names given.
        names: usize,
    },
}

/// Takes the listening sockets passed by socket activation, named by `LISTEN_FDNAMES` (systemd's
/// `FileDescriptorName=`, which must be the entry point's name). Returns how many were taken.
///
/// Call this once from `main` before any other thread exists: reading the descriptors removes
/// `LISTEN_PID` and `LISTEN_FDS` from the environment so children do not inherit them.
pub fn take_activated_listeners() -> Result<usize, ActivationError> {
    let names: Vec<String> = std::env::var("LISTEN_FDNAMES")
        .map(|v| v.split(':').map(str::to_owned).collect())
        .unwrap_or_default();
    let mut fds = listenfd::ListenFd::from_env();
    let count = fds.len();
    if count == 0 {
        return Ok(0);
    }
    if names.len() != count {
        return Err(ActivationError::Names {
            fds: count,
            names: names.len(),
        });
    }
    let mut taken = HashMap::new();
    for (index, name) in names.into_iter().enumerate() {
        let listener = match fds.take_tcp_listener(index) {
            Ok(Some(l)) => l,
            Ok(None) => continue,
            Err(source) => {
                return Err(ActivationError::NotTcp {
                    index,
                    name,
                    source,
                });
            }
        };
        if taken.insert(name.clone(), listener).is_some() {
            return Err(ActivationError::Duplicate(name));
        }
    }
    let n = taken.len();
    if let Ok(mut slot) = ACTIVATED.lock() {
        *slot = Some(taken);
    }
    Ok(n)
}

/// The activated listener for entry point `name`, if the service manager passed one. Each is
/// handed out once.
pub fn activated_listener(name: &str) -> Option<std::net::TcpListener> {
    ACTIVATED.lock().ok()?.as_mut()?.remove(name)
}

/// Refuses activated sockets whose name is not an entry point of the plan (a `.socket` unit that
/// does not match the plan would otherwise hold the port while the entry point fails to bind it).
pub fn check_activated<'a>(
    entrypoints: impl IntoIterator<Item = &'a str>,
) -> Result<(), ActivationError> {
    let known: Vec<&str> = entrypoints.into_iter().collect();
    let mut unknown: Vec<String> = ACTIVATED
        .lock()
        .ok()
        .and_then(|s| {
            s.as_ref().map(|m| {
                m.keys()
                    .filter(|k| !known.contains(&k.as_str()))
                    .cloned()
                    .collect()
            })
        })
        .unwrap_or_default();
    if unknown.is_empty() {
        return Ok(());
    }
    unknown.sort();
    Err(ActivationError::Unmatched {
        names: unknown.join(", "),
        known: known.join(", "),
    })
}
