#!/usr/bin/env python3
"""mutate: the mutation score of fairsched's checkers (docs/testing.md, "Mutation score").

Applies the mutations of tools/mutate/mutations.json one at a time to a scratch copy of the
repository (never to the tree it runs from), runs each mutation's checkers there with Bazel
and prints a kill table: for each mutation, the checks that failed on it (killed), or
"survived", or "timed out". Every row also goes to a raw results file (one JSON object a
line), from which `--table` renders the table again.

Usage (from anywhere in the repository; tools/mutate/run.sh runs this under nice -n 19):
  mutate.py --list                     the mutations, and whether each still applies
  mutate.py [--subset ci] [--only ID,ID] [--timeout S] [--results FILE]
                                       (--only: those mutations, in that order)
  mutate.py --table FILE               render a results file as the kill table
  mutate.py --apply ID INPUT OUTPUT    write INPUT with mutation ID applied to OUTPUT (the
                                       genrules of tests/explore's mutation_subset_test)

How a run goes:
  1. Every selected mutation's original text must occur exactly `count` times in its file
     (else the list is stale: exit 2 before anything is built).
  2. The scratch copy (--scratch, default /tmp/fairsched-mutate-$UID/<checkout name>) is
     brought up to date with the files git knows in this checkout (tracked, and untracked
     but not ignored). It is kept between runs, so its Bazel output base stays warm.
  3. Baseline: the union of the selected mutations' checkers runs on the unmutated copy. A
     checker that fails there can kill nothing: it is reported and left out of the verdicts.
  4. Per mutation: the file is rewritten, the checkers run (`bazel test --keep_going`,
     seeded-bug tests left out, the whole command bounded by --timeout), the file is
     restored. A check that FAILED is a kill; its test log says whether the explorer found
     a counterexample ("FAILED" count line) or stopped at its schedule cap ("cut short").
     A TIMEOUT is "timed out" unless another check killed the mutation. A build failure
     means the mutation does not compile (reported, never a kill).
  5. tools/model_refs/check_model_refs.py runs on the mutated copy and is reported in its own
     column, never as a kill. Each mutation keeps the original lines as comments
     ("// mutate: was: ...") so the models' quoted code stays findable.
"""

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import time

TOOL_DIR = os.path.dirname(os.path.abspath(__file__))
DEFAULT_LIST = os.path.join(TOOL_DIR, "mutations.json")
RESULT_LINE = re.compile(
    r"^(//\S+)\s+(?:\(cached\) )?(PASSED|FAILED|TIMEOUT|FLAKY|NO STATUS|INCOMPLETE)")
BUILD_FAILED_LINE = re.compile(r"^(//\S+)\s+FAILED TO BUILD")
COUNTEREXAMPLE = re.compile(r"schedules .*, FAILED$", re.MULTILINE)
FAILED_TEST = re.compile(r"^\[  FAILED  \] (\w+\.\w+) \(", re.MULTILINE)
CUT_SHORT = re.compile(r"schedules .*, cut short$", re.MULTILINE)


def repo_root():
    out = subprocess.run(["git", "rev-parse", "--show-toplevel"], cwd=TOOL_DIR,
                         capture_output=True, text=True, check=True)
    return out.stdout.strip()


def load_list(path):
    with open(path) as f:
        data = json.load(f)
    groups = data["groups"]
    mutations = data["mutations"]
    seen = set()
    for m in mutations:
        for key in ("id", "kind", "file", "original", "replacement", "checkers", "expected"):
            if key not in m:
                raise SystemExit("mutate: %s: mutation %r has no %r" % (path, m.get("id"), key))
        if m["id"] in seen:
            raise SystemExit("mutate: %s: duplicate id %s" % (path, m["id"]))
        seen.add(m["id"])
        if m["kind"] not in ("order", "semantic"):
            raise SystemExit("mutate: %s: %s: kind must be order or semantic" % (path, m["id"]))
        for checker in m["checkers"]:
            if not checker.startswith("//") and checker not in groups:
                raise SystemExit("mutate: %s: %s: unknown checker group %r" %
                                 (path, m["id"], checker))
    return groups, mutations


def checker_targets(mutation, groups):
    targets = []
    for checker in mutation["checkers"]:
        for target in ([checker] if checker.startswith("//") else groups[checker]):
            if target not in targets:
                targets.append(target)
    return targets


