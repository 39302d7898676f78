#!/usr/bin/env python3
"""The savegame figures of bench/results/savegame.md and of the README's savegame sentence,
computed from the raw JSON records of one recording (tools/savegame/record_all.sh) and
nothing else. ROOT holds the parts, each with its runs' records in runs.jsonl
(savegame_runs.py); any part may be missing, its block then says so:

  ROOT/closed_loop/   closed_loop.py runs: median and min-max per design
  ROOT/connections/   connection_sweep.py runs and plan.json: a table per workload;
                      this script writes connections.png and summary.json / summary.txt
  ROOT/open_loop/     sweep.py runs with plot_open_loop.py's summary.json and PNG
                      (--open_loop DIR takes them from elsewhere)

It rewrites only the text between the markers <!-- savegame:<part>:begin --> and
<!-- savegame:<part>:end --> (part: closed_loop, connections, open_loop) in --markdown, and
between <!-- savegame:begin --> and <!-- savegame:end --> in --readme (one sentence).
Without ROOT it takes the newest recording under bench/results/savegame_runs/.

    tools/savegame/report.py [ROOT] [--open_loop DIR] [--markdown bench/results/savegame.md]
        [--readme README.md]
"""

import argparse
import json
import os
import sys

import savegame_runs

RUNS_ROOT = "bench/results/savegame_runs"
PARTS = ("closed_loop", "connections", "open_loop")
P99_LIMIT_MS = 100  # plot_open_loop.py's default "held" limit


class ReportError(Exception):
    pass


# --- reading the records ---------------------------------------------------------------

def server_name(record):
    """"fairsched", or "updater (5 ms tick)" and so on."""
    if record["design"] != "updater":
        return record["design"]
    return "updater (%g ms tick)" % record["config"]["updater_tick_ms"]


def workload_name(record):
    config = record["config"]
    if config.get("heavy_users", 0) > 0:
        return "skewed (%d users x%d)" % (config["heavy_users"], config["heavy_factor"])
    return "uniform"


def error_share(record):
    return savegame_runs.errors(record) / record["sent"] if record["sent"] else None


def latency(record, key):
    return record["latency_ms"]["acknowledged"][key]


def summarize_group(records):
    """Median and min-max of the figures of runs of one configuration."""
    servers = [savegame_runs.role_seconds(r, "server") for r in records]
    workers = max(len(s) for s in servers)
    return {
        "runs": len(records),
        "checks_passed": sum(1 for r in records if r["check"]["passed"]),
        "requests_per_second": savegame_runs.spread(r["requests_per_second"] for r in records),
        "p50_ms": savegame_runs.spread(latency(r, "p50") for r in records),
        "p99_ms": savegame_runs.spread(latency(r, "p99") for r in records),
        "p999_ms": savegame_runs.spread(latency(r, "p999") for r in records),
        "error_share": savegame_runs.spread(error_share(r) for r in records),
        # Per worker thread (by name order): the median over runs of its CPU seconds.
        "server_cpu_s": [savegame_runs.spread(s[i] for s in servers if i < len(s))
                         for i in range(workers)],
        "server_runqueue_wait_s": savegame_runs.spread(
            sum(savegame_runs.role_seconds(r, "server", "runqueue_wait_seconds") or [0])
            for r in records if r.get("runqueue_wait_available")),
        "client_cpu_s": savegame_runs.spread(
            sum(savegame_runs.role_seconds(r, "client")) for r in records),
        "store_cpu_s": savegame_runs.spread(
            sum(savegame_runs.role_seconds(r, "store")) for r in records),
        "jobs_started_late": savegame_runs.spread(r.get("jobs_started_late")
                                                  for r in records),
        "load": savegame_runs.load_range(records),
    }


def closed_loop_summary(directory):
    records = [r for r in savegame_runs.load_records(directory) if r["mode"] == "closed"]
    if not records:
        return None
    by_design = {}
    for record in records:
        by_design.setdefault(record["design"], []).append(record)
    summary = {"designs": {d: summarize_group(rs) for d, rs in sorted(by_design.items())},
               "config": records[0]["config"], "load": savegame_runs.load_range(records),
               "order": [r["design"] for r in sorted(records, key=lambda r: r["started_utc"])],
               "recorded": [min(r["started_utc"] for r in records),
                            max(r["started_utc"] for r in records)]}
    designs = summary["designs"]
    if "fairsched" in designs and "updater" in designs:
        summary["ratio"] = ratio(designs["fairsched"], designs["updater"])
    return summary


