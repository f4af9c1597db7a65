//! `compress` (and `contentType`, whose sniffing it interacts with) through bridge-runtime and
//! Traefik: the same answers (with and without a length, typed, untyped, encoded already, ranged,
//! bodiless) asked for with the same `Accept-Encoding` lines under four configurations; the coding chosen, `Vary`, the fields each handler removes
//! and the *decoded* body must agree (the encoded bytes of two encoders never do). Then what
//! only bridge-runtime is measured on: an answer without length streams chunk by chunk, and a
//! 100 MB answer goes through in flat memory.

use std::io::{BufRead as _, BufReader, Read as _, Write as _};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::time::{Duration, Instant};

use bridge_tests::traefik::{Answer, Twin, fetch, oracle, serve_twice};

/// A text body that compresses (and that a decoder would notice being cut or reordered).
fn text(n: usize) -> Vec<u8> {
    (0..n)
        .map(|i| b"the quick brown fox jumps over the lazy dog\n"[i % 44] ^ u8::from(i % 97 == 0))
        .collect()
}

/// An upstream of raw answers chosen by the last path segment, so that the framing (length,
/// chunked, pieces over time) is exactly as written: `Connection: close` on each.
struct Upstream {
    addr: SocketAddr,
}

fn upstream() -> Upstream {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = l.local_addr().unwrap();
    std::thread::spawn(move || {
        for s in l.incoming().flatten() {
            std::thread::spawn(move || serve(s));
        }
    });
    Upstream { addr }
}

