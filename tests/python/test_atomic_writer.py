"""The one atomic writer every export goes through (lprof.common.files):
a file appears whole or not at all; a link or a device is written through,
never replaced (/dev/stdout is a link, to a regular file when the shell
redirects it)."""
import os
import subprocess
import sys

import pytest

from conftest import lprof_env
from lprof.common.files import atomic_path

WORKLOAD = "def f():\n    s = 0\n    for i in range(3000000):\n        s += i\n    return s\n\n\nf()\n"


def test_a_new_file_appears_whole_and_no_temporary_is_left(tmp_path):
    out = tmp_path / "out.txt"
    with atomic_path(str(out)) as tmp:
        assert tmp != str(out) and os.path.dirname(tmp) == str(tmp_path)
        with open(tmp, "w") as fh:
            fh.write("whole\n")
        assert not out.exists()
    assert out.read_text() == "whole\n"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_a_failed_write_leaves_the_old_file(tmp_path):
    out = tmp_path / "out.txt"
    out.write_text("old\n")
    with pytest.raises(RuntimeError):
        with atomic_path(str(out)) as tmp:
            with open(tmp, "w") as fh:
                fh.write("half")
            raise RuntimeError("the writer failed")
    assert out.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["out.txt"]


def test_a_link_is_written_through(tmp_path):
    (tmp_path / "real.txt").write_text("old\n")
    link = tmp_path / "link.txt"
    link.symlink_to("real.txt")
    with atomic_path(str(link)) as tmp:
        with open(tmp, "w") as fh:
            fh.write("new\n")
    assert link.is_symlink()
    assert (tmp_path / "real.txt").read_text() == "new\n"


@pytest.mark.parametrize("fmt,output", [("folded", "-"), ("folded", "/dev/stdout"),
                                        ("json", "/dev/stdout"), ("pstats", "/dev/stdout"),
                                        ("chrome", "/dev/stdout"), ("html", "/dev/stdout")])
def test_stdout_redirected_to_a_file_gets_the_export(fmt, output, run_lprof, write_script, tmp_path):
    script = write_script("w.py", WORKLOAD)
    r = run_lprof("-q", "-o", "w.lprof", script)
    assert r.returncode == 0, r.stderr
    target = tmp_path / f"out.{fmt}"
    was_link = os.path.islink("/dev/stdout")
    with open(target, "wb") as fh:
        r = subprocess.run([sys.executable, "-m", "lprof", "export", "w.lprof", "-f", fmt,
                            "-o", output], cwd=tmp_path, env=lprof_env(), stdout=fh,
                           stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert os.path.islink("/dev/stdout") == was_link  # the device's link is left alone
    assert target.stat().st_size > 0
    assert not [n for n in os.listdir(tmp_path) if n.endswith(".tmp")]
