#!/usr/bin/env python3
"""The client of bench/failover.sh: a steady stream of GETs through a proxy while a failover
happens, and when the answers moved from node A to node B.

One GET every --interval seconds for --duration seconds (at most duration/interval requests).
The schedule is open-loop: each request is sent on time by a worker thread, so a proxy that holds
requests (retries, queueing) does not slow the stream down and hide failures. The workers share
a pool of HTTP/1.1 keep-alive connections, as a browser or an HTTP client library would. When a
request fails on a pooled connection before any answer arrived (the proxy closed an idle
connection), it is sent once more on a new connection and counted as a stale retry, not as a
failure - that is what HTTP clients do for idempotent requests.

At --at seconds (plus a random part of --jitter seconds) the scenario's actions run in this
process, so T is exact: --touch FILE, --remove FILE (the backends' flag files) and --kill PID
(SIGKILL). The backends answer "A" or "B" in the body.

Printed: one JSON object. Times are seconds relative to T, by the time a request was sent; a
request counts as "after T" when it completed at or after T. A failure is an answer outside
2xx or a transport error (per-operation timeout --timeout).
  first_b_s     first request after T answered 2xx by B
  last_a_s      last request after T answered 2xx by A
  converged_s   the request from which on every answer is 2xx from B (null: never)
  failed        failed requests after T (failed_by: by status or error), fail_first_s/fail_last_s
  max_latency_after_ms, p50_before_ms, before_backends, before_failed, stale_retries

Only loopback targets are accepted. Standard library only.
"""

import argparse
import collections
import concurrent.futures
import http.client
import ipaddress
import json
import math
import os
import random
import signal
import sys
import threading
import time
import urllib.parse

STALE = (http.client.RemoteDisconnected, ConnectionResetError, BrokenPipeError, ConnectionAbortedError)


class Pool:
    """Idle keep-alive connections, last returned first."""

    def __init__(self, host, port, timeout):
        self.host, self.port, self.timeout = host, port, timeout
        self.idle = collections.deque()
        self.lock = threading.Lock()

    def take(self):
        with self.lock:
            if self.idle:
                return self.idle.pop(), True
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout), False

    def give(self, conn):
        with self.lock:
            self.idle.append(conn)

    def close(self):
        with self.lock:
            while self.idle:
                self.idle.pop().close()


def get(pool, path, host_header):
    """One GET: (status or None, 'A'/'B'/'', error name, stale retry used)."""
    retried = False
    while True:
        conn, reused = pool.take()
        try:
            conn.request("GET", path, headers={"Host": host_header})
            resp = conn.getresponse()
            body = resp.read()
        except STALE as e:
            conn.close()
            if reused and not retried:
                retried = True
                continue
            return None, "", type(e).__name__, retried
        except Exception as e:  # connect refused, timeout, bad answer
            conn.close()
            return None, "", type(e).__name__, retried
        if resp.will_close:
            conn.close()
        else:
            pool.give(conn)
        first = body.lstrip()[:1].decode("latin-1")
        return resp.status, first if first in ("A", "B") else "", "", retried


def act(touch, remove, kill):
    for f in touch:
        with open(f, "a"):
            pass
    for f in remove:
        try:
            os.unlink(f)
        except FileNotFoundError:
            pass
    for pid in kill:
        os.kill(pid, signal.SIGKILL)


