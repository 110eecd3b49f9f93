"""What a sampling run imports before the program's first line: every
module there is start-up time each run (and each followed child) pays. The
modules a sampling run does not use stay out: the TOML parser where the
project's pyproject.toml holds no lprof table, line_profiler's pickle
writer where no line is traced, traceback, textwrap and array (the
listing's wrap and the timeline's columns do without), and what reads and
merges profiles (the parent does that on its main thread, at the end), and
3.14's colour themes (its argparse loads them for every parser)."""
import json

SHOW = """
import json, sys
print(json.dumps(sorted(m for m in {names!r} if m in sys.modules)))
"""
NOT_AT_START = ("tomllib", "tomli", "pickle", "pickletools", "traceback", "textwrap", "array", "tokenize",
                "linecache", "mmap", "lprof.collect.awaits", "lprof.collect.task_names", "lprof.process.preload",
                "lprof.model.validate", "lprof.model.merge",
                # 3.14's argparse formatter imports _colorize, and with it dataclasses
                # and inspect, for colours lprof's help does not use (commands/parsers.py)
                "_colorize", "dataclasses", "inspect")


def _loaded(run, *args):
    r = run(*args)
    assert r.returncode == 0, r.stderr
    return set(json.loads(r.stdout.strip().splitlines()[-1]))


def test_a_sampling_run_loads_no_module_it_does_not_use(run_lprof, run_python, write_script, tmp_path):
    write_script("show.py", SHOW.format(names=NOT_AT_START))
    # a project file naming lprof only in a comment and a value
    (tmp_path / "pyproject.toml").write_text(
        '# profiled with lprof\n[project]\nname = "uses-lprof"\n[tool.ruff]\nline-length = 99\n'
    )
    plain = _loaded(run_python, "show.py")
    assert _loaded(run_lprof, "-q", "show.py") - plain == set()
    # a run that traces lines writes line_profiler's pickle: its modules are in
    assert {"pickle", "pickletools"} <= _loaded(run_lprof, "-l", "-q", "show.py")
    # a project that sets lprof's options is read (the parser loads)
    (tmp_path / "pyproject.toml").write_text("[tool.lprof]\nrate = 50\n")
    toml = _loaded(run_lprof, "-q", "show.py") & {"tomllib", "tomli"}
    assert toml or plain & {"tomllib", "tomli"} or not _has_toml_parser(run_python)


def _has_toml_parser(run_python):
    r = run_python("-c", "import importlib.util as u; print(bool(u.find_spec('tomllib') or u.find_spec('tomli')))")
    return r.stdout.strip() == "True"
