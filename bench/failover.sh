#!/usr/bin/env bash
# failover.sh - how long an active/standby failover interrupts or misroutes traffic, and how many
# requests fail: bridge-runtime beside HAProxy, nginx and Caddy, each with the seed's 5 s active
# health check on /health/active.
#
# Every case (proxy x scenario x profile x repetition) gets two fresh nginx backends, A (the
# active node) and B (the standby), each one process answering its letter on / and 200 or 503 on
# /health/active as flag files in the case directory say (A.down: health 503, A.refuse: / answers
# 503; the same for B) - so a failover is a file operation, no reload. In front, the proxy:
#   bridge   the seed's shape: one load balancer over A and B with the health check; the node
#            whose /health/active answers 200 gets the traffic
#   haproxy  A, B as `backup`, `option httpchk` every 5 s
#   nginx    A, B as `backup` (nginx open source has no active checks: passive ones only)
#   caddy    A then B with `lb_policy first`, health_uri every 5 s (left out when not installed)
# After SETTLE seconds (so that every proxy has seen the starting state), bench/failover_probe.py
# sends a GET every INTERVAL (20 ms) for DURATION (30 s) and at T = AT (5 s) does the scenario:
#   flip         before T A is healthy and B is not; at T A's health turns 503 and B's 200, while A
#                keeps answering 200 on / (a demoted node that still serves)
#   flip-reject  the same, and A answers 503 on / from T (a demoted node that refuses)
#   kill         both healthy before T (for bridge-runtime both get traffic: the seed's service
#                has no backup role); at T A is killed with SIGKILL
# Measured, in seconds after T: the first answer from B, the last from A, when the answers settled
# on B, the failed requests after T (non-2xx or transport error), the window they fell in and the
# longest request. The proxies of one scenario run at the same time on their own ports (the
# probe is 50 requests/s each); scenarios, profiles and repetitions one after the other.
#
# Profiles (-p): `default` = each proxy's defaults plus the 5 s check and the active/standby
# wiring; `tuned` = the fast-failover settings an operator would add (haproxy: fastinter/downinter
# 1s, rise/fall 1, observe layer7, on-marked-down shutdown-sessions, redispatch, retry-on 503;
# nginx: max_fails=1, proxy_next_upstream on 502/503/504, 1 s connect timeout; caddy: lb_try
# 5s/250ms, passive fail on 5xx). bridge-runtime runs the same plan in both profiles.
#
# Usage (from anywhere; binaries from BRIDGE_BIN_DIR, default target/release of this checkout):
#   bench/failover.sh [-s "flip flip-reject kill"] [-p "default tuned"] [-P "bridge haproxy nginx caddy"]
#                     [-r REPEATS] [-o NAME]
#   -o NAME writes bench/results/failover-NAME.jsonl and failover-NAME.md (never over an existing
#   file); without it both stay in the run directory and the tables are printed.
# Environment: DURATION (30), INTERVAL (0.02), AT (5), AT_JITTER (0: T uniform in [AT, AT+JITTER)),
#   SETTLE_FLIP (20: HAProxy needs three failed checks to mark the standby down), SETTLE_KILL (6),
#   HEALTH_INTERVAL (5s), PORT_BASE (18100; 10 ports per proxy), RUN_DIR, NGINX_BIN HAPROXY_BIN
#   CADDY_BIN BRIDGE_BIN_DIR.
# Everything listens on 127.0.0.1; the probe is bounded in count and time; every process is
# started here and stopped by its PID (the killed backend is killed by the probe, by its PID).
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$HERE/bench/lib.sh"

SCENARIOS="flip flip-reject kill" PROFILES="default" PROXIES="bridge haproxy nginx caddy" REPEATS=1 NAME=""
usage() { sed -n '2,/^set -euo/{/^set -euo/d;p}' "$0"; exit 2; }
while getopts "s:p:P:r:o:h" o; do
  case $o in
    s) SCENARIOS=$OPTARG ;; p) PROFILES=$OPTARG ;; P) PROXIES=$OPTARG ;; r) REPEATS=$OPTARG ;;
    o) NAME=$OPTARG ;; *) usage ;;
  esac
