"""Same-run A/B of the GPU solver's L2 window (``kernels/krylov_l2.cu``: CG's vectors in a persisting access-policy
window) against the device's default cache policy, on the large CG problems of benchmarks/solvers_gpu.py.

    python l2_window.py [--generated KIND:SIZE,...] [--scaled FOLDER] [--solver cg|bicgstab] [--iters 600]
                        [--rounds 3] --out OUT.csv

Each problem, value type (float64, float32) and fixed configuration (cuSPARSE's CSR default; JAD with an 8-bit value
table where the values fit one, plain JAD where not): ``--rounds`` rounds after an untimed one, each running the solver with
the window off and on in turn, ``--iters`` iterations (a tolerance the solve does not reach first); the iterations'
time over their count (``SolveRecord.iterate_s``), and the solutions compared bit for bit. Prints the device's L2
size and its persisting set-aside (the most allowed, and this process's limit before any solve), and writes one CSV
row per solve.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _internal import gpu, solver_device
from _md import gpu_software
from _timing import large_problems

import pyspmv
import pyspmv.solvers as S

CONFIGS = ("cusparse/csr/default", "pyspmv/jad/vals=8/bs=512", "pyspmv/jad/bs=256")
RTOL = {"float64": 1e-15, "float32": 1e-7}


def device_l2() -> str:
    """The device's L2 and its persisting set-aside, as this process found it (before any solve)."""
    return gpu_software(gpu.device_info())


def solve(A, b, cfg: str, dt: str, iters: int, l2: bool, solver: str = "cg"):
    solver_device.USE_L2 = l2
    return getattr(S, solver)(A, b, rtol=RTOL[dt], maxiter=iters, device="cuda", policy="fixed", config=cfg,
                              dtype=dt)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--generated", default="poisson2d:500,poisson2d:700,poisson2d:1000,poisson2d:1400,"
                                           "poisson2d:2000,poisson3d:100")
    ap.add_argument("--scaled", help="a folder of real matrices to scale up (as benchmarks/solvers_gpu.py does)")
    ap.add_argument("--scaled-range", type=float, nargs=2, default=(1e6, 1.2e7))
    ap.add_argument("--solver", choices=("cg", "bicgstab"), default="cg")
    ap.add_argument("--iters", type=int, default=600)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    print(device_l2(), flush=True)
    rows = []
    for name, A, _ in large_problems(a.generated, a.scaled, *a.scaled_range, 1, 4):
        M = pyspmv.Matrix(A)
        b = np.random.default_rng(0).uniform(-1, 1, A.shape[0])
        b /= np.linalg.norm(b)
        for dt in ("float64", "float32"):
            for cfg in CONFIGS:
                try:
                    solve(M, b, cfg, dt, 8, True, a.solver)
                except pyspmv.NotApplicableError as exc:  # a value table the values do not fit
                    print(f"{name} {dt} {cfg}: {exc}", flush=True)
                    continue
                if cfg.endswith("jad/bs=256") and any(r["matrix"] == name and r["dtype"] == dt
                                                      and "vals" in r["config"] for r in rows):
                    continue                               # the table ran: plain JAD adds nothing here
                x = {}
                for rnd in range(a.rounds + 1):
                    for l2 in (False, True):
                        xs, info, rec = solve(M, b, cfg, dt, a.iters, l2, a.solver)
                        x[l2] = xs
                        if rnd:
                            rows.append({"solver": a.solver, "matrix": name, "n": A.shape[0], "nnz": A.nnz, "dtype": dt, "config": cfg,
                                         "l2": l2, "round": rnd, "iterations": rec.iterations, "info": info,
                                         "us_per_iteration": 1e6 * rec.iterate_s / max(1, rec.iterations),
                                         "wall_s": rec.wall_s})
                same = bool(np.array_equal(x[False], x[True]))
                cur = pd.DataFrame([r for r in rows if r["matrix"] == name and r["dtype"] == dt
                                    and r["config"] == cfg])
                med = cur.groupby("l2")["us_per_iteration"].median()
                print(f"{name} {dt} {cfg}: off {med[False]:.1f} us, on {med[True]:.1f} us "
                      f"({med[False] / med[True]:.3f}x), same x: {same}", flush=True)
                for r in rows[-2 * a.rounds:]:
                    r["same_x"] = same
        pd.DataFrame(rows).to_csv(a.out, index=False)


if __name__ == "__main__":
    main()
