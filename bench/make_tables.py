#!/usr/bin/env python3
"""Turns a benchmark binary's JSON output into the markdown tables of bench/results/.

Usage: make_tables.py sched sched_bench.json > tables.md    (bench/results/sched.md)
       make_tables.py sync signal_bench.json > table.md     (bench/results/sync.md)
With --benchmark_repetitions the medians are used; otherwise the single runs.
"""
import json
import re
import sys


def load_runs(path):
    """Yields (run name, benchmark entry): the medians if the run was repeated."""
    data = json.load(open(path))
    have_aggregates = any(b.get("run_type") == "aggregate" for b in data["benchmarks"])
    for b in data["benchmarks"]:
        if have_aggregates and b.get("aggregate_name") != "median":
            continue
        yield b.get("run_name", b["name"]), b


# --- sched_bench ---

CONTESTANTS = ["fairsched", "fairsched_oneshot", "fairsched_trivial_policy", "trivial_sched",
               "tbb_arena", "asio_pool"]
PEERS = ["trivial_sched", "tbb_arena", "asio_pool"]


def mops(b):
    return b["items_per_second"] / 1e6


def cv(runs_cv, key):
    b = runs_cv.get(key)
    return f"{100 * b['items_per_second']:.0f}%" if b else "-"


def throughput_tables(runs, runs_cv):
    out = ["\n#### W1 (5,000,000 one-shot posts from one outside thread) and W2 (1,000,000 "
           "self-re-posting tasks x 10 runs): M tasks/s, median (cv)\n"]
    out.append("| workload | workers | " + " | ".join(CONTESTANTS) +
               " | fairsched / best peer | fairsched / trivial_sched | fairsched / loop |")
    out.append("|" + "---|" * (len(CONTESTANTS) + 5))
    for wl in ["w1", "w2"]:
        loop = runs.get(f"loop/{wl}")
        for workers in [1, 2]:
            row = {c: runs[f"{wl}/workers:{workers}/{c}"] for c in CONTESTANTS
                   if f"{wl}/workers:{workers}/{c}" in runs}
            cells = [f"{mops(row[c]):.2f} ({cv(runs_cv, f'{wl}/workers:{workers}/{c}')})"
                     if c in row else "-" for c in CONTESTANTS]
            fs = mops(row["fairsched"])
            best = max((mops(row[c]), c) for c in PEERS if c in row)
            out.append(f"| {wl} | {workers} | " + " | ".join(cells) +
                       f" | {fs / best[0]:.2f}x (vs {best[1]}) | "
                       f"{fs / mops(row['trivial_sched']):.2f}x | "
                       f"{fs / mops(loop):.3f} |")
    for wl in ["w1", "w2"]:
        b = runs.get(f"loop/{wl}")
        if b:
            out.append(f"\nloop/{wl} (one thread calling the prepared callbacks): "
                       f"{mops(b):.2f} M/s ({cv(runs_cv, f'loop/{wl}')})")
    out.append("\n#### worker CPU per task (ns; CPU time of all threads but the posting one)\n")
    out.append("| workload | workers | " + " | ".join(CONTESTANTS) + " |")
    out.append("|" + "---|" * (len(CONTESTANTS) + 2))
    for wl in ["w1", "w2"]:
        for workers in [1, 2]:
            cells = []
            for c in CONTESTANTS:
                b = runs.get(f"{wl}/workers:{workers}/{c}")
                cells.append(f"{b['worker_cpu_ns_per_task']:.0f}" if b else "-")
            out.append(f"| {wl} | {workers} | " + " | ".join(cells) + " |")
    out.append("\n#### one-shot tasks the pool had to allocate, per task (fairsched)\n")
    out.append("| workload | workers | fairsched | fairsched_oneshot | fairsched_trivial_policy |")
    out.append("|---|---|---|---|---|")
    for wl in ["w1", "w2"]:
        for workers in [1, 2]:
            cells = []
            for c in ["fairsched", "fairsched_oneshot", "fairsched_trivial_policy"]:
                b = runs.get(f"{wl}/workers:{workers}/{c}")
                cells.append(f"{b['one_shot_allocs_per_task']:.3f}" if b else "-")
            out.append(f"| {wl} | {workers} | " + " | ".join(cells) + " |")
    out.append("\n#### latency histogram cost (1 worker; M tasks/s median, worker CPU ns/task)\n")
    out.append("| workload | off | default (1 in 64 posts) | every post |")
    out.append("|---|---|---|---|")
    for wl in ["w1", "w2"]:
        cells = []
        for c in ["fairsched_hist_off", "fairsched", "fairsched_hist_every"]:
            b = runs.get(f"{wl}/workers:1/{c}")
            cells.append(f"{mops(b):.2f} M/s, {b['worker_cpu_ns_per_task']:.0f} ns" if b else "-")
        out.append(f"| {wl} | " + " | ".join(cells) + " |")
    return out


