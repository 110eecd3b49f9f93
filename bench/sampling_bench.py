"""Section 2: sampling profiler accuracy (line shares) and overhead."""

import json
import os

import lprof_tool
import peers
from common import (
    SCRATCH,
    Failed,
    alternate,
    fmt,
    marker_lines,
    median,
    overhead_rounds,
    paired_ratios,
    run_timed,
    workload,
)

# (title, workload, args, mode, {label: expected native fraction} or None)
ACCURACY = [
    ("pure Python, 25/75 by design", "s_shares", ["40", "400000"], "cpu", None),
    ("Python + numpy", "s_numpy", ["100", "300000", "1000000"], "cpu", {"A": 0.0, "B": 1.0}),
    ("two threads, 1:3 by design", "s_threads", ["40", "400000"], "cpu", None),
    ("500-deep recursion, 25/75 by design", "s_recursion", ["40", "400000"], "cpu", None),
    ("generator and consumer, 25/75 by design", "s_generator", ["40", "400000"], "cpu", None),
    ("sleeping line (wall mode)", "s_sleep", ["25", "400000", "0.075"], "wall", None),
]
TOOLS = ["lprof", "scalene", "py-spy"]
SHARE_TARGET = 1.0  # issue #35: worst hot-line error at the default rate, points
SHARE_MOONSHOT = 0.5  # issue #35's moonshot, over every hot line of every workload
RUN_SECONDS = 3.0  # issue #35's accuracy target is on ~3 s runs: rounds are scaled to it
OVERHEAD = ("mixed", ["2000", "2000"])


def truth_shares(truth, mode):
    labels = truth["labels"]
    if mode == "wall":
        total = truth["work_wall_s"]
        return {k: v["wall"] / total for k, v in labels.items()}
    total = sum(truth["threads_cpu_s"].values())
    return {k: v["cpu"] / total for k, v in labels.items()}


