"""Other processes as lprof sees them: whether one still runs, its parent,
the processes below it, and multiprocessing's helper processes. The one
reader of /proc/PID/stat and /proc/PID/cmdline for the runner (followed
children), the attach command and the agent inside the attached process."""

import os


def _stat(pid):
    """The fields of /proc/PID/stat after the command name (which may hold
    spaces and parentheses), as bytes: [state, ppid, ...]; None when the
    file cannot be read."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:  # bytes: a name need not decode
            data = fh.read()
    except OSError:
        return None
    _name, paren, rest = data.rpartition(b")")
    return rest.split() if paren else []


def exists(pid):
    """The process exists (a zombie too), whoever owns it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True


def alive(pid):
    """A process that exists and is not a zombie (a finished child not yet
    reaped); one whose state cannot be read counts as alive."""
    if not exists(pid):
        return False
    fields = _stat(pid)
    return not fields or fields[0] != b"Z"


def gone(pid):
    """True when the process has ended (a zombie has, too), or /proc no
    longer shows it."""
    fields = _stat(pid)
    return fields is None or fields[:1] in ([b"Z"], [b"X"])


def parent_of(pid):
    """The parent's pid (None when gone or unreadable)."""
    fields = _stat(pid)
    try:
        return int(fields[1])
    except (TypeError, ValueError, IndexError):
        return None


def descendants(pid):
    """Every process below `pid` (children, theirs, ...), from /proc."""
    children = {}
    for name in os.listdir("/proc"):
        ppid = parent_of(name) if name.isdigit() else None
        if ppid is not None:
            children.setdefault(ppid, []).append(int(name))
    out, todo = [], [pid]
    while todo:
        for child in sorted(children.get(todo.pop(0), [])):
            out.append(child)
            todo.append(child)
    return out


def multiprocessing_helper(pid="self"):
    """Which helper process multiprocessing started with a fresh interpreter
    this is, if one ("resource_tracker", "forkserver"; they live until the
    parent ends, doing none of the program's work); else None."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as fh:
            cmdline = fh.read()
    except OSError:
        return None
    for name in ("resource_tracker", "forkserver"):
        if b"from multiprocessing." + name.encode() + b" import main" in cmdline:
            return name
    return None


def pythons_below(pid):
    """The descendants that run a Python executable (a shell or a compiler
    in between is no Python to attach to), but multiprocessing's forkserver
    and resource tracker: they run none of the program's code and wait in
    one long call, which would keep an attach from starting there. (The
    workers the forkserver forks share its command line: they are kept.)"""
    out = []
    for child in descendants(pid):
        try:
            exe = os.path.basename(os.readlink(f"/proc/{child}/exe"))
        except OSError:
            continue
        helper = multiprocessing_helper(child)
        if exe.startswith("python") and (
            helper is None or multiprocessing_helper(parent_of(child)) == helper
        ):
            out.append(child)
    return out
