#!/usr/bin/env python3
"""Summarises bench/io/echo_bench.sh's results.txt as Markdown: per point, the median and
min-max of each metric per server (requests/s, latency, server CPU per request, fairness);
fairsched's servers against the peers (Asio, Tokio, Go) and io_uring against epoll as the
median (min-max) of per-round ratios (runs of one round were made in the same pass of the
script, so a slow phase of the machine hits both sides of a ratio alike); and whether the
echo goals of issue 24 are met, computed from those ratios:
  - fairsched >= 1.5x Asio's requests/s in every cell (connections x size);
  - fairsched ahead of Tokio (ratio > 1) in every cell;
  - fairsched's io_uring server >= its epoll server at 1,000 connections.
With the trivial version and Tokio in the run, also issue 33's goals for each fairsched
server: >= 0.95x the trivial version's requests/s in every cell, and server CPU per request
<= Tokio's in every cell (the median per-round ratio of the loadgen's server CPU figure).
With before-epoll / before-io_uring in the run (an older echo_server build, echo_bench.sh's
$ECHO_SERVER_BEFORE), also fairsched-X/before-X: the change's effect in the same rounds.
With the trivial version in the run (trivial-epoll: one recv and one send per request on raw
epoll, bench/io/trivial_epoll_echo_server.cc), also the bound it sets, computed the same way
but not a goal: whether even it reaches 1.5x Asio.
A goal is judged on the median per-round ratio of each cell; a cell without runs on both
sides makes the goal "not measured". Usage: echo_summary.py results.txt"""
import statistics
import sys
from collections import defaultdict

SUBJECTS = ["fairsched-epoll", "fairsched-io_uring", "fairsched-epoll-nospin",
            "fairsched-io_uring-nospin", "fairsched-epoll-spin20", "fairsched-io_uring-spin20"]
TRIVIAL = "trivial-epoll"
PEERS = [TRIVIAL, "asio", "tokio", "go"]
IO_URING_VS_EPOLL = [("fairsched-io_uring", "fairsched-epoll"),
                     ("fairsched-io_uring-nospin", "fairsched-epoll-nospin"),
                     ("fairsched-io_uring-spin20", "fairsched-epoll-spin20")]
BEFORE_AFTER = [("fairsched-epoll", "before-epoll"), ("fairsched-io_uring", "before-io_uring")]
SERVERS = SUBJECTS + [before for _, before in BEFORE_AFTER] + PEERS  # the tables' column order
PROTOCOLS = ["", "-framed"]  # a server name's suffix: plain echo, or the framed protocol
CELLS = [f"c{c}_s{s}" for c in (1, 64, 1000) for s in (64, 4096)]
WIDE_CELLS = ["c1000_s64", "c1000_s4096"]  # the 1,000-connection cells
ASIO_FACTOR = 1.5
TRIVIAL_FACTOR = 0.95  # issue 33: the echo server against the trivial version


def load(lines):
    """(server, label) -> the runs' fields, in file order; lines without rps (a failed
    loadgen run) are left out."""
    runs = defaultdict(list)
    for line in lines:
        fields = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        if "rps" in fields:
            runs[(fields["server"], fields["label"])].append(fields)
    return runs


def med(values):
    return statistics.median(values) if values else float("nan")


def cell(runs, key, fmt="{:.0f}"):
    values = [float(r[key]) for r in runs]
    if not values:
        return "-"
    return (fmt + " ({}-{})").format(med(values), fmt.format(min(values)), fmt.format(max(values)))


def round_ratios(runs, a, b, label, key="rps"):
    """key(a) / key(b) (requests/s by default) for every round (rep) in which both ran at
    this point."""
    by_rep = {r["rep"]: float(r[key]) for r in runs[(b, label)]}
    return [float(r[key]) / by_rep[r["rep"]] for r in runs[(a, label)]
            if by_rep.get(r["rep"])]


def ratio_cell(ratios):
    if not ratios:
        return "-"
    return f"{med(ratios):.2f} ({min(ratios):.2f}-{max(ratios):.2f})"


def goal(runs, a, b, labels, holds, wording, key="rps"):
    """One goal: ("met" | "not met" | "not measured", its Markdown line), judged on the
    median per-round ratio a/b of `key` at each of `labels` (met if holds(median) at every
    one)."""
    head = f"- {a} {wording}: "
    if not any(server == b for server, _ in runs):
        return "not measured", head + f"**not measured** (no {b} runs)"
    medians = {label: med(round_ratios(runs, a, b, label, key)) for label in labels}
    missing = [label for label, m in medians.items() if m != m]  # NaN: no shared round
    if missing:
        return "not measured", head + (f"**not measured** (no round with both in "
                                       f"{', '.join(missing)})")
    failing = [label for label in labels if not holds(medians[label])]
    if failing:
        return "not met", head + "**not met** (" + ", ".join(
            f"{label} {medians[label]:.2f}" for label in failing) + ")"
    low = min(labels, key=lambda label: medians[label])
    return "met", head + f"**met** (lowest: {low} {medians[low]:.2f})"


def overall(goals):
    """The verdict of a list of goal() results: "not met" if any is, else "not measured" if
    any is, else "met"."""
    verdicts = {verdict for verdict, _ in goals}
    return ("not met" if "not met" in verdicts else
            "not measured" if "not measured" in verdicts else "met")


