#!/usr/bin/env python3
"""Prints the windowed table of notes.md from a moves trace (moves_trace.patch's sampler:
one line per ~200 us, "t_us exec_w0 takes_w0 exec_w1 takes_w1", cumulative counters, the
last timed iteration's lines after the last reset of t). Usage: trace_table.py TRACE [N]
(N samples per window, default 50: about 14 ms in the committed trace)."""
import sys

path = sys.argv[1]
window = int(sys.argv[2]) if len(sys.argv) > 2 else 50
rows = []
with open(path) as f:
    for line in f:
        if line.startswith("end"):
            continue
        row = [int(x) for x in line.split()]
        if rows and row[0] < rows[-1][0]:
            rows = []  # a new iteration: keep the last one only
        rows.append(row)
print("| from ms | tasks run by w0 (thousands) | by w1 | tasks w0 took from w1 | w1 took from w0 |")
print("|---|---|---|---|---|")
for i in range(0, len(rows) - window, window):
    a, b = rows[i], rows[i + window]
    print(f"| {a[0] / 1000:.1f} | {(b[1] - a[1]) / 1000:.1f} | {(b[3] - a[3]) / 1000:.1f} "
          f"| {b[2] - a[2]} | {b[4] - a[4]} |")
