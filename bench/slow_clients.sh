#!/usr/bin/env bash
# slow_clients.sh - does bridge-runtime keep serving normal clients while slow and idle clients hold
# connections? One Python backend (bench/proxy_load.py node) behind bridge-runtime, then phases:
#
#   baseline    the probe alone (reference latency)
#   slowloris   slowhttptest -H: header lines of a few bytes every SLOW_INTERVAL s
#   slowbody    slowhttptest -B: POST bodies of a few bytes every SLOW_INTERVAL s
#   slowread    slowhttptest -X: GET /big (256 KiB answers, pipelined 3x) read a few bytes at a time
#               through a tiny receive window
#   idle        IDLE_CONNS idle TCP connections that send nothing (reopened when the proxy closes them)
#   bigheaders  BIG_CONNS connections in parallel, each sending a request with BIG_BYTES of headers,
#               again and again for the phase
#
# Each phase lasts DURATION s while a probe client makes one normal GET every PROBE_INTERVAL_MS on a
# fresh connection and records latency and errors; bridge-runtime's VmRSS and open fds are read from
# /proc/PID before the phase, every 0.5 s during it, and SETTLE s after it.
#
# Proxy settings (TIMEOUTS): `explicit` (default) gives the entry point
# transport.respondingTimeouts readTimeout 10s and idleTimeout 30s; `default` leaves Traefik's
# defaults (readTimeout 60s, idleTimeout 180s). Either way the header-read bound is 10 s (hyper's
# one timer, min(idleTimeout, 10s), docs/runtime.md#limits); maxHeaderBytes is the 1 MiB default.
#
# Usage (from anywhere; everything is on 127.0.0.1, every process is started here and stopped by PID):
#   bench/slow_clients.sh                      # 1000 connections, 60 s per phase, release build
#   QUICK=1 bench/slow_clients.sh              # 200 connections, 20 s per phase
#   BRIDGE_RUNTIME=target/debug/bridge-runtime BRIDGECTL=target/debug/bridgectl QUICK=1 \
#     RESULT_SUFFIX=-trial bench/slow_clients.sh
# Environment: CONNS, DURATION, RATE (slowhttptest connections/s), SLOW_INTERVAL, IDLE_CONNS,
#   IDLE_REOPEN (1), BIG_CONNS, BIG_BYTES, PROBE_INTERVAL_MS, PROBE_TIMEOUT, SETTLE, TIMEOUTS,
#   PHASES ("baseline slowloris slowbody slowread idle bigheaders"), PORT_BASE (18510), RUN_DIR,
#   RESULT_SUFFIX, P99_FACTOR (5), P99_FLOOR_MS (100), BRIDGE_RUNTIME, BRIDGECTL.
# Without BRIDGE_RUNTIME/BRIDGECTL it runs `cargo build --release -p bridge-runtime -p bridgectl`.
# Needs python3 (3.9+, standard library) and Debian's slowhttptest (apt-get install -y slowhttptest).
# Writes bench/results/slow-clients-<YYYYMMDD><RESULT_SUFFIX>.md; raw data stays in the run directory.
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
cd "$HERE"
PY=${PYTHON:-python3}
LOAD="$HERE/bench/proxy_load.py"

QUICK=${QUICK:-0}
if [[ $QUICK == 1 ]]; then
  CONNS=${CONNS:-200} DURATION=${DURATION:-20}
else
  CONNS=${CONNS:-1000} DURATION=${DURATION:-60}
fi
RATE=${RATE:-200}
SLOW_INTERVAL=${SLOW_INTERVAL:-5}
IDLE_CONNS=${IDLE_CONNS:-10000}
IDLE_REOPEN=${IDLE_REOPEN:-1}
BIG_CONNS=${BIG_CONNS:-50}
BIG_BYTES=${BIG_BYTES:-1048576}
PROBE_INTERVAL_MS=${PROBE_INTERVAL_MS:-200}
PROBE_TIMEOUT=${PROBE_TIMEOUT:-5}
SETTLE=${SETTLE:-15}
TIMEOUTS=${TIMEOUTS:-explicit}
PHASES=${PHASES:-baseline slowloris slowbody slowread idle bigheaders}
PORT_BASE=${PORT_BASE:-18510}
P99_FACTOR=${P99_FACTOR:-5}
P99_FLOOR_MS=${P99_FLOOR_MS:-100}
BE_PORT=$PORT_BASE
WEB_PORT=$((PORT_BASE + 1))
DATE=$(date -u +%Y%m%d)
OUT="$HERE/bench/results/slow-clients-${DATE}${RESULT_SUFFIX:-}.md"

