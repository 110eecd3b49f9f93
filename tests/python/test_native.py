"""lprof --native: native frames (libunwind) spliced into the sampled Python
stacks, checked with a C extension built here (tests/native_ext): a hot C
function under its Python line, a Python callback under the C function that
called it, a demangled C++ name, numpy, deep recursion and threads."""
import json
import re
import os
import subprocess
import sys
import sysconfig

import pytest

from conftest import PKGDIR, ROOT, line_of, lprof_env

EXT_SRC = os.path.join(ROOT, "tests", "native_ext")
# no sibling calls: every C function keeps its own frame, as the test expects
CFLAGS = ["-O1", "-g", "-fPIC", "-fno-optimize-sibling-calls", "-fno-omit-frame-pointer"]


@pytest.fixture(scope="module")
def ext_dir(tmp_path_factory):
    out = tmp_path_factory.mktemp("ext")
    inc = sysconfig.get_paths()["include"]
    so = out / ("lpdemo" + sysconfig.get_config_var("EXT_SUFFIX"))
    objs = []
    for src, cc in (("lpdemo.c", "gcc"), ("lpdemo_cxx.cpp", "g++")):
        obj = out / (src + ".o")
        subprocess.run([cc, *CFLAGS, "-I", inc, "-c", os.path.join(EXT_SRC, src), "-o", str(obj)], check=True)
        objs.append(str(obj))
    subprocess.run(["g++", "-shared", *objs, "-o", str(so)], check=True)
    return str(out)


SCRIPT = """
import sys, threading
sys.setrecursionlimit(5000)
import lpdemo


def work():
    t = 0
    for _ in range(25):
        t += lpdemo.spin(1_000_000)  # spin
    return t


def cb():
    x = 0
    for i in range(30_000):
        x += i  # callback
    return x


def outer():
    lpdemo.call_back(cb, 40)  # call_back


def cxx():
    for _ in range(25):
        lpdemo.cxx_spin(1_000_000)  # cxx


def rec(n):
    if n == 0:
        return lpdemo.spin(3_000_000)  # deep
    return rec(n - 1)


def in_thread():
    for _ in range(12):
        lpdemo.spin(1_000_000)  # thread


work()
outer()
cxx()
for _ in range(6):
    rec(120)
threads = [threading.Thread(target=in_thread) for _ in range(2)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("done")
"""


def _folded(path):
    rows = []
    for line in open(path).read().splitlines():
        stack, _, value = line.rpartition(" ")
        rows.append((stack.split(";"), int(value)))
    return rows


def _frames_after(rows, python_frame):
    """For each stack holding python_frame: the frames leafward of it, weighted."""
    out = []
    for frames, value in rows:
        for i, f in enumerate(frames):
            if f.startswith(python_frame):
                out.append((frames[i + 1:], value))
                break
    return out


