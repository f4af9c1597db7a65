#!/usr/bin/env bash
# tls_bench.sh - HTTPS termination side by side: bridge-runtime, nginx and HAProxy, one pinned core
# each, the same ECDSA P-256 certificate, the same nginx backend.
#
# Per row and repetition: fresh backend + fresh proxy, then
#   1. full handshakes/s: wrk with `Connection: close`, so every request is a new TCP connection
#      and a full TLS handshake (wrk 4.1 never resumes sessions; the servers' session caches and
#      tickets are off anyway where configurable), and
#   2. HTTPS keep-alive requests/s and latency: plain wrk over TLS.
# The proxy runs alone on CPU0 with one worker/thread; wrk and the backend share CPU1, as in
# bench/proxy_rps.sh (helpers from bench/lib.sh). Everything is on 127.0.0.1, every
# load run is bounded by -d, every process is started here and stopped by PID.
#
# Usage (from the repo root, after `cargo build --release -p bridgectl -p bridge-runtime`):
#   bench/tls_bench.sh [-d SECS] [-c CONNS] [-r REPEATS] [-R "bridge nginx haproxy"]
# Results: a TSV and a Markdown table (medians over repetitions) in the run dir.
set -u
HERE="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$HERE/bench/lib.sh"

DUR=10 CONNS=64 REPEATS=3 ROWS="bridge nginx haproxy"
while getopts "d:c:r:R:" o; do
  case $o in
    d) DUR=$OPTARG ;; c) CONNS=$OPTARG ;; r) REPEATS=$OPTARG ;; R) ROWS=$OPTARG ;;
    *) sed -n '2,17p' "$0"; exit 2 ;;
  esac
done

BIN=$BRIDGE_BIN_DIR
BE_PORT=18180
declare -A PORT=([bridge]=18443 [nginx]=18444 [haproxy]=18445)
RD=${RUN_DIR:-/tmp/bench-tls-$(date +%Y%m%d-%H%M%S)}
mkdir -p "$RD"/tmp/{body,proxy,fastcgi,uwsgi,scgi}
OUT=$RD/results.tsv
PIN_PROXY=(taskset -c 0) PIN_LOAD=(taskset -c 1)
trap 'stop_all' EXIT
trap 'stop_all; exit 130' INT TERM

# --- one ECDSA P-256 certificate for everybody ------------------------------------------------
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 30 \
  -subj "/CN=bench.test" -addext "subjectAltName=DNS:bench.test" \
  -keyout "$RD/key.pem" -out "$RD/cert.pem" 2>/dev/null
cat "$RD/cert.pem" "$RD/key.pem" >"$RD/haproxy.pem"

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
    server {
        listen 127.0.0.1:$BE_PORT backlog=4096;
        location / { return 200 "ok"; }
    }
}
EOC

cat >"$RD/nginx-proxy.conf" <<EOC
daemon off;
user root;
worker_processes 1;
pid $RD/nginx-proxy.pid;
error_log $RD/nginx-proxy.err warn;
events { worker_connections 8192; }
http {
$(nginx_paths "$RD")
    access_log off;
    keepalive_requests 1000000;
    keepalive_timeout 75s;
    upstream be { server 127.0.0.1:$BE_PORT; keepalive 256; }
    server {
        listen 127.0.0.1:${PORT[nginx]} ssl backlog=4096;
        http2 on;
        ssl_certificate $RD/cert.pem;
        ssl_certificate_key $RD/key.pem;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_cache off;
        ssl_session_tickets off;
        location / { proxy_pass http://be; proxy_http_version 1.1; proxy_set_header Connection ""; }
    }
}
EOC
# nginx 1.22 has no `http2 on;` (1.25.1+): fall back to the listen flag.
if ! "$NGINX_BIN" -t -p "$RD" -c "$RD/nginx-proxy.conf" >/dev/null 2>&1; then
  sed -i -e '/http2 on;/d' -e "s/listen 127.0.0.1:${PORT[nginx]} ssl/listen 127.0.0.1:${PORT[nginx]} ssl http2/" "$RD/nginx-proxy.conf"
fi

cat >"$RD/haproxy.cfg" <<EOC
global
    nbthread 1
    maxconn 8192
    tune.ssl.cachesize 0
defaults
    mode http
    timeout connect 5s
    timeout client 60s
    timeout server 60s
    timeout http-keep-alive 60s
frontend fe
    bind 127.0.0.1:${PORT[haproxy]} ssl crt $RD/haproxy.pem alpn h2,http/1.1 ssl-min-ver TLSv1.2 no-tls-tickets
    default_backend be
backend be
    http-reuse always
    server s1 127.0.0.1:$BE_PORT
EOC

# bridge-runtime: a Traefik configuration with one TLS entry point, compiled by bridgectl.
mkdir -p "$RD/bridge"
cat >"$RD/bridge/traefik.yml" <<YML
entryPoints:
  websecure:
    address: ":443"
    http:
      tls: {}
providers:
  file:
    filename: /etc/traefik/dynamic.yml
YML
cat >"$RD/bridge/dynamic.yml" <<YML
http:
  routers:
    app:
      rule: "PathPrefix(\`/\`)"
      service: app
  services:
    app:
      loadBalancer:
        servers:
          - url: "http://127.0.0.1:$BE_PORT"
tls:
  certificates:
    - certFile: $RD/cert.pem
      keyFile: $RD/key.pem
  stores:
    default:
      defaultCertificate:
        certFile: $RD/cert.pem
        keyFile: $RD/key.pem
YML
"$BIN/bridgectl" build "$RD/bridge" --profile dev --out "$RD/bridge/plan.json" >/dev/null

start_proxy() { # name -> LAST_PID
  case $1 in
    nginx) start_bg "$RD/nginx-proxy.log" "${PIN_PROXY[@]}" "$NGINX_BIN" -p "$RD" -c "$RD/nginx-proxy.conf" ;;
    haproxy) start_bg "$RD/haproxy.log" "${PIN_PROXY[@]}" "$HAPROXY_BIN" -db -f "$RD/haproxy.cfg" ;;
    bridge) start_bg "$RD/bridge.log" env TOKIO_WORKER_THREADS=1 "${PIN_PROXY[@]}" \
      "$BIN/bridge-runtime" "$RD/bridge/plan.json" --bind "websecure=127.0.0.1:${PORT[bridge]}" ;;
  esac
}