def apply_mutation(text, mutation):
    """The mutated text, with each replaced line kept as a comment line above the change.

    Raises ValueError when the original does not occur exactly `count` times."""
    original = mutation["original"]
    count = mutation.get("count", 1)
    found = text.count(original)
    if found != count:
        raise ValueError("%s: %r occurs %d times in %s, expected %d" %
                         (mutation["id"], original, found, mutation["file"], count))
    out = []
    pos = 0
    while True:
        index = text.find(original, pos)
        if index < 0:
            break
        line_start = text.rfind("\n", 0, index) + 1
        line_end = text.find("\n", index + len(original) - 1)
        if line_end < 0:
            line_end = len(text)
        quoted = "".join("// mutate: was: %s\n" % line.strip()
                         for line in text[line_start:line_end].split("\n"))
        out.append(text[pos:line_start])
        out.append(quoted)
        out.append(text[line_start:index])
        out.append(mutation["replacement"])
        pos = index + len(original)
    out.append(text[pos:])
    return "".join(out)


def check_applies(root, mutations):
    problems = []
    for m in mutations:
        path = os.path.join(root, m["file"])
        if not os.path.isfile(path):
            problems.append("%s: no file %s" % (m["id"], m["file"]))
            continue
        with open(path) as f:
            try:
                apply_mutation(f.read(), m)
            except ValueError as e:
                problems.append(str(e))
    return problems


def sync_scratch(root, scratch):
    """Makes `scratch` hold exactly git's files of `root` (tracked + untracked, not ignored)."""
    listing = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=root,
                             capture_output=True, check=True).stdout.decode()
    wanted = {p for p in listing.split("\0") if p and os.path.isfile(os.path.join(root, p))}
    os.makedirs(scratch, exist_ok=True)
    for dirpath, dirnames, filenames in os.walk(scratch):
        rel_dir = os.path.relpath(dirpath, scratch)
        dirnames[:] = [d for d in dirnames
                       if not (rel_dir == "." and (d.startswith("bazel-") or d == ".mutate"))]
        for name in filenames:
            rel = os.path.normpath(os.path.join(rel_dir, name))
            if rel not in wanted:
                os.remove(os.path.join(scratch, rel))
    copied = 0
    for rel in sorted(wanted):
        src = os.path.join(root, rel)
        dst = os.path.join(scratch, rel)
        with open(src, "rb") as f:
            data = f.read()
        if os.path.exists(dst):
            with open(dst, "rb") as f:
                if f.read() == data:
                    continue
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        with open(dst, "wb") as f:
            f.write(data)
        shutil.copymode(src, dst)
        copied += 1
    return copied


def run_bazel(scratch, targets, timeout, log_path, disk_cache, test_timeout):
    """Runs the targets' tests in `scratch`; returns (per-target status, timed_out, seconds)."""
    cmd = ["./bazelw", "test", "--keep_going", "--build_tests_only",
           "--test_tag_filters=-seeded,-manual", "--test_output=summary",
           "--test_timeout=%d" % test_timeout, "--disk_cache=" + disk_cache, "--"] + targets
    start = time.time()
    timed_out = False
    with open(log_path, "w") as log:
        log.write("$ %s\n" % " ".join(cmd))
        log.flush()
        proc = subprocess.Popen(cmd, cwd=scratch, stdout=log, stderr=subprocess.STDOUT)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            proc.terminate()
            try:
                proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    seconds = time.time() - start
    status = {}
    with open(log_path, errors="replace") as log:
        for line in log:
            match = BUILD_FAILED_LINE.match(line)
            if match:
                status[match.group(1)] = "BUILD FAILED"
                continue
            match = RESULT_LINE.match(line)
            if match:
                status[match.group(1)] = match.group(2)
    return status, timed_out, seconds


def how_killed(scratch, target):
    """("counterexample", "schedule cap" or "failed", the failed GoogleTest tests), from the
    target's test log."""
    package, name = target[2:].split(":")
    path = os.path.join(scratch, "bazel-testlogs", package, name, "test.log")
    try:
        with open(path, errors="replace") as f:
            log = f.read()
    except OSError:
        return "failed", []
    tests = sorted(set(FAILED_TEST.findall(log)))
    if COUNTEREXAMPLE.search(log):
        return "counterexample", tests
    if CUT_SHORT.search(log):
        return "schedule cap", tests
    return "failed", tests


