"""The .lprof container: round trip, and clear errors for bad files."""
import struct
import zlib

import pytest

from lprof import profile_file
from lprof.errors import ProfileFileError


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
    (lambda b: b"hello world, this is text" * 3, "not an lprof profile"),
    (lambda b: b[:10], "truncated"),
    (lambda b: b[:-5], "truncated"),
    (lambda b: b + b"xx", "truncated or padded"),
    (lambda b: b[:30] + bytes([b[30] ^ 0xFF]) + b[31:], "checksum"),
    (lambda b: b[:8] + struct.pack("<H", 99) + b[10:], "version 99"),
])
def test_bad_files_give_clear_errors(tmp_path, mangle, message):
    data = mangle(profile_file.encode(sample_profile()))
    path = tmp_path / "bad.lprof"
    path.write_bytes(data)
    with pytest.raises(ProfileFileError) as info:
        profile_file.load(str(path))
    assert message in str(info.value)
    assert "\n" not in str(info.value)


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
