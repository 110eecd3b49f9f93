"""A program that uses up its address space (ulimit -v) still gets its
profile built, written and printed: the recording keeps 16 MB of address
space back (python/lprof/common/headroom.py) and gives it back when it stops."""
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

    def mapped():
        with open("/proc/self/maps") as fh:
            return sum(int(b, 16) - int(a, 16) for a, b in
                       (line.split()[0].split("-") for line in fh if " ---p " in line))
    before = mapped()
    headroom.take()
    headroom.take()  # held once
    assert mapped() - before == headroom.SIZE
    headroom.release()
    headroom.release()
    assert mapped() == before
