"""Word wrap for the listings' header and notes: textwrap.wrap's lines for
the one way lprof calls it (words never broken, hyphens kept), without
textwrap's import (its regular expressions cost about a millisecond of
every run's start-up)."""

import re

_SPACE = "\t\n\x0b\x0c\r "  # textwrap's whitespace: ASCII only
_CHUNKS = re.compile(r"[\t\n\x0b\x0c\r ]+|[^\t\n\x0b\x0c\r ]+")


def wrap(text, width, initial_indent="", subsequent_indent=""):
    """Lines of at most width characters (a longer word stands alone), each
    whitespace character read as a space, none at a line's ends."""
    chunks = [" " * len(c) if c[0] in _SPACE else c for c in _CHUNKS.findall(text.expandtabs())]
    chunks.reverse()
    lines = []
    while chunks:
        indent = subsequent_indent if lines else initial_indent
        room = width - len(indent)
        if lines and chunks[-1][0] == " ":
            chunks.pop()  # a line after the first starts at a word
        line, used = [], 0
        while chunks and used + len(chunks[-1]) <= room:
            used += len(chunks[-1])
            line.append(chunks.pop())
        if chunks and not line and len(chunks[-1]) > room:
            line.append(chunks.pop())  # longer than the line: alone on it
        if line and line[-1][0] == " ":
            line.pop()
        if line:
            lines.append(indent + "".join(line))
    return lines
