"""Run with the project interpreter: time lprof.stacks.export on a synthetic
profile of 1,000,000 samples over many distinct stacks; prints JSON."""
import json
import os
import random
import sys
import time

N_SAMPLES = 1_000_000
N_FRAMES = 3000
N_STACKS = 20000


def synthetic(seed=7):
    rnd = random.Random(seed)
    frames = [[f"/src/pkg/mod{i % 97}.py", f"func_{i}", 10 + i % 400, 12 + i % 450]
              for i in range(N_FRAMES)]
    shapes = []
    for _ in range(N_STACKS):
        depth = rnd.randint(3, 40)
        shapes.append([rnd.randrange(N_FRAMES) for _ in range(depth)])
    one = {"samples": 1, "cpu_python_s": 0.01, "wall_s": 0.01}
    # one entry per sample (unfolded): the exporter has to do the folding
    stacks = [[shapes[rnd.randrange(N_STACKS)], 1 + rnd.randrange(4), one]
              for _ in range(N_SAMPLES)]
    return {"format": "lprof", "version": 1,
            "meta": {"argv": ["synthetic"], "modes": ["cpu"]},
            "stacks": {"frames": frames, "stacks": stacks}}


def main(outdir):
    try:
        from lprof import stacks
    except ImportError as e:
        print(json.dumps({"error": f"not built: {e}"}))
        return
    if not hasattr(stacks, "export"):
        print(json.dumps({"error": "not built: lprof.stacks.export missing"}))
        return
    prof = synthetic()
    out = {}
    for fmt in ("folded", "svg"):
        path = os.path.join(outdir, "synthetic." + fmt)
        t0 = time.perf_counter()
        try:
            stacks.export(prof, fmt, "cpu", path)
        except Exception as e:      # report, do not crash the benchmark
            out[fmt] = {"error": f"{type(e).__name__}: {e}"[:90]}
            continue
        dt = time.perf_counter() - t0
        out[fmt] = {"seconds": dt, "bytes": os.path.getsize(path) if os.path.exists(path) else 0}
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
