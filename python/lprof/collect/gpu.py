"""GPU work per Python line and stack (lprof --gpu): CUDA through CUPTI,
Intel GPUs through Level Zero, both loaded at run time by the C collectors
(src/collect/gpu/). Kernels, copies and memsets are joined to the stack that
launched them (src/aggregate/gpu_join.c) and hung under it as leaf frames
named after the work; device memory is charged to the line that allocated
it. Design: docs/design-gpu.md."""

import functools
import glob
import os
import re
import shutil
import sys
import time

from .. import _lprof
from ..model.sections import GPU_BACKEND_NAMES as _BACKEND_NAMES
from ..model.sections import gpu_line_rows as line_rows

LAUNCHES_KEPT = 65536  # LP_GPU_WAIT_SLOTS (src/aggregate/gpu_join.h)
GRAPH_NODES_KEPT = 65536  # LP_GPU_GRAPH_NODES (src/aggregate/gpu_graph.h)
BACKENDS = ("cuda", "levelzero")


def flush_timeout_ms():
    """How long each CUPTI call of the stop may take (flush, disable,
    unsubscribe): 5 s, or LPROF_GPU_FLUSH_TIMEOUT_MS."""
    try:
        return max(1, int(os.environ.get("LPROF_GPU_FLUSH_TIMEOUT_MS", "5000")))
    except ValueError:
        return 5000


def torch_cuda_major():
    """The CUDA major version the installed torch was built for, read from
    its torch/version.py (`cuda = '13.0'`) without importing torch (under
    `lprof --gpu script.py` torch is not loaded yet, and importing it here
    would run the program's imports ahead of it). None: no torch, a CPU
    build, or a file lprof cannot read."""
    import importlib.util

    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    folders = list(spec.submodule_search_locations or []) if spec else []
    for folder in folders:
        try:
            with open(os.path.join(folder, "version.py"), encoding="utf-8") as fh:
                text = fh.read()
        except OSError:
            continue
        m = re.search(r"^cuda\s*(?::[^=]*)?=\s*['\"](\d+)\.", text, re.MULTILINE)
        return int(m.group(1)) if m else None
    return None


