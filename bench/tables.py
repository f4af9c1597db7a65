#!/usr/bin/env python3
"""Markdown tables for the results of bench/proxy_rps.sh and bench/failover.sh.

  tables.py rps RESULTS.tsv [--quiet-max PCT]   one line per run, then medians per row
  tables.py failover RESULTS.jsonl              one line per case, then medians per scenario

rps: runs measured while processes other than the benchmark's used more than PCT % of the
machine (just before the row, or during it) are listed but left out of the medians. The TSV
columns are those proxy_rps.sh writes (the same as the earlier result files in bench/results/).
"""

import argparse
import csv
import json
import statistics
import sys
from collections import OrderedDict


def num(s):
    try:
        return float(s)
    except (TypeError, ValueError):
        return float("nan")


def mib(kb):
    return f"{num(kb) / 1024:.1f}"


def table(head, rows):
    out = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def rps(a):
    with open(a.file) as f:
        runs = list(csv.DictReader(f, delimiter="\t"))
    if not runs:
        print("(no runs recorded)")
        return

    def quiet(r):
        return num(r.get("bg_busy_pct") or 0) <= a.quiet_max and num(r.get("foreign_pct") or 0) <= a.quiet_max

    print(table(
        ["row", "rep", "req/s", "p50 ms", "p99 ms", "errors", "CPU busy %", "RSS idle MiB",
         "RSS after MiB", "peak MiB", "others' CPU % before / during"],
        [[r["row"], r["rep"], f"{num(r['rps']):,.0f}", f"{num(r['p50_us']) / 1000:.3f}",
          f"{num(r['p99_us']) / 1000:.3f}", r["errors"], r["cpu_busy"], mib(r["rss_idle_kb"]),
          mib(r["rss_after_kb"]), mib(r["hwm_kb"]), f"{r['bg_busy_pct']} / {r['foreign_pct']}"]
         for r in runs]))
    groups = OrderedDict()
    for r in runs:
        if quiet(r):
            groups.setdefault(r["row"], []).append(r)
    left_out = [f"{r['row']} rep {r['rep']}" for r in runs if not quiet(r)]
    print()
    print(f"Medians over the repetitions (left out, others above {a.quiet_max:g} % of the machine:"
          f" {', '.join(left_out) or 'none'}); ratio = req/s of the row / req/s of haproxy.")
    print()

    def med(rs, k):
        v = [num(r[k]) for r in rs if num(r[k]) == num(r[k])]
        return statistics.median(v) if v else float("nan")

    base = med(groups["haproxy"], "rps") if "haproxy" in groups else None
    lines = []
    for name, rs in groups.items():
        v = [num(r["rps"]) for r in rs]
        m = med(rs, "rps")
        lines.append([name, len(rs), f"{m:,.0f}", f"{min(v):,.0f}-{max(v):,.0f}",
                      f"{m / base:.2f}x" if base else "-", f"{med(rs, 'p50_us') / 1000:.3f}",
                      f"{med(rs, 'p99_us') / 1000:.3f}", sum(int(num(r["errors"]) or 0) for r in rs),
                      f"{med(rs, 'rss_idle_kb') / 1024:.1f}", f"{med(rs, 'rss_after_kb') / 1024:.1f}"])
    print(table(["row", "reps", "req/s (median)", "min-max", "vs haproxy", "p50 ms", "p99 ms",
                 "errors", "RSS idle MiB", "RSS after MiB"], lines))


def secs(v):
    return "-" if v is None else f"{max(v, 0.0):.2f}"


def failover(a):
    with open(a.file) as f:
        cases = [json.loads(line) for line in f if line.strip()]
    if not cases:
        print("(no cases recorded)")
        return
    order = {"flip": 0, "flip-reject": 1, "kill": 2}
    cases.sort(key=lambda c: (c["profile"], order.get(c["scenario"], 9), c["scenario"], c["proxy"], int(c["rep"])))
    print(table(
        ["profile", "scenario", "proxy", "rep", "T (s)", "first B (s)", "last A (s)", "converged (s)",
         "failed / after T", "failed by", "fail window (s)", "max latency after T (ms)",
         "stale retries", "before T: backends / failed"],
        [[c["profile"], c["scenario"], c["proxy"], c["rep"], f"{c['at_s']:.2f}", secs(c["first_b_s"]),
          secs(c["last_a_s"]), secs(c["converged_s"]), f"{c['failed']} / {c['after']}",
          " ".join(f"{k}:{v}" for k, v in c["failed_by"].items()) or "-",
          "-" if c["fail_first_s"] is None else f"{c['fail_first_s']:.2f}..{c['fail_last_s']:.2f}",
          c["max_latency_after_ms"], c["stale_retries"], f"{c['before_backends'] or '-'} / {c['before_failed']}"]
         for c in cases]))
    groups = OrderedDict()
    for c in cases:
        groups.setdefault((c["profile"], c["scenario"], c["proxy"]), []).append(c)

    def med_s(vals):
        seen = [v for v in vals if v is not None]
        if not seen:
            return "never"
        s = f"{max(statistics.median(seen), 0.0):.2f}"
        if len(seen) > 1:
            s += f" ({max(min(seen), 0.0):.2f}-{max(max(seen), 0.0):.2f})"
        if len(seen) < len(vals):
            s += f", never in {len(vals) - len(seen)}"
        return s

    lines = []
    for (prof, scen, proxy), cs in groups.items():
        fails = [c["failed"] for c in cs]
        lines.append([prof, scen, proxy, len(cs), med_s([c["first_b_s"] for c in cs]),
                      med_s([c["converged_s"] for c in cs]),
                      f"{statistics.median(fails):.0f} ({min(fails)}-{max(fails)})",
                      f"{statistics.median(c['max_latency_after_ms'] for c in cs):.0f}"])
    print()
    print("Medians (min-max) per proxy, seconds after T; 'never' = B did not answer (or the answers did"
          " not settle on B) within the window.")
    print()
    print(table(["profile", "scenario", "proxy", "n", "first B (s)", "converged (s)",
                 "failed requests", "max latency after T (ms)"], lines))


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("rps")
    p.add_argument("file")
    p.add_argument("--quiet-max", type=float, default=10)
    p.set_defaults(f=rps)
    p = sub.add_parser("failover")
    p.add_argument("file")
    p.set_defaults(f=failover)
    a = ap.parse_args()
    a.f(a)


if __name__ == "__main__":
    sys.exit(main())
