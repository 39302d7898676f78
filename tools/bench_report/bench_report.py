#!/usr/bin/env python3
"""bench_report: runs fairsched's Google Benchmark binaries and renders the reports.

Builds the benchmark binaries with --config=opt and runs them in interleaved rounds (every
binary once per round with one repetition, record.py), keeping every run's JSON, with the
load before and after it, as one line of the area's runs.jsonl (runs.py). Renders, from those raw files only: a markdown
report with one table per benchmark family (medians over the rounds with min-max; fairsched
against its trivial version and the peers as medians of per-round ratios) and PNG plots
whose titles state the load; the generated blocks of bench/results/<area>.md; and the
README's performance block (where fairsched is ahead, level or behind).

Usage, from the workspace root:
  tools/bench_report/bench_report.py --all                  everything, rewrites bench/results/
  tools/bench_report/bench_report.py --all --quick --out /tmp/smoke     1 round, smoke test
  tools/bench_report/bench_report.py --areas queues,sched   only //bench/queues and //bench/sched
  tools/bench_report/bench_report.py --binaries //bench/sync:signal_bench --repetitions 3
  tools/bench_report/bench_report.py --from-json bench/results/json    re-render only, no run

Output (--out, default bench/results): report.md, plots/*.png, json/<area>/runs.jsonl (one
line per run, named <binary>_r<round>) and json/meta.json (machine, revision, commands); with
the default --out also the generated blocks of bench/results/*.md and README.md. Running
--from-json on that json/ folder renders the same again.
"""

import argparse
import json
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import threading
import time

try:
    from tools.bench_report import blocks, runs
except ImportError:  # run as a script: the modules next to this file
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import blocks
    import runs

DEBIAN_PYTHON = "/usr/bin/python3"
INSTALL_HINT = ("matplotlib is missing. On Debian: sudo apt-get install python3-matplotlib "
                "(then run this tool with /usr/bin/python3).")

# ---------------------------------------------------------------------------------------
# Who is who in each binary. "subject" is the fairsched algorithm the binary is about (the
# first one present in a family is the one ratios are computed for), "baseline" its trivial
# version (or, for an alternative policy, the default it competes with), "peers" other
# libraries. Ratios are "how many times better the subject is": > 1 means fairsched wins.
# Binaries not listed here fall back to the names (see role_of).
ROLES = {
    "mpsc_queue_bench": {"subject": ["Mpsc"], "baseline": ["Locked"], "peers": ["Moodycamel"]},
    "mcsp_queue_bench": {"subject": ["Mcsp"], "baseline": ["Locked"], "peers": ["Moodycamel"]},
    "bounded_mc_queue_bench": {
        "subject": ["BoundedRing1024", "BoundedRingNeverFull"],
        "baseline": ["Locked"],
        "peers": ["Moodycamel"],
    },
    "binary_heap_bench": {"subject": ["Heap"], "baseline": ["SetWaitQueue"], "peers": []},
    "timer_wheel_bench": {"subject": ["Wheel"], "baseline": ["Heap"], "peers": []},
    "sched_bench": {
        "subject": ["fairsched", "fairsched_timer_wheel"],
        "baseline": ["fairsched_trivial_policy", "trivial_sched", "trivial_sched_spin"],
        "peers": ["tbb_arena", "asio_pool"],
    },
    "signal_bench": {"subject": ["fairsched"], "baseline": ["textbook"], "peers": []},
    "coro_bench": {"subject": ["coro"], "baseline": ["callback_task"],
                   "peers": ["asio", "boost_fiber"]},
    "mutex_bench": {"subject": ["coro_mutex"], "baseline": ["std_mutex_in_task", "std_mutex"],
                    "peers": ["boost_fiber_mutex"]},
    # local_queue is the limit (no scheduler), not a peer: it stays in the "other" columns.
    "yield_bench": {"subject": ["fairsched"], "baseline": ["textbook_pool"], "peers": ["asio"]},
}

# What a bare numeric benchmark argument means, per template benchmark function (when no
# counter of the same value names it, as `producers` / `consumers` do).
ARGUMENT_NAMES = {"Insert": "timers", "Cancel": "timers", "Expire": "timers"}

# One-line explanations printed under a family's heading, for families whose name alone is
# cryptic. Keyed by (binary, family as parsed).
DESCRIPTIONS = {
    ("mpsc_queue_bench", "PushPopAll (true)"):
        "Producers write each item and push it while one consumer drains with PopAll: the "
        "goal metric.",
    ("mpsc_queue_bench", "PushPopAll (false)"):
        "Diagnostic: the same with read-only items.",
    ("mpsc_queue_bench", "PushThenPopAll"):
        "Diagnostic: the consumer drains only after every producer has finished.",
    ("mcsp_queue_bench", "PushPop (batch 32)"):
        "The producer publishes in batches of 32 (PushPending + FlushPending), as the "
        "scheduler does.",
    ("bounded_mc_queue_bench", "PushPop"):
        "BoundedRingNeverFull is a diagnostic: a ring the producer never fills.",
    ("sched_bench", "physical_limit"):
        "One thread calling the same task bodies through a function pointer, no scheduler: "
        "the ceiling for a single worker.",
}

# Families whose result is in their counters (bytes per coroutine), not in their time: no
# ratio columns (the counter table below the family's table has the figures).
COUNTERS_ONLY = {("coro_bench", "memory")}

# Name parameters that mean "how many threads take part": the x axis of tables and plots.
# The folders under bench/ (and under bench/results/json/) whose binaries this tool runs.
AREAS = ("queues", "sync", "sched", "coro", "io")

THREAD_PARAMS = ("workers", "threads", "producers", "consumers")
PERCENTILE_RE = re.compile(r"^(min|max|p\d+)_ns$")
PERCENTILE_US_RE = re.compile(r"^(min|max|p\d+)_us$")  # the same in microseconds
# Keys of a Google Benchmark JSON entry that are not user counters.
STANDARD_KEYS = {
    "name", "family_index", "per_family_instance_index", "run_name", "run_type",
    "repetitions", "repetition_index", "threads", "iterations", "real_time", "cpu_time",
    "time_unit", "items_per_second", "bytes_per_second", "aggregate_name", "aggregate_unit",
    "label", "error_occurred", "error_message",
}
TIME_SUFFIX_RE = re.compile(
    r"/(real_time|manual_time|process_time|iterations:\d+|repeats:\d+|min_time:[0-9.]+s?)$")