wrk_run() { # port secs out [extra wrk args...]
  local port=$1 secs=$2 out=$3; shift 3
  "${PIN_LOAD[@]}" "$WRK_BIN" -t1 -c"$CONNS" -d"$secs"s --timeout 5s --latency "$@" \
    "https://127.0.0.1:$port/" >"$out" 2>&1
}

to_us() {
  awk -v v="$1" 'BEGIN{ if (v ~ /us$/) {sub(/us$/,"",v); print v+0}
    else if (v ~ /ms$/) {sub(/ms$/,"",v); print v*1000}
    else if (v ~ /s$/) {sub(/s$/,"",v); print v*1000000} else print "NA" }'
}

field() { # file -> "rps p50_us p99_us errors"
  local f=$1
  printf "%s\t%s\t%s\t%s" \
    "$(awk '/^Requests\/sec:/{print $2}' "$f")" \
    "$(to_us "$(awk '$1=="50%"{print $2}' "$f")")" \
    "$(to_us "$(awk '$1=="99%"{print $2}' "$f")")" \
    "$(awk '/Non-2xx/{n+=$NF} /Socket errors/{gsub(/,/,""); n+=$4+$6+$8+$10} END{print n+0}' "$f")"
}

run_row() { # name rep
  local name=$1 rep=$2 bpid ppid bg
  bg=$(wait_quiet "${QUIET_MAX_PCT:-10}" "${QUIET_WAIT_S:-600}") || log "WARNING: still ${bg}% busy, measuring anyway"
  start_bg "$RD/backend.log" "${PIN_LOAD[@]}" "$NGINX_BIN" -p "$RD" -c "$RD/backend.conf"; bpid=$LAST_PID
  wait_port $BE_PORT || { stop_all; return 1; }
  start_proxy "$name"; ppid=$LAST_PID
  wait_port "${PORT[$name]}" 15 || { stop_all; return 1; }
  local i; for ((i = 0; i < 50; i++)); do
    [[ $(curl -sk -m 2 "https://127.0.0.1:${PORT[$name]}/") == ok ]] && break; sleep 0.1; done
  local alpn; alpn=$(echo | openssl s_client -connect "127.0.0.1:${PORT[$name]}" -alpn h2 2>/dev/null | awk -F': ' '/ALPN protocol/{print $2}')
  wrk_run "${PORT[$name]}" 2 "$RD/$name.$rep.warm.txt"
  wrk_run "${PORT[$name]}" "$DUR" "$RD/$name.$rep.hs.txt" -H "Connection: close"
  wrk_run "${PORT[$name]}" "$DUR" "$RD/$name.$rep.ka.txt"
  printf "%s\t%s\t%s\t%s\t%s\t%s\n" "$name" "$rep" "$(field "$RD/$name.$rep.hs.txt")" \
    "$(field "$RD/$name.$rep.ka.txt")" "${alpn:-none}" "$bg" >>"$OUT"
  stop_pid "$ppid"; stop_pid "$bpid"; sleep 1
}

log "run dir $RD; conns=$CONNS dur=${DUR}s repeats=$REPEATS rows: $ROWS"
versions >"$RD/versions.txt" 2>/dev/null; cat "$RD/versions.txt" >&2
printf "row\trep\ths_per_s\ths_p50_us\ths_p99_us\ths_errors\tka_rps\tka_p50_us\tka_p99_us\tka_errors\talpn_h2\tbg_busy_pct\n" >"$OUT"
for ((rep = 1; rep <= REPEATS; rep++)); do
  for row in $ROWS; do
    log "rep $rep: $row"
    run_row "$row" "$rep"
  done
done

"$PY" - "$OUT" <<'PY'
import csv, statistics, sys
rows = list(csv.DictReader(open(sys.argv[1]), delimiter="\t"))
by = {}
for r in rows:
    by.setdefault(r["row"], []).append(r)
def med(rs, k):
    v = [float(r[k]) for r in rs if r[k] not in ("", "NA")]
    return statistics.median(v) if v else float("nan")
print("| row | reps | full handshakes/s | handshake p99 ms | keep-alive req/s | keep-alive p50 ms | keep-alive p99 ms | errors | ALPN h2 |")
print("|---|---|---|---|---|---|---|---|---|")
for name, rs in by.items():
    errs = sum(int(float(r["hs_errors"] or 0)) + int(float(r["ka_errors"] or 0)) for r in rs)
    print(f"| {name} | {len(rs)} | {med(rs,'hs_per_s'):,.0f} | {med(rs,'hs_p99_us')/1000:.2f} | "
          f"{med(rs,'ka_rps'):,.0f} | {med(rs,'ka_p50_us')/1000:.3f} | {med(rs,'ka_p99_us')/1000:.3f} | {errs} | {rs[0]['alpn_h2']} |")
PY
