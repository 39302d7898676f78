#!/usr/bin/env python3
"""hot_path_report: renders bench/results/hot_path.md from the raw files of one recording.

The recording is bench/coro/record_hot_path.sh's output directory (committed under
bench/results/json/hot_path/): its runs.jsonl holds, per round, one line per benchmark binary
(runs.py: Google Benchmark's JSON, which the Tokio and Go programs write too, named
<binary>[_before]_r<round>), next to machine.txt, the perf profiles and notes.md.
Every figure in the report, and in the README block it can refresh, is computed here from
those files: medians over the rounds with the min-max range, and ratios taken round by round
(the contestants of one round ran back to back) with their median and range. Nothing is
typed by hand and no round is picked.

Usage (from the workspace root):
  tools/bench_report/hot_path_report.py RAW_DIR [--out bench/results/hot_path.md] [--readme README.md]
With --readme, the lines between "<!-- hot_path:begin -->" and "<!-- hot_path:end -->" in that
file are replaced by the generated summary. The recording's analysis (the misses explained
from its profiles), written by hand, is RAW_DIR/notes.md when it exists (or --notes FILE); it
is appended after the generated tables.
"""

import argparse
import os
import re
import statistics
import sys

try:
    from tools.bench_report import blocks, runs as raw_runs
except ImportError:  # run as a script: the modules next to this file
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import blocks
    import runs as raw_runs

# Benchmark-name tokens that are settings, not arguments that tell rows apart.
SETTINGS = {"iterations", "repeats", "min_time", "real_time", "process_time"}


def parse_name(name):
    """(family, contestant, args) from a benchmark name.

    yield/fairsched/coroutines:100000/steps:100/workers:1/min_time:0.500/real_time
    w2/workers:1/trivial_sched/iterations:1/repeats:1/real_time
    mutex/handoff/coro_mutex/2/real_time  (a bare number is the argument "n")
    """
    tokens = name.split("/")
    family = tokens[0]
    rest = tokens[1:]
    if family in ("mutex", "loop") and rest:
        family += "/" + rest[0]
        rest = rest[1:]
    contestant = None
    args = {}
    for token in rest:
        key, sep, value = token.partition(":")
        if sep:
            if key not in SETTINGS:
                args[key] = value
        elif token in SETTINGS:
            continue
        elif re.fullmatch(r"\d+", token):
            args["n"] = token
        elif contestant is None:
            contestant = token
    return family, contestant or "", tuple(sorted(args.items()))


def load_runs(raw):
    """{(family, contestant, args): {round: benchmark dict}}, and the contexts seen."""
    runs = {}
    contexts = []
    for name, data in raw_runs.read_dir(raw):
        match = re.fullmatch(r"(.*?)(_before)?_r(\d+)", name)
        if not match:
            continue
        before, rnd = match.group(2) is not None, int(match.group(3))
        contexts.append(data.get("context", {}))
        for bench in data.get("benchmarks", []):
            if bench.get("run_type") == "aggregate" or bench.get("error_occurred"):
                continue
            family, contestant, args = parse_name(bench.get("run_name", bench["name"]))
            if before and not contestant.endswith("_before"):
                contestant += "_before"
            runs.setdefault((family, contestant, args), {})[rnd] = bench
    return runs, contexts


class Table:
    def __init__(self, runs):
        self.runs = runs

    def values(self, family, contestant, args, metric):
        """{round: value} of one row; metric is a key of the benchmark dict or a function."""
        rounds = self.runs.get((family, contestant, tuple(sorted(args.items()))), {})
        out = {}
        for rnd, bench in rounds.items():
            value = metric(bench) if callable(metric) else bench.get(metric)
            if value is not None:
                out[rnd] = float(value)
        return out

    def median(self, *key):
        vals = list(self.values(*key).values())
        return statistics.median(vals) if vals else None

    def ratio(self, a_key, b_key):
        """Per-round a/b: (median, min, max), over the rounds both ran in."""
        a, b = self.values(*a_key), self.values(*b_key)
        ratios = [a[r] / b[r] for r in a if r in b and b[r]]
        if not ratios:
            return None
        return statistics.median(ratios), min(ratios), max(ratios)


def fmt_range(vals, scale=1.0, digits=1):
    if not vals:
        return "n/a"
    vs = [v * scale for v in vals.values()]
    med = statistics.median(vs)
    if len(vs) == 1:
        return f"{med:.{digits}f}"
    return f"{med:.{digits}f} ({min(vs):.{digits}f}-{max(vs):.{digits}f})"


