#!/usr/bin/env python3
"""bench_report: runs fairsched's Google Benchmark binaries and renders a report.

Builds the benchmark binaries with --config=opt, runs them one at a time (showing which one
runs and for how long), keeps their JSON output, and writes a markdown report with one table
per benchmark family (fairsched against its trivial version and the peers, with ratios) and
PNG plots: throughput against the thread count, and latency percentiles where a benchmark
reports them as counters (p50_ns, p99_ns, ... or p50_us, ...).

Usage, from the workspace root:
  tools/bench_report/bench_report.py                        every benchmark binary under //bench
  tools/bench_report/bench_report.py --areas queues,sched   only //bench/queues and //bench/sched
  tools/bench_report/bench_report.py --binaries //bench/sync:signal_bench --repetitions 3
  tools/bench_report/bench_report.py --from-json bench/results/json    re-render only, no run

Output (--out, default bench/results): report.md, plots/*.png, and in run mode json/ with
each binary's JSON and console output plus meta.json (machine, commands, load). Running
--from-json on that json/ folder renders the same report again.
"""

import argparse
import json
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import threading
import time

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
        "baseline": ["fairsched_trivial_policy", "trivial_sched"],
        "peers": ["tbb_arena", "asio_pool"],
    },
    "signal_bench": {"subject": ["fairsched"], "baseline": ["textbook"], "peers": []},
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

# Name parameters that mean "how many threads take part": the x axis of tables and plots.
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
    words = [p for p in parts if ":" not in p]
    params = [tuple(p.split(":", 1)) for p in parts if ":" in p]
    x_name, x = "threads", threads
    family_params = []
    for key, value in params:
        if key in THREAD_PARAMS and x_name == "threads" and key != "threads":
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


def load_results(path):
    """Reads one benchmark JSON file. Returns (context, results)."""
    with open(path) as f:
        data = json.load(f)
    binary = os.path.splitext(os.path.basename(path))[0]
    entries = data.get("benchmarks", [])
    repeated = any(e.get("run_type") == "aggregate" for e in entries)
    by_run = {}
    order = []
    for e in entries:
        run = e.get("run_name") or e["name"]
        if run not in by_run:
            by_run[run] = {}
            order.append(run)
        kind = e.get("aggregate_name", "single") if e.get("run_type") == "aggregate" else "single"
        if repeated and kind == "single":
            kind = "repetition"  # --benchmark_report_aggregates_only was not given
        by_run[run][kind] = e
    results = []
    for run in order:
        kinds = by_run[run]
        # A run that failed has no aggregates, only its repetition entries (with the error).
        main = (kinds.get("median") or kinds.get("single") or kinds.get("mean") or
                kinds.get("repetition"))
        if main is None:
            continue
        family, contestant, x_name, x = parse_name(run, main.get("threads", 1))
        metrics = {}
        counters = {}
        if "items_per_second" in main:
            metrics["items_per_second"] = main["items_per_second"]
        metrics["real_time"] = main.get("real_time")
        time_unit = main.get("time_unit", "ns")
        for key, value in main.items():
            if key in STANDARD_KEYS or not isinstance(value, (int, float)):
                continue
            if PERCENTILE_RE.match(key):
                metrics[key] = value
            elif PERCENTILE_US_RE.match(key):
                metrics[key[:-3] + "_ns"] = value * 1000  # one unit inside the report
            elif key == x_name or (x_name == "arg" and key in THREAD_PARAMS and value == x):
                x_name = key  # the counter names what the numeric argument means
            else:
                counters[key] = value
        cv = {}
        if "cv" in kinds:
            cv = {k: kinds["cv"][k] for k in metrics
                  if isinstance(kinds["cv"].get(k), (int, float))}
        elif "mean" in kinds and "stddev" in kinds:
            for k in metrics:
                mean, sd = kinds["mean"].get(k), kinds["stddev"].get(k)
                if isinstance(mean, (int, float)) and isinstance(sd, (int, float)) and mean:
                    cv[k] = sd / mean
        error = main.get("error_message") if main.get("error_occurred") else None
        results.append({
            "binary": binary, "run": run, "family": family, "contestant": contestant,
            "x_name": x_name, "x": x, "metrics": metrics, "counters": counters, "cv": cv,
            "time_unit": time_unit, "error": error,
            "repetitions": main.get("repetitions", 1) if repeated else 1,
        })
    return data.get("context", {}), results


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


def fmt_cv(result, metric):
    cv = result["cv"].get(metric)
    return f" ±{cv * 100:.0f}%" if cv is not None else ""


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
        m = result["metrics"]["items_per_second"]
        return f"{m / 1e6:.2f}{fmt_cv(result, 'items_per_second')}"
    if kind == "latency":
        return " / ".join(f"{result['metrics'][k] / 1000:.1f}" for k in percentiles_of(result))
    value = result["metrics"]["real_time"]
    return f"{value:.3g} {result['time_unit']}{fmt_cv(result, 'real_time')}"


