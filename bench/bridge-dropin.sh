#!/usr/bin/env bash
# bridge-dropin.sh - bridge-runtime as an extra row of an outside peer harness that describes
# the row in the environment: LISTEN_ADDR, and BACKEND_ADDR (a req/s row) or A_ADDR and B_ADDR
# (a failover row, health-checked on HEALTH_PATH every HEALTH_INTERVAL), PROXY_THREADS, RUN_DIR.
# It builds the seed-shaped plan of bench/lib.sh (bridge_plan) and execs bridge-runtime in the
# foreground, so the harness measures and stops that PID. The req/s and failover results in
# bench/results/ dated up to 2026-12-02 were taken that way; bench/proxy_rps.sh and
# bench/failover.sh run bridge-runtime themselves and do not use this file.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR source=lib.sh
source "$(cd "$(dirname "$0")" && pwd)/lib.sh"
: "${LISTEN_ADDR:?LISTEN_ADDR (host:port to listen on) is not set}"
dir="${RUN_DIR:-$(mktemp -d /tmp/bridge-dropin.XXXXXX)}/bridge-$$"
servers=()
for addr in "${A_ADDR:-}" "${B_ADDR:-}" "${BACKEND_ADDR:-}"; do
  [[ -z $addr ]] || servers+=("$addr")
done
health=()
[[ -z ${A_ADDR:-} ]] || health=(-h "${HEALTH_INTERVAL:-5s}" -p "${HEALTH_PATH:-/health/active}")
bridge_plan "$dir" "${health[@]}" "${servers[@]}"
export TOKIO_WORKER_THREADS="${PROXY_THREADS:-1}"
exec "$BRIDGE_RUNTIME_BIN" "$dir/plan.json" --bind "web=$LISTEN_ADDR"
