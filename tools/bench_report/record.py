"""record: runs fairsched's benchmark binaries in interleaved rounds and keeps every run.

Used by bench_report.py (run mode and --all). A round runs every planned binary once with
one repetition (the order rotates by one binary per round, so no binary always runs first
or last); each run writes its Google Benchmark JSON into a temporary folder, gets the
1-minute load average before and after the run, the revision and the command added to its
"context", and is appended as one line named <binary>_r<round> to
bench/results/json/<area>/runs.jsonl (runs.py). The console output stays in the temporary
folder. The tables are medians over the rounds and medians of per-round ratios
(bench_report.render).

--all adds, after the rounds: the hot-path recording (bench/coro/record_hot_path.sh, with
the Tokio and Go peers), the echo benchmark (bench/io/echo_bench.sh) and the savegame sweeps
(tools/savegame/record_all.sh, if present), then renders report.md, the generated blocks of
bench/results/*.md, hot_path.md and the README's blocks. It prints a time plan first.
"""

import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

try:
    from tools.bench_report import runs
except ImportError:  # run as a script: the module next to this file
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import runs


class Step:
    """One binary as recorded: where its raw files go, how it is run, what a round of it
    costs (seconds, measured on the 2-core machine at this plan's settings)."""

    def __init__(self, area, target, seconds, filter="", min_time=0.05):
        self.area = area
        self.target = target
        self.name = target.split(":")[1]
        self.seconds = seconds
        self.filter = filter
        self.min_time = min_time

    def flags(self, min_time):
        flags = ["--benchmark_repetitions=1", f"--benchmark_min_time={min_time}",
                 "--benchmark_out_format=json"]
        if self.filter:
            flags.append(f"--benchmark_filter={self.filter}")
        return flags


# Every Google Benchmark binary the rounds record, with the filter that keeps a round short.
# Seconds per round: measured at these settings on the 2-vCPU machine, rounded up. The
# coroutine binaries run inside the hot-path recording (HOT_PATH below), whose files --all
# copies into json/coro/ for coro.md.
PLAN = [
    Step("queues", "//bench/queues:mpsc_queue_bench", 4, min_time=0.02),
    Step("queues", "//bench/queues:mcsp_queue_bench", 3, min_time=0.02),
    Step("queues", "//bench/queues:bounded_mc_queue_bench", 2, min_time=0.02),
    # std::set at 10^6 timers takes over a minute to build per row: left out (the heap's
    # 10^6 rows stay, and timer_wheel_bench has the heap at 10^6 too).
    Step("queues", "//bench/queues:binary_heap_bench", 4, filter="-SetWaitQueue>/1000000",
         min_time=0.02),
    Step("queues", "//bench/queues:timer_wheel_bench", 7, min_time=0.02),
    Step("sync", "//bench/sync:signal_bench", 2),
    # Left out: the latency histogram's cost rows (fairsched_hist_*, a diagnostic), Wakeup
    # after 1 ms (the post rows tell the same story) and the idle-CPU rows of the
    # contestants that are neither fairsched's default nor the textbook pool or asio (1 s
    # each). The wake-up and W1/W2 rows run a fixed amount of work per repetition, whatever
    # the min time.
    Step("sched", "//bench/sched:sched_bench", 70,
         filter="-(/fairsched_hist_|^wake/wakeup/gap_us:1000/|^idle_cpu/"
                "(fairsched_trivial_policy|fairsched_spin100|tbb_arena))"),
    Step("sched", "//bench/sched:lifecycle_bench", 1),
    Step("io", "//bench/io:io_backend_bench", 13),
    # io_uring multishot accept/recv against single-shot and the re-arming fallback.
    Step("io", "//bench/io:uring_multishot_bench", 4),
]
# The rest of --all: seconds per round (hot path, echo) or in all (build, savegame).
BUILD_SECONDS = 240       # a fresh machine: the project's opt build and the two peers
HOT_PATH_SECONDS = 55     # one round of record_hot_path.sh with HOT_PATH_ENV (Go ~15 s)
HOT_PATH_ENV = {"YIELD_FILTER": "-yield/asio/", "SKIP_SCHED": "1"}
HOT_PATH_TO_CORO = ("coro_bench", "mutex_bench", "yield_bench")  # copied into json/coro/
ECHO_SECONDS_PER_POINT = 1
ECHO_POINTS = 8 * 5       # points per server x servers (fairsched-epoll, fairsched-io_uring,
                          # asio, tokio, go), per round