def ratio(a, b):
    """Median req/s of a over that of b (None when b did nothing)."""
    bottom = b["requests_per_second"]["median"]
    return a["requests_per_second"]["median"] / bottom if bottom else None


def connections_summary(directory):
    records = [r for r in savegame_runs.load_records(directory) if r["mode"] == "closed"]
    if not records:
        return None
    groups = {}
    for record in records:
        key = (workload_name(record), server_name(record), record["config"]["connections"])
        groups.setdefault(key, []).append(record)
    rows = [dict(workload=w, server=s, connections=c, **summarize_group(rs))
            for (w, s, c), rs in sorted(groups.items(), key=lambda kv: (
                kv[0][0] != "uniform", kv[0][0], kv[0][2], server_order(kv[0][1])))]
    plan = {}
    plan_path = os.path.join(directory, "plan.json")
    if os.path.exists(plan_path):
        with open(plan_path) as f:
            plan = json.load(f)
    return {"rows": rows, "plan": plan, "load": savegame_runs.load_range(records),
            "config": records[0]["config"]}


def server_order(name):
    """fairsched first, then the Updaters by tick."""
    if name == "fairsched":
        return (0, 0)
    return (1, float(name.split("(")[1].split()[0]))


def open_loop_summary(directory):
    path = os.path.join(directory, "summary.json")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        summary = json.load(f)
    records = savegame_runs.load_records(directory)
    return {"designs": summary, "load": savegame_runs.load_range(records),
            "config": records[0]["config"] if records else None,
            "png": os.path.exists(os.path.join(directory, "open_loop.png"))}


# --- formatting ------------------------------------------------------------------------

def number(value, digits=2):
    if value is None:
        return "-"
    if abs(value) >= 100:
        return "%.0f" % value
    return "%.*f" % (digits, value)


def whole(value):
    return "-" if value is None else "%.0f" % value


def cell(spread, form=number):
    """"median (min-max)", each value written by `form`."""
    if spread is None:
        return "-"
    if spread["n"] == 1:
        return form(spread["median"])
    return "%s (%s-%s)" % (form(spread["median"]), form(spread["min"]), form(spread["max"]))


def percent(spread):
    if spread is None:
        return "-"
    return "%.1f%%" % (100 * spread["median"])


def loads_text(load):
    return "-" if load is None else "%.2f-%.2f" % load


def link(markdown_dir, path):
    return os.path.relpath(path, markdown_dir)


def closed_loop_block(summary, directory, markdown_dir):
    if summary is None:
        return "Not recorded yet: `tools/savegame/record_all.sh` records it (closed_loop/)."
    config = summary["config"]
    lines = [
        "Closed loop, recorded %s - %s UTC, each design %d times in alternation (%s), %g s "
        "per run, %d workers, %d users, %d connections, blob latency %g ms, %g us CPU per "
        "save, %g ms Updater tick; 1-minute load average %s. Median (min-max) over the "
        "runs; raw records: [%s](%s)."
        % (summary["recorded"][0], summary["recorded"][1],
           max(d["runs"] for d in summary["designs"].values()),
           " ".join(x[0].upper() for x in summary["order"]), config["duration_s"],
           config["workers"], config["users"], config["connections"],
           config["blob_latency_ms"], config["cpu_cost_us"], config["updater_tick_ms"],
           loads_text(summary["load"]), link(markdown_dir, directory),
           link(markdown_dir, directory)),
        "",
        "| design | runs (check ok) | req/s | p50 ms | p99 ms | p999 ms | server CPU s per "
        "worker | server runq wait s | client CPU s | store CPU s |",
        "|---|---|---|---|---|---|---|---|---|---|"]
    for design, s in summary["designs"].items():
        lines.append("| %s | %d (%d) | %s | %s | %s | %s | %s | %s | %s | %s |" % (
            design, s["runs"], s["checks_passed"], cell(s["requests_per_second"], whole),
            cell(s["p50_ms"]), cell(s["p99_ms"]), cell(s["p999_ms"]),
            " / ".join(cell(c) for c in s["server_cpu_s"]),
            cell(s["server_runqueue_wait_s"]), cell(s["client_cpu_s"]),
            cell(s["store_cpu_s"])))
    if summary.get("ratio") is not None:
        lines += ["", "fairsched / updater, median req/s: %.2fx." % summary["ratio"]]
    return "\n".join(lines)


