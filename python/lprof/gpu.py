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

from . import _lprof

# the stack table's GPU columns (src/aggregate/metrics.h), in listing order
GPU_COLUMNS = ("gpu_kernel_s", "gpu_copy_s", "gpu_kernels", "gpu_launches", "gpu_h2d_bytes",
               "gpu_d2h_bytes", "gpu_d2d_bytes", "gpu_alloc_bytes", "gpu_peak_bytes")
ORPHAN_MARKER = "[GPU work from a thread without Python]"
LAUNCHES_KEPT = 65536  # LP_GPU_WAIT_SLOTS (src/aggregate/gpu_join.h)
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
    return [f"libcupti.so.{major}"] if major is not None else ["libcupti.so.13", "libcupti.so.12", "libcupti.so"]


def enable_level_zero_tracing():
    """The loader's tracing layer loads only when this is set before the
    process's first zeInit (loader 1.8); children inherit it."""
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
            self.status["levelzero"] = _lprof.gpu_levelzero_start(
                os.environ.get("LPROF_ZE_LOADER_PATH")) or "active"
        if "cuda" in self.backends:
            self.status["cuda"] = _lprof.gpu_cupti_start(cupti_candidates(), cupti_sonames()) or "active"
            major = torch_cuda_major()
            if self.status["cuda"].startswith("libcupti not found") and major is not None:
                self.status["cuda"] += f"; the installed torch is built for CUDA {major}: lprof loads only its libcupti.so.{major}"
            if self.status["cuda"] == "active":
                self._started = time.time()
                watch_torch_profiler(self._yield_cupti)
                watch_torch_import(self._torch_imported)
        self._running = True
        if not self.active() and not self.quiet:
            why = "; ".join(f"{_BACKEND_NAMES[b]}: {w}" for b, w in self.status.items())
            sys.stderr.write(f"lprof: --gpu: no GPU columns ({why})\n")

    def _torch_imported(self, _torch):
        """Tensor memory per line: PyTorch's allocator history, read at the end."""
        from . import torch_memory
        self._tensor_history = torch_memory.start_recording()

    def _yield_cupti(self):
        """The program starts torch.profiler on a device: CUPTI takes one
        client, so lprof flushes and leaves it (results unchanged)."""
        if self.status.get("cuda") != "active" or self.yielded:
            return
        _synchronize_torch()
        _lprof.gpu_cupti_yield(flush_timeout_ms())
        self.yielded = True
        at = time.time() - getattr(self, "_started", time.time())
        note = (f"torch.profiler started after {at:.1f} s: lprof handed CUPTI to it; the CUDA "
                f"columns cover the run until then")
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
        _lprof.gpu_stop(flush_timeout_ms())
        self._stats = _lprof.gpu_stats()
        if not self.quiet:
            for line in _warnings(self._stats):
                sys.stderr.write(f"lprof: --gpu: {line}\n")

    def before_stacks(self):
        if self._running:  # a checkpoint (-i): deliver what the runtimes buffered
            _lprof.gpu_flush()

    def section(self, stacks):
        stats = getattr(self, "_stats", None) or _lprof.gpu_stats()
        out = {"backends": dict(self.status), "notes": list(self.notes), "stats": stats,
               "lines": line_rows(stacks or {})}
        if getattr(self, "tensor_memory", None):
            out["tensor_memory"] = self.tensor_memory
        return out


_BACKEND_NAMES = {"cuda": "CUDA", "levelzero": "Level Zero"}


def _warnings(stats):
    out = []
    cupti = stats.get("cupti", {})
    if cupti.get("flush_timed_out"):
        out.append("CUPTI's final flush did not return; GPU work still buffered there is missing")
    if cupti.get("unsubscribe_timed_out"):
        out.append("CUPTI did not let lprof unsubscribe in time: another CUPTI client started later in "
                   "this process may get no CUDA events")
    if cupti.get("after_stop"):
        out.append(f"{cupti['after_stop']} activity records arrived after lprof stopped; they are not "
                   f"in the profile")
    join = stats.get("join", {})
    if join.get("aged_out"):
        out.append(f"{join['aged_out']} launches waited longer than lprof keeps them (their slots were "
                   f"reused and {LAUNCHES_KEPT} later launches waited too); work that arrived for them "
                   f"is under '[GPU work without a launch record]'")
    if cupti.get("dropped"):
        out.append(f"CUPTI dropped {cupti['dropped']} activity records")
    launches = stats.get("join", {}).get("launches", 0)
    if cupti.get("callbacks") and launches and not stats.get("join", {}).get("records"):
        out.append(f"no device times arrived for {launches} launch records: another CUPTI "
                   f"client (torch.profiler, Nsight) took the activity records")
    lz = stats.get("levelzero", {})
    if lz.get("lost"):
        reused = (f" ({lz['reused']} because the program signalled or reset their event again while they "
                  f"ran)") if lz.get("reused") else ""
        out.append(f"{lz['lost']} Level Zero launches could not be timed{reused}")
    return out


def _skipped(frame):
    return frame[0] == "<gpu>"


