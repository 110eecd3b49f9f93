"""Coverage-guided fuzzing of what `lprof view` and `lprof export` read.

usage: fuzz_reader.py [--runs N] [--seconds S] [--report FILE]

Each input is one byte of mode, then data:
  0: the data is a whole file (header, payload), as `lprof view FILE` reads it;
  1: the data is the payload's JSON: wrapped here in a valid header, checksum
     and zlib stream, so the fuzzer explores the profile's structure and the
     validator instead of stopping at the checksum.
A decoded profile is then rendered (view's listing) and exported (JSON,
folded, speedscope, SVG). The only exceptions allowed are lprof's one-line
errors (ProfileFileError/LprofError, ValueError from a stack export, which
the CLI turns into `lprof: ...`); anything else, a hang (-timeout) or memory
past -rss_limit_mb is a finding. atheris (libFuzzer for Python) drives it.

Seeds are real profiles of a small program in each mode, made at start-up.
The report (JSON: runs, seconds, crashes) feeds docs/reliability.md."""

import argparse
import importlib
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import zlib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))

SEED_PROGRAM = """
import threading
def leaf(n):
    return [i * i for i in range(n)]
def work():
    keep = []
    for _ in range(200):
        keep.append(leaf(2000))
    return keep
t = threading.Thread(target=work); t.start(); work(); t.join()
"""


def make_seeds(folder):
    """Real profiles of SEED_PROGRAM: -l, sampling, --wall, --memory. lprof
    itself is not imported here: imported after atheris starts instrumenting,
    every module of it is coverage-instrumented."""
    os.makedirs(folder, exist_ok=True)
    script = os.path.join(folder, "seed_program.py")
    with open(script, "w") as f:
        f.write(SEED_PROGRAM)
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    seeds = []
    for i, mode in enumerate((["-l", "-p", script], [], ["--wall"], ["--memory"])):
        out = os.path.join(folder, f"seed{i}.lprof")
        subprocess.run(
            [sys.executable, "-m", "lprof", "-q", "-o", out, *mode, script],
            env=env,
            cwd=folder,
            check=True,
            capture_output=True,
        )
        with open(out, "rb") as f:
            data = f.read()
        seeds.append(b"\x00" + data)
        # a -l file starts with line_profiler's pickle: the container follows it
        container = data[data.index(MAGIC) :]
        payload = zlib.decompress(container[HEADER_SIZE:])
        seeds.append(b"\x01" + payload)
    for name in ("kernprof_5_1.lprof", "v1_sampled_memory.lprof"):
        with open(os.path.join(ROOT, "tests", "fixtures", name), "rb") as f:
            seeds.append(b"\x00" + f.read())
    corpus = os.path.join(folder, "corpus")
    os.makedirs(corpus, exist_ok=True)
    for i, s in enumerate(seeds):
        with open(os.path.join(corpus, f"seed{i}"), "wb") as f:
            f.write(s)
    return corpus


def wrap(payload):
    from lprof.model import profile_file

    body = zlib.compress(payload, 1)
    return (
        profile_file._HEADER.pack(
            profile_file.MAGIC, profile_file.FORMAT_VERSION, 0, zlib.crc32(body), len(body)
        )
        + body
    )


# an input that raises the peak resident size by more than this is a finding:
# a profile file of at most 64 KiB must not need hundreds of MB to read or show
GROWTH_LIMIT_MB = 200
HEADER_SIZE = 24  # docs/formats.md
MAGIC = b"LPROF\x00\r\n"  # the container's first bytes (docs/formats.md)


