#!/usr/bin/env bash
# proxy_rps.sh - proxied HTTP/1.1 keep-alive req/s, latency and memory: bridge-runtime beside
# nginx, HAProxy and Caddy in front of the same trivial backend, one row at a time.
#
# Rows (-R, in this order by default: "direct nginx haproxy caddy bridge"):
#   direct   wrk straight to the backend: what the backend and the load generator can do at all
#   nginx    nginx as a reverse proxy, upstream keep-alive pool
#   haproxy  HAProxy, keep-alive both sides, `http-reuse always`, active check every 5 s
#   caddy    Caddy's reverse_proxy, HTTP/1.1 only, keep-alive pool, active check every 5 s
#            (left out with a note when caddy is not installed)
#   bridge   bridge-runtime serving a plan built by bridgectl from a one-router Traefik file
#   bridge-b the same with the binaries in BRIDGE_B_BIN_DIR (another build, for an A/B in one
#            run; its own bridgectl builds its plan, so builds of other plan versions work)
#   bridge-rl  bridge with a rateLimit on the router that never refuses (average and burst
#            100,000,000): what the middleware costs, side by side with `bridge`
#   bridge-if  bridge with an inFlightReq on the router that never refuses (amount 100,000)
# The backend is nginx answering "ok" (one process, no logs, keep-alive connections never
# recycled). For every row and repetition: wait for a quiet machine, fresh backend, fresh proxy,
# a check that GET / answers "ok" through it, 1 s idle, RSS idle, a warm-up wrk run, the measured
# wrk run (`wrk -t1 -c64 -d10s --latency`), RSS after the run and its high-water mark, summed
# over the proxy's process tree. Also recorded: per-CPU busy% during the run, the machine's busy%
# just before the row and the CPU that processes other than ours used during it (rows where
# either is above QUIET_MAX_PCT are left out of the medians).
#
# Pinning (-m): `pin` (default) puts the proxy alone on CPU0 with one worker/thread (nginx
# worker_processes 1, haproxy nbthread 1, GOMAXPROCS=1, TOKIO_WORKER_THREADS=1) and wrk and the
# backend on CPU1; the direct row puts the backend on CPU0. Each row then answers "what does one
# dedicated core of this proxy deliver". `shared`: no pinning, one worker/thread per CPU.
#
# Usage (from anywhere; binaries from BRIDGE_BIN_DIR, default target/release of this checkout):
#   bench/proxy_rps.sh [-m pin|shared] [-d SECS] [-w WARMUP_SECS] [-c CONNS] [-t WRK_THREADS]
#                      [-r REPEATS] [-R "direct nginx haproxy caddy bridge"] [-o NAME]
#   -o NAME writes bench/results/rps-NAME.tsv and rps-NAME.md (never over an existing file);
#   without it the TSV and the tables stay in the run directory and are printed.
# Environment: PORT_BASE (18080; backend there, proxies on the next four ports), RUN_DIR,
#   QUIET_MAX_PCT (10), QUIET_WAIT_S (600), HEALTH_INTERVAL (5s), PROXY_CPUS / LOAD_CPUS (0 / 1),
#   NGINX_BIN HAPROXY_BIN CADDY_BIN WRK_BIN BRIDGE_BIN_DIR.
# Everything listens on 127.0.0.1; every wrk run is bounded by -d (and an outer timeout); every
# process is started here and stopped by its PID.
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$HERE/bench/lib.sh"

MODE=pin DUR=10 WARM=3 CONNS=64 WTHREADS=1 REPEATS=3 NAME=""
ROWS="direct nginx haproxy caddy bridge"
usage() { sed -n '2,/^set -euo/{/^set -euo/d;p}' "$0"; exit 2; }
while getopts "m:d:w:c:t:r:R:o:h" o; do
  case $o in
    m) MODE=$OPTARG ;; d) DUR=$OPTARG ;; w) WARM=$OPTARG ;; c) CONNS=$OPTARG ;;
    t) WTHREADS=$OPTARG ;; r) REPEATS=$OPTARG ;; R) ROWS=$OPTARG ;; o) NAME=$OPTARG ;;
    *) usage ;;
  esac
done
for v in DUR WARM CONNS WTHREADS REPEATS; do
  [[ ${!v} =~ ^[1-9][0-9]*$ ]] || die "$v must be a positive whole number, not '${!v}'"
done

PORT_BASE=${PORT_BASE:-18080}
BE_PORT=$PORT_BASE
declare -A PORT=([direct]=$BE_PORT [nginx]=$((PORT_BASE + 1)) [haproxy]=$((PORT_BASE + 2))
  [caddy]=$((PORT_BASE + 3)) [bridge]=$((PORT_BASE + 4)) [bridge-b]=$((PORT_BASE + 5))
  [bridge-rl]=$((PORT_BASE + 6)) [bridge-if]=$((PORT_BASE + 7)))
