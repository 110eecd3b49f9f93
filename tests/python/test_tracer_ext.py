"""The C line tracer (lprof._lprof.tracer_*) exercised directly.

Hit counts are exact; times are checked as shares or bounds that hold on a
noisy 2-core machine but fail when attribution is wrong (for example when
suspended time is counted or a callee's time is lost)."""
import asyncio
import sys
import threading
import time

import pytest

from lprof import _lprof as L

UNIT = L.timer_unit()


@pytest.fixture
def tracer():
    L.tracer_disable()
    L.tracer_clear()
    yield L
    L.tracer_disable()
    L.tracer_clear()


def traced(*funcs):
    for f in funcs:
        L.tracer_add_code(f.__code__)


def stats_of(func):
    """{line offset from the def line: (hits, seconds)}, total seconds."""
    code = func.__code__
    for c, total, lines in L.tracer_stats():
        if c is code:
            return ({ln - code.co_firstlineno: (h, t * UNIT) for ln, h, t in lines}, total * UNIT)
    return {}, 0.0


def hits_of(func):
    lines, _ = stats_of(func)
    return {k: h for k, (h, _t) in lines.items()}


# --- exact hit counts ------------------------------------------------------

def branchy(x):
    if x > 0:
        y = 1
    else:
        y = 2
    return y


def fact(n):
    if n <= 1:
        return 1
    return n * fact(n - 1)


def loop(n):
    s = 0
    for i in range(n):
        s += i
    return s


def test_if_else_true_condition_counted(tracer):
    traced(branchy)
    tracer.tracer_enable()
    for x in (1, 1, 1, -1, -1):
        branchy(x)
    tracer.tracer_disable()
    assert hits_of(branchy) == {1: 5, 2: 3, 4: 2, 5: 5}


def test_recursion_hits_and_base_case(tracer):
    traced(fact)
    tracer.tracer_enable()
    assert fact(6) == 720
    tracer.tracer_disable()
    assert hits_of(fact) == {1: 6, 2: 1, 3: 5}


def test_recursion_total_not_double_counted(tracer):
    traced(fact)
    tracer.tracer_enable()
    t0 = time.perf_counter()
    for _ in range(200):
        fact(50)
    wall = time.perf_counter() - t0
    tracer.tracer_disable()
    lines, total = stats_of(fact)
    assert total > 0
    # Outermost activations only: never more than the wall time around the
    # calls (counting nested calls too would give ~25x that).
    assert total <= wall * 1.05
    # The recursive line includes the nested calls' time.
    assert lines[3][1] > 0.5 * total


def test_loop_hits(tracer):
    traced(loop)
    tracer.tracer_enable()
    loop(10)
    loop(3)
    tracer.tracer_disable()
    assert hits_of(loop) == {1: 2, 2: 10 + 1 + 3 + 1, 3: 13, 4: 2}


def comp(n):
    squares = [i * i for i in range(n)]
    return len(squares)


def test_list_comprehension(tracer):
    assert tracer.tracer_add_code(comp.__code__) is True
    assert tracer.tracer_add_code(comp.__code__) is False
    tracer.tracer_enable()
    comp(50)
    tracer.tracer_disable()
    assert hits_of(comp) == {1: 1, 2: 1}
    # Before 3.12 the comprehension is a code object of its own among the
    # function's constants; it is not registered (its time is its line's,
    # its hits that line's, as with 3.12's inlined comprehensions).
    nested = [c for c, _t, _l in L.tracer_stats() if c.co_name == "<listcomp>"]
    assert nested == []


def outer_with_lambda():
    f = lambda v: v + 1
    return f(1) + f(2)


def test_nested_code_registered(tracer):
    traced(outer_with_lambda)
    tracer.tracer_enable()
    outer_with_lambda()
    tracer.tracer_disable()
    names = {c.co_name for c, _t, _l in tracer.tracer_stats()}
    assert "<lambda>" in names
    lam = [l for c, _t, l in tracer.tracer_stats() if c.co_name == "<lambda>"][0]
    assert lam[0][1] == 2


def test_add_code_rejects_non_code(tracer):
    with pytest.raises(TypeError):
        tracer.tracer_add_code(branchy)


def late_added(n):
    return n + 1


def test_add_code_while_enabled(tracer):
    tracer.tracer_enable()
    assert tracer.tracer_is_enabled()
    tracer.tracer_enable()  # idempotent
    traced(late_added)
    late_added(1)
    late_added(2)
    tracer.tracer_disable()
    tracer.tracer_disable()
    assert not tracer.tracer_is_enabled()
    assert hits_of(late_added) == {1: 2}
    late_added(3)  # not traced after disable
    assert hits_of(late_added) == {1: 2}
    tracer.tracer_clear()
    assert hits_of(late_added) == {}


def enables_inside():
    L.tracer_enable()
    x = 1
    y = 2
    return x + y


