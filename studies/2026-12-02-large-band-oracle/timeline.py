"""Where ``async`` loses to the oracle: the timeline of its solves on the problems where it lags most.

    python timeline.py DIR NAME [NAME ...]

DIR as oracle.py's; NAME: problems of ``benchmarks/_timing.large_problems`` (the page's). Per problem, one
untimed solve, then three of ``policy="async"`` and three fixed on cuSPARSE's default, interleaved; for each async
solve the record's times (ms from the call): the selection's window (ranking and conversions), its ranking,
conversions and probes, each switch with the time its iteration began, and the events.
"""
# SPDX-License-Identifier: BSD-3-Clause
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _common  # noqa: E402,F401  (puts benchmarks/ on the path)
from _timing import large_problems  # noqa: E402

import pyspmv.solvers as S  # noqa: E402
from oracle import FIXED, rhs  # noqa: E402


def main() -> None:
    folder, names = sys.argv[1], set(sys.argv[2:])
    generated = ",".join(n.replace("_", ":") for n in names if n.startswith("poisson"))
    for name, A, _ in large_problems(generated, folder, 1e6, 1.2e7, 1, 4):
        if name not in names:
            continue
        b = rhs(A.shape[0])
        S.cg(A, b, rtol=1e-8, maxiter=3000, device="cuda")
        for r in range(3):
            t0 = time.perf_counter()
            _, _, f = S.cg(A, b, rtol=1e-8, maxiter=3000, device="cuda", policy="fixed", config=FIXED)
            tf = time.perf_counter() - t0
            t0 = time.perf_counter()
            _, info, rec = S.cg(A, b, rtol=1e-8, maxiter=3000, device="cuda")
            ta = time.perf_counter() - t0
            it = rec.iteration_times * 1e3
            win = "none" if rec.rank_window is None else \
                f"{rec.rank_window[0] * 1e3:.1f}-{rec.rank_window[1] * 1e3:.1f}"
            sw = ", ".join(f"it {i} at {it[i] if i < it.size else np.nan:.1f} ms: {c}" for i, c in rec.schedule)
            print(f"{name} round {r}: fixed {tf * 1e3:.1f} ms (set-up {(f.wall_s - f.iterate_s) * 1e3:.1f}, "
                  f"{f.iterations} it); async {ta * 1e3:.1f} ms (set-up {(rec.wall_s - rec.iterate_s) * 1e3:.1f}, "
                  f"{rec.iterations} it, info {info}); first iteration at {it[0]:.1f} ms; selection window {win} ms; "
                  f"rank {rec.rank_s * 1e3:.1f}, convert {rec.convert_s * 1e3:.1f}, probe {rec.probe_s * 1e3:.1f} ms; "
                  f"schedule [{sw}]; events {rec.events}", flush=True)


if __name__ == "__main__":
    main()