def summary(recs):
    """recs: dicts with rel (sent, relative to T), lat_ms, status, be, err, stale; by send time."""

    def ok(r):
        return r["status"] is not None and 200 <= r["status"] < 300

    before = [r for r in recs if r["rel"] + r["lat_ms"] / 1000 < 0]
    after = [r for r in recs if r["rel"] + r["lat_ms"] / 1000 >= 0]
    failed = [r for r in after if not ok(r)]
    from_b = [r["rel"] for r in after if ok(r) and r["be"] == "B"]
    from_a = [r["rel"] for r in after if ok(r) and r["be"] == "A"]
    converged = None
    for r in reversed(after):
        if not (ok(r) and r["be"] == "B"):
            break
        converged = r["rel"]
    failed_by = collections.Counter(str(r["status"]) if r["status"] is not None else r["err"] for r in failed)
    lat_before = sorted(r["lat_ms"] for r in before)
    return {
        "requests": len(recs),
        "before": len(before),
        "before_failed": sum(not ok(r) for r in before),
        "before_backends": "".join(sorted({r["be"] for r in before if ok(r) and r["be"]})),
        "after": len(after),
        "failed": len(failed),
        "failed_by": dict(failed_by),
        "after_from_a": len(from_a),
        "after_from_b": len(from_b),
        "first_b_s": round(from_b[0], 4) if from_b else None,
        "last_a_s": round(from_a[-1], 4) if from_a else None,
        "converged_s": round(converged, 4) if converged is not None else None,
        "fail_first_s": round(failed[0]["rel"], 4) if failed else None,
        "fail_last_s": round(failed[-1]["rel"], 4) if failed else None,
        "stale_retries": sum(1 for r in recs if r["stale"]),
        "max_latency_after_ms": round(max((r["lat_ms"] for r in after), default=0.0), 1),
        "p50_before_ms": round(lat_before[len(lat_before) // 2], 2) if lat_before else None,
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--url", required=True)
    ap.add_argument("--interval", type=float, default=0.02)
    ap.add_argument("--duration", type=float, default=30.0)
    ap.add_argument("--at", type=float, default=5.0)
    ap.add_argument("--jitter", type=float, default=0.0)
    ap.add_argument("--touch", action="append", default=[])
    ap.add_argument("--remove", action="append", default=[])
    ap.add_argument("--kill", action="append", type=int, default=[])
    ap.add_argument("--timeout", type=float, default=10.0)
    ap.add_argument("--log", help="write every request as a JSON line here")
    ap.add_argument("--meta", action="append", default=[], metavar="KEY=VALUE",
                    help="copied into the summary (proxy, scenario, profile, rep)")
    a = ap.parse_args()

    u = urllib.parse.urlsplit(a.url)
    if not u.hostname or not ipaddress.ip_address(u.hostname).is_loopback:
        sys.exit("failover_probe: only loopback targets")
    if a.interval <= 0 or a.duration <= 0 or not 0 <= a.at < a.duration:
        sys.exit("failover_probe: need interval > 0, duration > 0 and 0 <= at < duration")
    port = u.port or 80
    pool = Pool(u.hostname, port, a.timeout)
    path = u.path or "/"
    host_header = f"{u.hostname}:{port}"
    at = a.at + random.uniform(0, a.jitter) if a.jitter > 0 else a.at
    count = int(a.duration / a.interval)
    # Enough workers for every request that can be in flight: each takes at most two attempts of
    # --timeout per operation.
    workers = min(2048, math.ceil(4 * a.timeout / a.interval) + 8)

    recs, lock = [], threading.Lock()

    def one():
        sent = time.monotonic()
        status, be, err, stale = get(pool, path, host_header)
        lat = (time.monotonic() - sent) * 1000
        with lock:
            recs.append({"sent": sent, "lat_ms": lat, "status": status, "be": be, "err": err, "stale": stale})

    t_act = None
    futures = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers) as ex:
        start = time.monotonic()
        for i in range(count):
            due = start + i * a.interval
            if t_act is None and i * a.interval >= at:
                t_act = time.monotonic()
                act(a.touch, a.remove, a.kill)
            pause = due - time.monotonic()
            if pause > 0:
                time.sleep(pause)
            futures.append(ex.submit(one))
        if t_act is None:
            t_act = start + at
        concurrent.futures.wait(futures, timeout=4 * a.timeout + 5)
        for f in futures:
            f.cancel()
    pool.close()

    with lock:
        done = sorted(recs, key=lambda r: r["sent"])
    for r in done:
        r["rel"] = r.pop("sent") - t_act
    if a.log:
        with open(a.log, "w") as f:
            for r in done:
                f.write(json.dumps({k: (round(v, 4) if isinstance(v, float) else v) for k, v in r.items()}) + "\n")
    out = dict(kv.split("=", 1) for kv in a.meta)
    out["at_s"] = round(at, 3)
    out.update(summary(done))
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main()
