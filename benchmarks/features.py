"""Time feature extraction against one single-thread CSR SpMV of the same matrix.

The project's target: extracting every feature (tiers 0 to 2, one pass over indices) costs no more
than one single-thread CSR SpMV, so predicting the best configuration is cheap next to running it.

    python benchmarks/features.py [--matrices DIR] [--out benchmarks/results/features.csv]

Matrices: the real ones in DIR (default ../shared/matrices, skipped where absent) plus generated
larger ones: a 2D 5-point Laplacian (~1M rows), a uniform random matrix (~5M nonzeros) and one with
power-law row lengths.  features_ms is the median of many perf_counter_ns-timed calls of
pyspmv.features (Python call overhead included: it dominates for the small real matrices and is
printed once); spmv_1t_ms is the median pyspmv.benchmark reports for cpu/csr/rows on one OpenMP
thread (the C core's own timer, result checked against scipy first).  ratio = features_ms / spmv_1t_ms: at or below 1.0 meets the target.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os

# One thread for the SpMV baseline: must be set before the OpenMP runtime loads with pyspmv.
os.environ["OMP_NUM_THREADS"] = "1"

import argparse
import csv
import math
import statistics
import time
from pathlib import Path

import numpy as np
import scipy.io
import scipy.sparse as sp
from _md import csv_provenance

import pyspmv

ROOT = Path(__file__).resolve().parents[1]


def canonical(A) -> sp.csr_matrix:
    A = sp.csr_matrix(A, dtype=np.float64)
    A.sum_duplicates()
    A.sort_indices()
    return A


def laplacian_2d(k: int) -> sp.csr_matrix:
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k))
    return canonical(sp.kronsum(T, T, format="csr"))


def random_uniform(n: int, nnz: int, seed: int) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    return canonical(sp.random_array((n, n), density=nnz / (n * n), format="csr", random_state=rng))


def power_law(n: int, seed: int) -> sp.csr_matrix:
    """Pareto row lengths (a few rows of thousands, many of 0 to 3), random columns."""
    rng = np.random.default_rng(seed)
    lens = np.minimum(n, (rng.pareto(1.1, n) * 3).astype(np.int64))
    rows = np.repeat(np.arange(n), lens)
    cols = rng.integers(0, n, rows.size)
    return canonical(sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n)))


def matrices(mdir: Path | None):
    if mdir is not None and mdir.is_dir():
        for p in sorted(mdir.glob("*.mtx.gz"), key=lambda p: p.stat().st_size):
            yield p.name.split(".")[0], canonical(scipy.io.mmread(p))
    else:
        print(f"note: {mdir} is absent; generated matrices only")
    yield "laplace2d_1000", laplacian_2d(1000)
    yield "random_1m_5m", random_uniform(1_000_000, 5_000_000, 1)
    yield "powerlaw_500k", power_law(500_000, 2)


def time_features(M: pyspmv.Matrix, min_runs: int, max_runs: int, budget_s: float) -> float:
    for _ in range(3):                                     # warm-up: caches, page faults
        pyspmv.features(M)
    times, start = [], time.perf_counter_ns()
    while len(times) < max_runs and (len(times) < min_runs or time.perf_counter_ns() - start < budget_s * 1e9):
        t0 = time.perf_counter_ns()
        pyspmv.features(M)
        times.append(time.perf_counter_ns() - t0)
    return statistics.median(times) / 1e6


def time_spmv(M: pyspmv.Matrix, budget_s: float) -> float:
    df = pyspmv.benchmark(M, ["cpu/csr/rows"], repeats=500, warmup=5, budget_s=budget_s, progress=False)
    if df.status.iloc[0] != "ok":                          # benchmark() checks against scipy first
        raise SystemExit(f"cpu/csr/rows: {df.status.iloc[0]}: {df.note.iloc[0]}")
    return float(df.median_ms.iloc[0])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrices", type=Path, default=ROOT.parent / "shared" / "matrices")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "features.csv")
    ap.add_argument("--budget", type=float, default=1.0, help="seconds of timed runs per measurement")
    a = ap.parse_args()

    overhead = time_features(pyspmv.Matrix(sp.csr_array(np.ones((1, 1)))), 200, 2000, 0.2)
    print(f"OMP_NUM_THREADS={os.environ['OMP_NUM_THREADS']} (SpMV baseline on one thread; features are serial)")
    print(f"pyspmv.features call overhead (1x1 matrix): {overhead * 1e3:.1f} us, included in features_ms")
    rows = []
    hdr = f"{'matrix':<28}{'nrows':>10}{'nnz':>11}{'features_ms':>13}{'spmv_1t_ms':>12}{'ratio':>8}"
    print(hdr)
    print("-" * len(hdr))
    for name, A in matrices(a.matrices):
        M = pyspmv.Matrix(A, name=name)
        f = pyspmv.features(M)
        if not all(math.isfinite(v) for v in f.values()):
            raise SystemExit(f"{name}: non-finite features {f}")
        feat_ms = time_features(M, 20, 2000, a.budget)
        spmv_ms = time_spmv(M, a.budget)
        ratio = feat_ms / spmv_ms if spmv_ms > 0 else math.inf
        rows.append({"matrix": name, "nrows": A.shape[0], "nnz": A.nnz, "features_ms": f"{feat_ms:.6f}",
                     "spmv_1t_ms": f"{spmv_ms:.6f}", "ratio": f"{ratio:.3f}"})
        print(f"{name:<28}{A.shape[0]:>10}{A.nnz:>11}{feat_ms:>13.4f}{spmv_ms:>12.4f}{ratio:>8.2f}", flush=True)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    with open(a.out, "w", newline="") as fh:
        fh.write(csv_provenance())
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    above = [r["matrix"] for r in rows if float(r["ratio"]) > 1.0]
    print(f"\n{len(rows)} matrices, {len(above)} above ratio 1.0: {', '.join(above) or 'none'}; wrote {a.out}")


if __name__ == "__main__":
    main()