def better_ratio(family, subject, other):
    """How many times better `subject` is than `other` (> 1: subject wins), as text."""
    if subject is None or other is None or subject["error"] or other["error"]:
        return None
    kind = family.kind()
    if kind == "throughput":
        a, b = subject["metrics"]["items_per_second"], other["metrics"]["items_per_second"]
        return a / b if b else None
    if kind == "latency":
        keys = [k for k in percentiles_of(subject) if k in other["metrics"] and k != "min_ns"]
        ratios = [other["metrics"][k] / subject["metrics"][k] for k in keys
                  if subject["metrics"][k] > 0]
        return ratios if ratios else None
    a, b = subject["metrics"]["real_time"], other["metrics"]["real_time"]
    return b / a if a else None


def fmt_ratio(ratio):
    if ratio is None:
        return "-"
    if isinstance(ratio, list):
        return " / ".join(f"{r:.2f}x" for r in ratio)
    return f"{ratio:.2f}x"


def unit_line(family):
    kind = family.kind()
    if kind == "throughput":
        return "M items/s (median; ± is the coefficient of variation over the repetitions)"
    if kind == "latency":
        sample = next(r for row in family.rows.values() for r in row.values() if not r["error"])
        return ("microseconds, " + " / ".join(k[:-3] for k in percentiles_of(sample)) +
                " (median over the repetitions; ratios per percentile, min excluded)")
    return "time per iteration (median; lower is better)"


def family_table(family):
    cols = family.columns()
    subject = family.subject()
    baselines = [c for c in cols if role_of(family.binary, c) == "baseline"]
    peers = [c for c in cols if role_of(family.binary, c) == "peers"]
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
                cells.append(fmt_ratio(better_ratio(family, row.get(subject), row.get(others[0]))))
                continue
            # Best peer: the one the subject beats by the least (its ratio is the smallest).
            best = None
            for p in others:
                r = better_ratio(family, row.get(subject), row.get(p))
                if r is None:
                    continue
                key = min(r) if isinstance(r, list) else r
                if best is None or key < best[0]:
                    best = (key, r, p)
            cells.append(f"{fmt_ratio(best[1])} ({best[2]})" if best else "-")
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


def machine_lines(contexts, meta):
    lines = []
    m = meta.get("machine", {})
    if m:
        lines.append(f"- CPU: {m.get('cpu', '?')}, {m.get('nproc', '?')} logical CPUs")
        lines.append(f"- Kernel: {m.get('kernel', '?')}")
    ctx = next(iter(contexts.values()), {})
    if ctx:
        lines.append(f"- Google Benchmark context: {ctx.get('num_cpus', '?')} CPUs at "
                     f"{ctx.get('mhz_per_cpu', '?')} MHz, host `{ctx.get('host_name', '?')}`; "
                     f"its library build type: {ctx.get('library_build_type', '?')} (that is "
                     "Debian's build of the benchmark library, not of the measured code)")
    for binary, ctx in contexts.items():
        load = ctx.get("load_avg")
        load_s = ", ".join(f"{v:.2f}" for v in load) if load else "?"
        extra = meta.get("runs", {}).get(binary, {})
        after = extra.get("load_after")
        took = extra.get("seconds")
        lines.append(f"- `{binary}`: started {ctx.get('date', '?')}, load average at start "
                     f"{load_s}" + (f", after {after}" if after else "") +
                     (f", took {took:.0f} s" if took is not None else ""))
    return lines


