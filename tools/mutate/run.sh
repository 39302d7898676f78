#!/usr/bin/env bash
# tools/mutate/run.sh: runs tools/mutate/mutate.py (the checkers' mutation score) at the lowest
# CPU priority; the arguments are mutate.py's (--list, --subset ci, --only ID,..., --results FILE,
# --table FILE). docs/testing.md, "Mutation score", says how to read its table.
set -euo pipefail
exec nice -n 19 python3 "$(dirname "$0")/mutate.py" "$@"
