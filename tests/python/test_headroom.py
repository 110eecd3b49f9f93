"""A program that uses up its address space (ulimit -v) still gets its
profile built, written and printed: the recording keeps 16 MB of address
space back (python/lprof/common/headroom.py) and gives it back when it stops."""
import os

import pytest

EXHAUST = """
import ctypes, resource
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
n = 0
for size in (25 << 20, 1 << 20, 64 << 10):  # every block the limit allows, to the last 64 KiB
    while libc.malloc(size):
        n += 1
print("blocks", n > 0)
"""


# under ASan the program's malloc is ASan's, which aborts the process when the
# address space runs out: nothing lprof could keep a profile through
@pytest.mark.skipif(os.environ.get("LPROF_SANITIZED") == "1", reason="ASan aborts when the address space runs out")
@pytest.mark.parametrize("mode", [[], ["--wall"], ["-l"], ["--memory"]])
def test_a_program_that_uses_up_its_address_space_keeps_its_profile(tmp_path, run_lprof, write_script,
                                                                     load_profile, mode):
    write_script("as.py", EXHAUST)
    r = run_lprof(*mode, "-o", "p.lprof", "as.py")
    assert r.returncode == 0, r.stderr
    assert "blocks True" in r.stdout and "Error" not in r.stderr, r.stderr
    prof = load_profile(str(tmp_path / "p.lprof"))
    assert prof["meta"]["exit_code"] == 0


def test_the_headroom_is_address_space_given_back_once():
    from lprof.common import headroom

    def held():  # mappings nothing can touch, of the headroom's size
        with open("/proc/self/maps") as fh:
            return sum(1 for line in fh if " ---p " in line and
                       (lambda a, b: int(b, 16) - int(a, 16))(*line.split()[0].split("-")) == headroom.SIZE)
    before = held()
    headroom.take()
    headroom.take()  # held once
    assert held() == before + 1
    headroom.release()
    headroom.release()
    assert held() == before
