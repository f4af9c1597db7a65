#!/usr/bin/env python3
"""Load helpers for bench/slow_clients.sh and bench/soak.sh (Python 3.9+, standard library only).

Subcommands (all bounded in time and count, all on the addresses they are given):

  node        a simulated ScadaBridge central node: /health/active (200 only while active), /health/ready,
              /big?bytes=N, WebSocket echo (RFC 6455 handshake, unmasked server frames), every other
              request answered with JSON that names the node and the length and CRC-32 of the body it
              read. Which node is active comes from a control file holding the active node's name
              (re-read every 50 ms); without one, from --active. A standby node answers application
              requests with 503 unless --standby-serves, and closes its WebSocket connections when it is
              demoted unless --keep-ws.
  probe       one normal GET every --interval seconds on a fresh connection; raw lines + a JSON summary.
  idle        opens --count idle TCP connections, holds them, records when the peer closes them.
  bigheaders  --conns connections in parallel, each sending a request whose header section is --bytes.
  sample      VmRSS / open fds / threads of a PID every --interval seconds (TSV).
  procstat    one line "rss_kb fds threads" of a PID.
  slowcsv     summarises a slowhttptest -g CSV as JSON.
  soak        the soak driver: GET / POST / HTTPS / WebSocket clients, failovers, reloads, samples.
  soak-report the Markdown report of a soak run directory.
  slow-report the Markdown report of a slow_clients run directory.
"""

import argparse
import base64
import hashlib
import http.client
import json
import os
import random
import selectors
import signal
import socket
import ssl
import struct
import subprocess
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit, parse_qs

WS_GUID = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"


def hostport(s):
    host, _, port = s.rpartition(":")
    return host, int(port)


def pct(values, p):
    """Nearest-rank percentile (p in 0..100) of a non-empty list."""
    if not values:
        return None
    v = sorted(values)
    k = max(0, min(len(v) - 1, int(round(p / 100.0 * len(v) + 0.5)) - 1))
    return v[k]


