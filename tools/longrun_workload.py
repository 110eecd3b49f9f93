"""A long synthetic program for tools/longrun.py: for SECONDS it keeps
generating new functions (distinct code objects, lines and call stacks:
tens of thousands over 10 minutes), calls them from up to 200 short-lived
threads that start and end all the time, and allocates and frees memory
in them. Prints one summary line at the end.

usage: longrun_workload.py SECONDS"""

import random
import sys
import threading
import time

SECONDS = float(sys.argv[1]) if len(sys.argv) > 1 else 60.0
MAX_THREADS = 200
NEW_FUNCTIONS_PER_S = 60  # about 36,000 over 10 minutes
rng = random.Random(1234)
functions = []
made = [0]


def generate(batch):
    """`batch` new functions, each with its own lines; some call earlier ones."""
    start = len(functions)
    parts = []
    for i in range(start, start + batch):
        body = [f"def gen_{i}(depth, keep):"]
        for k in range(rng.randint(2, 12)):  # distinct lines
            body.append(f"    x{k} = [{k} * j for j in range({rng.randint(5, 60)})]")
        body.append("    if rng.random() < 0.05:")
        body.append(f"        keep.append(bytearray({rng.randint(64, 65536)}))")
        if i and rng.random() < 0.7:  # distinct stacks: call an earlier function
            body.append("    if depth < 8:")
            body.append(f"        functions[{rng.randrange(i)}](depth + 1, keep)")
        body.append("    return depth")
        parts.append("\n".join(body))
    namespace = {"rng": rng, "functions": functions, "bytearray": bytearray}
    code = compile("\n\n".join(parts), f"<generated {start}>", "exec")
    exec(code, namespace)
    for i in range(start, start + batch):
        functions.append(namespace[f"gen_{i}"])
    made[0] += batch


def worker(seed, kept):
    r = random.Random(seed)
    keep = []
    until = time.time() + r.uniform(0.002, 0.02)
    while time.time() < until and functions:
        functions[r.randrange(len(functions))](0, keep)
    if r.random() < 0.1:
        kept.append(keep)  # some memory lives on


def main():
    started = time.time()
    kept, threads, finished = [], [], 0
    seed = 0
    while time.time() - started < SECONDS:
        due = int((time.time() - started) * NEW_FUNCTIONS_PER_S) + 20 - made[0]
        if due > 0:
            generate(due)
        threads = [t for t in threads if t.is_alive()]
        while len(threads) < MAX_THREADS:
            seed += 1
            t = threading.Thread(target=worker, args=(seed, kept))
            t.start()
            threads.append(t)
        if len(kept) > 400:  # memory is freed too
            finished += len(kept)
            del kept[:200]
        time.sleep(0.001)
    for t in threads:
        t.join()
    print(f"workload: {made[0]} functions generated, {seed} threads started")


if __name__ == "__main__":
    main()