def line_rows(section, accept_frame=None):
    """[[file, line, function, kernel_s, copy_s, kernels, launches, h2d, d2h,
    d2d, alloc, peak, other_thread_s], ...] by the attribution rule (or
    charged to the innermost frame accept_frame takes)."""
    from .model.stacks import charge, charge_frame
    frames = section.get("frames", [])
    orphan = {i for i, f in enumerate(frames) if f[0] == "<lprof>" and f[1] == ORPHAN_MARKER}
    rows = {}
    for ids, _thread, m in section.get("stacks", []):
        if not ids or not any(m.get(c) for c in GPU_COLUMNS):
            continue
        f = charge(frames, ids) if accept_frame is None else charge_frame(frames, ids, accept_frame)
        if f is None or f[0] in ("<gpu>", "<lprof>"):
            continue
        row = rows.setdefault((f[0], f[3], f[1]), [0.0] * (len(GPU_COLUMNS) + 1))
        for i, c in enumerate(GPU_COLUMNS):
            row[i] += m.get(c, 0)
        if orphan and orphan.intersection(ids):
            row[-1] += m.get("gpu_kernel_s", 0) + m.get("gpu_copy_s", 0)
    return [[path, line, func] + vals for (path, line, func), vals in rows.items()]


def line_columns(profile, functions=None):
    """{(file, line): {gpu_s, kernel_s, copy_s, kernels, launches, h2d_bytes,
    d2h_bytes, d2d_bytes, alloc_bytes, peak_bytes, other_thread_s}}. With
    `functions` (the -l listing's), work is charged to the innermost frame
    inside one of them, from the profile's stacks."""
    gpu = profile.get("gpu") or {}
    if functions is not None:
        inside = {(fn["file"], fn["first_line"]) for fn in functions}
        rows = line_rows(profile.get("stacks") or {}, lambda f: (f[0], f[2]) in inside)
    else:
        rows = gpu.get("lines", [])
    out = {}
    for path, line, _func, *vals in rows:
        e = out.setdefault((path, line), [0.0] * len(vals))
        for i, v in enumerate(vals):
            e[i] += v
    keys = ("kernel_s", "copy_s", "kernels", "launches", "h2d_bytes", "d2h_bytes", "d2d_bytes",
            "alloc_bytes", "peak_bytes", "other_thread_s")
    result = {}
    for k, vals in out.items():
        d = dict(zip(keys, vals))
        d["gpu_s"] = d["kernel_s"] + d["copy_s"]
        d["live_bytes"] = 0
        result[k] = d
    tensors = gpu.get("tensor_memory")
    if tensors:
        # PyTorch's allocator history is per tensor: it replaces the
        # per-segment cudaMalloc bytes on every line
        for d in result.values():
            d["alloc_bytes"] = d["peak_bytes"] = 0
        for path, line, _func, alloc, peak, live in tensors.get("lines", []):
            d = result.get((path, line))
            if d is None:
                d = result[(path, line)] = dict.fromkeys(keys + ("gpu_s", "live_bytes"), 0)
            d["alloc_bytes"] += alloc
            d["peak_bytes"] += peak
            d["live_bytes"] += live
    return result


def summary(profile):
    """Lines under a listing: backends used, totals, what was not charged."""
    gpu = profile.get("gpu")
    if not gpu:
        return []
    stats = gpu.get("stats") or {}
    join = stats.get("join", {})
    used = [_BACKEND_NAMES.get(b, b) for b, s in (gpu.get("backends") or {}).items() if s == "active"]
    if not used:
        why = "; ".join(f"{_BACKEND_NAMES.get(b, b)}: {s}" for b, s in (gpu.get("backends") or {}).items())
        return ["", f"GPU: none ({why})"]
    launches = sum(row[6] for row in gpu.get("lines", []))
    out = ["", f"GPU ({', '.join(used)}): {join.get('records', 0)} kernels/copies, "
               f"{join.get('device_ns', 0) / 1e9:.6f} s device time, {launches:.0f} launches "
               f"charged to lines"]
    if join.get("unattributed"):
        out.append(f"  {join['unattributed']} records had no launch record (stack "
                   f"'[GPU work without a launch record]')")
    if join.get("late"):
        out.append(f"  {join['late']} records arrived after their launch's slot was reused; "
                   f"charged to their launch all the same")
    if join.get("aged_out"):
        out.append(f"  {join['aged_out']} launches aged out before their records arrived")
    out.extend(f"  {note}" for note in gpu.get("notes", []))
    tensors = gpu.get("tensor_memory")
    if tensors:
        from .render.memory_report import fmt_bytes
        ts = tensors.get("stats", {})
        out.append(f"  tensor memory (PyTorch's allocator history): peak {fmt_bytes(ts.get('peak_bytes', 0)) or '0 B'}, "
                   f"{fmt_bytes(ts.get('live_bytes', 0)) or '0 B'} live at exit"
                   + ("; the history's window was full, older allocations are not counted"
                      if ts.get("window_full") else ""))
    mem = stats.get("memory", {})
    if mem.get("allocs"):
        from .render.memory_report import fmt_bytes
        out.append(f"  device memory: peak {fmt_bytes(mem.get('peak_bytes', 0)) or '0 B'}, "
                   f"{mem.get('allocs', 0)} allocations")
    return out
