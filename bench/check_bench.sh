#!/usr/bin/env bash
# Benchmark of `bridgectl check` and `bridgectl build` as whole processes (release build), next to the config checkers of
# peer proxies on an equivalent configuration when they are installed (nginx -t, haproxy -c).
# Writes bench/results/check-<date>.md. Bounded: a fixed number of runs per command.
# Usage: bench/check_bench.sh [RUNS]   (default 30; needs python3, GNU time; uses hyperfine if present)
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS="${1:-30}"
TARGET_DIR="${CARGO_TARGET_DIR:-target}"
cargo build --release -p bridgectl >/dev/null
BIN="$TARGET_DIR/release/bridgectl"
WORK="$(mktemp -d)"
trap 'rm -rf "$WORK"' EXIT
python3 bench/gen_config.py 10000 "$WORK/big10k" >/dev/null

# Equivalent peer configurations of the seed (one HTTP listener, two backends, active health check
# where the peer has one).
cat > "$WORK/nginx.conf" <<'NGX'
daemon off; pid /dev/null; error_log stderr;
events {}
http {
  access_log off;
  upstream central { server 127.0.0.1:5001; server 127.0.0.1:5002; }
  server { listen 127.0.0.1:9000; location / { proxy_pass http://central; } }
}
NGX
cat > "$WORK/haproxy.cfg" <<'HAP'
defaults
  mode http
  timeout connect 5s
  timeout client 30s
  timeout server 30s
frontend web
  bind 127.0.0.1:9000
  default_backend central
backend central
  option httpchk GET /health/active
  server a 127.0.0.1:5001 check inter 5s
  server b 127.0.0.1:5002 check inter 5s
HAP

# median wall time in ms over RUNS runs of a command (python, no hyperfine needed)
median_ms() {
  python3 - "$RUNS" "$@" <<'PY'
import statistics, subprocess, sys, time
runs = int(sys.argv[1]); cmd = sys.argv[2:]
subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # warm-up
times = []
for _ in range(runs):
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    times.append((time.perf_counter() - t) * 1000)
print(f"{statistics.median(times):.2f}")
PY
}
peak_rss_mb() {
  /usr/bin/time -f "%M" "$@" 2>&1 >/dev/null | tail -1 | awk '{printf "%.1f", $1/1024}'
}

OUT="bench/results/check-$(date -u +%Y%m%d).md"
mkdir -p bench/results
{
  echo "# bridgectl check benchmark ($(date -u +%Y-%m-%d), $(nproc) cores, release build)"
  echo
  echo "Median wall time of the whole process over $RUNS runs, measured in one run of bench/check_bench.sh."
  echo
  echo "| command | input | median ms | peak RSS MB |"
  echo "|---|---|---|---|"
  echo "| bridgectl check | seed (examples/scadabridge) | $(median_ms "$BIN" check examples/scadabridge) | $(peak_rss_mb "$BIN" check examples/scadabridge) |"
  echo "| bridgectl check | 10,000 routers + 10,000 services ($(du -h "$WORK/big10k/dynamic.yml" | cut -f1)) | $(RUNS=5 median_ms "$BIN" check "$WORK/big10k") | $(peak_rss_mb "$BIN" check "$WORK/big10k") |"
  echo "| bridgectl build --profile dev | seed | $(median_ms "$BIN" build examples/scadabridge --profile dev --out "$WORK/plan.json") | $(peak_rss_mb "$BIN" build examples/scadabridge --profile dev --out "$WORK/plan.json") |"
  echo "| bridgectl build --profile dev | 10,000 routers + 10,000 services | $(RUNS=5 median_ms "$BIN" build "$WORK/big10k" --profile dev --out "$WORK/plan10k.json") | $(peak_rss_mb "$BIN" build "$WORK/big10k" --profile dev --out "$WORK/plan10k.json") |"
  if command -v nginx >/dev/null; then
    echo "| nginx -t (peer) | seed-equivalent nginx.conf | $(median_ms nginx -t -q -c "$WORK/nginx.conf") | $(peak_rss_mb nginx -t -q -c "$WORK/nginx.conf") |"
  fi
  if command -v haproxy >/dev/null; then
    echo "| haproxy -c (peer) | seed-equivalent haproxy.cfg | $(median_ms haproxy -c -q -f "$WORK/haproxy.cfg") | $(peak_rss_mb haproxy -c -q -f "$WORK/haproxy.cfg") |"
  fi
  echo
  echo "Targets: check of the seed < 10 ms; check of 10,000 routers and services < 1 s and < 200 MB peak RSS;"
  echo "build of the seed < 20 ms; build of 10,000 routers < 1.5 s."
} | tee "$OUT"
