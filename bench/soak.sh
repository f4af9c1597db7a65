#!/usr/bin/env bash
# soak.sh - SOAK_MINUTES of mixed keep-alive traffic through bridge-runtime serving the seed
# configuration (examples/scadabridge, dev profile), with failovers and reloads, watching for leaks.
#
# Setup (all on 127.0.0.1, every process started here and stopped by PID):
#   - two simulated central nodes (bench/proxy_load.py node) on 127.0.0.1:$A_PORT and :$B_PORT;
#     /health/active answers 200 only on the node named in a control file; the standby answers
#     application requests with 503 (STANDBY_SERVES=1: 200) and closes its WebSocket connections
#     when demoted (WS_CLOSE_ON_DEMOTE=0: keeps them); every other path echoes JSON naming the node
#     and the length and CRC-32 of the body it read; WebSocket echo.
#   - the seed's traefik.yml and dynamic.yml, unchanged apart from the node ports (host names stay and
#     are pinned with --resolve, as tests/sim.rs does) plus an HTTPS entry point `websecure` with a
#     router `central-tls` (same rule and service) and a self-signed ECDSA certificate made by
#     `openssl req -x509` as the default certificate. Built with `bridgectl build --profile dev`.
#   - clients (one Python process, threads): GET_CLIENTS GET and POST_CLIENTS POST clients (bodies of
#     1-64 KiB, checked by length and CRC-32 at the node) on web, HTTPS_CLIENTS GET clients on
#     websecure (certificate verified against the test certificate), all keep-alive with a new
#     connection every REUSE requests and PAUSE_MS between requests; WS_CLIENTS WebSocket clients
#     echoing a message every second on one connection, reconnecting when it is closed (counted).
#   - every FAILOVER_EVERY s (120) the active node is demoted and the other promoted at once
#     (alternating); every RELOAD_EVERY s (300) the plan is rebuilt and the proxy gets SIGHUP; every
#     SAMPLE_EVERY s (10): ok/failed per kind, VmRSS and open fds of the proxy from /proc/PID.
#   - a failure whose request overlaps the WINDOW s (1) after a failover counts as a failover-window
#     failure (the documented failover behaviour: at most a few); all others count against the run.
#
# Usage (from anywhere):
#   bench/soak.sh                                     # 60 minutes, release build
#   BRIDGE_RUNTIME=target/debug/bridge-runtime BRIDGECTL=target/debug/bridgectl \
#     SOAK_MINUTES=3 FAILOVER_EVERY=40 RELOAD_EVERY=70 RESULT_SUFFIX=-trial bench/soak.sh
# Environment: SOAK_MINUTES, FAILOVER_EVERY, RELOAD_EVERY, SAMPLE_EVERY, WINDOW, GET_CLIENTS (2),
#   POST_CLIENTS (2), HTTPS_CLIENTS (1), WS_CLIENTS (1), PAUSE_MS (50), REUSE (100), STANDBY_SERVES (0),
#   WS_CLOSE_ON_DEMOTE (1), PORT_BASE (18600), RUN_DIR, RESULT_SUFFIX, BRIDGE_RUNTIME, BRIDGECTL.
# Without BRIDGE_RUNTIME/BRIDGECTL it runs `cargo build --release -p bridge-runtime -p bridgectl`.
# Needs python3 (3.9+, standard library), openssl, curl.
# Writes bench/results/soak-<YYYYMMDD><RESULT_SUFFIX>.md and .tsv (the raw 10 s samples).
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
cd "$HERE"
PY=${PYTHON:-python3}
LOAD="$HERE/bench/proxy_load.py"

SOAK_MINUTES=${SOAK_MINUTES:-60}
FAILOVER_EVERY=${FAILOVER_EVERY:-120}
RELOAD_EVERY=${RELOAD_EVERY:-300}
SAMPLE_EVERY=${SAMPLE_EVERY:-10}
WINDOW=${WINDOW:-1}
GET_CLIENTS=${GET_CLIENTS:-2}
POST_CLIENTS=${POST_CLIENTS:-2}
HTTPS_CLIENTS=${HTTPS_CLIENTS:-1}
WS_CLIENTS=${WS_CLIENTS:-1}
PAUSE_MS=${PAUSE_MS:-50}
REUSE=${REUSE:-100}
STANDBY_SERVES=${STANDBY_SERVES:-0}
WS_CLOSE_ON_DEMOTE=${WS_CLOSE_ON_DEMOTE:-1}
PORT_BASE=${PORT_BASE:-18600}
A_PORT=$((PORT_BASE + 1)) B_PORT=$((PORT_BASE + 2))
WEB_PORT=$((PORT_BASE + 10)) TLS_PORT=$((PORT_BASE + 11)) DASH_PORT=$((PORT_BASE + 12))
DATE=$(date -u +%Y%m%d)
OUT="$HERE/bench/results/soak-${DATE}${RESULT_SUFFIX:-}.md"
OUT_TSV="$HERE/bench/results/soak-${DATE}${RESULT_SUFFIX:-}.tsv"

