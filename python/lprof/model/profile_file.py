"""The .lprof file: a versioned, checksummed container for the profile dict.

Layout (all integers little-endian; see docs/formats.md):

    offset  size  field
    0       8     magic  b"LPROF\\x00\\r\\n" (the CR LF catches text-mode mangling)
    8       2     format version (FORMAT_VERSION)
    10      2     flags (0; reserved)
    12      4     CRC-32 of the payload
    16      8     payload length in bytes
    24      n     payload: zlib-compressed UTF-8 JSON of the profile dict

Version 2 stores the "stacks" section in columns (a trie of frames, then one
list per column) instead of one [frame ids, thread, {metric: value}] entry
per stack; in memory the section keeps the row form. lprof.model.stacks owns
both forms and converts between them. Version 1 files still open; newer versions are refused.

Files are written to a temporary name and renamed, so a reader never sees a
half-written profile, also when it is rewritten periodically (-i).
"""

import json
import struct
import zlib

from ..common.errors import ProfileFileError
from ..common.files import save_bytes
from .stacks import from_columns, is_row_form, to_columns

MAGIC = b"LPROF\x00\r\n"
FORMAT_VERSION = 2
READABLE_VERSIONS = (1, 2)
_HEADER = struct.Struct("<8sHHIQ")
# A decompressed payload larger than this is refused rather than exhausting
# memory: lprof's JSON compresses 2-5 times (measured on real profiles), so
# more than 32 times the stored size, past a floor for small files, is a
# decompression bomb; 1 GiB bounds even a huge honest file.
_MAX_PAYLOAD = 1 << 30
_MAX_RATIO = 32
_PAYLOAD_FLOOR = 16 << 20


def _payload_limit(stored):
    return min(_MAX_PAYLOAD, max(_PAYLOAD_FLOOR, _MAX_RATIO * stored))


def encode(profile):
    """The file's bytes. A profile of traced lines (lprof -l) starts with
    the same lines as line_profiler's pickle (kernprof_file.encode): pickle
    readers stop at its end, so `python -m line_profiler FILE` reads it, and
    lprof reads the container after it."""
    prefix = b""
    if "lines" in profile.get("meta", {}).get("modes", ()):
        from . import kernprof_file

        prefix = kernprof_file.encode(profile)
    return prefix + _encode_container(profile)


def container_of(data):
    """The lprof container in a file's bytes: all of them, or what follows
    line_profiler's pickle in a file of traced lines."""
    if data[:1] == b"\x80":
        from . import kernprof_file

        end = kernprof_file.pickle_end(data)
        if end is not None and data[end : end + len(MAGIC)] == MAGIC:
            return data[end:]
    return data


def _encode_container(profile):
    if isinstance(profile.get("stacks"), dict) and is_row_form(profile["stacks"]):
        profile = dict(profile, stacks=to_columns(profile["stacks"]))
    # level 1: a third of level 6's time (measured: 0.9 vs 2.8 ms) for a 30% larger file
    payload = zlib.compress(json.dumps(profile, separators=(",", ":")).encode("utf-8"), 1)
    header = _HEADER.pack(MAGIC, FORMAT_VERSION, 0, zlib.crc32(payload), len(payload))
    return header + payload


def save(profile, path):
    """Atomically write `profile` (a dict) to `path`."""
    save_bytes(encode(profile), path)


def decode(data, name="<bytes>", rows=True):
    """The profile dict of a file's bytes. rows=False keeps a version 2
    stacks section in its columnar form (what the stack exporters read
    fastest); rows=True gives the row form every other reader uses."""
    if data[:1] == b"\x80":  # a pickle: line_profiler's file (kernprof -l)
        from . import kernprof_file  # pickle only when needed: start-up cost

        end = kernprof_file.pickle_end(data)
        if end is not None and end < len(data):
            if data[end : end + len(MAGIC)] != MAGIC:
                raise ProfileFileError(
                    f"{name}: not an lprof or line_profiler profile file "
                    f"(unknown data after line_profiler's pickle)"
                )
            return decode(data[end:], name, rows=rows)  # lprof -l: the container follows
        profile = kernprof_file.decode(data, name)
        validate(profile, name)
        return profile
    if len(data) < _HEADER.size:
        if data[: len(MAGIC)] != MAGIC[: len(data)] or not data:
            raise ProfileFileError(f"{name}: not an lprof profile file")
        raise ProfileFileError(f"{name}: truncated lprof profile ({len(data)} bytes)")
    magic, version, _flags, crc, length = _HEADER.unpack_from(data)
    if magic != MAGIC:
        raise ProfileFileError(f"{name}: not an lprof profile file")
    if version not in READABLE_VERSIONS:
        raise ProfileFileError(
            f"{name}: profile format version {version} is not supported "
            f"(this lprof reads versions {', '.join(map(str, READABLE_VERSIONS))})"
        )
    payload = data[_HEADER.size :]
    if len(payload) != length:
        raise ProfileFileError(
            f"{name}: truncated or padded profile (payload {len(payload)} bytes, header says {length})"
        )
    if zlib.crc32(payload) != crc:
        raise ProfileFileError(f"{name}: corrupt profile (checksum mismatch)")
    try:
        d = zlib.decompressobj()
        limit = _payload_limit(len(payload))
        raw = d.decompress(payload, limit)
        if d.unconsumed_tail:
            raise ProfileFileError(
                f"{name}: profile payload expands beyond {limit >> 20} MiB "
                f"(a real profile expands 2-5 times; refused as a "
                f"decompression bomb)"
            )
        profile = json.loads(raw.decode("utf-8"))
    except RecursionError:
        raise ProfileFileError(f"{name}: corrupt profile (nested too deeply)") from None
    except (zlib.error, UnicodeDecodeError, ValueError) as exc:
        raise ProfileFileError(f"{name}: corrupt profile ({exc.__class__.__name__})") from None
    if version >= 2 and isinstance(profile, dict) and isinstance(profile.get("stacks"), dict):
        rowform = from_columns(profile["stacks"], name)
        validate(dict(profile, stacks=rowform), name)  # the values, in either form
        if rows:
            profile["stacks"] = rowform
    else:
        validate(profile, name)
    return profile


def load(path, rows=True):
    try:
        with open(path, "rb") as f:
            data = f.read()
    except IsADirectoryError:
        raise ProfileFileError(f"{path}: is a directory, not a profile file") from None
    except OSError as exc:
        raise ProfileFileError(f"{path}: cannot read ({exc.strerror})") from None
    return decode(data, path, rows=rows)


def validate(profile, name="<profile>"):
    """Checks every value the renderers read (lprof.model.validate);
    raises ProfileFileError."""
    from . import validate as shape

    shape.check(profile, name)
