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

CONTESTANTS = ["fairsched", "fairsched_trivial_policy", "trivial_sched", "tbb_arena", "asio_pool"]
PEERS = ["trivial_sched", "tbb_arena", "asio_pool"]


def mops(b):
    return b["items_per_second"] / 1e6


def throughput_tables(runs):
    out = []
    for mode in ["oneshot", "repost"]:
        out.append(f"\n#### throughput, {mode} (M tasks/s; median)\n")
        out.append("| body | workers | " + " | ".join(CONTESTANTS) +
                   " | fairsched / best peer | fairsched / trivial_sched | ready-lock contended per task (fairsched / trivial policy) | physical limit (1 thread) |")
        out.append("|" + "---|" * (len(CONTESTANTS) + 6))
        for body in [0, 100, 1000]:
            for workers in [1, 2, 4]:
                row = {}
                for c in CONTESTANTS:
                    b = runs.get(f"throughput/{mode}/body_ns:{body}/workers:{workers}/{c}")
                    if b:
                        row[c] = b
                cells = [f"{mops(row[c]):.2f}" if c in row else "-" for c in CONTESTANTS]
                best_peer = max((mops(row[c]), c) for c in PEERS if c in row) if any(c in row for c in PEERS) else None
                fs = mops(row["fairsched"]) if "fairsched" in row else None
                ratio_peer = f"{fs / best_peer[0]:.2f}x (vs {best_peer[1]})" if fs and best_peer else "-"
                ratio_triv = f"{fs / mops(row['trivial_sched']):.2f}x" if fs and "trivial_sched" in row else "-"
                lock = " / ".join(f"{row[c].get('lock_contended_per_task', 0):.2g}" if c in row else "-"
                                  for c in ["fairsched", "fairsched_trivial_policy"])
                phys = runs.get(f"physical_limit/body_ns:{body}")
                phys_s = f"{mops(phys):.2f}" if phys else "-"
                out.append(f"| {body} ns | {workers} | " + " | ".join(cells) +
                           f" | {ratio_peer} | {ratio_triv} | {lock} | {phys_s} |")
    return out


def us(x):
    return f"{x / 1000:.1f}"


def latency_tables(runs):
    out = ["\n#### post-to-start latency, empty tasks (p50 / p99, microseconds; median of runs)\n"]
    out.append("| offered gap | workers | " + " | ".join(CONTESTANTS) + " |")
    out.append("|" + "---|" * (len(CONTESTANTS) + 2))
    for gap in [1000, 50000]:
        for workers in [1, 2]:
            cells = []
            for c in CONTESTANTS:
                b = runs.get(f"latency/gap_ns:{gap}/workers:{workers}/{c}")
                cells.append(f"{us(b['p50_ns'])} / {us(b['p99_ns'])}" if b else "-")
            out.append(f"| {gap // 1000} us | {workers} | " + " | ".join(cells) + " |")
    out.append("\n#### timer lateness under load (start - deadline: p50 / p99, microseconds; min in ns)\n")
    timed = [c for c in CONTESTANTS + ["fairsched_timer_wheel"] if any(k.startswith("timer_lateness/") and k.endswith("/" + c) for k in runs)]
    out.append("| workers | " + " | ".join(timed) + " |")
    out.append("|" + "---|" * (len(timed) + 1))
    for workers in [1, 2]:
        cells = []
        for c in timed:
            b = runs.get(f"timer_lateness/workers:{workers}/{c}")
            cells.append(f"{us(b['p50_ns'])} / {us(b['p99_ns'])} (min {b['min_ns']:.0f} ns)" if b else "-")
        out.append(f"| {workers} | " + " | ".join(cells) + " |")
    return out


def sched_tables(path):
    runs = {re.sub(r"/real_time.*$", "", name): b for name, b in load_runs(path)}
    return throughput_tables(runs) + latency_tables(runs)


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