def fmt_ratio(r, pct=False):
    if r is None:
        return "n/a"
    if pct:
        return f"{r[0] * 100:.0f}% ({r[1] * 100:.0f}-{r[2] * 100:.0f}%)"
    return f"{r[0]:.2f}x ({r[1]:.2f}-{r[2]:.2f})"


UNIT_NS = {"ns": 1.0, "us": 1e3, "ms": 1e6, "s": 1e9}


def real_ns(bench):
    return bench["real_time"] * UNIT_NS[bench.get("time_unit", "ns")]


def ips(bench):
    return bench.get("items_per_second")


def ns_per_item(bench):
    value = bench.get("items_per_second")
    return 1e9 / value if value else None


def ns_per_switch(bench):
    value = bench.get("time_per_switch")  # seconds
    return value * 1e9 if value else None


def machine_lines(raw, contexts):
    lines = []
    loads = []
    path = os.path.join(raw, "machine.txt")
    if os.path.exists(path):
        with open(path) as f:
            text = f.read()
        for line in text.splitlines():
            m = re.search(r"load_(?:before|after)=([\d.]+)", line)
            if m:
                loads.append(float(m.group(1)))
            elif line.strip():
                lines.append(line.strip())
    if loads:
        lines.append(f"1-minute load average around the runs: {min(loads):.2f}-{max(loads):.2f} "
                     f"(median {statistics.median(loads):.2f}) on {os.cpu_count()} cores here")
    return lines, loads


