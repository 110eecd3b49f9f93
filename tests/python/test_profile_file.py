"""The .lprof container: round trip, and clear errors for bad files."""
import os
import pickle
import struct
import zlib

import pytest

from lprof.model import kernprof_file, profile_file
from lprof.common.errors import ProfileFileError


def sample_profile():
    return {"format": "lprof", "version": 1, "meta": {"argv": ["x.py"], "modes": ["lines"]},
            "functions": [{"file": "/x.py", "name": "f", "first_line": 3, "total_s": 0.5,
                           "lines": [[4, 10, 0.25], [5, 1, 0.25]]}]}


def test_round_trip(tmp_path):
    path = tmp_path / "p.lprof"
    profile_file.save(sample_profile(), str(path))
    assert profile_file.load(str(path)) == sample_profile()


def test_no_temp_files_left(tmp_path):
    profile_file.save(sample_profile(), str(tmp_path / "p.lprof"))
    assert sorted(p.name for p in tmp_path.iterdir()) == ["p.lprof"]


@pytest.mark.parametrize("mangle, message", [
    (lambda b: b"", "not an lprof profile"),
    (lambda b: b"hello world, this is text" * 3, "not an lprof"),
    (lambda b: b[:10], "truncated"),
    (lambda b: b[:-5], "truncated"),
    (lambda b: b + b"xx", "truncated or padded"),
    (lambda b: b[:30] + bytes([b[30] ^ 0xFF]) + b[31:], "checksum"),
    (lambda b: b[:8] + struct.pack("<H", 99) + b[10:], "version 99"),
])
def test_bad_files_give_clear_errors(tmp_path, mangle, message):
    prefix, container = split_encoded(sample_profile())
    # the container alone (what lprof writes when no line was traced), and
    # behind line_profiler's pickle (lprof -l), give the same errors
    for data in (mangle(container), prefix + mangle(container)):
        if data == prefix:  # the pickle alone is a line_profiler file
            continue
        path = tmp_path / "bad.lprof"
        path.write_bytes(data)
        with pytest.raises(ProfileFileError) as info:
            profile_file.load(str(path))
        assert message in str(info.value)
        assert "\n" not in str(info.value)


def split_encoded(profile):
    data = profile_file.encode(profile)
    end = kernprof_file.pickle_end(data)
    assert end and data[end:].startswith(profile_file.MAGIC)
    return data[:end], data[end:]


class _LineStats:
    """What line_profiler's unpickler builds: attributes from BUILD's dict."""


class _AsLineProfiler(pickle.Unpickler):
    def find_class(self, module, name):
        assert (module, name) == ("line_profiler.line_profiler", "LineStats")
        return _LineStats


def test_traced_lines_file_is_also_line_profilers(tmp_path):
    """`python -m line_profiler script.py.lprof` reads what lprof -l wrote:
    the file starts with line_profiler's LineStats pickle, times in ns."""
    path = tmp_path / "p.lprof"
    profile_file.save(sample_profile(), str(path))
    with open(path, "rb") as fh:
        stats = _AsLineProfiler(fh).load()
    assert stats.unit == 1e-9
    assert stats.timings == {("/x.py", 3, "f"): [(4, 10, 250_000_000), (5, 1, 250_000_000)]}
    assert profile_file.load(str(path)) == sample_profile()  # and lprof reads its own


def test_profile_without_traced_lines_has_no_pickle(tmp_path):
    prof = dict(sample_profile(), meta={"argv": ["x.py"], "modes": ["sampling"]})
    assert profile_file.encode(prof).startswith(profile_file.MAGIC)


def test_valid_container_with_wrong_shape(tmp_path):
    payload = zlib.compress(b'{"format": "lprof", "meta": {}, "functions": [{"lines": 3}]}')
    data = struct.pack("<8sHHIQ", profile_file.MAGIC, 1, 0, zlib.crc32(payload),
                       len(payload)) + payload
    with pytest.raises(ProfileFileError, match="malformed"):
        profile_file.decode(data)


def test_missing_file_and_directory(tmp_path):
    with pytest.raises(ProfileFileError, match="cannot read"):
        profile_file.load(str(tmp_path / "none.lprof"))
    with pytest.raises(ProfileFileError, match="directory"):
        profile_file.load(str(tmp_path))


FIXTURES = __import__("os").path.join(__import__("os").path.dirname(__file__), "..", "fixtures")


def stacks_profile():
    prof = sample_profile()
    prof["stacks"] = {
        "frames": [["/x.py", "<module>", 1, 9], ["/x.py", "f", 3, 4], ["/x.py", "f", 3, 5]],
        "columns": [["cpu_python_s", "ns", "sum"], ["peak_bytes", "bytes", "max"]],
        "stacks": [[[0, 1], 7, {"cpu_python_s": 0.25}], [[0, 2], 7, {"peak_bytes": 300}],
                   [[0, 1], 8, {"cpu_python_s": 0.5, "peak_bytes": 12}]]}
    return prof


def test_stacks_are_stored_in_columns_and_come_back_as_rows(tmp_path):
    data = profile_file.container_of(profile_file.encode(stacks_profile()))
    payload = __import__("json").loads(zlib.decompress(data[24:]))
    col = payload["stacks"]
    assert col["nodes"] == {"parent": [-1, 0, 0], "frame": [0, 1, 2]}  # a trie: <module> shared
    assert col["rows"]["node"] == [1, 2, 1]
    assert col["rows"]["values"]["cpu_python_s"] == [0.25, 0, 0.5]
    assert "stacks" not in col
    assert struct.unpack_from("<H", data, 8)[0] == profile_file.FORMAT_VERSION == 2
    assert profile_file.decode(data) == stacks_profile()


def test_malformed_columns_are_refused():
    prof = stacks_profile()
    data = profile_file.container_of(profile_file.encode(prof))
    payload = __import__("json").loads(zlib.decompress(data[24:]))
    payload["stacks"]["nodes"]["parent"][2] = 5  # a parent that comes later
    raw = zlib.compress(__import__("json").dumps(payload).encode())
    bad = struct.pack("<8sHHIQ", profile_file.MAGIC, 2, 0, zlib.crc32(raw), len(raw)) + raw
    with pytest.raises(ProfileFileError, match="malformed"):
        profile_file.decode(bad)


def test_version_1_file_of_the_previous_release_opens(run_lprof):
    """A sampled + memory profile written by the release before the columnar
    stacks section (format version 1) loads, lists and exports."""
    path = __import__("os").path.join(FIXTURES, "v1_sampled_memory.lprof")
    with open(path, "rb") as f:
        assert struct.unpack_from("<H", f.read(10), 8)[0] == 1
    prof = profile_file.load(path)
    assert prof["stacks"]["stacks"] and prof["memory"]["lines"]
    view = run_lprof("view", path)
    assert view.returncode == 0, view.stderr
    assert "fx.py" in view.stdout and "Memory (sampled" in view.stdout
    folded = run_lprof("export", path, "--format", "folded", "--metric", "alloc", "-o", "a.folded")
    assert folded.returncode == 0, folded.stderr


def test_saved_file_has_the_umask_mode(tmp_path):
    """A profile is as readable as any file the user writes (mkstemp's 0600
    made profiles unreadable to the user's group)."""
    old = os.umask(0o027)
    try:
        profile_file.save(sample_profile(), str(tmp_path / "p.lprof"))
    finally:
        os.umask(old)
    assert (os.stat(tmp_path / "p.lprof").st_mode & 0o777) == 0o640
