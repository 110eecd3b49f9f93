"""Every repository path the docs name exists: a file moved or renamed
leaves no stale pointer behind (docs/*.md and README.md; the comments and
docstrings of python/lprof, src/ and include/ too)."""
import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TOP = ("python/lprof", "src", "tests", "tools", "bench", "docs", "examples", "include")
# a path-looking token: a top folder, then path characters; `.[ch]` and `*`
# are globs, `x.c/.h` names x.c and x.h
PATH = re.compile(r"(?<![\w./-])((?:%s)/[\w./+*\[\]-]*[\w+*\]-])" % "|".join(map(re.escape, TOP)))


def _exists(token):
    names = [token]
    if token.endswith(".c/.h"):
        names = [token[:-len("/.h")], token[:-len(".c/.h")] + ".h"]
    for name in names:
        if name.endswith("_"):  # a name's prefix before a glob the text spells `_*`
            name += "*"
        if not glob.glob(os.path.join(ROOT, name)):
            return False
    return True


def stale_paths(text):
    """(line, path) of each path in text that names nothing."""
    out = []
    for m in PATH.finditer(text):
        token = m.group(1).rstrip(".")
        if token.endswith("]") and "[" not in token:  # a Markdown link's text: [path](path)
            token = token[:-1]
        if not _exists(token):
            out.append((text.count("\n", 0, m.start()) + 1, token))
    return out


def _files():
    docs = sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))) + [os.path.join(ROOT, "README.md")]
    code = sorted(glob.glob(os.path.join(ROOT, "python", "lprof", "**", "*.py"), recursive=True))
    for top in ("src", "include"):
        code += sorted(glob.glob(os.path.join(ROOT, top, "**", "*.[ch]"), recursive=True))
    return docs + code


def test_paths_named_in_docs_and_comments_exist():
    stale = []
    for path in _files():
        with open(path, encoding="utf-8") as f:
            stale += [f"{os.path.relpath(path, ROOT)}:{line}: {p}" for line, p in stale_paths(f.read())]
    assert stale == [], "stale paths:\n" + "\n".join(stale)


def test_the_check_reads_paths_as_the_docs_write_them():
    assert stale_paths("see `src/aggregate/metrics.h`, src/aggregate/leak.[ch] and "
                       "src/collect/ring.c/.h (tests/scripts/gpu_timeline_*.py).") == []
    assert stale_paths("moved: src/aggregate/nowhere.c and python/lprof/gone.py.") == [
        (1, "src/aggregate/nowhere.c"), (1, "python/lprof/gone.py")]
    assert stale_paths("srcs/x.c, not/src/x.c, a_src/x, [docs/design.md](docs/design.md)") == []
