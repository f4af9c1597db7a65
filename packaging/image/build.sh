#!/usr/bin/env bash
# Builds the bridge-runtime appliance image: FROM scratch, a statically linked bridge-runtime and one
# frozen plan, user 65532, logs on stderr, `/bridge-runtime healthcheck` as health command.
#
#   packaging/image/build.sh PLAN [TAG]
#
#   PLAN  a plan written by `bridgectl build`; `bridge-runtime verify` checks it first, so an
#         image never holds a plan its runtime would refuse.
#   TAG   default: localhost/bridge-runtime:<first 12 hex digits of the plan hash>
#
# Environment:
#   BRIDGE_RUNTIME_BIN  use this static binary instead of building one
#   FORMAT              oci (default) or docker; only the docker format keeps the HEALTHCHECK
#                       (OCI image configs have no health check field: declare it in the
#                       orchestrator, e.g. the compose file's `healthcheck:`)
#   OUTPUT              also write the image to this archive (oci-archive, or docker-archive
#                       with FORMAT=docker), for `docker load` / `podman load` elsewhere
#   CARGO_TARGET_DIR    where the static build goes (default: target/ of the checkout)
#
# Reproducible: the same binary and plan give the same image digest (file times and the creation
# date are set to the epoch, the layer holds only the two files, the empty state directory
# /var/lib/bridge, a volume for ACME storage, and an empty /tmp). The digest is printed last.
# Needs buildah (Debian package buildah). The static binary needs the musl target
# (`rustup target add x86_64-unknown-linux-musl`, Debian package musl-tools); without it, a
# static glibc build (`-C target-feature=+crt-static`) is used instead.
set -euo pipefail

usage() { sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
[[ $# -ge 1 && $# -le 2 ]] || usage
[[ "$1" != -h && "$1" != --help ]] || usage

plan=$1
[[ -f "$plan" ]] || { echo "build.sh: no plan file at $plan" >&2; exit 2; }
command -v buildah >/dev/null || { echo "build.sh: buildah is not installed" >&2; exit 2; }
root=$(cd "$(dirname "$0")/../.." && pwd)
format=${FORMAT:-oci}
[[ "$format" == oci || "$format" == docker ]] || { echo "build.sh: FORMAT must be oci or docker" >&2; exit 2; }

hash=$(sed -n 's/.*"hash": *"\(sha256:[0-9a-f]\{64\}\)".*/\1/p' "$plan" | head -n1)
[[ -n "$hash" ]] || { echo "build.sh: $plan has no plan hash; is it a bridgectl plan?" >&2; exit 2; }
tag=${2:-localhost/bridge-runtime:${hash:7:12}}
version=$(sed -n 's/^version = "\(.*\)"/\1/p' "$root/Cargo.toml" | head -n1)

static_bin() {
  local target_dir=${CARGO_TARGET_DIR:-$root/target}
  if rustup target list --installed 2>/dev/null | grep -qx x86_64-unknown-linux-musl \
     && command -v musl-gcc >/dev/null; then
    echo "build.sh: building bridge-runtime for x86_64-unknown-linux-musl" >&2
    (cd "$root" && cargo build --release --locked -p bridge-runtime \
       --target x86_64-unknown-linux-musl --target-dir "$target_dir") >&2
    echo "$target_dir/x86_64-unknown-linux-musl/release/bridge-runtime"
  else
    echo "build.sh: musl target or musl-tools missing; building a static glibc binary" >&2
    (cd "$root" && RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
       cargo build --release --locked -p bridge-runtime \
       --target x86_64-unknown-linux-gnu --target-dir "$target_dir/static-glibc") >&2
    echo "$target_dir/static-glibc/x86_64-unknown-linux-gnu/release/bridge-runtime"
  fi
}

bin=${BRIDGE_RUNTIME_BIN:-$(static_bin)}
[[ -x "$bin" ]] || { echo "build.sh: no executable at $bin" >&2; exit 2; }
if command -v file >/dev/null && ! file -L "$bin" | grep -q 'static'; then
  echo "build.sh: $bin is not statically linked: $(file -L "$bin")" >&2
  exit 2
fi
# The image must not hold a plan this runtime would refuse (hash, version, references).
"$bin" verify "$plan" >/dev/null

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
cp "$bin" "$ctx/bridge-runtime"
cp "$plan" "$ctx/plan.json"
cp "$root/packaging/image/Containerfile" "$ctx/Containerfile"
mkdir "$ctx/state"   # /var/lib/bridge, the ACME storage directory
mkdir "$ctx/tmp"     # /tmp, where buffering keeps bodies past its memory size
if [[ "$format" == docker ]]; then
  # Only the docker image format has a health check field.
  printf '%s\n' 'HEALTHCHECK --interval=10s --timeout=4s --start-period=5s --retries=3 CMD ["/bridge-runtime", "healthcheck"]' \
    >> "$ctx/Containerfile"
fi
# File times go into the layer; pin them so the digest depends only on content.
touch -h -d @0 "$ctx/bridge-runtime" "$ctx/plan.json" "$ctx/state" "$ctx/tmp"

buildah build --quiet --format "$format" --timestamp 0 --layers=false --pull=never \
  --build-arg "PLAN_HASH=$hash" --build-arg "VERSION=$version" \
  -f "$ctx/Containerfile" -t "$tag" "$ctx" >/dev/null

if [[ -n "${OUTPUT:-}" ]]; then
  transport=oci-archive
  [[ "$format" == docker ]] && transport=docker-archive
  rm -f "$OUTPUT"
  buildah push --quiet "$tag" "$transport:$OUTPUT:$tag" >&2
  echo "build.sh: wrote $OUTPUT" >&2
fi

digest=$(buildah inspect --type image --format '{{.FromImageDigest}}' "$tag")
echo "build.sh: $tag plan $hash" >&2
echo "$tag $digest"
