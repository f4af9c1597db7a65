#!/usr/bin/env bash
# Drop-in row for the peer benchmarks in shared/bench (proxy_rps.sh, failover.sh): turns their
# environment (LISTEN_ADDR, A_ADDR/B_ADDR or BACKEND_ADDR, HEALTH_PATH, HEALTH_INTERVAL, RUN_DIR)
# into a Traefik-style configuration like the seed's, builds a plan with bridgectl, and execs
# bridge-runtime in the foreground (the harness measures its PID).
# Usage (from the repo root, after `cargo build --release -p bridgectl -p bridge-runtime`):
#   EXTRA_PROXIES="bridge|18130|$PWD/bench/bridge-dropin.sh" ../shared/bench/failover.sh -P "haproxy caddy nginx"
#   EXTRA_PROXIES="bridge|18085|$PWD/bench/bridge-dropin.sh" ../shared/bench/proxy_rps.sh
set -euo pipefail
HERE="$(cd "$(dirname "$0")/.." && pwd)"
BIN="${BRIDGE_BIN_DIR:-${CARGO_TARGET_DIR:-$HERE/target}/release}"
DIR="${RUN_DIR:-$(mktemp -d)}/bridge-$$"
mkdir -p "$DIR"
servers=""
for addr in ${A_ADDR:-} ${B_ADDR:-} ${BACKEND_ADDR:-}; do
  servers+="          - url: \"http://${addr}\"\n"
done
cat > "$DIR/traefik.yml" <<YML
entryPoints:
  web:
    address: ":80"
providers:
  file:
    filename: /etc/traefik/dynamic.yml
YML
{
  printf 'http:\n  routers:\n    central:\n      rule: "PathPrefix(`/`)"\n      service: central\n      entryPoints: [web]\n'
  printf '  services:\n    central:\n      loadBalancer:\n'
  if [[ -n ${A_ADDR:-} ]]; then
    printf '        healthCheck:\n          path: %s\n          interval: %s\n          timeout: 3s\n' "${HEALTH_PATH:-/health/active}" "${HEALTH_INTERVAL:-5s}"
  fi
  printf '        servers:\n'
  printf "$servers"
} > "$DIR/dynamic.yml"
"$BIN/bridgectl" build "$DIR" --profile dev --out "$DIR/plan.json" >/dev/null
export TOKIO_WORKER_THREADS="${PROXY_THREADS:-1}"
# BRIDGE_WRAP: a command prefix for measuring tools (bench/instructions.sh runs callgrind).
exec ${BRIDGE_WRAP:-} "$BIN/bridge-runtime" "$DIR/plan.json" --bind "web=${LISTEN_ADDR}"
