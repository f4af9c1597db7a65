# shellcheck shell=bash disable=SC2034  # PIN_*, BENCH_ROOT and the like are for the sourcing script
# bench/lib.sh - helpers for the benchmark scripts of this repository (sourced, never run).
#
# What it gives a script:
#   binaries   NGINX_BIN HAPROXY_BIN CADDY_BIN WRK_BIN PY (override any of them from the
#              environment), have_bin, BRIDGE_BIN_DIR / BRIDGECTL_BIN / BRIDGE_RUNTIME_BIN and
#              need_bridge, versions (one line per tool, for the results)
#   processes  start_bg LOG CMD... (background, PID in LAST_PID), stop_pid PID, stop_all,
#              bench_traps; a script stops only PIDs it started, by PID
#   ports      port_open PORT, wait_port PORT [SECONDS] [PID], ports_free PORT...
#   machine    pin_setup pin|shared (PIN_PROXY / PIN_LOAD / PROXY_THREADS), busy_pct SECONDS,
#              wait_quiet MAX_PCT TIMEOUT_S, core_busy_snapshot / core_busy_since, ticks_of PID...,
#              child_ticks, machine_ticks
#   memory     tree_pids PID, mem_kb PID VmRSS|VmHWM (summed over the process tree)
#   configs    nginx_paths DIR (temp paths inside DIR), bridge_plan DIR [options] SERVER...
#   wrk        wrk_us VALUE, wrk_summary FILE ("rps p50_us p99_us errors")
#
# Everything the helpers start or probe is on 127.0.0.1. Every wait is bounded.

BENCH_LIB_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
BENCH_ROOT="$(cd "$BENCH_LIB_DIR/.." && pwd)"

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "$*"; exit 1; }

# --- binaries ------------------------------------------------------------------------------------

# first_bin NAME [FALLBACK...]: the first of NAME on PATH or the fallbacks that is executable;
# prints nothing when there is none.
first_bin() {
  local name=$1 c
  shift
  c=$(command -v "$name" 2>/dev/null || true)
  if [[ -n $c ]]; then echo "$c"; return 0; fi
  for c in "$@"; do
    if [[ -x $c ]]; then echo "$c"; return 0; fi
  done
  return 0
}
NGINX_BIN=${NGINX_BIN:-$(first_bin nginx /usr/sbin/nginx)}
HAPROXY_BIN=${HAPROXY_BIN:-$(first_bin haproxy /usr/sbin/haproxy)}
CADDY_BIN=${CADDY_BIN:-$(first_bin caddy /usr/local/bin/caddy)}
WRK_BIN=${WRK_BIN:-$(first_bin wrk)}
PY=${PY:-python3}

# have_bin PATH: true when PATH is set and executable (CADDY_BIN is empty without caddy).
have_bin() { [[ -n ${1:-} && -x $1 ]]; }

# The bridge binaries to measure: BRIDGE_BIN_DIR, else $CARGO_TARGET_DIR/release, else
# target/release of this checkout.
BRIDGE_BIN_DIR=${BRIDGE_BIN_DIR:-${CARGO_TARGET_DIR:-$BENCH_ROOT/target}/release}
BRIDGECTL_BIN=$BRIDGE_BIN_DIR/bridgectl
BRIDGE_RUNTIME_BIN=$BRIDGE_BIN_DIR/bridge-runtime

need_bridge() {
  have_bin "$BRIDGECTL_BIN" && have_bin "$BRIDGE_RUNTIME_BIN" && return 0
  die "no bridgectl/bridge-runtime in $BRIDGE_BIN_DIR: run \`cargo build --release -p bridgectl -p bridge-runtime\` or set BRIDGE_BIN_DIR"
}

