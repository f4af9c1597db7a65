//! The README's demo starts, serves the bundled example through the simulated nodes, reacts to a
//! failover command, and exits when its input ends.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test code: a panic is a test failure"
)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn get(addr: &str) -> String {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    write!(
        s,
        "GET /ui HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    out
}

#[test]
fn demo_serves_the_example_and_fails_over_on_command() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_scadabridge-demo"))
        .args([
            "--web",
            "127.0.0.1:0",
            "--dashboard",
            "127.0.0.1:0",
            "--node-a",
            "127.0.0.2:0",
            "--node-b",
            "127.0.0.3:0",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let deadline = Instant::now() + Duration::from_secs(30);
    let mut web = None;
    while web.is_none() && Instant::now() < deadline {
        let line = lines.next().unwrap().unwrap();
        if let Some(rest) = line.strip_prefix("ScadaBridge via bridge-runtime:") {
            web = Some(
                rest.trim()
                    .trim_start_matches("http://")
                    .trim_end_matches('/')
                    .to_owned(),
            );
        }
    }
    let web = web.expect("demo announced its address");
    assert!(get(&web).contains("\"node\":\"central-a\""));
    writeln!(stdin, "failover").unwrap();
    let started = Instant::now();
    while !get(&web).contains("\"node\":\"central-b\"") {
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "failover not followed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(stdin); // end of input: the demo stops
    std::thread::spawn(move || for _ in lines {});
    let deadline = Instant::now() + Duration::from_secs(20);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success());
            break;
        }
        assert!(Instant::now() < deadline, "demo did not exit");
        std::thread::sleep(Duration::from_millis(50));
    }
}
