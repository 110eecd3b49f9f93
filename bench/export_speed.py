"""Run with the project interpreter: time lprof.export.export on a synthetic
profile of 1,000,000 samples over many distinct stacks, in the form a .lprof
file holds (columnar stacks section, as `lprof export` reads it); prints JSON."""

import json
import os
import random
import sys
import time

N_SAMPLES = 1_000_000
N_FRAMES = 3000
N_STACKS = 20000


def synthetic(seed=7):
    """A profile as lprof stores it (format 2: the stacks section in columns),
    holding 1,000,000 unfolded rows (one per sample, 4 threads) over 20,000
    distinct stacks: the exporter has to sum and fold them all."""
    rnd = random.Random(seed)
    frames = [[f"/src/pkg/mod{i % 97}.py", f"func_{i}", 10 + i % 400, 12 + i % 450] for i in range(N_FRAMES)]
    parent, frame, index, leaves = [], [], {}, []
    for _ in range(N_STACKS):
        node = -1
        for fid in (rnd.randrange(N_FRAMES) for _ in range(rnd.randint(3, 40))):
            key = (node, fid)
            if key not in index:
                index[key] = len(parent)
                parent.append(node)
                frame.append(fid)
            node = index[key]
        leaves.append(node)
    row_node = [leaves[rnd.randrange(N_STACKS)] for _ in range(N_SAMPLES)]
    row_thread = [1 + rnd.randrange(4) for _ in range(N_SAMPLES)]
    values = {"samples": [1] * N_SAMPLES, "cpu_python_s": [0.01] * N_SAMPLES, "wall_s": [0.01] * N_SAMPLES}
    return {
        "format": "lprof",
        "version": 2,
        "meta": {"argv": ["synthetic"], "modes": ["cpu"]},
        "stacks": {
            "frames": frames,
            "columns": [],
            "nodes": {"parent": parent, "frame": frame},
            "rows": {"node": row_node, "thread": row_thread, "values": values},
        },
    }


def main(outdir):
    try:
        from lprof import export as stacks
    except ImportError as e:
        print(json.dumps({"error": f"not built: {e}"}))
        return
    if not hasattr(stacks, "export"):
        print(json.dumps({"error": "not built: lprof.export.export missing"}))
        return
    prof = synthetic()
    out = {}
    for fmt in ("folded", "svg"):
        path = os.path.join(outdir, "synthetic." + fmt)
        t0 = time.perf_counter()
        try:
            stacks.export(prof, fmt, "cpu", path)
        except Exception as e:  # report, do not crash the benchmark
            out[fmt] = {"error": f"{type(e).__name__}: {e}"[:90]}
            continue
        dt = time.perf_counter() - t0
        out[fmt] = {"seconds": dt, "bytes": os.path.getsize(path) if os.path.exists(path) else 0}
    print(json.dumps(out))


if __name__ == "__main__":
    main(sys.argv[1])