NAME=soak
# The proxy drains in-flight requests on TERM: up to 15 s before KILL.
STOP_WAIT=150
# shellcheck source=bench/proc.sh
source "$HERE/bench/proc.sh"
for tool in "$PY" openssl curl; do command -v "$tool" >/dev/null || die "$tool is not installed"; done

find_binaries

RD=${RUN_DIR:-$(mktemp -d /tmp/bench-soak.XXXXXX)}
mkdir -p "$RD/etc/certs"
ports_free "$A_PORT" "$B_PORT" "$WEB_PORT" "$TLS_PORT" "$DASH_PORT"

# --- configuration: the seed plus an HTTPS entry point ---------------------------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
  -subj "/CN=scadabridge.local" -addext "subjectAltName=DNS:scadabridge.local,IP:127.0.0.1" \
  -keyout "$RD/etc/certs/soak.key" -out "$RD/etc/certs/soak.crt" 2>"$RD/openssl.log" ||
  { cat "$RD/openssl.log" >&2; die "openssl req failed"; }
"$PY" - "$HERE/examples/scadabridge" "$RD/etc" "$A_PORT" "$B_PORT" <<'PY'
import sys
src, dst, a, b = sys.argv[1:]
# The plan keeps certificate paths as written and the runtime reads them as they are: absolute paths
# into the run directory.
static = open(f"{src}/traefik.yml").read()
dynamic = open(f"{src}/dynamic.yml").read()
def sub(text, old, new):
    if text.count(old) != 1:
        sys.exit(f"soak.sh: the seed changed shape: {old!r} is not in it exactly once")
    return text.replace(old, new)
static = sub(static, "entryPoints:\n", 'entryPoints:\n  websecure:\n    address: ":443"\n')
dynamic = sub(dynamic, "scadabridge-central-a:5000", f"scadabridge-central-a:{a}")
dynamic = sub(dynamic, "scadabridge-central-b:5000", f"scadabridge-central-b:{b}")
dynamic = sub(dynamic, "  routers:\n", "  routers:\n    central-tls:\n      rule: \"PathPrefix(`/`)\"\n"
              "      service: central\n      entryPoints:\n        - websecure\n      tls: {}\n")
dynamic += ("\ntls:\n  stores:\n    default:\n      defaultCertificate:\n"
            f"        certFile: {dst}/certs/soak.crt\n        keyFile: {dst}/certs/soak.key\n")
open(f"{dst}/traefik.yml", "w").write(static)
open(f"{dst}/dynamic.yml", "w").write(dynamic)
PY
"$BRIDGECTL" build "$RD/etc" --profile dev --out "$RD/plan.json" >"$RD/build.log" 2>&1 ||
  { cat "$RD/build.log" >&2; die "bridgectl build failed"; }

# --- nodes and proxy --------------------------------------------------------------------------
echo a >"$RD/active"
node_flags=()
[[ $STANDBY_SERVES == 1 ]] && node_flags+=(--standby-serves)
[[ $WS_CLOSE_ON_DEMOTE == 1 ]] || node_flags+=(--keep-ws)
for n in a b; do
  port=$A_PORT
  [[ $n == b ]] && port=$B_PORT
  "$PY" "$LOAD" node --listen "127.0.0.1:$port" --name "$n" --active "$([[ $n == a ]] && echo 1 || echo 0)" \
    --control "$RD/active" "${node_flags[@]}" >"$RD/node-$n.log" 2>&1 &
  PIDS+=($!)
  wait_port "$port" 10 || die "node $n did not start (see $RD/node-$n.log)"
done
"$BRIDGE_RUNTIME" "$RD/plan.json" --bind "web=127.0.0.1:$WEB_PORT" --bind "websecure=127.0.0.1:$TLS_PORT" \
  --bind "traefik=127.0.0.1:$DASH_PORT" \
  --resolve scadabridge-central-a=127.0.0.1 --resolve scadabridge-central-b=127.0.0.1 >"$RD/proxy.log" 2>&1 &
PROXY=$!
PIDS+=("$PROXY")
wait_port "$WEB_PORT" 60 "$PROXY" || die "bridge-runtime did not start (see $RD/proxy.log)"
wait_port "$TLS_PORT" 10 "$PROXY" || die "websecure did not start (see $RD/proxy.log)"
curl -sf -m 5 "http://127.0.0.1:$WEB_PORT/" | grep -q central-a || die "web does not reach central-a"
curl -sf -m 5 --cacert "$RD/etc/certs/soak.crt" "https://127.0.0.1:$TLS_PORT/" | grep -q central-a ||
  die "websecure does not reach central-a"