HEALTH_INTERVAL=${HEALTH_INTERVAL:-5s}
QUIET_MAX_PCT=${QUIET_MAX_PCT:-10} QUIET_WAIT_S=${QUIET_WAIT_S:-600}

# --- what to run ---------------------------------------------------------------------------------
NOTES=()
selected=()
for row in $ROWS; do
  [[ -n ${PORT[$row]:-} ]] || die "unknown row '$row' (known: direct nginx haproxy caddy bridge bridge-b bridge-rl bridge-if)"
  if [[ $row == bridge-b ]]; then
    [[ -x ${BRIDGE_B_BIN_DIR:-}/bridge-runtime && -x ${BRIDGE_B_BIN_DIR:-}/bridgectl ]] ||
      die "row bridge-b needs BRIDGE_B_BIN_DIR with bridgectl and bridge-runtime of the other build"
    NOTES+=("bridge-b: $BRIDGE_B_BIN_DIR/bridge-runtime, built $(date -u -r "$BRIDGE_B_BIN_DIR/bridge-runtime" +%Y-%m-%dT%H:%MZ).")
  fi
  if [[ $row == caddy ]] && ! have_bin "$CADDY_BIN"; then
    log "caddy is not installed (or CADDY_BIN not set): no caddy row"
    NOTES+=("Caddy was not installed: no caddy row.")
    continue
  fi
  selected+=("$row")
