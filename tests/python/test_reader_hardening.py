"""Malformed profile files: a well-formed container around malformed
sections, deep nesting, huge line numbers, bad frame ids and decompression
bombs get one line and exit status 2 from `lprof view` and `lprof export`,
never a traceback, a hang or unbounded memory."""
import contextlib
import io
import json
import os
import struct
import subprocess
import sys
import zlib

import pytest

from conftest import SANITIZED, lprof_env

from lprof import cli
from lprof.model import profile_file

MUTANTS = (None, "x", -1, 10 ** 9, [], [[["deep"]]], True)

# this process's own peak resident size in KiB: VmHWM starts afresh at exec,
# where getrusage's ru_maxrss keeps the high-water mark of the forking pytest
# process (hundreds of MB after the memory tests)
PEAK_KIB = ("peak = next(int(ln.split()[1]) for ln in open('/proc/self/status') "
            "if ln.startswith('VmHWM:'))")


def _real_profile(run_lprof, write_script, tmp_path):
    write_script("w.py", """
        @profile
        def f():
            blocks = [bytearray(20000) for _ in range(200)]
            t = 0
            for i in range(200000):
                t += i
            return len(blocks) + t
        f()
    """)
    r = run_lprof("-l", "--sample", "--memory", "-q", "-o", "real.lprof", "w.py")
    assert r.returncode == 0, r.stderr
    return profile_file.load(str(tmp_path / "real.lprof"))


def _paths(node, prefix=()):
    """Every path to a value in the profile, depth-first (lists: their first item)."""
    yield prefix
    if isinstance(node, dict):
        for k, v in node.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node[:1]):
            yield from _paths(v, prefix + (i,))


def _replace(node, path, value):
    if not path:
        return value
    if isinstance(node, dict):
        out = dict(node)
    else:
        out = list(node)
    out[path[0]] = _replace(node[path[0]], path[1:], value)
    return out


def _run_cli(argv):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(argv)
    return code, out.getvalue(), err.getvalue()


@pytest.mark.needs_shim  # the profile is made with --memory
def test_every_section_value_malformed(run_lprof, write_script, tmp_path):
    """Each value of a real profile replaced by each wrong kind of value: view
    and every export either work or say one line with exit 2 (an exception
    escaping cli.main fails the test)."""
    # mutate the file's own form (columnar stacks), as a damaged file holds it
    prof = json.loads(zlib.decompress(
        profile_file.container_of(profile_file.encode(
            _real_profile(run_lprof, write_script, tmp_path)))[24:]))
    paths = [p for p in _paths(prof) if p and p[0] != "format"]
    assert len(paths) > 60
    path_file = str(tmp_path / "m.lprof")
    checked = 0
    for path in paths:
        for value in MUTANTS:
            with open(path_file, "wb") as fh:
                fh.write(_container(json.dumps(_replace(prof, path, value)).encode()))
            out = str(tmp_path / "out")
            for argv in (["view", path_file],
                         ["export", path_file, "--format", "json", "-o", out],
                         ["export", path_file, "--format", "folded", "--metric", "alloc",
                          "-o", out],
                         ["export", path_file, "--format", "svg", "-o",
                          str(tmp_path / "m.svg")]):
                code, _out, err = _run_cli(argv)
                assert code in (0, 2), (path, value, argv, err)
                if code == 2:
                    assert len(err.strip().splitlines()) == 1, (path, value, err)
                checked += 1
    assert checked > 1500


def _container(payload_bytes):
    payload = zlib.compress(payload_bytes, 9)
    return struct.pack("<8sHHIQ", profile_file.MAGIC, 2, 0, zlib.crc32(payload),
                       len(payload)) + payload


def test_huge_line_number_and_bad_frame_id_refused(tmp_path):
    base = {"format": "lprof", "version": 2, "meta": {"modes": ["lines"]},
            "functions": [{"file": "/x.py", "name": "f", "first_line": 1, "total_s": 1.0,
                           "lines": [[1_000_000_000, 1, 1.0]]}]}
    (tmp_path / "big.lprof").write_bytes(profile_file.encode(base))
    code, _o, err = _run_cli(["view", str(tmp_path / "big.lprof")])
    assert code == 2 and "line row" in err
    st = {"frames": [["/x.py", "f", 1, 2]], "columns": [],
          "stacks": [[[0, -1], 1, {"cpu_python_s": 5}]]}
    prof = dict(base, functions=[], stacks=st)
    (tmp_path / "neg.lprof").write_bytes(profile_file.encode(prof))
    code, _o, err = _run_cli(["export", str(tmp_path / "neg.lprof"), "--format", "folded",
                              "-o", str(tmp_path / "neg.folded")])
    assert code == 2 and "malformed" in err


