#!/usr/bin/env bash
# Fails when a committed insta snapshot (*.snap) was not read by the test run that wrote
# $INSTA_SNAPSHOT_REFERENCES_FILE (insta appends every snapshot file an assertion uses to it), so a
# renamed or deleted test cannot leave its snapshot behind. Also fails on pending *.snap.new files.
#   INSTA_SNAPSHOT_REFERENCES_FILE=/tmp/refs cargo test --workspace --locked
#   bash .ci/snapshots.sh /tmp/refs
set -euo pipefail
cd "$(dirname "$0")/.."
refs="${1:?usage: .ci/snapshots.sh REFERENCES_FILE}"
root="$(pwd -P)"
mapfile -t committed < <(git ls-files '*.snap' | sort)
mapfile -t referenced < <(sed "s#^${root}/##" "$refs" | sort -u)
unreferenced=()
# A here-string, not `printf | grep -q`: under pipefail, grep -q leaving at the first match can
# kill printf with SIGPIPE and make a referenced snapshot look unreferenced.
listed="$(printf '%s\n' "${referenced[@]}")"
for snap in "${committed[@]}"; do
  if ! grep -qxF -- "$snap" <<<"$listed"; then
    unreferenced+=("$snap")
  fi
done
mapfile -t pending < <(git ls-files --others --exclude-standard '*.snap.new')
if ((${#unreferenced[@]})); then
  echo "snapshots no test reads (delete them or restore their test):" >&2
  printf '  %s\n' "${unreferenced[@]}" >&2
fi
if ((${#pending[@]})); then
  echo "pending snapshot updates (review with the test, then rename or delete):" >&2
  printf '  %s\n' "${pending[@]}" >&2
fi
if ((${#unreferenced[@]} + ${#pending[@]})); then
  exit 1
fi
echo "snapshots: all ${#committed[@]} committed snapshots are read by a test"
