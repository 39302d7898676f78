#!/usr/bin/env bash
# Builds the Tokio and Go peers of bench/coro/yield_bench (see README.md here) in release
# mode, offline, without Bazel, and prints the two binary paths. Usage (any directory):
#   bench/coro/peers/build.sh OUTDIR
# Needs the Debian packages cargo (with rustc), librust-tokio-dev and golang-go. Uses
# $CARGO / $RUSTC if set, else /usr/bin/cargo and /usr/bin/rustc (the Debian toolchain the
# Debian crate registry is made for), else cargo and rustc from PATH; $GO, else go from PATH.
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)

missing() {
  echo "build.sh: $1 not found; install the Debian package(s): $2" >&2
  exit 1
}

if [[ -z ${CARGO:-} ]]; then
  if [[ -x /usr/bin/cargo ]]; then CARGO=/usr/bin/cargo; else CARGO=$(command -v cargo || true); fi
fi
[[ -n $CARGO && -x $CARGO ]] || missing cargo "cargo (apt-get install cargo librust-tokio-dev)"
if [[ -z ${RUSTC:-} ]]; then
  if [[ -x $(dirname "$CARGO")/rustc ]]; then RUSTC=$(dirname "$CARGO")/rustc; else RUSTC=$(command -v rustc || true); fi
fi
[[ -n $RUSTC && -x $RUSTC ]] || missing rustc "rustc (comes with cargo: apt-get install cargo)"
registry=/usr/share/cargo/registry
compgen -G "$registry/tokio-1.*" >/dev/null ||
  missing "Tokio in the Debian crate registry $registry" "librust-tokio-dev"
GO=${GO:-$(command -v go || true)}
[[ -n $GO && -x $GO ]] || missing go "golang-go"

# Tokio peer. Cargo reads tokio_yield/.cargo/config.toml (crates-io -> the Debian registry)
# only when run from that directory.
(
  cd "$here/tokio_yield"
  CARGO_TARGET_DIR="$out/cargo-target" RUSTC="$RUSTC" \
    "$CARGO" build --release --offline --quiet
)
cp "$out/cargo-target/release/tokio_yield" "$out/tokio_yield"

# Go peer: no external modules, no network, no toolchain download.
(
  cd "$here/go_yield"
  GOTOOLCHAIN=local GOPROXY=off GOFLAGS= GO111MODULE=on CGO_ENABLED=0 \
    GOCACHE="${GOCACHE:-$out/go-cache}" \
    "$GO" build -trimpath -o "$out/go_yield" .
)

echo "$out/tokio_yield"
echo "$out/go_yield"
