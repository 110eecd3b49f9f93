"""common/procinfo.status_field: the one reader of /proc/self/status (the
umask lprof's files are written with, whether a tracer is attached)."""
import os
import subprocess
import sys

from lprof.common import files, procinfo


def test_status_field_reads_the_kernels_values():
    assert procinfo.status_field("Pid") == str(os.getpid())
    assert procinfo.status_field("NoSuchField") is None
    # this test runs under no debugger
    assert procinfo.status_field("TracerPid") == "0"


def test_umask_is_read_without_being_changed():
    # a process of its own: os.umask is process-wide
    code = (
        "import os, sys; sys.path.insert(0, sys.argv[1]); os.umask(0o027)\n"
        "from lprof.common import files\n"
        "print(oct(files.umask()), oct(os.umask(0o027)))"
    )
    python_dir = os.path.dirname(os.path.dirname(os.path.dirname(files.__file__)))
    out = subprocess.run([sys.executable, "-c", code, python_dir], capture_output=True, text=True, timeout=60)
    assert out.stdout.split() == ["0o27", "0o27"], out.stderr