def test_enable_inside_running_function(tracer):
    """A frame already running when tracing starts is adopted at its next line."""
    traced(enables_inside)
    assert enables_inside() == 3
    tracer.tracer_disable()
    assert hits_of(enables_inside) == {2: 1, 3: 1, 4: 1}
    assert stats_of(enables_inside)[1] > 0


# --- generators and coroutines -----------------------------------------------

def gen(n):
    for i in range(n):
        yield i
    return


def test_generator_suspended_time_not_counted(tracer):
    traced(gen)
    tracer.tracer_enable()
    for _ in gen(3):
        time.sleep(0.05)
    tracer.tracer_disable()
    lines, total = stats_of(gen)
    assert {k: h for k, (h, _t) in lines.items()} == {1: 4, 2: 3, 3: 1}
    assert total < 0.02
    assert all(t < 0.02 for _h, t in lines.values())


def send_gen():
    x = yield 1
    y = x * 2
    yield y


def test_generator_send_and_throw(tracer):
    traced(send_gen)
    tracer.tracer_enable()
    it = send_gen()
    next(it)
    time.sleep(0.03)
    assert it.send(5) == 10
    it2 = send_gen()
    next(it2)
    with pytest.raises(KeyError):
        it2.throw(KeyError("k"))
    tracer.tracer_disable()
    lines, total = stats_of(send_gen)
    assert {k: h for k, (h, _t) in lines.items()} == {1: 2, 2: 1, 3: 1}
    assert total < 0.02


async def coro():
    await asyncio.sleep(0.1)
    x = 1
    return x


async def coro_main():
    a = await coro()
    b = await coro()
    return a + b


def test_async_sleep_not_counted(tracer):
    traced(coro, coro_main)
    tracer.tracer_enable()
    assert asyncio.run(coro_main()) == 2
    tracer.tracer_disable()
    lines, total = stats_of(coro)
    assert {k: h for k, (h, _t) in lines.items()} == {1: 2, 2: 2, 3: 2}
    assert total < 0.05
    main_lines, main_total = stats_of(coro_main)
    assert {k: h for k, (h, _t) in main_lines.items()} == {1: 1, 2: 1, 3: 1}
    assert main_total < 0.05


# --- exceptions ----------------------------------------------------------------

def raiser():
    raise ValueError("boom")


def middle():
    raiser()
    return 1


def catcher():
    try:
        middle()
    except ValueError:
        y = 1
    return y


def test_exception_unwind_and_catch(tracer):
    traced(raiser, middle, catcher, loop)
    tracer.tracer_enable()
    for _ in range(3):
        assert catcher() == 1
    with pytest.raises(ValueError):
        middle()
    loop(2)  # the shadow stack is consistent afterwards
    tracer.tracer_disable()
    assert hits_of(catcher) == {1: 3, 2: 3, 3: 3, 4: 3, 5: 3}
    assert hits_of(middle) == {1: 4}
    assert hits_of(raiser) == {1: 4}
    assert hits_of(loop) == {1: 1, 2: 3, 3: 2, 4: 1}
    assert stats_of(middle)[1] > 0


# --- threads -------------------------------------------------------------------

def busy(n):
    s = 0
    for i in range(n):
        s += i
    return s


def test_threads_hits_summed(tracer):
    traced(busy)
    go = threading.Event()
    early = threading.Thread(target=lambda: (go.wait(), busy(1000)))
    early.start()  # exists before tracing starts
    tracer.tracer_enable()
    late = threading.Thread(target=busy, args=(1000,))
    late.start()
    go.set()
    early.join()
    late.join()
    busy(10)
    tracer.tracer_disable()
    assert hits_of(busy) == {1: 3, 2: 2 * 1001 + 11, 3: 2010, 4: 3}


# --- time attribution --------------------------------------------------------

def sleeper():
    time.sleep(0.05)
    time.sleep(0.15)


def test_time_shares(tracer):
    traced(sleeper)
    tracer.tracer_enable()
    sleeper()
    tracer.tracer_disable()
    lines, total = stats_of(sleeper)
    t1, t2 = lines[1][1], lines[2][1]
    share = t1 / (t1 + t2)
    assert abs(share - 0.25) < 0.05, (t1, t2)
    assert 0.19 < total < 0.35


def unprofiled_helper():
    time.sleep(0.05)


def calls_helper():
    unprofiled_helper()
    x = 1
    return x


def test_unprofiled_callee_counts_to_calling_line(tracer):
    traced(calls_helper)
    tracer.tracer_enable()
    calls_helper()
    tracer.tracer_disable()
    lines, _total = stats_of(calls_helper)
    assert lines[1][1] >= 0.045
    assert lines[2][1] < 0.01
    assert stats_of(unprofiled_helper) == ({}, 0.0)


def test_stats_while_tracing(tracer):
    traced(loop)
    tracer.tracer_enable()
    loop(5)
    mid = hits_of(loop)
    loop(5)
    tracer.tracer_disable()
    assert mid[3] == 5
    assert hits_of(loop)[3] == 10