done
[[ $REPEATS =~ ^[1-9][0-9]*$ ]] || die "-r must be a positive whole number"
DURATION=${DURATION:-30} INTERVAL=${INTERVAL:-0.02} AT=${AT:-5} AT_JITTER=${AT_JITTER:-0}
SETTLE_FLIP=${SETTLE_FLIP:-20} SETTLE_KILL=${SETTLE_KILL:-6}
HEALTH_INTERVAL=${HEALTH_INTERVAL:-5s}
PORT_BASE=${PORT_BASE:-18100}
declare -A SLOT=([bridge]=0 [haproxy]=1 [nginx]=2 [caddy]=3)

for s in $SCENARIOS; do
  [[ $s =~ ^(flip|flip-reject|kill)$ ]] || die "unknown scenario '$s' (flip flip-reject kill)"
done
for p in $PROFILES; do
  [[ $p =~ ^(default|tuned)$ ]] || die "unknown profile '$p' (default tuned)"
done
NOTES=()
selected=()
for x in $PROXIES; do
  [[ -n ${SLOT[$x]:-} ]] || die "unknown proxy '$x' (bridge haproxy nginx caddy)"
  case $x in
    bridge) need_bridge ;;
    haproxy) have_bin "$HAPROXY_BIN" || die "haproxy is not installed: apt-get install haproxy (or leave it out of -P)" ;;
    caddy)
      if ! have_bin "$CADDY_BIN"; then
        log "caddy is not installed (or CADDY_BIN not set): no caddy rows"
        NOTES+=("Caddy was not installed: no caddy rows.")
        continue
      fi ;;
  esac
  selected+=("$x")
done
((${#selected[@]})) || die "no proxy to run"
have_bin "$NGINX_BIN" || die "nginx (the backends) is not installed: apt-get install nginx"
if [[ -n $NAME ]]; then
  JSONL=$HERE/bench/results/failover-$NAME.jsonl MD=$HERE/bench/results/failover-$NAME.md
  [[ ! -e $JSONL && ! -e $MD ]] || die "bench/results/failover-$NAME.* exists already: choose another -o NAME"
fi
RD0=${RUN_DIR:-$(mktemp -d /tmp/bench-failover.XXXXXX)}
mkdir -p "$RD0"
NGINX_USER=""
((EUID != 0)) || NGINX_USER="user root;"

# --- configurations ------------------------------------------------------------------------------
backend_conf() { # LETTER PORT DIR
  local n=$1 port=$2 d=$3
  cat <<EOF
# Node $n: one process; answers follow the flag files $d/$n.down and $d/$n.refuse.
daemon off;
master_process off;
pid $d/$n.pid;
error_log $d/$n.err warn;
events { worker_connections 1024; }
http {
$(nginx_paths "$d")
    access_log off;
    default_type text/plain;
    keepalive_requests 1000000;
    server {
        listen 127.0.0.1:$port;
        location = /health/active {
            if (-f $d/$n.down) { return 503 "standby\n"; }
            return 200 "active\n";
        }
        location / {
            if (-f $d/$n.refuse) { return 503 "$n refuses\n"; }
            return 200 "$n\n";
        }
    }
}
EOF
}

# proxy_conf PROXY PROFILE PORT A_PORT B_PORT DIR: writes the proxy's configuration into DIR.
proxy_conf() {
  local x=$1 prof=$2 port=$3 ap=$4 bp=$5 d=$6
  case $x in
    bridge) bridge_plan "$d/bridge" -h "$HEALTH_INTERVAL" "127.0.0.1:$ap" "127.0.0.1:$bp" ;;
    haproxy)
      local check="check inter $HEALTH_INTERVAL" extra=""
      if [[ $prof == tuned ]]; then
        check+=" fastinter 1s downinter 1s rise 1 fall 1 observe layer7 error-limit 1 on-error mark-down on-marked-down shutdown-sessions"
        extra=$'    option redispatch 1\n    retries 3\n    retry-on conn-failure empty-response 503'
      fi
      cat >"$d/haproxy.cfg" <<EOF
global
    nbthread 1
    maxconn 1024
    stats socket $d/haproxy.sock mode 600 level admin
defaults
    mode http
    timeout connect 2s
    timeout client 30s
    timeout server 30s
    timeout check 2s
frontend web
    bind 127.0.0.1:$port
    default_backend central
backend central
    option httpchk GET /health/active
$extra
    default-server $check
    server A 127.0.0.1:$ap
    server B 127.0.0.1:$bp backup
EOF
      ;;
    nginx)
      local a_opts="" loc=""
      if [[ $prof == tuned ]]; then
        a_opts=" max_fails=1 fail_timeout=10s"
        loc="proxy_next_upstream error timeout http_502 http_503 http_504; proxy_connect_timeout 1s;"
      fi
      cat >"$d/nginx.conf" <<EOF
# nginx open source has no active health checks: A is left only after failures on live
# traffic (max_fails=1, fail_timeout=10s and proxy_next_upstream "error timeout" by default).
daemon off;
$NGINX_USER
worker_processes 1;
pid $d/nginx.pid;
error_log $d/nginx.err warn;
events { worker_connections 1024; }
http {
$(nginx_paths "$d")
    access_log off;
    upstream central {
        server 127.0.0.1:$ap$a_opts;
        server 127.0.0.1:$bp backup;
        keepalive 16;
    }
    server {
        listen 127.0.0.1:$port;
        location / {
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_pass http://central;
            $loc
        }
    }
}
EOF
      ;;
    caddy)
      local extra=""
      if [[ $prof == tuned ]]; then
        extra=$'\t\tlb_try_duration 5s\n\t\tlb_try_interval 250ms\n\t\tfail_duration 30s\n\t\tmax_fails 1\n\t\tunhealthy_status 5xx'
      fi
      mkdir -p "$d/caddy-home"
      cat >"$d/Caddyfile" <<EOF
{
	admin off
	auto_https off
	servers {
		protocols h1
	}
}
http://127.0.0.1:$port {
	bind 127.0.0.1
	reverse_proxy 127.0.0.1:$ap 127.0.0.1:$bp {
		lb_policy first
		health_uri /health/active
		health_interval $HEALTH_INTERVAL
$extra
	}
}
EOF
      ;;
  esac
}

