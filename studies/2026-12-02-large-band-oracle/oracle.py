"""The large band's oracle (issue 49): each CG problem of 1e6 entries and more on ``benchmarks/solvers_gpu.py``'s
page, solved fixed on cuSPARSE's CSR default and fixed on each of its fastest configurations by the product, end to
end: what a policy that knew the best configuration before the first iteration, and paid only its conversion, gives.

    python oracle.py OUT SECONDS DIR

DIR: the corpus files of ../2026-12-01-matrix-stream-caching/solver_dir.txt and their MANIFEST rows (the page's
``--scaled``). The problems are the page's: ``benchmarks/_timing.large_problems`` with its default stencils and
scaled Laplacians, b uniform in [-1, 1] (seed 0) at unit norm, x0 = 0, float64, rtol 1e-8, maxiter 3000.

1. Every ``cuda`` configuration but the locality orders timed alone (``pyspmv.benchmark``, float64, 10 repeats or
   20 ms, unchecked: the solves below check them), ``OUT/products.csv.gz``.
2. Fixed CG on cuSPARSE's default, on the ``TOP`` fastest of step 1 and on the page's last ``async`` configuration,
   one untimed round and ``ROUNDS`` timed ones, the order rotated each round; ``OUT/solves.csv``, one row a timed
   solve (wall time around the call, the record's iterations and their time, ``info``).
Problems run smallest first until SECONDS have passed; both files are written after each problem.
"""
# SPDX-License-Identifier: BSD-3-Clause
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _common  # noqa: E402,F401  (puts benchmarks/ on the path)
from _timing import large_problems  # noqa: E402

import pyspmv  # noqa: E402
import pyspmv.solvers as S  # noqa: E402

FIXED = "cusparse/csr/default"
TOP, ROUNDS = 6, 3
#: The last configuration of each ``async`` solve that switched on benchmarks/results/solvers_gpu.md (5e1d4c6).
PAGE = {"poisson2d_1000": "pyspmv/jad/vals=8/bs=512", "poisson2d_1400": "pyspmv/jad/vals=8/bs=512",
        "poisson2d_2000": "pyspmv/jad/vals=8/bs=512", "poisson3d_100": "pyspmv/jad/vals=8/bs=512",
        "poisson3d_150": "pyspmv/jad/vals=8/bs=256",
        "cfd_foam_diamond_wing_x5kron_r4_lap": "pyspmv/jad/vals=8/bs=128",
        "cfd_su2_centrifugal_blade_su2mesh_x12kron_r4_lap": "pyspmv/jad/vals=8/bs=128"}


def rhs(n: int) -> np.ndarray:
    """The page's right-hand side: uniform in [-1, 1] (seed 0), at unit norm."""
    b = np.random.default_rng(0).uniform(-1, 1, n)
    return b / np.linalg.norm(b)


def main() -> None:
    out, t_end, folder = Path(sys.argv[1]), time.time() + float(sys.argv[2]), sys.argv[3]
    out.mkdir(parents=True, exist_ok=True)
    generated = "poisson2d:1000,poisson2d:1400,poisson2d:2000,poisson3d:100,poisson3d:150"
    probs = sorted(large_problems(generated, folder, 1e6, 1.2e7, 1, 4), key=lambda p: p[1].nnz)
    cfgs = [c for c in pyspmv.configs("cuda") if "order=1" not in c.id]
    products, solves = [], []
    for name, A, _ in probs:
        if time.time() > t_end:
            print(f"time's up before {name}", flush=True)
            break
        M = pyspmv.Matrix(A)
        df = pyspmv.benchmark(M, cfgs, device="cuda", dtype="float64", repeats=10, budget_s=0.02, check=False,
                              progress=False)
        df["matrix"], df["nnz"] = name, M.nnz
        products.append(df)
        ok = df[df.status == "ok"].sort_values("median_ms")
        cands = list(dict.fromkeys([FIXED, *ok.config.head(TOP), *([PAGE[name]] if name in PAGE else [])]))
        b = rhs(A.shape[0])
        for r in range(ROUNDS + 1):
            k = r % len(cands)
            for cfg in cands[k:] + cands[:k]:
                t0 = time.perf_counter()
                _, info, rec = S.cg(A, b, rtol=1e-8, maxiter=3000, device="cuda", policy="fixed", config=cfg)
                wall = time.perf_counter() - t0
                if r:
                    solves.append({"matrix": name, "nnz": M.nnz, "config": cfg, "round": r, "wall_s": wall,
                                   "iterate_s": rec.iterate_s, "iterations": rec.iterations, "info": info,
                                   "product_ms": float(ok.set_index("config").median_ms.get(cfg, np.nan))})
        pd.concat(products).to_csv(out / "products.csv.gz", index=False)
        s = pd.DataFrame(solves)
        s.to_csv(out / "solves.csv", index=False)
        med = s[s.matrix == name].groupby("config")[["wall_s", "iterate_s", "iterations"]].median()
        f = med.loc[FIXED]
        best = med.wall_s.idxmin()
        it = med.iterate_s / med.iterations
        print(f"{name} nnz {M.nnz}: fixed {f.wall_s:.4f} s ({1e6 * it[FIXED]:.0f} us/it); best end to end {best} "
              f"{med.wall_s[best]:.4f} s ({f.wall_s / med.wall_s[best]:.3f}x); best an iteration {it.idxmin()} "
              f"({it[FIXED] / it.min():.3f}x) [{t_end - time.time():.0f} s left]", flush=True)


if __name__ == "__main__":
    main()