WAKE = ["fairsched", "fairsched_spin0", "fairsched_spin100", "fairsched_trivial_policy",
        "trivial_sched", "tbb_arena", "asio_pool"]


def latency_tables(runs):
    out = []
    for kind, title in [("post", "post into an idle scheduler -> start"),
                        ("wakeup", "Wakeup from another thread -> start")]:
        out.append(f"\n#### {title}: p50 / p99 us (worker CPU us per wake-up); median of runs\n")
        out.append("| idle gap | workers | " + " | ".join(WAKE) + " |")
        out.append("|" + "---|" * (len(WAKE) + 2))
        for gap in [10, 1000]:
            for workers in [1, 2]:
                cells = []
                for c in WAKE:
                    b = runs.get(f"wake/{kind}/gap_us:{gap}/workers:{workers}/{c}")
                    cells.append(f"{b['p50_us']:.1f} / {b['p99_us']:.1f} "
                                 f"({b['worker_cpu_us_per_wake']:.1f})" if b else "-")
                out.append(f"| {gap} us | {workers} | " + " | ".join(cells) + " |")
    out.append("\n#### idle CPU, 2 workers, 1 s (% of one core; median of 3)\n")
    idle = [c for c in WAKE if f"idle_cpu/{c}" in runs]
    out.append("| " + " | ".join(idle) + " |")
    out.append("|" + "---|" * len(idle))
    out.append("| " + " | ".join(f"{runs[f'idle_cpu/{c}']['cpu_percent_of_one_core']:.3f}"
                                 for c in idle) + " |")
    out.append("\n#### timer lateness under load (start - deadline: p50 / p99 us; min in ns)\n")
    timed = [c for c in ["fairsched", "fairsched_trivial_policy", "fairsched_timer_wheel",
                         "asio_pool"] if f"timer_lateness/workers:1/{c}" in runs]
    out.append("| workers | " + " | ".join(timed) + " |")
    out.append("|" + "---|" * (len(timed) + 1))
    for workers in [1, 2]:
        cells = []
        for c in timed:
            b = runs.get(f"timer_lateness/workers:{workers}/{c}")
            cells.append(f"{b['p50_ns'] / 1000:.1f} / {b['p99_ns'] / 1000:.1f} "
                         f"(min {b['min_ns']:.0f})" if b else "-")
        out.append(f"| {workers} | " + " | ".join(cells) + " |")
    return out


def short_name(name):
    return re.sub(r"(/iterations:\d+)?(/repeats:\d+)?(/real_time)?$", "", name)


def sched_tables(path):
    runs = {short_name(name): b for name, b in load_runs(path)}
    data = json.load(open(path))
    runs_cv = {short_name(b.get("run_name", b["name"])): b for b in data["benchmarks"]
               if b.get("aggregate_name") == "cv"}
    return throughput_tables(runs, runs_cv) + latency_tables(runs)


# --- signal_bench ---

def sync_table(path):
    rows = {}
    for name, b in load_runs(path):
        m = re.match(r"signal/([a-z_]+)/(fairsched|textbook)/real_time(/threads:(\d+))?", name)
        if not m:
            continue
        case = m.group(1) + (f" ({m.group(4)} threads)" if m.group(4) else "")
        rows.setdefault(case, {})[m.group(2)] = b
    out = ["| case | fairsched Signal | textbook signal | ratio |", "|---|---|---|---|"]
    for case, r in rows.items():
        cells = []
        for impl in ["fairsched", "textbook"]:
            b = r.get(impl)
            cells.append(f"{b['real_time']:.1f} ns/op ({b['items_per_second'] / 1e6:.2f} M/s)" if b else "-")
        ratio = (f"{r['fairsched']['items_per_second'] / r['textbook']['items_per_second']:.2f}x"
                 if "fairsched" in r and "textbook" in r else "-")
        out.append(f"| {case} | {cells[0]} | {cells[1]} | {ratio} |")
    return out


def main():
    modes = {"sched": sched_tables, "sync": sync_table}
    if len(sys.argv) != 3 or sys.argv[1] not in modes:
        sys.exit(__doc__)
    print("\n".join(modes[sys.argv[1]](sys.argv[2])))


if __name__ == "__main__":
    main()