done
((${#selected[@]})) || die "no row to run"
have_bin "$NGINX_BIN" || die "nginx (the backend) is not installed: apt-get install nginx"
have_bin "$WRK_BIN" || die "wrk is not installed: apt-get install wrk"
command -v curl >/dev/null || die "curl is not installed"
if [[ " ${selected[*]} " == *" haproxy "* ]]; then
  have_bin "$HAPROXY_BIN" || die "haproxy is not installed: apt-get install haproxy (or leave it out of -R)"
fi
[[ " ${selected[*]} " != *" bridge "* ]] || need_bridge

if [[ -n $NAME ]]; then
  TSV=$HERE/bench/results/rps-$NAME.tsv MD=$HERE/bench/results/rps-$NAME.md
  [[ ! -e $TSV && ! -e $MD ]] || die "bench/results/rps-$NAME.* exists already: choose another -o NAME"
fi
RD=${RUN_DIR:-$(mktemp -d /tmp/bench-rps.XXXXXX)}
mkdir -p "$RD/caddy-home"
OUT=$RD/results.tsv
pin_setup "$MODE"
bench_traps
# nginx workers drop privileges to `user`; as root keep root so they can use the run directory.
NGINX_USER=""
((EUID != 0)) || NGINX_USER="user root;"

# --- configurations ------------------------------------------------------------------------------
cat >"$RD/backend.conf" <<EOF
# The backend of every row: one nginx process, a fixed answer, keep-alive connections kept.
daemon off;
master_process off;
worker_processes 1;
pid $RD/backend.pid;
error_log $RD/backend.err warn;
events { worker_connections 8192; }
http {
$(nginx_paths "$RD")
    access_log off;
    default_type text/plain;
    keepalive_timeout 120s;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$BE_PORT backlog=4096;
        location = /health/active { return 200 "healthy\n"; }
        location / { return 200 "ok"; }
    }
}
EOF

cat >"$RD/nginx.conf" <<EOF
# nginx as the proxy. nginx (open source) has no active health checks.
daemon off;
$NGINX_USER
worker_processes $PROXY_THREADS;
pid $RD/nginx.pid;
error_log $RD/nginx.err warn;
events { worker_connections 8192; }
http {
$(nginx_paths "$RD")
    access_log off;
    keepalive_timeout 120s;
    keepalive_requests 1000000;
    upstream backend {
        server 127.0.0.1:$BE_PORT;
        keepalive 256;
        keepalive_timeout 60s;
        keepalive_requests 1000000;
    }
    server {
        listen 127.0.0.1:${PORT[nginx]} backlog=4096;
        location / {
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://backend;
        }
    }
}
EOF

cat >"$RD/haproxy.cfg" <<EOF
# HAProxy as the proxy: keep-alive on both sides is its default; any idle server connection may
# carry any request (http-reuse always), as with the other proxies' pools.
global
    nbthread $PROXY_THREADS
    maxconn 8192
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 60s
    timeout check 2s
frontend web
    bind 127.0.0.1:${PORT[haproxy]}
    default_backend backend
backend backend
    http-reuse always
    option httpchk GET /health/active
    server be 127.0.0.1:$BE_PORT check inter $HEALTH_INTERVAL
EOF

cat >"$RD/Caddyfile" <<EOF
{
	admin off
	auto_https off
	servers {
		protocols h1
	}
}
http://127.0.0.1:${PORT[caddy]} {
	bind 127.0.0.1
	reverse_proxy 127.0.0.1:$BE_PORT {
		health_uri /health/active
		health_interval $HEALTH_INTERVAL
		transport http {
			keepalive 90s
			keepalive_idle_conns 512
			keepalive_idle_conns_per_host 512
		}
	}
}
EOF

# bridge-runtime: the seed's shape with one server and no health check (as in the earlier results).
if [[ " ${selected[*]} " == *" bridge "* ]]; then
  bridge_plan "$RD/bridge" "127.0.0.1:$BE_PORT"
fi
if [[ " ${selected[*]} " == *" bridge-rl "* ]]; then
  BRIDGE_PLAN_MIDDLEWARE='{rateLimit: {average: 100000000, burst: 100000000}}' \
    bridge_plan "$RD/bridge-rl" "127.0.0.1:$BE_PORT"
fi
if [[ " ${selected[*]} " == *" bridge-if "* ]]; then
  BRIDGE_PLAN_MIDDLEWARE='{inFlightReq: {amount: 100000}}' \
    bridge_plan "$RD/bridge-if" "127.0.0.1:$BE_PORT"
fi
if [[ " ${selected[*]} " == *" bridge-b "* ]]; then
  # The other build's bridgectl writes the plan its runtime reads.
  BRIDGE_PLAN_CTL=$BRIDGE_B_BIN_DIR/bridgectl bridge_plan "$RD/bridge-b" "127.0.0.1:$BE_PORT"
fi

# --- one row -------------------------------------------------------------------------------------
start_proxy() { # NAME -> LAST_PID
  local p=${PORT[$1]}
  case $1 in
    nginx) start_bg "$RD/nginx.log" "${PIN_PROXY[@]}" "$NGINX_BIN" -p "$RD" -c "$RD/nginx.conf" ;;
    haproxy) start_bg "$RD/haproxy.log" "${PIN_PROXY[@]}" "$HAPROXY_BIN" -db -f "$RD/haproxy.cfg" ;;
    caddy) start_bg "$RD/caddy.log" env HOME="$RD/caddy-home" XDG_CONFIG_HOME="$RD/caddy-home" \
      XDG_DATA_HOME="$RD/caddy-home" GOMAXPROCS="$PROXY_THREADS" "${PIN_PROXY[@]}" \
      "$CADDY_BIN" run --config "$RD/Caddyfile" --adapter caddyfile ;;
    bridge) start_bg "$RD/bridge.log" env TOKIO_WORKER_THREADS="$PROXY_THREADS" "${PIN_PROXY[@]}" \
      "$BRIDGE_RUNTIME_BIN" "$RD/bridge/plan.json" --bind "web=127.0.0.1:$p" ;;
    bridge-b) start_bg "$RD/bridge-b.log" env TOKIO_WORKER_THREADS="$PROXY_THREADS" "${PIN_PROXY[@]}" \
      "$BRIDGE_B_BIN_DIR/bridge-runtime" "$RD/bridge-b/plan.json" --bind "web=127.0.0.1:$p" ;;
    bridge-rl | bridge-if) start_bg "$RD/$1.log" env TOKIO_WORKER_THREADS="$PROXY_THREADS" "${PIN_PROXY[@]}" \
      "$BRIDGE_RUNTIME_BIN" "$RD/$1/plan.json" --bind "web=127.0.0.1:$p" ;;
  esac
}

wrk_run() { # PORT SECS OUT
  timeout -k 5 $(($2 + 30)) "${PIN_LOAD[@]}" "$WRK_BIN" -t"$WTHREADS" -c"$CONNS" -d"$2"s \
    --timeout 5s --latency "http://127.0.0.1:$1/" >"$3" 2>&1 || log "wrk on :$1 exited with $?"
}

