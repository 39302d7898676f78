#!/usr/bin/env bash
# Builds the Tokio and Go echo servers of bench/io/echo_bench.sh (see README.md here) in
# release mode, offline, without Bazel, and prints the two binary paths. Usage (any
# directory):
#   bench/io/peers/build.sh OUTDIR
# Toolchains and build steps: bench/peer_build.sh (Debian packages cargo, librust-tokio-dev,
# golang-go; $CARGO / $RUSTC / $GO override).
set -euo pipefail

if [[ $# -ne 1 ]]; then
  echo "usage: $0 OUTDIR" >&2
  exit 2
fi
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mkdir -p "$1"
out=$(cd "$1" && pwd)
# shellcheck source=bench/peer_build.sh
source "$here/../../peer_build.sh"
peer_toolchains
peer_cargo_build "$here/tokio_echo" tokio_echo "$out"
peer_go_build "$here/go_echo" go_echo "$out"
echo "$out/tokio_echo"
echo "$out/go_echo"
