//! A small network of namespaces for the pair's tests: a switch (a bridge in a namespace of its
//! own) and hosts attached to it by veth pairs, each host with `lo` and `eth0`.
//!
//! ```text
//! let lab = Lab::new("ha")?;                       // None (with the reason printed) without `ip netns`
//! let a = lab.host("a", &["10.77.0.1/24"]);        // a namespace with eth0 10.77.0.1
//! lab.exec(&a, "keepalived").args([...]).spawn()   // `ip netns exec <ns> keepalived ...`
//! lab.within(&c, || backend("a").bind(addr).start()) // code (and the threads it starts) in a namespace
//! ```
//!
//! Everything is named after the process and a counter, so parallel tests never meet; dropping the
//! lab kills the processes it was given ([`Lab::adopt`]) and deletes every namespace, which takes
//! the veths and the bridge with it, also when the test failed.

#![allow(
    clippy::unwrap_used,
    clippy::expect_used,
    reason = "test helpers: a panic is a test failure"
)]

use std::os::fd::AsFd;
use std::process::{Child, Command, Output, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

static NEXT: AtomicU32 = AtomicU32::new(0);

/// A host: one network namespace attached to the lab's switch.
#[derive(Debug, Clone)]
pub struct Host {
    /// The namespace's name (`ip netns`).
    pub ns: String,
    /// The veth end in the switch's namespace (set down to cut the host off).
    pub port: String,
}

/// The namespaces, links and processes of one test.
#[derive(Debug)]
pub struct Lab {
    prefix: String,
    switch: String,
    namespaces: Mutex<Vec<String>>,
    children: Mutex<Vec<Child>>,
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn ip(args: &[&str]) -> Output {
    run(Command::new("ip").args(args))
}

impl Lab {
    /// A new lab with an empty switch, or `None` (after printing why) where namespaces cannot be
    /// made here (no `ip`, no privileges).
    pub fn new(tag: &str) -> Option<Lab> {
        let n = NEXT.fetch_add(1, Ordering::Relaxed);
        let prefix = format!("b{:x}{tag}{n}", std::process::id() % 0x10000);
        let switch = format!("{prefix}sw");
        match Command::new("ip")
            .args(["netns", "add", &switch])
            .stdin(Stdio::null())
            .output()
        {
            Ok(o) if o.status.success() => {}
            Ok(o) => {
                eprintln!(
                    "skipped: `ip netns add` failed here ({}), so the pair's namespaces cannot be built",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                return None;
            }
            Err(e) => {
                eprintln!(
                    "skipped: cannot run `ip` ({e}), so the pair's namespaces cannot be built"
                );
                return None;
            }
        }
        let lab = Lab {
            prefix,
            switch: switch.clone(),
            namespaces: Mutex::new(vec![switch.clone()]),
            children: Mutex::new(Vec::new()),
        };
        ip(&["-n", &switch, "link", "add", "br0", "type", "bridge"]);
        ip(&["-n", &switch, "link", "set", "br0", "up"]);
        ip(&["-n", &switch, "link", "set", "lo", "up"]);
        Some(lab)
    }

    /// A host named `name` on the switch with these `ADDR/PREFIX` addresses on its eth0.
    pub fn host(&self, name: &str, addrs: &[&str]) -> Host {
        let ns = format!("{}{name}", self.prefix);
        ip(&["netns", "add", &ns]);
        self.namespaces.lock().unwrap().push(ns.clone());
        let port = format!("{}p{name}", self.prefix);
        let inner = format!("{}i{name}", self.prefix);
        ip(&[
            "link",
            "add",
            &inner,
            "netns",
            &ns,
            "type",
            "veth",
            "peer",
            "name",
            &port,
            "netns",
            &self.switch,
        ]);
        ip(&[
            "-n",
            &self.switch,
            "link",
            "set",
            &port,
            "master",
            "br0",
            "up",
        ]);
        ip(&["-n", &ns, "link", "set", &inner, "name", "eth0"]);
        ip(&["-n", &ns, "link", "set", "lo", "up"]);
        for a in addrs {
            ip(&["-n", &ns, "addr", "add", a, "dev", "eth0"]);
        }
        ip(&["-n", &ns, "link", "set", "eth0", "up"]);
        Host { ns, port }
    }

    /// `program` run inside the host's namespace (`ip netns exec`).
    pub fn exec(&self, host: &Host, program: impl AsRef<std::ffi::OsStr>) -> Command {
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &host.ns]).arg(program);
        cmd
    }

    /// Keeps `child` to be killed (by PID) and reaped when the lab is dropped; returns its PID.
    pub fn adopt(&self, child: Child) -> u32 {
        let pid = child.id();
        self.children.lock().unwrap().push(child);
        pid
    }

    /// Runs `f` on a thread that has entered the host's namespace: sockets it opens, and threads it
    /// starts, live there.
    pub fn within<T: Send + 'static>(
        &self,
        host: &Host,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> T {
        let path = format!("/run/netns/{}", host.ns);
        std::thread::spawn(move || {
            let file = std::fs::File::open(&path).unwrap();
            rustix::thread::move_into_link_name_space(
                file.as_fd(),
                Some(rustix::thread::LinkNameSpaceType::Network),
            )
            .unwrap();
            f()
        })
        .join()
        .unwrap()
    }

    /// The appliance host setup of packaging/ha/README.md: `addr/32` on `lo`, and eth0 answering ARP
    /// only for its own addresses (`arp_ignore=1`, `arp_announce=2`).
    pub fn vip_on_loopback(&self, host: &Host, addr: &str) {
        ip(&[
            "-n",
            &host.ns,
            "addr",
            "add",
            &format!("{addr}/32"),
            "dev",
            "lo",
        ]);
        for (key, value) in [("arp_ignore", "1"), ("arp_announce", "2")] {
            run(self.exec(host, "sysctl").args([
                "-q",
                "-w",
                &format!("net.ipv4.conf.eth0.{key}={value}"),
            ]));
        }
    }

    /// Sets the host's port on the switch down: the host is cut off as if its cable were pulled.
    pub fn unplug(&self, host: &Host) {
        ip(&["-n", &self.switch, "link", "set", &host.port, "down"]);
    }

    /// The addresses on the host's eth0 (`ip -br addr`), to see who holds the virtual address.
    pub fn addresses(&self, host: &Host) -> String {
        let out = ip(&["-n", &host.ns, "-br", "addr", "show", "dev", "eth0"]);
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Lab {
    fn drop(&mut self) {
        // TERM first: keepalived then takes its VRRP child down with it; KILL what is left after 3 s.
        let mut children: Vec<Child> = self.children.lock().unwrap().drain(..).collect();
        for child in &children {
            let _ = Command::new("kill")
                .args(["-TERM", &child.id().to_string()])
                .stderr(Stdio::null())
                .status();
        }
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(3);
        for child in &mut children {
            while matches!(child.try_wait(), Ok(None)) && std::time::Instant::now() < deadline {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        for ns in self.namespaces.lock().unwrap().drain(..).rev() {
            let _ = Command::new("ip")
                .args(["netns", "del", &ns])
                .stdin(Stdio::null())
                .status();
        }
    }
}
