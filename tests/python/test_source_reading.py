"""render/source.read_lines: the listing's lines of a file decoded as the
interpreter decodes it (render/source.decode_source), compared with what
tokenize.open, the standard library's reader, gives."""
import tokenize

import pytest

from lprof.render.source import decode_source, read_lines

CASES = [
    b"x = 1\ny = 'caf\xc3\xa9'\n",
    b"\xef\xbb\xbfx = 'caf\xc3\xa9'\n",
    b"# -*- coding: latin-1 -*-\nx = 'caf\xe9'\n",
    b"#!/usr/bin/env python\n# vim: set fileencoding=iso-8859-15 :\nx = '\xa4'\n",
    b"\n# coding=cp1252\nx = '\x80'\n",
    b"x = 1  # coding: latin-1 (on a code line: not a cookie)\ny = 'caf\xc3\xa9'\n",
    b"x = 1\n# coding: latin-1\ny = 'caf\xc3\xa9'\n",  # line 2 under a code line: not a cookie
    b"a = 1\r\nb = 2\rc = 3\n",
    b"",
]


@pytest.mark.parametrize("data", CASES)
def test_lines_are_tokenize_opens(tmp_path, data):
    path = tmp_path / "m.py"
    path.write_bytes(data)
    with tokenize.open(path) as f:
        expected = f.read().splitlines()
    assert read_lines(str(path)) == expected


def test_what_cannot_be_decoded_is_a_value_error():
    with pytest.raises(ValueError):
        decode_source(b"# coding: no-such-codec\nx = 1\n")
    with pytest.raises(ValueError):
        decode_source(b"x = '\xe9'\n")  # not UTF-8, and no cookie


def test_unreadable_or_missing_files_fall_back_to_linecache(tmp_path):
    import linecache

    assert read_lines(str(tmp_path / "missing.py")) is None
    linecache.cache["<lprof test>"] = (5, None, ["x = 1\n"], "<lprof test>")
    try:
        assert read_lines("<lprof test>") == ["x = 1"]
    finally:
        del linecache.cache["<lprof test>"]