run_row() { # NAME REP
  local name=$1 rep=$2 port=${PORT[$1]} busy pid bpid i
  busy=$(wait_quiet "$QUIET_MAX_PCT" "$QUIET_WAIT_S") || log "machine still ${busy}% busy after ${QUIET_WAIT_S}s: measuring anyway (left out of the medians)"
  ports_free "$BE_PORT" "$port" || return 1
  if [[ $name == direct ]]; then
    start_bg "$RD/backend.log" "${PIN_PROXY[@]}" "$NGINX_BIN" -p "$RD" -c "$RD/backend.conf"
    bpid=$LAST_PID pid=$LAST_PID
  else
    start_bg "$RD/backend.log" "${PIN_LOAD[@]}" "$NGINX_BIN" -p "$RD" -c "$RD/backend.conf"
    bpid=$LAST_PID
    wait_port "$BE_PORT" 10 "$bpid" || return 1
    start_proxy "$name"
    pid=$LAST_PID
  fi
  wait_port "$port" 30 "$pid" || { log "$name did not start, see $RD/$name.log"; return 1; }
  for ((i = 0; i < 50; i++)); do
    [[ $(curl -s -m 2 "http://127.0.0.1:$port/" || true) == ok ]] && break
    sleep 0.1
  done
  ((i < 50)) || { log "$name does not answer 'ok' on GET /, see $RD/$name.log"; return 1; }
  sleep 1
  local rss_idle
  rss_idle=$(mem_kb "$pid" VmRSS)
  wrk_run "$port" "$WARM" "$RD/$name.$rep.warmup.txt"

  local cores m0 m1 o0 o1 w0 w1 ours=("$pid")
  [[ $bpid == "$pid" ]] || ours+=("$bpid")
  cores=$(core_busy_snapshot)
  m0=$(machine_ticks) o0=$(ticks_of "${ours[@]}") w0=$(child_ticks)
  wrk_run "$port" "$DUR" "$RD/$name.$rep.wrk.txt"
  m1=$(machine_ticks) o1=$(ticks_of "${ours[@]}") w1=$(child_ticks)
  local busy_cores other
  busy_cores=$(core_busy_since "$cores")
  other=$(awk -v a="$m0" -v b="$m1" -v ours=$((o1 - o0 + w1 - w0)) 'BEGIN { split(a, x); split(b, y)
    t = y[2] - x[2]; o = t > 0 ? 100 * (y[1] - x[1] - ours) / t : 0; printf "%d\n", (o < 0 ? 0 : o) }')
  local rss_after hwm
  rss_after=$(mem_kb "$pid" VmRSS) hwm=$(mem_kb "$pid" VmHWM)
  printf '%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n' "$name" "$MODE" "$rep" \
    "$(wrk_summary "$RD/$name.$rep.wrk.txt")" "$busy_cores" "$rss_idle" "$rss_after" "$hwm" "$busy" "$other" >>"$OUT"
  log "$name rep $rep: $(cut -f1 <(wrk_summary "$RD/$name.$rep.wrk.txt")) req/s, cpu $busy_cores"
  stop_pid "$pid"
  stop_pid "$bpid"
  sleep 1
}

# --- run -----------------------------------------------------------------------------------------
CMD="bench/proxy_rps.sh -m $MODE -d $DUR -w $WARM -c $CONNS -t $WTHREADS -r $REPEATS -R \"${selected[*]}\""
log "run dir $RD; $CMD"
versions | tee "$RD/versions.txt" >&2
printf 'row\tmode\trep\trps\tp50_us\tp99_us\terrors\tcpu_busy\trss_idle_kb\trss_after_kb\thwm_kb\tbg_busy_pct\tforeign_pct\n' >"$OUT"
for ((rep = 1; rep <= REPEATS; rep++)); do
  for row in "${selected[@]}"; do
    log "rep $rep/$REPEATS: $row"
    run_row "$row" "$rep" || log "row $row rep $rep failed; nothing recorded"
    stop_all
  done
done

RAW=results.tsv
[[ -z $NAME ]] || RAW=rps-$NAME.tsv
{
  echo "# Proxied req/s beside nginx, HAProxy and Caddy ($(date -u +%Y-%m-%d))"
  echo
  if [[ $MODE == pin ]]; then
    pinning="each proxy alone on CPU$PROXY_CPUS with $PROXY_THREADS worker/thread, wrk and the backend on CPU$LOAD_CPUS"
  else
    pinning="no pinning, $PROXY_THREADS workers/threads per proxy"
  fi
  echo "\`$CMD\`: $pinning; wrk -t$WTHREADS -c$CONNS, $DUR s measured after a $WARM s warm-up, keep-alive on both sides. Raw rows: \`$RAW\`."
  echo
  echo '```'
  cat "$RD/versions.txt"
  echo '```'
  echo
  for n in "${NOTES[@]}"; do echo "$n"; echo; done
  "$PY" "$HERE/bench/tables.py" rps "$OUT" --quiet-max "$QUIET_MAX_PCT"
} >"$RD/results.md"
cat "$RD/results.md"
if [[ -n $NAME ]]; then
  cp "$OUT" "$TSV"
  cp "$RD/results.md" "$MD"
  log "wrote ${TSV#"$HERE"/} and ${MD#"$HERE"/}"
fi
