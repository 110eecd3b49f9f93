"""Reading source lines for listings: encoding cookies, missing files, blocks."""

import linecache
import tokenize


def read_lines(path):
    """Source lines (without newlines) of `path`, or None when unreadable.

    Honours PEP 263 encoding cookies; falls back to linecache, which also
    knows sources of modules loaded from zip files."""
    try:
        with tokenize.open(path) as f:
            return f.read().splitlines()
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        pass
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

    try:
        block = inspect.getblock([ln + "\n" for ln in lines[first_line - 1 :]])
        return first_line, first_line + max(len(block), 1) - 1
    except (IndexError, SyntaxError, tokenize.TokenError):
        return first_line, first_line
