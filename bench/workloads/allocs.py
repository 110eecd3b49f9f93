"""Overhead: an allocation-heavy program (many short-lived Python objects,
strings, dicts, lists and small numpy arrays)."""
import sys

import numpy as np

import _truth


def records(n, k):
    return [{"id": i, "name": "r%d" % i, "vals": [i, i + k, i * k]}
            for i in range(n)]


def churn(rounds, n):
    total = 0
    for r in range(rounds):
        recs = records(n, r)
        keys = sorted(rec["name"] for rec in recs)
        joined = ",".join(keys[:100])
        arrs = [np.arange(64) * r for _ in range(50)]
        buf = bytearray(64 * 1024)
        total += len(joined) + len(recs) + len(arrs) + len(buf)
    return total


if __name__ == "__main__":
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 60
    n = int(sys.argv[2]) if len(sys.argv) > 2 else 5000
    c, w = _truth.now()
    print(churn(rounds, n))
    c2, w2 = _truth.now()
    _truth.write(w2 - w)
