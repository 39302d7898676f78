#!/usr/bin/env python3
"""Per-round ratios of the two alternating A/B files kept here (the round trip and the
outside posts): median, quartiles and range of new/old by row.

  summarize_ab.py round_trip_ab_f40a4d7_head_30rounds.txt   (variants f40, head)
  summarize_ab.py outside_posts_ab_yields_12rounds.txt      (variants pre, head)
"""
import collections
import statistics
import sys


def read(path):
    """{(row, round): {variant: items per second}} from either file's lines."""
    runs = collections.defaultdict(dict)
    for line in open(path):
        if line.startswith(('#', 'load')):
            continue
        if ',' in line:  # outside posts: round,variant,"name",iterations,...,items/s,...
            fields = line.strip().split(',')
            runs[(fields[2].strip('"'), fields[0])][fields[1]] = float(fields[8])
        else:  # round trip: round variant "name" items/s
            rnd, variant, name, rate = line.split()
            runs[(name.strip('"'), rnd)][variant] = float(rate)
    return runs


def main(path):
    runs = read(path)
    variants = sorted({v for per in runs.values() for v in per})
    new = 'head'
    old = next(v for v in variants if v != new)
    ratios = collections.defaultdict(list)
    for (row, _), per in runs.items():
        if old in per and new in per:
            ratios[row].append(per[new] / per[old])
    for row, values in sorted(ratios.items()):
        values.sort()
        q = len(values) // 4
        print(f'{row}: {new}/{old} over {len(values)} rounds: median '
              f'{statistics.median(values):.3f}, quartiles {values[q]:.2f}-{values[-q - 1]:.2f}, '
              f'range {values[0]:.2f}-{values[-1]:.2f}')


if __name__ == '__main__':
    main(sys.argv[1])
