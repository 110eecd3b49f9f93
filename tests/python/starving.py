"""Programs that starve lprof's threads of the GIL, for the starved tests.

A loop that releases and retakes the GIL thousands of times a second (a
stat every few thousand loops) keeps every other thread waiting for it for
seconds: CPython asks the holder to give way only after a switch interval
without a switch, and each release is one."""

_LOOP = """\
    end = time.perf_counter() + {seconds}
    n = 0
    while time.perf_counter() < end:
        n += 1  # spinning
        if n % {every} == 0 and os.path.exists("never-there"):  # a short GIL release
            break
"""


def program(seconds, every, on_thread=False, ready=False, done=False):
    """The script's text: the loop for `seconds` (an expression), one stat
    every `every` loops, on the main thread or on another one while the
    main thread waits in join; "ready" printed before it, "done" after."""
    lines = [
        "import os, sys, threading, time",
        "def spin():",
        _LOOP.format(seconds=seconds, every=every).rstrip("\n"),
    ]
    if on_thread:
        lines += ["t = threading.Thread(target=spin)", "t.start()"]
    if ready:
        lines.append('print("ready", flush=True)')
    lines.append("t.join()" if on_thread else "spin()")
    if done:
        lines.append('print("done")')
    return "\n".join(lines) + "\n"