def test_deep_nesting_refused(tmp_path):
    deep = b'{"format": "lprof", "meta": ' + b"[" * 200000 + b"]" * 200000 + b"}"
    (tmp_path / "deep.lprof").write_bytes(_container(deep))
    code, _o, err = _run_cli(["view", str(tmp_path / "deep.lprof")])
    assert code == 2 and "nested too deeply" in err


@pytest.mark.parametrize("megabytes", [1, 3])
def test_decompression_bomb_bounded(tmp_path, megabytes):
    """A few MB that expand to GBs: refused, and the reader's peak memory
    stays far below what expanding it would take."""
    comp = zlib.compressobj(9)
    chunk = b" " * (1 << 20)
    parts = [comp.compress(b'{"format": "lprof", "meta": {}, "pad": "')]
    expanded = 0
    while sum(map(len, parts)) < megabytes << 20:
        parts.append(comp.compress(chunk))
        expanded += len(chunk)
    parts.append(comp.compress(b'"}'))
    parts.append(comp.flush())
    payload = b"".join(parts)
    path = tmp_path / "bomb.lprof"
    path.write_bytes(struct.pack("<8sHHIQ", profile_file.MAGIC, 2, 0, zlib.crc32(payload),
                                 len(payload)) + payload)
    assert expanded > 1 << 30  # it would take GBs
    code = ("import sys; from lprof import cli; rc = cli.main(['view', sys.argv[1]]); "
            f"{PEAK_KIB}; print(rc, peak)")
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                       env=lprof_env(), timeout=120)
    rc, maxrss_kib = map(int, r.stdout.split())
    assert rc == 2 and "decompression bomb" in r.stderr, r.stderr
    if not SANITIZED:  # ASan's own shadow memory is counted there
        assert maxrss_kib < 400 * 1024, maxrss_kib  # not the GBs the payload would take


def test_honest_large_profile_still_opens(tmp_path):
    """The bomb limit leaves room for real profiles: a profile of 20,000
    distinct stacks round-trips."""
    frames = [[f"/src/m{i % 50}.py", f"f{i}", i % 900 + 1, i % 900 + 3] for i in range(3000)]
    stacks = [[[i % 3000, (i * 7) % 3000, (i * 13) % 3000], 1, {"cpu_python_s": i + 1}]
              for i in range(20000)]
    prof = {"format": "lprof", "version": 2, "meta": {"modes": ["cpu"]}, "functions": [],
            "stacks": {"frames": frames, "columns": [["cpu_python_s", "ns", "sum"]],
                       "stacks": stacks}}
    profile_file.save(prof, str(tmp_path / "ok.lprof"))
    back = profile_file.load(str(tmp_path / "ok.lprof"))
    assert len(back["stacks"]["stacks"]) == 20000
    json.dumps(back)


MEMO_BOMB = (b"\x80\x05\x8c\x1bline_profiler.line_profiler\x94\x8c\tLineStats\x94\x93"
             b"\x94)\x81\x94}\x94(\x8c\x07timings\x94r" + struct.pack("<I", 369724564)
             + b"}\x94\x8c\x04unit\x94G>\x11.\x0b\xe8&\xd6\x95ub.")