def render(raw):
    runs, contexts = load_runs(raw)
    t = Table(runs)
    rounds = sorted({r for rows in runs.values() for r in rows})
    out = []
    summary = {}
    w = out.append
    w("# The hot path every resume takes: yield, re-post, spawn, hand-off (generated)")
    w("")
    w(f"Generated by `tools/bench_report/hot_path_report.py` from the raw files in `{raw}/`, recorded by")
    w("`bench/coro/record_hot_path.sh` (`--config=opt`; each round runs every binary once,")
    w("contestants back to back, in the same order). Figures are medians over "
      f"{len(rounds)} rounds with the min-max range;")
    w("ratios are computed round by round (median, range). \"before\" is the revision named")
    w("below, built from the same benchmark sources; \"fairsched_strict\" is the current code")
    w("with `PostOrder::kStrict` (no local batches); \"fairsched_home_ceiling4k\", \"fairsched_home\"")
    w("(sched_bench) and \"coro_home\" are the current code with `PostOrder::kHome` (per-worker")
    w("home queues, `home_skew_ceiling` 4,096), the other order offered; the goals table reads")
    w("both orders.")
    w("")
    lines, loads = machine_lines(raw, contexts)
    for line in lines:
        w(f"- {line}")
    w("")

    # ------------------------------------------------------------------ yield
    w("## Coroutine yield (yield_bench, Tokio, Go): million steps/s")
    w("")
    contestants = ["fairsched", "fairsched_before", "fairsched_strict", "fairsched_home_ceiling4k",
                   "textbook_pool", "asio", "tokio", "go", "local_queue"]
    shapes = sorted({args for (fam, _, args) in runs if fam == "yield"},
                    key=lambda a: (dict(a)["workers"], -int(dict(a)["coroutines"])))
    w("| coroutines x steps, workers | " + " | ".join(contestants) + " |")
    w("|---" * (len(contestants) + 1) + "|")
    for args in shapes:
        a = dict(args)
        cells = [fmt_range(t.values("yield", c, a, ips), 1e-6) for c in contestants]
        w(f"| {int(a['coroutines']):,} x {int(a['steps']):,}, {a['workers']} | "
          + " | ".join(cells) + " |")
    w("")
    w("| coroutines x steps, workers | vs textbook_pool (goal >= 1.5x) | vs asio | vs tokio "
      "| vs go | % of local_queue (goal >= 85%, 1 worker) | vs before | vs strict "
      "| kHome vs tokio | kHome % of local_queue | kHome vs default |")
    w("|---|---|---|---|---|---|---|---|---|---|---|")
    yield_goal = {}
    home_yield_goal = {}
    for args in shapes:
        a = dict(args)
        me = ("yield", "fairsched", a, ips)
        r = {c: t.ratio(me, ("yield", c, a, ips)) for c in contestants[1:]}
        home = ("yield", "fairsched_home_ceiling4k", a, ips)
        home_r = {c: t.ratio(home, ("yield", c, a, ips)) for c in ("tokio", "fairsched")}
        limit = home_limit = None
        if a["workers"] == "1":
            limit = t.ratio(me, ("yield", "local_queue", {**a}, ips))
            home_limit = t.ratio(home, ("yield", "local_queue", {**a}, ips))
        w(f"| {int(a['coroutines']):,} x {int(a['steps']):,}, {a['workers']} | "
          f"{fmt_ratio(r['textbook_pool'])} | {fmt_ratio(r['asio'])} | {fmt_ratio(r['tokio'])} | "
          f"{fmt_ratio(r['go'])} | {fmt_ratio(limit, pct=True) if limit else '-'} | "
          f"{fmt_ratio(r['fairsched_before'])} | {fmt_ratio(r['fairsched_strict'])} | "
          f"{fmt_ratio(home_r['tokio'])} | "
          f"{fmt_ratio(home_limit, pct=True) if home_limit else '-'} | "
          f"{fmt_ratio(home_r['fairsched'])} |")
        yield_goal[(a["coroutines"], a["workers"])] = (r, limit)
        home_yield_goal[(a["coroutines"], a["workers"])] = (home_r, home_limit)
    summary["yield"] = yield_goal
    summary["home_yield"] = home_yield_goal
    w("")

    # ------------------------------------------------------------------ re-post
    w("## Self-re-posting tasks (sched_bench w2): million runs/s")
    w("")
    w("1,000,000 jobs posted from outside, each re-posting itself until it has run 10 times.")
    w("`loop/w2` is one thread calling the same callbacks from an array (the limit).")
    w("")
    rp = ["fairsched", "fairsched_before", "fairsched_strict", "fairsched_home", "fairsched_oneshot",
          "trivial_sched", "tbb_arena", "asio_pool"]
    w("| workers | " + " | ".join(rp) + " | loop/w2 (limit) |")
    w("|---" * (len(rp) + 2) + "|")
    loop = t.values("loop/w2", "", {}, ips)
    repost_goal = {}
    for workers in ("1", "2"):
        a = {"workers": workers}
        cells = [fmt_range(t.values("w2", c, a, ips), 1e-6) for c in rp]
        w(f"| {workers} | " + " | ".join(cells) + f" | {fmt_range(loop, 1e-6)} |")
    w("")
    w("| workers | vs trivial_sched (textbook pool, goal >= 1.5x) | vs tbb_arena | vs asio_pool "
      "| % of the loop | vs before | vs strict | kHome vs before |")
    w("|---|---|---|---|---|---|---|---|")
    for workers in ("1", "2"):
        a = {"workers": workers}
        me = ("w2", "fairsched", a, ips)
        r = {c: t.ratio(me, ("w2", c, a, ips)) for c in rp[1:]}
        limit = t.ratio(me, ("loop/w2", "", {}, ips))
        w(f"| {workers} | {fmt_ratio(r['trivial_sched'])} | {fmt_ratio(r['tbb_arena'])} | "
          f"{fmt_ratio(r['asio_pool'])} | {fmt_ratio(limit, pct=True)} | "
          f"{fmt_ratio(r['fairsched_before'])} | {fmt_ratio(r['fairsched_strict'])} | "
          f"{fmt_ratio(t.ratio(('w2', 'fairsched_home', a, ips), ('w2', 'fairsched_before', a, ips)))} |")
        repost_goal[workers] = r
    summary["repost"] = repost_goal
    w("")

    # ------------------------------------------------------------------ spawn
    w("## Spawn + run to completion, nobody joining (coro_bench spawn_complete): ns per spawn")
    w("")
    sp = ["coro", "coro_before", "coro_home", "callback_task", "asio", "boost_fiber"]
    w("| workers | " + " | ".join(sp) + " |")
    w("|---" * (len(sp) + 1) + "|")
    for workers in ("1", "2"):
        a = {"workers": workers}
        w(f"| {workers} | " + " | ".join(
            fmt_range(t.values("spawn_complete", c, a, ns_per_item), 1, 0) for c in sp) + " |")
    summary["spawn_ns"] = t.median("spawn_complete", "coro", {"workers": "1"}, ns_per_item)
    w("")

    # ------------------------------------------------------------------ memory
    w("## Memory per suspended coroutine (coro_bench memory): bytes")
    w("")
    mem = ["coro", "coro_before", "callback_task", "asio", "boost_fiber"]
    w("| metric | " + " | ".join(mem) + " |")
    w("|---" * (len(mem) + 1) + "|")
    for metric in ("bytes_per_suspended", "bytes_per_frame"):
        w(f"| {metric} | " + " | ".join(
            fmt_range(t.values("memory", c, {}, metric), 1, 0) for c in mem) + " |")
    summary["memory"] = t.median("memory", "coro", {}, "bytes_per_suspended")
    w("")
    cycles = sorted({args for (fam, _, args) in runs if fam == "start_stop"})
    for args in cycles:
        a = dict(args)
        w(f"Start/Stop cycles (lifecycle_bench start_stop, {int(a.get('cycles', 0)):,} cycles of "
          "Start(2), one post, Stop): resident-set growth over the whole run "
          f"{fmt_range(t.values('start_stop', '', a, 'rss_growth_kib'), 1, 0)} KiB, "
          f"{fmt_range(t.values('start_stop', '', a, real_ns), 1e-3 / int(a['cycles']), 1)} "
          "us per cycle.")
        w("")

    # ------------------------------------------------------------------ hand-offs
    w("## Hand-offs: ns per round trip or per owner switch")
    w("")
    rt = ["coro", "coro_before", "coro_home", "callback_task", "asio", "boost_fiber"]
    w("| row | " + " | ".join(rt) + " |")
    w("|---" * (len(rt) + 1) + "|")
    handoff = {}
    for fam in ("signal_round_trip", "yield_round_trip"):
        w(f"| {fam} | " + " | ".join(
            fmt_range(t.values(fam, c, {}, ns_per_item), 1, 0) for c in rt) + " |")
        meds = {c: t.median(fam, c, {}, ns_per_item) for c in rt}
        handoff[fam] = meds
    w("")
    mx = ["coro_mutex", "coro_mutex_before", "boost_fiber_mutex", "yield_only_no_mutex",
          "boost_fiber_yield_only_no_mutex"]
    w("| mutex/handoff, coroutines | " + " | ".join(mx) + " |")
    w("|---" * (len(mx) + 1) + "|")
    ns = sorted({dict(args).get("n") for (fam, _, args) in runs if fam == "mutex/handoff"},
                key=lambda v: int(v or 0))
    for n in ns:
        a = {"n": n}
        w(f"| {n} | " + " | ".join(
            fmt_range(t.values("mutex/handoff", c, a, ns_per_item), 1, 0) for c in mx) + " |")
        handoff[f"mutex/{n}"] = {c: t.median("mutex/handoff", c, a, ns_per_item) for c in mx}
    summary["handoff"] = handoff
    w("")
    # The time per lock above mixes hand-offs and re-takes: a barging mutex lets the unlocker
    # take the lock again, which is cheap and unfair. The benchmark's counters separate them.
    locks = ["coro_mutex", "coro_mutex_before", "boost_fiber_mutex"]
    w("The same rows per owner switch (`time_per_switch`, ns; in parentheses the median share")
    w("of acquisitions that switched owner, `owner_switches`):")
    w("")
    w("| mutex/handoff, coroutines | " + " | ".join(locks) + " |")
    w("|---" * (len(locks) + 1) + "|")
    for n in ns:
        a = {"n": n}
        cells = []
        for c in locks:
            share = t.median("mutex/handoff", c, a, "owner_switches")
            cells.append(fmt_range(t.values("mutex/handoff", c, a, ns_per_switch), 1, 0) +
                         ("" if share is None else f" ({share:.0%})"))
        w(f"| {n} | " + " | ".join(cells) + " |")
    w("")

    # ------------------------------------------------------------------ goals
    w("## Goals of the fair hot path (computed from the medians above)")
    w("")
    w("Each goal read for the default order (`kBatched`) and for `kHome` in the same rounds.")
    w("")
    w("| goal | default: measured (median) | met | kHome: measured (median) | met |")
    w("|---|---|---|---|---|")

    def goal_row(text, default, home, goal, pct=False):
        w(f"| {text} | {fmt_ratio(default, pct=pct) if default else 'n/a'} | "
          f"{goal_mark(default, goal)} | {fmt_ratio(home, pct=pct) if home else 'n/a'} | "
          f"{goal_mark(home, goal)} |")

    for (coroutines, workers), (r, limit) in sorted(
            yield_goal.items(), key=lambda kv: (kv[0][1], -int(kv[0][0]))):
        home_r, home_limit = home_yield_goal[(coroutines, workers)]
        goal_row(f"yield {int(coroutines):,} coroutines, {workers} worker(s): ahead of Tokio",
                 r.get("tokio"), home_r.get("tokio"), 1.0)
        if workers == "1" and coroutines == "100000":
            goal_row(f"yield {int(coroutines):,} coroutines, 1 worker: >= 85% of a plain local "
                     "queue", limit, home_limit, 0.85, pct=True)
    trips = [handoff.get("yield_round_trip", {}).get(c) for c in ("coro", "coro_home")]
    w("| single-coroutine yield round trip <= 30 ns | " + " | ".join(
        "n/a | n/a" if trip is None else f"{trip:.0f} ns | {'yes' if trip <= 30 else 'no'}"
        for trip in trips) + " |")
    for family, what, mine in (("w2", "re-post (sched_bench w2)", "fairsched"),
                               ("w1", "outside one-shot posts (sched_bench w1)", "fairsched")):
        for workers in ("1", "2"):
            a = {"workers": workers}
            before = (family, "fairsched_before", a, ips)
            goal_row(f"{what}, {workers} worker(s): not slower than before",
                     t.ratio((family, mine, a, ips), before),
                     t.ratio((family, "fairsched_home", a, ips), before), 1.0)
    w("")
    w("A ratio goal is met when the median of the per-round ratios reaches it; \"no\" with a")
    w("range that crosses the goal means the rounds disagree.")
    w("")

    # ------------------------------------------------------------------ profiles
    profiles = [(row, load_profile(raw, f"profile_{row}"), load_profile(raw, f"profile_{row}_before"))
                for row in ("yield", "yield_w2", "repost", "repost_w2", "spawn")]
    if any(after or before for _, after, before in profiles):
        w("## Where the time goes (perf, cpu-clock samples, self time by function)")
        w("")
        w("From `profile_*.txt` (bench/coro/profile_hot_path.sh): yield = 100,000 x 100 at one")
        w("worker, yield_w2 = the same at two workers (samples of both workers together),")
        w("repost = sched_bench w2 at one worker, repost_w2 = the same at two workers,")
        w("spawn = spawn_complete at one worker. The last tables, where recorded, put the yield")
        w("rows of the default order next to the same rows under `PostOrder::kHome`.")
        w("Function names are shortened (namespaces and template arguments dropped).")
        w("")
        def side_by_side(left_title, left, right_title, right):
            w(f"| {left_title} | % | {right_title} | % |")
            w("|---|---|---|---|")
            for i in range(max(len(left), len(right))):
                cells = []
                for side in (left, right):
                    name, pct = side[i] if i < len(side) else ("", None)
                    cells += [name, "" if pct is None else f"{pct:.1f}"]
                w("| " + " | ".join(cells) + " |")
            w("")

        for row, after, before in profiles:
            side_by_side(f"{row}: before", before, f"{row}: after", after)
        for row in ("yield", "yield_w2"):
            home = load_profile(raw, f"profile_{row}_home")
            if home:
                side_by_side(f"{row}: default order", load_profile(raw, f"profile_{row}"),
                             f"{row}: kHome", home)
    return "\n".join(out) + "\n", summary, loads


