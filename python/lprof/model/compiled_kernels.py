"""torch.compile's kernels charged to the source lines they fuse.

A kernel Inductor generated runs the ops of several lines of the compiled
function; its launch stack ends in the line that called the compiled
function (and Inductor's generated module, never a charged line). Given the
map collect/inductor_lines.py kept ({kernel: the stack traces of its ops}),
each GPU stack whose kernel is in the map becomes one stack per distinct
source line of the kernel:

    <launch stack>;[compiled: fused over N lines];<op's frames>;<kernel>

and every summed column of the row (times, bytes, counts) is divided by N,
so column totals stay the run's; a "max" column (peak bytes) is kept whole.
The op's frames are its FX stack trace, outermost first (the compiled
function's line, then any module or helper it inlined): the attribution rule
charges the innermost one in the program's files. Kernels not in the map,
or whose name two graphs gave to different lines with nothing on the stack
to tell which, keep their stack. Pure functions of profile data."""

import ast
import functools
import json
import re

from ..common import libdirs
from .frames import GPU_FILE, MARKER_FILE, table as frame_table
from . import stacks as stacks_model

MARKER_PREFIX = "[compiled"
# one frame of a Python traceback: File "x.py", line 12, in forward
_TRACE_FRAME = re.compile(r'File "(?P<file>[^"]+)", line (?P<line>\d+), in (?P<func>\S+)')


def marker_name(n):
    """The marker frame above a kernel's source lines (shows the split)."""
    return "[compiled: 1 line]" if n == 1 else f"[compiled: fused over {n} lines]"


def parse_stack_trace(text):
    """An FX node's stack trace -> ((file, line, function), ...), outermost
    first, without lprof's own frames (Dynamo traces lprof's torch function
    mode, collect/gpu_backward.py, into every op's trace)."""
    return tuple(
        (m["file"], int(m["line"]), m["func"])
        for m in _TRACE_FRAME.finditer(text or "")
        if not libdirs.is_launcher_file(m["file"])
    )


def kernel_map(graphs):
    """{kernel name: [(generated module file or None, (op chain, ...)), ...]}
    from collect/inductor_lines.graphs(): one candidate per graph that named
    a kernel so; an op chain is a parse_stack_trace() tuple, distinct ones
    in first-seen order. Text that does not parse is skipped."""
    out = {}
    for module_file, text in graphs:
        try:
            per_kernel = json.loads(text)
        except (TypeError, ValueError):
            continue
        if not isinstance(per_kernel, dict):
            continue
        for key, traces in per_kernel.items():
            # Inductor's key is "<kernel name>:<debug handle>"
            name = str(key).rsplit(":", 1)[0]
            chains = []
            for t in traces if isinstance(traces, list) else ():
                chain = parse_stack_trace(t if isinstance(t, str) else "")
                if chain and chain not in chains:
                    chains.append(chain)
            if chains:
                out.setdefault(name, []).append((module_file, tuple(chains)))
    return out


def _choose(candidates, stack_files):
    """The chains of the graph that launched this kernel: the one whose
    generated module is on the stack, else the only one (or the one all
    candidates agree on); None when it cannot be told."""
    on_stack = [c for f, c in candidates if f is not None and f in stack_files]
    if len(on_stack) == 1:
        return on_stack[0]
    distinct = {c for _f, c in candidates}
    return next(iter(distinct)) if len(distinct) == 1 else None


def split(section, kmap, source_function=None):
    """Rewrites a row-form stacks section in place (see the module's doc);
    returns {"kernels": distinct kernel names split, "rows": rows split,
    "gpu_s": device seconds moved to source lines}."""
    summary = {"kernels": 0, "rows": 0, "gpu_s": 0.0}
    if not kmap or not section.get("stacks"):
        return summary
    source_function = source_function or enclosing_function
    raw_frames = section["frames"]
    frames = frame_table(raw_frames)
    kinds = stacks_model.merge_kinds(section)
    index = {tuple(f): i for i, f in enumerate(raw_frames)}

    def frame_id(raw):
        key = tuple(raw)
        if key not in index:
            index[key] = len(raw_frames)
            raw_frames.append(list(raw))
        return index[key]

    def op_frame(file, line, func):
        qualname, first = source_function(file, line, func)
        return frame_id([file, qualname, first, line])

    out, names = [], set()
    for ids, thread, m in section["stacks"]:
        leaf = frames[ids[-1]] if ids else None
        candidates = kmap.get(leaf.function) if leaf is not None and leaf.file == GPU_FILE else None
        chains = _choose(candidates, {frames[i].file for i in ids}) if candidates else None
        if not chains:
            out.append([ids, thread, m])
            continue
        n = len(chains)
        marker = frame_id([MARKER_FILE, marker_name(n), 0, 0])
        share = {k: (v if kinds.get(k) == "max" else v / n) for k, v in m.items()}
        for chain in chains:
            path = list(ids[:-1]) + [marker] + [op_frame(*op) for op in chain] + [ids[-1]]
            out.append([path, thread, dict(share)])
        names.add(leaf.function)
        summary["rows"] += 1
        summary["gpu_s"] += m.get("gpu_kernel_s", 0) + m.get("gpu_copy_s", 0)
    section["stacks"] = _combined(out, kinds)
    summary["kernels"] = len(names)
    return summary


def _combined(rows, kinds):
    """Rows of the same stack and thread as one (two launch stacks may now
    end in the same op frames)."""
    by_key, out = {}, []
    for ids, thread, m in rows:
        key = (tuple(ids), thread)
        have = by_key.get(key)
        if have is None:
            by_key[key] = m
            out.append([list(ids), thread, m])
            continue
        for k, v in m.items():
            have[k] = max(have.get(k, v), v) if kinds.get(k) == "max" else have.get(k, 0) + v
    return out


@functools.lru_cache(maxsize=4096)
def enclosing_function(file, line, func):
    """(qualified name, first line) of the function holding `line` of
    `file`, as lprof's frames name it (the first line of a decorated
    function is its first decorator's); (func, line) where the file cannot
    be read or parsed."""
    try:
        with open(file, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), filename=file)
    except (OSError, SyntaxError, ValueError, UnicodeDecodeError):
        return func, line
    best = None

    def visit(node, prefix):
        nonlocal best
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if isinstance(child, ast.ClassDef):
                    visit(child, name + ".")
                    continue
                first = min([child.lineno] + [d.lineno for d in child.decorator_list])
                if first <= line <= (child.end_lineno or child.lineno) and child.name == func:
                    best = (name, first)
                visit(child, f"{name}.<locals>.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return best or (func, line)