def model_refs(scratch):
    models = sorted(
        [os.path.join("tla", f) for f in os.listdir(os.path.join(scratch, "tla"))
         if f.endswith(".tla")] +
        [os.path.join("tla", "spin", f) for f in os.listdir(os.path.join(scratch, "tla", "spin"))
         if f.endswith(".pml")])
    proc = subprocess.run(
        [sys.executable, os.path.join("tools", "model_refs", "check_model_refs.py"),
         "--root", scratch] + models, cwd=scratch, capture_output=True, text=True)
    return "pass" if proc.returncode == 0 else "FAIL"


def verdict(row):
    if row["killed_by"]:
        return "killed"
    if row["build_failed"]:
        return "does not build"
    if row["timed_out"]:
        return "timed out"
    return "survived"


def killer_text(killer):
    detail = killer["how"]
    if killer.get("tests"):
        detail += ": " + ", ".join(killer["tests"])
    return "`%s` (%s)" % (killer["target"].replace("//tests/", ""), detail)


def render_table(rows):
    lines = [
        "| mutation | kind | file | verdict | killed by | expected killers | model_refs |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        killers = ", ".join(killer_text(k) for k in row["killed_by"]) or "-"
        if row["timed_out"] and not row["killed_by"]:
            killers = "timed out: " + ", ".join("`%s`" % t for t in row["timed_out"])
        expected = ", ".join("`%s`" % e.replace("//tests/", "") for e in row["expected"]) or "-"
        lines.append("| `%s` | %s | `%s` | %s | %s | %s | %s |" % (
            row["id"], row["kind"], row["file"], verdict(row), killers, expected,
            row["model_refs"]))
    killed = sum(1 for row in rows if row["killed_by"])
    lines.append("")
    lines.append("Killed %d of %d (%s)." % (killed, len(rows), ", ".join(
        "%s %d of %d" % (kind, sum(1 for r in rows if r["kind"] == kind and r["killed_by"]),
                         sum(1 for r in rows if r["kind"] == kind))
        for kind in ("order", "semantic") if any(r["kind"] == kind for r in rows))))
    return "\n".join(lines)


def read_results(path):
    rows = []
    if os.path.exists(path):
        with open(path) as f:
            rows = [json.loads(line) for line in f if line.strip()]
    return rows


def write_results(path, old_rows, new_rows, order):
    """Rows of this run replace the same mutation's older rows; kept in the list's order."""
    by_id = {row["id"]: row for row in old_rows}
    by_id.update({row["id"]: row for row in new_rows})
    rank = {mid: i for i, mid in enumerate(order)}
    rows = sorted(by_id.values(), key=lambda r: rank.get(r["id"], len(rank)))
    with open(path, "w") as f:
        for row in rows:
            f.write(json.dumps(row, sort_keys=True) + "\n")
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--list-file", default=DEFAULT_LIST)
    parser.add_argument("--list", action="store_true", help="list the mutations and exit")
    parser.add_argument("--subset", choices=["all", "ci"], default="all")
    parser.add_argument("--only", default="", help="comma-separated mutation ids")
    parser.add_argument("--timeout", type=int, default=1200,
                        help="bound in seconds on one mutation's build and checks")
    parser.add_argument("--test-timeout", type=int, default=300,
                        help="Bazel's bound on each test in seconds")
    parser.add_argument("--scratch", default="")
    parser.add_argument("--results", default="",
                        help="raw results file (JSON lines); rows of this run replace the "
                             "same ids' rows (default: a new file in the scratch directory)")
    parser.add_argument("--table", default="", help="render this results file and exit")
    parser.add_argument("--apply", nargs=3, metavar=("ID", "INPUT", "OUTPUT"),
                        help="write INPUT with mutation ID applied to OUTPUT and exit")
    parser.add_argument("--keep-server", action="store_true",
                        help="leave the scratch copy's Bazel server running")
    args = parser.parse_args()

    if args.table:
        print(render_table(read_results(args.table)))
        return 0
    if args.apply:
        mutation_id, input_path, output_path = args.apply
        _, mutations = load_list(args.list_file)
        chosen = [m for m in mutations if m["id"] == mutation_id]
        if not chosen:
            raise SystemExit("mutate: unknown mutation id %s" % mutation_id)
        with open(input_path) as f:
            text = f.read()
        try:
            mutated = apply_mutation(text, chosen[0])
        except ValueError as e:
            raise SystemExit("mutate: STALE: %s" % e)
        with open(output_path, "w") as f:
            f.write(mutated)
        return 0

    root = repo_root()
    groups, mutations = load_list(args.list_file)
    order = [m["id"] for m in mutations]
    if args.subset == "ci":
        mutations = [m for m in mutations if m.get("ci")]
    if args.only:
        wanted = args.only.split(",")
        unknown = [w for w in wanted if w not in order]
        if unknown:
            raise SystemExit("mutate: unknown mutation ids: %s" % ", ".join(unknown))
        by_id = {m["id"]: m for m in mutations}
        mutations = [by_id[w] for w in wanted if w in by_id]  # run in the order given

    problems = check_applies(root, mutations)
    if args.list:
        for m in mutations:
            print("%-34s %-8s %-30s %s%s" % (m["id"], m["kind"], m["file"],
                                             ", ".join(m["checkers"]),
                                             "  [ci]" if m.get("ci") else ""))
    for problem in problems:
        print("mutate: STALE: %s" % problem, file=sys.stderr)
    if problems:
        return 2
    if args.list:
        return 0

    name = os.path.basename(root.rstrip("/"))
    scratch = os.path.abspath(args.scratch or "/tmp/fairsched-mutate-%d/%s" % (os.getuid(), name))
    if os.path.abspath(root) == scratch:
        raise SystemExit("mutate: the scratch copy cannot be the checkout itself")
    disk_cache = os.path.join(os.path.dirname(scratch), "disk_cache")
    logs = os.path.join(scratch, ".mutate")
    os.makedirs(logs, exist_ok=True)
    copied = sync_scratch(root, scratch)
    print("mutate: scratch copy %s (%d files updated), %d mutations" %
          (scratch, copied, len(mutations)), flush=True)
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root,
                            capture_output=True, text=True).stdout.strip()

    all_targets = []
    for m in mutations:
        for t in checker_targets(m, groups):
            if t not in all_targets:
                all_targets.append(t)
    baseline, base_timed_out, seconds = run_bazel(
        scratch, all_targets, args.timeout * 2, os.path.join(logs, "baseline.log"), disk_cache,
        args.test_timeout)
    failing_at_baseline = sorted(t for t, s in baseline.items() if s != "PASSED")
    print("mutate: baseline: %d targets passed, %d did not%s, %.0f s" % (
        sum(1 for s in baseline.values() if s == "PASSED"), len(failing_at_baseline),
        " (%s)" % ", ".join(failing_at_baseline) if failing_at_baseline else "", seconds),
        flush=True)
    if base_timed_out or not baseline:
        print("mutate: the baseline did not finish (see %s)" % os.path.join(logs, "baseline.log"),
              file=sys.stderr)
        return 1

    results = args.results or os.path.join(logs, "results.jsonl")
    old_rows = read_results(args.results) if args.results else []
    rows = []
    for m in mutations:
        path = os.path.join(scratch, m["file"])
        with open(path) as f:
            pristine = f.read()
        with open(path, "w") as f:
            f.write(apply_mutation(pristine, m))
        try:
            refs = model_refs(scratch)
            status, timed_out, seconds = run_bazel(
                scratch, checker_targets(m, groups), args.timeout,
                os.path.join(logs, m["id"] + ".log"), disk_cache, args.test_timeout)
            killed_by = []
            for t, s in sorted(status.items()):
                if s in ("FAILED", "FLAKY") and t not in failing_at_baseline:
                    how, tests = how_killed(scratch, t)
                    killed_by.append({"target": t, "how": how, "tests": tests})
        finally:
            with open(path, "w") as f:
                f.write(pristine)
        row = {
            "id": m["id"], "kind": m["kind"], "file": m["file"],
            "killed_by": killed_by,
            "timed_out": sorted(t for t, s in status.items() if s == "TIMEOUT") +
                         (["(the whole run, %d s)" % args.timeout] if timed_out else []),
            "build_failed": sorted(t for t, s in status.items() if s == "BUILD FAILED"),
            "passed": sorted(t for t, s in status.items() if s == "PASSED"),
            "expected": m["expected"], "model_refs": refs, "seconds": round(seconds),
            "commit": commit,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
        }
        rows.append(row)
        all_rows = write_results(results, old_rows, rows, order)  # after each: a partial run counts
        print("mutate: %-34s %s%s (%.0f s)" % (
            m["id"], verdict(row),
            ": " + ", ".join("%s (%s)" % (k["target"], k["how"]) for k in killed_by)
            if killed_by else "", seconds), flush=True)

    all_rows = write_results(results, old_rows, rows, order)
    print()
    print(render_table(all_rows))
    print("\nmutate: raw results in %s" % results)
    if not args.keep_server:
        subprocess.run(["./bazelw", "shutdown"], cwd=scratch, capture_output=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
