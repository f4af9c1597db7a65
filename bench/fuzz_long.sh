#!/usr/bin/env bash
# Long fuzzing run: each cargo-fuzz target for FUZZ_MINUTES (default 30) minutes, growing a corpus
# in fuzz/corpus/<target> that is kept between runs, then a markdown report in
# bench/results/fuzz-<YYYYMMDD>.md: per target the duration, executions, corpus size and crashes
# (0 expected), with the toolchain and commit. Every crash input is listed with the command that
# reproduces it.
#
#   bash bench/fuzz_long.sh                      # all targets, one after the other
#   bash bench/fuzz_long.sh -j 2                 # two targets at a time (one core each)
#   FUZZ_MINUTES=5 bash bench/fuzz_long.sh rule yaml_front_end
#
# Environment: FUZZ_MINUTES (per target), FUZZ_TIMEOUT (seconds one input may take before it counts
# as a hang, default 30), FUZZ_CMIN=0 to skip minimising each corpus at the end (on by default,
# so fuzz/corpus stays small enough to commit with `git add -f`), FUZZ_REGRESSIONS=0 to leave out
# the saved crash inputs in fuzz/regressions, FUZZ_REPORT to write the report elsewhere. Needs
# nightly; installs cargo-fuzz if missing. Builds go to fuzz/target; builds and runs are at nice
# 19. Raw libFuzzer logs: fuzz/target/fuzz-long-logs/.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
FUZZ="$ROOT/fuzz"
MINUTES="${FUZZ_MINUTES:-30}"
TIMEOUT_EACH="${FUZZ_TIMEOUT:-30}"
jobs=1
targets=()
while (($#)); do
  case "$1" in
    -j) jobs="$2"; shift 2 ;;
    -j*) jobs="${1#-j}"; shift ;;
    -h|--help) sed -n '2,17p' "$0"; exit 0 ;;
    *) targets+=("$1"); shift ;;
  esac