def connections_block(summary, directory, markdown_dir):
    if summary is None:
        return "Not recorded yet: `tools/savegame/record_all.sh` records it (connections/)."
    plan = summary["plan"]
    config = summary["config"]
    lines = [
        "Closed loop, each connection one save in flight, %d users, %g s per run, step "
        "deadline %g ms; 1-minute load average %s. Median over rounds; \"late\" = Updater "
        "jobs that waited a tick before their first step. Raw records, `summary.txt` and "
        "`plan.json`: [%s](%s)." % (config["users"], config["duration_s"],
                                   config["step_timeout_ms"], loads_text(summary["load"]),
                                   link(markdown_dir, directory),
                                   link(markdown_dir, directory))]
    for note in plan.get("notes", []):
        lines += ["", "Open files: " + note + "."]
    if os.path.exists(os.path.join(directory, "connections.png")):
        lines += ["", "![connection sweep](%s)" %
                  link(markdown_dir, os.path.join(directory, "connections.png"))]
    workloads = []
    for row in summary["rows"]:
        if row["workload"] not in workloads:
            workloads.append(row["workload"])
    for workload in workloads:
        lines += ["", "%s workload:" % workload.capitalize(), "",
                  "| connections | server | req/s | p50 ms | p99 ms | errors | server CPU s "
                  "per worker | late |", "|---|---|---|---|---|---|---|---|"]
        for row in summary["rows"]:
            if row["workload"] != workload:
                continue
            lines.append("| %d | %s | %s | %s | %s | %s | %s | %s |" % (
                row["connections"], row["server"], whole(median(row["requests_per_second"])),
                number(median(row["p50_ms"])), number(median(row["p99_ms"])),
                percent(row["error_share"]),
                " / ".join(number(median(c)) for c in row["server_cpu_s"]),
                whole(median(row["jobs_started_late"]))))
    return "\n".join(lines)


def median(spread):
    return None if spread is None else spread["median"]


def open_loop_block(summary, directory, markdown_dir):
    if summary is None:
        return "Not recorded yet: `tools/savegame/record_all.sh` records it (open_loop/)."
    config = summary["config"] or {}
    lines = ["Offered load as Poisson arrivals, latency from the intended send time, %s "
             "connections, %s s per run; 1-minute load average %s. Median over rounds; "
             "\"held\": every run at the rate has p99 <= %d ms, a passing check and <= 1%% "
             "not acknowledged. Raw records and `summary.txt`: [%s](%s)." % (
                 config.get("connections", "-"), config.get("duration_s", "-"),
                 loads_text(summary["load"]), P99_LIMIT_MS, link(markdown_dir, directory),
                 link(markdown_dir, directory))]
    if summary["png"]:
        lines += ["", "![open loop](%s)" %
                  link(markdown_dir, os.path.join(directory, "open_loop.png"))]
    lines += ["", "| design | offered req/s | runs | p50 ms | p99 ms | p999 ms | acked/s | "
              "failed | held |", "|---|---|---|---|---|---|---|---|---|"]
    for design, data in summary["designs"].items():
        for row in data["rows"]:
            lines.append("| %s | %g | %d | %s | %s | %s | %s | %.2f%% | %s |" % (
                design, row["rate"], row["runs"], number(row["p50_ms"]),
                number(row["p99_ms"]), number(row["p999_ms"]),
                whole(row["acknowledged_per_second"]), 100 * row["failed_fraction"],
                "yes" if row["held"] else "no"))
    lines.append("")
    for design, data in summary["designs"].items():
        held = data["highest_rate_held"]
        lines.append("- %s: highest offered rate held: %s" % (
            design, "none of the rates tried" if held is None else "%g req/s" % held))
    return "\n".join(lines)


