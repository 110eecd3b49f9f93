"""Which source lines each torch.compile kernel came from (lprof --gpu).

Inductor fuses the ops of several lines of a compiled function into one
generated kernel (triton_poi_fused_add_mul_sin_0 on CUDA). Its provenance
tracking (torch._inductor.config.trace.provenance_tracking_level, documented
in that config) records, per generated kernel, the FX stack traces of the
ops it holds: the user's file, line and function of each. Each compiled
graph keeps them as JSON text on its CompiledFxGraph
(inductor_provenance_stack_traces_str), also when Inductor loads the graph
from its cache (the cache key includes the tracking level, so a graph cached
without tracking is compiled anew rather than read without it).

Under --gpu, when the program imports torch._inductor, lprof turns the
tracking on at its lightest level (2, "basic": the kernel map only) unless
the program chose a level, and wraps CompiledFxGraph.post_compile, which
every compiled or cache-loaded graph passes once, to keep that text and the
generated module's file. Torch before 2.13 (2.11 on an H200) leaves the
tracking level out of the cache key: a graph that a run without lprof cached
was loaded under lprof without its map. lprof puts the level into the key
itself (FxGraphHashDetails, which AOTAutograd's cache details extend).
Nothing here runs per call of compiled code, nor in uncompiled code. The map is read at the end by model/compiled_kernels.py.
LPROF_GPU_COMPILED=0 turns this off. Design: docs/design-gpu.md."""

import functools
import os
import sys

from ..common import libdirs

# the level whose only work is the kernel -> nodes -> stack trace map
BASIC_TRACKING = 2
_GRAPHS = []  # [(generated module file or None, provenance JSON text)]
_STATE = {}


def enabled():
    return os.environ.get("LPROF_GPU_COMPILED", "1") != "0"


def install():
    """Watches for Inductor's config and output code modules (imported by
    the program's first torch.compile, not by `import torch`)."""
    if _STATE.get("installed"):
        return
    _STATE.update(installed=True, undo=[], finders=[], notes=[], without_map=0)
    _STATE.pop("seen", None)
    del _GRAPHS[:]
    _when_imported("torch._inductor.config", _turn_on_tracking)
    _when_imported("torch._inductor.output_code", _wrap_post_compile)
    _when_imported("torch._inductor.codecache", _key_on_tracking)


def _when_imported(name, fn):
    if name in sys.modules:
        _quietly(fn)(sys.modules[name])
    else:
        from .gpu import _PatchOnImport

        finder = _PatchOnImport(name, _quietly(fn))
        sys.meta_path.insert(0, finder)
        _STATE["finders"].append(finder)


def _quietly(fn):
    """A patch runs inside the program's import: its failure is a note, never
    the program's error."""

    def patch(module):
        try:
            fn(module)
        except Exception as e:
            _STATE["notes"].append(f"torch.compile kernels stay on the calling line: {type(e).__name__}: {e}")

    return patch


def _turn_on_tracking(config):
    trace = getattr(config, "trace", None)
    if trace is None or not hasattr(trace, "provenance_tracking_level"):
        _STATE["notes"].append(
            "torch.compile kernels stay on the calling line: this torch has no provenance tracking"
        )
        return
    if trace.provenance_tracking_level == 0:
        trace.provenance_tracking_level = BASIC_TRACKING
        _STATE["undo"].append((trace, "provenance_tracking_level", 0, BASIC_TRACKING))


# lprof's own entry in Inductor's cache key (torch's own name for it is
# absent before 2.13; ours is there whatever the torch)
KEY_ATTRIBUTE = "lprof_provenance_tracking_level"


def _patch(module, class_name, method, wrap, missing):
    """Replaces class_name.method in module by wrap(original), undone by
    uninstall(); without that class or method, the note `missing` instead."""
    cls = getattr(module, class_name, None)
    orig = cls.__dict__.get(method) if cls is not None else None
    if not callable(orig):
        _STATE["notes"].append(missing)
        return
    ours = functools.wraps(orig)(wrap(orig))
    setattr(cls, method, ours)
    _STATE["undo"].append((cls, method, orig, ours))


def _key_on_tracking(codecache):
    def wrap(orig):
        def __init__(self, *args, **kwargs):
            orig(self, *args, **kwargs)
            from torch._inductor import config

            level = getattr(getattr(config, "trace", None), "provenance_tracking_level", 0)
            if level:  # a graph keyed so was compiled with its map
                setattr(self, KEY_ATTRIBUTE, level)

        return __init__

    _patch(
        codecache,
        "FxGraphHashDetails",
        "__init__",
        wrap,
        "torch.compile kernels may stay on the calling line: this torch's Inductor has no "
        "FxGraphHashDetails, so a graph cached without lprof may be loaded without its map",
    )


def _wrap_post_compile(module):
    def wrap(orig):
        def post_compile(self, *args, **kwargs):
            before = getattr(self, "current_callable", None)
            out = orig(self, *args, **kwargs)
            try:
                _note_graph(self, before)
            except Exception:  # a graph without a map keeps the calling line
                _STATE["without_map"] = _STATE.get("without_map", 0) + 1
            return out

        return post_compile

    _patch(
        module,
        "CompiledFxGraph",
        "post_compile",
        wrap,
        "torch.compile kernels stay on the calling line: this torch's Inductor has no "
        "CompiledFxGraph.post_compile",
    )


def _note_graph(graph, callable_before):
    text = getattr(graph, "inductor_provenance_stack_traces_str", None)
    if not text:
        _STATE["without_map"] = _STATE.get("without_map", 0) + 1
        # what this torch has instead, named in the note: where to look on a
        # torch whose graphs come without the map
        _STATE.setdefault("seen", sorted(a for a in dir(graph) if "provenance" in a.lower()))
        return
    module_file = _generated_file(callable_before) or _generated_file(
        getattr(graph, "current_callable", None)
    )
    _GRAPHS.append((module_file, text))


def _generated_file(fn):
    """The file of the generated module whose call() launches the kernels
    (it is on the launch stacks: it tells apart kernels of the same name
    in two graphs)."""
    fn = getattr(fn, "__func__", fn)
    code = getattr(fn, "__code__", None)
    path = getattr(code, "co_filename", None)
    return path if path and libdirs.is_generated_file(path) else None


def graphs():
    """[(generated module file or None, provenance JSON text)], one per
    compiled graph seen."""
    return list(_GRAPHS)


def notes():
    out = list(_STATE.get("notes", []))
    n = _STATE.get("without_map", 0)
    if n:
        out.append(
            f"{n} torch.compile graph{'s' if n > 1 else ''} had no kernel-to-line map "
            f"(provenance tracking off or failed): their kernels stay on the calling line"
            + (
                f" (the graph's provenance attributes: {', '.join(_STATE['seen']) or 'none'})"
                if "seen" in _STATE
                else ""
            )
        )
    return out


def uninstall():
    """Gives back what install() changed (where the program did not change it since)."""
    for owner, name, orig, ours in reversed(_STATE.get("undo", [])):
        current = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
        if current is ours:
            setattr(owner, name, orig)
    for finder in _STATE.get("finders", []):
        if finder in sys.meta_path:
            sys.meta_path.remove(finder)
    _STATE.update(installed=False, undo=[], finders=[])
