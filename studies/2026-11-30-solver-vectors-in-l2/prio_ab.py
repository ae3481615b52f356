"""Same-run A/B of the solver stream's priority (the device's greatest, 7af83fd, reverted) on async CG solves, over
a tree patched by ``patch.py prio`` (``SPMV_PROBE_NOPRIO=1``: the least, as before).

    python patch.py prio && pip install . && python prio_ab.py BASES      (on the GPU machine)

The large problems of benchmarks/solvers_gpu.py (Poisson 1000^2 and 2000^2, 3-D 100^3, the scaled real matrices
of BASES as shifted Laplacians), rtol 1e-8; three rounds after an untimed one of fixed, async, async at the least
priority; seconds end to end."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _timing import large_problems

import pyspmv
import pyspmv.solvers as S


def main() -> None:
    for name, A, _ in large_problems("poisson2d:1000,poisson2d:2000,poisson3d:100", sys.argv[1], 1e6, 1.2e7, 1, 4):
        M = pyspmv.Matrix(A)
        b = np.random.default_rng(0).uniform(-1, 1, A.shape[0])
        b /= np.linalg.norm(b)
        t: dict[str, list[float]] = {"fixed": [], "async_prio": [], "async_noprio": []}
        for rnd in range(4):
            for m, times in t.items():
                os.environ.pop("SPMV_PROBE_NOPRIO", None)
                if m == "async_noprio":
                    os.environ["SPMV_PROBE_NOPRIO"] = "1"
                t0 = time.perf_counter()
                S.cg(M, b, rtol=1e-8, maxiter=3000, device="cuda", policy="fixed" if m == "fixed" else "async")
                if rnd:
                    times.append(time.perf_counter() - t0)
        os.environ.pop("SPMV_PROBE_NOPRIO", None)
        med = {m: statistics.median(v) for m, v in t.items()}
        print(f"{name}: " + ", ".join(f"{m} {med[m] * 1e3:.1f} ms [{min(v) * 1e3:.1f}-{max(v) * 1e3:.1f}]"
                                      for m, v in t.items()) +
              f"; fixed/async prio {med['fixed'] / med['async_prio']:.3f}, noprio {med['fixed'] / med['async_noprio']:.3f}",
              flush=True)


if __name__ == "__main__":
    main()