def goal_mark(ratio, goal):
    """'yes'/'no' for a (median, low, high) ratio against a goal; 'n/a' without data."""
    if not ratio:
        return "n/a"
    return "yes" if ratio[0] >= goal else "no"


def short_symbol(symbol):
    """fairsched::BasicTaskScheduler<...>::ExecuteBatch(...) -> BasicTaskScheduler::ExecuteBatch."""
    # perf leaves "-  -" columns (no source line) after some symbols.
    text = re.sub(r"(\s+-)+\s*$", "", symbol)
    while True:  # drop template arguments and parameter lists, innermost first
        stripped = re.sub(r"<[^<>]*>|\([^()]*\)", "", text)
        if stripped == text:
            break
        text = stripped
    parts = [p for p in text.split("::") if p]
    keep = [p for p in parts if p not in ("fairsched", "coro", "bench", "std", "detail",
                                          "{lambda", "(anonymous namespace)")]
    text = "::".join((keep or parts)[-2:])
    return text.replace("|", "\\|")[:70]


def load_profile(raw, name, top=10):
    """[(function, percent)] of a perf report file, the `top` largest, merged by short name."""
    path = os.path.join(raw, name + ".txt")
    if not os.path.exists(path):
        return []
    merged = {}
    with open(path) as f:
        text = f.read()
    for line in text.splitlines():
        m = re.match(r"\s*([\d.]+)%\s+\[[.k]\]\s+(.*\S)", line)
        if m:
            key = short_symbol(m.group(2))
            merged[key] = merged.get(key, 0.0) + float(m.group(1))
    return sorted(merged.items(), key=lambda kv: -kv[1])[:top]