start_proxy() { # PROXY PORT DIR -> LAST_PID
  local x=$1 port=$2 d=$3
  case $x in
    bridge) start_bg "$d/proxy.log" env TOKIO_WORKER_THREADS=1 "$BRIDGE_RUNTIME_BIN" "$d/bridge/plan.json" \
      --bind "web=127.0.0.1:$port" ;;
    haproxy) start_bg "$d/proxy.log" "$HAPROXY_BIN" -db -f "$d/haproxy.cfg" ;;
    nginx) start_bg "$d/proxy.log" "$NGINX_BIN" -p "$d" -c "$d/nginx.conf" ;;
    caddy) start_bg "$d/proxy.log" env HOME="$d/caddy-home" XDG_CONFIG_HOME="$d/caddy-home" \
      XDG_DATA_HOME="$d/caddy-home" "$CADDY_BIN" run --config "$d/Caddyfile" --adapter caddyfile ;;
  esac
}

# haproxy_state DIR: HAProxy's view of A and B just before T (to check that the settle was enough).
haproxy_state() {
  "$PY" - "$1/haproxy.sock" >"$1/haproxy-state-before.txt" 2>&1 <<'PY' || true
import socket, sys
s = socket.socket(socket.AF_UNIX)
s.settimeout(2)
s.connect(sys.argv[1])
s.sendall(b"show servers state central\n")
out = b""
while True:
    chunk = s.recv(65536)
    if not chunk:
        break
    out += chunk
print(out.decode(errors="replace"))
PY
}

