#!/usr/bin/env bash
# tunnels.sh - idle WebSocket tunnels through bridge-runtime, HAProxy and nginx in one run: memory
# per tunnel (the proxy's VmRSS with N tunnels open, minus before, over N) and round trips per
# second through ACTIVE of them, the proxy pinned to one core and the load on the other.
#
# The echo backend and the clients are bench/wsload (Rust, tokio, one thread each; built here
# with cargo into bench/wsload/target): `wsload backend PORT` answers an upgrade with 101 and
# echoes; `wsload clients PORT N HOLD ACTIVE SECONDS` opens N tunnels, holds them while the
# memory is read, then keeps ACTIVE 32-byte round trips in flight for SECONDS. Both run on the
# load core; the table also gives the proxy's own CPU time and how busy each core was during the
# round trips, which tell whether the proxy's core or the load core set the rate.
#
# Usage (everything on 127.0.0.1; every process started here and stopped by PID):
#   bench/tunnels.sh                   # 10,000 tunnels, 10 s of ping-pong on 100 of them
#   QUICK=1 bench/tunnels.sh           # 1,000 tunnels, 3 s
# Environment: N, ACTIVE, SECONDS_MSGS, PROXIES ("bridge haproxy nginx"), PORT_BASE (18610),
#   RESULT_SUFFIX, BRIDGE_BIN_DIR (release binaries; built when missing), QUIET_MAX_PCT (10) and
#   QUIET_WAIT_S (600): before each proxy, wait until the machine is at most that busy (then
#   measure anyway and say so in the result).
# Needs cargo and Debian's haproxy and nginx (skipped with a note when missing).
# Writes bench/results/tunnels-<YYYYMMDD><RESULT_SUFFIX>.md.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
bench_traps
QUICK=${QUICK:-0}
if [[ $QUICK == 1 ]]; then N=${N:-1000} SECONDS_MSGS=${SECONDS_MSGS:-3}; else N=${N:-10000} SECONDS_MSGS=${SECONDS_MSGS:-10}; fi
ACTIVE=${ACTIVE:-100}
PROXIES=${PROXIES:-bridge haproxy nginx}
PORT_BASE=${PORT_BASE:-18610}
BACKEND_PORT=$PORT_BASE PROXY_PORT=$((PORT_BASE + 1))
WSLOAD_DIR="$BENCH_ROOT/bench/wsload"
LOAD="$WSLOAD_DIR/target/release/wsload"
RUN=$(mktemp -d /tmp/bench-tunnels.XXXXXX)
OUT="$BENCH_ROOT/bench/results/tunnels-$(date +%Y%m%d)${RESULT_SUFFIX:-}.md"
pin_setup pin
HZ=$(getconf CLK_TCK)
ulimit -Hn 65536 2>/dev/null || true   # root may raise the hard limit
ulimit -n "$(ulimit -Hn)"
(( $(ulimit -n) >= 2 * N + 1000 )) || die "ulimit -n $(ulimit -n) is too low for $N tunnels"
if [[ " $PROXIES " == *" bridge "* ]] && ! have_bin "$BRIDGE_RUNTIME_BIN"; then
  (cd "$BENCH_ROOT" && cargo build --release -q -p bridge-runtime -p bridgectl)
fi
# Always built (a no-op when current); its own target directory, whatever CARGO_TARGET_DIR says.
cargo build --release -q --locked --manifest-path "$WSLOAD_DIR/Cargo.toml" --target-dir "$WSLOAD_DIR/target"

start_bg "$RUN/backend.log" "${PIN_LOAD[@]}" "$LOAD" backend "$BACKEND_PORT"
wait_port "$BACKEND_PORT" 10

start_proxy() {
  local d="$RUN/$1"
  mkdir -p "$d"
  case $1 in
    bridge)
      bridge_plan "$d" "127.0.0.1:$BACKEND_PORT"
      start_bg "$d/proxy.log" "${PIN_PROXY[@]}" "$BRIDGE_RUNTIME_BIN" "$d/plan.json" \
        --workers 1 --bind "web=127.0.0.1:$PROXY_PORT"
      ;;
    haproxy)
      cat >"$d/haproxy.cfg" <<CFG
global
  maxconn $((N + 200))
  nbthread 1
defaults
  mode http
  timeout connect 5s
  timeout client 1h
  timeout server 1h
  timeout tunnel 1h
frontend web
  bind 127.0.0.1:$PROXY_PORT
  default_backend central
backend central
  server a 127.0.0.1:$BACKEND_PORT
CFG
      start_bg "$d/proxy.log" "${PIN_PROXY[@]}" "$HAPROXY_BIN" -db -f "$d/haproxy.cfg"
      ;;
    nginx)
      cat >"$d/nginx.conf" <<CFG
worker_processes 1;
daemon off;
pid $d/nginx.pid;
error_log $d/error.log warn;
worker_rlimit_nofile $((2 * N + 500));
events { worker_connections $((2 * N + 500)); }
http {
  access_log off;
$(nginx_paths "$d")
  server {
    listen 127.0.0.1:$PROXY_PORT;
    location / {
      proxy_pass http://127.0.0.1:$BACKEND_PORT;
      proxy_http_version 1.1;
      proxy_set_header Upgrade \$http_upgrade;
      proxy_set_header Connection "upgrade";
      proxy_read_timeout 1h;
      proxy_send_timeout 1h;
    }
  }
}
CFG
      start_bg "$d/proxy.log" "${PIN_PROXY[@]}" "$NGINX_BIN" -c "$d/nginx.conf" -p "$d"
      ;;
  esac
  wait_port "$PROXY_PORT" 20 "$LAST_PID"
}