def protocol_section(runs, suffix):
    """The requests/s tables and goals of one protocol (servers named with `suffix`)."""
    present = {server for server, _ in runs}
    servers = [s + suffix for s in SERVERS if s + suffix in present]
    subjects = [s + suffix for s in SUBJECTS if s + suffix in present]
    peers = [p + suffix for p in PEERS if p + suffix in present]
    out = ["| point (requests/s) | " + " | ".join(servers) + " |",
           "|---|" + "---|" * len(servers)]
    for label in CELLS:
        out.append(f"| {label} | " + " | ".join(cell(runs[(s, label)], "rps") for s in servers)
                   + " |")
    pairs = [(s, p) for s in subjects for p in peers]
    pairs += [(u + suffix, e + suffix) for u, e in IO_URING_VS_EPOLL + BEFORE_AFTER
              if u + suffix in present and e + suffix in present]
    if pairs:
        out += ["", "| point (requests/s ratio, median of per-round ratios (min-max)) | " +
                " | ".join(f"{a}/{b}" for a, b in pairs) + " |",
                "|---|" + "---|" * len(pairs)]
        for label in CELLS:
            out.append(f"| {label} | " + " | ".join(
                ratio_cell(round_ratios(runs, a, b, label)) for a, b in pairs) + " |")
    if subjects:
        goals = []
        for subject in subjects:
            goals.append(goal(runs, subject, "asio" + suffix, CELLS,
                              lambda m: m >= ASIO_FACTOR, f">= {ASIO_FACTOR}x Asio in every cell"))
            goals.append(goal(runs, subject, "tokio" + suffix, CELLS,
                              lambda m: m > 1.0, "ahead of Tokio in every cell"))
        for uring, epoll in IO_URING_VS_EPOLL:
            if uring + suffix in present or epoll + suffix in present:
                goals.append(goal(runs, uring + suffix, epoll + suffix, WIDE_CELLS,
                                  lambda m: m >= 1.0, f">= {epoll + suffix} at 1,000 connections"))
        out += ["", f"Goals (issue 24), judged on each cell's median per-round ratio: "
                    f"**{overall(goals)}**", ""] + [line for _, line in goals]
        if TRIVIAL + suffix in present and "tokio" + suffix in present:
            goals33 = []
            for subject in subjects:
                goals33.append(goal(runs, subject, TRIVIAL + suffix, CELLS,
                                    lambda m: m >= TRIVIAL_FACTOR,
                                    f">= {TRIVIAL_FACTOR}x {TRIVIAL + suffix} in every cell"))
                goals33.append(goal(runs, subject, "tokio" + suffix, CELLS,
                                    lambda m: m <= 1.0,
                                    "server CPU per request <= Tokio's in every cell",
                                    key="server_cpu_us_per_req"))
            out += ["", "Goals (issue 33; its Tokio and io_uring goals are issue 24's above), "
                        f"judged the same way: **{overall(goals33)}**", ""]
            out += [line for _, line in goals33]
        if TRIVIAL + suffix in present:
            _, bound = goal(runs, TRIVIAL + suffix, "asio" + suffix, CELLS,
                            lambda m: m >= ASIO_FACTOR, f">= {ASIO_FACTOR}x Asio in every cell")
            out += ["", "The bound the trivial version sets (not a goal; no framework, no "
                        "limits):", "", bound]
    return out


def summary(runs):
    """The whole summary as a list of Markdown lines."""
    present = {server for server, _ in runs}
    out = []
    for suffix in PROTOCOLS:
        if any(s + suffix in present for s in SERVERS):
            out += protocol_section(runs, suffix) + [""]
    servers = [s + suffix for suffix in PROTOCOLS for s in SERVERS
               if s + suffix in present]
    for key, name, fmt in (("p50_us", "p50 us", "{:.1f}"), ("p99_us", "p99 us", "{:.1f}"),
                           ("server_cpu_us_per_req", "server CPU us/request", "{:.2f}")):
        out += [f"| point ({name}) | " + " | ".join(servers) + " |",
                "|---|" + "---|" * len(servers)]
        for label in CELLS:
            out.append(f"| {label} | " + " | ".join(cell(runs[(s, label)], key, fmt)
                                                   for s in servers) + " |")
        out.append("")
    out += ["| fairness (1000 conns, 64 B) | " + " | ".join(servers) + " |",
            "|---|" + "---|" * len(servers)]
    for label, name in (("fair_base", "others' p99 us, no flooder"),
                        ("fair_flood", "others' p99 us, one flooder")):
        out.append(f"| {name} | " + " | ".join(cell(runs[(s, label)], "p99_us", "{:.1f}")
                                              for s in servers) + " |")
    flood_ratios = []
    for s in servers:
        base = med([float(r["p99_us"]) for r in runs[(s, "fair_base")]])
        flood = med([float(r["p99_us"]) for r in runs[(s, "fair_flood")]])
        flood_ratios.append(f"{flood / base:.2f}" if base == base and base else "-")
    out.append("| flood/base p99 | " + " | ".join(flood_ratios) + " |")
    out.append("| flooder's requests/s | " + " | ".join(
        cell([dict(r, fr=float(r["flood_requests"]) / float(r["seconds"]))
              for r in runs[(s, "fair_flood")]], "fr")
        for s in servers) + " |")
    return out


def main(argv):
    if len(argv) != 2:
        print("usage: echo_summary.py results.txt", file=sys.stderr)
        return 2
    with open(argv[1]) as f:
        runs = load(f)
    if not runs:
        print(f"echo_summary.py: no successful runs in {argv[1]}", file=sys.stderr)
        return 1
    print("\n".join(summary(runs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