NAME=slow_clients
# shellcheck source=bench/proc.sh
source "$HERE/bench/proc.sh"

for tool in "$PY" curl; do command -v "$tool" >/dev/null || die "$tool is not installed"; done
if [[ " $PHASES " =~ \ slow(loris|body|read)\  ]] && ! command -v slowhttptest >/dev/null; then
  die "slowhttptest is not installed: sudo apt-get install -y slowhttptest (Debian/Ubuntu), or set PHASES to skip the slowhttptest phases"
fi

find_binaries

# File descriptors: the idle phase holds IDLE_CONNS sockets in the helper and as many in the proxy
# (separate processes, each with its own limit).
HARD=$(ulimit -Hn)
WANT=$((IDLE_CONNS + CONNS + 1024))
if [[ $HARD == unlimited ]]; then ulimit -n $((WANT > 65536 ? WANT : 65536)); else ulimit -n "$HARD"; fi
(($(ulimit -n) >= WANT)) || die "open-file limit $(ulimit -n) < $WANT needed (IDLE_CONNS=$IDLE_CONNS); raise the hard limit or lower IDLE_CONNS"

RD=${RUN_DIR:-$(mktemp -d /tmp/bench-slow.XXXXXX)}
mkdir -p "$RD/etc"
ports_free "$BE_PORT" "$WEB_PORT"

# --- configuration ---------------------------------------------------------------------------
{
  printf 'entryPoints:\n  web:\n    address: ":80"\n'
  if [[ $TIMEOUTS == explicit ]]; then
    printf '    transport:\n      respondingTimeouts:\n        readTimeout: 10s\n        idleTimeout: 30s\n'
  fi
  printf 'providers:\n  file:\n    filename: /etc/traefik/dynamic.yml\n'
} >"$RD/etc/traefik.yml"
cat >"$RD/etc/dynamic.yml" <<YML
http:
  routers:
    app:
      rule: "PathPrefix(\`/\`)"
      service: app
      entryPoints: [web]
  services:
    app:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:$BE_PORT"
YML
"$BRIDGECTL" build "$RD/etc" --profile dev --out "$RD/plan.json" >"$RD/build.log" 2>&1 ||
  { cat "$RD/build.log" >&2; die "bridgectl build failed"; }

"$PY" "$LOAD" node --listen "127.0.0.1:$BE_PORT" --name a --active 1 >"$RD/backend.log" 2>&1 &
PIDS+=($!)
wait_port "$BE_PORT" 10 || die "backend did not start (see $RD/backend.log)"
"$BRIDGE_RUNTIME" "$RD/plan.json" --bind "web=127.0.0.1:$WEB_PORT" >"$RD/proxy.log" 2>&1 &
PPID_=$!
PIDS+=("$PPID_")
wait_port "$WEB_PORT" 60 "$PPID_" || die "bridge-runtime did not start (see $RD/proxy.log)"
curl -sf -m 5 "http://127.0.0.1:$WEB_PORT/" >/dev/null || die "no 200 through the proxy"
log "run dir $RD; proxy PID $PPID_ on 127.0.0.1:$WEB_PORT, backend on 127.0.0.1:$BE_PORT"
log "phases: $PHASES; $DURATION s each; slowhttptest $CONNS connections at $RATE/s; $IDLE_CONNS idle"

: >"$RD/phases.jsonl"
# "rss_kb fds threads client_sockets upstream_sockets" of the proxy
procstat() { "$PY" "$LOAD" procstat --pid "$PPID_" --proxy-ports "$WEB_PORT" --node-ports "$BE_PORT"; }
jstr() { "$PY" -c 'import json,sys; print(json.dumps(sys.argv[1]))' "$1"; }