@pytest.fixture(scope="module")
def native_run(ext_dir, tmp_path_factory):
    tmp = tmp_path_factory.mktemp("native")
    script = tmp / "native_demo.py"
    script.write_text(SCRIPT)
    env = lprof_env({"PYTHONPATH": os.pathsep.join([PKGDIR, ext_dir])})
    r = subprocess.run([sys.executable, "-m", "lprof", "--native", "--rate", "1000", "-o", "n.lprof",
                        "--stacks", "n.folded", str(script)], cwd=tmp, env=env, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("done"), r.stdout
    return tmp, script, r, env


def test_c_function_sits_under_its_python_line(native_run):
    tmp, script, _r, _env = native_run
    rows = _folded(tmp / "n.folded")
    line = line_of(script, "spin")
    below = _frames_after(rows, f"work ({script}:{line})")
    assert below, "no stack holds the spin line"
    heaviest = max(below, key=lambda fv: fv[1])[0]
    names = [f.split(" (")[0] for f in heaviest]
    assert names[:3] == ["lpdemo_spin_method", "lpdemo_hot", "lpdemo_spin_inner"], heaviest
    assert heaviest[0].endswith(".so)"), heaviest  # native frames name their object


def test_python_callback_sits_under_the_c_function_that_called_it(native_run):
    tmp, script, _r, _env = native_run
    rows = _folded(tmp / "n.folded")
    below = _frames_after(rows, f"outer ({script}:{line_of(script, 'call_back')})")
    cb_line = line_of(script, "callback")
    chains = [[f.split(" (")[0] for f in frames] for frames, _v in below]
    assert any(c[:3] == ["lpdemo_call_back_method", "lpdemo_trampoline", "cb"] for c in chains), chains
    assert any(f"cb ({script}:{cb_line})" in frames for frames, _v in below)


def test_cxx_names_are_demangled(native_run):
    tmp, script, _r, _env = native_run
    rows = _folded(tmp / "n.folded")
    below = _frames_after(rows, f"cxx ({script}:{line_of(script, 'cxx')})")
    names = {f.split(" (")[0] for frames, _v in below for f in frames}
    assert "lpdemo::Burner::run(long)" in names, names


def test_deep_recursion_keeps_every_python_frame_in_order(native_run):
    tmp, script, _r, _env = native_run
    rows = _folded(tmp / "n.folded")
    deep = f"rec ({script}:{line_of(script, 'deep')})"
    # the samples in the C call at the bottom of the recursion (others there
    # may have caught the thread waiting for the GIL, under libc's frames)
    hits = [frames for frames, _v in rows
            if deep in frames and any(f.startswith("lpdemo_spin_inner (") for f in frames)]
    assert hits
    frames = max(hits, key=len)
    assert sum(f.startswith("rec (") for f in frames) == 121, frames
    i = frames.index(deep)
    assert [f.split(" (")[0] for f in frames[i + 1:i + 4]] == ["lpdemo_spin_method", "lpdemo_hot",
                                                               "lpdemo_spin_inner"], frames[i:]


def test_threads_have_native_frames(native_run):
    tmp, script, _r, env = native_run
    r = subprocess.run([sys.executable, "-m", "lprof", "export", "n.lprof", "--format", "json", "-o", "n.json"],
                       cwd=tmp, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    data = json.loads((tmp / "n.json").read_text())
    frames = data["stacks"]["frames"]
    inner = {i for i, f in enumerate(frames) if f["function"] == "lpdemo_spin_inner"}
    line = line_of(script, "thread")
    threads = {row["thread"] for row in data["stacks"]["stacks"]
               if inner & set(row["frames"]) and any(frames[i]["line"] == line for i in row["frames"])}
    assert len(threads) == 2, threads


def test_listing_and_lines_still_charge_python_lines(native_run):
    tmp, script, r, env = native_run
    assert "lpdemo_spin_inner" not in r.stdout  # the listing shows source lines only
    r = subprocess.run([sys.executable, "-m", "lprof", "export", "n.lprof", "--format", "json", "-o", "l.json"],
                       cwd=tmp, env=env, capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    lines = json.loads((tmp / "l.json").read_text())["sampling"]["lines"]
    assert not [row for row in lines if row["line"] == 0], "a native frame was charged as a line"
    spin = [row for row in lines if row["file"] == str(script) and row["line"] == line_of(script, "spin")]
    assert spin and spin[0]["cpu_native_s"] > spin[0]["cpu_python_s"], spin
    sampling = json.loads((tmp / "l.json").read_text())["sampling"]
    assert sampling["native"] == "on"
    # the Python and native stacks agreed (splice.h) in nearly every sample
    assert sampling["native_mismatch"] <= 0.02 * sampling["signals"], sampling


def test_numpy_native_frames_under_the_line(run_lprof, write_script, tmp_path):
    pytest.importorskip("numpy")
    path = write_script("np_native.py", """
        import numpy as np
        a = np.random.default_rng(0).random(2_000_000)
        for _ in range(15):
            b = np.sort(a)  # sort
    """)
    r = run_lprof("--native", "--stacks", "np.folded", "np_native.py")
    assert r.returncode == 0, r.stderr
    rows = _folded(tmp_path / "np.folded")
    below = _frames_after(rows, f"<module> ({path}:{line_of(path, 'sort')})")
    objects = {f.rsplit(" (", 1)[-1] for frames, _v in below for f in frames}
    assert any("_multiarray_umath" in o for o in objects), objects


def test_native_leaves_the_programs_descriptor_numbers_alone(run_lprof, run_python,
                                                           write_script, tmp_path):
    """libunwind opens a pipe at its first use. It came at the first sample,
    at the lowest free descriptors: the program's next open() returned 5
    instead of 3. It now comes at start, above the low descriptors."""
    write_script("fds.py", """
        import os, time, zlib
        data = bytes(1 << 20)
        t = time.process_time()
        while time.process_time() - t < 0.3:  # sampled: libunwind in use
            zlib.crc32(data)
        print(os.open(os.devnull, os.O_RDONLY), os.pipe())
    """)
    plain = run_python("fds.py")
    assert plain.returncode == 0, plain.stderr
    r = run_lprof("--native", "--stacks", "fds.folded", "fds.py")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines()[0] == plain.stdout.strip()
    # the walk ran: zlib's native frames under the loop's line
    rows = _folded(tmp_path / "fds.folded")
    assert any("zlib" in f or "libz" in f for frames, _v in rows for f in frames), rows[:5]


def test_unwinder_builds_without_libunwinds_header(tmp_path):
    """Without libunwind-dev, native_unwind.c compiles its stubs only (the
    `--native` refusal); code that needs the header must stay out of them."""
    src = open(os.path.join(ROOT, "src", "collect", "native_unwind.c")).read()
    assert "__has_include(<libunwind.h>)" in src
    stubbed = tmp_path / "native_unwind_no_header.c"
    stubbed.write_text(src.replace("__has_include(<libunwind.h>)", "0"))
    r = subprocess.run(["gcc", "-std=gnu11", "-Wall", "-Wextra", "-Werror", "-fsyntax-only",
                        "-I", os.path.join(ROOT, "src"), "-I", os.path.join(ROOT, "include"),
                        str(stubbed)], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_without_native_no_native_frames(run_lprof, write_script, tmp_path):
    write_script("plain.py", """
        import json
        for _ in range(30):
            json.dumps(list(range(100_000)))
    """)
    r = run_lprof("--stacks", "p.folded", "plain.py")
    assert r.returncode == 0, r.stderr
    for frames, _v in _folded(tmp_path / "p.folded"):
        assert all(":" in f for f in frames), frames  # every frame has a file:line


def test_native_all_keeps_interpreter_frames(ext_dir, run_lprof, write_script, tmp_path):
    write_script("all.py", """
        import lpdemo
        for _ in range(20):
            lpdemo.spin(1_000_000)
    """)
    env = {"PYTHONPATH": os.pathsep.join([PKGDIR, ext_dir])}
    r = run_lprof("--native=all", "--stacks", "a.folded", "all.py", env=env)
    assert r.returncode == 0, r.stderr
    r2 = run_lprof("--native", "--stacks", "b.folded", "all.py", env=env)
    assert r2.returncode == 0, r2.stderr
    everything = {f for frames, _v in _folded(tmp_path / "a.folded") for f in frames}
    default = {f for frames, _v in _folded(tmp_path / "b.folded") for f in frames}
    names = {f.split(" (")[0] for f in everything}
    assert "PyEval_EvalCode" in names, sorted(names)  # the interpreter's own frames, kept
    assert not {f.split(" (")[0] for f in default} & {"PyEval_EvalCode", "_PyEval_EvalFrameDefault"}
    assert {f for f in default if "lpdemo" in f} <= everything


@pytest.mark.needs_shim  # --memory preloads the allocator shim, which cannot run under ASan
def test_memory_stacks_name_the_c_function_that_allocated(ext_dir, run_lprof, write_script, tmp_path):
    path = write_script("alloc.py", """
        import lpdemo

        def grow():
            for _ in range(400):
                lpdemo.hold(64 * 1024)  # hold
            return [bytearray(4096) for _ in range(2000)]  # python

        kept = grow()
    """)
    env = {"PYTHONPATH": os.pathsep.join([PKGDIR, ext_dir])}
    r = run_lprof("--native", "--memory", "--stacks", "m.folded", "--stacks-metric", "alloc", "alloc.py", env=env)
    assert r.returncode == 0, r.stderr
    rows = _folded(tmp_path / "m.folded")
    below = _frames_after(rows, f"grow ({path}:{line_of(path, 'hold')})")
    assert below, rows
    bytes_by_chain = {}
    for frames, value in below:
        key = tuple(f.split(" (")[0] for f in frames)
        bytes_by_chain[key] = bytes_by_chain.get(key, 0) + value
    top = max(bytes_by_chain, key=bytes_by_chain.get)
    assert top == ("lpdemo_hold_method", "lpdemo_allocate_block"), bytes_by_chain
    assert 0.8 * 400 * 64 * 1024 <= bytes_by_chain[top] <= 1.2 * 400 * 64 * 1024, bytes_by_chain
    # no lprof frames (hooks, shim) at the leaf of any memory stack
    for frames, _v in rows:
        assert "lprof" not in frames[-1].rsplit(" (", 1)[-1], frames[-1]


def test_native_is_refused_with_line_profiling_alone(run_lprof, write_script):
    write_script("x.py", "print('hi')\n")
    r = run_lprof("-l", "--native", "x.py")
    assert r.returncode == 2
    assert r.stderr.startswith("lprof: --native") and "\n" not in r.stderr.strip()
    assert "hi" not in r.stdout  # refused before the program ran


def test_functions_are_found_in_the_unwind_tables_under_python():
    """find_eval_loop names each frame's function from the unwind tables
    (collect/eh_frames.c, _Unwind_Find_FDE). Looked up in the global scope,
    that lookup found nothing under Python, which loads this extension and
    its libgcc_s privately: the eval loop's cold part (Debian's PGO 3.14)
    would have gone unfound."""
    import ctypes
    from lprof import _lprof
    start = ctypes.cast(ctypes.pythonapi.PyEval_EvalCode, ctypes.c_void_p).value
    found = _lprof.unwind_table_range(start + 1)
    assert found is not None and found[0] == start < start + 1 < found[1]
    assert _lprof.unwind_table_range(id(object())) is None  # heap, not code
    assert _lprof.eval_loop_ranges()


STATIC_FIRST = r"""
#define PY_SSIZE_T_CLEAN
#include <Python.h>

/* static and first in .text: in the stripped object, the symbol before it
 * is the sizeless _init */
static __attribute__((noinline)) double static_spin(long n) {
    double r = 0;
    for (long i = 0; i < n; i++) r += (double)i * 0.5;
    return r;
}

static PyObject *spin(PyObject *self, PyObject *arg) {
    (void)self;
    return PyFloat_FromDouble(static_spin(PyLong_AsLong(arg)));
}

static PyMethodDef methods[] = {{"spin", spin, METH_O, NULL}, {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "lpstatic", NULL, -1, methods};
PyMODINIT_FUNC PyInit_lpstatic(void) { return PyModule_Create(&module); }
"""


def test_a_stripped_extensions_static_functions_are_unnamed_not_misnamed(
        run_lprof, write_script, tmp_path):
    """A stripped extension keeps only its exported symbols (.dynsym): its
    static function is shown by its object and offset, never by a
    neighbour's name (the PLT stubs' _init: tests/c/test_symbols.c)."""
    src = tmp_path / "lpstatic.c"
    src.write_text(STATIC_FIRST)
    so = tmp_path / ("lpstatic" + sysconfig.get_config_var("EXT_SUFFIX"))
    subprocess.run(["gcc", *CFLAGS, "-shared", "-I", sysconfig.get_paths()["include"], str(src),
                    "-o", str(so)], check=True)
    subprocess.run(["strip", "--strip-all", str(so)], check=True)
    dynsyms = subprocess.run(["nm", "-D", "--defined-only", str(so)], capture_output=True,
                             text=True).stdout
    assert "static_spin" not in dynsyms and "PyInit_lpstatic" in dynsyms, dynsyms
    write_script("st.py", "import lpstatic\nlpstatic.spin(60_000_000)  # spin\n")
    r = run_lprof("--native", "--rate", "1000", "-q", "-o", "s.lprof", "--stacks", "s.folded",
                  "st.py")
    assert r.returncode == 0, r.stderr
    below = _frames_after(_folded(tmp_path / "s.folded"), f"<module> ({tmp_path / 'st.py'}:2)")
    assert below, "no stack holds the spin line"
    heaviest = max(below, key=lambda fv: fv[1])[0]
    names = [f.split(" (")[0] for f in heaviest]
    assert not {"_init", "_fini", "PyInit_lpstatic"} & set(names), heaviest
    assert any(re.fullmatch(r"lpstatic.*\.so\+0x[0-9a-f]+", n) for n in names), heaviest
