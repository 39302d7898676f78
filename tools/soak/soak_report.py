#!/usr/bin/env python3
"""soak_report: checks a soak run's raw file (tools/soak/soak.cc) and plots it.

    soak_report.py RAW.jsonl [--png PLOT.png] [--readme README.md]

Prints a summary and the verdict of the pass rules; exits 0 if every rule holds, 1 if one
fails, 2 if the file cannot be read. The rules (docs/testing.md, "Soak"):
  - the run finished: the file ends with the "final" sample, taken after the load drained;
  - exactly once, in the final sample: tasks posted == run, coroutine values sent ==
    received, echo frames sent == echoed, kv requests == answers, and every lost,
    duplicated, wrong or early counter is 0;
  - no growth after warm-up: over the samples after the warm-up fraction, the minimum of
    the last third minus the minimum of the first third stays within GROWTH_TOLERANCE for
    each gauge (minima, because connections, rounds and IO come and go above a baseline
    that a leak raises). RSS is not judged in a sanitizer build (the sanitizer's allocator
    and quarantine own the memory there). coroutines_between_rounds is only known once a
    coroutine round has ended: if that comes after the warm-up, it is judged from there.
With --readme the sentence between <!-- soak:begin --> and <!-- soak:end --> in that file is
rewritten from the raw file (the run's length, load, totals, flat gauges and verdict) and
names the plot; nothing else in the file changes.
With --png the plot goes there (needs matplotlib: Debian's python3-matplotlib, which
./bazelw installs; the script re-runs itself with /usr/bin/python3 when the python3 on the
PATH cannot import it).
"""

import argparse
import json
import os
import sys
import textwrap

try:
    from tools.bench_report import blocks
except ImportError:  # run as a script: the workspace root is three folders up
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__)))))
    from tools.bench_report import blocks

DEBIAN_PYTHON = "/usr/bin/python3"

# (total, done, wrong...) triples that must balance in the final sample.
BALANCES = [
    ("tasks", "task_posted", "task_ran", ["task_duplicated", "task_early"]),
    ("coroutine values", "coro_sent", "coro_received", ["coro_lost", "coro_duplicated"]),
    ("echo frames", "echo_sent", "echo_echoed", ["echo_lost", "echo_duplicated"]),
    ("kv requests", "kv_requests", "kv_answers", ["kv_lost", "kv_wrong"]),
]


# What an hour-long run should reach (issue 34): the README sentence says whether it did.
GOAL_TASK_RUNS = 1e9
GOAL_SOCKET_ANSWERS = 1e8