done
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "fuzz_long: -j needs a positive number" >&2; exit 2; }
[[ $MINUTES =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "fuzz_long: FUZZ_MINUTES must be a number" >&2; exit 2; }

toolchains="$(rustup toolchain list 2>/dev/null || true)"
if ! grep -q '^nightly' <<<"$toolchains"; then
  echo "fuzz_long: needs the nightly toolchain (rustup toolchain list)" >&2
  exit 2
fi
if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
  nice -n 19 cargo install cargo-fuzz --locked </dev/null >&2
fi
unset CARGO_TARGET_DIR
cd "$ROOT"
if ((${#targets[@]} == 0)); then
  mapfile -t targets < <(cargo +nightly fuzz list --fuzz-dir "$FUZZ" </dev/null)
fi

build_start=$(date +%s)
nice -n 19 cargo +nightly fuzz build --fuzz-dir "$FUZZ" </dev/null
build_s=$(($(date +%s) - build_start))
# The binaries just built are run directly (as `cargo fuzz run` and `cmin` do after building), so
# a source edit during the run cannot trigger a rebuild and the durations are fuzzing time only.
host="$(rustc +nightly -vV | sed -n 's/^host: //p')"
bin="$FUZZ/target/$host/release"
export RUST_BACKTRACE="${RUST_BACKTRACE:-1}"

seconds=$(awk -v m="$MINUTES" 'BEGIN { printf "%d", m * 60 }')
logs="$FUZZ/target/fuzz-long-logs"
stats="$(mktemp -d "${TMPDIR:-/tmp}/bridgectl-fuzz-long.XXXXXX")"
trap 'rm -rf "$stats"' EXIT
mkdir -p "$logs"

# One target: fuzz, minimise, and leave "key value" lines in $stats/<t>.
run_target() {
  local t="$1" log="$logs/$1.log" out="$stats/$1" rc=0
  local corpus="$FUZZ/corpus/$t" artifacts="$FUZZ/artifacts/$t"
  mkdir -p "$corpus" "$artifacts"
  local dirs=("$corpus")
  [[ -d $FUZZ/seeds/$t ]] && dirs+=("$FUZZ/seeds/$t")
  [[ ${FUZZ_REGRESSIONS:-1} != 0 && -d $FUZZ/regressions/$t ]] && dirs+=("$FUZZ/regressions/$t")
  ls -1 "$artifacts" | sort >"$out.before"
  local start end
  start=$(date +%s)
  nice -n 19 "$bin/$t" -artifact_prefix="$artifacts/" -max_total_time="$seconds" \
    -timeout="$TIMEOUT_EACH" -print_final_stats=1 "${dirs[@]}" </dev/null >"$log" 2>&1 || rc=$?
  end=$(date +%s)
  # Minimise the corpus as `cargo fuzz cmin` does: merge into a fresh directory, then swap.
  if [[ ${FUZZ_CMIN:-1} != 0 && -n $(find "$corpus" -type f -print -quit) ]]; then
    local merged="$corpus.cmin.$$"
    rm -rf "$merged" && mkdir -p "$merged"
    if nice -n 19 "$bin/$t" -merge=1 -artifact_prefix="$artifacts/" -timeout="$TIMEOUT_EACH" \
      "$merged" "$corpus" </dev/null >"$logs/$t.cmin.log" 2>&1; then
      rm -rf "$corpus" && mv "$merged" "$corpus"
    else
      rm -rf "$merged"
    fi
  fi
  {
    echo "rc $rc"
    echo "seconds $((end - start))"
    echo "execs $(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
    echo "rate $(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -n 1)"
    echo "peak_rss $(sed -n 's/^stat::peak_rss_mb: *//p' "$log" | tail -n 1)"
    echo "cov $(grep -o 'cov: [0-9]*' "$log" | tail -n 1 | cut -d' ' -f2)"
    echo "files $(find "$corpus" -type f | wc -l)"
    echo "bytes $(du -sb "$corpus" | cut -f1)"
  } >"$out"
  comm -13 "$out.before" <(ls -1 "$artifacts" | sort) >"$out.new"
  echo "fuzz_long: $t done (exit $rc, $(wc -l <"$out.new") new artifacts)" >&2
}

echo "fuzz_long: ${#targets[@]} targets x $MINUTES min, $jobs at a time; logs in $logs" >&2
running=0
for t in "${targets[@]}"; do
  run_target "$t" &
  running=$((running + 1))
  if ((running >= jobs)); then
    wait -n || true
    running=$((running - 1))
  fi
done
wait || true

get() { sed -n "s/^$2 //p" "$stats/$1"; }
day="$(date +%Y%m%d)"
report="${FUZZ_REPORT:-$ROOT/bench/results/fuzz-$day.md}"
if [[ -z ${FUZZ_REPORT:-} && -e $report ]]; then
  n=2
  while [[ -e $ROOT/bench/results/fuzz-$day-$n.md ]]; do n=$((n + 1)); done
  report="$ROOT/bench/results/fuzz-$day-$n.md"
fi
mkdir -p "$(dirname "$report")"
commit="$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)"
if [[ -n $(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null) ]]; then
  commit="$commit (with uncommitted changes)"
fi
total_crashes=0
{
  echo "# Fuzzing: ${#targets[@]} targets x $MINUTES min ($day)"
  echo
  echo "- commit: $commit"
  echo "- toolchain: $(rustc +nightly --version), $(cargo +nightly fuzz --version)"
  echo "- sanitizer: address (cargo-fuzz default), debug assertions on; $jobs target(s) at a time, nice 19"
  echo "- machine: $(nproc) cores; build $build_s s"
  echo "- command: \`FUZZ_MINUTES=$MINUTES bash bench/fuzz_long.sh -j $jobs ${targets[*]}\`"
  echo
  echo "| target | duration | executions | exec/s | coverage | corpus (files, KiB) | peak RSS MiB | crashes |"
  echo "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"
  for t in "${targets[@]}"; do
    crashes=$(wc -l <"$stats/$t.new")
    # A run that ended with an error but left no input (killed, build error) counts as one.
    if [[ $(get "$t" rc) != 0 && $crashes == 0 ]]; then crashes="1 (exit $(get "$t" rc), no input saved)"; fi
    total_crashes=$((total_crashes + ${crashes%% *}))
    printf '| %s | %s s | %s | %s | %s | %s, %s | %s | %s |\n' "$t" "$(get "$t" seconds)" \
      "$(get "$t" execs)" "$(get "$t" rate)" "$(get "$t" cov)" "$(get "$t" files)" \
      "$(($(get "$t" bytes) / 1024))" "$(get "$t" peak_rss)" "$crashes"
  done
  echo
  if ((total_crashes == 0)); then
    if [[ ${FUZZ_CMIN:-1} != 0 ]]; then how="minimised (libFuzzer -merge=1)"; else how="not minimised"; fi
    echo "No crashes. Corpora: \`fuzz/corpus/<target>\`, $how."
  else
    echo "## Crashes"
    echo
    for t in "${targets[@]}"; do
      while read -r a; do
        [[ -n $a ]] || continue
        echo "### $t: \`fuzz/artifacts/$t/$a\`"
        echo
        echo "Reproduce (from the repo root): \`cargo +nightly fuzz run --fuzz-dir fuzz $t fuzz/artifacts/$t/$a\`"
        echo
        echo '```text'
        awk -f "$FUZZ/crash_summary.awk" "$logs/$t.log" | head -n 40 || true
        echo '```'
        echo
      done <"$stats/$t.new"
    done
  fi
} >"$report"
echo "fuzz_long: wrote $report ($total_crashes crashes)" >&2
((total_crashes == 0))
