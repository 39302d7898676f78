#!/usr/bin/env bash
# wine_test.sh: the `--run_under` of `bazel test --config=mingw` (.bazelrc). Runs one test
# executable built for Windows under wine64, in a Wine prefix of its own, and exits with the
# test's exit code. Usage (Bazel calls it): wine_test.sh <test executable> [args...]
#
# Fresh prefix per test, from a template made once. `wineboot --init` takes about 10 s on
# the 2-core CI machine (it copies ~700 MB of Wine's DLLs into drive_c), far more than most
# tests. So the first test of a machine (per user and Wine version) makes a template prefix
# under ${FAIRSCHED_WINE_CACHE:-/tmp/fairsched-wine-<uid>} (under a lock, so parallel tests
# wait for one wineboot), and every test copies it into its own $TEST_TMPDIR: the registry
# and the small files are copied, drive_c is hard-linked (milliseconds; nothing under
# drive_c is written by running a test, only by installing software, which no test does).
# A test therefore never sees another test's registry, files or wineserver.
#
# Headless: DISPLAY/WAYLAND_DISPLAY are cleared (no window, no dialog waits for a click),
# WINEDEBUG=-all keeps Wine's own diagnostics out of the test log, and the Mono and Gecko
# installers wineboot would offer are disabled (WINEDLLOVERRIDES).
#
# What the Windows process sees: the environment of the test, where the paths Bazel and
# GoogleTest exchange files through (XML_OUTPUT_FILE, GTEST_SHARD_STATUS_FILE,
# TEST_PREMATURE_EXIT_FILE, TEST_TMPDIR, TEST_UNDECLARED_OUTPUTS_DIR, TEST_SRCDIR) are
# rewritten as Windows paths on drive Z: (Wine's view of /). Sharding
# (GTEST_SHARD_INDEX/GTEST_TOTAL_SHARDS) and filters pass through unchanged.
#
# A host-side test (not a Windows PE image, e.g. a Python or shell test whose code does
# not depend on the target platform) is executed directly.
set -euo pipefail

if (($# < 1)); then
  echo "wine_test.sh: usage: wine_test.sh <test executable> [args...]" >&2
  exit 2
fi
test_binary=$1
shift

if [[ "$(head -c 2 "$test_binary")" != "MZ" ]]; then
  exec "$test_binary" "$@"
fi

# Debian installs wine64 and wineserver outside PATH (the `wine` script picks them).
find_wine_tool() {
  command -v "$1" 2>/dev/null || { [[ -x "/usr/lib/wine/$1" ]] && echo "/usr/lib/wine/$1"; } || {
    echo "wine_test.sh: error: $1 not found; install Debian's wine and wine64 (./bazelw does)" >&2
    exit 1
  }
}
wine64=$(find_wine_tool wine64)
wineserver=$(find_wine_tool wineserver)

unset DISPLAY WAYLAND_DISPLAY
export WINEDEBUG=-all
export WINEDLLOVERRIDES="mscoree,mshtml=;winemenubuilder.exe=d"

# --- The template prefix (once per machine, user and Wine version).
cache_root=${FAIRSCHED_WINE_CACHE:-/tmp/fairsched-wine-$(id -u)}
wine_version=$("$wine64" --version)
template="${cache_root}/template-${wine_version//[^A-Za-z0-9._-]/_}"
if [[ ! -d "$template" ]]; then
  mkdir -p "$cache_root"
  exec 9>"${cache_root}/lock"
  flock 9
  if [[ ! -d "$template" ]]; then  # not made by another test while we waited
    echo "wine_test.sh: making the template Wine prefix ${template} (once)" >&2
    rm -rf "${template}.tmp"
    if ! WINEPREFIX="${template}.tmp" "$wine64" wineboot --init >/dev/null 2>&1 ||
       ! WINEPREFIX="${template}.tmp" "$wineserver" --wait ||
       [[ ! -e "${template}.tmp/dosdevices/z:" ]]; then
      echo "wine_test.sh: error: wineboot could not make a prefix in ${template}.tmp" >&2
      exit 1
    fi
    mv -T "${template}.tmp" "$template"
  fi
  exec 9>&-
fi
# A template that lost files (a /tmp cleaner, a hand-made mess) would make every test fail
# in a confusing way; say what to do instead.
if [[ ! -f "$template/system.reg" || ! -f "$template/drive_c/windows/system32/kernel32.dll" ]]; then
  echo "wine_test.sh: error: the template Wine prefix ${template} is incomplete; delete it" \
       "and the next test makes a new one" >&2
  exit 1
fi

# --- This test's prefix.
prefix="${TEST_TMPDIR:?wine_test.sh runs under bazel test}/wineprefix"
rm -rf "$prefix"
mkdir "$prefix"
for entry in "$template"/* "$template"/.update-timestamp; do
  if [[ "$entry" == "$template/drive_c" ]]; then
    # Hard links need one file system; elsewhere fall back to a real (slow) copy.
    cp -al "$entry" "$prefix/" 2>/dev/null || cp -a "$entry" "$prefix/"
  else
    cp -a "$entry" "$prefix/"
  fi
done
export WINEPREFIX=$prefix

# /a/b -> Z:\a\b (the template's dosdevices/z: is /).
windows_path() {
  local path=${1//\//\\}
  printf 'Z:%s' "$path"
}
translated=()
for var in XML_OUTPUT_FILE GTEST_SHARD_STATUS_FILE TEST_PREMATURE_EXIT_FILE TEST_TMPDIR \
           TEST_UNDECLARED_OUTPUTS_DIR TEST_SRCDIR; do
  if [[ -n "${!var:-}" ]]; then
    translated+=("${var}=$(windows_path "${!var}")")
  fi
done

rc=0
env "${translated[@]}" "$wine64" "$test_binary" "$@" || rc=$?
# Stop this prefix's wineserver (and any process the test left behind) now rather than
# after its idle timeout, so nothing outlives the test; then drop the prefix (best effort:
# it is in TEST_TMPDIR, which Bazel clears anyway).
"$wineserver" --kill || true
rm -rf "$prefix" 2>/dev/null || true
exit "$rc"
