"""gil% per line: the part of a line's own sampled time its thread held the
GIL (the sample's GIL flag, charged as gil_s). A C call that keeps the GIL
(sorted) stops every other thread's Python; one that releases it (hashing
a large buffer) does not."""
import re

PROGRAM = """\
import hashlib, random, threading
random.seed(1)
big = [random.random() for _ in range(200000)]
data = b"x" * (32 << 20)

def keeps_the_gil():
    for _ in range(ROUNDS):
        sorted(big)  # keeps

def releases_the_gil():
    for _ in range(ROUNDS):
        hashlib.sha256(data).digest()  # releases

t = threading.Thread(target=keeps_the_gil)
t.start()
releases_the_gil()
t.join()
"""


def _gil_of(listing, marker):
    """(time(s), gil%) of the source line holding marker."""
    header = next(ln for ln in listing.splitlines() if "gil%" in ln and "source" in ln)
    for ln in listing.splitlines():
        if marker in ln and not ln.lstrip().startswith(("gil%", "Columns")):
            cells = ln[:header.index("source")]
            nums = re.findall(r"(\d+\.\d+)\s+(\d+)%\s*$", cells)
            assert nums, ln
            return float(nums[0][0]), int(nums[0][1])
    raise AssertionError(f"{marker!r} not listed:\n{listing}")


def test_a_call_that_keeps_the_gil_and_one_that_releases_it(run_lprof, write_script, tmp_path):
    write_script("gil.py", PROGRAM.replace("ROUNDS", "8"))
    r = run_lprof("gil.py", env={"COLUMNS": "200"})
    assert r.returncode == 0, r.stderr
    assert "gil% = share of the line's own time" in " ".join(r.stdout.split())
    keeps_s, keeps = _gil_of(r.stdout, "# keeps")
    releases_s, releases = _gil_of(r.stdout, "# releases")
    assert keeps_s > 0.05 and releases_s > 0.05, r.stdout  # both lines were sampled enough
    assert keeps >= 90, r.stdout
    assert releases <= 10, r.stdout
    # the GIL's flame graph: the stacks that held it, by the same column
    r = run_lprof("export", "gil.py.sample.lprof", "--format", "folded", "--metric", "gil",
                  "-o", "gil.folded")
    assert r.returncode == 0, r.stderr
    folded = (tmp_path / "gil.folded").read_text()

    def held_us(function):
        return sum(int(ln.rsplit(" ", 1)[1]) for ln in folded.splitlines()
                   if f"{function} (" in ln)
    # the hashing line holds the GIL only around the call (a sample or two)
    assert held_us("releases_the_gil") <= 0.1 * held_us("keeps_the_gil"), folded
    assert held_us("keeps_the_gil") > 0, folded


def test_one_thread_shows_no_gil_column(run_lprof, write_script):
    write_script("one.py", "total = 0\nfor i in range(3_000_000):\n    total += i\n")
    r = run_lprof("one.py")
    assert r.returncode == 0, r.stderr
    assert "gil%" not in r.stdout