# bridge_build: which build is measured (commit of the checkout, binary time).
bridge_build() {
  local rev dirty="" when
  rev=$(git -C "$BENCH_ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
  if [[ -n $(git -C "$BENCH_ROOT" status --porcelain --untracked-files=no 2>/dev/null) ]]; then
    dirty=" (checkout has uncommitted changes)"
  fi
  when=$(date -u -r "$BRIDGE_RUNTIME_BIN" +%Y-%m-%dT%H:%MZ 2>/dev/null || echo "?")
  echo "$BRIDGE_RUNTIME_BIN built $when; checkout at $rev$dirty"
}

# first_line CMD...: the first line CMD prints (stdout and stderr), never failing.
first_line() {
  local out
  out=$("$@" 2>&1 || true)
  echo "${out%%$'\n'*}"
}

versions() {
  local v
  if have_bin "$NGINX_BIN"; then v=$(first_line "$NGINX_BIN" -v); echo "nginx    ${v##*/}"; fi
  if have_bin "$HAPROXY_BIN"; then v=$(first_line "$HAPROXY_BIN" -v); v=${v#HAProxy version }; echo "haproxy  ${v%% *}"; fi
  if have_bin "$CADDY_BIN"; then v=$(first_line "$CADDY_BIN" version); echo "caddy    ${v%% *}"; else echo "caddy    not installed"; fi
  if have_bin "$WRK_BIN"; then v=$(first_line "$WRK_BIN" -v); v=${v#wrk }; echo "wrk      ${v%% *}"; fi
  if have_bin "$BRIDGE_RUNTIME_BIN"; then echo "bridge   $(bridge_build)"; fi
  echo "machine  $(nproc) cpus, kernel $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
}

# --- processes -----------------------------------------------------------------------------------

# PIDs started by start_bg and not yet stopped, oldest first.
BENCH_PIDS=()
LAST_PID=""
# STOP_GRACE_S: seconds between TERM and KILL.
STOP_GRACE_S=${STOP_GRACE_S:-3}

# start_bg LOG CMD...: runs CMD in the background with stdout+stderr in LOG and stdin from
# /dev/null; LAST_PID is its PID. CMD must end up as the server itself (env, taskset and
# exec keep the PID), so that the PID is the process that is measured and stopped. Call it
# directly, not inside $(...), so the process stays a child of the script.
start_bg() {
  local out=$1
  shift
  "$@" >"$out" 2>&1 </dev/null &
  LAST_PID=$!
  BENCH_PIDS+=("$LAST_PID")
}

# forget_pid PID: drop PID from BENCH_PIDS (after it was stopped or died).
forget_pid() {
  local keep=() p
  for p in "${BENCH_PIDS[@]}"; do [[ $p == "$1" ]] || keep+=("$p"); done
  BENCH_PIDS=("${keep[@]}")
}

# stop_pid PID: TERM, up to STOP_GRACE_S seconds to exit, then KILL; reaps it. Only for PIDs this
# script started (start_bg or $!).
stop_pid() {
  local pid=${1:-} i
  [[ -n $pid ]] || return 0
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for ((i = 0; i < STOP_GRACE_S * 20; i++)); do
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.05
    done
    if kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  fi
  wait "$pid" 2>/dev/null || true
  forget_pid "$pid"
}

# stop_all: every PID still in BENCH_PIDS, newest first (proxies before their backends).
stop_all() {
  local i
  for ((i = ${#BENCH_PIDS[@]} - 1; i >= 0; i--)); do stop_pid "${BENCH_PIDS[i]}"; done
  BENCH_PIDS=()
}

# bench_traps: stop everything at exit and on Ctrl-C / TERM.
bench_traps() {
  trap 'stop_all' EXIT
  trap 'stop_all; exit 130' INT TERM
}

# --- ports ---------------------------------------------------------------------------------------

# port_open PORT: something accepts connections on 127.0.0.1:PORT.
port_open() { (: <>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

# wait_port PORT [SECONDS] [PID]: until 127.0.0.1:PORT accepts (default 10 s); fails at once
# when PID is given and that process has exited.
wait_port() {
  local port=$1 secs=${2:-10} pid=${3:-} i
  for ((i = 0; i < secs * 20; i++)); do
    port_open "$port" && return 0
    if [[ -n $pid ]] && ! kill -0 "$pid" 2>/dev/null; then
      log "PID $pid exited before 127.0.0.1:$port opened"
      return 1
    fi
    sleep 0.05
  done
  log "127.0.0.1:$port did not open within ${secs}s"
  return 1
}

# ports_free PORT...: true when none of the ports accepts; names the first busy one.
ports_free() {
  local p
  for p in "$@"; do
    if port_open "$p"; then log "127.0.0.1:$p is already in use"; return 1; fi
  done
  return 0
}

# --- CPU pinning and machine load ----------------------------------------------------------------

# pin_setup pin|shared: sets PIN_PROXY and PIN_LOAD (command prefixes) and PROXY_THREADS.
#   pin     the proxy alone on PROXY_CPUS (default 0) with one worker/thread, the load generator
#           and the backend on LOAD_CPUS (default 1): each row measures one dedicated core.
#   shared  no pinning, PROXY_THREADS = number of CPUs; everything competes.
pin_setup() {
  case $1 in
    pin)
      (($(nproc) >= 2)) || die "-m pin needs two CPUs (this machine has $(nproc)); use -m shared"
      PROXY_CPUS=${PROXY_CPUS:-0} LOAD_CPUS=${LOAD_CPUS:-1}
      PIN_PROXY=(taskset -c "$PROXY_CPUS") PIN_LOAD=(taskset -c "$LOAD_CPUS")
      PROXY_THREADS=${PROXY_THREADS:-1}
      ;;
    shared)
      PROXY_CPUS="" LOAD_CPUS=""
      PIN_PROXY=() PIN_LOAD=()
      PROXY_THREADS=${PROXY_THREADS:-$(nproc)}
      ;;
    *) die "pinning mode must be pin or shared, not '$1'" ;;
  esac
}

# machine_ticks: "busy total" clock ticks of all CPUs since boot (iowait counts as idle).
machine_ticks() {
  awk '$1 == "cpu" { t = 0; for (i = 2; i <= NF; i++) t += $i; print t - $5 - $6, t; exit }' /proc/stat
}

# busy_pct SECONDS: how busy the whole machine was over the next SECONDS, in percent.
busy_pct() {
  local a b
  a=$(machine_ticks)
  sleep "${1:-2}"
  b=$(machine_ticks)
  awk -v a="$a" -v b="$b" 'BEGIN { split(a, x); split(b, y); t = y[2] - x[2]
    printf "%d\n", (t > 0 ? 100 * (y[1] - x[1]) / t : 0) }'
}

# wait_quiet MAX_PCT TIMEOUT_S: waits (checking every ~10 s) until the machine is at most MAX_PCT
# busy, so that a build or test run of someone else does not decide the figures. Prints the last
# busy% seen; returns 1 when the machine was still busy after TIMEOUT_S.
wait_quiet() {
  local max=${1:-10} limit=${2:-600} start b
  start=$(date +%s)
  while :; do
    b=$(busy_pct 2)
    if ((b <= max)); then echo "$b"; return 0; fi
    if (($(date +%s) - start >= limit)); then echo "$b"; return 1; fi
    log "machine ${b}% busy (allowed ${max}%), waiting"
    sleep 8
  done
}

# core_busy_snapshot: "busy total" per CPU, space separated, for core_busy_since.
core_busy_snapshot() {
  awk '$1 ~ /^cpu[0-9]+$/ { t = 0; for (i = 2; i <= NF; i++) t += $i; printf "%d %d ", t - $5 - $6, t }' /proc/stat
}

# core_busy_since SNAPSHOT: busy% per CPU since SNAPSHOT, as "cpu0=97,cpu1=64".
core_busy_since() {
  local now
  now=$(core_busy_snapshot)
  awk -v a="$1" -v b="$now" 'BEGIN { n = split(a, x); split(b, y); s = ""
    for (i = 1; i < n; i += 2) { t = y[i + 1] - x[i + 1]
      s = s sprintf("%scpu%d=%d", s == "" ? "" : ",", (i - 1) / 2, t > 0 ? 100 * (y[i] - x[i]) / t : 0) }
    print s }'
}

# tree_pids PID: PID and all its descendants.
tree_pids() {
  local c
  echo "$1"
  for c in $(ps -o pid= --ppid "$1" 2>/dev/null); do tree_pids "$c"; done
}

# ticks_of PID...: user+system clock ticks used so far by the PIDs and their descendants.
ticks_of() {
  local sum=0 p q v
  for p in "$@"; do
    for q in $(tree_pids "$p"); do
      # fields 14/15 of /proc/PID/stat, counted after the ")" that ends the command name
      v=$(awk '{ sub(/.*\) /, ""); print $12 + $13 }' "/proc/$q/stat" 2>/dev/null || true)
      sum=$((sum + ${v:-0}))
    done
  done
  echo "$sum"
}

# child_ticks: CPU ticks of the children this script has already waited for (cutime + cstime of
# the main shell; e.g. a wrk run that has ended). Call it from the main shell, not from $(...)
# of a function that runs wrk itself.
child_ticks() { awk '{ sub(/.*\) /, ""); print $14 + $15 }' "/proc/$$/stat"; }

# --- memory --------------------------------------------------------------------------------------

# mem_kb PID FIELD: FIELD of /proc/*/status (VmRSS, VmHWM) in kB, summed over PID and its
# descendants (nginx: master and workers).
mem_kb() {
  local sum=0 p v
  for p in $(tree_pids "$1"); do
    v=$(awk -v k="$2:" '$1 == k { print $2 }' "/proc/$p/status" 2>/dev/null || true)
    sum=$((sum + ${v:-0}))
  done
  echo "$sum"
}

# --- configurations ------------------------------------------------------------------------------

# nginx_paths DIR: creates DIR/tmp/* and prints nginx `*_temp_path` directives pointing there, so
# an nginx started by a benchmark writes nothing outside its run directory.
nginx_paths() {
  local d=$1 k
  for k in client_body proxy fastcgi uwsgi scgi; do
    mkdir -p "$d/tmp/$k"
    printf '    %s_temp_path %s/tmp/%s;\n' "$k" "$d" "$k"
  done
}

# bridge_plan DIR [-h HEALTH_INTERVAL] [-p HEALTH_PATH] SERVER...: writes DIR/traefik.yml and
# DIR/dynamic.yml in the shape of the seed (entry point `web`, one router for every path, one
# load-balancer service `central` over http://SERVER for each SERVER; with -h, an active health
# check on HEALTH_PATH, default /health/active, with a 3 s timeout) and builds DIR/plan.json with
# `bridgectl build --profile dev`. Serve it with
#   bridge-runtime DIR/plan.json --bind web=127.0.0.1:PORT
# BRIDGE_PLAN_CTL: another build's bridgectl (for that build's runtime, whose plan version may differ).
# BRIDGE_PLAN_MIDDLEWARE: one middleware for the router, as a YAML flow mapping, e.g.
#   '{rateLimit: {average: 1000000, burst: 1000000}}' (what a middleware costs per request).
bridge_plan() {
  local dir=$1 interval="" hpath=/health/active s
  shift
  while (($#)); do
    case $1 in
      -h) interval=$2; shift 2 ;;
      -p) hpath=$2; shift 2 ;;
      *) break ;;
    esac
  done
  (($#)) || die "bridge_plan: no server"
  need_bridge
  mkdir -p "$dir"
  cat >"$dir/traefik.yml" <<'YML'
entryPoints:
  web:
    address: ":80"
providers:
  file:
    filename: /etc/traefik/dynamic.yml
YML
  {
    echo "http:"
    echo "  routers:"
    echo "    central:"
    echo "      rule: \"PathPrefix(\`/\`)\""
    echo "      service: central"
    echo "      entryPoints: [web]"
    if [[ -n ${BRIDGE_PLAN_MIDDLEWARE:-} ]]; then
      echo "      middlewares: [bench]"
      echo "  middlewares:"
      echo "    bench: $BRIDGE_PLAN_MIDDLEWARE"
    fi
    echo "  services:"
    echo "    central:"
    echo "      loadBalancer:"
    if [[ -n $interval ]]; then
      echo "        healthCheck:"
      echo "          path: $hpath"
      echo "          interval: $interval"
      echo "          timeout: 3s"
    fi
    echo "        servers:"
    for s in "$@"; do echo "          - url: \"http://$s\""; done
  } >"$dir/dynamic.yml"
  "${BRIDGE_PLAN_CTL:-$BRIDGECTL_BIN}" build "$dir" --profile dev --out "$dir/plan.json" >"$dir/build.log" 2>&1 ||
    { cat "$dir/build.log" >&2; die "bridgectl build $dir failed"; }
}

# --- wrk output ----------------------------------------------------------------------------------

# wrk_us VALUE: a wrk duration (850.12us, 1.20ms, 2.00s, 1.5m) in microseconds; NA if unknown.
wrk_us() {
  awk -v v="$1" 'BEGIN {
    if (v ~ /us$/) f = 1; else if (v ~ /ms$/) f = 1000; else if (v ~ /m$/) f = 60000000
    else if (v ~ /s$/) f = 1000000; else { print "NA"; exit }
    sub(/[a-z]+$/, "", v); printf "%.0f\n", v * f }'
}

# wrk_summary FILE: "rps p50_us p99_us errors" of a `wrk --latency` report (tab separated);
# errors are non-2xx/3xx answers plus socket errors (connect, read, write, timeout).
wrk_summary() {
  local f=$1 rps p50 p99 errs
  rps=$(awk '$1 == "Requests/sec:" { print $2 }' "$f")
  p50=$(wrk_us "$(awk '$1 == "50%" { print $2 }' "$f")")
  p99=$(wrk_us "$(awk '$1 == "99%" { print $2 }' "$f")")
  errs=$(awk '/Non-2xx or 3xx responses:/ { n += $NF }
    /Socket errors:/ { gsub(/,/, ""); n += $4 + $6 + $8 + $10 } END { print n + 0 }' "$f")
  printf '%s\t%s\t%s\t%s\n' "${rps:-NA}" "$p50" "$p99" "$errs"
}