def rss_tolerance(baseline_kb):
    """RSS may grow by 10% of its post-warm-up baseline or 4 MiB, whichever is more."""
    return max(4096, baseline_kb // 10)


# gauge -> allowed growth (a number, or a function of the baseline).
GROWTH_TOLERANCE = {
    "rss_kb": rss_tolerance,
    "fds": 3,
    "coroutines_between_rounds": 2,
    "io_ops": 4,
    "open_connections": 4,
}


def read_raw(path):
    header, samples, final = {}, [], None
    with open(path, encoding="utf-8") as raw:
        for number, line in enumerate(raw, 1):
            line = line.strip()
            if not line:
                continue
            try:
                record = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValueError(f"{path}:{number}: not JSON ({error})") from None
            if "header" in record:
                header = record["header"]
                continue
            record["open_connections"] = record["echo_open"] + record["kv_open"]
            if record.get("phase") == "final":
                final = record
            else:
                samples.append(record)
    return header, samples, final


def check_balances(final):
    failures, lines = [], []
    for name, total, done, wrong in BALANCES:
        bad = {key: final[key] for key in wrong if final[key] != 0}
        ok = final[total] == final[done] and not bad
        lines.append(f"  {name}: {final[total]} sent, {final[done]} done"
                     + (f", {bad}" if bad else "") + ("" if ok else "  <-- FAIL"))
        if not ok:
            failures.append(f"{name} do not balance: {final[total]} vs {final[done]} {bad}")
    return failures, lines


def check_growth(header, samples):
    """Returns (failures, lines, warmup_end_seconds)."""
    seconds = float(header.get("seconds", samples[-1]["t"] if samples else 0))
    warmup_end = seconds * float(header.get("warmup", 0.2))
    after = [s for s in samples if s["t"] >= warmup_end]
    if len(after) < 3:
        return ([f"only {len(after)} samples after warm-up (need 3): "
                 "run longer or sample more often"], [], warmup_end)
    failures, lines = [], []
    for gauge, tolerance in GROWTH_TOLERANCE.items():
        if gauge == "rss_kb" and header.get("sanitizer", "none") != "none":
            lines.append(f"  {gauge}: not judged ({header['sanitizer']} build)")
            continue
        judged = after
        if gauge == "coroutines_between_rounds":
            # -1 until the first coroutine round ends. A slow build (a sanitizer) may end it
            # after the warm-up: then this gauge's own warm-up lasts until that round end.
            judged = [s for s in after if s[gauge] >= 0]
            if len(judged) < 3:
                lines.append(f"  {gauge}: only {len(judged)} samples after the first round "
                             "ended (need 3); not judged")
                continue
        third = max(1, len(judged) // 3)
        first, last = judged[:third], judged[-third:]
        values = [s[gauge] for s in judged]
        base = min(s[gauge] for s in first)
        end = min(s[gauge] for s in last)
        allowed = tolerance(base) if callable(tolerance) else tolerance
        grew = end - base
        verdict = "ok" if grew <= allowed else "GREW  <-- FAIL"
        lines.append(f"  {gauge}: {base} -> {end} (growth {grew}, allowed {allowed}; "
                     f"max {max(values)}) {verdict}")
        if grew > allowed:
            failures.append(f"{gauge} grew after warm-up: {base} -> {end} (allowed {allowed})")
    return failures, lines, warmup_end


def load_range(samples):
    loads = [s["load1"] for s in samples if s.get("load1", -1) >= 0]
    return f"{min(loads):.1f}-{max(loads):.1f}" if loads else "unknown"


def readme_sentence(raw_path, png_path, header, samples, final, warmup_end, balanced, verdict):
    """One sentence for the README, every figure read from the raw file (`warmup_end` and
    `balanced` are what check_growth and check_balances found)."""
    minutes = float(header.get("seconds", 0)) / 60
    after = [s for s in samples if s["t"] >= warmup_end]

    def span(key, scale=1, unit=""):
        values = [s[key] for s in after]
        if not values:
            return "n/a (no sample after warm-up)"
        if scale == 1:
            return f"{min(values)}-{max(values)}{unit}"
        return f"{min(values) / scale:.1f}-{max(values) / scale:.1f}{unit}"

    text = (f"Soak on this machine ({header.get('cpus', '?')} CPUs, 1-minute load average "
            f"{load_range(samples)} during the run; figures by `tools/soak/soak_report.py` from "
            f"`{raw_path}`): {minutes:g} minutes of mixed load on {header.get('workers', '?')} "
            f"workers ran ")
    if final:
        text += (f"{final['task_ran']:,} tasks, {final['coro_received']:,} coroutine values, "
                 f"{final['echo_echoed']:,} echo frames and {final['kv_answers']:,} kv answers, "
                 + ("none lost or duplicated" if balanced else "NOT all exactly once") +
                 f", and met {final['hostile_connections']:,} hostile "
                 f"connections ({final['hostile_unexpected']} answered otherwise than "
                 f"documented); ")
        if minutes >= 60:
            tasks_met = final["task_ran"] >= GOAL_TASK_RUNS
            socket_met = final["echo_echoed"] + final["kv_answers"] >= GOAL_SOCKET_ANSWERS
            text += (f"the hour's goals of {GOAL_TASK_RUNS:,.0f} task runs and "
                     f"{GOAL_SOCKET_ANSWERS:,.0f} socket answers were "
                     + ("both met" if tasks_met and socket_met else
                        "met for tasks only" if tasks_met else
                        "met for socket answers only" if socket_met else "not met") + "; ")
    text += (f"after warm-up RSS stayed at {span('rss_kb', 1024, ' MiB')}, open fds at "
             f"{span('fds')} and IO operations in flight at {span('io_ops')}: **{verdict}**."
             f"\n\n![soak: gauges and rates over the run]({png_path})")
    return text


def rates(samples, key):
    times, values = [], []
    for before, now in zip(samples, samples[1:]):
        span = now["t"] - before["t"]
        if span > 0:
            times.append(now["t"])
            values.append((now[key] - before[key]) / span)
    return times, values


def plot(path, header, samples, final, warmup_end, verdict):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    minutes = [s["t"] / 60 for s in samples]
    figure, axes = plt.subplots(2, 3, figsize=(15, 8))
    panels = [
        (axes[0][0], "RSS (MiB)", [("rss", [s["rss_kb"] / 1024 for s in samples])]),
        (axes[0][1], "open fds", [("fds", [s["fds"] for s in samples])]),
        (axes[0][2], "live objects", [
            ("coroutines between rounds",
             [max(0, s["coroutines_between_rounds"]) for s in samples]),
            ("IO operations", [s["io_ops"] for s in samples]),
            ("open connections", [s["open_connections"] for s in samples]),
        ]),
        (axes[1][2], "lost + duplicated (cumulative)", [
            (name, [sum(s[k] for k in wrong) for s in samples])
            for name, _, _, wrong in BALANCES
        ]),
    ]
    for axis, title, series in panels:
        for label, values in series:
            axis.plot(minutes, values, label=label, marker=".")
        axis.set_title(title)
        if len(series) > 1:
            axis.legend(fontsize=8)
    for axis, title, keys in [
        (axes[1][0], "task runs per second", ["task_ran"]),
        (axes[1][1], "socket answers per second", ["echo_echoed", "kv_answers"]),
    ]:
        for key in keys:
            times, values = rates(samples, key)
            axis.plot([t / 60 for t in times], values, label=key, marker=".")
        axis.set_title(title)
        if len(keys) > 1:
            axis.legend(fontsize=8)
    for row in axes:
        for axis in row:
            axis.axvline(warmup_end / 60, color="grey", linestyle="--", linewidth=1)
            axis.set_xlabel("minutes (dashed: end of warm-up)")
            axis.set_ylim(bottom=0)
    totals = ""
    if final:
        totals = (f"{final['task_ran']:,} task runs, "
                  f"{final['echo_echoed'] + final['kv_answers']:,} socket answers")
    context = (f"1-minute load average during the run {load_range(samples)} "
               f"(machine: {header.get('cpus', '?')} CPUs). {header.get('note', '')}")
    figure.suptitle(f"soak {header.get('seconds', '?')} s, {totals}: {verdict}\n"
                    + "\n".join(textwrap.wrap(context, 160)), fontsize=10)
    figure.tight_layout()
    figure.savefig(path, dpi=80)
    plt.close(figure)


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[1])
    parser.add_argument("raw")
    parser.add_argument("--png", help="write the plot here")
    parser.add_argument("--readme", help="rewrite the soak sentence of this README")
    args = parser.parse_args(argv)
    if args.png:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            if os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON) and \
                    os.path.exists(DEBIAN_PYTHON):
                os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON, os.path.abspath(__file__)] + argv)
            print("soak_report: matplotlib is missing (Debian: apt-get install python3-matplotlib)",
                  file=sys.stderr)
            return 2
    try:
        header, samples, final = read_raw(args.raw)
    except (OSError, ValueError, KeyError) as error:
        print(f"soak_report: cannot read {args.raw}: {error}", file=sys.stderr)
        return 2
    failures, lines, balance_failures = [], [], []
    if final is None:
        failures.append("no final sample: the run did not finish (crashed or was stopped)")
    else:
        balance_failures, balance_lines = check_balances(final)
        failures += balance_failures
        lines += ["exactly once (final sample, after the drain):"] + balance_lines
    growth_failures, growth_lines, warmup_end = check_growth(header, samples)
    failures += growth_failures
    lines += [f"growth after warm-up ({warmup_end:.0f} s), min of last third - min of first third:"]
    lines += growth_lines
    verdict = "PASS" if not failures else "FAIL"
    print(f"soak: {args.raw}: {len(samples)} samples over {header.get('seconds', '?')} s, "
          f"load average at start {header.get('loadavg_at_start', '?')}, "
          f"during the run {load_range(samples)}")
    if final:
        print(f"  {final['task_ran']:,} task runs, {final['coro_received']:,} coroutine values, "
              f"{final['echo_echoed']:,} echo frames, {final['kv_answers']:,} kv answers, "
              f"{final['hostile_connections']:,} hostile connections "
              f"({final['hostile_unexpected']} answered otherwise than documented)")
    print("\n".join(lines))
    for failure in failures:
        print(f"FAIL: {failure}")
    print(f"soak: {verdict}")
    if args.png and samples:
        plot(args.png, header, samples, final, warmup_end, verdict)
        print(f"soak: plot {args.png}")
    if args.readme:
        png = args.png or os.path.join(os.path.dirname(args.raw), "soak.png")
        try:
            blocks.rewrite_file(args.readme, {"soak": [readme_sentence(
                args.raw, png, header, samples, final, warmup_end, not balance_failures,
                verdict)]})
        except blocks.BlockError as error:
            begin, end = blocks.markers("soak")
            print(f"soak_report: {args.readme} needs the markers {begin} and {end}, each once "
                  f"and in that order ({error})", file=sys.stderr)
            return 2
        except OSError as error:
            print(f"soak_report: {error}", file=sys.stderr)
            return 2
        print(f"soak: sentence written to {args.readme}")
    return 0 if not failures else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