# run_phase NAME TITLE WHAT KIND CMD... : KIND is slowhttptest, helper or none
run_phase() {
  local name=$1 title=$2 what=$3 kind=$4
  shift 4
  kill -0 "$PPID_" 2>/dev/null || die "bridge-runtime is gone before phase $name (see $RD/proxy.log)"
  local before after sp pp log_from log_to
  before=$(procstat)
  log_from=$(wc -l <"$RD/proxy.log")
  log "phase $name: $title (rss_kb fds threads client upstream before: $before)"
  "$PY" "$LOAD" sample --pid "$PPID_" --interval 0.5 --duration $((DURATION + SETTLE + 30)) \
    --out "$RD/$name.samples.tsv" &
  sp=$!
  PIDS+=("$sp")
  "$PY" "$LOAD" probe --url "http://127.0.0.1:$WEB_PORT/probe" --interval "$(awk -v m="$PROBE_INTERVAL_MS" 'BEGIN{print m/1000}')" \
    --duration "$DURATION" --timeout "$PROBE_TIMEOUT" --out "$RD/$name.probe" >/dev/null &
  pp=$!
  PIDS+=("$pp")
  if (($# > 0)); then
    # Bounded twice: the tool's own length and an outer timeout.
    timeout -k 5 $((DURATION + 60)) "$@" >"$RD/$name.out" 2>&1 || log "phase $name: $1 exited with $?"
  fi
  wait "$pp" || log "probe exited with $?"
  sleep "$SETTLE"
  after=$(procstat)
  log_to=$(wc -l <"$RD/proxy.log")
  stop_pid "$sp"
  local extra=""
  if [[ $kind == slowhttptest ]]; then
    "$PY" "$LOAD" slowcsv "$RD/$name.csv" >"$RD/$name.slowcsv.json" || echo '{"rows":[],"max_connected":0,"max_pending":0,"final_closed":0,"unavailable_seconds":[]}' >"$RD/$name.slowcsv.json"
    local verdict
    verdict=$(sed 's/\x1b\[[0-9;]*[A-Za-z]//g' "$RD/$name.out" | awk -F: '
      /service available/ {sa=$2} /Exit status/ {ex=$2} /^error:/ {er=$2}
      END {gsub(/^ +| +$/,"",sa); gsub(/^ +| +$/,"",ex); gsub(/^ +| +$/,"",er);
           printf "exit status \"%s\", last status: service available %s, errors %s", ex, sa, er}')
    extra=", \"slowcsv\": $(jstr "$RD/$name.slowcsv.json"), \"verdict_line\": $(jstr "$verdict"), \"cmd\": $(jstr "$(basename "$1") ${*:2}")"
  elif [[ $kind == helper ]]; then
    extra=", \"helper\": $(jstr "$RD/$name.json")"
  fi
  printf '{"name": %s, "title": %s, "what": %s, "probe": %s, "samples": %s, "before": %s, "after": %s, "log_from": %s, "log_to": %s%s}\n' \
    "$(jstr "$name")" "$(jstr "$title")" "$(jstr "$what")" "$(jstr "$RD/$name.probe")" \
    "$(jstr "$RD/$name.samples.tsv")" "$(jstr "$before")" "$(jstr "$after")" "$log_from" "$log_to" "$extra" >>"$RD/phases.jsonl"
  log "phase $name: probe $(cat "$RD/$name.probe.json"); after: $after"
}

URL="http://127.0.0.1:$WEB_PORT"
for phase in $PHASES; do
  case $phase in
    baseline)
      run_phase baseline "Baseline (probe only)" "The probe alone, for reference." none ;;
    slowloris)
      run_phase slowloris "Slowloris (slowhttptest -H)" \
        "$CONNS connections opened at $RATE/s, each sending an unfinished request head and then one more header line of at most 2 bytes of name and value every $SLOW_INTERVAL s." \
        slowhttptest slowhttptest -H -c "$CONNS" -r "$RATE" -i "$SLOW_INTERVAL" -x 2 -l "$DURATION" -p 3 \
        -u "$URL/" -g -o "$RD/slowloris" ;;
    slowbody)
      run_phase slowbody "Slow body (slowhttptest -B)" \
        "$CONNS POST requests opened at $RATE/s announcing Content-Length 8192, then a few body bytes every $SLOW_INTERVAL s (the proxy streams the body to the backend)." \
        slowhttptest slowhttptest -B -c "$CONNS" -r "$RATE" -i "$SLOW_INTERVAL" -x 4 -s 8192 -l "$DURATION" -p 3 \
        -u "$URL/upload" -g -o "$RD/slowbody" ;;
    slowread)
      run_phase slowread "Slow read (slowhttptest -X)" \
        "$CONNS connections opened at $RATE/s, each pipelining GET /big (256 KiB) 3 times with a receive window of 512-1024 bytes, reading 32 bytes every 2 s." \
        slowhttptest slowhttptest -X -c "$CONNS" -r "$RATE" -w 512 -y 1024 -n 2 -z 32 -k 3 -l "$DURATION" -p 3 \
        -u "$URL/big?bytes=262144" -g -o "$RD/slowread" ;;
    idle)
      reopen=()
      [[ $IDLE_REOPEN == 1 ]] && reopen=(--reopen --max-reopen-factor 10)
      run_phase idle "$IDLE_CONNS idle TCP connections" \
        "A Python helper opens $IDLE_CONNS TCP connections as fast as connect returns and sends nothing; $([[ $IDLE_REOPEN == 1 ]] && echo "each one the proxy closes is reopened (at most 10x $IDLE_CONNS opens), so about $IDLE_CONNS stay open for the phase" || echo "closed ones are not reopened"). All are closed at the end." \
        helper "$PY" "$LOAD" idle --target "127.0.0.1:$WEB_PORT" --count "$IDLE_CONNS" --duration "$DURATION" \
        "${reopen[@]}" --out "$RD/idle.json" ;;
    bigheaders)
      run_phase bigheaders "$BIG_BYTES bytes of headers on $BIG_CONNS connections" \
        "$BIG_CONNS connections in parallel, each sending GET / with $BIG_BYTES bytes of header lines (8 KiB each; the header section exceeds the 1 MiB maxHeaderBytes by the request line), reading the answer, closing, and again until the phase ends (at most 1000 rounds each)." \
        helper "$PY" "$LOAD" bigheaders --target "127.0.0.1:$WEB_PORT" --conns "$BIG_CONNS" --bytes "$BIG_BYTES" \
        --duration "$DURATION" --out "$RD/bigheaders.json" ;;
    *) die "unknown phase $phase" ;;
  esac
