"""Assembling a profile dict from the collectors that ran (see docs/contracts.md)."""
import os
import sys
import time

from . import _lprof, libdirs

STARTED = time.time()


def base_profile(modes, argv=None):
    return {
        "format": "lprof",
        "version": 1,
        "meta": {
            "argv": list(argv if argv is not None else sys.argv),
            "python": "%d.%d.%d" % sys.version_info[:3],
            "implementation": _implementation(),
            "pid": os.getpid(),
            "hostname": os.uname().nodename,
            "cwd": os.getcwd(),
            "started": STARTED,
            "duration_s": time.time() - STARTED,
            "exit_code": None,
            "modes": list(modes),
            "timer": _lprof.timer_name(),
            "timer_unit_s": _lprof.timer_unit(),
            "lprof_version": _version(),
        },
        "functions": [],
    }


def _implementation():
    # platform.python_implementation()'s spelling, without importing platform
    name = sys.implementation.name
    return {"cpython": "CPython", "pypy": "PyPy"}.get(name, name)


def _version():
    from . import __version__
    return __version__


def merge_snapshot(profile, snapshot):
    """Merges one collector's snapshot into the profile; 'stacks' are concatenated."""
    for key, value in snapshot.items():
        if key == "stacks" and "stacks" in profile:
            _append_stacks(profile["stacks"], value)
        else:
            profile[key] = value
    return profile


def _append_stacks(into, more):
    """Appends `more`'s stacks to `into`, renumbering frame ids."""
    index = {tuple(f): i for i, f in enumerate(into["frames"])}
    remap = []
    for frame in more.get("frames", []):
        key = tuple(frame)
        if key not in index:
            index[key] = len(into["frames"])
            into["frames"].append(list(frame))
        remap.append(index[key])
    for ids, thread, metrics in more.get("stacks", []):
        into["stacks"].append([[remap[i] for i in ids], thread, metrics])


def strip_launcher_frames(profile):
    """Drops lprof's own frames (and runpy's above them) from the root of every stack.

    Stacks sampled under the lprof command start with runpy, lprof's CLI and
    runner; the program's stacks begin below the last lprof frame. Stacks that
    become equal are merged (metrics summed)."""
    stacks = profile.get("stacks")
    if not stacks:
        return profile
    frames = stacks["frames"]
    own = {i for i, f in enumerate(frames) if f[0].startswith(libdirs.LPROF_DIR)}
    merged = {}
    for ids, thread, metrics in stacks["stacks"]:
        if own and not own.isdisjoint(ids):  # most stacks (memory's) come without them
            cut = max(i for i, fid in enumerate(ids) if fid in own) + 1
            ids = ids[cut:]
        key = (tuple(ids), thread)
        if key in merged:
            into = merged[key]
            for name, value in metrics.items():
                into[name] = into.get(name, 0) + value
        else:
            merged[key] = dict(metrics)
    stacks["stacks"] = [[list(ids), thread, m] for (ids, thread), m in merged.items() if ids]
    return profile