def readme_sentence(closed, connections, open_loop, markdown_path):
    """One sentence from whatever parts exist."""
    clauses = []
    if closed and closed.get("ratio") is not None:
        f, u = closed["designs"]["fairsched"], closed["designs"]["updater"]
        clauses.append(
            "in %d alternated closed-loop runs per design (%d connections) fairsched "
            "acknowledged %s saves/s (median, min-max) against the Updater's %s (%.2fx)" % (
                f["runs"], closed["config"]["connections"], cell(f["requests_per_second"], whole),
                cell(u["requests_per_second"], whole), closed["ratio"]))
    if open_loop:
        held = {d: data["highest_rate_held"] for d, data in open_loop["designs"].items()}
        if "fairsched" in held and "updater" in held:
            clauses.append(
                "in open loop it held p99 <= %d ms up to %s offered req/s against the "
                "Updater's %s" % (P99_LIMIT_MS, rate_text(held["fairsched"]),
                                  rate_text(held["updater"])))
    if connections:
        clauses += connection_clauses(connections)
    if not clauses:
        return "No savegame recording yet (`tools/savegame/record_all.sh`)."
    loads = [p["load"] for p in (closed, connections, open_loop) if p and p["load"]]
    load = (min(l[0] for l in loads), max(l[1] for l in loads)) if loads else None
    return ("Savegame job on this machine (1-minute load average %s, figures by "
            "`tools/savegame/report.py` from the raw records): %s ([details](%s))." % (
                loads_text(load), "; ".join(clauses), markdown_path))


def rate_text(rate):
    return "none of the rates tried" if rate is None else "%g" % rate


def connection_clauses(summary):
    """fairsched / Updater req/s at the fewest and the most connections, uniform load."""
    rows = [r for r in summary["rows"] if r["workload"] == "uniform"]
    if not rows:
        return []
    clauses = []
    points = sorted({r["connections"] for r in rows})
    for point in (points[0], points[-1]) if len(points) > 1 else points[:1]:
        at = {r["server"]: r for r in rows if r["connections"] == point}
        fair = at.get("fairsched")
        ratios = ["%.2fx the %s" % (ratio(fair, r), name.replace("updater ", "Updater's "))
                  for name, r in sorted(at.items(), key=lambda kv: server_order(kv[0]))
                  if fair and name != "fairsched" and ratio(fair, r) is not None]
        if ratios:
            clauses.append("with %d connections in flight fairsched did %s req/s" %
                           (point, " and ".join(ratios)))
    return clauses


# --- the connection-sweep plot and summary files ---------------------------------------

def plot_connections(summary, png):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, (left, right) = plt.subplots(1, 2, figsize=(12, 5))
    colours = ["tab:blue", "tab:orange", "tab:red", "tab:green", "tab:purple"]
    servers = sorted({r["server"] for r in summary["rows"]}, key=server_order)
    for workload in sorted({r["workload"] for r in summary["rows"]}):
        style = "-" if workload == "uniform" else "--"
        for index, server in enumerate(servers):
            rows = sorted((r for r in summary["rows"]
                           if r["server"] == server and r["workload"] == workload),
                          key=lambda r: r["connections"])
            label = "%s, %s" % (server, workload)
            colour = colours[index % len(colours)]
            xs = [r["connections"] for r in rows]
            left.plot(xs, [median(r["requests_per_second"]) or 0 for r in rows], style,
                      marker="o", markersize=3, color=colour, label=label)
            points = [(r["connections"], median(r["p99_ms"])) for r in rows
                      if median(r["p99_ms"]) is not None]
            right.plot([p[0] for p in points], [max(p[1], 0.001) for p in points], style,
                       marker="o", markersize=3, color=colour, label=label)
    for axes in (left, right):
        axes.set_xscale("log")
        axes.set_xlabel("client connections (saves in flight, closed loop)")
        axes.grid(True, which="both", linewidth=0.3)
    left.set_ylabel("acknowledged saves per second")
    right.set_yscale("log")
    right.set_ylabel("p99 latency of acknowledged saves, ms")
    left.legend(fontsize=7)
    title = "savegame, connection sweep"
    if summary["load"] is not None:
        title += " (1-minute load average %.2f-%.2f during the runs)" % summary["load"]
    figure.suptitle(title)
    figure.tight_layout()
    figure.savefig(png, dpi=100)
    plt.close(figure)


def write_json(path, value):
    with open(path, "w") as f:
        json.dump(value, f, indent=1)
        f.write("\n")


# --- the markers -----------------------------------------------------------------------