def cpu_seconds(pid):
    """User + system CPU seconds a PID has used (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def procstat(pid):
    """(rss_kb, fds, threads) of a PID, or None when it is gone."""
    try:
        rss = threads = 0
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    rss = int(line.split()[1])
                elif line.startswith("Threads:"):
                    threads = int(line.split()[1])
        fds = len(os.listdir(f"/proc/{pid}/fd"))
        return rss, fds, threads
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def fd_breakdown(pid, proxy_ports, node_ports):
    """Open fds of a PID by kind: listen, client (TCP to one of proxy_ports), upstream (TCP to one
    of node_ports), other (any other fd: files, epoll, pipes, other sockets)."""
    inodes = {}
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            with open(table) as f:
                next(f)
                for line in f:
                    p = line.split()
                    local, remote, state, inode = p[1], p[2], p[3], p[9]
                    inodes[inode] = (int(local.rsplit(":", 1)[1], 16), int(remote.rsplit(":", 1)[1], 16), state)
        except OSError:
            pass
    out = {"listen": 0, "client": 0, "upstream": 0, "other": 0}
    try:
        fds = os.listdir(f"/proc/{pid}/fd")
    except OSError:
        return out
    for fd in fds:
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        sock = inodes.get(target[8:-1]) if target.startswith("socket:[") else None
        if sock is None:
            out["other"] += 1
        elif sock[2] == "0A":
            out["listen"] += 1
        elif sock[0] in proxy_ports:
            out["client"] += 1
        elif sock[1] in node_ports:
            out["upstream"] += 1
        else:
            out["other"] += 1
    return out


# ---------------------------------------------------------------------------------------------
# node: the simulated central node
# ---------------------------------------------------------------------------------------------

class NodeState:
    def __init__(self, name, active, control, standby_serves, keep_ws):
        self.name = name
        self.active = active
        self.control = control
        self.standby_serves = standby_serves
        self.keep_ws = keep_ws
        self.ws = set()
        self.lock = threading.Lock()
        self.counts = {"requests": 0, "ws_sessions": 0, "ws_closed_on_demote": 0}

    def watch(self):
        while True:
            try:
                with open(self.control) as f:
                    now = f.read().strip() == self.name
            except OSError:
                now = self.active
            if now != self.active:
                self.active = now
                print(f"node {self.name}: {'promoted' if now else 'demoted'}", flush=True)
                if not now and not self.keep_ws:
                    with self.lock:
                        victims = list(self.ws)
                    for w in victims:
                        w.close(1012, "node demoted")
                        self.counts["ws_closed_on_demote"] += 1
            time.sleep(0.05)


class WsConn:
    def __init__(self, sock):
        self.sock = sock
        self.wlock = threading.Lock()
        self.closed = False

    def send(self, first_byte, payload):
        n = len(payload)
        if n < 126:
            head = struct.pack("!BB", first_byte, n)
        elif n < 65536:
            head = struct.pack("!BBH", first_byte, 126, n)
        else:
            head = struct.pack("!BBQ", first_byte, 127, n)
        with self.wlock:
            self.sock.sendall(head + payload)

    def close(self, code, reason):
        if self.closed:
            return
        self.closed = True
        try:
            self.send(0x88, struct.pack("!H", code) + reason.encode())
        except OSError:
            pass
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def read_exact(f, n):
    buf = b""
    while len(buf) < n:
        chunk = f.read(n - len(buf))
        if not chunk:
            raise EOFError
        buf += chunk
    return buf


def read_frame(f):
    b0, b1 = read_exact(f, 2)
    n = b1 & 0x7F
    if n == 126:
        n = struct.unpack("!H", read_exact(f, 2))[0]
    elif n == 127:
        n = struct.unpack("!Q", read_exact(f, 8))[0]
    mask = read_exact(f, 4) if b1 & 0x80 else None
    payload = read_exact(f, n)
    if mask:
        payload = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return b0, payload


class NodeHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "simnode"
    state: NodeState = None

    def log_message(self, *args):
        pass

    def read_body(self):
        """Reads the request body (Content-Length or chunked); returns (length, crc32)."""
        n, crc = 0, 0
        te = (self.headers.get("Transfer-Encoding") or "").lower()
        if "chunked" in te:
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                data = read_exact(self.rfile, size)
                n += len(data)
                crc = zlib.crc32(data, crc)
                self.rfile.readline()
        else:
            left = int(self.headers.get("Content-Length") or 0)
            while left > 0:
                data = self.rfile.read(min(left, 65536))
                if not data:
                    raise EOFError
                left -= len(data)
                n += len(data)
                crc = zlib.crc32(data, crc)
        return n, crc

    def reply(self, status, body, ctype="application/json"):
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def handle_any(self):
        st = self.state
        st.counts["requests"] += 1
        try:
            nbytes, crc = self.read_body()
        except (EOFError, ValueError, OSError):
            self.close_connection = True
            return
        path = urlsplit(self.path)
        if (self.headers.get("Upgrade") or "").lower() == "websocket":
            return self.websocket()
        if path.path == "/health/active":
            if st.active:
                return self.reply(200, b"Healthy", "text/plain")
            return self.reply(503, b"Unhealthy", "text/plain")
        if path.path == "/health/ready":
            return self.reply(200, b"Healthy", "text/plain")
        if not st.active and not st.standby_serves:
            return self.reply(503, json.dumps({"node": f"central-{st.name}", "standby": True}).encode())
        if path.path == "/big":
            size = int(parse_qs(path.query).get("bytes", ["262144"])[0])
            self.send_response(200)
            self.send_header("Content-Type", "application/octet-stream")
            self.send_header("Content-Length", str(size))
            self.end_headers()
            chunk = b"x" * 65536
            left = size
            while left > 0:
                self.wfile.write(chunk[: min(left, 65536)])
                left -= min(left, 65536)
            return
        body = json.dumps({"node": f"central-{st.name}", "method": self.command, "path": self.path,
                           "bytes": nbytes, "crc32": crc}).encode() + b"\n"
        self.reply(200, body)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = do_OPTIONS = handle_any

    def websocket(self):
        st = self.state
        key = self.headers.get("Sec-WebSocket-Key", "")
        if not st.active and not st.standby_serves:
            self.close_connection = True
            return self.reply(503, b'{"standby":true}')
        accept = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        self.send_response(101, "Switching Protocols")
        self.send_header("Upgrade", "websocket")
        self.send_header("Connection", "Upgrade")
        self.send_header("Sec-WebSocket-Accept", accept)
        self.end_headers()
        self.wfile.flush()
        self.close_connection = True
        ws = WsConn(self.connection)
        with st.lock:
            st.ws.add(ws)
        st.counts["ws_sessions"] += 1
        try:
            while not ws.closed:
                b0, payload = read_frame(self.rfile)
                op = b0 & 0x0F
                if op in (0x0, 0x1, 0x2):
                    ws.send(b0, payload)
                elif op == 0x9:
                    ws.send(0x8A, payload)
                elif op == 0x8:
                    ws.close(1000, "")
        except (EOFError, OSError, ValueError):
            pass
        finally:
            with st.lock:
                st.ws.discard(ws)


def cmd_node(a):
    threading.stack_size(512 * 1024)
    st = NodeState(a.name, a.active, a.control, a.standby_serves, a.keep_ws)
    handler = type("H", (NodeHandler,), {"state": st})
    ThreadingHTTPServer.request_queue_size = 4096
    ThreadingHTTPServer.daemon_threads = True
    ThreadingHTTPServer.block_on_close = False
    class Server(ThreadingHTTPServer):
        def handle_error(self, request, client_address):
            pass  # clients and the proxy hang up mid-answer on purpose here

    srv = Server(hostport(a.listen), handler)
    if a.control:
        threading.Thread(target=st.watch, daemon=True).start()

    def stop(*_):
        print(f"node {a.name}: {json.dumps(st.counts)}", flush=True)
        os._exit(0)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    print(f"node {a.name} listening on {a.listen} ({'active' if st.active else 'standby'})", flush=True)
    srv.serve_forever(poll_interval=0.5)


# ---------------------------------------------------------------------------------------------
# probe: one normal GET every N ms
# ---------------------------------------------------------------------------------------------

def cmd_probe(a):
    u = urlsplit(a.url)
    host, port, path = u.hostname, u.port or 80, u.path or "/"
    start = time.monotonic()
    next_t = start
    lat, errors, kinds, n = [], 0, {}, 0
    with open(a.out, "w") as out:
        for _ in range(int(a.duration / a.interval) + 1):  # bounded in count and time
            now = time.monotonic()
            if now - start >= a.duration:
                break
            t0 = time.monotonic()
            status = "?"
            try:
                c = http.client.HTTPConnection(host, port, timeout=a.timeout)
                c.request("GET", path, headers={"Connection": "close", "User-Agent": "probe"})
                r = c.getresponse()
                r.read()
                status = str(r.status)
                c.close()
                ok = 200 <= r.status < 300
            except (OSError, http.client.HTTPException) as e:
                status = type(e).__name__
                ok = False
            ms = (time.monotonic() - t0) * 1000
            n += 1
            lat.append(ms)
            if not ok:
                errors += 1
                kinds[status] = kinds.get(status, 0) + 1
            out.write(f"{t0 - start:.3f}\t{ms:.2f}\t{status}\n")
            next_t += a.interval
            time.sleep(max(0.0, next_t - time.monotonic()))
            if next_t < time.monotonic():
                next_t = time.monotonic()
    summary = {"requests": n, "errors": errors, "error_kinds": kinds,
               "p50_ms": pct(lat, 50), "p99_ms": pct(lat, 99), "max_ms": max(lat) if lat else None}
    with open(a.out + ".json", "w") as f:
        json.dump(summary, f)
    print(json.dumps(summary))


# ---------------------------------------------------------------------------------------------
# idle: many idle TCP connections
# ---------------------------------------------------------------------------------------------

def cmd_idle(a):
    host, port = hostport(a.target)
    sel = selectors.DefaultSelector()
    opened_at = {}
    stats = {"target": a.count, "opened": 0, "open_failed": 0, "closed_by_peer": 0, "reopened": 0}
    close_after = []
    start = time.monotonic()
    timeline = open(a.out + ".tsv", "w")
    timeline.write("t_s\topen\tclosed_by_peer\n")
    max_opens = a.count * (1 + a.max_reopen_factor) if a.reopen else a.count
    total_opens = 0

    def open_one():
        nonlocal total_opens
        total_opens += 1
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.settimeout(3)
        try:
            s.connect((host, port))
        except OSError:
            s.close()
            stats["open_failed"] += 1
            return False
        s.setblocking(False)
        sel.register(s, selectors.EVENT_READ)
        opened_at[s] = time.monotonic()
        stats["opened"] += 1
        return True

    def reap(timeout):
        for key, _ in sel.select(timeout):
            s = key.fileobj
            try:
                data = s.recv(4096)
            except OSError:
                data = b""
            if not data:
                sel.unregister(s)
                close_after.append(time.monotonic() - opened_at.pop(s))
                s.close()
                stats["closed_by_peer"] += 1

    last_line = 0.0
    # Open at --rate per second (0: as fast as connect returns), watching for closes meanwhile.
    for i in range(a.count):
        if time.monotonic() - start > a.duration:
            break
        open_one()
        if a.rate and i % 100 == 99:
            target_t = start + (i + 1) / a.rate
            while time.monotonic() < target_t:
                reap(max(0.0, min(0.05, target_t - time.monotonic())))
        elif i % 500 == 499:
            reap(0)
    stats["open_seconds"] = round(time.monotonic() - start, 2)
    stats["open_after_ramp"] = len(opened_at)
    peak = len(opened_at)
    while time.monotonic() - start < a.duration:
        reap(0.2)
        if a.reopen:
            while len(opened_at) < a.count and total_opens < max_opens and time.monotonic() - start < a.duration:
                if open_one():
                    stats["reopened"] += 1
        peak = max(peak, len(opened_at))
        t = time.monotonic() - start
        if t - last_line >= 1:
            timeline.write(f"{t:.1f}\t{len(opened_at)}\t{stats['closed_by_peer']}\n")
            last_line = t
    stats["open_at_end"] = len(opened_at)
    stats["peak_open"] = peak
    stats["seconds_to_peer_close_p50"] = round(pct(close_after, 50), 2) if close_after else None
    stats["seconds_to_peer_close_max"] = round(max(close_after), 2) if close_after else None
    for s in list(opened_at):
        sel.unregister(s)
        s.close()
    timeline.close()
    with open(a.out, "w") as f:
        json.dump(stats, f)
    print(json.dumps(stats))


# ---------------------------------------------------------------------------------------------
# bigheaders: header sections of --bytes on --conns connections
# ---------------------------------------------------------------------------------------------

def cmd_bigheaders(a):
    host, port = hostport(a.target)
    line = "X-Pad-%05d: " + "a" * 8000 + "\r\n"
    lines, size, i = [], 0, 0
    while size < a.bytes:
        s = line % i
        if size + len(s) > a.bytes:
            s = ("X-Pad-%05d: " % i) + "a" * max(1, a.bytes - size - 15) + "\r\n"
        lines.append(s)
        size += len(s)
        i += 1
    req = ("GET / HTTP/1.1\r\nHost: big.test\r\n" + "".join(lines) + "\r\n").encode()
    outcomes, lat, lock = {}, [], threading.Lock()
    deadline = time.monotonic() + a.duration

    def worker():
        for _ in range(a.rounds):  # bounded in count and time
            if time.monotonic() > deadline:
                return
            t0 = time.monotonic()
            s = socket.socket()
            s.settimeout(a.timeout)
            outcome = "?"
            try:
                s.connect((host, port))
                try:
                    s.sendall(req)
                    sent = "sent"
                except OSError:
                    sent = "cut"  # the proxy answered and closed before the whole head was sent
                try:
                    data = s.recv(64)
                    outcome = (data.split(b" ")[1].decode() if data.startswith(b"HTTP/") else
                               ("eof" if not data else "garbage")) + f"/{sent}"
                except socket.timeout:
                    outcome = f"timeout/{sent}"
                except OSError as e:
                    outcome = f"{type(e).__name__}/{sent}"
            except OSError as e:
                outcome = f"connect:{type(e).__name__}"
            finally:
                s.close()
            with lock:
                outcomes[outcome] = outcomes.get(outcome, 0) + 1
                lat.append((time.monotonic() - t0) * 1000)

    ts = [threading.Thread(target=worker) for _ in range(a.conns)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    stats = {"connections": a.conns, "header_bytes": size, "request_bytes": len(req),
             "attempts": sum(outcomes.values()), "outcomes": outcomes,
             "p50_ms": round(pct(lat, 50), 1) if lat else None, "max_ms": round(max(lat), 1) if lat else None}
    with open(a.out, "w") as f:
        json.dump(stats, f)
    print(json.dumps(stats))


# ---------------------------------------------------------------------------------------------
# sample / procstat
# ---------------------------------------------------------------------------------------------

def cmd_sample(a):
    start = time.monotonic()
    with open(a.out, "w") as f:
        f.write("t_s\trss_kb\tfds\tthreads\n")
        for _ in range(int(a.duration / a.interval) + 1):
            st = procstat(a.pid)
            if st is None or time.monotonic() - start > a.duration:
                break
            f.write(f"{time.monotonic() - start:.1f}\t{st[0]}\t{st[1]}\t{st[2]}\n")
            f.flush()
            time.sleep(a.interval)


def cmd_procstat(a):
    st = procstat(a.pid)
    if st is None:
        print("0 0 0 0 0 0")
        return
    fb = fd_breakdown(a.pid, set(a.proxy_ports), set(a.node_ports))
    print(f"{st[0]} {st[1]} {st[2]} {fb['client']} {fb['upstream']} {cpu_seconds(a.pid):.2f}")


# ---------------------------------------------------------------------------------------------
# slowcsv: slowhttptest -g CSV
# ---------------------------------------------------------------------------------------------

def read_slowcsv(path):
    rows = []
    with open(path) as f:
        header = [h.strip().lower() for h in f.readline().split(",")]
        for line in f:
            parts = [p.strip() for p in line.split(",")]
            if len(parts) != len(header):
                continue
            rows.append(dict(zip(header, parts)))
    return rows


def cmd_slowcsv(a):
    rows = read_slowcsv(a.csv)

    def col(r, name):
        for k, v in r.items():
            if k.startswith(name):
                return v
        return ""

    conv = [{"s": int(col(r, "seconds") or 0), "closed": int(col(r, "closed") or 0),
             "pending": int(col(r, "pending") or 0), "connected": int(col(r, "connected") or 0),
             "available": int(col(r, "service available") or 0)} for r in rows]
    out = {"rows": conv,
           "max_connected": max((r["connected"] for r in conv), default=0),
           "max_pending": max((r["pending"] for r in conv), default=0),
           "final_closed": conv[-1]["closed"] if conv else 0,
           "unavailable_seconds": [r["s"] for r in conv if not r["available"]]}
    print(json.dumps(out))


# ---------------------------------------------------------------------------------------------
# soak driver
# ---------------------------------------------------------------------------------------------

class Soak:
    def __init__(self, a):
        self.a = a
        self.t0 = time.monotonic()
        self.wall0 = time.time()
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.kinds = ["get", "post", "https", "ws"]
        self.ok = {k: 0 for k in self.kinds}
        self.fail = {k: 0 for k in self.kinds}
        self.ws_reconnects = 0
        self.stale_retries = 0
        self.failures = []   # (t_start, t_end, kind, what)
        self.events = []     # (t, kind, detail)
        self.reconnect_times = []
        self.nodes_seen = {}
        self.active = "a"
        # The test certificate is its own CA and carries IP:127.0.0.1: full verification.
        self.ctx = ssl.create_default_context(cafile=a.cafile)
        self.events_f = open(os.path.join(a.dir, "events.jsonl"), "w")

    def now(self):
        return time.monotonic() - self.t0

    def event(self, kind, detail):
        t = self.now()
        with self.lock:
            self.events.append((t, kind, detail))
            self.events_f.write(json.dumps({"t": round(t, 3), "event": kind, "detail": detail}) + "\n")
            self.events_f.flush()
        print(f"[{t:7.1f}s] {kind}: {detail}", flush=True)

    def record(self, kind, ok, t_start, what=""):
        with self.lock:
            if ok:
                self.ok[kind] += 1
            else:
                self.fail[kind] += 1
                self.failures.append((t_start, self.now(), kind, what))
                self.events_f.write(json.dumps({"t": round(self.now(), 3), "event": "failure", "kind": kind,
                                                "t_start": round(t_start, 3), "detail": what}) + "\n")

    def pause(self):
        self.stop.wait(self.a.pause_ms / 1000.0)

    # --- HTTP clients (keep-alive; a new connection every --reuse requests) ---
    def http_client(self, kind, idx):
        a = self.a
        rnd = random.Random(idx * 7919 + hash(kind))
        conn, used = None, 0
        for _ in range(a.max_requests):  # bounded in count; the loop also ends at the deadline
            if self.stop.is_set():
                break
            if conn is None or used >= a.reuse:
                if conn:
                    conn.close()
                if kind == "https":
                    conn = http.client.HTTPSConnection("127.0.0.1", a.https_port, timeout=a.timeout, context=self.ctx)
                else:
                    conn = http.client.HTTPConnection("127.0.0.1", a.web_port, timeout=a.timeout)
                used = 0
            if kind == "post":
                body = rnd.randbytes(rnd.randint(1024, 65536)) if hasattr(rnd, "randbytes") else \
                    os.urandom(rnd.randint(1024, 65536))
                method, path, hdrs = "POST", f"/api/inbound/{idx}", {"Content-Type": "application/octet-stream"}
            else:
                body, method, hdrs = None, "GET", {}
                path = f"/management/status?c={idx}&n={used}"
            t_start = self.now()
            for attempt in (0, 1):
                try:
                    conn.request(method, path, body=body, headers=hdrs)
                    r = conn.getresponse()
                    data = r.read()
                    used += 1
                    if r.status != 200:
                        self.record(kind, False, t_start, f"HTTP {r.status} {data[:80]!r}")
                    else:
                        j = json.loads(data)
                        node = j.get("node", "?")
                        with self.lock:
                            self.nodes_seen[node] = self.nodes_seen.get(node, 0) + 1
                        if kind == "post" and (j.get("bytes") != len(body) or j.get("crc32") != zlib.crc32(body)):
                            self.record(kind, False, t_start, f"body mismatch: sent {len(body)}, node read {j.get('bytes')}")
                        else:
                            self.record(kind, True, t_start)
                    if r.getheader("Connection", "").lower() == "close":
                        conn.close()
                        conn = None
                    break
                except (http.client.RemoteDisconnected, BrokenPipeError, ConnectionResetError) as e:
                    # A reused keep-alive connection the proxy closed while idle: retry once on a new
                    # connection, as browsers and HTTP libraries do. Not counted as a failure.
                    conn.close()
                    reused = used > 0
                    conn = (http.client.HTTPSConnection("127.0.0.1", a.https_port, timeout=a.timeout, context=self.ctx)
                            if kind == "https" else http.client.HTTPConnection("127.0.0.1", a.web_port, timeout=a.timeout))
                    used = 0
                    if attempt == 0 and reused:
                        with self.lock:
                            self.stale_retries += 1
                        continue
                    self.record(kind, False, t_start, f"{type(e).__name__}: {e}")
                    break
                except (OSError, http.client.HTTPException, ValueError) as e:
                    self.record(kind, False, t_start, f"{type(e).__name__}: {e}")
                    conn.close()
                    conn = None
                    break
            self.pause()
        if conn:
            conn.close()

    # --- WebSocket echo client ---
    def ws_connect(self):
        s = socket.create_connection(("127.0.0.1", self.a.web_port), timeout=self.a.timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        s.sendall((f"GET /hubs/echo HTTP/1.1\r\nHost: 127.0.0.1:{self.a.web_port}\r\nUpgrade: websocket\r\n"
                   f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        f = s.makefile("rb")
        status = f.readline()
        headers = {}
        while True:
            line = f.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            headers[k.strip().lower()] = v.strip()
        if b" 101 " not in status:
            s.close()
            raise ConnectionError(f"handshake answered {status.strip().decode('latin-1', 'replace')}")
        want = base64.b64encode(hashlib.sha1((key + WS_GUID).encode()).digest()).decode()
        if headers.get("sec-websocket-accept") != want:
            s.close()
            raise ConnectionError("bad Sec-WebSocket-Accept")
        return s, f

    def ws_send(self, s, payload):
        mask = os.urandom(4)
        n = len(payload)
        head = struct.pack("!BB", 0x81, 0x80 | n) if n < 126 else struct.pack("!BBH", 0x81, 0x80 | 126, n)
        s.sendall(head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def ws_client(self):
        s = f = None
        seq = 0
        for _ in range(self.a.max_requests):  # bounded
            if self.stop.is_set():
                break
            if s is None:
                t_start = self.now()
                try:
                    s, f = self.ws_connect()
                    if seq:
                        self.event("ws-connected", f"after message {seq}")
                except (OSError, ConnectionError) as e:
                    self.record("ws", False, t_start, f"connect: {e}")
                    s = None
                    self.stop.wait(0.2)
                    continue
            seq += 1
            msg = f"echo {seq} {time.time():.3f}".encode()
            t_start = self.now()
            try:
                self.ws_send(s, msg)
                while True:
                    b0, payload = read_frame(f)
                    op = b0 & 0x0F
                    if op == 0x8:
                        raise EOFError(f"close frame {payload[:2].hex()} {payload[2:]!r}")
                    if op == 0x1:
                        break
                if payload != msg:
                    self.record("ws", False, t_start, f"echo mismatch {payload[:40]!r}")
                else:
                    self.record("ws", True, t_start)
                self.stop.wait(self.a.ws_every)
            except (EOFError, OSError, ValueError) as e:
                # The connection was closed under us (node demoted, proxy reload/stop): reconnect.
                with self.lock:
                    self.ws_reconnects += 1
                    self.reconnect_times.append(self.now())
                self.event("ws-closed", f"{type(e).__name__}: {e}; reconnecting")
                try:
                    s.close()
                except OSError:
                    pass
                s = f = None
                seq -= 1  # the message is sent again on the new connection
        if s:
            s.close()

    # --- failovers, reloads, samples ---
    def failover(self):
        new = "b" if self.active == "a" else "a"
        tmp = self.a.control + ".tmp"
        with open(tmp, "w") as fh:
            fh.write(new + "\n")
        os.replace(tmp, self.a.control)  # demotes the old and promotes the new node at once
        self.active = new
        self.event("failover", f"central-{new} active")

    def reload(self):
        t = self.now()
        r = subprocess.run([self.a.bridgectl, "build", self.a.config, "--profile", "dev", "--out", self.a.plan],
                           capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            self.event("reload-build-failed", r.stderr.strip()[-300:])
            return
        os.kill(self.a.pid, signal.SIGHUP)
        self.event("reload", f"plan rebuilt in {self.now() - t:.1f}s, SIGHUP sent")

    def sample_line(self, out):
        st = procstat(self.a.pid) or (0, 0, 0)
        fb = fd_breakdown(self.a.pid, set(self.a.proxy_ports), set(self.a.node_ports))
        with self.lock:
            vals = [f"{self.now():.1f}"]
            for k in self.kinds:
                vals += [str(self.ok[k]), str(self.fail[k])]
            vals += [str(self.ws_reconnects), str(st[0]), str(st[1]), str(st[2]), self.active,
                     str(fb["client"]), str(fb["upstream"]), str(fb["listen"]), str(fb["other"]),
                     f"{cpu_seconds(self.a.pid):.2f}"]
        out.write("\t".join(vals) + "\n")
        out.flush()
        return st, fb

    def run(self):
        a = self.a
        threads = []
        for kind, n in (("get", a.get_clients), ("post", a.post_clients), ("https", a.https_clients)):
            for i in range(n):
                threads.append(threading.Thread(target=self.http_client, args=(kind, i), daemon=True))
        for _ in range(a.ws_clients):
            threads.append(threading.Thread(target=self.ws_client, daemon=True))
        with open(a.tsv, "w") as out:
            cols = ["t_s"] + [f"{k}_{x}" for k in self.kinds for x in ("ok", "fail")] + \
                   ["ws_reconnects", "rss_kb", "fds", "threads", "active",
                    "fd_client", "fd_upstream", "fd_listen", "fd_other", "cpu_s"]
            out.write("\t".join(cols) + "\n")
            self.sample_line(out)
            self.event("start", f"{len(threads)} client threads")
            for t in threads:
                t.start()
            duration = a.minutes * 60
            next_sample, next_fo, next_rl = a.sample_every, a.failover_every, a.reload_every
            last_print = 0
            while True:
                t = self.now()
                if t >= duration:
                    break
                if procstat(a.pid) is None:
                    self.event("proxy-gone", "bridge-runtime is not running any more")
                    break
                if t >= next_fo:
                    self.failover()
                    next_fo += a.failover_every
                if t >= next_rl:
                    self.reload()
                    next_rl += a.reload_every
                if t >= next_sample:
                    st, fb = self.sample_line(out)
                    next_sample += a.sample_every
                    if t - last_print >= 60 or a.minutes <= 5:
                        last_print = t
                        with self.lock:
                            print(f"[{t:7.1f}s] ok {self.ok} failed {self.fail} ws reconnects {self.ws_reconnects} "
                                  f"rss {st[0]} kB fds {st[1]} {fb}", flush=True)
                self.stop.wait(max(0.01, min(next_sample, next_fo, next_rl, duration) - self.now()))
            self.stop.set()
            for th in threads:
                th.join(timeout=a.timeout + 5)
            self.sample_line(out)
        fo_times = [t for t, k, _ in self.events if k == "failover"]
        rl_times = [t for t, k, _ in self.events if k == "reload"]
        classified = []
        for (ts, te, kind, what) in self.failures:
            in_fo = any(ts <= f + a.window and te >= f for f in fo_times)  # overlaps [failover, +window]
            near_rl = min((abs(ts - r) for r in rl_times), default=None)
            classified.append({"t_start": round(ts, 3), "t_end": round(te, 3), "kind": kind, "what": what,
                               "failover_window": in_fo,
                               "since_failover": round(min((ts - f for f in fo_times if f <= te), default=-1), 3),
                               "nearest_reload_s": round(near_rl, 1) if near_rl is not None else None})
        summary = {"ok": self.ok, "fail": self.fail, "ws_reconnects": self.ws_reconnects,
                   "ws_reconnect_times": [round(x, 2) for x in self.reconnect_times],
                   "stale_keepalive_retries": self.stale_retries, "nodes_seen": self.nodes_seen,
                   "failovers": len(fo_times), "reloads": len(rl_times),
                   "reload_build_failures": sum(1 for _, k, _ in self.events if k == "reload-build-failed"),
                   "failures": classified,
                   "failures_in_failover_windows": sum(1 for c in classified if c["failover_window"]),
                   "failures_outside": sum(1 for c in classified if not c["failover_window"]),
                   "proxy_gone": any(k == "proxy-gone" for _, k, _ in self.events),
                   "seconds": round(self.now(), 1)}
        with open(os.path.join(a.dir, "summary.json"), "w") as f:
            json.dump(summary, f, indent=1)
        print(json.dumps({k: v for k, v in summary.items() if k != "failures"}))


def cmd_soak(a):
    Soak(a).run()


# ---------------------------------------------------------------------------------------------
# reports
# ---------------------------------------------------------------------------------------------

def read_tsv(path):
    with open(path) as f:
        head = f.readline().rstrip("\n").split("\t")
        return [dict(zip(head, line.rstrip("\n").split("\t"))) for line in f if line.strip()]


def mib(kb):
    return f"{int(kb) / 1024:.1f}"


def cmd_soak_report(a):
    d = a.dir
    rows = read_tsv(a.tsv)
    summ = json.load(open(os.path.join(d, "summary.json")))
    settings = json.load(open(os.path.join(d, "settings.json")))
    kinds = ["get", "post", "https", "ws"]
    out = []
    w = out.append
    w(f"# Soak: bridge-runtime serving the seed configuration ({settings['date']})")
    w("")
    w(f"`bench/soak.sh`, {settings['minutes']} min of mixed keep-alive traffic; {settings['binaries']}.")
    w("")
    w("## Settings")
    w("")
    w("| setting | value |")
    w("|---|---|")
    for k, v in settings["table"]:
        w(f"| {k} | {v} |")
    w("")
    w("## Totals")
    w("")
    w("| kind | ok | failed | failed within the failover window | failed elsewhere |")
    w("|---|---|---|---|---|")
    for k in kinds:
        fw = sum(1 for f in summ["failures"] if f["kind"] == k and f["failover_window"])
        w(f"| {k} | {summ['ok'][k]} | {summ['fail'][k]} | {fw} | {summ['fail'][k] - fw} |")
    w("")
    w(f"Failovers: {summ['failovers']}; reloads (SIGHUP after rebuilding the plan): {summ['reloads']}"
      f" (plan rebuild failures: {summ['reload_build_failures']}; the proxy logged {settings.get('reloaded_lines', '?')}"
      f" `reloaded plan` and {settings.get('rejected_lines', '?')} `reload rejected` lines). WebSocket reconnects:"
      f" {summ['ws_reconnects']} (at {', '.join(f'{t:.0f}s' for t in summ['ws_reconnect_times']) or '-'}). "
      f"Stale keep-alive retries (a reused connection the proxy had closed, retried once on a new one, not"
      f" counted as failures): {summ['stale_keepalive_retries']}. Answers by node: "
      f"{', '.join(f'{k} {v}' for k, v in sorted(summ['nodes_seen'].items()))}.")
    w("")
    # per-minute table
    w("## Samples (one per minute; all 10 s samples in the TSV)")
    w("")
    w("| t | " + " | ".join(f"{k} ok/fail" for k in kinds) +
      " | ws reconnects | RSS MiB | fds (client/upstream/listen/other) | proxy CPU % | active |")
    w("|---|" + "---|" * (len(kinds) + 5))
    prev = None
    picked = []
    for r in rows:
        t = float(r["t_s"])
        if prev is None or t - float(prev["t_s"]) >= 59.5 or r is rows[-1]:
            picked.append(r)
            prev = r
    last = None
    for r in picked:
        cells = []
        for k in kinds:
            ok = int(r[f"{k}_ok"]) - (int(last[f"{k}_ok"]) if last else 0)
            fl = int(r[f"{k}_fail"]) - (int(last[f"{k}_fail"]) if last else 0)
            cells.append(f"{ok}/{fl}")
        cpu = "-"
        if last and "cpu_s" in r and float(r["t_s"]) > float(last["t_s"]):
            cpu = f"{100 * (float(r['cpu_s']) - float(last['cpu_s'])) / (float(r['t_s']) - float(last['t_s'])):.0f}"
        w(f"| {float(r['t_s']) / 60:.1f} min | " + " | ".join(cells) +
          f" | {r['ws_reconnects']} | {mib(r['rss_kb'])} | {r['fds']} ({r.get('fd_client', '?')}/"
          f"{r.get('fd_upstream', '?')}/{r.get('fd_listen', '?')}/{r.get('fd_other', '?')}) | {cpu} | {r['active']} |")
        last = r
    w("")
    w("Counts per row are the requests completed since the previous row. fds: all of /proc/PID/fd; in"
      " brackets the TCP sockets from clients, to the nodes (pooled keep-alive connections and health"
      " probes), listeners, and everything else (epoll, eventfd, files).")
    w("")
    # RSS / fds verdict
    rss = [(float(r["t_s"]), int(r["rss_kb"]), int(r["fds"])) for r in rows if int(r["rss_kb"]) > 0]
    total = rss[-1][0] if rss else 0
    win = min(600.0, total / 3) if total else 0
    first = [x for x in rss if x[0] <= win]
    lastw = [x for x in rss if x[0] >= total - win]
    f_rss, l_rss = max(x[1] for x in first), max(x[1] for x in lastw)
    f_fd, l_fd = max(x[2] for x in first), max(x[2] for x in lastw)
    rss_flat = l_rss <= f_rss * 1.10
    fd_flat = l_fd <= f_fd + 20
    w("## Memory and file descriptors")
    w("")
    w("| | start | end | max | max in the first window | max in the last window |")
    w("|---|---|---|---|---|---|")
    w(f"| RSS (VmRSS) MiB | {mib(rss[0][1])} | {mib(rss[-1][1])} | {mib(max(x[1] for x in rss))} | {mib(f_rss)} | {mib(l_rss)} |")
    w(f"| open fds | {rss[0][2]} | {rss[-1][2]} | {max(x[2] for x in rss)} | {f_fd} | {l_fd} |")
    w("")
    w(f"Windows: the first and the last {win / 60:.1f} minutes (10 minutes, or a third of the run when it is"
      f" shorter than 30 minutes). Flat means: the last window's max RSS within 10 % of the first window's"
      f" max, and its max fd count at most 20 above the first window's.")
    w("")
    outside = [f for f in summ["failures"] if not f["failover_window"]]
    inside = [f for f in summ["failures"] if f["failover_window"]]
    w("## Failures")
    w("")
    if not summ["failures"]:
        w("None.")
    else:
        w(f"A failure counts as within the failover window when the request overlaps the {settings['window']} s"
          f" after a failover (the documented failover behaviour: at most a few failed requests).")
        w("")
        w("| start s | kind | window | since failover s | nearest reload s | what |")
        w("|---|---|---|---|---|---|")
        for f in summ["failures"][:60]:
            w(f"| {f['t_start']} | {f['kind']} | {'failover' if f['failover_window'] else '**outside**'} |"
              f" {f['since_failover']} | {f['nearest_reload_s']} | {f['what'].replace('|', '/')[:120]} |")
        if len(summ["failures"]) > 60:
            w(f"| ... | {len(summ['failures']) - 60} more in summary.json | | | | |")
    w("")
    w("## Verdict")
    w("")
    w(f"- RSS flat: **{'yes' if rss_flat else 'no'}** ({mib(f_rss)} → {mib(l_rss)} MiB, window max to window max)")
    w(f"- fds flat: **{'yes' if fd_flat else 'no'}** ({f_fd} → {l_fd})")
    w(f"- errors beyond the failover windows: **{len(outside)}** ({'pass' if not outside else 'FAIL'});"
      f" within them: {len(inside)} over {summ['failovers']} failovers"
      f" ({len(inside) / summ['failovers']:.1f} per failover)" if summ["failovers"] else
      f"- errors beyond the failover windows: **{len(outside)}**")
    if summ["proxy_gone"]:
        w("- **the proxy exited during the run**")
    w("")
    w(f"Raw data: `{os.path.basename(a.tsv)}` (10 s samples, cumulative counts); the run directory"
      f" `{d}` also holds events.jsonl, summary.json and the proxy's log.")
    text = "\n".join(out) + "\n"
    with open(a.out, "w") as f:
        f.write(text)
    print(text)


def log_summary(path, start, end, top=5):
    """The most frequent lines of a log between two line numbers, digits folded to N."""
    import re
    counts = {}
    try:
        with open(path, errors="replace") as f:
            lines = f.readlines()[start:end]
    except OSError:
        return []
    for line in lines:
        key = re.sub(r"\d+", "N", line.strip().removeprefix("bridge-runtime: "))[:160]
        counts[key] = counts.get(key, 0) + 1
    return sorted(counts.items(), key=lambda kv: -kv[1])[:top]


def cmd_slow_report(a):
    d = a.dir
    settings = json.load(open(os.path.join(d, "settings.json")))
    phases = [json.loads(line) for line in open(os.path.join(d, "phases.jsonl")) if line.strip()]
    base = next((json.load(open(p["probe"] + ".json")) for p in phases if p["name"] == "baseline"), None)
    limit = settings["p99_floor_ms"]
    if base and base["p99_ms"]:
        limit = max(limit, settings["p99_factor"] * base["p99_ms"])
    out = []
    w = out.append
    w(f"# Slow and idle clients against bridge-runtime ({settings['date']})")
    w("")
    w(f"`bench/slow_clients.sh`; {settings['binaries']}.")
    w("")
    w("| setting | value |")
    w("|---|---|")
    for k, v in settings["table"]:
        w(f"| {k} | {v} |")
    w("")
    w("Every phase runs a probe client beside the attack: one `GET /` on a fresh connection every"
      f" {settings['probe_interval_ms']} ms with a {settings['probe_timeout']} s timeout; an error is a"
      " non-2xx answer, a timeout or a connection error. RSS and fds are read from /proc/PID of bridge-runtime;"
      " peak is the highest of the samples taken every 0.5 s during the phase; 'after' is read once the"
      " attack has ended and the settle time has passed, with the proxy's TCP sockets from clients and to the"
      " backend counted apart (idle pooled upstream connections are closed after idleConnTimeout, 90 s by"
      " default). With few probe samples (QUICK mode: 100), p99 is close to the maximum, so one slow"
      " request can decide the verdict; the slow ones are listed with their time in the phase.")
    w("")
    for p in phases:
        if "log_from" in p:
            p["log_lines"] = log_summary(os.path.join(d, "proxy.log"), p["log_from"], p["log_to"])
        w(f"## {p['title']}")
        w("")
        w(p["what"])
        w("")
        pr = json.load(open(p["probe"] + ".json"))
        samp = read_tsv(p["samples"]) if os.path.exists(p["samples"]) else []
        b, af = p["before"].split(), p["after"].split()
        peak_rss = max([int(r["rss_kb"]) for r in samp] + [int(b[0]), int(af[0])])
        peak_fd = max([int(r["fds"]) for r in samp] + [int(b[1]), int(af[1])])
        w("| probe requests | errors | p50 ms | p99 ms | max ms | RSS MiB before / peak / after |"
          " fds before / peak / after | after: client / upstream sockets | proxy CPU s |")
        w("|---|---|---|---|---|---|---|---|---|")
        kinds = ", ".join(f"{k} {v}" for k, v in pr["error_kinds"].items())
        cpu = f"{float(af[5]) - float(b[5]):.1f}" if len(af) > 5 and len(b) > 5 else "?"
        w(f"| {pr['requests']} | {pr['errors']}{' (' + kinds + ')' if kinds else ''} | {pr['p50_ms']:.1f} |"
          f" {pr['p99_ms']:.1f} | {pr['max_ms']:.1f} | {mib(b[0])} / {mib(peak_rss)} / {mib(af[0])} |"
          f" {b[1]} / {peak_fd} / {af[1]} | {af[3] if len(af) > 3 else '?'} / {af[4] if len(af) > 4 else '?'} |"
          f" {cpu} |")
        w("")
        slow = []
        with open(p["probe"]) as f:
            for line in f:
                t, ms, status = line.rstrip("\n").split("\t")
                if float(ms) > limit:
                    slow.append(f"{float(t):.1f} s: {float(ms):.0f} ms")
        if slow and p["name"] != "baseline":
            w(f"Probe requests slower than {limit:.0f} ms: {len(slow)} (phase time: latency — "
              + ", ".join(slow[:12]) + (", ..." if len(slow) > 12 else "") + ")")
            w("")
        if p.get("slowcsv"):
            s = json.load(open(p["slowcsv"]))
            w(f"slowhttptest: `{p['cmd']}`")
            w("")
            w("| s | pending | connected | closed | service available |")
            w("|---|---|---|---|---|")
            rows = s["rows"]
            step = max(1, len(rows) // 12)
            for i, r in enumerate(rows):
                if i % step == 0 or i == len(rows) - 1:
                    w(f"| {r['s']} | {r['pending']} | {r['connected']} | {r['closed']} | {'yes' if r['available'] else 'NO'} |")
            w("")
            un = s["unavailable_seconds"]
            w(f"slowhttptest's verdict: {p.get('verdict_line') or '-'}; seconds it saw the service unavailable:"
              f" {len(un)}{' (' + ', '.join(map(str, un[:20])) + ')' if un else ''}. Max connected {s['max_connected']},"
              f" max pending {s['max_pending']}, closed at the end {s['final_closed']}.")
            w("")
        if p.get("helper"):
            h = json.load(open(p["helper"]))
            w("Helper: " + ", ".join(f"{k} {json.dumps(v)}" for k, v in h.items()))
            w("")
        if p["name"] == "baseline":
            w(f"Reference for the other phases: p99 {pr['p99_ms']:.1f} ms, {pr['errors']} errors.")
            w("")
            continue
        if p.get("log_lines"):
            w("Proxy log lines during the phase (numbers and addresses folded):")
            w("")
            for line, n in p["log_lines"]:
                w(f"- {n} × `{line}`")
            w("")
        good = pr["errors"] == 0 and pr["p99_ms"] is not None and pr["p99_ms"] <= limit
        w(f"**Served other clients normally: {'yes' if good else 'no'}** (probe errors {pr['errors']}, p99"
          f" {pr['p99_ms']:.1f} ms; yes = no probe error and p99 at most {limit:.0f} ms, i.e."
          f" {settings['p99_factor']}x the baseline p99 but at least {settings['p99_floor_ms']} ms)")
        w("")
    text = "\n".join(out) + "\n"
    with open(a.out, "w") as f:
        f.write(text)
    print(text)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("node")
    p.add_argument("--listen", required=True)
    p.add_argument("--name", default="a")
    p.add_argument("--active", type=int, default=1)
    p.add_argument("--control")
    p.add_argument("--standby-serves", action="store_true")
    p.add_argument("--keep-ws", action="store_true")
    p.set_defaults(f=cmd_node)
    p = sub.add_parser("probe")
    p.add_argument("--url", required=True)
    p.add_argument("--interval", type=float, default=0.2)
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--timeout", type=float, default=5)
    p.add_argument("--out", required=True)
    p.set_defaults(f=cmd_probe)
    p = sub.add_parser("idle")
    p.add_argument("--target", required=True)
    p.add_argument("--count", type=int, default=10000)
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--rate", type=float, default=0)
    p.add_argument("--reopen", action="store_true")
    p.add_argument("--max-reopen-factor", type=int, default=5)
    p.add_argument("--out", required=True)
    p.set_defaults(f=cmd_idle)
    p = sub.add_parser("bigheaders")
    p.add_argument("--target", required=True)
    p.add_argument("--conns", type=int, default=50)
    p.add_argument("--bytes", type=int, default=1 << 20)
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--rounds", type=int, default=1000)
    p.add_argument("--timeout", type=float, default=15)
    p.add_argument("--out", required=True)
    p.set_defaults(f=cmd_bigheaders)
    p = sub.add_parser("sample")
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--interval", type=float, default=0.5)
    p.add_argument("--duration", type=float, required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(f=cmd_sample)
    p = sub.add_parser("procstat")
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--proxy-ports", type=int, nargs="*", default=[])
    p.add_argument("--node-ports", type=int, nargs="*", default=[])
    p.set_defaults(f=cmd_procstat)
    p = sub.add_parser("slowcsv")
    p.add_argument("csv")
    p.set_defaults(f=cmd_slowcsv)
    p = sub.add_parser("soak")
    p.add_argument("--dir", required=True)
    p.add_argument("--tsv", required=True)
    p.add_argument("--pid", type=int, required=True)
    p.add_argument("--web-port", type=int, required=True)
    p.add_argument("--https-port", type=int, required=True)
    p.add_argument("--cafile", required=True)
    p.add_argument("--control", required=True)
    p.add_argument("--bridgectl", required=True)
    p.add_argument("--config", required=True)
    p.add_argument("--plan", required=True)
    p.add_argument("--proxy-ports", type=int, nargs="+", required=True)
    p.add_argument("--node-ports", type=int, nargs="+", required=True)
    p.add_argument("--minutes", type=float, default=60)
    p.add_argument("--failover-every", type=float, default=120)
    p.add_argument("--reload-every", type=float, default=300)
    p.add_argument("--sample-every", type=float, default=10)
    p.add_argument("--window", type=float, default=1.0)
    p.add_argument("--get-clients", type=int, default=2)
    p.add_argument("--post-clients", type=int, default=2)
    p.add_argument("--https-clients", type=int, default=1)
    p.add_argument("--ws-clients", type=int, default=1)
    p.add_argument("--ws-every", type=float, default=1.0)
    p.add_argument("--pause-ms", type=float, default=50)
    p.add_argument("--reuse", type=int, default=100)
    p.add_argument("--timeout", type=float, default=10)
    p.add_argument("--max-requests", type=int, default=10_000_000)
    p.set_defaults(f=cmd_soak)
    p = sub.add_parser("soak-report")
    p.add_argument("--dir", required=True)
    p.add_argument("--tsv", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(f=cmd_soak_report)
    p = sub.add_parser("slow-report")
    p.add_argument("--dir", required=True)
    p.add_argument("--out", required=True)
    p.set_defaults(f=cmd_slow_report)
    a = ap.parse_args()
    a.f(a)


if __name__ == "__main__":
    main()