THREADS_SUFFIX_RE = re.compile(r"/threads:(\d+)$")
TEMPLATE_RE = re.compile(r"^BM_(\w+)<(.*)>((?:/-?\d+)*)$")


# ---------------------------------------------------------------------------------------
# Parsing: one JSON file -> a list of results, each a dict with
#   binary, family, contestant, x_name, x, metrics (median values), cv (per metric), error.


def parse_name(name, threads=1):
    """Splits a benchmark run name into (family, contestant, x_name, x).

    Two naming styles are in use under bench/:
      BM_PushPop<McspBatch32>/2/manual_time       template style: contestant = first template
                                                  argument, x = the first numeric argument
      throughput/oneshot/body_ns:0/workers:4/fairsched/real_time
                                                  path style: contestant = last plain part,
                                                  x = workers/threads/producers/consumers
    """
    while True:
        m = THREADS_SUFFIX_RE.search(name)
        if m:
            threads = int(m.group(1))
            name = name[:m.start()]
            continue
        m = TIME_SUFFIX_RE.search(name)
        if m:
            name = name[:m.start()]
            continue
        break

    m = TEMPLATE_RE.match(name)
    if m:
        func, targs, args = m.group(1), [a.strip() for a in m.group(2).split(",")], m.group(3)
        contestant = re.sub(r"Adapter$", "", targs[0])
        family_parts = list(targs[1:])
        batch = re.match(r"^(.+?)Batch(\d+)$", contestant)
        if batch:
            contestant = batch.group(1)
            family_parts.append("batch " + batch.group(2))
        family = func + (" (" + ", ".join(family_parts) + ")" if family_parts else "")
        numbers = [int(a) for a in args.split("/") if a]
        if numbers:
            return family, contestant, ARGUMENT_NAMES.get(func, "arg"), numbers[0]
        return family, contestant, "threads", threads

    parts = name.split("/")
    words = [p for p in parts if ":" not in p and not p.isdigit()]
    params = [tuple(p.split(":", 1)) for p in parts if ":" in p]
    x_name, x = "threads", threads
    numbers = [int(p) for p in parts if p.isdigit()]
    if numbers:  # a bare numeric argument (mutex/handoff/coro_mutex/2): the x axis
        x_name, x = "arg", numbers[0]
    family_params = []
    for key, value in params:
        if key in THREAD_PARAMS and x_name in ("threads", "arg") and key != "threads":
            x_name, x = key, int(value)
        else:
            family_params.append(f"{key}:{value}")
    if len(words) > 1:
        contestant = words[-1]
        words = words[:-1]
    else:
        contestant = "(reference)"
    family = "/".join(words) + (" " + " ".join(family_params) if family_params else "")
    return family, contestant, x_name, x


# One round's run: <binary>_r<round> (its name in the recording's runs.jsonl, see runs.py).
# A run without the suffix (the layout before interleaved rounds) counts as round 1 and, if
# it holds aggregates, its medians.
ROUND_RUN_RE = re.compile(r"^(?P<binary>.+?)_r(?P<round>\d+)$")


def measurement_entries(entries):
    """[(run name, entry)]: the measurements of one file. With repetitions in the file, the
    single repetitions (or, where --benchmark_report_aggregates_only dropped them, the
    median aggregates); a run that failed keeps its error entry."""
    by_run = {}
    for e in entries:
        by_run.setdefault(e.get("run_name") or e["name"], []).append(e)
    out = []
    for run, group in by_run.items():
        singles = [e for e in group if e.get("run_type") != "aggregate"]
        medians = [e for e in group if e.get("aggregate_name") == "median"]
        out += [(run, e) for e in (singles or medians)]
    return out


def split_metrics(entry, x_name, x):
    """(metrics, counters, x_name) of one entry: metrics are items/s, real time and latency
    percentiles (in ns); counters the other user counters. A counter equal to the numeric
    argument names that argument (`producers`)."""
    metrics, counters = {}, {}
    if "items_per_second" in entry:
        metrics["items_per_second"] = entry["items_per_second"]
    if "real_time" in entry:
        metrics["real_time"] = entry["real_time"]
    for key, value in entry.items():
        if key in STANDARD_KEYS or not isinstance(value, (int, float)) or isinstance(value, bool):
            continue
        if PERCENTILE_RE.match(key):
            metrics[key] = value
        elif PERCENTILE_US_RE.match(key):
            metrics[key[:-3] + "_ns"] = value * 1000  # one unit inside the report
        elif key == x_name or (x_name == "arg" and key in THREAD_PARAMS and value == x):
            x_name = key  # the counter names what the numeric argument means
        else:
            counters[key] = value
    return metrics, counters, x_name


def file_load(context):
    """The 1-minute load averages around one raw file's run: the ones bench_report wrote
    into the context (before and after), else Google Benchmark's own (at the start)."""
    loads = [context[k] for k in ("fairsched_load_before", "fairsched_load_after")
             if isinstance(context.get(k), (int, float))]
    if not loads and context.get("load_avg"):
        loads = [context["load_avg"][0]]
    return loads


def load_dir(json_dir):
    """load_runs of the recording in json_dir (its runs.jsonl; meta.json is no run)."""
    return load_runs(runs.read_dir(json_dir))


def load_runs(recorded):
    """Reads raw runs, [(run name, data)] as runs.read_dir returns them. Returns (files,
    results): files maps a binary to its rounds, [{"round", "run", "context", "loads"}];
    results are one dict per benchmark: binary, run, family, contestant, x_name, x, metrics
    and counters (medians over the rounds), rounds ({metric: {round: value}}), time_unit,
    error."""
    files = {}
    gathered = {}  # (binary, run) -> {round: [entries]}
    for name, data in recorded:
        m = ROUND_RUN_RE.match(name)
        binary, rnd = (m.group("binary"), int(m.group("round"))) if m else (name, 1)
        context = data.get("context", {})
        files.setdefault(binary, []).append(
            {"round": rnd, "run": name, "context": context, "loads": file_load(context)})
        for run, entry in measurement_entries(data.get("benchmarks", [])):
            gathered.setdefault((binary, run), {}).setdefault(rnd, []).append(entry)
    results = []
    for (binary, run), by_round in gathered.items():
        first = next(iter(by_round.values()))[0]
        family, contestant, x_name, x = parse_name(run, first.get("threads", 1))
        rounds, counter_rounds, errors = {}, {}, []
        for rnd, entries in sorted(by_round.items()):
            per_metric, per_counter = {}, {}
            for e in entries:
                if e.get("error_occurred"):
                    errors.append(e.get("error_message", "error"))
                    continue
                metrics, counters, x_name = split_metrics(e, x_name, x)
                for k, v in metrics.items():
                    per_metric.setdefault(k, []).append(v)
                for k, v in counters.items():
                    per_counter.setdefault(k, []).append(v)
            # Several repetitions inside one round's file count as one value: their median.
            for k, vs in per_metric.items():
                rounds.setdefault(k, {})[rnd] = statistics.median(vs)
            for k, vs in per_counter.items():
                counter_rounds.setdefault(k, {})[rnd] = statistics.median(vs)
        results.append({
            "binary": binary, "run": run, "family": family, "contestant": contestant,
            "x_name": x_name, "x": x,
            "metrics": {k: statistics.median(v.values()) for k, v in rounds.items()},
            "counters": {k: statistics.median(v.values()) for k, v in counter_rounds.items()},
            "rounds": rounds, "time_unit": first.get("time_unit", "ns"),
            "error": errors[0] if errors and not rounds else None,
        })
    return files, results