def replace_between(text, begin, end, body, path):
    start = text.find(begin)
    stop = text.find(end)
    if start < 0 or stop < 0 or stop < start:
        raise ReportError("%s: needs the markers %s and %s (in that order)" % (path, begin, end))
    return text[:start + len(begin)] + "\n" + body + "\n" + text[stop:]


def rewrite(path, blocks):
    """blocks: [(begin, end, body)]."""
    with open(path) as f:
        text = f.read()
    for begin, end, body in blocks:
        text = replace_between(text, begin, end, body, path)
    with open(path, "w") as f:
        f.write(text)


def newest(directory, has):
    """The lexically last subdirectory of `directory` for which has(path) holds, or None."""
    if not os.path.isdir(directory):
        return None
    names = sorted((n for n in os.listdir(directory)
                    if os.path.isdir(os.path.join(directory, n))), reverse=True)
    for name in names:
        if has(os.path.join(directory, name)):
            return os.path.join(directory, name)
    return None


def main(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("root", nargs="?", help="the recording (default: the newest under %s)"
                        % RUNS_ROOT)
    parser.add_argument("--open_loop", help="open-loop runs with summary.json (default "
                        "ROOT/open_loop)")
    parser.add_argument("--markdown", help="rewrite its savegame:<part> blocks")
    parser.add_argument("--readme", help="rewrite its savegame block (one sentence)")
    args = parser.parse_args(argv)

    root = args.root or newest(RUNS_ROOT, lambda p: any(
        os.path.isdir(os.path.join(p, part)) for part in PARTS))
    if args.root and not os.path.isdir(args.root):
        parser.error("no such recording: %s" % args.root)
    open_dir = args.open_loop
    if open_dir is None and root and os.path.exists(os.path.join(root, "open_loop",
                                                                 "summary.json")):
        open_dir = os.path.join(root, "open_loop")
    closed_dir = os.path.join(root, "closed_loop") if root else None
    connections_dir = os.path.join(root, "connections") if root else None

    closed = closed_loop_summary(closed_dir) if closed_dir and os.path.isdir(closed_dir) \
        else None
    connections = connections_summary(connections_dir) \
        if connections_dir and os.path.isdir(connections_dir) else None
    open_loop = open_loop_summary(open_dir) if open_dir else None

    if closed:
        write_json(os.path.join(closed_dir, "summary.json"), closed)
        with open(os.path.join(closed_dir, "summary.txt"), "w") as f:
            f.write(closed_loop_block(closed, closed_dir, closed_dir) + "\n")
    if connections:
        savegame_runs.ensure_matplotlib(__file__, argv)
        plot_connections(connections, os.path.join(connections_dir, "connections.png"))
        write_json(os.path.join(connections_dir, "summary.json"), connections)
        with open(os.path.join(connections_dir, "summary.txt"), "w") as f:
            f.write(connections_block(connections, connections_dir, connections_dir) + "\n")

    for name, summary, directory in (("closed loop", closed, closed_dir),
                                     ("connection sweep", connections, connections_dir),
                                     ("open loop", open_loop, open_dir)):
        print("%s: %s" % (name, directory if summary else "not recorded"))
    try:
        if args.markdown:
            markdown_dir = os.path.dirname(os.path.abspath(args.markdown))

            def absolute(path):
                return os.path.abspath(path) if path else path

            rewrite(args.markdown, [
                ("<!-- savegame:%s:begin -->" % part, "<!-- savegame:%s:end -->" % part, body)
                for part, body in (
                    ("closed_loop", closed_loop_block(closed, absolute(closed_dir),
                                                      markdown_dir)),
                    ("connections", connections_block(connections, absolute(connections_dir),
                                                      markdown_dir)),
                    ("open_loop", open_loop_block(open_loop, absolute(open_dir),
                                                  markdown_dir)))])
            print("rewrote the savegame blocks of %s" % args.markdown)
        if args.readme:
            readme_dir = os.path.dirname(os.path.abspath(args.readme))
            details = link(readme_dir, os.path.abspath(args.markdown)) if args.markdown \
                else "bench/results/savegame.md"
            sentence = readme_sentence(closed, connections, open_loop, details)
            rewrite(args.readme, [("<!-- savegame:begin -->", "<!-- savegame:end -->",
                                   sentence)])
            print("rewrote the savegame sentence of %s:\n%s" % (args.readme, sentence))
    except ReportError as error:
        sys.exit("report.py: %s" % error)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
