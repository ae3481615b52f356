"""Design rows and rank() cost against one single-thread CSR product, exact and estimated, and what the
estimated mode (rank(estimate=True): spmv_design_rows_estimate) costs in ranking quality.

    python benchmarks/estimate.py [--max-nnz 2e6] [--out benchmarks/results/estimate.md]

Cost: generated matrices of 1e3 to 1e7 entries (2-D 5-point Laplacians and uniform random ones); each
time is the median of many time.perf_counter calls (Python call included) divided by the median of
single-thread ``cpu/csr/rows`` products of the same matrix (``_core.mv``, OMP_NUM_THREADS=1 for the whole
run, so the design rows run on one thread too).

Quality: the default models of both devices rank every matrix of datasets/h100 and datasets/cpu that can
be rebuilt here (the real ones in ../shared/matrices and the standard generated corpus up to --max-nnz
entries) exactly and estimated from 16384 and 2048 sampled rows; each pick (the first ranked configuration
with a measured time) is scored by its measured time over the matrix's best measured time. Only matrices
where the sample is less than half of the rows are estimated (else the estimate is the exact path).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"

import argparse
import math
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp
from _md import md_header, md_row

import pyspmv
from pyspmv import _core, datasets
from pyspmv.rank import _prepared, default_model

ROOT = Path(__file__).resolve().parents[1]
RANK = sys.modules["pyspmv.rank"]
SAMPLES = (16384, 2048)
MACHINE = "2-core AMD EPYC dev VM, no GPU"


def median_s(f, budget: float = 0.3, lo: int = 5, hi: int = 2000) -> float:
    f()
    t, start = [], time.perf_counter()
    while len(t) < hi and (len(t) < lo or time.perf_counter() - start < budget):
        a = time.perf_counter()
        f()
        t.append(time.perf_counter() - a)
    return statistics.median(t)


def laplacian(k: int) -> sp.csr_matrix:
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k))
    A = sp.kronsum(T, T, format="csr")
    A.sort_indices()
    return A


def uniform(n: int, nnz: int) -> sp.csr_matrix:
    rng = np.random.default_rng(1)
    A = sp.csr_matrix(sp.random_array((n, n), density=nnz / (n * n), format="csr", random_state=rng))
    A.sum_duplicates()
    A.sort_indices()
    return A


def cost_rows() -> list[str]:
    p = _prepared(default_model("cuda"), "float64")
    out = md_header(["matrix", "nnz", "1-thread CSR product (us)", "exact rows", "exact rank()", "estimated rows",
                     "estimated rank()"], "lrrrrrr")
    cases = [("laplace2d", k) for k in (16, 45, 142, 447, 1414)] + [("uniform", n) for n in (100, 1000, 10_000,
                                                                                          100_000, 1_000_000)]
    for kind, k in cases:
        A = laplacian(k) if kind == "laplace2d" else uniform(k, 10 * k)
        M = pyspmv.Matrix(A)
        st = _core.convert(0, 0, 0, 0.0, M.nrows, M.ncols, M.indptr, M.indices, np.ones(M.nnz))
        x, y = np.ones(M.ncols), np.zeros(M.nrows)
        tmv = median_s(lambda st=st, x=x, y=y: _core.mv(st, 0, x, y))
        args = (p.capsule, M.nrows, M.ncols, M.indptr, M.indices, 8)
        t = [median_s(lambda a=args: _core.core_rows(*a)),
             median_s(lambda M=M: pyspmv.rank(M, estimate=False)),
             median_s(lambda a=args: _core.core_rows(*a, RANK.ESTIMATE_ROWS)),
             median_s(lambda M=M: pyspmv.rank(M, estimate=True))]
        out.append(md_row([f"{kind} {M.nrows} rows", f"{M.nnz:.2g}", f"{tmv * 1e6:.1f}",
                           *(f"{v / tmv:.2f} ({v * 1e6:.0f} us)" for v in t)]))
        print(out[-1], flush=True)
    return out


def matrices(max_nnz: float, names: set[str]):
    for d in (ROOT.parent / "shared" / "matrices", ROOT.parents[1] / "shared" / "matrices"):
        if d.is_dir():
            for f in sorted(d.glob("*.mtx*")):
                name = f.name.split(".")[0]
                if name in names:
                    yield name, pyspmv.load(f)
            break
    for e in datasets.standard_corpus(max_nnz=max_nnz, seed=0):
        if e.name in names:
            yield e.name, pyspmv.Matrix(e.build())


def quality(max_nnz: float) -> list[str]:
    out = []
    for device, table in (("cuda", "h100"), ("cpu", "cpu")):
        ds = datasets.load(table, dtype="float64")
        t = ds.X[["config"]].assign(matrix=ds.groups.to_numpy(), ms=ds.y.to_numpy())
        times = {m: dict(zip(g["config"], g["ms"], strict=True)) for m, g in t.dropna().groupby("matrix")}
        res: dict[str, list[float]] = {"exact": [], **{f"est{s}": [] for s in SAMPLES}}
        agree = {s: 0 for s in SAMPLES}
        n = 0
        for name, M in matrices(max_nnz, set(times)):
            if M.nrows < 2 * min(SAMPLES) + 1:
                continue
            meas = times[name]
            best = min(meas.values())

            def pick(r, meas=meas):
                return next((c for c, _ in r if c in meas), None)
            ex = pick(pyspmv.rank(M, device=device, estimate=False))
            if ex is None:
                continue
            n += 1
            res["exact"].append(meas[ex] / best)
            for s in SAMPLES:
                RANK.ESTIMATE_ROWS = s
                es = pick(pyspmv.rank(M, device=device, estimate=True))
                res[f"est{s}"].append(meas[es] / best)
                agree[s] += es == ex
            RANK.ESTIMATE_ROWS = SAMPLES[0]
        out += [(f"\n**{table}** (device {device}, float64, default model): {n} matrices of more than "
                 f"{2 * min(SAMPLES)} rows rebuilt here (the 16384-row sample is the exact path below 32768 "
                 "rows).\n"),
                *md_header(["rows sampled", "within 5 % of best", "beyond 20 %", "geomean t_pick / t_best",
                            "same pick as exact"], "lrrrr")]
        for key, v in res.items():
            a = np.array(v)
            same = "" if key == "exact" else f"{agree[int(key[3:])] / max(n, 1):.0%}"
            label = "exact (all)" if key == "exact" else key[3:]
            out.append(f"| {label} | {np.mean(a < 1.05):.0%} | {np.mean(a > 1.2):.1%} | "
                       f"{math.exp(np.mean(np.log(a))):.3f} | {same} |")
        print("\n".join(out[-6:]), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--max-nnz", type=float, default=2e6)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "estimate.md")
    a = ap.parse_args()
    lines = ["# Design rows and rank(): exact and estimated", "",
             (f"Machine: {MACHINE} ({platform.processor() or platform.machine()}); a shared machine (other "
              "engineers' jobs on the same 2 cores), so times are medians of many runs and still noisy. "
              f"OMP_NUM_THREADS=1. Made by `python benchmarks/estimate.py --max-nnz {a.max_nnz:g}`."), "",
             "## Cost, in single-thread `cpu/csr/rows` products of the same matrix (default cuda model, float64)",
             "", "rank() includes the model's evaluation and the sort (issue item 4, not this change).", ""]
    lines += cost_rows()
    lines += ["", "## Ranking quality of the estimated mode", ""]
    lines += quality(a.max_nnz)
    a.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
