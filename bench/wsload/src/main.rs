//! wsload: idle WebSocket tunnels through a proxy, the backend and the load generator of
//! bench/tunnels.sh. Everything it opens or listens on is 127.0.0.1.
//!
//!   wsload backend PORT
//!       Listens on 127.0.0.1:PORT. A request that asks for `Upgrade: websocket` gets a 101 and
//!       then every byte echoed back (a raw tunnel, like a WebSocket echo); any other request
//!       gets `200 ok` and a close. Runs until killed.
//!
//!   wsload clients PROXY_PORT N HOLD_FILE ACTIVE SECONDS
//!       Opens N upgraded connections through 127.0.0.1:PROXY_PORT (at most 200 opening at a
//!       time) and prints "ready OPEN failed FAILED". Waits until HOLD_FILE exists (at most
//!       600 s; the script measures the proxy's memory meanwhile), then for SECONDS every one of
//!       ACTIVE tunnels writes 32 bytes and reads the 32 back, again and again, all tunnels at
//!       once, and prints "msgs M rate R" (round trips, and round trips per second). Then it
//!       closes everything. Every wait is bounded; a tunnel that fails is counted, not fatal.
//!
//! One thread (a current-thread runtime) per role, so that a pinned run gives the load one core.

use std::io;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpSocket, TcpStream};
use tokio::task::JoinSet;
use tokio::time::{sleep, timeout, timeout_at};

const UPGRADE: &[u8] = b"GET /_blazor HTTP/1.1\r\nHost: bench.local\r\nConnection: Upgrade\r\n\
Upgrade: websocket\r\nSec-WebSocket-Version: 13\r\n\
Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n\r\n";
// Carries the Sec-WebSocket-Accept of the fixed key above (RFC 6455 §1.3): HAProxy does not pass
// on a 101 without it.
const SWITCH: &[u8] = b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\
Connection: Upgrade\r\nSec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n\r\n";
const PLAIN: &[u8] = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";

/// A head larger than this is refused rather than buffered without end.
const MAX_HEAD: usize = 64 * 1024;
/// Limit for the connect, and again for the upgrade exchange, of one tunnel.
const OPEN_WAIT: Duration = Duration::from_secs(10);
/// Tunnels being opened at once: enough to keep the proxy's accept loop busy, few enough that
/// its listen queue does not overflow.
const OPENING_AT_ONCE: usize = 200;
const HOLD_WAIT: Duration = Duration::from_secs(600);
/// How long a round trip may still hang once the measured time is over.
const STALL_WAIT: Duration = Duration::from_secs(10);
const MSG: [u8; 32] = [b'x'; 32];

const USAGE: &str = "usage: wsload backend PORT\n       \
                     wsload clients PROXY_PORT N HOLD_FILE ACTIVE SECONDS";

#[tokio::main(flavor = "current_thread")]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let run = match args[..] {
        ["backend", port] => match port.parse() {
            Ok(port) => backend(port).await,
            Err(_) => return usage(),
        },
        ["clients", port, n, hold, active, seconds] => {
            match (
                port.parse(),
                n.parse(),
                active.parse(),
                seconds.parse::<f64>(),
            ) {
                (Ok(port), Ok(n), Ok(active), Ok(s)) if s.is_finite() && s >= 0.0 => {
                    clients(port, n, Path::new(hold), active, Duration::from_secs_f64(s)).await
                }
                _ => return usage(),
            }
        }
        _ => return usage(),
    };
    match run {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("wsload: {e}");
            ExitCode::FAILURE
        }
    }
}

fn usage() -> ExitCode {
    eprintln!("{USAGE}");
    ExitCode::FAILURE
}

/// Reads until the blank line that ends an HTTP head. Returns what was read and where the head
/// ends; bytes after that end already belong to the tunnel.
async fn read_head(s: &mut TcpStream) -> io::Result<(Vec<u8>, usize)> {
    let mut buf = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    loop {
        let n = s.read(&mut chunk).await?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        // Only the new bytes and the three before them can complete the terminator.
        let from = buf.len().saturating_sub(3);
        buf.extend_from_slice(&chunk[..n]);
        if let Some(i) = buf[from..].windows(4).position(|w| w == b"\r\n\r\n") {
            return Ok((buf, from + i + 4));
        }
        if buf.len() > MAX_HEAD {
            return Err(io::Error::new(io::ErrorKind::InvalidData, "head too large"));
        }
    }
}

async fn backend(port: u16) -> io::Result<()> {
    let socket = TcpSocket::new_v4()?;
    socket.set_reuseaddr(true)?;
    socket.bind(([127, 0, 0, 1], port).into())?;
    // tokio's own bind takes a backlog of 1024; a proxy opening many upstream connections in a
    // burst would see refusals that are the backend's, not its own.
    let listener = socket.listen(4096)?;
    loop {
        match listener.accept().await {
            Ok((s, _)) => {
                tokio::spawn(async move {
                    // A dropped or broken connection ends only its own task.
                    let _ = echo(s).await;
                });
            }
            // Out of descriptors, typically: let connections close instead of spinning.
            Err(_) => sleep(Duration::from_millis(10)).await,
        }
    }
}