fn serve(s: TcpStream) {
    let mut r = BufReader::new(s.try_clone().unwrap());
    let mut line = String::new();
    if r.read_line(&mut line).unwrap_or(0) == 0 {
        return;
    }
    let target = line.split_whitespace().nth(1).unwrap_or("/").to_owned();
    loop {
        let mut l = String::new();
        if r.read_line(&mut l).unwrap_or(0) == 0 || l == "\r\n" {
            break;
        }
    }
    let name = target.rsplit('/').next().unwrap_or_default().to_owned();
    let mut s = s;
    let length = |fields: &str, body: &[u8], status: &str| {
        let mut out = format!(
            "HTTP/1.1 {status}\r\n{fields}Content-Length: {}\r\nConnection: close\r\n\r\n",
            body.len()
        )
        .into_bytes();
        out.extend_from_slice(body);
        out
    };
    let chunked = |fields: &str, pieces: &[&[u8]]| {
        let mut out = format!(
            "HTTP/1.1 200 OK\r\n{fields}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
        )
        .into_bytes();
        for p in pieces {
            out.extend_from_slice(format!("{:x}\r\n", p.len()).as_bytes());
            out.extend_from_slice(p);
            out.extend_from_slice(b"\r\n");
        }
        out.extend_from_slice(b"0\r\n\r\n");
        out
    };
    const PLAIN: &str = "Content-Type: text/plain\r\n";
    let answer = match name.as_str() {
        "small" => length(PLAIN, &text(1023), "200 OK"),
        "exact" => length(PLAIN, &text(1024), "200 OK"),
        "big" => length(
            "Content-Type: text/plain\r\nETag: \"v1\"\r\nAccept-Ranges: bytes\r\n",
            &text(20_000),
            "200 OK",
        ),
        "tiny-chunked" => chunked(PLAIN, &[b"hello"]),
        "chunked" => chunked(PLAIN, &[&text(700), &text(700), &text(700)]),
        "html" => length(
            "Content-Type: text/html; charset=utf-8\r\n",
            &text(3000),
            "200 OK",
        ),
        "json" => length("Content-Type: application/json\r\n", &text(3000), "200 OK"),
        "grpc" => length("Content-Type: application/grpc\r\n", &text(3000), "200 OK"),
        "untyped-html" => {
            let mut b = b"<html><body>".to_vec();
            b.extend_from_slice(&text(3000));
            length("", &b, "200 OK")
        }
        "untyped" => length("", &text(3000), "200 OK"),
        "untyped-small" => length("", b"<p>small</p>", "200 OK"),
        "untyped-png" => length("", b"\x89PNG\r\n\x1a\n\0\0\0\rIHDR", "200 OK"),
        "untyped-chunked" => chunked("", &[b"<html><body>", &text(2000)]),
        "empty-type" => length("Content-Type: \r\n", b"<html>", "200 OK"),
        "bad-type" => length("Content-Type: text/html/x\r\n", &text(3000), "200 OK"),
        "encoded" => length(
            "Content-Type: text/plain\r\nContent-Encoding: identity\r\n",
            &text(3000),
            "200 OK",
        ),
        "range" => length(
            "Content-Type: text/plain\r\nContent-Range: bytes 0-2999/6000\r\n",
            &text(3000),
            "206 Partial Content",
        ),
        "no-gzip" => length(
            "Content-Type: text/plain\r\nNo-Gzip-Compression: 1\r\n",
            &text(3000),
            "200 OK",
        ),
        "vary" => length(
            "Content-Type: text/plain\r\nVary: Origin\r\n",
            &text(3000),
            "200 OK",
        ),
        "not-found" => length(PLAIN, &text(3000), "404 Not Found"),
        "no-content" => b"HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n".to_vec(),
        "empty" => length(PLAIN, b"", "200 OK"),
        "slow" => {
            // Three pieces 600 ms apart, no length: each must reach the client as it comes.
            let head = format!(
                "HTTP/1.1 200 OK\r\n{PLAIN}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            );
            let _ = s.write_all(head.as_bytes());
            for i in 0..3 {
                if i > 0 {
                    std::thread::sleep(Duration::from_millis(600));
                }
                let p = format!("piece {i} of the stream\n");
                let _ = s.write_all(format!("{:x}\r\n{p}\r\n", p.len()).as_bytes());
                let _ = s.flush();
            }
            let _ = s.write_all(b"0\r\n\r\n");
            return;
        }
        "huge" => {
            // 100 MB without length, in 64 KiB chunks.
            let head = format!(
                "HTTP/1.1 200 OK\r\n{PLAIN}Transfer-Encoding: chunked\r\nConnection: close\r\n\r\n"
            );
            if s.write_all(head.as_bytes()).is_err() {
                return;
            }
            let chunk = text(64 * 1024);
            for _ in 0..1600 {
                let mut c = format!("{:x}\r\n", chunk.len()).into_bytes();
                c.extend_from_slice(&chunk);
                c.extend_from_slice(b"\r\n");
                if s.write_all(&c).is_err() {
                    return;
                }
            }
            let _ = s.write_all(b"0\r\n\r\n");
            return;
        }
        _ => length(PLAIN, b"unknown", "404 Not Found"),
    };
    let _ = s.write_all(&answer);
}

/// The body as the client reads it after undoing its content coding.
fn decoded(a: &Answer) -> Vec<u8> {
    let mut out = Vec::new();
    match a.header("content-encoding") {
        Some("gzip") => {
            flate2::read::GzDecoder::new(&a.body[..])
                .read_to_end(&mut out)
                .unwrap();
        }
        Some("br") => {
            brotli::Decompressor::new(&a.body[..], 4096)
                .read_to_end(&mut out)
                .unwrap();
        }
        Some("zstd") => out = zstd::decode_all(&a.body[..]).unwrap(),
        _ => out.clone_from(&a.body),
    }
    out
}

const CONFIGS: &str = r#"
  middlewares:
    defaults:
      compress: {}
    custom:
      compress:
        encodings: [zstd, br, gzip]
        minResponseBodyBytes: 10
        excludedContentTypes: ["text/html; charset=iso-8859-1"]
    include:
      compress:
        includedContentTypes: [application/json]
    default-br:
      compress:
        defaultEncoding: br
    sniff:
      contentType: {}
"#;

/// Router name, path prefix, middlewares.
const ROUTERS: [(&str, &str, &str); 7] = [
    ("defaults", "/d/", "defaults"),
    ("custom", "/c/", "custom"),
    ("include", "/i/", "include"),
    ("default-br", "/b/", "default-br"),
    ("sniff", "/s/", "sniff"),
    ("sniff-then-compress", "/sc/", "sniff, defaults"),
    ("compress-then-sniff", "/cs/", "defaults, sniff"),
];

fn dynamic(up: &Upstream) -> String {
    let mut d = String::from("http:\n  routers:\n");
    for (name, prefix, chain) in ROUTERS {
        d.push_str(&format!(
            "    {name}:\n      rule: \"PathPrefix(`{prefix}`)\"\n      entryPoints: [web]\n      middlewares: [{chain}]\n      service: up\n"
        ));
    }
    d.push_str(CONFIGS);
    d.push_str(&format!(
        "  services:\n    up:\n      loadBalancer:\n        servers:\n          - url: \"http://{}\"\n",
        up.addr
    ));
    d
}

/// Fields that must agree; `Content-Length` only where neither side encoded (Go sets it on a
/// small encoded answer, bridge-runtime streams it chunked).
const FIELDS: &[&str] = &[
    "content-encoding",
    "vary",
    "content-type",
    "etag",
    "accept-ranges",
    "content-range",
    "no-gzip-compression",
];

fn ask(twin: &Twin, method: &str, target: &str, ae: &[&str]) -> Answer {
    let headers: Vec<(&str, &str)> = ae.iter().map(|v| ("Accept-Encoding", *v)).collect();
    let answers: Vec<(&str, Answer)> = twin
        .targets()
        .into_iter()
        .map(|(who, addr)| {
            let a = fetch(addr, method, target, &headers, b"")
                .unwrap_or_else(|e| panic!("{who}: {method} {target}: {e}"));
            (who, a)
        })
        .collect();
    let (_, mine) = &answers[0];
    for (who, theirs) in &answers[1..] {
        let what = format!("{method} {target} AE {ae:?}");
        assert_eq!(
            mine.status, theirs.status,
            "status, bridge vs {who}: {what}"
        );
        for f in FIELDS {
            assert_eq!(
                mine.header_all(f),
                theirs.header_all(f),
                "field {f}, bridge vs {who}: {what}"
            );
        }
        // Framing of an unencoded answer: compared where the upstream gave a length (an
        // unencoded chunked answer may be sent with a length once it is all read).
        if mine.header("content-encoding").is_none() && !target.contains("chunked") {
            assert_eq!(
                mine.header("content-length"),
                theirs.header("content-length"),
                "content-length, bridge vs {who}: {what}"
            );
        }
        assert!(
            decoded(mine) == decoded(theirs),
            "decoded body, bridge vs {who}: {what}"
        );
    }
    answers.into_iter().next().map(|(_, a)| a).unwrap()
}

/// The upstream and the four routers, served by bridge-runtime and (with an oracle) Traefik.
fn both(test: &str) -> (Upstream, tempfile::TempDir, Twin) {
    let oracle = oracle(test);
    let up = upstream();
    let dir = tempfile::tempdir().unwrap();
    let routers: Vec<&str> = ROUTERS.iter().map(|(name, _, _)| *name).collect();
    let twin = serve_twice(dir.path(), oracle.as_deref(), &dynamic(&up), &routers);
    (up, dir, twin)
}

#[test]
fn compress_negotiates_decides_and_encodes_as_traefik_does() {
    let (_up, _dir, twin) = both("compress_negotiates_decides_and_encodes_as_traefik_does");
    let accepts: &[&[&str]] = &[
        &[],
        &[""],
        &["gzip"],
        &["br"],
        &["zstd"],
        &["br, gzip"],
        &["gzip;q=0.5, br"],
        &["*"],
        &["br, *"],
        &["identity"],
        &["gzip;q=0"],
        &["deflate"],
        &["GZIP"],
        &["br", "gzip"],
    ];
    let answers = [
        "small",
        "exact",
        "big",
        "tiny-chunked",
        "chunked",
        "html",
        "json",
        "grpc",
        "untyped-html",
        "untyped",
        "bad-type",
        "encoded",
        "range",
        "no-gzip",
        "vary",
        "not-found",
        "no-content",
        "empty",
    ];
    for prefix in ["/d/", "/c/", "/i/", "/b/"] {
        for name in answers {
            for ae in accepts {
                ask(&twin, "GET", &format!("{prefix}{name}"), ae);
            }
        }
    }
    // bridge-runtime's own answers, which hold without the oracle too.
    let enc = |target: &str, ae: &[&str]| {
        ask(&twin, "GET", target, ae)
            .header("content-encoding")
            .map(str::to_owned)
    };
    assert_eq!(enc("/d/big", &["br, gzip"]).as_deref(), Some("gzip"));
    assert_eq!(enc("/d/big", &["br"]).as_deref(), Some("br"));
    assert_eq!(enc("/c/big", &["gzip, br, zstd"]).as_deref(), Some("zstd"));
    assert_eq!(enc("/d/small", &["gzip"]), None, "under the minimum");
    assert_eq!(enc("/d/tiny-chunked", &["zstd"]).as_deref(), Some("zstd"));
    assert_eq!(enc("/d/grpc", &["gzip"]), None);
    assert_eq!(enc("/i/html", &["gzip"]), None);
    assert_eq!(enc("/i/json", &["br"]).as_deref(), Some("br"));
    assert_eq!(enc("/b/big", &[]).as_deref(), Some("br"));
    assert_eq!(
        enc("/d/big", &["*"]),
        None,
        "gzip's second reading refuses `*`"
    );
    let big = ask(&twin, "GET", "/d/big", &["gzip"]);
    assert_eq!(big.header_all("vary").as_deref(), Some("Accept-Encoding"));
    assert_eq!(big.header("accept-ranges"), None);
    assert_eq!(big.header("etag"), Some("\"v1\""));
    assert_eq!(decoded(&big), text(20_000));
    let vary = ask(&twin, "GET", "/d/vary", &["br"]);
    assert_eq!(
        vary.header_all("vary").as_deref(),
        Some("Accept-Encoding, Origin")
    );
    // HEAD and a request of an excluded type are left alone: no Vary.
    let head = ask(&twin, "HEAD", "/d/big", &["gzip"]);
    assert_eq!(head.header("vary"), None);
    for (who, addr) in twin.targets() {
        let grpc = fetch(
            addr,
            "POST",
            "/d/big",
            &[
                ("Accept-Encoding", "gzip"),
                ("Content-Type", "application/grpc"),
            ],
            b"x",
        )
        .unwrap();
        assert_eq!(grpc.header("vary"), None, "{who}");
        assert_eq!(grpc.header("content-encoding"), None, "{who}");
    }
}

#[test]
fn content_type_sniffs_untyped_answers_as_traefik_does_also_beside_compress() {
    let (_up, _dir, twin) =
        both("content_type_sniffs_untyped_answers_as_traefik_does_also_beside_compress");
    // Not "untyped-chunked": whether Traefik sniffs an answer without length is a race between
    // its proxy's first flush and the first body write (seen both ways); bridge-runtime sends
    // the head at once, unsniffed, as Traefik does when its flush wins (asserted below).
    let answers = [
        "untyped-html",
        "untyped",
        "untyped-small",
        "untyped-png",
        "empty-type",
        "html",
        "encoded",
        "no-content",
        "empty",
    ];
    for prefix in ["/s/", "/sc/", "/cs/", "/d/"] {
        for name in answers {
            for ae in [&[][..], &["gzip"], &["br"], &["zstd"]] {
                ask(&twin, "GET", &format!("{prefix}{name}"), ae);
            }
        }
    }
    // bridge-runtime's own answers.
    let ct = |target: &str, ae: &[&str]| {
        ask(&twin, "GET", target, ae)
            .header("content-type")
            .map(str::to_owned)
    };
    assert_eq!(
        ct("/s/untyped-html", &[]).as_deref(),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(ct("/s/untyped-png", &[]).as_deref(), Some("image/png"));
    assert_eq!(
        ct("/d/untyped-html", &[]),
        None,
        "Traefik does not sniff by default"
    );
    assert_eq!(ct("/s/empty-type", &[]).as_deref(), Some(""));
    let chunked = fetch(twin.bridge, "GET", "/s/untyped-chunked", &[], b"").unwrap();
    assert_eq!(
        chunked.header("content-type"),
        None,
        "an answer without length is not sniffed"
    );
    assert_eq!(
        ct("/sc/untyped-html", &["gzip"]).as_deref(),
        Some("text/html; charset=utf-8"),
        "gzip writes the type it sniffed"
    );
    assert_eq!(
        ct("/sc/untyped-html", &["br"]),
        None,
        "Go does not sniff an encoded body"
    );
}

/// Reads an answer's head and then body bytes as they come; the time each read arrived.
fn timed_reads(addr: SocketAddr, target: &str, ae: &str) -> Vec<(Duration, usize)> {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    write!(
        s,
        "GET {target} HTTP/1.1\r\nHost: test.local\r\nAccept-Encoding: {ae}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let start = Instant::now();
    let mut seen = Vec::new();
    let mut buf = [0u8; 65536];
    loop {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => seen.push((start.elapsed(), n)),
        }
    }
    seen
}

#[test]
fn compress_streams_an_answer_without_length_as_it_comes() {
    let (_up, _dir, twin) = both("compress_streams_an_answer_without_length_as_it_comes");
    for (who, addr) in twin.targets() {
        for ae in ["gzip", "br", "zstd"] {
            let reads = timed_reads(addr, "/d/slow", ae);
            // The head and the first piece come before the second piece is written (600 ms).
            let early: usize = reads
                .iter()
                .filter(|(t, _)| *t < Duration::from_millis(450))
                .map(|(_, n)| n)
                .sum();
            let total: usize = reads.iter().map(|(_, n)| n).sum();
            assert!(
                reads.len() >= 3 && early > 0 && early < total,
                "{who} {ae}: reads {reads:?}"
            );
        }
        let a = ask(&twin, "GET", "/d/slow", &["br"]);
        assert_eq!(
            decoded(&a),
            b"piece 0 of the stream\npiece 1 of the stream\npiece 2 of the stream\n"
        );
    }
}

/// Peak resident memory of a process, in kB.
fn peak_kb(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap()
}

#[test]
fn compress_streams_100_mb_in_flat_memory() {
    let up = upstream();
    let dir = tempfile::tempdir().unwrap();
    let twin = serve_twice(dir.path(), None, &dynamic(&up), &[]);
    // Warm up (the codec's tables, the pools), then measure one 100 MB answer per coding.
    let _ = fetch(
        twin.bridge,
        "GET",
        "/d/big",
        &[("Accept-Encoding", "br")],
        b"",
    )
    .unwrap();
    let before = peak_kb(twin.bridge_pid());
    for ae in ["gzip", "zstd", "br"] {
        let mut s = TcpStream::connect(twin.bridge).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        write!(
            s,
            "GET /d/huge HTTP/1.1\r\nHost: test.local\r\nAccept-Encoding: {ae}\r\nConnection: close\r\n\r\n"
        )
        .unwrap();
        let mut raw = Vec::new();
        s.read_to_end(&mut raw).unwrap();
        let a = bridge_tests::traefik::parse_answer(&raw, false).unwrap();
        assert_eq!(a.header("content-encoding"), Some(ae));
        let body = decoded(&a);
        assert_eq!(body.len(), 1600 * 64 * 1024, "{ae}");
    }
    let grown = peak_kb(twin.bridge_pid()).saturating_sub(before);
    // The codecs' windows (brotli's 4 MiB, zstd's) and a few frames, never the body.
    assert!(
        grown < 48 * 1024,
        "peak memory grew by {grown} kB for 100 MB answers"
    );
}
