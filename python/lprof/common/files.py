"""Writing lprof's files whole: every profile, export and report goes to a
temporary file in its folder, renamed over the path when complete, so that a
reader (or a checkpoint racing the final write) never sees half a file."""

import contextlib
import os
import tempfile


def save_bytes(data, path):
    """Atomically write bytes (an encoded profile, a report) to `path`: a
    temporary file in the same folder, renamed over it."""
    fd, tmp = _temp_beside(path)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
    except BaseException:
        _discard(tmp)
        raise


@contextlib.contextmanager
def atomic_path(path):
    """The same writer for code that opens the file itself (the C folder,
    a JSON stream): yields a temporary path in path's folder, renamed over
    path when the block ends, removed if it raises. A device or pipe (a
    FIFO) and a symbolic link (/dev/stdout, a regular file when the shell
    redirects it) are yielded as they are: renaming over them would replace
    the device node or the link, where the output was meant to go through."""
    if os.path.islink(path) or (os.path.exists(path) and not os.path.isfile(path)):
        yield path
        return
    fd, tmp = _temp_beside(path)
    try:
        os.close(fd)
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        _discard(tmp)
        raise


def _temp_beside(path):
    """(fd, name) of a new temporary file in path's folder, with the mode
    open() would give it (mkstemp makes it 0600; 0666 less the umask)."""
    directory = os.path.dirname(os.path.abspath(path))
    fd, tmp = tempfile.mkstemp(prefix=".lprof-", suffix=".tmp", dir=directory)
    try:
        os.fchmod(fd, 0o666 & ~umask())
    except BaseException:
        os.close(fd)
        _discard(tmp)
        raise
    return fd, tmp


def _discard(tmp):
    try:
        os.unlink(tmp)
    except OSError:
        pass


def umask():
    """The process umask, read without changing it where Linux tells it
    (/proc/self/status): setting and restoring it could race with files the
    program creates in other threads meanwhile."""
    from .procinfo import status_field

    try:
        return int(status_field("Umask") or "022", 8)
    except ValueError:
        return 0o022


def write_text(path, text):
    """Writes a text output whole: to a temporary file in the same folder,
    then renamed over path, so a reader (or a checkpoint racing the final
    write) never sees half a file. A device, a pipe or a link (/dev/stdout,
    a FIFO) is written through: renaming over it would replace the device
    node or the link (atomic_path below)."""
    with atomic_path(path) as tmp:
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(text)