def load_results(spec):
    """Reads one run on its own: RUNS.jsonl:RUN, or a JSON file named after its run
    (<binary>_r<round>.json). Returns (context, results) as load_runs does."""
    name = spec.rpartition(":")[2] if ".jsonl:" in spec else os.path.basename(spec)[:-len(".json")]
    files, results = load_runs([(name, runs.load(spec))])
    return next(iter(files.values()))[0]["context"], results


def stale_benchmarks(results, root):
    """Benchmarks whose name no source under root/bench defines any more: raw files left
    over from an older binary (report.md once showed the old Treiber queue's BM_PushPopAll
    this way, under the current queue's name). A template-style name must have its BM_
    function in a source; a path-style name its first word as the start of a string."""
    sources = []
    for folder, _, names in os.walk(os.path.join(root, "bench")):
        for name in names:
            if name.endswith((".cc", ".h", ".rs", ".go")):
                with open(os.path.join(folder, name), errors="replace") as f:
                    sources.append(f.read())
    text = "\n".join(sources)
    stale = []
    for r in results:
        m = re.match(r"^(BM_\w+)", r["run"])
        if m:
            found = re.search(r"\b" + re.escape(m.group(1)) + r"\b", text)
        else:
            word = r["run"].split("/", 1)[0]
            found = re.search('"' + re.escape(word) + '[/"]', text)
        if not found:
            stale.append(f"{r['binary']}: {r['run']}")
    return stale


def role_of(binary, contestant):
    roles = ROLES.get(binary)
    if roles:
        for role in ("subject", "baseline", "peers"):
            if contestant in roles[role]:
                return role
        return "other"
    lower = contestant.lower()
    if any(w in lower for w in ("trivial", "locked", "textbook", "naive")):
        return "baseline"
    if "fairsched" in lower:
        return "subject"
    return "peers"


def ordered_contestants(binary, contestants):
    """Subjects, then baselines, then peers, then the rest; config order, then first seen."""
    roles = ROLES.get(binary, {})
    rank = {}
    for i, role in enumerate(("subject", "baseline", "peers")):
        for j, name in enumerate(roles.get(role, [])):
            rank[name] = (i, j)
    fallback = {"subject": 0, "baseline": 1, "peers": 2, "other": 3}
    seen = {c: n for n, c in enumerate(contestants)}
    return sorted(contestants,
                  key=lambda c: rank.get(c, (fallback[role_of(binary, c)], 1000 + seen[c])))


# ---------------------------------------------------------------------------------------
# Families: results grouped by (binary, family), each a table of x -> contestant -> result.


class Family:
    def __init__(self, binary, name):
        self.binary = binary
        self.name = name
        self.x_name = "threads"
        self.rows = {}  # x -> {contestant: result}
        self.contestants = []

    def add(self, result):
        self.x_name = result["x_name"]
        self.rows.setdefault(result["x"], {})[result["contestant"]] = result
        if result["contestant"] not in self.contestants:
            self.contestants.append(result["contestant"])

    def columns(self):
        return ordered_contestants(self.binary, self.contestants)

    def kind(self):
        """'latency' if the family reports percentile counters, else 'throughput' if it
        reports items/s, else 'time'."""
        results = [r for row in self.rows.values() for r in row.values()]
        if any(any(PERCENTILE_RE.match(k) for k in r["metrics"]) for r in results):
            return "latency"
        if all("items_per_second" in r["metrics"] for r in results if not r["error"]):
            return "throughput"
        return "time"

    def subject(self):
        for c in self.columns():
            if role_of(self.binary, c) == "subject":
                return c
        return None


def group_families(results):
    families = []
    index = {}
    for r in results:
        key = (r["binary"], r["family"])
        if key not in index:
            index[key] = Family(*key)
            families.append(index[key])
        index[key].add(r)
    return families


# ---------------------------------------------------------------------------------------
# Markdown.


def spread(values, scale=1.0, fmt="{:.2f}"):
    """'median (min-max)' of a {round: value} dict; just the median when the range is one
    value (a single round, or rounds that agree to the digits shown)."""
    vs = [v * scale for v in values.values()]
    if not vs:
        return "-"
    med, lo, hi = (fmt.format(v) for v in (statistics.median(vs), min(vs), max(vs)))
    return med if lo == hi else f"{med} ({lo}-{hi})"


def percentiles_of(result):
    keys = [k for k in result["metrics"] if PERCENTILE_RE.match(k)]
    order = lambda k: (0, 0) if k == "min_ns" else (2, 0) if k == "max_ns" else (1, int(k[1:-3]))
    return sorted(keys, key=order)


def cell(family, result):
    if result is None:
        return "-"
    if result["error"]:
        return "error: " + result["error"]
    kind = family.kind()
    if kind == "throughput":
        return spread(result["rounds"]["items_per_second"], 1e-6)
    if kind == "latency":
        return " / ".join(spread(result["rounds"][k], 1e-3, "{:.1f}")
                          for k in percentiles_of(result))
    return spread(result["rounds"]["real_time"], 1.0, "{:.3g}") + " " + result["time_unit"]


