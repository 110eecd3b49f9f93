"""Output paths checked before the program runs: a profile that cannot be
written must be refused up front, not lost after a long run, and lprof must
never overwrite the user's own source. Writing them is common/files.py's."""

import os
import tempfile

from ..common.errors import LprofError


def check(paths, protected=()):
    """paths: [(option, path)] of files lprof will write; protected: files
    that must never be replaced (the script). Raises a one-line LprofError."""
    seen = {}
    for option, path in paths:
        if not path:
            continue
        full = os.path.abspath(path)
        if full in seen:
            raise LprofError(f"{option} {path}: also given to {seen[full]}", 2)
        seen[full] = option
        for keep in protected:
            if keep and _same_file(full, keep):
                raise LprofError(f"{option} {path}: that is the program's own source; choose another file", 2)
        if os.path.isdir(full):
            raise LprofError(f"{option} {path}: is a directory", 2)
        if os.path.lexists(full) and not os.path.isfile(full):
            raise LprofError(f"{option} {path}: exists and is not a regular file", 2)
        folder = os.path.dirname(full)
        if not os.path.isdir(folder):
            raise LprofError(f"{option} {path}: directory '{folder}' does not exist", 2)
        _check_folder_writable(option, path, folder)


def _same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return os.path.abspath(a) == os.path.abspath(b)


def _check_folder_writable(option, path, folder):
    # a real probe: access() says yes to root on read-only mounts and /proc
    try:
        fd, probe = tempfile.mkstemp(prefix=".lprof-probe-", dir=folder)
    except OSError as exc:
        raise LprofError(f"{option} {path}: cannot write in '{folder}' ({exc.strerror or exc})", 2) from None
    os.close(fd)
    try:
        os.unlink(probe)
    except OSError:
        pass
