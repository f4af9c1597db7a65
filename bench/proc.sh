# shellcheck shell=bash disable=SC2034  # BUILD, PIDS and the rest are for the sourcing script
# Helpers shared by bench/slow_clients.sh and bench/soak.sh (sourced): the binaries to measure,
# processes started here and stopped by PID only, ports on 127.0.0.1. The caller sets NAME (its
# log prefix) and HERE (the repository root) first.

log() { printf '[%s %s] %s\n' "$NAME" "$(date -u +%H:%M:%S)" "$*" >&2; }
die() { log "$*"; exit 1; }

# BRIDGE_RUNTIME and BRIDGECTL, built in release when not given; BUILD describes them.
find_binaries() {
  if [[ -z ${BRIDGE_RUNTIME:-} || -z ${BRIDGECTL:-} ]]; then
    log "BRIDGE_RUNTIME/BRIDGECTL not set: cargo build --release -p bridge-runtime -p bridgectl"
    cargo build --release -p bridge-runtime -p bridgectl >&2
    local td=${CARGO_TARGET_DIR:-$HERE/target}
    BRIDGE_RUNTIME=${BRIDGE_RUNTIME:-$td/release/bridge-runtime}
    BRIDGECTL=${BRIDGECTL:-$td/release/bridgectl}
  fi
  [[ -x $BRIDGE_RUNTIME && -x $BRIDGECTL ]] || die "not executable: $BRIDGE_RUNTIME / $BRIDGECTL"
  BRIDGECTL=$(cd "$(dirname "$BRIDGECTL")" && pwd)/$(basename "$BRIDGECTL")
  case $BRIDGE_RUNTIME in
    */debug/*) BUILD="debug build ($BRIDGE_RUNTIME; much slower than release)" ;;
    *) BUILD="binaries $BRIDGE_RUNTIME, $BRIDGECTL" ;;
  esac
}

# Processes started here, stopped in reverse order at exit. STOP_WAIT: tenths of a second a
# process gets after TERM before KILL (the proxy drains in-flight requests first).
PIDS=()
STOP_WAIT=${STOP_WAIT:-50}
stop_pid() {
  local p=$1
  kill -0 "$p" 2>/dev/null || return 0
  kill -TERM "$p" 2>/dev/null || true
  for _ in $(seq "$STOP_WAIT"); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  if kill -0 "$p" 2>/dev/null; then kill -KILL "$p" 2>/dev/null || true; fi
  wait "$p" 2>/dev/null || true
}
cleanup() { local i; for ((i = ${#PIDS[@]} - 1; i >= 0; i--)); do stop_pid "${PIDS[i]}"; done; }
trap cleanup EXIT
trap 'cleanup; exit 130' INT TERM

port_busy() { (echo >"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
# wait_port PORT SECONDS [PID]: until something listens; fails early when PID exits.
wait_port() {
  for _ in $(seq $((${2:-30} * 10))); do
    port_busy "$1" && return 0
    [[ -n ${3:-} ]] && ! kill -0 "$3" 2>/dev/null && return 1
    sleep 0.1
  done
  return 1
}
# ports_free PORT...: dies naming the first port in use.
ports_free() {
  local p
  for p in "$@"; do port_busy "$p" && die "127.0.0.1:$p is in use (set PORT_BASE)"; done
  return 0
}
