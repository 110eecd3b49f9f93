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


def _includes(path):
    with open(path, encoding="utf-8") as f:
        return re.findall(r'#\s*include\s*"([^"]+)"', f.read())


def test_includes_follow_the_flow():
    """collect -> aggregate -> export: nothing in aggregate/ or export/
    includes a header of collect/ (a collector that must be drained registers
    its drain with aggregate instead), and the frame vocabulary lives in
    common/, so no stage needs another's header for it."""
    offenders = []
    for path in _sources():
        rel = os.path.relpath(path, SRC).replace(os.sep, "/")
        if rel.split("/")[0] not in ("aggregate", "export"):
            continue
        for name in _includes(path):
            if name.startswith("collect/"):
                offenders.append((rel, name))
    assert offenders == []


def test_shim_compiles_only_its_own_folder():
    """The LD_PRELOAD shim builds from src/collect/shim/ only (its shared/
    folder is compiled by the extension too): no source of it lies above."""
    with open(os.path.join(SRC, "collect", "shim", "Makefile"), encoding="utf-8") as f:
        text = f.read()
    sources = re.search(r"^SOURCES\s*:=\s*(.*)$", text, re.M).group(1).split()
    assert sources and all(not s.startswith("..") for s in sources)
    for path in _sources():
        rel = os.path.relpath(path, SRC).replace(os.sep, "/")
        if rel.startswith("collect/shim/"):
            for name in _includes(path):
                assert not name.startswith("collect/") or name.startswith("collect/shim/"), (rel, name)


PKG = os.path.join(ROOT, "python", "lprof")


def _python_imports(path):
    """The lprof modules a file imports, as dotted names under lprof
    (relative imports resolved)."""
    import ast
    rel = os.path.relpath(path, PKG).replace(os.sep, "/")
    here = ["lprof"] + rel.split("/")[:-1]  # the module's package (a package's own folder)
    with open(path, encoding="utf-8") as f:
        tree = ast.parse(f.read(), path)
    names = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[:len(here) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module or ""
            names.append(mod)
            names.extend(f"{mod}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.extend(a.name for a in node.names)
    return [n for n in names if n == "lprof" or n.startswith("lprof.")]


# What each folder of the package may import (besides itself and the C
# extension lprof._lprof): the flow collect -> model -> render/export, with
# common/ under everything, process/ (the program's process) over the
# collectors, and commands/ on top. The package's top modules (cli, the
# public decorator and magics) may use anything.
ALLOWED = {
    "common": set(),
    "model": {"common"},
    "render": {"common", "model"},
    "export": {"common", "model", "render"},
    "collect": {"common", "model"},
    "process": {"common", "model", "collect"},
    "commands": {"common", "model", "render", "export", "collect", "process", "decorator"},
}
TOP_MODULES = {"__init__", "__main__", "cli", "decorator", "kernprof", "magics"}


def _stage_of(dotted):
    parts = dotted.split(".")
    return parts[1] if len(parts) > 1 else ""


def test_python_stages_point_down_the_flow():
    """Nothing imports upward: model/ and export/ know nothing of the
    collectors or the verbs, collect/ nothing of how profiles are shown,
    common/ nothing else of lprof at all."""
    offenders = []
    for stage, allowed in ALLOWED.items():
        for path in glob.glob(os.path.join(PKG, stage, "**", "*.py"), recursive=True):
            for name in _python_imports(path):
                other = _stage_of(name)
                if other and other not in allowed | {stage, "_lprof", "__version__"}:
                    offenders.append((os.path.relpath(path, PKG), name))
    assert offenders == []


def test_package_top_holds_only_entry_points():
    """Every module sits in the stage folder that owns its job; the top
    keeps the command line's entry, the public decorator, the magics and
    kernprof's module (`kernprof.main`), entry points all."""
    top = {os.path.basename(p)[:-3] for p in glob.glob(os.path.join(PKG, "*.py"))}
    assert top == TOP_MODULES
    folders = {d for d in os.listdir(PKG) if os.path.isfile(os.path.join(PKG, d, "__init__.py"))}
    assert folders == set(ALLOWED) | {"_bootstrap"}


def test_python_stage_folders_and_one_stacks_module():
    for stage in ALLOWED:
        assert os.path.isfile(os.path.join(PKG, stage, "__init__.py")), stage
    stacks = [os.path.relpath(p, PKG) for p in glob.glob(os.path.join(PKG, "**", "stacks.py"),
                                                          recursive=True)]
    assert stacks == [os.path.join("model", "stacks.py")]


def test_setup_lists_every_python_package():
    """pip install . installs the packages setup.py names: every folder of
    python/lprof with an __init__.py must be among them."""
    with open(os.path.join(ROOT, "setup.py"), encoding="utf-8") as f:
        listed = set(re.findall(r'"(lprof(?:\.[a-z_]+)*)"', re.search(r"packages=\[(.*?)\]", f.read(),
                                                                     re.S).group(1)))
    found = set()
    for init in glob.glob(os.path.join(PKG, "**", "__init__.py"), recursive=True):
        rel = os.path.relpath(os.path.dirname(init), os.path.dirname(PKG))
        found.add(rel.replace(os.sep, "."))
    assert found == listed
