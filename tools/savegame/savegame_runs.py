"""Shared by the savegame recording and report scripts (sweep.py, connection_sweep.py,
closed_loop.py, plot_open_loop.py, report.py): running //examples:savegame once and
appending its JSON record to the folder's runs.jsonl, the one-line description of a run,
the alternating run order, the plan's time estimate, and reading records back (median,
min-max, load-average range).

A recording folder (closed_loop/, connections/, open_loop/) keeps its runs in
FOLDER/runs.jsonl, one line per run, in the format of tools/bench_report/runs.py: the
record the job wrote with --json, named after the run (`00-fairsched`,
`fairsched-rate4000-round0`). The folder's other files (plan.json, summary.json,
summary.txt, the PNGs) stay as the scripts write them."""

import json
import os
import statistics
import subprocess
import sys
import tempfile
import time

try:
    from tools.bench_report import runs
except ImportError:  # run as a script: tools/bench_report/runs.py beside this folder
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir,
                                    "bench_report"))
    import runs

RECORD_KIND = "savegame-run/1"


def new_runs_file(directory):
    """Creates `directory` if needed and removes the runs.jsonl of an earlier recording
    there (a sweep replaces its folder's runs). Returns the path of the runs.jsonl."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, runs.RUNS_FILE)
    if os.path.exists(path):
        os.remove(path)
    return path


def alternate(items, step):
    """`items` in order on even steps, reversed on odd ones (A B, B A, A B, ...)."""
    return list(items) if step % 2 == 0 else list(reversed(items))


def run_once(binary, runs_path, run, flags):
    """Runs the job with `flags` and --json into a temporary file, and appends the record to
    `runs_path` as the run named `run`. Returns (record or None, error text, seconds). A run
    whose check fails still has a record (it says so)."""
    with tempfile.TemporaryDirectory(prefix="savegame_run_") as scratch:
        path = os.path.join(scratch, run + ".json")
        began = time.monotonic()
        completed = subprocess.run([binary] + flags + ["--json=" + path],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                   text=True)
        seconds = time.monotonic() - began
        if not os.path.exists(path):
            return None, "no record (exit %d): %s" % (completed.returncode,
                                                      completed.stderr.strip()), seconds
        with open(path) as f:
            record = json.load(f)
    runs.append(runs_path, run, record)
    return record, "", seconds


def run_and_print(binary, runs_path, run, flags, head, details=None):
    """run_once, then one line: `head`, describe(record), details(record) if given, and the
    run's seconds. True when the run left a record whose check passed."""
    record, error, seconds = run_once(binary, runs_path, run, flags)
    if record is None:
        print(head + error, flush=True)
        return False
    extra = "  " + details(record) if details else ""
    print("%s%s%s  (%.1f s)" % (head, describe(record), extra, seconds), flush=True)
    return record["check"]["passed"]


def describe(record):
    """One line: req/s, percentiles, errors, load, check."""
    latency = record["latency_ms"]["acknowledged"]
    check = record["check"]

    def ms(value):
        return "-" if value is None else "%.2f" % value

    return ("%8.0f req/s  p50 %s  p99 %s  p999 %s ms  errors %d  load %.2f  check %s" %
            (record["requests_per_second"], ms(latency["p50"]), ms(latency["p99"]),
             ms(latency["p999"]), errors(record), record["loadavg_before"]["1min"],
             "ok" if check["passed"] else "FAILED: " + check["message"]))


def errors(record):
    """Requests sent that were not acknowledged (error replies and no reply)."""
    return record["sent"] - record["acknowledged"]


def print_estimate(what, runs, seconds_per_run):
    """The plan line record_all.sh prints before it starts."""
    total = runs * seconds_per_run
    print("%s: %d runs x ~%.1f s = ~%.0f s (%.1f min)" %
          (what, runs, seconds_per_run, total, total / 60.0), flush=True)


def load_records(directory):
    """Every savegame run record of the recording folder `directory`, sorted by run name:
    the lines of its runs.jsonl, and loose <run>.json records (`runs.py unpack` gives them
    back). Files that are no run record (plan.json, summary.json) are skipped."""
    return [record for _, record in runs.read_dir(directory)
            if isinstance(record, dict) and record.get("record") == RECORD_KIND]


def load_range(records):
    """The 1-minute load averages before and after the runs: (lowest, highest) or None."""
    loads = [record[key]["1min"] for record in records
             for key in ("loadavg_before", "loadavg_after")
             if isinstance(record.get(key), dict) and record[key].get("1min") is not None]
    return (min(loads), max(loads)) if loads else None


def spread(values):
    """{"median", "min", "max", "n"} of the values that are not None, or None."""
    values = [v for v in values if v is not None]
    if not values:
        return None
    return {"median": statistics.median(values), "min": min(values), "max": max(values),
            "n": len(values)}


def role_seconds(record, role, key="cpu_seconds"):
    """The seconds of every thread of `role` ("server", "store", "client"), by name order."""
    return [t[key] for t in record["threads"] if t["role"] == role]


DEBIAN_PYTHON = "/usr/bin/python3"


def ensure_matplotlib(script, argv):
    """Returns when matplotlib imports; otherwise re-runs `script` with Debian's python3
    (which has python3-matplotlib) or exits with how to install it."""
    try:
        import matplotlib  # noqa: F401
        return
    except ImportError:
        pass
    if os.path.realpath(sys.executable) != os.path.realpath(DEBIAN_PYTHON) and \
            os.path.exists(DEBIAN_PYTHON):
        os.execv(DEBIAN_PYTHON, [DEBIAN_PYTHON, os.path.abspath(script)] + argv)
    sys.exit("matplotlib is missing. On Debian: sudo apt-get install python3-matplotlib")
