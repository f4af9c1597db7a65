#!/usr/bin/env bash
# ha.sh - the pair behind one virtual address: bridge-runtime and HAProxy, each as two appliances
# under the same keepalived settings (`bridgectl keepalived`: advert 1 s, check every 1 s, fall 2,
# nopreempt), in network namespaces made and deleted by the harness (tests/ha.rs, `bench_pair`).
# A client namespace sends a request every 20 ms to the virtual address; each scenario runs
# ROUNDS times per proxy: a planned stop of the master (SIGTERM for bridge-runtime, SIGUSR1 with
# `grace 5s` and `monitor fail if { stopping }` for HAProxy), kill -9 of the master proxy, and the
# loss of the master host (cable pulled, keepalived and proxy killed).
#
# Usage: bench/ha.sh            # 5 rounds (about 6 minutes)
#        ROUNDS=1 bench/ha.sh   # a smoke run
# Needs root (ip netns), Debian's keepalived and haproxy (HAProxy rows are left out without it).
# Writes bench/results/ha-<YYYYMMDD><RESULT_SUFFIX>.md.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-5}
OUT="bench/results/ha-$(date +%Y%m%d)${RESULT_SUFFIX:-}.md"
command -v keepalived >/dev/null || { echo "ha.sh: keepalived is not installed" >&2; exit 1; }
cargo build -q -p bridge-runtime -p bridgectl
TABLE=$(mktemp)
trap 'rm -f "$TABLE"' EXIT
BENCH_ROUNDS=$ROUNDS BENCH_OUT=$TABLE cargo test -q -p bridge-tests --test ha bench_pair -- --ignored --nocapture >&2
{
  echo "# The pair: outage per scenario, bridge-runtime beside HAProxy (bench/ha.sh)"
  echo
  echo "$(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD), $ROUNDS rounds per row;"
  echo "bridge-runtime $(target/debug/bridge-runtime --version | cut -d' ' -f2) (debug build; the outage is set by keepalived's timing, not the proxy's speed),"
  echo "$(haproxy -v 2>/dev/null | head -1 | cut -d' ' -f1-3), $(keepalived --version 2>&1 | head -1 | cut -d' ' -f1-2)."
  echo "A request every 20 ms on a new connection; \"longest gap\" is the longest time between two answered requests."
  echo
  cat "$TABLE"
} > "$OUT"
echo "wrote $OUT"