log "run dir $RD; proxy PID $PROXY: web :$WEB_PORT, websecure :$TLS_PORT, dashboard :$DASH_PORT; nodes :$A_PORT :$B_PORT"
log "$SOAK_MINUTES min; failover every $FAILOVER_EVERY s, reload every $RELOAD_EVERY s, samples every $SAMPLE_EVERY s"

# --- the run ----------------------------------------------------------------------------------
# The driver ends by itself after SOAK_MINUTES; the outer timeout is a second bound.
timeout -k 10 "$(awk -v m="$SOAK_MINUTES" 'BEGIN{printf "%d", m * 60 + 120}')" \
  "$PY" "$LOAD" soak --dir "$RD" --tsv "$RD/samples.tsv" --pid "$PROXY" \
  --web-port "$WEB_PORT" --https-port "$TLS_PORT" --cafile "$RD/etc/certs/soak.crt" \
  --control "$RD/active" --bridgectl "$BRIDGECTL" --config "$RD/etc" --plan "$RD/plan.json" \
  --minutes "$SOAK_MINUTES" --failover-every "$FAILOVER_EVERY" --reload-every "$RELOAD_EVERY" \
  --sample-every "$SAMPLE_EVERY" --window "$WINDOW" --get-clients "$GET_CLIENTS" \
  --post-clients "$POST_CLIENTS" --https-clients "$HTTPS_CLIENTS" --ws-clients "$WS_CLIENTS" \
  --pause-ms "$PAUSE_MS" --reuse "$REUSE" --proxy-ports "$WEB_PORT" "$TLS_PORT" "$DASH_PORT" \
  --node-ports "$A_PORT" "$B_PORT" | tee "$RD/driver.log"
kill -0 "$PROXY" 2>/dev/null || log "WARNING: bridge-runtime exited during the run (see $RD/proxy.log)"

reloaded=$(grep -c 'reloaded plan' "$RD/proxy.log" || true)
rejected=$(grep -c 'reload rejected' "$RD/proxy.log" || true)
"$PY" - "$RD/settings.json" <<PY
import json, sys
json.dump({
  "date": "$(date -u +%Y-%m-%d)", "minutes": $SOAK_MINUTES, "binaries": "$BUILD", "window": $WINDOW,
  "reloaded_lines": ${reloaded:-0}, "rejected_lines": ${rejected:-0},
  "table": [
    ["duration", "$SOAK_MINUTES min"],
    ["configuration", "examples/scadabridge (dev profile): web, traefik (dashboard) and an added websecure entry point with router central-tls; health check /health/active every 5 s, timeout 3 s (the seed's)"],
    ["nodes", "bench/proxy_load.py node a 127.0.0.1:$A_PORT, b 127.0.0.1:$B_PORT (--resolve scadabridge-central-a/-b=127.0.0.1); standby answers app requests: $([[ $STANDBY_SERVES == 1 ]] && echo 200 || echo 503); closes WebSockets when demoted: $([[ $WS_CLOSE_ON_DEMOTE == 1 ]] && echo yes || echo no)"],
    ["clients", "$GET_CLIENTS GET + $POST_CLIENTS POST (1-64 KiB) on web, $HTTPS_CLIENTS HTTPS GET on websecure, $WS_CLIENTS WebSocket echo (1 message/s); $PAUSE_MS ms between requests; new connection every $REUSE requests"],
    ["TLS", "self-signed ECDSA P-256 certificate (openssl req -x509) as tls.stores.default.defaultCertificate, verified by the client"],
    ["failover", "every $FAILOVER_EVERY s: the active node's /health/active 503, the other's 200, at once (alternating); window $WINDOW s"],
    ["reload", "every $RELOAD_EVERY s: bridgectl build of the same directory, then SIGHUP"],
    ["samples", "every $SAMPLE_EVERY s: counts, VmRSS and /proc/PID/fd of bridge-runtime"],
    ["proxy", "bridge-runtime, default worker threads ($(nproc) CPUs)"],
    ["host", "$(nproc) cores, $(uname -sr)"],
    ["run directory", "$RD"],
  ],
}, open(sys.argv[1], "w"), indent=1)
PY
mkdir -p "$HERE/bench/results"
cp "$RD/samples.tsv" "$OUT_TSV"
"$PY" "$LOAD" soak-report --dir "$RD" --tsv "$OUT_TSV" --out "$OUT" >/dev/null
log "wrote $OUT and $OUT_TSV (run directory $RD)"
cat "$OUT"
