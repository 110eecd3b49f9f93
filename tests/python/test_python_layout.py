"""The Python package keeps one owner per rule (docs/design.md): the stacks
section's fields are read by lprof.model.stacks alone, and the model does not
depend on the file format."""
import ast
import glob
import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PACKAGE = os.path.join(ROOT, "python", "lprof")

# the columnar stacks section's raw fields (lprof.model.stacks)
RAW_FIELDS = {"nodes", "rows"}
# modules that spell "nodes" for a section of their own, not the stacks one
OTHER_TRIES = {
    "model/timeline.py": "the timeline section's own trie of stacks",
    "model/validate.py": "checks the timeline section's trie",
}


def _modules():
    for path in sorted(glob.glob(os.path.join(PACKAGE, "**", "*.py"), recursive=True)):
        rel = os.path.relpath(path, PACKAGE).replace(os.sep, "/")
        with open(path, encoding="utf-8") as f:
            yield rel, ast.parse(f.read(), path)


def _raw_field_reads(tree):
    """Lines where a module spells a raw field: as a string ("rows") or as a
    keyword building the section (dict(st, rows=...))."""
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and node.value in RAW_FIELDS:
            out.append((node.lineno, node.value))
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "dict"):
            out.extend((kw.value.lineno, kw.arg) for kw in node.keywords if kw.arg in RAW_FIELDS)
    return out


def test_only_the_stacks_model_reads_the_stacks_sections_raw_fields():
    offenders = []
    for rel, tree in _modules():
        if rel == "model/stacks.py":
            continue
        for line, field in _raw_field_reads(tree):
            if rel in OTHER_TRIES and field == "nodes":
                continue
            offenders.append(f"python/lprof/{rel}:{line} reads {field!r}")
    assert offenders == [], "ask lprof.model.stacks instead:\n" + "\n".join(offenders)


def test_the_check_sees_a_raw_read():
    tree = ast.parse('x = st["rows"]["node"]\ny = dict(st, nodes={})\nz = "rows and nodes"')
    assert sorted(_raw_field_reads(tree)) == [(1, "rows"), (2, "nodes")]


def _imported(tree):
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            mod = node.module or ""
            names.add(mod)
            names.update(f"{mod}.{a.name}" if mod else a.name for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    return names


def test_the_model_does_not_import_the_file_format():
    """The file depends on the model, not the reverse: profile_file converts
    the stacks section through lprof.model.stacks."""
    offenders = []
    for rel, tree in _modules():
        if rel.startswith("model/") and rel not in ("model/profile_file.py", "model/kernprof_file.py"):
            if any(n.split(".")[-1] == "profile_file" for n in _imported(tree)):
                offenders.append(rel)
    assert offenders == []


def _map_blocks():
    """docs/design.md's module map of python/lprof: {folder: its text}
    ("" for the package's top level)."""
    with open(os.path.join(ROOT, "docs", "design.md"), encoding="utf-8") as f:
        text = f.read()
    start = text.index("\npython/lprof/ ")
    part = text[start:text.index("```", start)]
    blocks, folder = {"": ""}, ""
    for line in part.splitlines():
        label = re.match(r"^  (\w+)/ ", line)
        if label:
            folder = label.group(1)
        elif re.match(r"^ +top:", line):
            folder = ""
        blocks[folder] = blocks.get(folder, "") + line + "\n"
    return blocks


def test_design_map_names_every_python_module():
    """Each module of python/lprof is named (file.py) in its folder's entry of
    docs/design.md's module map; a package's __init__.py by its folder, and
    _bootstrap/'s in the top level's entry."""
    blocks = _map_blocks()
    missing = []
    for path in sorted(glob.glob(os.path.join(PACKAGE, "**", "*.py"), recursive=True)):
        rel = os.path.relpath(path, PACKAGE).replace(os.sep, "/")
        folder, _, name = rel.rpartition("/")
        if name == "__init__.py" and folder:
            continue
        block = blocks.get("" if folder.startswith("_") else folder, "")
        if not re.search(r"(?<![\w/])%s\b" % re.escape(name), block):
            missing.append(rel)
    assert missing == [], "not in docs/design.md's module map: " + ", ".join(missing)


def test_cpu_time_columns_are_spelled_once():
    """CPU time's columns come from the C metric list (metrics.h's sampling
    group) through lprof.model.stacks.CPU_COLUMNS; no module spells them but
    the diff's words for each column."""
    from lprof import _lprof
    from lprof.export.metrics import columns
    from lprof.model.stacks import CPU_COLUMNS
    assert CPU_COLUMNS == tuple(n for n in _lprof.metric_groups()["sampling"] if n.startswith("cpu_"))
    assert columns("cpu") == CPU_COLUMNS and len(CPU_COLUMNS) == 3
    spelled = []
    for rel, tree in _modules():
        if rel == "render/diff_report.py":  # _LABELS: a word for every column
            continue
        spelled += [f"{rel}:{node.lineno}" for node in ast.walk(tree)
                    if isinstance(node, ast.Constant) and node.value in CPU_COLUMNS]
    assert spelled == []
