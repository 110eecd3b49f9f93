"""The split of torch.compile kernels over the source lines they fuse
(lprof.model.compiled_kernels), on built stacks: no torch, no GPU. The map
is Inductor's provenance text as collect/inductor_lines.py keeps it:
{"<kernel>:<handle>": [stack trace of each op]}."""
import json
import sys
import textwrap

import pytest


# lprof's frames carry co_qualname from Python 3.11 (resolve.c)
FORWARD = "Model.forward" if sys.version_info >= (3, 11) else "forward"


def _trace(*frames):
    return "".join(f'  File "{f}", line {n}, in {fn}\n    code\n    ^^^^\n' for f, n, fn in frames)


@pytest.fixture
def model_file(tmp_path):
    path = tmp_path / "model.py"
    path.write_text(textwrap.dedent("""\
        import torch


        class Model:
            @staticmethod
            def forward(x, y):
                a = x.sin()
                b = a * y
                return b + x
    """))
    return str(path)


def _section(user, generated=None, kernel="triton_poi_fused_add_mul_sin_0"):
    """A launch stack <module>:12 -> [generated call()] -> kernel, and a plain kernel."""
    frames = [[user, "<module>", 1, 12], ["<gpu>", kernel, 0, 0], ["<gpu>", "plain", 0, 0]]
    launch = [0]
    if generated:
        frames.append([generated, "call", 30, 41])
        launch.append(3)
    return {
        "frames": frames,
        "columns": [["gpu_kernel_s", "ns", "sum"], ["gpu_kernels", "count", "sum"],
                    ["gpu_h2d_bytes", "bytes", "sum"], ["gpu_peak_bytes", "bytes", "max"]],
        "stacks": [[launch + [1], 7, {"gpu_kernel_s": 0.09, "gpu_kernels": 3, "gpu_peak_bytes": 4096}],
                   [[0, 2], 7, {"gpu_kernel_s": 0.01, "gpu_kernels": 1}]],
    }


def _graph(model_file, lines, generated=None, kernel="triton_poi_fused_add_mul_sin_0", handle=1):
    traces = [_trace((model_file, n, "forward")) for n in lines]
    return (generated, json.dumps({f"{kernel}:{handle}": traces}))


def test_a_fused_kernel_is_split_evenly_over_its_lines(model_file):
    from lprof.model import compiled_kernels, sections
    from lprof.model.frames import table
    user = model_file.replace("model.py", "train.py")
    section = _section(user)
    # line 9 twice (two ops of one line): three distinct lines
    kmap = compiled_kernels.kernel_map([_graph(model_file, [7, 8, 9, 9])])
    summary = compiled_kernels.split(section, kmap)
    assert summary == {"kernels": 1, "stacks_split": 1, "gpu_s": pytest.approx(0.09)}
    frames = table(section["frames"])
    split = [(ids, m) for ids, _t, m in section["stacks"] if frames[ids[-1]].function != "plain"]
    assert len(split) == 3
    for n, (ids, m) in zip((7, 8, 9), split):
        labels = [frames[i].label for i in ids]
        assert labels == [f"<module> ({user}:12)", "[compiled: fused over 3 lines] (<lprof>:0)",
                          f"{FORWARD} ({model_file}:{n})", "triton_poi_fused_add_mul_sin_0"]
        assert frames[ids[2]].first_line == 5  # the decorator's line, as CPython's co_firstlineno
        # sums divided by 3, the peak kept whole
        assert m == {"gpu_kernel_s": pytest.approx(0.03), "gpu_kernels": 1, "gpu_peak_bytes": 4096}
    rows = {(r[0], r[1]): r for r in sections.gpu_line_rows(section)}
    assert set(rows) == {(model_file, 7), (model_file, 8), (model_file, 9), (user, 12)}
    assert rows[(model_file, 8)][3] == pytest.approx(0.03)
    assert rows[(user, 12)][3] == pytest.approx(0.01)  # the plain kernel stays


def test_one_line_kernel_is_moved_whole(model_file):
    from lprof.model import compiled_kernels
    from lprof.model.frames import table
    section = _section(model_file.replace("model.py", "train.py"))
    compiled_kernels.split(section, compiled_kernels.kernel_map([_graph(model_file, [8])]))
    frames = table(section["frames"])
    ids, _t, m = section["stacks"][0]
    assert frames[ids[1]].function == "[compiled: 1 line]" and m["gpu_kernel_s"] == pytest.approx(0.09)


