"""torch.compile's kernels charged to the source lines they fuse.

A kernel Inductor generated runs the ops of several lines of the compiled
function; its launch stack ends in the line that called the compiled
function (and Inductor's generated module, never a charged line). Given the
map collect/inductor_lines.py kept ({kernel: the stack traces of its ops}),
a GPU stack's kernel is found in it
- by the launch: where the stack holds a line of a generated module's
  call(), the provenance comment above that line names the kernel entry
  (exact, and the only way for extern kernels: cuBLAS names its own);
- else by the kernel's name (what CUPTI reports is Inductor's name for a
  Triton kernel), where one graph, or all graphs alike, gave it lines.
Each such stack becomes one stack per distinct source line of the kernel:

    <launch stack>;[compiled: fused over N lines];<op's frames>;<kernel>

and every summed column of the row (times, bytes, counts) is divided by N,
so column totals stay the run's; a "max" column (peak bytes) is kept whole.
The op's frames are its FX stack trace, outermost first (the compiled
function's line, then any module or helper it inlined): the attribution rule
charges the innermost one in the program's files. Kernels not in the map,
or whose name two graphs gave to different lines with nothing on the stack
to tell which, keep their stack. Reads only profile data, the generated
modules and the program's files (for the functions' names and first lines)."""

import ast
import collections
import functools
import json
import re
import sys

from ..common import libdirs
from .frames import GPU_FILE, MARKER_FILE, table as frame_table
from . import stacks as stacks_model

_QUALIFIED = sys.version_info >= (3, 11)  # frames carry co_qualname (resolve.c)
# the comment Inductor's wrapper writes above a launch when tracking is on
_HANDLE_COMMENT = re.compile(r"\[Provenance debug handles\] (\S+:\d+)\s*$")
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


class KernelLines(collections.namedtuple("KernelLines", "by_name by_launch")):
    """The map, two ways. by_name: {kernel name: [(generated module file or
    None, chains), ...]}, one candidate per graph that named a kernel so.
    by_launch: {(generated module file, "<kernel>:<handle>"): chains}, for
    a launch from a line of a generated module's call(). chains: the
    distinct op chains (parse_stack_trace tuples), in first-seen order."""

    __slots__ = ()

    def __bool__(self):
        return bool(self.by_name)


def kernel_map(graphs):
    """KernelLines from collect/inductor_lines.graphs(); text that does not
    parse is skipped."""
    by_name, by_launch = {}, {}
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
                by_name.setdefault(name, []).append((module_file, tuple(chains)))
                if module_file:
                    by_launch[(module_file, str(key))] = tuple(chains)
    return KernelLines(by_name, by_launch)


@functools.lru_cache(maxsize=256)
def _module_lines(path):
    try:
        with open(path, encoding="utf-8") as fh:
            return tuple(fh.read().splitlines())
    except (OSError, UnicodeDecodeError):
        return ()


def launch_key(module_file, line, read_lines=_module_lines):
    """The "<kernel>:<handle>" a generated module launches from `line`: its
    wrapper writes "# [Provenance debug handles] <kernel>:<handle>" in the
    comments right above each launch (an extern kernel's too: a cuBLAS
    GEMM has no Inductor name). None where no such comment is there."""
    lines = read_lines(module_file)
    i = line - 2  # the line above, 0-based
    while 0 <= i < len(lines) and lines[i].lstrip().startswith("#"):
        m = _HANDLE_COMMENT.search(lines[i])
        if m:
            return m.group(1)
        i -= 1
    return None


def _chains_of(kmap, modules, name, stack, read_lines):
    """The op chains of the kernel `name` launched from `stack` (Frames,
    root first): by the generated module's launch line where one of
    `modules` is on the stack, else by name (_choose); None when neither
    tells."""
    if modules:
        for f in reversed(stack):
            if f.line and f.file in modules:
                key = launch_key(f.file, f.line, read_lines)
                chains = kmap.by_launch.get((f.file, key)) if key else None
                if chains:
                    return chains
                break
    candidates = kmap.by_name.get(name)
    return _choose(candidates, {f.file for f in stack}) if candidates else None


def _choose(candidates, stack_files):
    """The chains of the graph that launched this kernel: the one whose
    generated module is on the stack, else the only one (or the one all
    candidates agree on); None when it cannot be told."""
    on_stack = [c for f, c in candidates if f is not None and f in stack_files]
    if len(on_stack) == 1:
        return on_stack[0]
    distinct = {c for _f, c in candidates}
    return next(iter(distinct)) if len(distinct) == 1 else None


def split(section, kmap, source_function=None, read_lines=_module_lines):
    """Rewrites a row-form stacks section in place (see the module's doc);
    returns {"kernels": distinct kernel names split, "stacks_split": rows split,
    "gpu_s": device seconds moved to source lines}."""
    summary = {"kernels": 0, "stacks_split": 0, "gpu_s": 0.0}
    if not kmap or not section.get("stacks"):
        return summary
    source_function = source_function or enclosing_function
    raw_frames = section["frames"]
    frames = frame_table(raw_frames)
    kinds = stacks_model.merge_kinds(section)
    frame_id = stacks_model.frame_interner(raw_frames)
    modules = {mf for mf, _key in kmap.by_launch}

    def op_frame(file, line, func):
        qualname, first = source_function(file, line, func)
        return frame_id([file, qualname, first, line])

    out, names = [], set()
    for ids, thread, m in section["stacks"]:
        leaf = frames[ids[-1]] if ids else None
        chains = None
        if leaf is not None and leaf.file == GPU_FILE:
            chains = _chains_of(kmap, modules, leaf.function, [frames[i] for i in ids[:-1]], read_lines)
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
        summary["stacks_split"] += 1
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
    `file`, as lprof's frames name it (co_qualname from Python 3.11, the
    bare name before, as resolve.c takes them; the first line of a decorated
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
                    best = (name if _QUALIFIED else child.name, first)
                visit(child, f"{name}.<locals>.")
            else:
                visit(child, prefix)

    visit(tree, "")
    return best or (func, line)
