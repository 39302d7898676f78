#!/usr/bin/env python3
"""Median (min-max) items per second of each row for two variants of an ab.sh raw file,
and the ratio of the medians B/A, as a Markdown table.

Usage: summarize.py RAW.txt A B
"""
import collections
import re
import statistics
import sys


def main():
    raw, a, b = sys.argv[1:4]
    rows = collections.defaultdict(lambda: collections.defaultdict(list))
    for line in open(raw):
        parts = line.split()
        if len(parts) < 3:
            continue
        m = re.search(r'items_per_second=([0-9.]+)([kM]?)', line)
        if not m:
            continue
        name = re.sub(r'/(iterations:1/repeats:\d+/)?(min_time:[0-9.]+/)?real_time.*', '',
                      parts[1])
        rows[name][parts[0]].append(float(m.group(1)) * {'k': 1e-3, 'M': 1.0, '': 1e-6}[m.group(2)])
    print(f'| row (M items/s) | {a} | {b} | {b} / {a} (medians) | runs |')
    print('|---|---|---|---|---|')
    for name, per in rows.items():
        if not per[a] or not per[b]:
            continue
        ma, mb = statistics.median(per[a]), statistics.median(per[b])
        print(f'| {name} | {ma:.2f} ({min(per[a]):.2f}-{max(per[a]):.2f}) | '
              f'{mb:.2f} ({min(per[b]):.2f}-{max(per[b]):.2f}) | {mb / ma:.3f} | '
              f'{len(per[a])}, {len(per[b])} |')


if __name__ == '__main__':
    main()