def read_truth(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        raise Failed("workload wrote no ground truth")


def lprof_once(script, args, mode, base, env, rate=None, native=False):
    """One lprof run writing base.lprof: (Run, its exported JSON)."""
    prof = base + ".lprof"
    if os.path.exists(prof):
        os.remove(prof)
    run = lprof_tool.run(
        lprof_tool.sample_cmd(script, args, prof, wall=mode == "wall", rate=rate, native=native),
        env_extra=env,
    )
    return run, lprof_tool.export_json(prof)


def profile_once(tool, script, args, mode, base, rate=None, native=False):
    """Run one profiled process; return (Run, {lineno: metric}, {lineno: native_frac}, truth)."""
    truth_path = base + ".truth.json"
    env = {"BENCH_TRUTH": truth_path}
    if tool == "lprof":
        wall, data = lprof_once(script, args, mode, base, env, rate=rate, native=native)
        lines = lprof_tool.sampling_lines(data, script)
        metric = {k: v["wall" if mode == "wall" else "cpu"] for k, v in lines.items()}
        split = {k: v["native_frac"] for k, v in lines.items()}
    elif tool == "scalene":
        out = base + ".scalene.json"
        wall = run_timed(peers.scalene_cmd(script, args, out), env_extra=env)
        lines, _ = peers.scalene_lines(out, script)
        metric = {k: v["cpu"] for k, v in lines.items()}
        split = {k: v["native_frac"] for k, v in lines.items()}
    elif tool == "py-spy":
        out = base + ".pyspy.txt"
        wall = run_timed(
            peers.pyspy_cmd(script, args, out, wall=mode == "wall", rate=rate, native=native), env_extra=env
        )
        metric = {k: v["samples"] for k, v in peers.pyspy_lines(out, script).items()}
        split = {}
    else:
        wall = run_timed([peers.VPY, script] + args, env_extra=env)
        metric, split = {}, {}
    return wall, metric, split, read_truth(truth_path)


def sized(name, script, args, mode):
    """args with the rounds (the first) scaled so that a plain run's work
    takes about RUN_SECONDS on this machine: the samples a run gets, and so
    the error the target allows, do not depend on the machine's speed."""
    _, _, _, truth = profile_once("plain", script, args, mode, os.path.join(SCRATCH, f"{name}.size"))
    rounds = max(2, round(int(args[0]) * RUN_SECONDS / max(truth["work_wall_s"], 1e-3)))
    return [str(rounds)] + args[1:]


def accuracy(repeats, log):
    rows, split_rows, targets = [], [], []
    worst = {}
    for title, name, args, mode, native in ACCURACY:
        script = workload(name)
        marks = marker_lines(script)
        args = sized(name, script, args, mode)
        log(f"  sampling/{name}: {args[0]} rounds (about {RUN_SECONDS:.0f} s unprofiled)")

        def one(tool, r):
            base = os.path.join(SCRATCH, f"{name}.{tool}")
            _, metric, split, truth = profile_once(tool, script, args, mode, base)
            total = sum(metric.values())
            if total <= 0:
                raise Failed("no samples in the workload file")
            tshare = truth_shares(truth, mode)
            out = {}
            for label, no in marks.items():
                share = metric.get(no, 0.0) / total
                out[label] = {
                    "share": share,
                    "truth": tshare[label],
                    "err": abs(share - tshare[label]) * 100,
                    "native": split.get(no),
                }
            return out

        res = alternate(TOOLS, repeats, one)
        for label in sorted(marks):
            truths = [run[label]["truth"] for t in TOOLS for run in res[t]["runs"]]
            row = [
                title,
                f"{label} (line {marks[label]})",
                fmt(median(truths) and median(truths) * 100, ".1f") + "%",
            ]
            for t in TOOLS:
                runs = res[t]["runs"]
                if not runs:
                    row.append("n/a (" + str(res[t]["error"]) + ")")
                    continue
                share = median([x[label]["share"] for x in runs]) * 100
                err = median([x[label]["err"] for x in runs])
                row.append(f"{share:.1f}% (err {err:.1f})")
                if t == "lprof":
                    worst[(title, label)] = err
            rows.append(row)
            if native:
                srow = [title, f"{label} (line {marks[label]})", f"{native[label] * 100:.0f}%"]
                for t in ("lprof", "scalene"):
                    vals = [x[label]["native"] for x in res[t]["runs"]]
                    m = median(vals)
                    if m is None:
                        srow.append("n/a" + (f" ({res[t]['error']})" if res[t]["error"] else ""))
                    else:
                        e = abs(m - native[label]) * 100
                        srow.append(f"{m * 100:.1f}% (err {e:.1f})")
                        if t == "lprof":
                            targets.append(
                                (
                                    f"sampling, {title}: native share of line {label} within 5 points",
                                    e <= 5,
                                    f"{e:.1f}",
                                )
                            )
                srow.append("n/a (no split)")
                split_rows.append(srow)
        log(f"  sampling/{name}: " + ", ".join(f"{t}: {res[t]['error'] or 'ok'}" for t in TOOLS))
        for label in sorted(marks):
            e = worst.get((title, label))
            targets.append(
                (
                    f"sampling, {title}: line {label} share within {SHARE_TARGET} points at the default rate",
                    None if e is None else e <= SHARE_TARGET,
                    fmt(e, ".1f"),
                )
            )
    if worst:
        e = max(worst.values())
        targets.append(
            (
                f"sampling: every hot line within {SHARE_MOONSHOT} points at the default rate (moonshot)",
                e <= SHARE_MOONSHOT,
                f"{e:.1f}",
            )
        )
    header = ["workload", "line", "known share"] + [f"{t} share (abs err, points)" for t in TOOLS]
    split_header = ["workload", "line", "expected native", "lprof native", "scalene native", "py-spy native"]
    return (header, rows), (split_header, split_rows), targets


OVERHEAD_MIN_ROUNDS = 9  # rounds of every tool
OVERHEAD_EXTRA_ROUNDS = 12  # then rounds of plain and lprof only


def overhead(repeats, log):
    name, args = OVERHEAD
    script = workload(name)
    tools = ["plain", "lprof", "lprof@100", "lprof@native", "scalene", "py-spy", "py-spy@native"]

    def one(tool, r):
        base = os.path.join(SCRATCH, f"{name}.ovh.{tool}")
        kind = tool.split("@")[0]
        rate = int(tool.split("@")[1]) if tool.split("@")[-1].isdigit() else None
        run, metric, _, truth = profile_once(
            kind, script, args, "cpu", base, rate=rate, native=tool.endswith("@native")
        )
        if kind != "plain" and not metric:
            raise Failed("no samples in the workload file")
        return {"wall": run.wall, "cpu": run.cpu, "work": truth["work_wall_s"]}

    res, pairs = overhead_rounds(
        tools,
        max(repeats, OVERHEAD_MIN_ROUNDS),
        OVERHEAD_EXTRA_ROUNDS,
        one,
        focus=("lprof", "lprof@100", "lprof@native"),
    )
    log("  sampling/overhead: " + ", ".join(f"{t}: {res[t]['error'] or 'ok'}" for t in tools))
    # This machine's speed drifts by tens of percent within minutes; a run
    # and the plain run of its round see the same speed, so each ratio is the
    # median of the per-round ratios (serpentine order keeps plain and lprof
    # next to each other). The fastest plain run is shown for scale.
    plain_runs = res["plain"]["runs"]
    plain = min([x["wall"] for x in plain_runs]) if plain_runs else None
    rows, targets = [], []
    # the issue #35 target at the default rate: 2% (1.02x)
    limits = {"lprof": 2.0, "lprof@100": 2.0, "lprof@native": 3.0}
    labels = {
        "plain": "plain",
        "lprof": "lprof (default: 250 per CPU second)",
        "lprof@100": "lprof --rate 100",
        "lprof@native": "lprof --native (default rate)",
        "scalene": "scalene --cpu-only",
        "py-spy": "py-spy record (100 Hz)",
        "py-spy@native": "py-spy record --native (100 Hz)",
    }
    for t in tools:
        runs = res[t]["runs"]
        if not runs or plain is None:
            rows.append([labels[t], "n/a", "n/a (" + str(res[t]["error"]) + ")", "n/a", "n/a", "-"])
            if t in limits:
                targets.append((f"sampling overhead, {labels[t]} <= {limits[t]:.0f}%", None, "n/a"))
            continue
        if t == "plain":
            walls = [1.0]
            wall = work = cpu = 1.0
        else:
            walls = paired_ratios(pairs[t], lambda x: x["wall"])
            wall = median(walls)
            work = median(paired_ratios(pairs[t], lambda x: x["work"]))
            cpu = median(paired_ratios(pairs[t], lambda x: x["cpu"]))
        ovh = (wall - 1) * 100
        met = None
        if t in limits:
            met = ovh <= limits[t]
            targets.append((f"sampling overhead, {labels[t]} <= {limits[t]:.0f}%", met, f"{ovh:+.1f}%"))
        rows.append(
            [
                labels[t],
                f"{min(x['wall'] for x in runs):.3f}",
                f"{wall:.3f}x ({ovh:+.1f}%; rounds {min(walls):.2f}-{max(walls):.2f})",
                fmt(work, ".3f") + "x",
                fmt(cpu, ".3f") + "x",
                {True: "yes", False: "**no**", None: "-"}[met],
            ]
        )
    header = [
        "tool",
        "wall s (fastest run)",
        "wall ratio (overhead): median of rounds",
        "in-script time ratio",
        "CPU time ratio (user+sys, tool included)",
        "target met",
    ]
    return (header, rows), targets
