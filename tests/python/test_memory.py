"""Memory profiling without the shim: PyMem hooks in this process, the
collector's API and the shape of its sections."""
import pytest

from lprof.collect import memory

MB = 1 << 20


def _line_of(fn, marker):
    import inspect
    src, first = inspect.getsourcelines(fn)
    for i, text in enumerate(src):
        if text.rstrip().endswith("# " + marker):
            return first + i
    raise AssertionError(marker)


def _alloc_and_keep():
    return bytearray(30 * MB)  # KEEP


def _churn():
    for _ in range(8):
        b = bytearray(5 * MB)  # CHURN
        del b


def _lines(snap):
    return {(l[0], l[1]): l for l in snap["memory"]["lines"]}


@pytest.fixture
def collector():
    c = memory.MemoryCollector(sample_bytes=16384)
    yield c
    c.stop()


def test_python_objects_attributed_to_lines(collector):
    collector.start()
    kept = _alloc_and_keep()
    _churn()
    collector.stop()
    snap = collector.snapshot()
    lines = _lines(snap)
    f = __file__
    keep = lines[(f, _line_of(_alloc_and_keep, "KEEP"))]
    churn = lines[(f, _line_of(_churn, "CHURN"))]
    # [file, line, function, alloc, freed, net, peak, python_share, count]
    assert abs(keep[3] - 30 * MB) <= 0.1 * 30 * MB
    assert abs(keep[5] - 30 * MB) <= 0.1 * 30 * MB
    assert keep[7] > 0.99 and keep[2].endswith("_alloc_and_keep")
    assert abs(churn[3] - 40 * MB) <= 0.1 * 40 * MB
    assert abs(churn[5]) <= 0.1 * 40 * MB
    assert len(kept) == 30 * MB


def test_peak_and_timeline(collector):
    collector.start()
    a = bytearray(40 * MB)
    del a
    b = bytearray(10 * MB)
    collector.stop()
    m = collector.snapshot()["memory"]
    assert 36 * MB <= m["peak_bytes"] <= 60 * MB
    assert m["live_bytes"] < m["peak_bytes"]
    assert m["timeline"] and all(len(p) == 2 for p in m["timeline"])
    assert m["timeline"] == sorted(m["timeline"], key=lambda p: p[0])
    assert m["sample_bytes"] == 16384
    assert len(b) == 10 * MB


def test_without_shim_says_native_not_covered(collector, capfd):
    if memory.native_covered():
        pytest.skip("this interpreter has the shim preloaded")
    collector.start()
    collector.stop()
    assert collector.snapshot()["memory"]["native_covered"] is False
    assert "not covered" in capfd.readouterr().err


def test_stop_idempotent_and_stacks_shape(collector):
    collector.start()
    x = [bytearray(100_000) for _ in range(50)]
    collector.stop()
    collector.stop()
    snap = collector.snapshot()
    st = snap["stacks"]
    assert st["stacks"], "no stacks"
    for ids, _thread, metrics in st["stacks"]:
        assert all(0 <= i < len(st["frames"]) for i in ids)
        # only declared columns, zeros left out; every memory stack was sampled
        assert set(metrics) <= {c[0] for c in st["columns"]}
        assert {"alloc_bytes", "alloc_count", "alloc_samples"} <= set(metrics)
    assert sum(m["alloc_bytes"] for _i, _t, m in st["stacks"]) >= 4 * MB
    assert len(x) == 50


def test_line_columns():
    from lprof.model.sections import memory_line_columns
    prof = {"memory": {"peak_bytes": 1000, "lines": [
        ["a.py", 3, "f", 800, 200, 600, 500, 0.5, 4],
        ["a.py", 3, "g", 200, 0, 200, 100, 1.0, 1],
        ["b.py", 1, "h", 10, 10, 0, 0, 0.0, 1]]}}
    cols = memory_line_columns(prof)
    a = cols[("a.py", 3)]
    assert a["alloc_bytes"] == 1000 and a["net_bytes"] == 800 and a["count"] == 5
    assert a["peak_share"] == pytest.approx(0.6)
    assert a["python_share"] == pytest.approx(0.6)
    assert cols[("b.py", 1)]["peak_share"] == 0
    assert memory_line_columns({}) == {}


def test_bad_sample_bytes():
    with pytest.raises(ValueError):
        memory.MemoryCollector(sample_bytes=0)


def test_a_second_run_starts_from_zero():
    """Memory columns live in the stack table shared with the sampler: a new
    memory run clears them, so it does not report the previous run's bytes."""
    def total(c):
        return sum(l[3] for l in c.snapshot()["memory"]["lines"])

    first = memory.MemoryCollector(sample_bytes=16384)
    first.start()
    a = [bytearray(100_000) for _ in range(100)]  # ~10 MB
    first.stop()
    assert total(first) > 5 * MB
    second = memory.MemoryCollector(sample_bytes=16384)
    second.start()
    b = [bytearray(100_000) for _ in range(10)]   # ~1 MB
    second.stop()
    assert total(second) < 3 * MB
    assert len(a) + len(b) == 110