def round_ratios(family, subject, other):
    """How many times better `subject` is than `other` (> 1: subject wins), round by round
    over the rounds both ran in: {round: ratio}, or for a latency family one such dict per
    percentile (min excluded; lower latency is better). None if either is missing."""
    if subject is None or other is None or subject["error"] or other["error"]:
        return None

    def per_round(metric, higher_is_better):
        a, b = subject["rounds"].get(metric, {}), other["rounds"].get(metric, {})
        out = {}
        for rnd in a:
            if rnd in b and a[rnd] > 0 and b[rnd] > 0:
                out[rnd] = a[rnd] / b[rnd] if higher_is_better else b[rnd] / a[rnd]
        return out

    kind = family.kind()
    if kind == "latency":
        keys = [k for k in percentiles_of(subject) if k in other["metrics"] and k != "min_ns"]
        ratios = [per_round(k, False) for k in keys]
        return ratios if ratios and all(ratios) else None
    ratios = per_round("items_per_second" if kind == "throughput" else "real_time",
                       kind == "throughput")
    return ratios or None


def ratio_stats(ratios):
    """(median, min, max) of {round: ratio}."""
    vs = list(ratios.values())
    return statistics.median(vs), min(vs), max(vs)


def fmt_ratio(ratios):
    if ratios is None:
        return "-"
    if isinstance(ratios, list):
        return " / ".join(fmt_ratio(r) for r in ratios)
    med, lo, hi = (f"{v:.2f}" for v in ratio_stats(ratios))
    return f"{med}x" if lo == hi else f"{med}x ({lo}-{hi})"


def ratio_key(ratios):
    """The figure a ratio is ranked by: its median (the smallest median percentile)."""
    if isinstance(ratios, list):
        return min(ratio_stats(r)[0] for r in ratios)
    return ratio_stats(ratios)[0]


def unit_line(family):
    kind = family.kind()
    if kind == "throughput":
        return ("M items/s: median over the rounds (min-max); ratios: median of the per-round "
                "ratios (min-max)")
    if kind == "latency":
        sample = next(r for row in family.rows.values() for r in row.values() if not r["error"])
        return ("microseconds, " + " / ".join(k[:-3] for k in percentiles_of(sample)) +
                ": median over the rounds (min-max); ratios per percentile (min excluded), "
                "median of the per-round ratios (min-max)")
    return ("time per iteration: median over the rounds (min-max); lower is better; ratios: "
            "median of the per-round ratios (min-max)")


def best_other(family, row, subject, others):
    """(ratios, name) of the contestant among `others` that `subject` beats by the least."""
    best = None
    for p in others:
        r = round_ratios(family, row.get(subject), row.get(p))
        if r is not None and (best is None or ratio_key(r) < ratio_key(best[0])):
            best = (r, p)
    return best