# --- one case (runs in its own background subshell) ---------------------------------------------
run_case() { # PROXY SCENARIO PROFILE REP
  local x=$1 scen=$2 prof=$3 rep=$4
  local port=$((PORT_BASE + 10 * SLOT[$x])) ap bp d=$RD0/$x.$scen.$prof.$rep
  ap=$((port + 1)) bp=$((port + 2))
  BENCH_PIDS=()
  trap 'stop_all' EXIT
  trap 'exit 130' INT TERM
  mkdir -p "$d"
  ports_free "$port" "$ap" "$bp" || return 1
  backend_conf A "$ap" "$d" >"$d/A.conf"
  backend_conf B "$bp" "$d" >"$d/B.conf"
  [[ $scen == kill ]] || touch "$d/B.down"
  start_bg "$d/A.log" "$NGINX_BIN" -p "$d" -c "$d/A.conf"
  local apid=$LAST_PID
  # The probe kills A in the kill scenario: no job notice for it (stop_pid still finds it by PID).
  [[ $scen != kill ]] || disown "$apid"
  start_bg "$d/B.log" "$NGINX_BIN" -p "$d" -c "$d/B.conf"
  wait_port "$ap" 10 "$apid" && wait_port "$bp" 10 "$LAST_PID" || return 1
  proxy_conf "$x" "$prof" "$port" "$ap" "$bp" "$d"
  start_proxy "$x" "$port" "$d"
  wait_port "$port" 30 "$LAST_PID" || { log "$x did not start, see $d/proxy.log"; return 1; }
  local settle=$SETTLE_FLIP
  [[ $scen != kill ]] || settle=$SETTLE_KILL
  start_bg /dev/null sleep "$settle"
  wait "$LAST_PID" || true
  forget_pid "$LAST_PID"
  [[ $x != haproxy ]] || haproxy_state "$d"
  local action=()
  case $scen in
    flip) action=(--touch "$d/A.down" --remove "$d/B.down") ;;
    flip-reject) action=(--touch "$d/A.down" --touch "$d/A.refuse" --remove "$d/B.down") ;;
    kill) action=(--kill "$apid") ;;
  esac
  "$PY" "$HERE/bench/failover_probe.py" --url "http://127.0.0.1:$port/" \
    --interval "$INTERVAL" --duration "$DURATION" --at "$AT" --jitter "$AT_JITTER" "${action[@]}" \
    --log "$d/requests.jsonl" --meta "proxy=$x" --meta "scenario=$scen" --meta "profile=$prof" \
    --meta "rep=$rep" >"$d/summary.json" 2>"$d/probe.err" </dev/null &
  local probe=$! rc=0
  BENCH_PIDS+=("$probe")
  wait "$probe" || rc=$?
  forget_pid "$probe"
  ((rc == 0)) || { log "$x $scen: probe exited with $rc, see $d/probe.err"; return 1; }
  log "$x $scen $prof #$rep: $("$PY" -c 'import json, sys
c = json.load(open(sys.argv[1]))
print("first B %s s, converged %s s, failed %s/%s" % (c["first_b_s"], c["converged_s"], c["failed"], c["after"]))' "$d/summary.json")"
}

# --- run -----------------------------------------------------------------------------------------
CMD="bench/failover.sh -s \"$SCENARIOS\" -p \"$PROFILES\" -P \"${selected[*]}\" -r $REPEATS"
log "run dir $RD0; $CMD; DURATION=$DURATION AT=$AT SETTLE_FLIP=$SETTLE_FLIP SETTLE_KILL=$SETTLE_KILL"
versions | tee "$RD0/versions.txt" >&2
# The cases run in background subshells started here; each stops its own processes when it ends.
JOBS=()
stop_jobs() {
  local j
  for j in "${JOBS[@]}"; do kill -TERM "$j" 2>/dev/null || true; done
  for j in "${JOBS[@]}"; do wait "$j" 2>/dev/null || true; done
  JOBS=()
}
trap 'stop_jobs' EXIT
trap 'stop_jobs; exit 130' INT TERM
OUT=$RD0/results.jsonl
: >"$OUT"
for ((rep = 1; rep <= REPEATS; rep++)); do
  for prof in $PROFILES; do
    for scen in $SCENARIOS; do
      JOBS=()
      for x in "${selected[@]}"; do
        run_case "$x" "$scen" "$prof" "$rep" &
        JOBS+=($!)
      done
      for j in "${JOBS[@]}"; do wait "$j" || log "a $scen case failed (exit $?)"; done
      for x in "${selected[@]}"; do
        f=$RD0/$x.$scen.$prof.$rep/summary.json
        if [[ -s $f ]]; then cat "$f" >>"$OUT"; fi
      done
    done
  done
done
JOBS=()

RAW=results.jsonl
[[ -z $NAME ]] || RAW=failover-$NAME.jsonl
{
  echo "# Failover beside HAProxy, nginx and Caddy ($(date -u +%Y-%m-%d))"
  echo
  echo "\`$CMD\`: a GET every ${INTERVAL} s for $DURATION s per case, the scenario at T = $AT s$([[ $AT_JITTER == 0 ]] || echo " + up to $AT_JITTER s"), health check every $HEALTH_INTERVAL for every proxy; the proxies of a scenario ran in parallel. Times are seconds after T. Raw rows: \`$RAW\`."
  echo
  echo '```'
  cat "$RD0/versions.txt"
  echo '```'
  echo
  for n in "${NOTES[@]}"; do echo "$n"; echo; done
  "$PY" "$HERE/bench/tables.py" failover "$OUT"
} >"$RD0/results.md"
cat "$RD0/results.md"
if [[ -n $NAME ]]; then
  cp "$OUT" "$JSONL"
  cp "$RD0/results.md" "$MD"
  log "wrote ${JSONL#"$HERE"/} and ${MD#"$HERE"/}"
fi
