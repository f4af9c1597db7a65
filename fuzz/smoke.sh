#!/usr/bin/env bash
# Fuzz smoke run for CI: builds every cargo-fuzz target once, then runs each for FUZZ_SECONDS
# (default 10) starting from its hand-written seeds (fuzz/seeds/<t>) and any saved crash inputs
# (fuzz/regressions/<t>). Exits non-zero if any target crashes, panics, times out or runs out of
# memory, and prints one line per target with its execution count.
#
#   bash fuzz/smoke.sh                 # from any directory; needs no stdin
#   FUZZ_SECONDS=5 bash fuzz/smoke.sh
#   FUZZ_TARGETS="rule plan_loader" bash fuzz/smoke.sh
#   FUZZ_REGRESSIONS=0 bash fuzz/smoke.sh   # leave out fuzz/regressions (e.g. while one is open)
#
# Needs the nightly toolchain (cargo-fuzz builds with -Zsanitizer=address); without one it says so
# and exits 0. cargo-fuzz is installed from the crates registry if missing. Builds go to
# fuzz/target only (CARGO_TARGET_DIR is ignored here) at nice 19. New inputs found during the run
# go to a scratch directory that is removed afterwards, so fuzz/seeds stays as committed; a crash
# input is kept in fuzz/artifacts/<t>/ and the command to reproduce it is printed.
set -euo pipefail

FUZZ="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SECONDS_EACH="${FUZZ_SECONDS:-10}"
# Longest one input may run before libFuzzer reports it as a hang (a crash for this script).
TIMEOUT_EACH="${FUZZ_TIMEOUT:-20}"

toolchains="$(rustup toolchain list 2>/dev/null || true)"
if ! grep -q '^nightly' <<<"$toolchains"; then
  echo "fuzz smoke: skipped — no nightly toolchain (rustup toolchain list)"
  exit 0
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  echo "fuzz smoke: installing cargo-fuzz" >&2
  nice -n 19 cargo install cargo-fuzz --locked </dev/null >&2
fi

unset CARGO_TARGET_DIR
# A panic's backtrace names the failing frame in the report below.
export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"
cd "$FUZZ"

if [[ -n ${FUZZ_TARGETS:-} ]]; then
  read -r -a targets <<<"$FUZZ_TARGETS"
else
  mapfile -t targets < <(cargo +nightly fuzz list --fuzz-dir "$FUZZ" </dev/null)
fi
if ((${#targets[@]} == 0)); then
  echo "fuzz smoke: no fuzz targets found in $FUZZ/fuzz_targets" >&2
  exit 1
fi

start=$(date +%s)
nice -n 19 cargo +nightly fuzz build --fuzz-dir "$FUZZ" </dev/null
echo "fuzz smoke: built ${#targets[@]} targets in $(($(date +%s) - start)) s" >&2

scratch="$(mktemp -d "${TMPDIR:-/tmp}/bridgectl-fuzz-smoke.XXXXXX")"
trap 'rm -rf "$scratch"' EXIT

failed=()
for t in "${targets[@]}"; do
  corpus="$scratch/corpus-$t"
  log="$scratch/$t.log"
  mkdir -p "$corpus" "$FUZZ/artifacts/$t"
  # The first directory receives new inputs; the seeds and regressions are only read.
  dirs=("$corpus")
  [[ -d $FUZZ/seeds/$t ]] && dirs+=("$FUZZ/seeds/$t")
  [[ ${FUZZ_REGRESSIONS:-1} != 0 && -d $FUZZ/regressions/$t ]] && dirs+=("$FUZZ/regressions/$t")
  before="$(ls -1 "$FUZZ/artifacts/$t")"
  rc=0
  nice -n 19 cargo +nightly fuzz run --fuzz-dir "$FUZZ" "$t" "${dirs[@]}" -- \
    -max_total_time="$SECONDS_EACH" -timeout="$TIMEOUT_EACH" -print_final_stats=1 \
    </dev/null >"$log" 2>&1 || rc=$?
  execs="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  new="$(comm -13 <(printf '%s\n' "$before" | sort) <(ls -1 "$FUZZ/artifacts/$t" | sort) | sed '/^$/d')"
  if ((rc == 0)) && [[ -z $new ]]; then
    printf 'fuzz smoke: %-16s ok     %10s executions in %s s, %s new corpus inputs\n' \
      "$t" "${execs:-?}" "$SECONDS_EACH" "$(find "$corpus" -type f | wc -l)"
  else
    failed+=("$t")
    printf 'fuzz smoke: %-16s FAILED %10s executions (exit %s)\n' "$t" "${execs:-?}" "$rc"
    # The crash report: panic message, project frames of the backtrace, sanitizer summary.
    awk -f "$FUZZ/crash_summary.awk" "$log" | head -n 40 | sed 's/^/    /' || true
    if ! grep -q -E 'panicked at|ERROR:' "$log"; then tail -n 20 "$log" | sed 's/^/    /'; fi
    for a in $new; do
      echo "    input: fuzz/artifacts/$t/$a"
      echo "    reproduce: cargo +nightly fuzz run --fuzz-dir fuzz $t fuzz/artifacts/$t/$a"
    done
  fi
done

# The closing line in the plain 'N passed, N failed' form test summaries use.
echo "fuzz-smoke: $((${#targets[@]} - ${#failed[@]})) passed, ${#failed[@]} failed"
if ((${#failed[@]})); then
  echo "fuzz smoke: FAILED: ${failed[*]}" >&2
  exit 1
fi
