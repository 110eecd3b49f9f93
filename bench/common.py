"""Process running, alternating repeats and small statistics for the benchmarks."""

import collections
import os
import re
import resource
import statistics
import subprocess
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
WORKLOADS = os.path.join(BENCH, "workloads")
SCRATCH = os.path.join(BENCH, "results")  # gitignored

# Single-threaded native libraries: CPU shares must not depend on BLAS pools.
BASE_ENV = {
    "OMP_NUM_THREADS": "1",
    "OPENBLAS_NUM_THREADS": "1",
    "MKL_NUM_THREADS": "1",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONPATH": WORKLOADS,
}


def workload(name):
    return os.path.join(WORKLOADS, name + ".py")


def marker_lines(path):
    """{label: lineno} for lines tagged `# @line:LABEL`."""
    out = {}
    with open(path) as f:
        for no, text in enumerate(f, 1):
            m = re.search(r"#\s*@line:(\w+)", text)
            if m:
                out[m.group(1)] = no
    return out


class Failed(Exception):
    """A tool could not run or its output could not be read; str() is the reason."""


def short_reason(text, limit=90):
    lines = [ln.strip() for ln in text.strip().splitlines() if ln.strip()]
    if not lines:
        return "no output"
    last = lines[-1]
    for ln in reversed(lines):  # prefer the exception line of a traceback
        if re.match(r"^[A-Za-z_.]*(Error|Exception)\b", ln):
            last = ln
            break
    last = clean(last)
    return last if len(last) <= limit else last[: limit - 3] + "..."


def clean(text):
    """Drop file paths in parentheses and table separators from a reason."""
    return re.sub(r" \((/|<)[^)]*\)?", "", text).replace("|", "/")


Run = collections.namedtuple("Run", "wall stdout stderr cpu")


def _children_cpu():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def run_timed(argv, env_extra=None, timeout=300, stdout_path=None, cwd=None):
    """Run argv; return Run(wall s, stdout, stderr, cpu s of it and its children).
    Raises Failed on error."""
    env = dict(os.environ)
    env.update(BASE_ENV)
    if env_extra:
        for k, v in env_extra.items():
            if k == "PYTHONPATH":
                v = v + os.pathsep + BASE_ENV["PYTHONPATH"]
            env[k] = v
    out = open(stdout_path, "w") if stdout_path else subprocess.PIPE
    try:
        c0 = _children_cpu()
        t0 = time.perf_counter()
        p = subprocess.run(
            argv, env=env, stdout=out, stderr=subprocess.PIPE, text=True, timeout=timeout, cwd=cwd or SCRATCH
        )
        wall = time.perf_counter() - t0
        cpu = _children_cpu() - c0
    except subprocess.TimeoutExpired:
        raise Failed(f"timed out after {timeout} s")
    except OSError as e:
        raise Failed(f"cannot start: {e}")
    finally:
        if stdout_path:
            out.close()
    if p.returncode != 0:
        raise Failed(f"exit {p.returncode}: {short_reason(p.stderr)}")
    return Run(wall, (p.stdout if not stdout_path else ""), p.stderr, cpu)


def alternate(tools, repeats, one_run, serpentine=False):
    """Run each tool once per round, rounds repeated (A B C A B C ...; with
    serpentine, every other round backwards: A B C C B A ..., so that the
    first two tools always run next to each other and neither always first).

    one_run(tool, round) returns a result dict; a tool that fails is dropped
    for the remaining rounds and keeps its failure reason.
    Returns {tool: {"runs": [results], "error": str|None}}.
    """
    res = {t: {"runs": [], "error": None} for t in tools}
    for r in range(repeats):
        for t in tools[::-1] if serpentine and r % 2 else tools:
            if res[t]["error"]:
                continue
            try:
                res[t]["runs"].append(one_run(t, r))
            except Failed as e:
                res[t]["error"] = str(e)
    return res


def paired_ratios(pairs, value=lambda x: x):
    """value(run) / value(plain run of the same round) for each pair."""
    out = []
    for x, b in pairs:
        vx, vb = value(x), value(b)
        if vx and vb:
            out.append(vx / vb)
    return out


def overhead_rounds(tools, rounds, extra_rounds, one_run, focus=("lprof",)):
    """Overhead runs: `rounds` serpentine rounds of every tool (tools[0] is
    plain), then `extra_rounds` more of plain and the `focus` tools only,
    whose ratios the targets judge (they are cheap to run; the peers are not).

    Returns (res, pairs): res as alternate() over all runs, and pairs
    {tool: [(run, plain run of the same round), ...]} over both blocks."""
    res = alternate(tools, rounds, one_run, serpentine=True)
    blocks = [res]
    focus = [t for t in focus if t in tools and not res[t]["error"]]
    if extra_rounds and focus:
        blocks.append(alternate([tools[0]] + focus, extra_rounds, one_run, serpentine=True))
    pairs = {t: [] for t in tools[1:]}
    for block in blocks:
        for t in pairs:
            if t in block:
                pairs[t] += list(zip(block[t]["runs"], block[tools[0]]["runs"]))
    for block in blocks[1:]:
        for t, v in block.items():
            res[t]["runs"] += v["runs"]
            res[t]["error"] = res[t]["error"] or v["error"]
    return res, pairs


def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def fmt(x, spec=".2f", none="n/a"):
    return none if x is None else format(x, spec)