def test_a_name_two_graphs_gave_is_told_apart_by_the_generated_module(model_file):
    from lprof.model import compiled_kernels, stacks
    user = model_file.replace("model.py", "train.py")
    gen_a, gen_b = "/tmp/torchinductor_u/aa/caa.py", "/tmp/torchinductor_u/bb/cbb.py"
    kmap = compiled_kernels.kernel_map([_graph(model_file, [7], gen_a), _graph(model_file, [9], gen_b)])
    on_b = _section(user, generated=gen_b)
    compiled_kernels.split(on_b, kmap)
    assert [k[1] for k in stacks.lines(on_b) if k[0] == model_file] == [9]
    # nothing on the stack says which graph: the kernel keeps its launch line
    unknown = _section(user)
    assert compiled_kernels.split(unknown, kmap)["stacks_split"] == 0
    assert unknown == _section(user)


def test_kernels_not_in_the_map_and_bad_text_change_nothing(model_file):
    from lprof.model import compiled_kernels
    user = model_file.replace("model.py", "train.py")
    section = _section(user, kernel="triton_red_fused_sum_1")
    kmap = compiled_kernels.kernel_map([_graph(model_file, [7, 8]), (None, "not json"), (None, "[1, 2]")])
    assert compiled_kernels.split(section, kmap)["stacks_split"] == 0
    assert section == _section(user, kernel="triton_red_fused_sum_1")


def test_lprofs_own_frames_leave_an_ops_trace(model_file):
    from lprof.common import libdirs
    from lprof.model import compiled_kernels
    own = libdirs.LPROF_DIR + "collect/gpu_backward.py"
    chain = compiled_kernels.parse_stack_trace(_trace((model_file, 8, "forward"), (own, 95, "_traced")))
    assert chain == ((model_file, 8, "forward"),)


def test_a_file_that_cannot_be_read_keeps_the_traces_names(tmp_path):
    from lprof.model import compiled_kernels
    assert compiled_kernels.enclosing_function(str(tmp_path / "gone.py"), 8, "forward") == ("forward", 8)


GENERATED = """\
class Runner:
    def call(self, args):
        buf0 = empty_strided_cuda((16, 16), (16, 1), torch.float32)
        # Topologically Sorted Source Nodes: [h], Original ATen: [aten.addmm]
        # [Provenance debug handles] extern_kernels.addmm:1
        extern_kernels.addmm(primals_2, primals_3, primals_1, alpha=1, beta=1, out=buf0)
        # [Provenance debug handles] triton_poi_fused_relu_0:2
        triton_poi_fused_relu_0.run(buf0, 256, stream=stream0)
        return (buf0, )
"""


def test_a_launch_from_a_generated_module_finds_its_kernel_by_the_comment_above(model_file, tmp_path):
    """An extern kernel (cuBLAS names its own GEMM) is found by the launch
    line of the generated module on its stack."""
    from lprof.model import compiled_kernels, stacks
    user = str(tmp_path / "train.py")
    generated = tmp_path / "cgen.py"
    generated.write_text(GENERATED)
    graph = (str(generated), json.dumps({
        "extern_kernels.addmm:1": [_trace((model_file, 7, "forward"))],
        "triton_poi_fused_relu_0:2": [_trace((model_file, 8, "forward")), _trace((model_file, 9, "forward"))],
    }))
    kmap = compiled_kernels.kernel_map([graph])
    assert compiled_kernels.launch_key(str(generated), 6) == "extern_kernels.addmm:1"
    assert compiled_kernels.launch_key(str(generated), 8) == "triton_poi_fused_relu_0:2"
    assert compiled_kernels.launch_key(str(generated), 3) is None
    section = {
        "frames": [[user, "<module>", 1, 12], [str(generated), "Runner.call", 2, 6], ["<gpu>", "sm90_gemm", 0, 0],
                   [str(generated), "Runner.call", 2, 8], ["<gpu>", "triton_poi_fused_relu_0", 0, 0],
                   [str(generated), "Runner.call", 2, 3], ["<gpu>", "fill_kernel", 0, 0]],
        "columns": [["gpu_kernel_s", "ns", "sum"]],
        "stacks": [[[0, 1, 2], 1, {"gpu_kernel_s": 0.4}], [[0, 3, 4], 1, {"gpu_kernel_s": 0.2}],
                   [[0, 5, 6], 1, {"gpu_kernel_s": 0.1}]],
    }
    assert compiled_kernels.split(section, kmap)["kernels"] == 2
    lines = {k[1]: v["gpu_kernel_s"] for k, v in stacks.lines(section).items() if k[0] == model_file}
    assert lines == {7: pytest.approx(0.4), 8: pytest.approx(0.1), 9: pytest.approx(0.1)}
    # a launch from a line without the comment, of a kernel not in the map: its stack stays
    assert [ids for ids, _t, _m in section["stacks"] if ids[-1] == 6] == [[0, 5, 6]]


