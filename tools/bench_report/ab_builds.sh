#!/usr/bin/env bash
# Alternating A/B of library builds that differ by a patch: builds each variant once with
# --config=opt, then runs every benchmark row of every build once per round, the builds'
# order rotating by round and reversed every other round, so that a slow phase of the
# machine falls on every build alike. Raw results go to one runs.jsonl (tools/bench_report/
# runs.py), one run per benchmark binary, build and round, named <binary>_<build>_r<round>:
#   ab_builds.sh ROUNDS OUT.jsonl LOAD.txt -b PACKAGE:BINARY=FILTER [-b ...] -- BUILD...
# A BUILD is `base` (the sources as checked out) or a patch file (NAME.patch, applied with
# `git apply` for that build, its name the file's name without .patch). LOAD gets `uptime`
# before the first round and after each. Compare with
#   tools/bench_report/compare.py "OUT:yield_bench_base_r*" "OUT:yield_bench_NAME_r*" \
#     --metrics items_per_second --by-round
# Run from the workspace root with a clean tree (each patch is applied for its build and
# reverted with `git apply -R`).
set -euo pipefail
usage() {
  echo "usage: $0 ROUNDS OUT.jsonl LOAD.txt -b PACKAGE:BINARY=FILTER [-b ...] -- BUILD..." >&2
  exit 2
}
(($# >= 6)) || usage
rounds=$1 out=$2 load=$3
shift 3
benches=()
while (($#)) && [[ $1 == -b ]]; do
  benches+=("$2")
  shift 2
done
[[ ${1:-} == -- ]] || usage
shift
builds=("$@")
((${#benches[@]} && ${#builds[@]})) || usage

tmp=$(mktemp -d)
applied=""  # the patch applied now, if any
revert() { [[ -z $applied ]] || git apply -R "$applied"; applied=""; }
trap 'revert; rm -rf "$tmp"' EXIT

name_of() { [[ $1 == base ]] && echo base || basename "$1" .patch; }
targets=()
for b in "${benches[@]}"; do targets+=("//${b%%=*}"); done
for build in "${builds[@]}"; do
  revert
  if [[ $build != base ]]; then
    git apply "$build"
    applied=$build
  fi
  ./bazelw build --config=opt "${targets[@]}"
  for b in "${benches[@]}"; do
    target=${b%%=*}
    cp -f "bazel-bin/${target/://}" "$tmp/${target##*:}_$(name_of "$build")"
  done
done
revert

rm -f "$out"
uptime > "$load"
n=${#builds[@]}
for r in $(seq 1 "$rounds"); do
  k=$(((r - 1) % n))
  order=("${builds[@]:$k}" "${builds[@]:0:$k}")
  ((r % 2)) || mapfile -t order < <(printf '%s\n' "${order[@]}" | tac)
  for build in "${order[@]}"; do
    for b in "${benches[@]}"; do
      target=${b%%=*} filter=${b#*=}
      run="$tmp/${target##*:}_$(name_of "$build")_r$r.json"
      "$tmp/${target##*:}_$(name_of "$build")" --benchmark_filter="$filter" \
        --benchmark_repetitions=1 --benchmark_out="$run" --benchmark_out_format=json \
        > /dev/null 2>&1
      tools/bench_report/runs.py append "$out" "$run"
    done
  done
  uptime >> "$load"
done
