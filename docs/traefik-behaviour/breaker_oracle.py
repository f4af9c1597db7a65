#!/usr/bin/env python3
"""Ask the real Traefik binary what it thinks of circuitBreaker expressions, or
(with `--buffering`) of buffering retry expressions: the same parser in oxy's
two dialects.

Usage: breaker_oracle.py [--buffering] INPUT OUTPUT [PORT_BASE]

INPUT has one expression per line, written as a JSON string (so newlines,
tabs and NUL bytes are exact).  OUTPUT receives `json-string<TAB>verdict`,
where the verdict is `ok` for an enabled middleware or the error text
Traefik reports for a disabled one.

One Traefik process is started per run with a file provider: every
expression gets its own circuitBreaker middleware (or `buffering` with only
`retryExpression`, a valid non-empty middleware; the empty string means "no
retries") and its own router (a middleware is only built, and so only
validated, when a router uses it).
The dynamic configuration is written as JSON, which the YAML loader
accepts, so strings are passed through byte for byte.  Only loopback
ports in 18000-18599 are used; the process is stopped by its PID.
"""

import json
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

TRAEFIK = "/opt/traefik-venv/bin/traefik"


def main() -> int:
    args = sys.argv[1:]
    buffering = bool(args) and args[0] == "--buffering"
    if buffering:
        args = args[1:]
    src, dst = args[0], args[1]
    base = int(args[2]) if len(args) > 2 else 18000
    if not 18000 <= base <= 18598:
        raise SystemExit("port base must be within 18000-18598")
    api_port, web_port = base, base + 1

    with open(src, encoding="utf-8") as f:
        exprs = [json.loads(line) for line in f if line.strip()]

    middlewares, routers = {}, {}
    for i, expr in enumerate(exprs):
        middlewares[f"cb{i}"] = (
            {"buffering": {"retryExpression": expr}}
            if buffering
            else {"circuitBreaker": {"expression": expr}}
        )
        routers[f"r{i}"] = {
            "rule": f"Host(`r{i}.test`)",
            "entryPoints": ["web"],
            "middlewares": [f"cb{i}"],
            "service": "svc",
        }
    dynamic = {
        "http": {
            "routers": routers,
            "middlewares": middlewares,
            "services": {
                "svc": {"loadBalancer": {"servers": [{"url": "http://127.0.0.1:9"}]}}
            },
        }
    }

    with tempfile.TemporaryDirectory() as tmp:
        dyn = os.path.join(tmp, "dynamic.yaml")
        with open(dyn, "w", encoding="utf-8") as f:
            f.write(yaml_safe_json(dynamic))
        args = [
            TRAEFIK,
            "--log.level=ERROR",
            "--api.insecure=true",
            f"--entryPoints.traefik.address=127.0.0.1:{api_port}",
            f"--entryPoints.web.address=127.0.0.1:{web_port}",
            f"--providers.file.filename={dyn}",
            "--providers.file.watch=true",
        ]
        log = open(os.path.join(tmp, "traefik.log"), "w")
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        try:
            found = wait_for(api_port, len(exprs))
        finally:
            proc.send_signal(signal.SIGTERM)
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
            log.close()
            if len(found) < len(exprs):
                with open(os.path.join(tmp, "traefik.log"), encoding="utf-8", errors="replace") as lf:
                    sys.stderr.write(lf.read()[-3000:])

    with open(dst, "w", encoding="utf-8") as out:
        for i, expr in enumerate(exprs):
            m = found.get(f"cb{i}@file")
            if m is None:
                verdict = "MISSING"
            elif m.get("status") == "enabled":
                verdict = "ok"
            else:
                verdict = "\n".join(m.get("error") or ["?"])
            out.write(json.dumps(expr, ensure_ascii=False) + "\t" + verdict + "\n")
    return 0


def yaml_safe_json(value) -> str:
    """JSON text that the YAML loader reads back byte for byte.

    JSON escapes characters outside the BMP as surrogate pairs, which YAML rejects;
    YAML double-quoted strings accept `\\UXXXXXXXX` instead.
    """
    text = json.dumps(value, ensure_ascii=True)

    def pair(m: "re.Match[str]") -> str:
        hi, lo = int(m.group(1), 16), int(m.group(2), 16)
        return "\\U%08X" % (0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00))

    return re.sub(r"\\u(d[89ab][0-9a-f]{2})\\u(d[c-f][0-9a-f]{2})", pair, text)


def wait_for(port: int, count: int) -> dict:
    """Poll the API until every middleware is listed (or give up after 60 s)."""
    deadline = time.time() + 60
    found: dict = {}
    while time.time() < deadline:
        try:
            found = fetch_all(port)
            if len(found) >= count and all("status" in m for m in found.values()):
                # Routers are built asynchronously; give them a moment, then re-read.
                time.sleep(1.0)
                return fetch_all(port)
        except OSError:
            pass
        time.sleep(0.3)
    return found


def fetch_all(port: int) -> dict:
    out, page = {}, 1
    while True:
        url = f"http://127.0.0.1:{port}/api/http/middlewares?per_page=500&page={page}"
        with urllib.request.urlopen(url, timeout=5) as resp:
            items = json.load(resp)
            next_page = resp.headers.get("X-Next-Page", "1")
        for m in items:
            out[m["name"]] = m
        if not items or int(next_page) <= page:
            return out
        page = int(next_page)


if __name__ == "__main__":
    sys.exit(main())