done
kill -0 "$PPID_" 2>/dev/null || die "bridge-runtime exited (see $RD/proxy.log)"

timeouts_desc="readTimeout 10s, idleTimeout 30s (transport.respondingTimeouts on the entry point)"
[[ $TIMEOUTS == explicit ]] || timeouts_desc="Traefik's defaults (readTimeout 60s, idleTimeout 180s)"
"$PY" - "$RD/settings.json" <<PY
import json, sys
settings = {
  "date": "$(date -u +%Y-%m-%d)", "binaries": "$BUILD",
  "probe_interval_ms": $PROBE_INTERVAL_MS, "probe_timeout": $PROBE_TIMEOUT,
  "p99_factor": $P99_FACTOR, "p99_floor_ms": $P99_FLOOR_MS,
  "table": [
    ["mode", "QUICK=1" if "$QUICK" == "1" else "full"],
    ["phase length", "$DURATION s, then $SETTLE s to settle before the 'after' reading"],
    ["slowhttptest", "$CONNS connections at $RATE/s, follow-up data every $SLOW_INTERVAL s, probe timeout 3 s"],
    ["idle connections", "$IDLE_CONNS (reopen: $IDLE_REOPEN)"],
    ["large headers", "$BIG_CONNS connections x $BIG_BYTES bytes"],
    ["entry point timeouts", "$timeouts_desc; header-read bound 10 s; maxHeaderBytes 1 MiB (default)"],
    ["backend", "bench/proxy_load.py node (threaded Python HTTP/1.1), 127.0.0.1:$BE_PORT"],
    ["proxy", "bridge-runtime, one router PathPrefix(/) on web = 127.0.0.1:$WEB_PORT, default worker threads ($(nproc) CPUs)"],
    ["open-file limit", "$(ulimit -n)"],
    ["host", "$(nproc) cores, $(uname -sr)"],
    ["proxy log", "$(wc -l <"$RD/proxy.log") lines ($(grep -c '^bridge-runtime: warning' "$RD/proxy.log" || true) warnings, $(grep -c '^bridge-runtime: error' "$RD/proxy.log" || true) errors); the frequent ones are listed per phase"],
    ["run directory", "$RD"],
  ],
}
json.dump(settings, open(sys.argv[1], "w"), indent=1)
PY
mkdir -p "$HERE/bench/results"
"$PY" "$LOAD" slow-report --dir "$RD" --out "$OUT" >/dev/null
log "wrote $OUT (raw data in $RD)"
cat "$OUT"