SAVEGAME_SECONDS = 11 * 60   # record_all.sh plans 608 s, plus its opt build
RENDER_SECONDS = 30
BUDGET_SECONDS = 30 * 60


def loadavg1():
    try:
        with open("/proc/loadavg") as f:
            return float(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return None


def revision(root):
    try:
        head = subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, check=True, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.strip()
        dirty = subprocess.run(["git", "diff", "--quiet"], cwd=root).returncode != 0
        return head + (" (with local changes)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "?"


def steps_for(targets):
    """The plan's steps for these labels; a label the plan does not know runs unfiltered
    with its area taken from its package."""
    known = {s.target: s for s in PLAN}
    return [known.get(t) or Step(t[2:].split(":")[0].split("/")[-1], t, 60) for t in targets]


def time_plan(steps, reps, all_mode, savegame, echo=False):
    """Lines of the time plan, and the estimated total in seconds."""
    lines = ["bench_report: time plan (estimates from 2-vCPU measurements)"]
    total = 0

    def add(label, seconds):
        nonlocal total
        total += seconds
        lines.append(f"  {label:<58} {seconds / 60:5.1f} min")

    add("build (--config=opt" + (", Tokio and Go peers)" if all_mode else ")"), BUILD_SECONDS)
    for s in steps:
        add(f"{s.name} x {reps} round(s) ({s.seconds} s each)", s.seconds * reps)
    if all_mode:
        add(f"hot path (record_hot_path.sh) x {reps} round(s)", HOT_PATH_SECONDS * reps)
    if all_mode or echo:
        add(f"echo (echo_bench.sh) x {reps} round(s)" if echo else
            "echo: not recorded (--echo adds it)",
            ECHO_POINTS * (ECHO_SECONDS_PER_POINT + 1) * reps if echo else 0)
    if all_mode:
        add("savegame (tools/savegame/record_all.sh)" if savegame else
            "savegame: tools/savegame/record_all.sh not found, skipped",
            SAVEGAME_SECONDS if savegame else 0)
    add("rendering (tables, plots, README)", RENDER_SECONDS)
    if all_mode and savegame:
        lines.append(f"  {'total without savegame':<58} {(total - SAVEGAME_SECONDS) / 60:5.1f} min")
    lines.append(f"  {'total':<58} {total / 60:5.1f} min")
    return lines, total


def prepare_area_folders(json_root, areas):
    """Empties json_root/<area>/ of an earlier recording's runs before new ones are
    recorded; the area's other files and sub-folders (json/io/echo/: the echo recording,
    made by its own step) stay."""
    for area in sorted(areas):
        clear_rounds(os.path.join(json_root, area))
        os.makedirs(os.path.join(json_root, area), exist_ok=True)


def run_rounds(bench_report, root, steps, reps, min_time, json_root, env_extra=None):
    """Runs `steps` in `reps` interleaved rounds. Returns (commands, failed labels)."""
    bin_dir = bench_report.bazel(root, ["info", "--config=opt", "bazel-bin"]).strip()
    rev = revision(root)
    prepare_area_folders(json_root, {s.area for s in steps})
    scratch = tempfile.mkdtemp(prefix="fairsched_bench_runs_")
    env = dict(os.environ, FAIRSCHED_BENCH_REPETITIONS="1", **(env_extra or {}))
    commands = {}
    failed = []
    for rnd in range(1, reps + 1):
        shift = (rnd - 1) % len(steps)
        for i, step in enumerate(steps[shift:] + steps[:shift], 1):
            package = step.target[2:].split(":")[0]
            name = f"{step.name}_r{rnd}"
            out_json = os.path.join(scratch, name + ".json")
            console_path = os.path.join(scratch, name + ".txt")
            flags = step.flags(min_time if min_time is not None else step.min_time)
            command = (f"FAIRSCHED_BENCH_REPETITIONS=1 $(./bazelw info --config=opt bazel-bin)/"
                       f"{package}/{step.name} " + " ".join(shlex.quote(f) for f in flags) +
                       f" --benchmark_out=$TMP/{step.name}_r<round>.json  # appended to "
                       f"bench/results/json/{step.area}/{runs.RUNS_FILE}")
            commands[step.name] = command
            progress = bench_report.Progress(f"[round {rnd}/{reps}, {i}/{len(steps)}] {step.name}")
            before = loadavg1()
            start = time.monotonic()
            with open(console_path, "w") as console:
                proc = subprocess.Popen(
                    [os.path.join(bin_dir, package, step.name), f"--benchmark_out={out_json}"] +
                    flags, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                    bufsize=1, env=env)
                for line in proc.stdout:
                    console.write(line)
                    first = line.split(" ", 1)[0]
                    if "/" in first or first.startswith("BM_"):
                        progress.last = first
                rc = proc.wait()
            progress.finish()
            if rc != 0 or not os.path.exists(out_json):
                failed.append(step.target)
                print(f"bench_report: {step.target} failed (exit {rc}); see {console_path}",
                      file=sys.stderr)
                continue
            data = runs.load(out_json)
            data.setdefault("context", {}).update({
                "fairsched_load_before": before, "fairsched_load_after": loadavg1(),
                "fairsched_seconds": round(time.monotonic() - start, 1),
                "fairsched_revision": rev, "fairsched_command": command})
            runs.append(os.path.join(json_root, step.area, runs.RUNS_FILE), name, data)
            os.remove(out_json)
    print(f"bench_report: the console output of every run is in {scratch}", file=sys.stderr)
    return commands, failed


def write_meta(bench_report, root, json_root, targets, commands, note):
    """json_root/meta.json: the machine, revision, build command and the command of every
    binary (commands of binaries recorded earlier and not now are kept)."""
    meta = bench_report.read_meta(json_root)
    meta.update({"machine": bench_report.machine(), "revision": revision(root),
                 "build": f"./bazelw build --config=opt {' '.join(targets)}"})
    meta["commands"] = {**meta.get("commands", {}), **commands}
    if note:
        meta["note"] = note
    with open(os.path.join(json_root, "meta.json"), "w") as f:
        json.dump(meta, f, indent=1)


def run_script(root, label, cmd, failed, env=None):
    """Runs one of the other recording scripts, its output going to our terminal."""
    prefix = "".join(f"{k}={shlex.quote(v)} " for k, v in (env or {}).items())
    print(f"bench_report: {label}: {prefix}{' '.join(shlex.quote(c) for c in cmd)}",
          file=sys.stderr)
    start = time.monotonic()
    rc = subprocess.run(cmd, cwd=root, env=dict(os.environ, **(env or {}))).returncode
    print(f"bench_report: {label} took {(time.monotonic() - start) / 60:.1f} min (exit {rc})",
          file=sys.stderr)
    if rc != 0:
        failed.append(label)
    return rc == 0


def remove_flat_layout(json_root):
    """Removes the raw files of the layout before rounds (json/<binary>.json and .txt, runs
    directly in json/, and their meta.json): a full recording supersedes them, and left in
    place they would be rendered next to it."""
    if not os.path.isdir(json_root):
        return
    for name in os.listdir(json_root):
        if name.endswith((".json", ".jsonl", ".txt")):
            os.remove(os.path.join(json_root, name))


def share_rounds(json_root, hot_path):
    """The hot-path recording and the rounds share binaries: its sched_bench rows are the
    sched rounds' (SKIP_SCHED), and its coroutine binaries' rounds are coro.md's."""
    sched = os.path.join(json_root, "sched")
    for name, data in runs.read_dir(sched):
        if name.startswith("sched_bench_r"):
            runs.append(os.path.join(hot_path, runs.RUNS_FILE), name, data)
    coro = os.path.join(json_root, "coro")
    shutil.rmtree(coro, ignore_errors=True)
    os.makedirs(coro)
    for name, data in runs.read_dir(hot_path):
        m = round_of(name)
        if m and m[0] in HOT_PATH_TO_CORO:
            runs.append(os.path.join(coro, runs.RUNS_FILE), name, data)


def round_of(run):
    """(binary, round) of a run named <binary>_r<round>, else None."""
    base, sep, rnd = run.rpartition("_r")
    return (base, int(rnd)) if sep and rnd.isdigit() else None


def clear_rounds(folder):
    """Removes an earlier recording's runs from `folder`: its runs.jsonl, and per-round
    files (<binary>_r<round>.json and .txt) of the layout before it; notes, profiles and
    machine.txt stay."""
    if not os.path.isdir(folder):
        return
    for name in os.listdir(folder):
        stem, ext = os.path.splitext(name)
        if name == runs.RUNS_FILE or (ext in (".json", ".txt") and round_of(stem)):
            os.remove(os.path.join(folder, name))


def record_echo(root, json_root, reps, failed):
    """bench/io/echo_bench.sh into json/io/echo/results.txt (render() writes io.md's echo
    block from it). The script replaces results.txt; the folder's other files are earlier
    recordings kept raw on purpose (io.md's other echo blocks read them), so they stay."""
    echo_dir = os.path.join(json_root, "io", "echo")
    run_script(root, "echo", ["bench/io/echo_bench.sh", str(reps),
                              str(ECHO_SECONDS_PER_POINT), echo_dir], failed)


def record_all(bench_report, root, args):
    """--all: every benchmark, the hot path, echo and savegame, then every document."""
    reps = 1 if args.quick else args.repetitions
    min_time = 0.01 if args.quick else args.min_time
    out_dir = args.out or os.path.join(root, "bench", "results")
    json_root = os.path.join(out_dir, "json")
    savegame = os.path.join(root, "tools", "savegame", "record_all.sh")
    has_savegame = os.path.exists(savegame)
    lines, total = time_plan(PLAN, reps, True, has_savegame, args.echo)
    print("\n".join(lines), file=sys.stderr)
    if total > BUDGET_SECONDS:
        print(f"bench_report: the plan exceeds the {BUDGET_SECONDS // 60}-minute budget",
              file=sys.stderr)
    started = time.monotonic()
    remove_flat_layout(json_root)
    targets = [s.target for s in PLAN]
    bench_report.bazel(root, ["build", "--config=opt"] + targets, capture=False)
    commands, failed = run_rounds(bench_report, root, PLAN, reps, min_time, json_root)

    hot_path = os.path.join(json_root, "hot_path")
    clear_rounds(hot_path)
    hot_cmd = (["bench/coro/record_hot_path.sh", hot_path, str(reps)] +
               ([args.hot_path_before] if args.hot_path_before else []))
    hot_ok = run_script(root, "hot path", hot_cmd, failed, HOT_PATH_ENV)
    commands["record_hot_path.sh (json/hot_path, copied to json/coro)"] = " ".join(
        [f"{k}={shlex.quote(v)}" for k, v in HOT_PATH_ENV.items()] +
        ["bench/coro/record_hot_path.sh", "bench/results/json/hot_path", str(reps)])
    write_meta(bench_report, root, json_root, targets, commands, args.note)
    if hot_ok:
        share_rounds(json_root, hot_path)
    if args.echo:
        record_echo(root, json_root, reps, failed)
    if not has_savegame:
        print("bench_report: tools/savegame/record_all.sh not found: savegame sweeps skipped",
              file=sys.stderr)
    elif args.quick and "--quick" not in open(savegame).read():
        print("bench_report: --quick: tools/savegame/record_all.sh has no --quick, skipped",
              file=sys.stderr)
    else:
        run_script(root, "savegame", [savegame] + (["--quick"] if args.quick else []), failed)

    readme = os.path.join(root, "README.md") if args.out is None else None
    bench_report.render(json_root, out_dir, not args.no_plots, args.note, readme=readme,
                        sources_root=root)
    if hot_ok:
        cmd = [sys.executable, "tools/bench_report/hot_path_report.py", hot_path,
               "--out", os.path.join(out_dir, "hot_path.md")]
        if os.path.exists(os.path.join(hot_path, "notes.md")):
            cmd += ["--notes", os.path.join(hot_path, "notes.md")]
        if readme:
            cmd += ["--readme", readme]
        run_script(root, "hot path report", cmd, failed)
    elapsed = time.monotonic() - started
    print(f"bench_report: --all took {elapsed / 60:.1f} min (plan: {total / 60:.1f} min)" +
          (f"; failed: {', '.join(failed)}" if failed else ""), file=sys.stderr)
    return 1 if failed else 0
