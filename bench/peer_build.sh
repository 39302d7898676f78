# Shared steps of the scripts that build the Tokio and Go peers outside Bazel
# (bench/coro/peers/build.sh, bench/io/peers/build.sh): finds the toolchains and builds one
# Cargo crate or one Go module in release mode, offline. Sourced, not run:
#   source bench/peer_build.sh; peer_build_main TOKIO_CRATE GO_MODULE "$@"
# Needs the Debian packages cargo (with rustc), librust-tokio-dev and golang-go. Uses
# $CARGO / $RUSTC if set, else /usr/bin/cargo and /usr/bin/rustc (the Debian toolchain the
# Debian crate registry is made for), else cargo and rustc from PATH; $GO, else go from PATH.

# shellcheck shell=bash
peer_missing() {
  echo "$(basename "$0"): $1 not found; install the Debian package(s): $2" >&2
  exit 1
}

# Sets CARGO, RUSTC and GO, or exits with the packages to install.
peer_toolchains() {
  if [[ -z ${CARGO:-} ]]; then
    if [[ -x /usr/bin/cargo ]]; then CARGO=/usr/bin/cargo; else CARGO=$(command -v cargo || true); fi
  fi
  [[ -n $CARGO && -x $CARGO ]] || peer_missing cargo "cargo (apt-get install cargo librust-tokio-dev)"
  if [[ -z ${RUSTC:-} ]]; then
    if [[ -x $(dirname "$CARGO")/rustc ]]; then RUSTC=$(dirname "$CARGO")/rustc; else RUSTC=$(command -v rustc || true); fi
  fi
  [[ -n $RUSTC && -x $RUSTC ]] || peer_missing rustc "rustc (comes with cargo: apt-get install cargo)"
  local registry=/usr/share/cargo/registry
  compgen -G "$registry/tokio-1.*" >/dev/null ||
    peer_missing "Tokio in the Debian crate registry $registry" "librust-tokio-dev"
  GO=${GO:-$(command -v go || true)}
  [[ -n $GO && -x $GO ]] || peer_missing go "golang-go"
}

# peer_cargo_build CRATE_DIR BINARY OUTDIR: builds OUTDIR/BINARY. Cargo reads the crate's
# .cargo/config.toml (crates-io -> the Debian registry) only when run from CRATE_DIR.
peer_cargo_build() {
  (
    cd "$1" || exit 1
    CARGO_TARGET_DIR="$3/cargo-target" RUSTC="$RUSTC" \
      "$CARGO" build --release --offline --quiet
  )
  cp "$3/cargo-target/release/$2" "$3/$2"
}

# peer_go_build MODULE_DIR BINARY OUTDIR: builds OUTDIR/BINARY; no external modules, no
# network, no toolchain download.
peer_go_build() {
  (
    cd "$1" || exit 1
    GOTOOLCHAIN=local GOPROXY=off GOFLAGS='' GO111MODULE=on CGO_ENABLED=0 \
      GOCACHE="${GOCACHE:-$3/go-cache}" \
      "$GO" build -trimpath -o "$3/$2" .
  )
}

# The whole of a peers/build.sh: peer_build_main TOKIO_CRATE GO_MODULE OUTDIR, run from the
# peers folder's build.sh (their folders next to it). Builds OUTDIR/TOKIO_CRATE and
# OUTDIR/GO_MODULE and prints the two paths.
peer_build_main() {
  if [[ $# -ne 3 ]]; then
    echo "usage: $0 OUTDIR" >&2
    exit 2
  fi
  local here out
  here=$(cd "$(dirname "$0")" && pwd)
  mkdir -p "$3"
  out=$(cd "$3" && pwd)
  peer_toolchains
  peer_cargo_build "$here/$1" "$1" "$out"
  peer_go_build "$here/$2" "$2" "$out"
  echo "$out/$1"
  echo "$out/$2"
}