@pytest.mark.parametrize("case", ["memo", "length_bomb", "nested_frame", "frame_overrun"])
def test_pickle_bombs_bounded(tmp_path, case):
    """line_profiler-looking pickles found by tools/fuzz_reader.py: a
    LONG_BINPUT naming memo slot 369,724,564 (the unpickler grows its memo
    table first: 5.6 GB), and a 325-byte file the unpickler took to 19 GB (a
    counted opcode's length allocated before reading), and a 323-byte one with
    a frame opened inside another (19 GB in the C unpickler), and one whose
    string runs past its frame's end (1.7 GB). Refused in one line, in
    bounded memory."""
    fixture = os.path.join(os.path.dirname(__file__), "..", "fixtures",
                           f"fuzz_pickle_{case}.bin")
    data = MEMO_BOMB if case == "memo" else open(fixture, "rb").read()
    path = tmp_path / "bomb.lprof"
    path.write_bytes(data)
    code = ("import sys; from lprof import cli; rc = cli.main(['view', sys.argv[1]]); "
            f"{PEAK_KIB}; print(rc, peak)")
    r = subprocess.run([sys.executable, "-c", code, str(path)], capture_output=True, text=True,
                       env=lprof_env(), timeout=120)
    rc, maxrss_kib = map(int, r.stdout.split())
    assert rc == 2 and "not an lprof or line_profiler profile" in r.stderr, r.stderr
    if not SANITIZED:
        assert maxrss_kib < 400 * 1024, maxrss_kib


def test_path_with_nul_byte_listed_without_source(tmp_path):
    """A damaged file name holding a NUL byte (found by tools/fuzz_reader.py:
    linecache's os.stat raised ValueError, a traceback from `lprof view`):
    the function is listed without its source."""
    prof = {"format": "lprof", "version": 2,
            "meta": {"argv": [], "modes": ["lines"], "timer_unit_s": 1e-6, "exit_code": 0},
            "functions": [{"file": "a\x00b.py", "name": "f", "first_line": 1, "total_s": 0.5,
                           "lines": [[1, 3, 0.25], [2, 1, 0.25]]}]}
    path = tmp_path / "nul.lprof"
    profile_file.save(prof, str(path))
    code, out, err = _run_cli(["view", str(path)])
    assert code == 0 and "Traceback" not in err, err
    assert "Function: f" in out or " f " in out, out


def test_json_export_streams(tmp_path):
    """Issue #14 defect 12: the JSON export of a large profile is written as
    it is encoded, never held whole (a 77 MB export of a long --memory run
    peaked at 887 MiB). Here 150,000 stacks, 25 MB of JSON: the export's peak
    memory is under that of building the whole text first (121 vs 363 MiB
    measured on 3.11, 118 vs 150 on 3.13), and the text is the same as
    to_json()'s."""
    frames = [[f"/src/m{i % 50}.py", f"f{i}", i % 900 + 1, i % 900 + 3] for i in range(5000)]
    stacks = [[[i % 5000, (i * 7) % 5000, (i * 13) % 5000, (i * 17) % 5000], i % 8,
               {"cpu_python_s": i * 1e-3 + 1, "alloc_bytes": i * 16 + 1}] for i in range(150000)]
    prof = {"format": "lprof", "version": 2, "meta": {"modes": ["cpu"]}, "functions": [],
            "stacks": {"frames": frames, "columns": [["cpu_python_s", "ns", "sum"],
                                                     ["alloc_bytes", "bytes", "sum"]],
                       "stacks": stacks}}
    path, out = tmp_path / "big.lprof", tmp_path / "big.json"
    profile_file.save(prof, str(path))
    export = "from lprof import cli; rc = cli.main(['export', p, '--format', 'json', '-o', o])"
    whole = ("from lprof.model import profile_file; from lprof.export.json_doc import to_json; "
             "t = to_json(profile_file.load(p)); open(o + '.whole', 'w').write(t); rc = 0")
    peaks = []
    for body in (export, whole):
        code = f"import sys; p, o = sys.argv[1:3]; {body}; {PEAK_KIB}; print(rc, peak)"
        r = subprocess.run([sys.executable, "-c", code, str(path), str(out)], capture_output=True,
                           text=True, env=lprof_env(), timeout=300)
        rc, maxrss_kib = map(int, r.stdout.split())
        assert rc == 0, r.stderr
        peaks.append(maxrss_kib)
    assert out.stat().st_size > 20 << 20
    assert out.read_bytes() == (tmp_path / "big.json.whole").read_bytes()
    # 3.9-3.12 encode indented JSON in Python, a list of chunks before the
    # text (streamed: a third of the peak); 3.13's C encoder joins less (0.8)
    assert peaks[0] < 0.85 * peaks[1], peaks
