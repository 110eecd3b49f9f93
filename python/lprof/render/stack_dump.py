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