async fn echo(mut s: TcpStream) -> io::Result<()> {
    // Small writes must leave at once: the round trips are the measurement.
    s.set_nodelay(true)?;
    let (head, end) = read_head(&mut s).await?;
    let wants_upgrade = head[..end]
        .windows(18)
        .any(|w| w.eq_ignore_ascii_case(b"upgrade: websocket"));
    if !wants_upgrade {
        return s.write_all(PLAIN).await;
    }
    s.write_all(SWITCH).await?;
    if end < head.len() {
        s.write_all(&head[end..]).await?;
    }
    drop(head);
    // Messages are 32 bytes; a small buffer keeps 10,000 idle tunnels cheap here too.
    let mut buf = vec![0u8; 4096];
    loop {
        let n = s.read(&mut buf).await?;
        if n == 0 {
            return Ok(());
        }
        s.write_all(&buf[..n]).await?;
    }
}

async fn open_tunnel(port: u16) -> io::Result<TcpStream> {
    let mut s = timeout(OPEN_WAIT, TcpStream::connect(("127.0.0.1", port))).await??;
    s.set_nodelay(true)?;
    let (head, end) = timeout(OPEN_WAIT, async {
        s.write_all(UPGRADE).await?;
        read_head(&mut s).await
    })
    .await??;
    if !head.starts_with(b"HTTP/1.1 101") {
        let line = head.split(|&b| b == b'\r').next().unwrap_or_default();
        let line = String::from_utf8_lossy(line);
        return Err(io::Error::other(format!("answered {line:?}")));
    }
    // The echo backend speaks only when spoken to; anything here would put the 32-byte
    // exchanges out of step.
    if end != head.len() {
        return Err(io::Error::other("bytes after the 101 before any message"));
    }
    Ok(s)
}

async fn clients(
    port: u16,
    n: usize,
    hold: &Path,
    active: usize,
    seconds: Duration,
) -> io::Result<()> {
    let mut tunnels = Vec::with_capacity(n);
    let mut failed = 0usize;
    let mut first_error = None;
    let mut opening = JoinSet::new();
    let mut started = 0usize;
    while started < n || !opening.is_empty() {
        if started < n && opening.len() < OPENING_AT_ONCE {
            opening.spawn(open_tunnel(port));
            started += 1;
            continue;
        }
        match opening.join_next().await {
            Some(Ok(Ok(s))) => tunnels.push(s),
            Some(Ok(Err(e))) => {
                failed += 1;
                first_error.get_or_insert(e);
            }
            Some(Err(_)) => failed += 1,
            None => {}
        }
    }
    if let Some(e) = first_error {
        eprintln!("first failure: {e}");
    }
    println!("ready {} failed {failed}", tunnels.len());

    let deadline = Instant::now() + HOLD_WAIT;
    while !hold.exists() && Instant::now() < deadline {
        sleep(Duration::from_millis(50)).await;
    }

    // Every active tunnel is its own task, so ACTIVE round trips are in flight at once and the
    // one thread here only ever waits when all of them wait on the proxy.
    let t0 = Instant::now();
    let stop = t0 + seconds;
    let mut pinging = JoinSet::new();
    let active = active.min(tunnels.len());
    for s in tunnels.drain(..active) {
        pinging.spawn(ping_pong(s, stop));
    }
    let mut msgs = 0u64;
    while let Some(done) = pinging.join_next().await {
        if let Ok((count, s)) = done {
            msgs += count;
            tunnels.push(s);
        }
    }
    let took = t0.elapsed().as_secs_f64();
    let rate = if took > 0.0 { msgs as f64 / took } else { 0.0 };
    println!("msgs {msgs} rate {rate:.0}");
    drop(tunnels);
    Ok(())
}

/// Round trips on one tunnel until `stop`; returns how many completed. A failure ends the
/// tunnel's part, and one deadline for the whole loop (rather than a timer per round trip, which
/// would cost the load generator more than the exchange) bounds a hanging one.
async fn ping_pong(mut s: TcpStream, stop: Instant) -> (u64, TcpStream) {
    let mut count = 0u64;
    let rounds = async {
        let mut back = [0u8; MSG.len()];
        while Instant::now() < stop {
            s.write_all(&MSG).await?;
            s.read_exact(&mut back).await?;
            count += 1;
        }
        Ok::<(), io::Error>(())
    };
    let _ = timeout_at((stop + STALL_WAIT).into(), rounds).await;
    (count, s)
}