def readme_block(summary, loads, report_path):
    """A few generated lines for the README's performance section."""
    lines = []
    y = summary["yield"]
    parts = []
    for (coroutines, workers), (r, limit) in sorted(y.items(), key=lambda kv: (kv[0][1], -int(kv[0][0]))):
        versus = [f"{r[key][0]:.2f}x {label}"
                  for key, label in (("textbook_pool", "the textbook pool"), ("tokio", "Tokio"),
                                     ("go", "Go"), ("asio", "Asio"))
                  if r.get(key)]
        text = (f"{int(coroutines):,} coroutines at {workers} worker{'s' if workers != '1' else ''}: "
                + ", ".join(versus))
        if limit:
            text += f", {limit[0] * 100:.0f}% of a plain local queue"
        parts.append(text)
    lines.append("Coroutine yield (steps/s, medians of per-round ratios): " + "; ".join(parts) + ".")
    rp = summary["repost"]
    lines.append("Self-re-posting tasks: " + "; ".join(
        f"{rp[w]['trivial_sched'][0]:.2f}x the textbook pool at {w} worker{'s' if w != '1' else ''}"
        for w in sorted(rp) if rp[w].get("trivial_sched")) + ".")
    strict = [f"{r['fairsched_strict'][0]:.2f}x for yield, {int(c):,} coroutines at {w} "
              f"worker{'s' if w != '1' else ''}"
              for (c, w), (r, _) in sorted(y.items(), key=lambda kv: (kv[0][1], -int(kv[0][0])))
              if r.get("fairsched_strict")]
    strict += [f"{rp[w]['fairsched_strict'][0]:.2f}x for re-posts at {w} "
               f"worker{'s' if w != '1' else ''}" for w in sorted(rp) if rp[w].get("fairsched_strict")]
    if strict:
        lines.append("The default batched order against `PostOrder::kStrict` (throughput ratio): "
                     + "; ".join(strict) + ".")
    home = [f"{r['tokio'][0]:.2f}x Tokio at {int(c):,} coroutines, {w} worker{'s' if w != '1' else ''}"
            for (c, w), (r, _) in sorted(summary.get("home_yield", {}).items(),
                                          key=lambda kv: (kv[0][1], -int(kv[0][0])))
            if r.get("tokio")]
    if home:
        lines.append("Coroutine yield under `PostOrder::kHome` (per-worker home queues), same rounds: "
                     + "; ".join(home) + ".")
    if summary.get("spawn_ns") and summary.get("memory"):
        lines.append(f"Spawn + complete at 1 worker: {summary['spawn_ns']:.0f} ns; "
                     f"{summary['memory']:.0f} bytes per suspended coroutine.")
    if loads:
        lines.append(f"(1-minute load {min(loads):.2f}-{max(loads):.2f} on the 2-core machine "
                     f"during the recording; all rows, misses and profiles: `{report_path}`.)")
    return lines


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("raw")
    parser.add_argument("--out", default="bench/results/hot_path.md")
    parser.add_argument("--readme")
    parser.add_argument("--notes", help="markdown appended after the tables (the analysis); "
                        "default: RAW_DIR/notes.md if it exists")
    opts = parser.parse_args()
    text, summary, loads = render(opts.raw.rstrip("/"))
    if opts.notes is None and os.path.exists(os.path.join(opts.raw, "notes.md")):
        opts.notes = os.path.join(opts.raw, "notes.md")
    if opts.notes:
        with open(opts.notes) as f:
            text += "\n" + f.read()
    with open(opts.out, "w") as f:
        f.write(text)
    if opts.readme:
        try:
            # The report's path as the README's reader finds it: relative to the README.
            report = os.path.relpath(os.path.abspath(opts.out),
                                     os.path.dirname(os.path.abspath(opts.readme)))
            blocks.rewrite_file(opts.readme, {"hot_path": readme_block(summary, loads, report)})
        except blocks.BlockError as e:
            sys.exit(str(e))
    print(f"wrote {opts.out}" + (f" and {opts.readme}" if opts.readme else ""))


if __name__ == "__main__":
    main()
