"""A CUDA graph program for lprof --gpu tests without a GPU, through
tests/gpu/fake_cupti.c (ctypes, LPROF_CUPTI_PATH): two lines captured into
a graph, replayed REPLAYS times from a third; a graph whose capture lprof
never saw (as one captured before it started), replayed once; a graph
built node by node, replayed twice. GRAPH_NODE_IDS=original makes the
records name the captured nodes instead of their clones."""
import ctypes
import os

REPLAYS = 5

lib = ctypes.CDLL(os.environ["LPROF_CUPTI_PATH"])
lib.fake_cupti_launch_kernel.argtypes = [ctypes.c_char_p, ctypes.c_uint64]
lib.fake_cupti_graph_add_kernel_node.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_uint64]
if os.environ.get("GRAPH_NODE_IDS") == "original":
    lib.fake_cupti_graph_ids(1)


def forward():
    lib.fake_cupti_launch_kernel(b"gemm_kernel", 30000)  # marker: captured gemm
    lib.fake_cupti_launch_kernel(b"relu_kernel", 2000)  # marker: captured relu


def unseen():
    lib.fake_cupti_launch_kernel(b"unseen_kernel", 4000)  # marker: unseen capture


def capture(body, seen):
    g = lib.fake_cupti_begin_capture(seen)
    body()  # marker: capture body
    lib.fake_cupti_end_capture()
    return lib.fake_cupti_graph_instantiate(g)


graph = capture(forward, 1)  # marker: capture forward
old = capture(unseen, 0)
for _ in range(REPLAYS):
    lib.fake_cupti_graph_replay(graph)  # marker: replay
lib.fake_cupti_graph_replay(old)  # marker: replay unseen
built = lib.fake_cupti_graph_create()
lib.fake_cupti_graph_add_kernel_node(built, b"added_kernel", 3000)  # marker: added node
built = lib.fake_cupti_graph_instantiate(built)
for _ in range(2):
    lib.fake_cupti_graph_replay(built)  # marker: replay built
lib.fake_cupti_launch_kernel(b"plain_kernel", 1000)  # marker: plain
print("done")
