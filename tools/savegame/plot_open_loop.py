#!/usr/bin/env python3
"""Draws the open-loop runs of tools/savegame/sweep.py (DIR/runs.jsonl): p50, p99 and p999
latency of acknowledged saves (measured from the intended send time) against the offered
rate, one colour per design, as a PNG; and reports, per design, the highest offered rate
the design holds. A rate is held when every run at it has p99 <= --p99-limit-ms (100), its
check passed, and at most --max-failed (1%) of its arrivals were not acknowledged (error
replies, no reply, or never sent). Several rounds at one rate: the plotted value is their median.

    tools/savegame/plot_open_loop.py DIR [--png DIR/open_loop.png] [--summary FILE.json]

Needs Debian's python3-matplotlib; re-runs itself with /usr/bin/python3 when the python3
on the PATH cannot import it.
"""

import argparse
import json
import os
import statistics
import sys

import savegame_runs


def load_records(directory):
    """Every open-loop record of `directory`, as {design: {rate: [record, ...]}}."""
    by_design = {}
    for record in savegame_runs.load_records(directory):
        if record.get("mode") != "open":
            continue
        rate = record["config"]["offered_rate"]
        by_design.setdefault(record["design"], {}).setdefault(rate, []).append(record)
    return by_design


def failed_fraction(record):
    arrivals = record["arrivals"]
    if arrivals <= 0:
        return 1.0
    return (arrivals - record["acknowledged"]) / arrivals


def holds(record, p99_limit_ms, max_failed):
    p99 = record["latency_ms"]["acknowledged"]["p99"]
    return (record["check"]["passed"] and p99 is not None and p99 <= p99_limit_ms and
            failed_fraction(record) <= max_failed)


def summarize(by_design, p99_limit_ms, max_failed):
    """Per design: the rates with their median percentiles, and the highest rate held."""
    summary = {}
    for design, by_rate in sorted(by_design.items()):
        rows = []
        for rate in sorted(by_rate):
            records = by_rate[rate]

            def median(key):
                values = [r["latency_ms"]["acknowledged"][key] for r in records]
                values = [v for v in values if v is not None]
                return statistics.median(values) if values else None

            rows.append({
                "rate": rate,
                "runs": len(records),
                "p50_ms": median("p50"),
                "p99_ms": median("p99"),
                "p999_ms": median("p999"),
                "acknowledged_per_second": statistics.median(
                    r["requests_per_second"] for r in records),
                "failed_fraction": max(failed_fraction(r) for r in records),
                "held": all(holds(r, p99_limit_ms, max_failed) for r in records),
            })
        held = [row["rate"] for row in rows if row["held"]]
        summary[design] = {"rows": rows, "highest_rate_held": max(held) if held else None}
    return summary


def load_range(by_design):
    """The 1-minute load averages seen before and after every run: (lowest, highest)."""
    return savegame_runs.load_range([record for by_rate in by_design.values()
                                     for records in by_rate.values() for record in records])


def plot(summary, png, p99_limit_ms, loads=None):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(figsize=(8, 5))
    colours = {"fairsched": "tab:blue", "updater": "tab:orange"}
    styles = [("p50_ms", "p50", ":"), ("p99_ms", "p99", "-"), ("p999_ms", "p999", "--")]
    for design, data in summary.items():
        rows = [row for row in data["rows"]]
        for key, label, style in styles:
            points = [(row["rate"], row[key]) for row in rows if row[key] is not None]
            if not points:
                continue
            axes.plot([p[0] for p in points], [max(p[1], 0.001) for p in points], style,
                      marker="o", markersize=3, color=colours.get(design),
                      label="%s %s" % (design, label))
    axes.axhline(p99_limit_ms, color="grey", linewidth=0.8)
    axes.text(axes.get_xlim()[0], p99_limit_ms * 1.05, "%g ms" % p99_limit_ms, color="grey",
              fontsize=8)
    axes.set_yscale("log")
    axes.set_xlabel("offered load, requests/s (Poisson arrivals)")
    axes.set_ylabel("latency of acknowledged saves, ms (from intended send)")
    title = "savegame, open loop"
    if loads is not None:
        title += " (1-minute load average %.2f-%.2f during the runs)" % loads
    axes.set_title(title)
    axes.grid(True, which="both", linewidth=0.3)
    axes.legend(fontsize=8)
    figure.tight_layout()
    figure.savefig(png, dpi=100)
    plt.close(figure)


def print_summary(summary, p99_limit_ms, max_failed):
    print("%-9s %9s %4s %9s %9s %9s %11s %8s %5s" % ("design", "offered", "runs", "p50 ms",
                                                     "p99 ms", "p999 ms", "acked/s",
                                                     "failed", "held"))

    def ms(value):
        return "-" if value is None else "%.2f" % value

    for design, data in summary.items():
        for row in data["rows"]:
            print("%-9s %9g %4d %9s %9s %9s %11.0f %7.2f%% %5s" % (
                design, row["rate"], row["runs"], ms(row["p50_ms"]), ms(row["p99_ms"]),
                ms(row["p999_ms"]), row["acknowledged_per_second"],
                100 * row["failed_fraction"], "yes" if row["held"] else "no"))
    for design, data in summary.items():
        held = data["highest_rate_held"]
        print("%s: highest offered rate held at p99 <= %g ms (<= %g%% failed): %s" %
              (design, p99_limit_ms, 100 * max_failed,
               "none of the rates tried" if held is None else "%g req/s" % held))


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("directory", help="the sweep's folder (its runs.jsonl)")
    parser.add_argument("--png", help="output PNG (default DIR/open_loop.png)")
    parser.add_argument("--summary", help="also write the summary as JSON here")
    parser.add_argument("--p99-limit-ms", type=float, default=100)
    parser.add_argument("--max-failed", type=float, default=0.01)
    args = parser.parse_args(argv)

    savegame_runs.ensure_matplotlib(__file__, argv)

    by_design = load_records(args.directory)
    if not by_design:
        sys.exit("no open-loop savegame records in %s" % args.directory)
    summary = summarize(by_design, args.p99_limit_ms, args.max_failed)
    png = args.png or os.path.join(args.directory, "open_loop.png")
    loads = load_range(by_design)
    plot(summary, png, args.p99_limit_ms, loads)
    print_summary(summary, args.p99_limit_ms, args.max_failed)
    if loads is not None:
        print("1-minute load average before/after the runs: %.2f-%.2f" % loads)
    print("wrote %s" % png)
    if args.summary:
        with open(args.summary, "w") as f:
            json.dump(summary, f, indent=1)
            f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
