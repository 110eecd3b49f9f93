"""Reading source lines for listings: encoding cookies, missing files, blocks."""

import re

# PEP 263: a comment on line 1 or 2 names the encoding (line 2 counts only
# under a blank or comment line 1), as the tokenizer reads it
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")
_BLANK_OR_COMMENT = re.compile(rb"^[ \t\f]*(?:[#\r\n]|$)")
_BOM = b"\xef\xbb\xbf"


def decode_source(data):
    """The text of a Python source file's bytes, decoded as the interpreter
    does (UTF-8 BOM, coding cookie, else UTF-8). Raises ValueError
    (UnicodeDecodeError, LookupError for an unknown codec) where it cannot.
    Not tokenize.open: tokenize and its regexes cost every run ~1 ms of
    start-up, where a listing only needs the cookie."""
    if data.startswith(_BOM):
        data = data[len(_BOM) :]
        encoding = "utf-8"
    else:
        first, _, rest = data.partition(b"\n")
        found = _COOKIE.match(first)
        if found is None and _BLANK_OR_COMMENT.match(first):
            found = _COOKIE.match(rest.partition(b"\n")[0])
        encoding = found.group(1).decode("ascii") if found else "utf-8"
    try:
        return data.decode(encoding)
    except LookupError as exc:
        raise ValueError(str(exc)) from None


def read_lines(path):
    """Source lines (without newlines) of `path`, or None when unreadable.

    Honours PEP 263 encoding cookies; falls back to linecache, which also
    knows sources of modules loaded from zip files and code given as text
    (-c, lprof's own)."""
    try:
        with open(path, "rb") as f:
            return decode_source(f.read()).splitlines()
    except (OSError, ValueError):
        pass
    import linecache  # here: its tokenize import is not every run's

    try:
        lines = linecache.getlines(path)
    except (OSError, ValueError):  # a path no file can have (a NUL byte, from a damaged profile)
        return None
    return [ln.rstrip("\n") for ln in lines] if lines else None


def block_range(lines, first_line):
    """(first, last) 1-based line numbers of the def/class block at first_line."""
    if not lines or first_line < 1 or first_line > len(lines):
        return first_line, first_line
    import inspect  # here: sampled runs never need it (its import: ~5 ms of their start-up)
    import tokenize

    try:
        block = inspect.getblock([ln + "\n" for ln in lines[first_line - 1 :]])
        return first_line, first_line + max(len(block), 1) - 1
    except (IndexError, SyntaxError, tokenize.TokenError):
        return first_line, first_line