def family_table(family):
    cols = family.columns()
    subject = family.subject()
    baselines = [c for c in cols if role_of(family.binary, c) == "baseline"]
    peers = [c for c in cols if role_of(family.binary, c) == "peers"]
    if (family.binary, family.name) in COUNTERS_ONLY:
        subject = None
    ratio_cols = [(f"{subject} vs {b}", [b]) for b in baselines] if subject else []
    if subject and len(peers) == 1:
        ratio_cols.append((f"{subject} vs {peers[0]}", peers))
    elif subject and peers:
        ratio_cols.append((f"{subject} vs best peer", peers))
    header = [family.x_name] + cols + [name for name, _ in ratio_cols]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for x in sorted(family.rows):
        row = family.rows[x]
        cells = [str(x)] + [cell(family, row.get(c)) for c in cols]
        for name, others in ratio_cols:
            if len(others) == 1:
                cells.append(fmt_ratio(round_ratios(family, row.get(subject),
                                                    row.get(others[0]))))
                continue
            best = best_other(family, row, subject, others)
            cells.append(f"{fmt_ratio(best[0])} ({best[1]})" if best else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def counter_table(family):
    """The other counters (lock use per item, ...), if any contestant reports some."""
    cols = family.columns()
    names = []
    for c in cols:
        for row in family.rows.values():
            r = row.get(c)
            for k in (r["counters"] if r else {}):
                if (c, k) not in names:
                    names.append((c, k))
    if not names:
        return []
    header = [family.x_name] + [f"{c}: {k}" for c, k in names]
    lines = ["", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for x in sorted(family.rows):
        row = family.rows[x]
        cells = [str(x)]
        for c, k in names:
            r = row.get(c)
            cells.append(f"{r['counters'][k]:.3g}" if r and k in r["counters"] else "-")
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def slug(text):
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()


def load_range(loads):
    return f"{min(loads):.2f}-{max(loads):.2f}" if loads else "not recorded"


def binary_loads(files, binary):
    return [v for f in files.get(binary, []) for v in f["loads"]]


def machine_lines(files, meta):
    lines = []
    m = meta.get("machine", {})
    if m:
        lines.append(f"- CPU: {m.get('cpu', '?')}, {m.get('nproc', '?')} logical CPUs; "
                     f"kernel {m.get('kernel', '?')}")
    if meta.get("revision"):
        lines.append(f"- Revision: {meta['revision']}")
    ctx = next((f[0]["context"] for f in files.values() if f), {})
    if ctx:
        lines.append(f"- Google Benchmark context: {ctx.get('num_cpus', '?')} CPUs at "
                     f"{ctx.get('mhz_per_cpu', '?')} MHz; its library build type: "
                     f"{ctx.get('library_build_type', '?')} (that is Debian's build of the "
                     "benchmark library, not of the measured code)")
    for binary, rounds in sorted(files.items()):
        dates = sorted(f["context"].get("date", "?") for f in rounds)
        lines.append(f"- `{binary}`: {len(rounds)} round(s), {dates[0]} to {dates[-1]}; "
                     f"1-minute load before/after each run {load_range(binary_loads(files, binary))}")
    return lines


def collect(json_root):
    """[(area, files, results)]: one entry per folder under json_root named in AREAS that
    holds runs; runs directly in json_root (its own runs.jsonl) form one area named ''."""
    areas = []
    for area in AREAS:
        folder = os.path.join(json_root, area)
        if os.path.isdir(folder):
            files, results = load_dir(folder)
            if results:
                areas.append((area, files, results))
    files, results = load_dir(json_root)
    if results:
        areas.insert(0, ("", files, results))
    return areas


def family_section(fam, files, plots_dir, plot):
    """The lines of one family: heading, description, unit, tables and plot link."""
    out = ["", f"### {fam.binary}: {fam.name}", ""]
    description = next((text for (binary, prefix), text in DESCRIPTIONS.items()
                        if binary == fam.binary and
                        (fam.name == prefix or fam.name.startswith(prefix + " "))), None)
    if description:
        out += [description, ""]
    out += [unit_line(fam), ""]
    out += family_table(fam)
    out += counter_table(fam)
    if plot:
        png = plot_family(fam, plots_dir, binary_loads(files, fam.binary))
        if png:
            out += ["", f"![{fam.binary}: {fam.name}](plots/{os.path.basename(png)})"]
    return out


def read_meta(json_root):
    path = os.path.join(json_root, "meta.json")
    if os.path.exists(path):
        with open(path) as f:
            return json.load(f)
    return {}


def render(json_root, out_dir, plot=True, note=None, readme=None, sources_root=None):
    """Renders out_dir/report.md and out_dir/plots/*.png from the raw files under json_root,
    rewrites the block "bench_report:<area>" of out_dir/<area>.md where that file has one,
    and the block "perf" of `readme` if given. `note` (or the note in json_root/meta.json) is
    printed under the report's title. With sources_root, benchmarks that no source under
    sources_root/bench defines any more are an error. Returns the plot files written."""
    areas = collect(json_root)
    if not areas:
        raise SystemExit(f"bench_report: no benchmark JSON files in {json_root}")
    if sources_root:
        stale = [s for _, _, results in areas for s in stale_benchmarks(results, sources_root)]
        if stale:
            raise SystemExit("bench_report: these raw files hold benchmarks that no source "
                             "under bench/ defines any more (left over from an older binary; "
                             "re-record them): " + "; ".join(stale[:10]))
    meta = read_meta(json_root)
    plots_dir = os.path.join(out_dir, "plots")
    if plot:
        os.makedirs(plots_dir, exist_ok=True)
        for old in os.listdir(plots_dir):
            if old.endswith(".png"):
                os.remove(os.path.join(plots_dir, old))
    all_files = {b: f for _, files, _ in areas for b, f in files.items()}
    rounds = sorted({len(f) for f in all_files.values()})
    rel_json = os.path.relpath(json_root, out_dir)
    if rel_json.startswith(".."):  # not below the report: name it as given
        rel_json = json_root
    out = [
        "# Benchmark report",
        "",
        "Generated by `tools/bench_report/bench_report.py` from the raw Google Benchmark JSON "
        f"in [`{rel_json}/`]({rel_json}/) ({len(all_files)} binaries, rounds per binary: "
        f"{', '.join(map(str, rounds))}); nothing in it is typed by hand. Every binary was "
        "built with `--config=opt`. Re-render with `tools/bench_report/bench_report.py "
        "--from-json bench/results/json`; record again with `--all`.",
    ]
    note = note or meta.get("note")
    if note:
        out += ["", "**Note:** " + note]
    out += ["", "## Machine and load", ""] + machine_lines(all_files, meta)
    commands = meta.get("commands", {})
    if commands:
        out += ["", "## Commands", "",
                "From the workspace root; each round runs every command once, in this order "
                "(the order rotates by one binary per round):", "", "```",
                meta.get("build", "./bazelw build --config=opt <targets>")]
        out += [c for c in commands.values()] + ["```"]
    out += [
        "",
        "## How to read the tables",
        "",
        "One table per benchmark family, one row per thread count (or per argument for",
        "single-threaded benchmarks). Each column is one contestant: the fairsched algorithm",
        "first, then its trivial version (or the default it is an alternative to), then the",
        "peers. The binaries ran in interleaved rounds (every binary once per round, one",
        "repetition each), so a slow phase of the machine hits every contestant alike. A",
        "cell is the median over the rounds with the min-max range. Ratio columns say how",
        "many times better the first fairsched contestant is (> 1: fairsched wins), computed",
        "round by round (contestants of one round ran in the same binary run) and summarised",
        "as median (min-max): for throughput the quotient of the items/s, for latency the",
        "inverse quotient per percentile. \"best peer\" is the peer fairsched beats by the",
        "least. Each plot's title gives the 1-minute load average before and after the runs",
        "it was drawn from.",
    ]
    all_families = []
    for area, files, results in areas:
        families = group_families(results)
        all_families += [(fam, files) for fam in families]
        section = []
        for fam in families:
            section += family_section(fam, files, plots_dir, plot)
        out += ["", f"## {area or 'benchmarks'}"] + section
        doc = os.path.join(out_dir, f"{area}.md")
        if area and os.path.exists(doc):
            with open(doc) as f:
                has_block = blocks.markers(f"bench_report:{area}")[0] in f.read()
            if has_block:
                header = [f"Generated by `tools/bench_report/bench_report.py` from "
                          f"`bench/results/json/{area}/` (do not edit between the markers; "
                          "how to read the tables: `report.md`)."]
                blocks.rewrite_file(doc, {f"bench_report:{area}": header + section})
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write("\n".join(out) + "\n")
    if sources_root:
        echo_blocks(out_dir, sources_root)
    if readme:
        blocks.rewrite_file(readme, {"perf": readme_lines(all_families, os.path.relpath(
            out_dir, os.path.dirname(os.path.abspath(readme)) or "."), plots_dir)})
    return sorted(os.path.join(plots_dir, p) for p in os.listdir(plots_dir)) if plot else []


def echo_blocks(out_dir, sources_root):
    """Fills every block "echo:<path>" of out_dir/*.md with bench/io/echo_summary.py's tables
    of the raw lines in out_dir/<path> (bench/io/echo_bench.sh's results.txt format), headed
    by the load range those lines recorded (servers: fairsched on epoll and io_uring, Asio,
    Tokio, Go; goals computed by echo_summary.py)."""
    script = os.path.join(sources_root, "bench", "io", "echo_summary.py")
    for name in sorted(os.listdir(out_dir)):
        if not name.endswith(".md"):
            continue
        doc = os.path.join(out_dir, name)
        with open(doc) as f:
            names = [b for b in blocks.block_names(f.read()) if b.startswith("echo:")]
        wanted = {}
        for block in names:
            raw = os.path.join(out_dir, block[len("echo:"):])
            if not os.path.exists(raw):
                wanted[block] = [f"Not recorded (`{block[len('echo:'):]}` does not exist; "
                                 "`bench_report.py --all --echo` writes json/io/echo/)."]
                continue
            summary = subprocess.run([sys.executable, script, raw], check=True, text=True,
                                     stdout=subprocess.PIPE).stdout
            with open(raw) as f:
                loads = [float(field[len("load="):]) for line in f for field in line.split()
                         if field.startswith("load=")]
            wanted[block] = [f"Generated by `bench/io/echo_summary.py` from "
                             f"`{block[len('echo:'):]}` (cells: median (min-max) over the "
                             "rounds; ratios: median (min-max) of the per-round ratios, the "
                             "goals computed from them); 1-minute load "
                             f"{load_range(loads)} during the recording.", ""] + \
                summary.rstrip().splitlines()
        if wanted:
            blocks.rewrite_file(doc, wanted)


# ---------------------------------------------------------------------------------------
# The README's performance block: for each headline family, fairsched against its closest
# competitor at every point, and whether it wins there. (label, binary, family regex,
# competitors[, tail percentile of a latency family, default p99]); the closest competitor is
# picked per point, as in "best peer".
HEADLINES = [
    ("front queue push + pop, producers write items", "mpsc_queue_bench", r"PushPop \(true\)",
     ["Moodycamel", "Locked"]),
    ("ready queue pop", "mcsp_queue_bench", r"PushPop( \(batch 32\))?", ["Moodycamel", "Locked"]),
    ("bounded ring pop", "bounded_mc_queue_bench", r"PushPop", ["Moodycamel", "Locked"]),
    ("timer wheel against the heap", "timer_wheel_bench", r"(Insert|Cancel|Expire)", ["Heap"]),
    ("one-shot posts from outside (w1)", "sched_bench", r"w1",
     ["trivial_sched", "tbb_arena", "asio_pool"]),
    ("self-re-posting tasks (w2)", "sched_bench", r"w2",
     ["trivial_sched", "tbb_arena", "asio_pool"]),
    ("post-to-start latency", "sched_bench", r"wake/post gap_us:(10|1000)",
     ["trivial_sched", "trivial_sched_spin", "tbb_arena", "asio_pool"]),
    # 100 samples per round at 10 ms: p90 is the tail to read (p99 is the largest sample).
    ("post-to-start latency", "sched_bench", r"wake/post gap_us:10000",
     ["trivial_sched", "trivial_sched_spin", "tbb_arena", "asio_pool"], "p90"),
    ("timer lateness under load", "sched_bench", r"timer_lateness", ["asio_pool"]),
    ("AutoResetEvent against mutex + condvar", "signal_bench", r".*", ["textbook"]),
]
WIN, LEVEL = 1.05, 0.95  # a median ratio at or above WIN wins, below LEVEL is behind
# Plots the README shows under the block, when the recording has them.
README_PLOTS = ["mpsc_queue_bench__pushpop_true.png", "sched_bench__w1.png",
                "sched_bench__wake_post_gap_us_1000.png", "sched_bench__wake_post_gap_us_10000.png"]


def headline_points(all_families):
    """[(verdict, text)] for every headline point: verdict "wins", "level" or "behind"."""
    points = []
    for label, binary, pattern, competitors, *tail in HEADLINES:
        tail = (tail[0] if tail else "p99") + "_ns"
        for fam, _ in all_families:
            if fam.binary != binary or not re.fullmatch(pattern, fam.name):
                continue
            subject = fam.subject()
            if subject is None:
                continue
            for x in sorted(fam.rows):
                row = fam.rows[x]
                best = best_other(fam, row, subject, [c for c in competitors if c in row])
                if best is None:
                    continue
                ratios, name = best
                if isinstance(ratios, list):  # latency: p50 and the tail percentile
                    keys = [k for k in percentiles_of(row[subject])
                            if k in row[name]["metrics"] and k != "min_ns"]  # as round_ratios
                    picked = [(k, r) for k, r in zip(keys, ratios) if k in ("p50_ns", tail)]
                else:
                    picked = [("", ratios)]
                for pct, r in picked:
                    med = ratio_stats(r)[0]
                    verdict = "wins" if med >= WIN else "behind" if med < LEVEL else "level"
                    where = f"{fam.name}, {fam.x_name} {x}" + (f", {pct[:-3]}" if pct else "")
                    points.append((verdict, f"{label} ({where}): {fmt_ratio(r)} {name}"))
    return points


def readme_lines(all_families, results_dir, plots_dir):
    points = headline_points(all_families)
    loads = [v for fam, files in all_families for v in binary_loads(files, fam.binary)]
    lines = [f"Generated by `tools/bench_report/bench_report.py` from the raw files under "
             f"`{results_dir}/json/` (medians of per-round ratios, min-max in parentheses; "
             "each against the closest competitor at that point; 1-minute load "
             f"{load_range(loads)} during the recording). All tables: `{results_dir}/report.md`."]
    if not points:
        return lines + ["", "Not recorded yet: run `tools/bench_report/bench_report.py --all`."]
    for verdict, title in (("wins", f"fairsched ahead (median ratio >= {WIN})"),
                           ("level", f"level (median ratio {LEVEL}-{WIN})"),
                           ("behind", f"fairsched behind (median ratio < {LEVEL})")):
        items = [text for v, text in points if v == verdict]
        lines += ["", f"**{title}:**" + ("" if items else " none.")]
        lines += [f"- {text}" for text in items]
    plots = [p for p in README_PLOTS if os.path.exists(os.path.join(plots_dir, p))]
    if plots:
        lines.append("")
        lines += [f"![{p[:-4]}]({results_dir}/plots/{p})" for p in plots]
    return lines


# ---------------------------------------------------------------------------------------
# Plots.


def import_pyplot():
    # Matplotlib wants a writable config directory; a sandboxed test has no writable HOME.
    if "MPLCONFIGDIR" not in os.environ and not os.access(os.path.expanduser("~"), os.W_OK):
        os.environ["MPLCONFIGDIR"] = tempfile.mkdtemp(prefix="bench_report_mpl")
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot_family(fam, plots_dir, loads):
    """Writes one PNG for the family and returns its path, or None if there is nothing to
    plot (a throughput family measured at a single thread count). `loads`: the 1-minute load
    averages recorded around the runs, stated in the title."""
    kind = fam.kind()
    xs = sorted(fam.rows)
    if kind != "latency" and len(xs) < 2:
        return None
    plt = import_pyplot()
    from matplotlib import ticker
    fig, ax = plt.subplots(figsize=(7, 4.2), dpi=110)
    cols = fam.columns()
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    if kind == "latency":
        width = 0.8 / max(1, len(cols))
        for i, c in enumerate(cols):
            color = colors[i % len(colors)]
            for j, x in enumerate(xs):
                r = fam.rows[x].get(c)
                if r is None or r["error"]:
                    continue
                pos = j + (i - (len(cols) - 1) / 2) * width
                keys = [k for k in percentiles_of(r) if k not in ("min_ns", "max_ns")]
                values = [r["metrics"][k] / 1000 for k in keys]
                # Highest percentile light, middle ones darker, the lowest solid, each drawn
                # over the higher ones: one bar shows the spread from the median to the tail.
                for n, v in sorted(zip(keys, values), key=lambda kv: -kv[1]):
                    shade = 1.0 if n == keys[0] else 0.35 if n == keys[-1] else 0.65
                    ax.bar(pos, v, width * 0.9, color=color, alpha=shade,
                           label=c if (j == 0 and n == keys[0]) else None)
                if "min_ns" in r["metrics"]:
                    ax.plot(pos, max(r["metrics"]["min_ns"] / 1000, 1e-3), marker="_",
                            color="black", markersize=10)
        ax.set_xticks(range(len(xs)))
        ax.set_xticklabels([f"{fam.x_name} {x}" for x in xs])
        ax.set_yscale("log")
        # Plain numbers at 1-2-5 steps read better than bare powers of ten.
        ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_major_formatter(ticker.FormatStrFormatter("%g"))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        sample = next(r for row in fam.rows.values() for r in row.values() if not r["error"])
        names = [k[:-3] for k in percentiles_of(sample) if k not in ("min_ns", "max_ns")]
        ax.set_ylabel("microseconds (log scale)")
        note = names[0] if len(names) == 1 else (
            f"solid: {names[0]}, " + "".join(f"darker: {n}, " for n in names[1:-1]) +
            f"light: {names[-1]}")
        if any("min_ns" in r["metrics"] for row in fam.rows.values() for r in row.values()):
            note += ", black tick: min"
        ax.set_title(f"{fam.binary}: {fam.name}\n({note}; medians over rounds; lower is "
                     f"better; 1-min load {load_range(loads)})", fontsize=10)
    else:
        for i, c in enumerate(cols):
            points = [(x, fam.rows[x][c]) for x in xs
                      if c in fam.rows[x] and not fam.rows[x][c]["error"]]
            if not points:
                continue
            metric = "items_per_second" if kind == "throughput" else "real_time"
            scale = 1e6 if kind == "throughput" else 1
            ys = [r["metrics"][metric] / scale for _, r in points]
            # Error bars: the min-max range over the rounds.
            errs = [[y - min(r["rounds"][metric].values()) / scale for y, (_, r) in zip(ys, points)],
                    [max(r["rounds"][metric].values()) / scale - y for y, (_, r) in zip(ys, points)]]
            style = "-" if role_of(fam.binary, c) == "subject" else "--"
            ax.errorbar([x for x, _ in points], ys, yerr=errs, marker="o", linestyle=style,
                        capsize=3, color=colors[i % len(colors)], label=c)
        ratio = max(xs) / max(min(xs), 1)
        ax.set_xscale("log", base=2 if ratio <= 64 else 10)
        ax.set_xticks(xs)
        ax.set_xticklabels([str(x) for x in xs])
        ax.minorticks_off()
        ax.set_xlabel(fam.x_name)
        ax.set_ylim(bottom=0)
        unit = next(r["time_unit"] for row in fam.rows.values() for r in row.values())
        ax.set_ylabel("M items/s" if kind == "throughput" else f"time ({unit})")
        ax.set_title(f"{fam.binary}: {fam.name}\n(median over rounds, bars: min-max; "
                     f"{'higher' if kind == 'throughput' else 'lower'} is better; "
                     f"1-min load {load_range(loads)})", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    # Below the axes, so it never covers a line or a bar.
    below = -0.16 if kind != "latency" else -0.09
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, below),
              ncol=min(len(cols), 5), frameon=False)
    path = os.path.join(plots_dir, f"{fam.binary}__{slug(fam.name)}.png")
    # The title is also stored as the PNG's Title text, so a tool can read the load from it.
    fig.savefig(path, bbox_inches="tight", metadata={"Title": ax.get_title().replace("\n", " ")})
    plt.close(fig)
    return path


# ---------------------------------------------------------------------------------------
# Running the binaries.


def workspace_root():
    if os.environ.get("BUILD_WORKSPACE_DIRECTORY"):
        return os.environ["BUILD_WORKSPACE_DIRECTORY"]
    here = os.path.dirname(os.path.abspath(__file__))
    while here != "/":
        if os.path.exists(os.path.join(here, "WORKSPACE")):
            return here
        here = os.path.dirname(here)
    raise SystemExit("bench_report: cannot find the workspace root (no WORKSPACE above me)")


def bazel(root, args, capture=True):
    # BAZEL_OUTPUT_BASE, if set, names another output base (a startup option).
    startup = ([f"--output_base={os.environ['BAZEL_OUTPUT_BASE']}"]
               if os.environ.get("BAZEL_OUTPUT_BASE") else [])
    cmd = [os.path.join(root, "bazelw")] + startup + args
    if capture:
        return subprocess.run(cmd, cwd=root, check=True, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True).stdout
    subprocess.run(cmd, cwd=root, check=True)
    return ""


def find_targets(root, areas, binaries):
    if binaries:
        labels = []
        for b in binaries:
            if b.startswith("//"):
                labels.append(b)
            else:  # a bare binary name: look it up
                labels += [t for t in find_targets(root, [], []) if t.endswith(":" + b)]
        return labels
    scope = " + ".join(f"//bench/{a}/..." for a in areas) if areas else "//bench/..."
    # Google Benchmark binaries only (asio_echo_server is tagged "benchmark" too).
    scope = f'rdeps({scope}, "@com_google_benchmark//:benchmark", 1)'
    out = bazel(root, ["query", f'attr(tags, "benchmark", kind("cc_binary", {scope}))',
                       "--output=label"])
    return [line.strip() for line in out.splitlines() if line.strip()]


def loadavg():
    try:
        with open("/proc/loadavg") as f:
            return " ".join(f.read().split()[:3])
    except OSError:
        return "?"


def machine():
    cpu = "?"
    try:
        out = subprocess.run(["lscpu"], stdout=subprocess.PIPE, text=True).stdout
        for line in out.splitlines():
            if line.startswith("Model name:"):
                cpu = line.split(":", 1)[1].strip()
    except OSError:
        pass
    return {"cpu": cpu, "nproc": os.cpu_count(),
            "kernel": f"{platform.system()} {platform.release()}"}


class Progress:
    """Prints which binary runs, how long it has been running and the last benchmark it
    finished: one updating line on a terminal, a line every 15 s otherwise."""

    def __init__(self, label):
        self.label = label
        self.start = time.monotonic()
        self.last = ""
        self.done = threading.Event()
        self.tty = sys.stderr.isatty()
        self.thread = threading.Thread(target=self.loop, daemon=True)
        self.thread.start()

    def loop(self):
        period = 1 if self.tty else 15
        while not self.done.wait(period):
            self.show()

    def show(self, final=False):
        elapsed = int(time.monotonic() - self.start)
        text = (f"{self.label}  {elapsed // 60}:{elapsed % 60:02d}  load {loadavg()}"
                + (f"  last: {self.last}" if self.last else ""))
        if self.tty:
            width = 150
            sys.stderr.write("\r" + text[:width].ljust(width) + ("\n" if final else ""))
        else:
            sys.stderr.write(text + "\n")
        sys.stderr.flush()

    def finish(self):
        self.done.set()
        self.thread.join()
        self.show(final=True)


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Run fairsched's benchmarks (--config=opt) in interleaved rounds and "
                    "write markdown reports with tables and PNG plots.")
    parser.add_argument("--all", action="store_true",
                        help="everything: every binary, the hot path with the Tokio and Go "
                             "peers, echo, savegame; rewrites bench/results/ and README.md")
    parser.add_argument("--echo", action="store_true",
                        help="also record bench/io/echo_bench.sh into json/io/echo/ (about 7 min "
                             "at 5 rounds), with --all or after the binaries chosen")
    parser.add_argument("--hot-path-before", metavar="TREE", default=None,
                        help="with --all: a checkout of an older revision whose fairsched rows "
                             "the hot-path recording runs next to the current ones "
                             "(record_hot_path.sh's BEFORE_TREE)")
    parser.add_argument("--quick", action="store_true",
                        help="smoke test: 1 round, --benchmark_min_time=0.01; writes to "
                             "/tmp/fairsched_bench_quick unless --out is given (never commit)")
    parser.add_argument("--areas", default="",
                        help="comma-separated folders under bench/ (default: all)")
    parser.add_argument("--binaries", default="",
                        help="comma-separated labels (//bench/queues:mpsc_queue_bench) or names")
    parser.add_argument("--repetitions", type=int, default=5,
                        help="interleaved rounds, one repetition of every binary each "
                             "(default 5)")
    parser.add_argument("--min-time", type=float, default=None,
                        help="--benchmark_min_time in seconds (default: the plan's, 0.05)")
    parser.add_argument("--from-json", metavar="DIR",
                        help="do not run anything: render from DIR (bench/results/json)")
    parser.add_argument("--out", default=None,
                        help="output folder for report.md, plots/ and json/ "
                             "(default: bench/results in the workspace, which also rewrites "
                             "the generated blocks of README.md)")
    parser.add_argument("--sources", default=None, metavar="DIR",
                        help="with --from-json: the source tree whose bench/ names the current "
                             "benchmarks (default: the workspace this tool is in)")
    parser.add_argument("--readme", default=None,
                        help="with --from-json: also rewrite this file's perf block")
    parser.add_argument("--no-plots", action="store_true", help="tables only")
    parser.add_argument("--note", default=None,
                        help="a sentence printed under the report's title, e.g. how quiet the "
                             "machine was (kept in json/meta.json for later re-renders)")
    args = parser.parse_args(argv)
    if args.repetitions < 1:
        parser.error("--repetitions must be at least 1")
    if args.quick and args.out is None and not args.from_json:
        # A smoke test must never overwrite the recorded results.
        args.out = os.path.join(tempfile.gettempdir(), "fairsched_bench_quick")
        print(f"bench_report: --quick writes to {args.out}", file=sys.stderr)

    plot = not args.no_plots
    if plot:
        try:
            import_pyplot()
        except ImportError:
            # The Debian package lives in /usr/bin/python3's path; another python3 on PATH
            # (pyenv, a venv) does not see it. Retry with Debian's interpreter once.
            if os.path.exists(DEBIAN_PYTHON) and os.path.realpath(sys.executable) != \
                    os.path.realpath(DEBIAN_PYTHON) and not os.environ.get("BENCH_REPORT_REEXEC"):
                os.environ["BENCH_REPORT_REEXEC"] = "1"
                os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON, os.path.abspath(__file__)] +
                         (sys.argv[1:] if argv is None else list(argv)))
            raise SystemExit("bench_report: " + INSTALL_HINT + " Or pass --no-plots.")

    if args.from_json:
        out_dir = args.out or os.path.normpath(os.path.join(args.from_json, ".."))
        root = args.sources
        if root is None:
            try:
                root = workspace_root()
            except SystemExit:
                root = None  # a copy of the tool outside the workspace: no source check
        plots = render(args.from_json, out_dir, plot, args.note, readme=args.readme,
                       sources_root=root)
        print(f"bench_report: wrote {os.path.join(out_dir, 'report.md')} and "
              f"{len(plots)} plots", file=sys.stderr)
        return 0

    root = workspace_root()
    try:
        from tools.bench_report import record
    except ImportError:  # run as a script
        import record
    if args.all:
        return record.record_all(sys.modules[__name__], root, args)
    out_dir = args.out or os.path.join(root, "bench", "results")
    areas = [a for a in args.areas.split(",") if a]
    binaries = [b for b in args.binaries.split(",") if b]
    targets = find_targets(root, areas, binaries)
    if not targets:
        raise SystemExit("bench_report: no benchmark binaries matched")
    steps = record.steps_for(targets)
    reps = 1 if args.quick else args.repetitions
    print("\n".join(record.time_plan(steps, reps, False, False, args.echo)[0]), file=sys.stderr)
    bazel(root, ["build", "--config=opt"] + targets, capture=False)
    json_dir = os.path.join(out_dir, "json")
    commands, failed = record.run_rounds(sys.modules[__name__], root, steps, reps,
                                         0.01 if args.quick else args.min_time, json_dir)
    if args.echo:
        record.record_echo(root, json_dir, reps, failed)
    record.write_meta(sys.modules[__name__], root, json_dir, targets, commands, args.note)
    readme = os.path.join(root, "README.md") if args.out is None else None
    plots = render(json_dir, out_dir, plot, args.note, readme=readme, sources_root=root)
    print(f"bench_report: wrote {os.path.join(out_dir, 'report.md')} and {len(plots)} plots",
          file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
