"""Example for memory profiling: lprof --memory examples/alloc_lines.py

Look at: `keep` holds 200 MB to the end (net = allocated), `churn` allocates
and frees 50 MB at a time (allocated 500 MB, net ~0), `leak` grows slowly
and shows up in the leak report."""
import time

import numpy as np

kept = []
leaked = []


def keep():
    kept.append(np.ones(25_000_000))        # 200 MB, kept


def churn():
    for _ in range(10):
        block = bytearray(50_000_000)        # 50 MB, freed each round
        del block


def leak():
    for _ in range(50):
        leaked.append(bytearray(400_000))    # 20 MB in all, never freed
        time.sleep(0.005)


if __name__ == "__main__":
    keep()
    churn()
    leak()
