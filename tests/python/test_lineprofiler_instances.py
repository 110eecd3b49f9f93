"""line_profiler's LineProfiler instances share lprof's one tracer, yet each
counts only what its functions ran while it was enabled, from zero when made
(issue #33: a second instance reported the first one's 203 hits, wrappers and
runcall counted 306 for 103 calls)."""
import io

from lprof import LineProfiler

FIRST, SECOND = 203, 103  # calls while the first / the second instance is enabled


def _make(name="f"):
    """A fresh function (its own code object) and its body's line numbers."""
    ns = {}
    exec(compile(f"def {name}(x):\n    y = x + 1\n    return y\n", "<isolation>", "exec"), ns)
    f = ns[name]
    first = f.__code__.co_firstlineno
    return f, [first + 1, first + 2]


def _hits(lp, f):
    """{line: hits} of f in lp's get_stats()."""
    code = f.__code__
    for (_file, first, name), rows in lp.get_stats().timings.items():
        if name == code.co_name and first == code.co_firstlineno:
            return {ln: hits for ln, hits, _t in rows}
    raise AssertionError(f"{code.co_name} not in {lp.get_stats().timings}")


def test_an_instance_made_later_counts_only_its_own_calls():
    f, body = _make()
    a = LineProfiler(f)
    with a:
        for i in range(FIRST):
            f(i)
    b = LineProfiler(f)
    assert _hits(b, f) == {}  # made after a ran f: nothing yet
    with b:
        for i in range(SECOND):
            f(i)
    assert _hits(b, f) == {ln: SECOND for ln in body}
    # and a, disabled meanwhile, did not count b's calls
    assert _hits(a, f) == {ln: FIRST for ln in body}


def test_runcall_counts_exactly_its_calls():
    f, body = _make()
    other = LineProfiler(f)
    with other:
        for i in range(FIRST):
            f(i)
    lp = LineProfiler(f)
    for i in range(SECOND):
        assert lp.runcall(f, i) == i + 1
    assert _hits(lp, f) == {ln: SECOND for ln in body}
    assert _hits(other, f) == {ln: FIRST for ln in body}


def test_add_function_enable_disable_counts_exactly():
    f, body = _make()
    other = LineProfiler(f)
    with other:
        for i in range(FIRST):
            f(i)
    lp = LineProfiler()
    lp.add_function(f)
    lp.enable()
    for i in range(SECOND):
        f(i)
    lp.disable()
    with other:  # traced again, but lp is disabled
        for i in range(FIRST):
            f(i)
    assert _hits(lp, f) == {ln: SECOND for ln in body}
    assert _hits(other, f) == {ln: 2 * FIRST for ln in body}


def test_wrapper_counts_exactly_its_calls():
    f, body = _make()
    other = LineProfiler(f)
    with other:
        for i in range(FIRST):
            f(i)
    lp = LineProfiler()
    wrapped = lp(f)
    for i in range(SECOND):
        assert wrapped(i) == i + 1
    with other:
        f(0)  # the plain function, under the other instance only
    assert _hits(lp, f) == {ln: SECOND for ln in body}
    assert _hits(other, f) == {ln: FIRST + 1 for ln in body}


def test_nested_enable_by_count_counts_once():
    f, body = _make()
    other = LineProfiler(f)
    with other:
        for i in range(FIRST):
            f(i)
    lp = LineProfiler(f)
    lp.enable_by_count()
    lp.enable_by_count()
    for i in range(SECOND):
        f(i)
    lp.disable_by_count()
    assert lp.enabled
    # while enabled, get_stats includes what ran so far
    assert _hits(lp, f) == {ln: SECOND for ln in body}
    f(0)
    lp.disable_by_count()
    assert not lp.enabled
    f(0)
    assert _hits(lp, f) == {ln: SECOND + 1 for ln in body}


def test_disabling_an_instance_that_is_not_enabled_leaves_the_others_on():
    f, body = _make()
    a, b = LineProfiler(f), LineProfiler(f)
    a.enable()
    b.disable()
    for i in range(SECOND):
        f(i)
    a.disable()
    assert _hits(a, f) == {ln: SECOND for ln in body}
    assert _hits(b, f) == {}


def test_stripzeros_lists_only_the_functions_this_instance_ran():
    f, _ = _make("f")
    g, _ = _make("g")
    other = LineProfiler(g)
    with other:
        for i in range(FIRST):
            g(i)
    lp = LineProfiler(f, g)
    with lp:
        f(1)
    out = io.StringIO()
    lp.print_stats(out, stripzeros=True)
    text = out.getvalue()
    assert "Function: f at line" in text, text
    assert "Function: g at line" not in text, text
