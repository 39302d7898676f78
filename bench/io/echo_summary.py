#!/usr/bin/env python3
"""Summarises bench/io/echo_bench.sh's results.txt: median and min-max of each metric per
server and point, as Markdown tables (requests/s, latency, server CPU per request), and the
ratios the goals ask for (fairsched / Asio, io_uring / epoll, flood / no flood p99)."""
import statistics
import sys
from collections import defaultdict


def load(path):
    runs = defaultdict(list)
    for line in open(path):
        fields = dict(kv.split("=", 1) for kv in line.split() if "=" in kv)
        if "rps" not in fields:
            continue
        runs[(fields["server"], fields["label"])].append(fields)
    return runs


def med(values):
    return statistics.median(values) if values else float("nan")


def cell(runs, key, fmt="{:.0f}"):
    values = [float(r[key]) for r in runs]
    if not values:
        return "-"
    return (fmt + " ({}-{})").format(med(values), fmt.format(min(values)), fmt.format(max(values)))


def main():
    runs = load(sys.argv[1])
    known = ["fairsched-epoll", "fairsched-io_uring", "fairsched-epoll-nospin",
             "fairsched-io_uring-nospin", "asio"]
    known += [name + "-framed" for name in known]  # the same servers on the framed protocol
    servers = [s for s in known if any(key[0] == s for key in runs)]
    labels = [f"c{c}_s{s}" for c in (1, 64, 1000) for s in (64, 4096)]
    pairs = [("fairsched-epoll", "asio"), ("fairsched-io_uring", "asio"),
             ("fairsched-io_uring", "fairsched-epoll"), ("fairsched-epoll-nospin", "asio"),
             ("fairsched-io_uring-nospin", "asio")]
    pairs += [(a + "-framed", b + "-framed") for a, b in pairs]  # framed compared with framed
    ratios = [(a, b) for a, b in pairs if a in servers and b in servers]
    print("| point (requests/s) | " + " | ".join(servers) + " | " +
          " | ".join(f"{a}/{b}" for a, b in ratios) + " |")
    print("|---|" + "---|" * (len(servers) + len(ratios)))
    for label in labels:
        row = [cell(runs[(s, label)], "rps") for s in servers]
        m = {s: med([float(r["rps"]) for r in runs[(s, label)]]) for s in servers}
        row += [f"{m[a] / m[b]:.2f}" for a, b in ratios]
        print(f"| {label} | " + " | ".join(row) + " |")
    print()
    for key, name, fmt in (("p50_us", "p50 us", "{:.1f}"), ("p99_us", "p99 us", "{:.1f}"),
                           ("server_cpu_us_per_req", "server CPU us/request", "{:.2f}")):
        print(f"| point ({name}) | " + " | ".join(servers) + " |")
        print("|---|" + "---|" * len(servers))
        for label in labels:
            print(f"| {label} | " + " | ".join(cell(runs[(s, label)], key, fmt) for s in servers) + " |")
        print()
    print("| fairness (1000 conns, 64 B) | " + " | ".join(servers) + " |")
    print("|---|" + "---|" * len(servers))
    for label, name in (("fair_base", "others' p99 us, no flooder"),
                        ("fair_flood", "others' p99 us, one flooder")):
        print(f"| {name} | " + " | ".join(cell(runs[(s, label)], "p99_us", "{:.1f}") for s in servers) + " |")
    ratios = []
    for s in servers:
        base = med([float(r["p99_us"]) for r in runs[(s, "fair_base")]])
        flood = med([float(r["p99_us"]) for r in runs[(s, "fair_flood")]])
        ratios.append(f"{flood / base:.2f}" if base else "-")
    print("| flood/base p99 | " + " | ".join(ratios) + " |")
    print("| flooder's requests/s | " + " | ".join(
        cell([dict(r, fr=float(r["flood_requests"]) / float(r["seconds"])) for r in runs[(s, "fair_flood")]], "fr")
        for s in servers) + " |")


if __name__ == "__main__":
    main()
