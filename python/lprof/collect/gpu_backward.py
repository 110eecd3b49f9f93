"""Backward GPU time on the forward lines (lprof --gpu with PyTorch).

Autograd runs a node's backward on its own threads (one per device), where
no Python frame says which line of the model the node belongs to, so its
kernels went to the backward() call's line. When the program imports torch
under --gpu, lprof marks each autograd node with the stack of the forward
line that made it, and tells the launch callback whose backward is running
(src/collect/cpython/gpu_autograd.c):

- forward: a torch function mode whose __torch_function__ is a C function,
  and torch.autograd.Function.apply wrapped by one (custom Functions, which
  the mode does not see). After each op, the node it made for its results
  gets a pre-hook bound to the caller's stack. No Python frame of lprof's is
  on the stack while the op runs, so the forward's own stacks do not change.
- backward: the pre-hook sets the running thread's backward origin; a kernel
  or copy launched after it on that thread is charged to the forward stack
  under a "[backward]" marker frame, and its device time to gpu_backward_s
  as well. The op's inner nodes and the AccumulateGrad nodes of its leaves,
  which autograd runs next on the same thread, keep that origin.
  torch.autograd.backward and grad keep the calling thread's origin as it was
  around the pass, so work after backward() stays on its own lines.

The mode is pushed on the thread that imports torch (torch function modes
are per thread): forward passes on other threads are not mapped.
LPROF_GPU_BACKWARD=0 turns this off. Design and overhead: docs/design-gpu.md."""

import functools
import os
import types

from .. import _lprof

_STATE = {}


def enabled():
    return os.environ.get("LPROF_GPU_BACKWARD", "1") != "0"


def install(torch):
    """Installs the hooks (the mode on the calling thread); None when done,
    else why not (a torch without the autograd API lprof uses)."""
    if _STATE:
        return None
    try:
        from torch.overrides import TorchFunctionMode
        from torch.autograd.function import Function

        get_seq = torch._C._autograd._get_sequence_nr
        tensor_type = torch._C.TensorBase
        node = torch.autograd.graph.Node
        autograd = torch.autograd
        if not (hasattr(node, "register_prehook") and hasattr(node, "_sequence_nr")):
            return "this torch's autograd nodes have no pre-hooks"
    except Exception as e:  # AttributeError, ImportError: an older or a stand-in torch
        return f"this torch lacks the autograd API lprof uses ({e})"
    try:  # runs inside the program's `import torch`: never its error
        _install(get_seq, tensor_type, TorchFunctionMode, Function, autograd)
    except Exception as e:
        uninstall()
        return f"lprof could not hook this torch's autograd ({type(e).__name__}: {e})"
    _when_dynamo_imported(_teach_dynamo)
    return None


def _install(get_seq, tensor_type, TorchFunctionMode, Function, autograd):
    _lprof.gpu_autograd_setup(get_seq, tensor_type)

    class LprofBackwardLines(TorchFunctionMode):
        """lprof --gpu: maps autograd nodes to the lines that made them."""

    mode = LprofBackwardLines()
    # a C function bound to the mode (torch calls a method of it)
    mode.__torch_function__ = types.MethodType(_lprof.gpu_autograd_torch_function, mode)
    undo = _STATE["undo"] = []  # what uninstall() gives back, also after a failure half-way
    raw = Function.__dict__.get("apply")
    if isinstance(raw, classmethod):
        ours = classmethod(functools.partial(_lprof.gpu_autograd_apply, raw.__func__))
        Function.apply = ours
        undo.append((Function, "apply", raw, ours))
    for name in ("backward", "grad"):
        orig = getattr(autograd, name, None)
        if callable(orig):
            ours = functools.wraps(orig)(functools.partial(_lprof.gpu_autograd_backward, orig))
            setattr(autograd, name, ours)
            undo.append((autograd, name, orig, ours))
    mode.__enter__()
    _STATE["mode"] = mode


def _traced_torch_function(mode, func, types, args=(), kwargs=None):
    """What torch.compile traces in place of the mode's C __torch_function__
    (the op alone: compiled code's nodes are mapped by Function.apply, the
    compiled function's own)."""
    return func(*args, **(kwargs or {}))


def _teach_dynamo(dynamo):
    """Dynamo traces the modes on the stack and cannot trace a C function:
    without this, every op under torch.compile would break the graph."""
    try:
        dynamo.substitute_in_graph(_lprof.gpu_autograd_torch_function, skip_signature_check=True)(
            _traced_torch_function
        )
    except Exception as e:  # an older torch: said in the notes
        _STATE["dynamo"] = f"torch.compile may break graphs at each op under --gpu ({e})"


def _when_dynamo_imported(fn):
    import sys

    if "torch._dynamo" in sys.modules:
        fn(sys.modules["torch._dynamo"])
    else:
        from .gpu import _PatchOnImport

        sys.meta_path.insert(0, _PatchOnImport("torch._dynamo", fn))


def uninstall():
    """Undoes install() (the mode only on the thread that installed it)."""
    for owner, name, orig, ours in reversed(_STATE.pop("undo", [])):
        current = owner.__dict__.get(name) if isinstance(owner, type) else getattr(owner, name, None)
        if current is ours:  # not if the program replaced it since
            setattr(owner, name, orig)
    mode = _STATE.pop("mode", None)
    if mode is not None:
        try:  # only where it is the innermost mode (on the thread that pushed it)
            import torch

            n = torch._C._len_torch_function_stack()
            if n and torch._C._get_function_stack_at(n - 1) is mode:
                mode.__exit__(None, None, None)
        except Exception:
            pass
    _STATE.clear()


def stats():
    """{ops, nodes, runs, failed}: ops whose node got a pre-hook, nodes
    hooked, pre-hooks run by backward, ops whose hooking failed."""
    return _lprof.gpu_backward_stats()
