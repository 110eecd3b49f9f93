"""A training step of known structure for `make gpu-check`'s training view
(tools/gpu_check_train.py): a model whose forward lines are the program's
own (each inside a record_function annotation named after its marker, so
that torch.profiler's backward ops, joined by autograd sequence number to
the forward op that made them, land on the same lines), a pinned batch
copy, a `.item()` that waits for the GPU, the backward, the optimizer, a
torch.compile'd three-line function (one fused kernel), a launch-bound loop of tiny kernels (it wraps lprof's launch ring and
PyTorch's allocator history), a replay of a large captured CUDA graph, and
a sleep while the GPU is idle. A 1 GiB tensor is allocated first and held:
it is live at exit and part of the peak, before the history's window.

python3 this.py --steps N --tiny N --nodes N [--hold-mib N] [--sleep S]
[--device cpu] [--no-compile]. It prints "ok" and one line `gpu-check-train {json}` with
the step times (median seconds of the training part and of the tiny loop,
each ended by a synchronize), the allocator's own peak and the counts a
tool should find."""
import argparse
import builtins
import json
import statistics
import time

import torch
from torch.profiler import record_function as mark

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=20)
p.add_argument("--warmup", type=int, default=3)
p.add_argument("--tiny", type=int, default=10000, help="tiny kernels per step")
p.add_argument("--nodes", type=int, default=1000, help="loop iterations captured in the graph (2 kernels each)")
p.add_argument("--hold-mib", type=int, default=1024)
p.add_argument("--sleep", type=float, default=0.01)
p.add_argument("--device", default="cuda")
p.add_argument("--no-compile", action="store_true", help="leave out the torch.compile'd part")
args = p.parse_args()
dev = torch.device(args.device)
cuda = dev.type == "cuda"
BATCH, WIDTH, HIDDEN = 2048, 2048, 4096  # a forward the GPU is still running at .item()


def sync():
    if cuda:
        torch.cuda.synchronize()


hold = torch.empty(args.hold_mib << 20, dtype=torch.uint8, device=dev)  # marker: hold


class Net(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(WIDTH, HIDDEN)
        self.fc2 = torch.nn.Linear(HIDDEN, WIDTH)
        self.fc3 = torch.nn.Linear(WIDTH, 1)

    def forward(self, x):
        with mark("gpu-check: fwd fc1"):
            h = self.fc1(x)  # marker: fwd fc1
        with mark("gpu-check: fwd gelu"):
            h = torch.nn.functional.gelu(h)  # marker: fwd gelu
        with mark("gpu-check: fwd fc2"):
            h = self.fc2(h)  # marker: fwd fc2
        with mark("gpu-check: fwd loss"):
            return self.fc3(h).square().mean()  # marker: fwd loss


net = Net().to(dev)
opt = torch.optim.SGD(net.parameters(), lr=1e-4)
host = torch.randn(BATCH, WIDTH)
host = host.pin_memory() if cuda else host


def tiny(t, n):
    for _ in range(n):
        t = t + 1.0  # marker: tiny
    return t


def body(x):  # torch.compile fuses these three lines into one kernel
    a = torch.sin(x)  # marker: compiled a
    b = a * 2.0  # marker: compiled b
    return b + x  # marker: compiled c


fused = body if args.no_compile else torch.compile(body)
x_small = torch.randn(1 << 20, device=dev)
static_in = torch.zeros(1024, device=dev)
graph = None
if cuda:  # a large capture, reduce-overhead style: 2 kernels per captured iteration
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        static_in * 1.0001 + 0.5
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        y = static_in
        for _ in range(args.nodes):
            y = y * 1.0001 + 0.5  # marker: captured


profile = getattr(builtins, "profile", lambda f: f)  # lprof -l's decorator, when run under it


@profile
def train_step(t):
    t0 = time.perf_counter()
    with mark("gpu-check: batch"):
        x = host.to(dev, non_blocking=True)  # marker: batch
    loss = net(x)  # marker: forward call
    with mark("gpu-check: item"):
        loss.item()  # marker: item
    with mark("gpu-check: backward"):
        loss.backward()  # marker: backward
    with mark("gpu-check: optimizer"):
        opt.step()  # marker: optimizer
    opt.zero_grad()
    sync()
    t1 = time.perf_counter()
    with mark("gpu-check: compiled call"):
        fused(x_small)  # marker: compiled call
    with mark("gpu-check: tiny"):
        t = tiny(t, args.tiny)  # marker: tiny call
    sync()
    t2 = time.perf_counter()
    if graph is not None:
        with mark("gpu-check: graph replay"):
            graph.replay()  # marker: graph replay
    sync()  # marker: sync
    with mark("gpu-check: sleep"):
        time.sleep(args.sleep)  # marker: sleep
    return t, t1 - t0, t2 - t1


if __name__ == "__main__":
    t = torch.zeros(1024, device=dev)
    train_s, tiny_s = [], []
    for i in range(args.warmup + args.steps):
        t, a, b = train_step(t)
        if i >= args.warmup:
            train_s.append(a)
            tiny_s.append(b)
    sync()
    try:  # the allocator's own counters (the cudaMallocAsync backend keeps fewer)
        stats = torch.cuda.memory_stats() if cuda else {}
    except Exception:
        stats = {}
    print("ok")
    steps = args.warmup + args.steps
    print(
        "gpu-check-train "
        + json.dumps(
            {
                "train_step_s": statistics.median(train_s),
                "tiny_launch_s": statistics.median(tiny_s) / max(1, args.tiny),
                "requested_peak": stats.get("requested_bytes.all.peak", 0),
                "allocated_peak": stats.get("allocated_bytes.all.peak", 0),
                "hold_bytes": args.hold_mib << 20,
                "batch_bytes": BATCH * WIDTH * 4 * steps,
                "tiny_kernels": args.tiny * steps,
                "replay_kernels": 2 * args.nodes * steps if graph is not None else 0,
                "steps": steps,
            }
        )
    )
