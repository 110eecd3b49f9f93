"""Code the program did not write is not its line: torch.compile's Inductor
modules and code a library built with exec (Triton's launcher, "<string>")
give their GPU work and tensors to the program's line that called them, and
lprof's own frames are no part of a tensor's stack. Code given as text is
the program only where no program file is on the stack (python -c)."""
import os

from conftest import line_of
from test_gpu import _cuda_env, _export, fake_cuda  # noqa: F401 (fake_cuda: a fixture, named as a parameter)


def test_inductor_modules_are_not_the_programs_lines(monkeypatch, tmp_path):
    from lprof.common import libdirs
    from lprof.model import stacks as stacks_model
    user = str(tmp_path / "train.py")
    generated = "/tmp/torchinductor_root/ab/cabcdef.py"
    section = {"frames": [[user, "<module>", 1, 9], [user, "compiled", 5, 5], [generated, "call", 40, 52]],
               "stacks": [[[0, 1, 2], 1, {"gpu_kernel_s": 0.5}]]}
    assert list(stacks_model.lines(section)) == [(user, 5, "compiled")]
    assert libdirs.is_generated_file(generated)
    assert not libdirs.is_generated_file(user)
    # a cache folder the program chose
    cache = tmp_path / "inductor-cache"
    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(cache))
    assert libdirs.is_generated_file(os.path.join(str(cache), "xy", "cxy.py"))


def test_tensor_memory_skips_inductor_frames(tmp_path):
    from lprof.collect import torch_memory
    user = str(tmp_path / "train.py")
    frames = [{"filename": "/tmp/torchinductor_root/ab/cabcdef.py", "line": 52, "name": "call"},
              {"filename": user, "line": 5, "name": "compiled"}]  # innermost first, as torch gives them
    snap = {"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": 512, "frames": frames}]]}
    assert [row[:4] for row in torch_memory.read_snapshot(snap)["lines"]] == [[user, 5, "compiled", 512]]


def test_tensor_memory_stacks_start_below_lprofs_own_frames(tmp_path):
    """Run from a source tree, lprof's launcher frames are not under
    site-packages; they are still not the program's (seen on an H200)."""
    from lprof.collect import torch_memory
    from lprof.common import libdirs
    user = str(tmp_path / "train.py")
    launcher = os.path.join(libdirs.LPROF_DIR, "commands", "run.py")
    frames = [{"filename": user, "line": 5, "name": "step"}, {"filename": launcher, "line": 80, "name": "run"}]
    snap = {"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": 512, "frames": frames}]]}
    out = torch_memory.read_snapshot(snap)
    assert [[f[0], f[1]] for f in out["stacks"]["frames"]] == [[user, "step"]]


def test_kernels_a_library_launches_from_exec_code_go_to_the_programs_line(run_lprof, tmp_path, fake_cuda,
                                                                           write_script):
    """What torch.compile does on a real GPU: Triton's launcher is a function
    built by exec ("<string>") inside an installed package; the kernel it
    launches belongs to the program's line that called the compiled code."""
    write_script("site-packages/tritonish.py", '''\
        import ctypes, os
        _lib = ctypes.CDLL(os.environ["LPROF_CUPTI_PATH"])
        _scope = {"lib": _lib}
        exec(compile("def launcher(n):\\n    lib.fake_cupti_launch_kernel(b'triton_poi_fused_0', n)\\n",
                     "<string>", "exec"), _scope)
        def run(n):
            _scope["launcher"](n)
        ''')
    script = write_script("train.py", """\
        import sys, os
        sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "site-packages"))
        import tritonish
        def fused_body():
            tritonish.run(2000)  # marker: compiled
        for _ in range(4):
            fused_body()
        """)
    r = run_lprof("--gpu=cuda", "-o", tmp_path / "p.lprof", script, env=_cuda_env(fake_cuda))
    assert r.returncode == 0, r.stderr
    rows = {(row["file"], row["line"]): row for row in _export(run_lprof, tmp_path, tmp_path / "p.lprof")["gpu"]["lines"]}
    line = line_of(script, "marker: compiled")
    assert rows[(str(script), line)]["kernels"] == 4, rows
    assert not [key for key in rows if key[0] == "<string>"]


def test_tensor_memory_of_code_given_as_text(tmp_path):
    """python -c (and a notebook's "<ipython-input-...>" cells): the text is
    the program, as in lprof's attribution rule; below a program file it is not."""
    from lprof.collect import torch_memory
    text = [{"filename": "<string>", "line": 3, "name": "<module>"}]
    user = str(tmp_path / "train.py")
    inside = [{"filename": "<string>", "line": 5, "name": "launcher"}, {"filename": user, "line": 9, "name": "f"}]
    snap = {"segments": [], "device_traces": [[{"action": "alloc", "addr": 1, "size": 512, "frames": text},
                                               {"action": "alloc", "addr": 2, "size": 64, "frames": inside}]]}
    lines = [row[:4] for row in torch_memory.read_snapshot(snap)["lines"]]
    assert sorted(lines) == sorted([["<string>", 3, "<module>", 512], [user, 9, "f", 64]])
