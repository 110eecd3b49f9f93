"""The frame walker on made-up chains (src/collect/cpython/frames.c through
tests/native_ext/frame_walk_probe.c, built here against this interpreter's
headers): a torn chain read from a thread that moved ends the walk within a
few reads. Before, a chain whose stale end pointed at itself cost 100000
hops of process_vm_readv calls: the wall thread stalled for a second on one
read under load, and an asyncio run lost its samples (test_async_tasks)."""
import ctypes
import os
import shutil
import subprocess
import sysconfig

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


@pytest.fixture(scope="module")
def probe(tmp_path_factory):
    if shutil.which("gcc") is None:
        pytest.skip("no gcc to build the probe")
    inc = sysconfig.get_paths()["include"]
    so = tmp_path_factory.mktemp("walk") / "frame_walk_probe.so"
    subprocess.run(
        ["gcc", "-std=gnu11", "-O1", "-g", "-fPIC", "-shared", "-Wall", "-Wextra", "-Werror",
         "-Wno-missing-field-initializers", "-Wno-unused-function",
         "-I", os.path.join(ROOT, "src"), "-I", os.path.join(ROOT, "include"),
         "-I", inc, "-I", os.path.join(inc, "internal"),
         os.path.join(ROOT, "tests", "native_ext", "frame_walk_probe.c"), "-o", str(so)],
        check=True,
    )
    lib = ctypes.PyDLL(str(so))
    for name in ("probe_torn_chain", "probe_sound_chain"):
        fn = getattr(lib, name)
        fn.argtypes = [ctypes.py_object, ctypes.POINTER(ctypes.c_long)]
        fn.restype = ctypes.c_int
    return lib


def _code():
    def f():
        return 1
    return f.__code__


def test_a_sound_chain_is_walked_whole(probe):
    reads = ctypes.c_long()
    assert probe.probe_sound_chain(_code(), ctypes.byref(reads)) == 2
    assert reads.value > 0


def test_a_torn_chain_ends_the_walk_within_a_few_reads(probe):
    reads = ctypes.c_long()
    n = probe.probe_torn_chain(_code(), ctypes.byref(reads))
    assert n == 2  # the frames before the torn end
    # a few reads per frame and per skipped hop, not 100000 hops' worth
    assert reads.value < 100, reads.value