rows=()
notes=()
for p in $PROXIES; do
  case $p in
    haproxy) have_bin "$HAPROXY_BIN" || { rows+=("| $p | not installed | | | | | |"); continue; } ;;
    nginx) have_bin "$NGINX_BIN" || { rows+=("| $p | not installed | | | | | |"); continue; } ;;
  esac
  # A build or test run of someone else on the same two CPUs would decide the round-trip rate.
  if ! quiet=$(wait_quiet "${QUIET_MAX_PCT:-10}" "${QUIET_WAIT_S:-600}"); then
    log "$p: machine still ${quiet}% busy, measuring anyway (noted in the result)"
    notes+=("$p: measured while the machine was ${quiet}% busy before the row (quiet: at most ${QUIET_MAX_PCT:-10} %).")
  fi
  start_proxy "$p"
  pid=$LAST_PID
  sleep 1
  before=$(mem_kb "$pid" VmRSS)
  hold="$RUN/$p.hold"
  start_bg "$RUN/$p.clients.log" "${PIN_LOAD[@]}" "$LOAD" clients "$PROXY_PORT" "$N" "$hold" "$ACTIVE" "$SECONDS_MSGS"
  cpid=$LAST_PID
  for ((i = 0; i < 1200; i++)); do grep -q '^ready' "$RUN/$p.clients.log" 2>/dev/null && break; sleep 0.1; done
  grep -q '^ready' "$RUN/$p.clients.log" || die "$p: the tunnels did not open (see $RUN/$p.clients.log)"
  sleep 2
  after=$(mem_kb "$pid" VmRSS)
  ready=$(awk '$1 == "ready" { print $2, $4 }' "$RUN/$p.clients.log")
  cores=$(core_busy_snapshot)
  t0=$(date +%s.%N) p0=$(ticks_of "$pid")
  touch "$hold"
  for ((i = 0; i < 1200; i++)); do grep -q '^msgs' "$RUN/$p.clients.log" 2>/dev/null && break; sleep 0.1; done
  busy=$(core_busy_since "$cores")
  # The proxy's own share of its core: near 100 means the proxy set the rate; a core busier than
  # its proxy had company (someone else's process).
  pcpu=$(awk -v a="$p0" -v b="$(ticks_of "$pid")" -v t0="$t0" -v t1="$(date +%s.%N)" -v hz="$HZ" \
    'BEGIN { printf "%d", 100 * (b - a) / hz / (t1 - t0) }')
  rate=$(awk '$1 == "msgs" { print $4 }' "$RUN/$p.clients.log")
  read -r open failed <<<"$ready"
  per=$(awk -v a="$after" -v b="$before" -v n="$open" 'BEGIN { printf "%.1f", (a - b) * 1024 / n / 1000 }')
  log "$p: $open tunnels ($failed failed), RSS ${before} → ${after} KiB, ${per} KB per tunnel, ${rate:-?} round trips/s, proxy ${pcpu}% of a core, busy $busy"
  rows+=("| $p | $open ($failed failed) | $((before)) → $((after)) KiB | $per KB | ${rate:-?} | $pcpu | ${busy//,/, } |")
  stop_pid "$cpid"
  stop_pid "$pid"
  sleep 1
done

{
  echo "# Idle WebSocket tunnels, $(date -u +%Y-%m-%d)"
  echo
  echo "\`bench/tunnels.sh\` (N=$N, ACTIVE=$ACTIVE, ${SECONDS_MSGS} s of 32-byte round trips; proxy pinned to"
  echo "CPU $PROXY_CPUS with one worker, load and backend on CPU $LOAD_CPUS)."
  echo
  echo '```text'
  versions
  echo '```'
  echo
  echo "| proxy | tunnels | VmRSS before → with tunnels | per tunnel | round trips/s | proxy CPU % | cores busy % |"
  echo "|---|---|---|---|---|---|---|"
  printf '%s\n' "${rows[@]}"
  echo
  echo "Per tunnel: (VmRSS with the tunnels − VmRSS before) / tunnels, in kB (1000 bytes), the"
  echo "client and server sockets' kernel memory not included. Round trips: bench/wsload on CPU"
  echo "$LOAD_CPUS (clients and echo backend, one thread each), ACTIVE tunnels each with one 32-byte"
  echo "message in flight. Proxy CPU: the proxy's own user+system time over the round-trip phase, in"
  echo "% of one core (100: the proxy's core set the rate). Cores busy: each core over the same phase,"
  echo "whoever used it (/proc/stat; cpu$PROXY_CPUS is the proxy's, cpu$LOAD_CPUS the load's). Both include up"
  echo "to ~0.1 s of waiting before and after the phase."
  if ((${#notes[@]})); then echo; printf '%s\n' "${notes[@]}"; fi
} >"$OUT"
log "wrote $OUT"
