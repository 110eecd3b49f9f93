"""The source tree keeps its data flow visible: collect -> aggregate -> export,
and only cpython/ folders see the interpreter's headers (so the pure-C unit
tests can build everything else)."""
import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SRC = os.path.join(ROOT, "src")


def _sources():
    return [p for p in glob.glob(os.path.join(SRC, "**", "*.[ch]"), recursive=True)]


def test_python_h_only_in_cpython_folders():
    offenders = []
    for path in _sources():
        rel = os.path.relpath(path, SRC)
        with open(path, encoding="utf-8") as f:
            text = f.read()
        if re.search(r'#\s*include\s*[<"]Python\.h[>"]', text) and "/cpython/" not in "/" + rel:
            offenders.append(rel)
    assert offenders == []


def test_stage_folders_hold_the_sources():
    top = sorted(d for d in os.listdir(SRC) if os.path.isdir(os.path.join(SRC, d)))
    assert top == ["aggregate", "collect", "common", "cpython", "export"]
    stray = [p for p in glob.glob(os.path.join(SRC, "*.[ch]"))]
    assert stray == []


def test_includes_name_existing_headers():
    missing = []
    for path in _sources():
        with open(path, encoding="utf-8") as f:
            for name in re.findall(r'#\s*include\s*"([^"]+)"', f.read()):
                if name.startswith("internal/"):  # CPython's own internal headers
                    continue
                here = os.path.join(os.path.dirname(path), name)
                if not (os.path.exists(os.path.join(SRC, name)) or os.path.exists(here)
                        or os.path.exists(os.path.join(ROOT, "include", name))):
                    missing.append((os.path.relpath(path, SRC), name))
    assert missing == []