def make_target(scratch):
    from lprof import export as stacks
    from lprof.export import chrome_trace as export_chrome
    from lprof.commands import view
    from lprof.common.errors import LprofError
    from lprof.export.json_doc import to_json
    from lprof.model import profile_file

    view_args = view.parser().parse_args(["x"])
    all_args = view.parser().parse_args(["x", "--all", "--per-thread", "--profile-all"])
    out = os.path.join(scratch, "export.out")
    import resource

    def one_input(data):
        if not data:
            return
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        check_input(data)
        grown = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) >> 10
        if grown > GROWTH_LIMIT_MB:  # libFuzzer's own limit would blame a later input
            raise MemoryError(f"one input took the peak RSS up by {grown} MB")

    def check_input(data):
        mode, body = data[0] % 2, data[1:]
        raw = body if mode == 0 else wrap(body)
        try:
            prof = profile_file.decode(raw, "fuzz.lprof")
        except LprofError:
            return
        view.render(prof, view_args)
        view.render(prof, all_args)
        to_json(prof)
        try:  # the Chrome trace: the sample timeline's spans
            export_chrome.trace(prof)
        except ValueError:
            pass  # no stacks with time: one line from the CLI
        try:
            cols = profile_file.decode(raw, "fuzz.lprof", rows=False)
            for fmt in stacks.STACK_FORMATS:
                stacks.export(cols, fmt, "cpu", out)
            stacks.export(cols, "folded", "alloc", out)
        except ValueError:
            pass  # the CLI says it in one line (`lprof: ...`, exit 2)

    return one_input


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--runs", type=int, default=10000)
    p.add_argument("--seconds", type=int, default=0, help="stop after this long (0: no limit)")
    p.add_argument("--report", help="write {runs, seconds, crashes} here as JSON")
    p.add_argument("--workdir", default=os.path.join(ROOT, "build", "fuzz"))
    opts = p.parse_args()
    opts.workdir = os.path.abspath(opts.workdir)
    if opts.report:
        # libFuzzer ends the process itself: a child runs it, this one reports
        _run_reporting(opts)
        return
    import atheris

    corpus = make_seeds(opts.workdir)
    scratch = tempfile.mkdtemp(prefix="lprof-fuzz-")
    flags = [
        sys.argv[0],
        f"-runs={opts.runs}",
        "-rss_limit_mb=1500",
        "-timeout=20",
        "-max_len=65536",
        "-print_final_stats=1",
        f"-artifact_prefix={opts.workdir}/crash-",
        corpus,
    ]
    if opts.seconds:
        flags.insert(2, f"-max_total_time={opts.seconds}")
    with atheris.instrument_imports(include=["lprof"]):
        # lprof imports these lazily, at first use: import them here so that
        # they are instrumented too
        for name in (
            "lprof.model.kernprof_file",
            "lprof.model.validate",
            "lprof.model.stacks",
            "lprof.render.listing",
            "lprof.render.sampled_listing",
            "lprof.render.memory_report",
            "lprof.export.svg",
            "lprof.collect.sampling",
            "lprof.render.source",
        ):
            importlib.import_module(name)
        target = make_target(scratch)
    atheris.Setup(flags, target)
    atheris.Fuzz()


def _run_reporting(opts):
    """Runs the fuzzer in a child process and writes the report."""
    os.makedirs(opts.workdir, exist_ok=True)
    before = set(os.listdir(opts.workdir))
    cmd = [sys.executable, os.path.abspath(__file__), "--workdir", opts.workdir, "--runs", str(opts.runs)] + (
        ["--seconds", str(opts.seconds)] if opts.seconds else []
    )
    t0 = time.time()
    r = subprocess.run(cmd, capture_output=True, text=True)
    seconds = time.time() - t0
    log = r.stdout + r.stderr
    with open(os.path.join(opts.workdir, "fuzz.log"), "w") as f:
        f.write(log)
    runs = re.findall(r"stat::number_of_executed_units:\s*(\d+)", log)
    crashes = sorted(n for n in set(os.listdir(opts.workdir)) - before if n.startswith("crash-"))
    report = {
        "runs": int(runs[-1]) if runs else 0,
        "seconds": round(seconds, 1),
        "exit": r.returncode,
        "crashes": crashes,
        "python": sys.version.split()[0],
    }
    with open(opts.report, "w") as f:
        json.dump(report, f, indent=1)
    print(
        f"fuzz: {report['runs']} inputs in {report['seconds']} s, exit {r.returncode}, "
        f"{len(crashes)} crash files"
    )
    if r.returncode != 0:
        sys.stdout.write(log[-4000:])
        sys.exit(1)


if __name__ == "__main__":
    main()