def render(json_dir, out_dir, plot=True, note=None):
    """Renders out_dir/report.md (and out_dir/plots/*.png) from json_dir. `note` (or the
    note recorded in json_dir/meta.json) is printed under the title. Returns the list of
    plot files written."""
    files = sorted(f for f in os.listdir(json_dir)
                   if f.endswith(".json") and f != "meta.json")
    if not files:
        raise SystemExit(f"bench_report: no benchmark JSON files in {json_dir}")
    meta = {}
    meta_path = os.path.join(json_dir, "meta.json")
    if os.path.exists(meta_path):
        with open(meta_path) as f:
            meta = json.load(f)
    contexts = {}
    results = []
    for name in files:
        ctx, res = load_results(os.path.join(json_dir, name))
        contexts[os.path.splitext(name)[0]] = ctx
        results.extend(res)
    families = group_families(results)

    plots_dir = os.path.join(out_dir, "plots")
    written = []
    if plot:
        os.makedirs(plots_dir, exist_ok=True)
        for old in os.listdir(plots_dir):
            if old.endswith(".png"):
                os.remove(os.path.join(plots_dir, old))
    reps = sorted({r["repetitions"] for r in results})
    rel_json = os.path.relpath(json_dir, out_dir)
    if rel_json.startswith(".."):  # not below the report: name it as given
        rel_json = json_dir
    # For the re-render command: relative to where the tool runs (the workspace root).
    cwd_json = os.path.relpath(json_dir)
    if cwd_json.startswith(".."):
        cwd_json = os.path.abspath(json_dir)
    out = [
        "# Benchmark report",
        "",
        "Generated by `tools/bench_report/bench_report.py` from the Google Benchmark JSON in "
        f"[`{rel_json}/`]({rel_json}/) ({len(files)} binaries, {len(results)} benchmarks, "
        f"repetitions: {', '.join(map(str, reps))}). Every binary was built with "
        "`--config=opt`. Re-render with `tools/bench_report/bench_report.py --from-json "
        f"{cwd_json}`.",
    ]
    note = note or meta.get("note")
    if note:
        out += ["", "**Note:** " + note]
    out += [
        "",
        "## Machine and load",
        "",
    ] + machine_lines(contexts, meta)
    commands = [run["command"] for b, run in sorted(meta.get("runs", {}).items())
                if b in contexts and "command" in run]
    if commands:
        out += ["", "## Commands", "", "From the workspace root, one binary at a time:", "",
                "```", meta.get("build", "./bazelw build --config=opt <targets>")]
        out += commands + ["```"]
    out += [
        "",
        "## How to read the tables",
        "",
        "One table per benchmark family, one row per thread count (or per argument for",
        "single-threaded benchmarks). Each column is one contestant: the fairsched algorithm",
        "first, then its trivial version (or the default it is an alternative to), then the",
        "peers. Throughput cells are millions of items per second, median over the",
        "repetitions, with the coefficient of variation (stddev / mean) after ±; a cell whose",
        "cv is above ~20% is noise, not a result. Ratio columns say how many times better the",
        "first fairsched contestant is (> 1: fairsched wins): for throughput the quotient of",
        "the items/s, for latency the inverse quotient per percentile. \"best peer\" is the",
        "peer fairsched beats by the least. Latency cells are percentiles in microseconds.",
    ]
    current_binary = None
    for fam in families:
        if fam.binary != current_binary:
            current_binary = fam.binary
            out += ["", f"## {fam.binary}"]
        out += ["", f"### {fam.name}", ""]
        description = next((text for (binary, prefix), text in DESCRIPTIONS.items()
                            if binary == fam.binary and
                            (fam.name == prefix or fam.name.startswith(prefix + " "))), None)
        if description:
            out += [description, ""]
        out += [unit_line(fam), ""]
        out += family_table(fam)
        out += counter_table(fam)
        if plot:
            png = plot_family(fam, plots_dir)
            if png:
                written.append(png)
                out += ["", f"![{fam.binary}: {fam.name}](plots/{os.path.basename(png)})"]
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, "report.md"), "w") as f:
        f.write("\n".join(out) + "\n")
    return written


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


def plot_family(fam, plots_dir):
    """Writes one PNG for the family and returns its path, or None if there is nothing to
    plot (a throughput family measured at a single thread count)."""
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
                # Highest percentile light, lower ones drawn over it darker: one bar shows
                # the spread from the median to the tail.
                for n, v in sorted(zip(keys, values), key=lambda kv: -kv[1]):
                    shade = 0.35 if n == keys[-1] and len(keys) > 1 else 1.0
                    ax.bar(pos, v, width * 0.9, color=color, alpha=shade,
                           label=c if (j == 0 and shade == 1.0) else None)
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
        note = (f"solid: {names[0]}, light: {names[-1]}" if len(names) > 1 else names[0])
        if any("min_ns" in r["metrics"] for row in fam.rows.values() for r in row.values()):
            note += ", black tick: min"
        ax.set_title(f"{fam.binary}: {fam.name}\n({note}; lower is better)", fontsize=10)
    else:
        for i, c in enumerate(cols):
            points = [(x, fam.rows[x][c]) for x in xs
                      if c in fam.rows[x] and not fam.rows[x][c]["error"]]
            if not points:
                continue
            metric = "items_per_second" if kind == "throughput" else "real_time"
            scale = 1e6 if kind == "throughput" else 1
            ys = [r["metrics"][metric] / scale for _, r in points]
            errs = [r["cv"].get(metric, 0) * r["metrics"][metric] / scale for _, r in points]
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
        ax.set_title(f"{fam.binary}: {fam.name}\n(median; error bars: ±1 stddev; "
                     f"{'higher' if kind == 'throughput' else 'lower'} is better)", fontsize=10)
    ax.grid(True, axis="y", alpha=0.3)
    # Below the axes, so it never covers a line or a bar.
    below = -0.16 if kind != "latency" else -0.09
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, below),
              ncol=min(len(cols), 5), frameon=False)
    path = os.path.join(plots_dir, f"{fam.binary}__{slug(fam.name)}.png")
    fig.savefig(path, bbox_inches="tight")
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