# --- coexistence with other tools -------------------------------------------------

@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring")
def test_coexists_with_cprofile(tracer):
    import cProfile
    import pstats
    traced(loop)
    prof = cProfile.Profile()
    prof.enable()
    try:
        tracer.tracer_enable()
        mon = sys.monitoring
        assert "lprof" in [mon.get_tool(i) for i in range(3, 6)]
        loop(20)
        tracer.tracer_disable()
    finally:
        prof.disable()
    assert hits_of(loop)[3] == 20
    st = pstats.Stats(prof)
    assert any(fn[2] == "loop" for fn in st.stats)
    assert all(mon.get_tool(i) != "lprof" for i in range(6))


@pytest.mark.skipif(sys.version_info < (3, 12), reason="sys.monitoring")
def test_no_free_tool_id(tracer):
    mon = sys.monitoring
    taken = []
    for i in range(2, 6):
        if mon.get_tool(i) is None:
            mon.use_tool_id(i, "squatter%d" % i)
            taken.append(i)
    try:
        with pytest.raises(RuntimeError, match="squatter"):
            tracer.tracer_enable()
        assert not tracer.tracer_is_enabled()
    finally:
        for i in taken:
            mon.free_tool_id(i)
    tracer.tracer_enable()
    tracer.tracer_disable()


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="settrace backend")
def test_previous_trace_function_restored(tracer):
    seen = []

    def pytrace(frame, event, arg):
        seen.append(event)
        return None

    old = sys.gettrace()
    sys.settrace(pytrace)
    try:
        tracer.tracer_enable()
        tracer.tracer_disable()
        assert sys.gettrace() is pytrace
    finally:
        sys.settrace(old)
    assert threading._trace_hook is None


# --- cost ----------------------------------------------------------------------

def cost_loop(n):
    s = 0
    for i in range(n):
        s += i
        s -= 1
    return s


def test_per_line_event_overhead(tracer, capsys):
    """Per traced line event, best of 3 (reported with -s; loose bound)."""
    n = 200_000
    traced(cost_loop)

    def best(fn):
        return min(fn() for _ in range(3))

    def plain():
        return _timed(cost_loop, n)

    def traced_run():
        tracer.tracer_enable()
        dt = _timed(cost_loop, n)
        tracer.tracer_disable()
        return dt

    base = best(plain)
    on = best(traced_run)
    events = 3 * n
    per_event_ns = (on - base) / events * 1e9
    with capsys.disabled():
        print("\nlprof tracer: %.1f ns per line event (python %s)" % (per_event_ns, sys.version.split()[0]))
    assert per_event_ns < 400


def counted(n):
    t = 0
    for i in range(n):
        t += i
    return t


def test_counts_of_given_codes_and_their_differences(tracer):
    """tracer_counts: one code's counts packed (tracer_clear calls so far,
    total, then hits, ticks and wait per line from the def line), what
    tracer_stats says of it; tracer_counts_add: sums + (now - base), a base
    read before a tracer_clear counting as 0."""
    traced(counted)
    code = counted.__code__
    tracer.tracer_enable()
    counted(7)
    tracer.tracer_disable()
    (packed, unregistered) = tracer.tracer_counts([code, (lambda: 0).__code__])
    assert unregistered == b""
    values = memoryview(packed).cast("Q")
    rows = {code.co_firstlineno + (i - 2) // 3: tuple(values[i:i + 2])
            for i in range(2, len(values), 3) if values[i] or values[i + 1]}
    [(total, lines)] = [(t, ls) for c, t, ls in tracer.tracer_stats() if c is code]
    assert values[1] == total
    assert rows == {ln: (h, t) for ln, h, t in lines}

    def hits(counts):
        return sorted(h for h in memoryview(counts[0]).cast("Q")[2::3] if h)

    base = tracer.tracer_counts([code])
    tracer.tracer_enable()
    counted(3)
    tracer.tracer_disable()
    diff = tracer.tracer_counts_add((), tracer.tracer_counts([code]), base)
    assert hits(diff) == [1, 1, 3, 4]  # t = 0, return; t += i; the for line
    assert hits(tracer.tracer_counts_add(diff, diff, ())) == [2, 2, 6, 8]
    tracer.tracer_clear()  # base was read before: all of what follows counts
    tracer.tracer_enable()
    counted(7)
    tracer.tracer_disable()
    assert hits(tracer.tracer_counts_add((), tracer.tracer_counts([code]), base)) == [1, 1, 7, 8]
    with pytest.raises(TypeError):
        tracer.tracer_counts([counted])
    with pytest.raises(ValueError):
        tracer.tracer_counts_add((b"123",), (), ())


def _timed(fn, *args):
    """Seconds fn(*args) took (at the end of the file: the tests above keep
    their line numbers)."""
    t0 = time.perf_counter()
    fn(*args)
    return time.perf_counter() - t0
