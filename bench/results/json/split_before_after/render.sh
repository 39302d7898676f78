#!/usr/bin/env bash
# Renders bench/results/split_before_after.md from the raw files in this folder (nothing on
# the page is typed except notes.md, which hot_path_report.py places after its tables):
#   bench/results/json/split_before_after/render.sh
set -euo pipefail
cd "$(dirname "$0")/../../../.."
d=bench/results/json/split_before_after
page=bench/results/split_before_after.md
python3 tools/bench_report/hot_path_report.py "$d" --out "$page" > /dev/null
{
  echo
  echo "## Yield at 2 workers: 6 more interleaved rounds (yield_w2/runs.jsonl)"
  echo
  echo "Recorded with \`ONLY_YIELD=1 YIELD_FILTER='yield/fairsched/.*workers:2'"
  echo "bench/coro/record_hot_path.sh $d/yield_w2 6 BEFORE_TREE\`; rounds pooled"
  echo "(\`tools/bench_report/compare.py\`), median (min-max)."
  echo
  python3 tools/bench_report/compare.py "$d/yield_w2/runs.jsonl:yield_bench_before_r*" \
    "$d/yield_w2/runs.jsonl:yield_bench_r*" --metrics items_per_second
  for run in short_results:"3 rounds of 2 s, with the trivial server" results:"5 rounds of 3 s"; do
    echo
    echo "## Echo before and after: ${run#*:} (echo/${run%%:*}.txt)"
    echo
    python3 bench/io/echo_summary.py "$d/echo/${run%%:*}.txt"
  done
} >> "$page"
