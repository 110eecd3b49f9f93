"""Text of what was read from another process from outside: `lprof dump`'s
stacks (as a traceback prints them: outermost call first, the line running
now last) and attach's outside-sampling listing (wall-clock samples per
line, per thread)."""


def _thread_title(t, pid):
    ident = t["native_id"] or "0x%x" % t["thread_id"]
    name = f' "{t["name"]}"' if t.get("name") else ""
    main = " (main)" if t["native_id"] == pid else ""
    return f"Thread {ident}{name}{main}"


def _frame_line(file, func, line):
    at = f"line {line}" if line >= 0 else "line ?"
    return f'  File "{file}", {at}, in {func}'


def format_dump(pid, version, threads):
    """The stacks of `threads` (remote_stacks.read's list) as text."""
    v = "%d.%d" % version if version else "?"
    n = len(threads)
    out = [
        f"Process {pid} (Python {v}): {n} thread{'s' if n != 1 else ''}, "
        f"read from outside (most recent call last)"
    ]
    # the main thread first, then as the interpreter lists them
    for t in sorted(threads, key=lambda t: t["native_id"] != pid):
        out.append("")
        out.append(_thread_title(t, pid))
        if not t["frames"]:
            out.append("  (no Python frames)")
        for frame in reversed(t["frames"]):
            out.append(_frame_line(*frame[:3]))
            for name, value in frame[3] if len(frame) > 3 else ():
                out.append(f"      {name} = {value}")
        if not t["complete"]:
            out.append("  (stack truncated: a frame did not read; the thread was moving)")
    return "\n".join(out) + "\n"


def _native_line(f):
    where = f"{f['library']}+0x{f['library_offset']:x}" if f["library"] else f"0x{f['address']:x}"
    if f["function"]:
        return f"  [native] {f['function']}+0x{f['offset']:x} ({f['library'] or '?'})"
    return f"  [native] {where}"


def format_native_dump(pid, version, threads, notes):
    """`lprof dump --native`: each thread's C and Python frames merged
    (remote_native.read), outermost first, C frames marked [native]."""
    v = "%d.%d" % version if version else "?"
    n = len(threads)
    out = [
        f"Process {pid} (Python {v}): {n} thread{'s' if n != 1 else ''}, stopped for the read "
        f"and released (most recent call last; [native]: a C frame)"
    ]
    for t in sorted(threads, key=lambda t: t["native_id"] != pid):
        out.append("")
        out.append(_thread_title(t, pid))
        for f in reversed(t["stack"]):
            if f["kind"] == "native":
                out.append(_native_line(f))
                continue
            out.append(_frame_line(f["file"], f["function"], f["line"]))
            for name, value in f.get("locals", {}).items():
                out.append(f"      {name} = {value}")
        if not t["stack"]:
            out.append("  (no frames)")
        if t["merge"] == "mismatch":
            out.append(
                "  (C and Python stacks did not agree: C frames inside the first eval call, then Python)"
            )
        elif t["merge"] != "ok":
            out.append("  (no C stack for this thread: Python frames only)")
        if not t["complete"]:
            out.append("  (stack truncated: a frame did not read)")
    for note in notes:
        out.append("")
        out.append(f"({note})")
    return "\n".join(out) + "\n"


def format_samples(pid, result, top=20):
    """attach's outside-sampling listing: per thread, the lines seen most
    often at the top of its stack (self) and anywhere on it (total)."""
    n = result["samples"]
    out = [
        f"Process {pid}: {n} wall-clock samples over {result['seconds']:.1f} s "
        f"({result['rate_hz']} Hz, read from outside: every thread counts whether it runs "
        f"or waits)"
    ]
    if result.get("ended"):
        out.append("(the process ended while sampled)")
    if result.get("interrupted"):
        out.append("(stopped by Ctrl-C)")
    threads = sorted(result["threads"].items(), key=lambda kv: (kv[0] != pid, -kv[1]["samples"]))
    for key, th in threads:
        name = f' "{th["name"]}"' if th.get("name") else ""
        main = " (main)" if key == pid else ""
        # a native thread id, else (3.10) the Python thread id, in hex as lprof dump shows it
        ident = key if th.get("native") else "0x%x" % key
        out.append("")
        out.append(f"Thread {ident}{name}{main}: {th['samples']} samples")
        if not th["total"]:
            out.append("  (no Python frames)")
            continue
        out.append(f"  {'Self%':>6} {'Total%':>6}  Line")
        rows = sorted(th["total"].items(), key=lambda kv: (-th["self"].get(kv[0], 0), -kv[1]))
        for (file, line, func), total in rows[:top]:
            own = th["self"].get((file, line, func), 0)
            at = line if line >= 0 else "?"
            out.append(
                f"  {100.0 * own / max(th['samples'], 1):6.1f} "
                f"{100.0 * total / max(th['samples'], 1):6.1f}  {file}:{at} {func}"
            )
    return "\n".join(out) + "\n"