def run_binaries(root, targets, args, json_dir):
    os.makedirs(json_dir, exist_ok=True)
    print(f"bench_report: building {len(targets)} binaries with --config=opt", file=sys.stderr)
    bazel(root, ["build", "--config=opt"] + targets, capture=False)
    bin_dir = bazel(root, ["info", "--config=opt", "bazel-bin"]).strip()
    meta = {"runs": {}}
    meta_path = os.path.join(json_dir, "meta.json")
    if os.path.exists(meta_path):  # keep what earlier runs of other binaries recorded
        with open(meta_path) as f:
            meta = json.load(f)
    meta["machine"] = machine()
    if args.note:
        meta["note"] = args.note
    meta["build"] = f"./bazelw build --config=opt {' '.join(targets)}"
    flags = ["--benchmark_out_format=json", f"--benchmark_repetitions={args.repetitions}"]
    if args.repetitions > 1:
        flags.append("--benchmark_report_aggregates_only=true")
    if args.min_time:
        flags.append(f"--benchmark_min_time={args.min_time}")
    if args.filter:
        flags.append(f"--benchmark_filter={args.filter}")
    failed = []
    for i, label in enumerate(targets, 1):
        package, name = label[2:].split(":")
        binary = os.path.join(bin_dir, package, name)
        out_json = os.path.join(json_dir, name + ".json")
        cmd = [binary, f"--benchmark_out={out_json}"] + flags
        command = (f"$(./bazelw info --config=opt bazel-bin)/{package}/{name} " +
                   " ".join(shlex.quote(f) for f in flags) + f" --benchmark_out={name}.json")
        progress = Progress(f"[{i}/{len(targets)}] {label}")
        start = time.monotonic()
        with open(os.path.join(json_dir, name + ".txt"), "w") as console:
            proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                    text=True, bufsize=1)
            for line in proc.stdout:
                console.write(line)
                first = re.sub(r"_(mean|median|stddev|cv)$", "", line.split(" ", 1)[0])
                if "/" in first or first.startswith("BM_"):
                    progress.last = first
            rc = proc.wait()
        progress.finish()
        meta["runs"][name] = {"seconds": time.monotonic() - start, "load_after": loadavg(),
                              "exit_code": rc, "command": command}
        if rc != 0:
            failed.append(label)
            print(f"bench_report: {label} failed (exit {rc}); see {name}.txt", file=sys.stderr)
            if os.path.exists(out_json):
                os.remove(out_json)
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=1)
    return failed


def main(argv=None):
    parser = argparse.ArgumentParser(
        description="Run fairsched's benchmarks (--config=opt) and write a markdown report "
                    "with tables and PNG plots.")
    parser.add_argument("--areas", default="",
                        help="comma-separated folders under bench/ (default: all)")
    parser.add_argument("--binaries", default="",
                        help="comma-separated labels (//bench/queues:mpsc_queue_bench) or names")
    parser.add_argument("--repetitions", type=int, default=5,
                        help="--benchmark_repetitions; the report uses medians (default 5)")
    parser.add_argument("--min-time", type=float, default=None,
                        help="--benchmark_min_time in seconds (default: the library's)")
    parser.add_argument("--filter", default="", help="--benchmark_filter regex")
    parser.add_argument("--from-json", metavar="DIR",
                        help="do not run anything: render the report from DIR/*.json")
    parser.add_argument("--out", default=None,
                        help="output folder for report.md, plots/ and json/ "
                             "(default: bench/results in the workspace)")
    parser.add_argument("--no-plots", action="store_true", help="tables only")
    parser.add_argument("--note", default=None,
                        help="a sentence printed under the report's title, e.g. how quiet the "
                             "machine was (kept in json/meta.json for later re-renders)")
    args = parser.parse_args(argv)

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
        plots = render(args.from_json, out_dir, plot, args.note)
        print(f"bench_report: wrote {os.path.join(out_dir, 'report.md')} and "
              f"{len(plots)} plots", file=sys.stderr)
        return 0

    root = workspace_root()
    out_dir = args.out or os.path.join(root, "bench", "results")
    areas = [a for a in args.areas.split(",") if a]
    binaries = [b for b in args.binaries.split(",") if b]
    targets = find_targets(root, areas, binaries)
    if not targets:
        raise SystemExit("bench_report: no benchmark binaries matched")
    json_dir = os.path.join(out_dir, "json")
    failed = run_binaries(root, targets, args, json_dir)
    plots = render(json_dir, out_dir, plot, args.note)
    print(f"bench_report: wrote {os.path.join(out_dir, 'report.md')} and {len(plots)} plots",
          file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
