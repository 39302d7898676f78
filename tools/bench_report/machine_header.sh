#!/usr/bin/env bash
# Prints the machine header of a recording's machine.txt: the date, the revision (marked
# when the tree has local changes), the CPU, the core count and the kernel, then each
# argument as a line of its own (e.g. "rounds: 5"). Run from the workspace root.
set -euo pipefail
echo "date: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "revision: $(git rev-parse HEAD)$(git diff --quiet || echo ' (with local changes)')"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)"
echo "cores: $(nproc)"
echo "kernel: $(uname -sr)"
for line in "$@"; do echo "$line"; done