def test_the_hook_on_stand_in_inductor_modules(monkeypatch, tmp_path):
    """collect/inductor_lines.py against stand-ins of torch._inductor.config
    and .output_code (no torch): the tracking level set and given back, each
    graph's text and generated file kept once post_compile ran, a graph
    without text noted, the program's result and errors untouched."""
    import types
    from lprof.collect import inductor_lines
    generated = tmp_path / "torchinductor_u" / "ab" / "cab.py"
    generated.parent.mkdir(parents=True)
    generated.write_text("def call(args):\n    return args\n")
    namespace = {}
    exec(compile(generated.read_text(), str(generated), "exec"), namespace)

    class CompiledFxGraph:
        def __init__(self, text, fail=False):
            self.inductor_provenance_stack_traces_str = text
            self.current_callable = namespace["call"]
            self.fail = fail

        def post_compile(self, example_inputs):
            if self.fail:
                raise ValueError("Inductor's own error")
            return "result"

    config = types.SimpleNamespace(trace=types.SimpleNamespace(provenance_tracking_level=0))
    output_code = types.SimpleNamespace(CompiledFxGraph=CompiledFxGraph)
    monkeypatch.setitem(sys.modules, "torch._inductor.config", config)
    monkeypatch.setitem(sys.modules, "torch._inductor.output_code", output_code)
    inductor_lines.install()
    try:
        assert config.trace.provenance_tracking_level == inductor_lines.BASIC_TRACKING
        assert CompiledFxGraph(json.dumps({"k:1": []})).post_compile([]) == "result"
        assert CompiledFxGraph(None).post_compile([]) == "result"
        with pytest.raises(ValueError, match="Inductor's own error"):
            CompiledFxGraph("{}", fail=True).post_compile([])
    finally:
        inductor_lines.uninstall()
    assert inductor_lines.graphs() == [(str(generated), json.dumps({"k:1": []}))]
    assert any("1 torch.compile graph had no kernel-to-line map" in n for n in inductor_lines.notes())
    # where a torch keeps no map there, the note names what it has instead
    assert any("attributes: inductor_provenance_stack_traces_str" in n for n in inductor_lines.notes())
    assert config.trace.provenance_tracking_level == 0
    assert CompiledFxGraph.__dict__["post_compile"].__name__ == "post_compile"
    assert not hasattr(CompiledFxGraph.__dict__["post_compile"], "__wrapped__")


def test_a_program_that_chose_a_tracking_level_keeps_it(monkeypatch):
    import types
    from lprof.collect import inductor_lines
    config = types.SimpleNamespace(trace=types.SimpleNamespace(provenance_tracking_level=1))
    monkeypatch.setitem(sys.modules, "torch._inductor.config", config)
    monkeypatch.setitem(sys.modules, "torch._inductor.output_code", types.SimpleNamespace())
    inductor_lines.install()
    inductor_lines.uninstall()
    assert config.trace.provenance_tracking_level == 1
    # a torch without the setting: a note, no error
    monkeypatch.setitem(sys.modules, "torch._inductor.config", types.SimpleNamespace())
    inductor_lines.install()
    inductor_lines.uninstall()
    assert any("no provenance tracking" in n for n in inductor_lines.notes())
