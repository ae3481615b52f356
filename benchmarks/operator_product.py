"""pyspmv.Operator's CPU product against the pre-converted public product, pyspmv.spmv() and scipy's ``A @ x``.

    python benchmarks/operator_product.py                       # results/operator.md
    python benchmarks/operator_product.py --repeats 2 --out /tmp/operator.md

The reference ("core") is ``pyspmv.spmv(F, x, config)`` on a FormatMatrix converted beforehand: the public
product without a conversion, which allocates its y (the bare core call is private API); the operator's is ``op.matvec(x, out=y)``, ``op @ x`` (a new y) and ``op.matvec(x, out=y,
alpha=2, beta=0.5)`` (one C call, spmv_fmt_mv_scaled). Every variant is timed in
turn, median µs of back-to-back Python calls (``_timing.timed``), and the whole round repeated: the table gives
the median over the rounds and the spread [min-max], and the ratios per round.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import statistics

import numpy as np
from _md import md_table, write_report
from _timing import laplacian, reps_for, timed, uniform

import pyspmv

CONFIG = "cpu/csr/rows"


def matrices() -> list[pyspmv.Matrix]:
    return [laplacian(45), uniform(2000, 5), laplacian(142), uniform(20000, 5), laplacian(448), uniform(100000, 10)]


def measure(M: pyspmv.Matrix, repeats: int) -> dict[str, list[float]]:
    """Per variant, the median µs of each round."""
    S = M.to_scipy()
    F = pyspmv.convert(M, "csr")
    op = pyspmv.Operator(M, config=CONFIG)
    x = np.random.default_rng(0).uniform(-1, 1, M.ncols)
    y = np.zeros(M.nrows)
    assert np.allclose(op @ x, S @ x)
    n = reps_for(M.nnz)
    fns = {"core": lambda: pyspmv.spmv(F, x, CONFIG),
           "op out=": lambda: op.matvec(x, out=y),
           "op @ x": lambda: op @ x,
           "op alpha,beta": lambda: op.matvec(x, out=y, alpha=2.0, beta=0.5),
           "spmv(Matrix)": lambda: pyspmv.spmv(M, x, CONFIG),
           "spmv(scipy)": lambda: pyspmv.spmv(S, x, CONFIG),
           "scipy A @ x": lambda: S @ x}
    slow = {"spmv(Matrix)", "spmv(scipy)"}
    out: dict[str, list[float]] = {k: [] for k in fns}
    for _ in range(repeats):
        for k, fn in fns.items():
            out[k].append(timed(fn, max(5, n // 10) if k in slow else n))
    return out


def spread(v: list[float], digits: int = 1) -> str:
    return f"{statistics.median(v):.{digits}f} [{min(v):.{digits}f}-{max(v):.{digits}f}]"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=7, help="rounds of every variant (default 7)")
    ap.add_argument("--out", default="benchmarks/results/operator.md")
    a = ap.parse_args()
    rows, ratios = [], []
    for M in matrices():
        t = measure(M, a.repeats)
        r = [o / c for o, c in zip(t["op out="], t["core"])]
        r_at = [o / c for o, c in zip(t["op @ x"], t["core"])]
        r_ab = [o / c for o, c in zip(t["op alpha,beta"], t["core"])]
        ratios.append(statistics.median(r))
        rows.append([M.name, f"{M.nnz:,}", spread(t["core"]), spread(t["op out="]), spread(r, 3), spread(r_at, 3),
                     spread(r_ab, 3), spread(t["spmv(Matrix)"]), spread(t["spmv(scipy)"]), spread(t["scipy A @ x"])])
        print(rows[-1], flush=True)
    lines = [
        (f"Configuration {CONFIG}, float64, OpenMP threads as the machine gives them. This machine is a small VM "
        "shared with other sessions' work (compilers, tests), never quiet: each cell is the median over "
        f"{a.repeats} rounds with the spread [min-max]; each round times every variant in turn (median µs of "
        "back-to-back Python calls). Ratios are per round, against the core's product of the same round."),
        "",
        ("core: `pyspmv.spmv(F, x, config)` on a FormatMatrix converted beforehand (the public product without a "
        "conversion; it allocates y); op out=: "
        "`op.matvec(x, out=y)`; op @ x: a new y per product; alpha,beta: `op.matvec(x, out=y, alpha=2, beta=0.5)`; "
        "spmv(...): `pyspmv.spmv(A, x, config)`, which converts per call, of a pyspmv.Matrix and of a scipy "
        "csr_array; scipy: `A @ x` of the csr_array."),
        "",
        *md_table(["matrix", "entries", "core µs", "op out= µs", "op out= / core", "op @ x / core",
                   "alpha,beta / core", "spmv(Matrix) µs", "spmv(scipy) µs", "scipy A @ x µs"], rows, "lrrrrrrrrr"),
        "",
        f"Median of op out= / core over the matrices: {statistics.median(ratios):.3f} (target: within 1.05).",
    ]
    print("\n".join(lines))
    write_report(a.out, "pyspmv.Operator against the core's product (CPU)", lines)


if __name__ == "__main__":
    main()
