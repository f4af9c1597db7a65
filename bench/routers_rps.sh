#!/usr/bin/env bash
# routers_rps.sh - does routing slow down with many routers? bridge-runtime's proxied req/s with
# one router and with N routers (default 10,000), same pinning as bench/proxy_rps.sh
# (proxy alone on CPU0 with one worker thread, wrk and the nginx backend on CPU1).
#
# Configurations (every router forwards to the same backend on 127.0.0.1, so nothing leaves
# loopback and health checks are not involved):
#   one    1 router:   Host(`app0.example.com`) && PathPrefix(`/api`)
#   host   N routers:  Host(`app<i>.example.com`) && PathPrefix(`/api/v<i%7>`); the request goes to
#          router N/2 (Host-indexed lookup)
#   path   N routers:  PathPrefix(`/p<i>/`); the request goes to router N/2 (no host: the routers
#          are tried in matching order)
# Usage (from the repo root, after `cargo build --release -p bridgectl -p bridge-runtime`):
#   bench/routers_rps.sh [-n N] [-d SECS] [-r REPEATS] [-R "one host path"]
set -u
HERE="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$HERE/bench/lib.sh"

N=10000 DUR=10 REPEATS=3 ROWS="one host path" CONNS=64
while getopts "n:d:r:R:" o; do
  case $o in
    n) N=$OPTARG ;; d) DUR=$OPTARG ;; r) REPEATS=$OPTARG ;; R) ROWS=$OPTARG ;;
    *) sed -n '2,16p' "$0"; exit 2 ;;
  esac
done
BIN=$BRIDGE_BIN_DIR
BE_PORT=18280 PORT=18281
RD=${RUN_DIR:-/tmp/bench-routers-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$RD"/tmp/{body,proxy,fastcgi,uwsgi,scgi}
OUT=$RD/results.tsv
trap 'stop_all' EXIT
trap 'stop_all; exit 130' INT TERM

cat >"$RD/backend.conf" <<EOC
master_process off;
daemon off;
worker_processes 1;
pid $RD/backend.pid;
error_log $RD/backend.err warn;
events { worker_connections 8192; }
http {
$(nginx_paths "$RD")
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    server { listen 127.0.0.1:$BE_PORT backlog=4096; location / { return 200 "ok"; } }
}
EOC

gen() { # row -> $RD/<row>/{traefik.yml,dynamic.yml,plan.json}; prints "host path" of the target
  local row=$1 d=$RD/$1
  mkdir -p "$d"
  printf 'entryPoints:\n  web:\n    address: ":80"\nproviders:\n  file:\n    filename: /etc/traefik/dynamic.yml\n' >"$d/traefik.yml"
  "$PY" - "$row" "$N" "$BE_PORT" "$d/dynamic.yml" <<'PY'
import sys
row, n, port, out = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
with open(out, "w") as f:
    f.write("http:\n  routers:\n")
    if row == "one":
        f.write('    r0:\n      rule: "Host(`app0.example.com`) && PathPrefix(`/api`)"\n      service: be\n')
    else:
        for i in range(n):
            rule = (f"Host(`app{i}.example.com`) && PathPrefix(`/api/v{i % 7}`)" if row == "host"
                    else f"PathPrefix(`/p{i}/`)")
            f.write(f'    r{i}:\n      rule: "{rule}"\n      service: be\n')
    f.write(f'  services:\n    be:\n      loadBalancer:\n        servers:\n          - url: "http://127.0.0.1:{port}"\n')
PY
  "$BIN/bridgectl" build "$d" --profile dev --out "$d/plan.json" >/dev/null || return 1
  local mid=$((N / 2))
  case $row in
    one) echo "app0.example.com /api" ;;
    host) echo "app$mid.example.com /api/v$((mid % 7))" ;;
    path) echo "any.example.com /p$mid/x" ;;
  esac
}

run_row() { # row rep
  local row=$1 rep=$2 host path bpid ppid bg rss
  read -r host path < <(gen "$row") || { log "cannot build $row"; return 1; }
  bg=$(wait_quiet "${QUIET_MAX_PCT:-10}" "${QUIET_WAIT_S:-600}") || log "WARNING: still ${bg}% busy, measuring anyway"
  start_bg "$RD/backend.log" taskset -c 1 "$NGINX_BIN" -p "$RD" -c "$RD/backend.conf"; bpid=$LAST_PID
  wait_port $BE_PORT || { stop_all; return 1; }
  start_bg "$RD/bridge.log" env TOKIO_WORKER_THREADS=1 taskset -c 0 \
    "$BIN/bridge-runtime" "$RD/$row/plan.json" --bind "web=127.0.0.1:$PORT"; ppid=$LAST_PID
  wait_port $PORT 30 || { stop_all; return 1; }
  [[ $(curl -s -m 2 -H "Host: $host" "http://127.0.0.1:$PORT$path") == ok ]] || log "WARNING: $row does not route $host$path"
  rss=$(mem_kb "$ppid" VmRSS)
  taskset -c 1 "$WRK_BIN" -t1 -c"$CONNS" -d3s -H "Host: $host" "http://127.0.0.1:$PORT$path" >/dev/null 2>&1
  taskset -c 1 "$WRK_BIN" -t1 -c"$CONNS" -d"$DUR"s --latency --timeout 5s -H "Host: $host" \
    "http://127.0.0.1:$PORT$path" >"$RD/$row.$rep.wrk.txt" 2>&1
  local f=$RD/$row.$rep.wrk.txt
  printf "%s\t%s\t%s\t%s\t%s\t%s\n" "$row" "$rep" "$(awk '/^Requests\/sec:/{print $2}' "$f")" \
    "$(awk '$1=="50%"{print $2}' "$f")" "$(awk '$1=="99%"{print $2}' "$f")" "$rss" >>"$OUT"
  stop_pid "$ppid"; stop_pid "$bpid"; sleep 1
}

log "run dir $RD; N=$N dur=${DUR}s repeats=$REPEATS rows: $ROWS"
printf "row\trep\trps\tp50\tp99\trss_kb\n" >"$OUT"
for ((rep = 1; rep <= REPEATS; rep++)); do
  for row in $ROWS; do
    log "rep $rep: $row"
    run_row "$row" "$rep"
  done
done
"$PY" - "$OUT" "$N" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by = {}
for r in rows:
    by.setdefault(r["row"], []).append(r)
med = {k: statistics.median(float(r["rps"]) for r in v if r["rps"]) for k, v in by.items()}
base = med.get("one")
print(f"| config | routers | reps | req/s (median) | vs one router | p50 | p99 | RSS MiB |")
print("|---|---|---|---|---|---|---|---|")
for k, v in by.items():
    n = 1 if k == "one" else int(sys.argv[2])
    ratio = f"{med[k] / base:.2f}x" if base else "-"
    rss = statistics.median(float(r["rss_kb"]) for r in v) / 1024
    print(f"| {k} | {n:,} | {len(v)} | {med[k]:,.0f} | {ratio} | {v[0]['p50']} | {v[0]['p99']} | {rss:.1f} |")
PY