def cupti_candidates():
    """Files libcupti may be in, in the order lprof tries them (after any
    copy the process already loaded, and before the plain sonames):
    LPROF_CUPTI_PATH, the folders pip-installed CUDA wheels use (what torch
    loads) and conda's $CONDA_PREFIX/lib, then the CUDA toolkit of
    CUDA_HOME, of nvcc on PATH, and of the installer's default prefix.
    Where the installed torch names its CUDA major (torch/version.py), that
    major's libcupti comes first, so lprof loads the copy torch will load
    (two CUPTIs in one process do not work); the sonames of the other major
    are then not tried at all."""
    major = torch_cuda_major()
    out = []
    explicit = os.environ.get("LPROF_CUPTI_PATH")
    if explicit:
        out.append(explicit)
    wheels = []
    for entry in sys.path:
        if not entry or not os.path.isdir(entry):
            continue
        wheels.append(os.path.join(entry, "nvidia", "cu13", "lib", "libcupti.so.13"))
        wheels.append(os.path.join(entry, "nvidia", "cuda_cupti", "lib", "libcupti.so.12"))
    conda = os.environ.get("CONDA_PREFIX")
    if conda:
        wheels.extend(sorted(glob.glob(os.path.join(conda, "lib", "libcupti.so.1[23]")), reverse=True))
    out.extend(wheels)
    roots = [os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")]
    nvcc = shutil.which("nvcc")
    if nvcc:
        roots.append(os.path.dirname(os.path.dirname(os.path.realpath(nvcc))))
    roots.append("/usr/local/cuda")
    for root in roots:
        if not root:
            continue
        for sub in ("lib64", "lib", os.path.join("extras", "CUPTI", "lib64")):
            out.extend(sorted(glob.glob(os.path.join(root, sub, "libcupti.so.1[23]")), reverse=True))
    seen = set()
    out = [p for p in out if os.path.exists(p) and not (p in seen or seen.add(p))]
    if major is not None:
        suffix = f".so.{major}"
        out = [p for p in out if p == explicit or p.endswith(suffix)]
    return out


def cupti_sonames():
    """The sonames lprof may load after the candidates (and look for in the
    process first): the torch's CUDA major only, when it is known."""
    major = torch_cuda_major()
    return (
        [f"libcupti.so.{major}"] if major is not None else ["libcupti.so.13", "libcupti.so.12", "libcupti.so"]
    )


def enable_level_zero_tracing():
    """The loader's tracing layer is on when this is "1" at the process's
    first zeInit (the only switch before loader 1.16; from 1.16 on the
    collector also turns it on at run time where it is off, unless the user
    set this to something else); children inherit it."""
    os.environ.setdefault("ZE_ENABLE_TRACING_LAYER", "1")


def _synchronize_torch():
    """Waits for queued CUDA work so its records exist before the final
    flush; only where the program already initialised CUDA through torch."""
    torch = sys.modules.get("torch")
    try:
        if torch is not None and torch.cuda.is_initialized():
            torch.cuda.synchronize()
    except Exception:  # a broken device must not cost the profile
        pass


def _patch_torch_profiler(module, on_start):
    """Every torch profiler (torch.profiler.profile and the autograd
    profiler) prepares its trace through this method: lprof leaves CUPTI to
    it first, when it traces a device."""
    cls = getattr(module, "profile", None)
    orig = getattr(cls, "_prepare_trace", None)
    if orig is None or getattr(orig, "_lprof_wrapped", False):
        return

    @functools.wraps(orig)
    def _prepare_trace(self, *args, **kwargs):
        if getattr(self, "use_device", None):
            on_start()
        return orig(self, *args, **kwargs)

    _prepare_trace._lprof_wrapped = True
    cls._prepare_trace = _prepare_trace


class _PatchOnImport:
    """A meta path finder that patches one module right after it is
    imported (nothing is imported ahead of the program)."""

    def __init__(self, name, patch):
        self.name, self.patch = name, patch

    def find_spec(self, fullname, path=None, target=None):
        if fullname != self.name:
            return None
        from importlib.machinery import PathFinder

        spec = PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader, patch = spec.loader, self.patch

        class _Loader:
            def create_module(self, spec):
                return loader.create_module(spec)

            def exec_module(self, module):
                loader.exec_module(module)
                patch(module)

            def __getattr__(self, name):  # get_source, is_package, ...
                return getattr(loader, name)

        spec.loader = _Loader()
        return spec


def watch_torch_profiler(on_start):
    name = "torch.autograd.profiler"
    patch = functools.partial(_patch_torch_profiler, on_start=on_start)
    if name in sys.modules:
        patch(sys.modules[name])
    else:
        sys.meta_path.insert(0, _PatchOnImport(name, patch))


def watch_torch_import(on_import):
    """on_import(torch) once the program's `import torch` finished."""
    if "torch" in sys.modules:
        on_import(sys.modules["torch"])
    else:
        sys.meta_path.insert(0, _PatchOnImport("torch", on_import))


class GPUCollector:
    """Collector for the runner: start(), stop(), section(stacks); section "gpu"."""

    name = "gpu"

    def __init__(self, backends=BACKENDS, quiet=False):
        self.backends = tuple(backends)
        self.quiet = quiet
        self.status = {}
        self.notes = []
        self.yielded = False
        self._running = False

    def start(self):
        _lprof.gpu_reset()
        self.status = {}
        self.notes = []
        self.yielded = False
        if "levelzero" in self.backends:
            enable_level_zero_tracing()
            self.status["levelzero"] = (
                _lprof.gpu_levelzero_start(os.environ.get("LPROF_ZE_LOADER_PATH")) or "active"
            )
        if "cuda" in self.backends:
            self.status["cuda"] = _lprof.gpu_cupti_start(cupti_candidates(), cupti_sonames()) or "active"
            major = torch_cuda_major()
            if self.status["cuda"].startswith("libcupti not found") and major is not None:
                self.status["cuda"] += (
                    f"; the installed torch is built for CUDA {major}: lprof loads only its libcupti.so.{major}"
                )
            if self.status["cuda"] == "active":
                self._started = time.time()
                watch_torch_profiler(self._yield_cupti)
        if self.active():  # tensor memory: CUDA's or XPU's allocator history
            watch_torch_import(self._torch_imported)
        self._running = True
        if self.active():
            _lprof.gpu_line_spans(True)  # lprof -l: each line interval, for its GPU idle time
        if not self.active() and not self.quiet:
            why = "; ".join(f"{_BACKEND_NAMES[b]}: {w}" for b, w in self.status.items())
            sys.stderr.write(f"lprof: --gpu: no GPU columns ({why})\n")

    def _torch_imported(self, torch):
        """Tensor memory per line: PyTorch's allocator history, read at the
        end; backward work on the forward lines (collect/gpu_backward.py)."""
        from . import gpu_backward

        if gpu_backward.enabled():
            why = gpu_backward.install(torch)
            if why:
                self.notes.append(f"backward GPU time stays on the backward() line: {why}")
            else:
                self._backward_hooks = True
        from . import inductor_lines

        if inductor_lines.enabled():
            inductor_lines.install()
            self._inductor_lines = True
        from . import torch_memory

        wanted = [{"cuda": "cuda", "levelzero": "xpu"}[b] for b in self.active()]
        self._tensor_history = torch_memory.start_recording(wanted)
        self.notes.extend(torch_memory.NOTES)

    def _yield_cupti(self):
        """The program starts torch.profiler on a device: CUPTI takes one
        client, so lprof flushes and leaves it (results unchanged)."""
        if self.status.get("cuda") != "active" or self.yielded:
            return
        _synchronize_torch()
        _lprof.gpu_cupti_yield(flush_timeout_ms())
        self.yielded = True
        at = time.time() - getattr(self, "_started", time.time())
        note = (
            f"torch.profiler started after {at:.1f} s: lprof handed CUPTI to it; the CUDA "
            f"columns cover the run until then"
        )
        self.notes.append(note)
        if not self.quiet:
            sys.stderr.write(f"lprof: --gpu: {note}\n")

    def active(self):
        return [b for b, s in self.status.items() if s == "active"]

    def stop(self):
        if not self._running:
            return
        self._running = False
        if "cuda" in self.active():
            _synchronize_torch()
        self.tensor_memory = None
        if getattr(self, "_tensor_history", False):
            from . import torch_memory

            self.tensor_memory = torch_memory.take_snapshot()
            self._tensor_history = False
        if getattr(self, "_backward_hooks", False):
            from . import gpu_backward

            gpu_backward.uninstall()
            self._backward_hooks = False
        if getattr(self, "_inductor_lines", False):
            from . import inductor_lines

            inductor_lines.uninstall()  # the graphs it kept stay for the section
        _lprof.gpu_stop(flush_timeout_ms())
        _lprof.gpu_line_spans(False)
        self._stats = _stats()
        if not self.quiet:
            for line in _warnings(self._stats):
                sys.stderr.write(f"lprof: --gpu: {line}\n")

    def before_stacks(self):
        if self._running:  # a checkpoint (-i): deliver what the runtimes buffered
            _lprof.gpu_flush()

    def rewrite_stacks(self, stacks):
        """torch.compile's kernels to the source lines they fuse
        (model/compiled_kernels.py), from the map collect/inductor_lines.py
        kept; a failure leaves the stacks as they were, with a note."""
        self._compiled = None
        if not getattr(self, "_inductor_lines", False):
            return
        from . import inductor_lines
        from ..model import compiled_kernels

        graphs = inductor_lines.graphs()
        try:
            summary = compiled_kernels.split(stacks, compiled_kernels.kernel_map(graphs))
        except Exception as e:
            self._compiled = {"graphs": len(graphs), "error": f"{type(e).__name__}: {e}"}
            return
        self._compiled = dict(summary, graphs=len(graphs))

    def section(self, stacks):
        stats = getattr(self, "_stats", None) or _stats()
        notes = list(self.notes)
        compiled = getattr(self, "_compiled", None)
        if compiled is not None:
            from . import inductor_lines

            stats = dict(stats, compiled=compiled)
            notes.extend(inductor_lines.notes())
            if compiled.get("error"):
                notes.append(f"torch.compile kernels stay on the calling line: {compiled['error']}")
        out = {
            "backends": dict(self.status),
            "notes": notes,
            "stats": stats,
            "lines": line_rows(stacks or {}),
        }
        if getattr(self, "tensor_memory", None):
            out["tensor_memory"] = self.tensor_memory
        return out


def _stats():
    """gpu_stats() with the GPU timeline's counters ("timeline") and how each
    backend's device times were put on the CPU timeline's clock ("clock")."""
    stats = _lprof.gpu_stats()
    tl = _lprof.gpu_timeline_stats()
    clock = {}
    if stats.get("cupti", {}).get("version"):  # CUPTI was loaded
        clock["cuda"] = (
            "cuptiGetTimestamp"
            if tl.pop("cupti_clock_aligned")
            else "CUPTI's own clock (no cuptiGetTimestamp: not aligned)"
        )
    else:
        tl.pop("cupti_clock_aligned")
    lz_clock = tl.pop("levelzero_clock")
    if stats.get("levelzero", {}).get("appends"):
        clock["levelzero"] = lz_clock or "none (no work timed)"
    stats["timeline"] = tl
    stats["clock"] = clock
    # autograd nodes mapped to their forward lines (collect/gpu_backward.py)
    stats["backward"] = _lprof.gpu_backward_stats()
    return stats


def _warnings(stats):
    out = []
    tl = stats.get("timeline", {})
    if tl.get("dropped"):
        out.append(
            f"the GPU timeline kept {tl.get('capacity', 0)} kernels/copies and dropped "
            f"{tl['dropped']} (LPROF_GPU_TRACE_MAX raises the limit); the per-line columns "
            f"count them all, the Chrome trace and GPU idle time do not"
        )
    if tl.get("line_spans_dropped"):
        out.append(
            f"{tl['line_spans_dropped']} line intervals past the {tl.get('line_spans', 0)} kept "
            f"(LPROF_GPU_SPANS_MAX) have no GPU idle time"
        )
    cupti = stats.get("cupti", {})
    if cupti.get("flush_timed_out"):
        out.append("CUPTI's final flush did not return; GPU work still buffered there is missing")
    if cupti.get("unsubscribe_timed_out"):
        out.append(
            "CUPTI did not let lprof unsubscribe in time: another CUPTI client started later in "
            "this process may get no CUDA events"
        )
    if cupti.get("after_stop"):
        out.append(
            f"{cupti['after_stop']} activity records arrived after lprof stopped; they are not in the profile"
        )
    join = stats.get("join", {})
    if join.get("aged_out"):
        out.append(
            f"{join['aged_out']} launches waited longer than lprof keeps them (their slots were "
            f"reused and {LAUNCHES_KEPT} later launches waited too); work that arrived for them "
            f"is under '[GPU work without a launch record]'"
        )
    if cupti.get("dropped"):
        out.append(f"CUPTI dropped {cupti['dropped']} activity records")
    if join.get("graph_full"):
        out.append(
            f"{join['graph_full']} CUDA graph nodes past the {GRAPH_NODES_KEPT} lprof keeps: their "
            f"replays' work is charged to the replay line"
        )
    launches = stats.get("join", {}).get("launches", 0)
    if cupti.get("callbacks") and launches and not stats.get("join", {}).get("records"):
        out.append(
            f"no device times arrived for {launches} launch records: another CUPTI "
            f"client (torch.profiler, Nsight) took the activity records"
        )
    lz = stats.get("levelzero", {})
    if lz.get("lost"):
        reused = (
            (f" ({lz['reused']} because the program signalled or reset their event again while they ran)")
            if lz.get("reused")
            else ""
        )
        out.append(f"{lz['lost']} Level Zero launches could not be timed{reused}")
    return out
