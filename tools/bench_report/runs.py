#!/usr/bin/env python3
"""runs: the compact store of raw benchmark results, one JSON line per run.

A recording keeps its runs in one file, RECORDING_DIR/runs.jsonl (RUNS_FILE). Each line is
one run's whole output, minified: the JSON object the tool wrote (Google Benchmark's
{"context": ..., "benchmarks": [...]}, or the Tokio and Go programs' same format) with one
key added in front, "run": the run's name, which is the file name the run would have had on
its own without ".json" (`sched_bench_r3`, `yield_bench_before_r1`, `lifecycle_after`). The
values are the tool's, unchanged; only the whitespace and the number spelling (1.0e+06 ->
1000000.0) differ from the tool's own file.

The record scripts run a binary into a temporary file and append it here (`append`, or the
command line below), so nothing else in the tree changes per run. The report generators
read a recording with `read_dir` (or one run with `load`).

Command line (from the workspace root):
  tools/bench_report/runs.py append RUNS.jsonl FILE.json...   one line per file, named after
                                                              it (<name>.json -> "run": name)
  tools/bench_report/runs.py unpack RUNS.jsonl OUT_DIR        each run back as OUT_DIR/<run>.json
  tools/bench_report/runs.py list RUNS.jsonl                  the run names, one a line
"""

import json
import os
import sys

RUNS_FILE = "runs.jsonl"
RUN_KEY = "run"


class RunsError(Exception):
    """A line that is not a run, a run name used twice, a run spec that names nothing."""


def line(run, data):
    """The one-line form of one run: {"run": run, ...data}, minified, no newline."""
    if not isinstance(data, dict):
        raise RunsError(f"{run}: a run is a JSON object, not {type(data).__name__}")
    if RUN_KEY in data:
        raise RunsError(f"{run}: the run's own JSON already has a {RUN_KEY!r} key")
    return json.dumps({RUN_KEY: run, **data}, separators=(",", ":"))


def append(path, run, data):
    """Appends one run to the .jsonl file at `path` (created with its folder if needed)."""
    text = line(run, data)
    folder = os.path.dirname(path)
    if folder:
        os.makedirs(folder, exist_ok=True)
    with open(path, "a") as f:
        f.write(text + "\n")


def append_files(path, files):
    """Appends each JSON file in `files` as one run named after the file (without .json)."""
    for name in files:
        with open(name) as f:
            data = json.load(f)
        run = os.path.basename(name)
        append(path, run[:-len(".json")] if run.endswith(".json") else run, data)


def read(path):
    """[(run, data)] of one .jsonl file, in line order."""
    out = []
    with open(path) as f:
        for number, text in enumerate(f, 1):
            if not text.strip():
                continue
            try:
                data = json.loads(text)
            except json.JSONDecodeError as e:
                raise RunsError(f"{path}:{number}: {e}") from None
            if not isinstance(data, dict) or not isinstance(data.get(RUN_KEY), str):
                raise RunsError(f"{path}:{number}: not a run (no {RUN_KEY!r} name)")
            out.append((data.pop(RUN_KEY), data))
    return out


def read_dir(folder):
    """[(run, data)] of a recording folder, sorted by run name: the lines of its .jsonl
    files, and any loose <run>.json files (a recording not packed yet; meta.json, which
    describes the recording, is not a run). A name found twice is an error."""
    runs = []
    for name in sorted(os.listdir(folder)):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            continue
        if name.endswith(".jsonl"):
            runs += read(path)
        elif name.endswith(".json") and name != "meta.json":
            with open(path) as f:
                runs.append((name[:-len(".json")], json.load(f)))
    seen = set()
    for run, _ in runs:
        if run in seen:
            raise RunsError(f"{folder}: the run {run!r} is there twice")
        seen.add(run)
    return sorted(runs, key=lambda r: r[0])


def load(spec):
    """One run's data. `spec` is RUNS.jsonl:RUN (a run of a compact file) or a plain JSON
    file."""
    path, sep, run = spec.rpartition(":")
    if sep and path.endswith(".jsonl"):
        for name, data in read(path):
            if name == run:
                return data
        raise RunsError(f"{path} has no run {run!r}")
    with open(spec) as f:
        return json.load(f)


def unpack(path, out_dir):
    """Writes every run of `path` back as out_dir/<run>.json. Returns the paths written."""
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for run, data in read(path):
        target = os.path.join(out_dir, run + ".json")
        with open(target, "w") as f:
            json.dump(data, f, indent=1)
            f.write("\n")
        written.append(target)
    return written


def main(argv):
    usage = __doc__.split("Command line", 1)[1]
    if len(argv) < 2 or argv[0] not in ("append", "unpack", "list"):
        sys.stderr.write("usage" + usage)
        return 2
    try:
        if argv[0] == "append":
            append_files(argv[1], argv[2:])
        elif argv[0] == "unpack" and len(argv) == 3:
            unpack(argv[1], argv[2])
        elif argv[0] == "list":
            for run, _ in read(argv[1]):
                print(run)
        else:
            sys.stderr.write("usage" + usage)
            return 2
    except (OSError, ValueError, RunsError) as e:
        sys.stderr.write(f"runs: {e}\n")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
