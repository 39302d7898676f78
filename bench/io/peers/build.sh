#!/usr/bin/env bash
# Builds the Tokio and Go echo servers of bench/io/echo_bench.sh (see README.md here) in
# release mode, offline, without Bazel, and prints the two binary paths. Usage (any
# directory):
#   bench/io/peers/build.sh OUTDIR
# Toolchains and build steps: bench/peer_build.sh (Debian packages cargo, librust-tokio-dev,
# golang-go; $CARGO / $RUSTC / $GO override).
set -euo pipefail

# shellcheck source=bench/peer_build.sh
source "$(dirname "${BASH_SOURCE[0]}")/../../peer_build.sh"
peer_build_main tokio_echo go_echo "$@"
