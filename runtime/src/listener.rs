//! Listening sockets and the process's file-descriptor budget.
//!
//! A burst of connections must find room in the accept queue: tokio binds with a fixed backlog,
//! so listeners are made here with the largest one the kernel allows (`net.core.somaxconn`
//! caps it), as HAProxy sizes its own. The descriptor limit is raised to the hard limit at start
//! (a proxy holds two descriptors per proxied connection). When descriptors run out anyway,
//! `accept` fails with `EMFILE`/`ENFILE` while the connection stays queued, so retrying at once
//! spins; [`exhausted`] tells the accept loop to pause instead.

use std::net::SocketAddr;

/// Backlog asked for; the kernel silently lowers it to `net.core.somaxconn`.
const BACKLOG: i32 = 65_535;

/// The backlog the kernel grants a listener (`min(BACKLOG, somaxconn)`), for the startup log.
pub fn effective_backlog() -> u32 {
    let somaxconn = std::fs::read_to_string("/proc/sys/net/core/somaxconn")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok());
    somaxconn.map_or(BACKLOG.unsigned_abs(), |m| m.min(BACKLOG.unsigned_abs()))
}

/// A non-blocking listener on `addr` with `SO_REUSEADDR` (as tokio sets it) and the large backlog.
pub fn bind(addr: SocketAddr) -> std::io::Result<tokio::net::TcpListener> {
    use socket2::{Domain, Protocol, Socket, Type};
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    socket.set_reuse_address(true)?;
    socket.set_nonblocking(true)?;
    socket.bind(&addr.into())?;
    socket.listen(BACKLOG)?;
    tokio::net::TcpListener::from_std(socket.into())
}

/// Raises the soft `RLIMIT_NOFILE` to the hard limit; returns the limit in force afterwards
/// (`None`: unlimited or unknown).
pub fn raise_nofile() -> Option<u64> {
    use rustix::process::{Resource, getrlimit, setrlimit};
    let mut limit = getrlimit(Resource::Nofile);
    if limit.current != limit.maximum {
        limit.current = limit.maximum;
        if setrlimit(Resource::Nofile, limit).is_err() {
            return getrlimit(Resource::Nofile).current;
        }
    }
    limit.current
}

/// True when `accept` failed for lack of descriptors or memory: the pending connection stays
/// queued, so the loop must wait for resources instead of retrying at once.
pub fn exhausted(e: &std::io::Error) -> bool {
    use rustix::io::Errno;
    e.raw_os_error().is_some_and(|code| {
        let errno = Errno::from_raw_os_error(code);
        errno == Errno::MFILE
            || errno == Errno::NFILE
            || errno == Errno::NOBUFS
            || errno == Errno::NOMEM
    })
}

/// How long the accept loop pauses after [`exhausted`]: long enough not to spin, short enough
/// that accepting resumes soon after descriptors free up.
pub const EXHAUSTED_PAUSE: std::time::Duration = std::time::Duration::from_millis(100);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn descriptor_exhaustion_is_recognised() {
        assert!(exhausted(&std::io::Error::from_raw_os_error(24))); // EMFILE
        assert!(exhausted(&std::io::Error::from_raw_os_error(23))); // ENFILE
        assert!(!exhausted(&std::io::Error::from_raw_os_error(103))); // ECONNABORTED
        assert!(!exhausted(&std::io::Error::other("x")));
    }

    #[tokio::test]
    async fn a_listener_accepts_and_the_limit_is_raised() {
        let l = bind("127.0.0.1:0".parse().unwrap()).unwrap();
        let addr = l.local_addr().unwrap();
        let c = tokio::net::TcpStream::connect(addr).await.unwrap();
        let (s, peer) = l.accept().await.unwrap();
        assert_eq!(peer, c.local_addr().unwrap());
        drop(s);
        let limit = raise_nofile();
        let hard = rustix::process::getrlimit(rustix::process::Resource::Nofile).maximum;
        assert_eq!(limit, hard);
        assert!(effective_backlog() >= 128);
    }
}
