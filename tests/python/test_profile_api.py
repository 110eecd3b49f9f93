"""`from lprof import profile` in a normal program (no lprof command)."""
import functools
import inspect
import io

from lprof import profile


def test_decorating_returns_the_same_object():
    def f(a, b=2, *, c):
        """doc"""
        return a + b + c
    assert profile(f) is f
    assert inspect.signature(f) == inspect.signature(profile(f))

    class K:
        @profile
        @classmethod
        def cm(cls):
            return cls

        @profile
        @staticmethod
        def sm(x):
            return x

        @profile
        @property
        def p(self):
            return 5

    assert K.cm() is K and K.sm(3) == 3 and K().p == 5
    lam = profile(lambda x: x + 1)
    assert lam(1) == 2

    @profile
    @functools.wraps(f)
    def wrapper(*a, **k):
        return f(*a, **k)
    assert wrapper.__name__ == "f" and wrapper.__doc__ == "doc"


def test_noop_until_enabled_then_counts():
    @profile
    def g(n):
        return n * 3

    g(1)  # not enabled: nothing recorded
    before = _hits(profile.snapshot(), "g")
    assert before == 0
    with profile:
        for i in range(5):
            g(i)
    assert _hits(profile.snapshot(), "g") == 5
    g(1)  # disabled again
    assert _hits(profile.snapshot(), "g") == 5
    out = io.StringIO()
    profile.print_stats(stream=out)
    assert "Function: " in out.getvalue() and "g at line" in out.getvalue()


def test_generators_and_async_are_traced():
    import asyncio

    @profile
    def gen(n):
        for i in range(n):
            yield i

    @profile
    async def coro(n):
        total = 0
        for i in range(n):
            await asyncio.sleep(0)
            total += i
        return total

    profile.enable()
    try:
        assert sum(gen(4)) == 6
        assert asyncio.run(coro(3)) == 3
    finally:
        profile.disable()
    snap = profile.snapshot()
    assert _line_hits(snap, "gen", "yield i") == 4
    assert _line_hits(snap, "coro", "total += i") == 3


def _hits(snapshot, name):
    # this file's functions only: other tests in the process trace a `g` too
    return sum(h for f in snapshot["functions"]
               if f["name"].endswith(name) and f["file"].endswith("test_profile_api.py")
               for _l, h, _t in f["lines"])


def _line_hits(snapshot, name, text):
    import linecache
    for f in snapshot["functions"]:
        if f["name"].endswith(name):
            for ln, h, _t in f["lines"]:
                if linecache.getline(f["file"], ln).strip() == text:
                    return h
    return None
