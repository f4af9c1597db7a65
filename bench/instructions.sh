#!/usr/bin/env bash
# User-space instructions per proxied request, bridge-runtime beside HAProxy, counted by
# valgrind's callgrind. Wall-clock req/s on this shared VM swings by ±30 % between runs; an
# instruction count does not, so it shows whether a change made the proxy do less work. It is a
# complement to bench/proxy_rps.sh (the req/s figures), not a replacement: kernel time
# (about half of a proxy's CPU here) is not counted, and instructions are not cycles.
#
# Same setup as proxy_rps.sh: an nginx backend answering "ok" on 127.0.0.1, HAProxy with one
# thread, keep-alive both sides, bridge-runtime with one worker serving the one-router plan of
# bench/lib.sh (bridge_plan; binaries from BRIDGE_BIN_DIR, default target/release). Each
# proxy is pinned to CPU0 (wrk and the backend to CPU1); counting starts after a warm-up and covers
# a fixed-length wrk run, and the total is divided by the requests wrk completed in that window.
#
# Usage (repo root, after `cargo build --release -p bridgectl -p bridge-runtime`):
#   bench/instructions.sh [-d SECONDS] [-c CONNECTIONS] [-r REPEATS]
# Needs valgrind, wrk, nginx, haproxy (apt). Prints one line per proxy and repetition, then medians.
# BRIDGE_PLAN_MIDDLEWARE puts one middleware on the router (bench/lib.sh); WRK_HEADER adds one
# request field to every request (`WRK_HEADER='Accept-Encoding: gzip'`).
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$HERE/bench/lib.sh"
DUR=5 CONNS=16 REPEATS=1
while getopts "d:c:r:" o; do
  case $o in d) DUR=$OPTARG ;; c) CONNS=$OPTARG ;; r) REPEATS=$OPTARG ;; *) exit 2 ;; esac
done
for tool in valgrind callgrind_control callgrind_annotate wrk nginx haproxy; do
  command -v "$tool" >/dev/null || { echo "instructions.sh: $tool is not installed" >&2; exit 1; }
done
RD=$(mktemp -d /tmp/bridge-instr.XXXXXX)
# INSTR_PORT moves the three ports (backend, HAProxy, bridge-runtime) off 18280-18282.
BE_PORT=${INSTR_PORT:-18280} HAP_PORT=$((BE_PORT + 1)) BR_PORT=$((BE_PORT + 2))
mkdir -p "$RD"/tmp/{body,proxy,fastcgi,uwsgi,scgi}
trap 'stop_all' EXIT
trap 'stop_all; exit 130' INT TERM
cat >"$RD/backend.conf" <<EOC
master_process off;
daemon off;
worker_processes 1;
pid $RD/backend.pid;
error_log $RD/backend.err warn;
events { worker_connections 4096; }
http {
$(nginx_paths "$RD")
    access_log off;
    default_type text/plain;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    server {
        listen 127.0.0.1:$BE_PORT;
        location = /health/active { return 200 "healthy\n"; }
        location / { return 200 "ok"; }
    }
}
EOC
cat >"$RD/haproxy.cfg" <<EOC
global
    nbthread 1
    maxconn 4096
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 60s
frontend fe
    bind 127.0.0.1:$HAP_PORT
    default_backend be
backend be
    http-reuse always
    server s1 127.0.0.1:$BE_PORT
EOC
start_bg "$RD/backend.log" taskset -c 1 nginx -c "$RD/backend.conf" -p "$RD"
wait_port "$BE_PORT"

# count NAME PORT CMD...: CMD runs the proxy under $VG (callgrind on CPU0, counting off until
# the warm-up is done), keeping its PID; prints instructions per request.
count() {
  local name=$1 port=$2
  shift 2
  local out="$RD/$name.$rep.cg"
  VG="taskset -c 0 valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file=$out"
  start_bg "$RD/$name.log" "$@"
  local pid=$LAST_PID
  wait_port "$port" 30
  # WRK_HEADER (optional): one request field for every request, e.g. 'Accept-Encoding: gzip'.
  local hdr=()
  [[ -n ${WRK_HEADER:-} ]] && hdr=(-H "$WRK_HEADER")
  taskset -c 1 wrk -t1 -c"$CONNS" -d2s "${hdr[@]}" "http://127.0.0.1:$port/" >/dev/null
  callgrind_control -i on "$pid" >/dev/null 2>&1
  local res
  res=$(taskset -c 1 wrk -t1 -c"$CONNS" -d"${DUR}s" "${hdr[@]}" "http://127.0.0.1:$port/")
  callgrind_control -i off "$pid" >/dev/null 2>&1
  stop_pid "$pid"
  local n ir
  n=$(awk '/requests in/{print $1}' <<<"$res")
  ir=$(callgrind_annotate "$out" 2>/dev/null | awk '/PROGRAM TOTALS/{gsub(",","",$1); print $1}')
  local per=$((ir / n))
  echo "$name rep $rep: $n requests, $ir instructions, $per per request"
  eval "${name}_all+=\" $per\""
}

run_haproxy() { exec $VG haproxy -db -f "$RD/haproxy.cfg"; }
# The plan is built once; the runtime is exec'd behind $VG (same PID).
bridge_plan "$RD/bridge" "127.0.0.1:$BE_PORT"
run_bridge() {
  TOKIO_WORKER_THREADS=1 exec $VG "$BRIDGE_RUNTIME_BIN" "$RD/bridge/plan.json" --bind "web=127.0.0.1:$BR_PORT"
}
haproxy_all="" bridge_all=""
for rep in $(seq 1 "$REPEATS"); do
  count haproxy "$HAP_PORT" run_haproxy
  count bridge "$BR_PORT" run_bridge
done
med() { tr ' ' '\n' <<<"$1" | grep . | sort -n | awk '{a[NR]=$1} END{print a[int((NR+1)/2)]}'; }
h=$(med "$haproxy_all") b=$(med "$bridge_all")
echo "median instructions per request: haproxy $h, bridge $b (bridge/haproxy $(awk -v b="$b" -v h="$h" 'BEGIN{printf "%.2f", b/h}'))"
