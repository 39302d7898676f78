#!/usr/bin/env python3
"""The prefetch A/B (README.txt here): a markdown table of million steps/s per row, median
(min-max) over the rounds, before and after, and the after/before ratio round by round.
Usage: ab_table.py [FOLDER] [--notes FILE] (FOLDER: default this script's folder; with
--notes, the table replaces what stands between FILE's "ab:begin" and "ab:end" markers)."""
import argparse
import json
import os
import statistics
import sys


def rates(folder, variant):
    """{benchmark name: [items/s per round, in round order]} for one variant."""
    out = {}
    rounds = sorted(f for f in os.listdir(folder) if f.startswith(variant + "_r"))
    for name in sorted(rounds, key=lambda f: int(f.split("_r")[1].split(".")[0])):
        with open(os.path.join(folder, name)) as f:
            for bench in json.load(f)["benchmarks"]:
                out.setdefault(bench["name"], []).append(bench["items_per_second"])
    return out


def cell(values, scale=1e6, digits=1):
    values = [v / scale for v in values]
    return (f"{statistics.median(values):.{digits}f} "
            f"({min(values):.{digits}f}-{max(values):.{digits}f})")


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", default=os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--notes", help="a file whose ab:begin/ab:end block gets the table")
    args = parser.parse_args(argv)
    folder, notes = args.folder, args.notes
    before, after = rates(folder, "noprefetch"), rates(folder, "prefetch")
    lines = ["| row | before (no prefetch) | after (prefetch) | after / before |", "|---|---|---|---|"]
    for name in sorted(before):
        ratios = [a / b for a, b in zip(after[name], before[name])]
        parts = dict(p.split(":") for p in name.split("/")[2:5])
        short = f"{int(parts['coroutines']):,} x {int(parts['steps']):,}, {parts['workers']} workers"
        lines.append(f"| {short} | {cell(before[name])} | {cell(after[name])} | "
                     f"{cell(ratios, 1, 2)}x |")
    if notes is None:
        print("\n".join(lines))
        return
    with open(notes) as f:
        text = f.read()
    begin, end = "<!-- ab:begin -->\n", "<!-- ab:end -->"
    head, rest = text.split(begin)
    _, tail = rest.split(end)
    with open(notes, "w") as f:
        f.write(head + begin + "\n".join(lines) + "\n" + end + tail)


if __name__ == "__main__":
    main(sys.argv[1:])
