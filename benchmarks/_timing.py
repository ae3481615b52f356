"""Timing helpers shared by the benchmarks and the studies: medians of Python calls, one single-thread CSR
product, the C evaluation of an exported ranking header, the generated matrices of the cost tables, the large CG
problems of the GPU solves (benchmarks/solvers_gpu.py and the studies of its solver).

Imported as a sibling module (``python benchmarks/<script>.py``), by the studies through ``studies/_common.py``.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import statistics
import subprocess
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp
from threadpoolctl import threadpool_limits

import pyspmv
import pyspmv.datasets

#: The C driver of :func:`c_times`: reads a CSR written by :func:`write_csr` and times the exported header's
#: ``NAME_rank``, ``spmv_design_rows`` and ``spmv_rank_rows`` (the C API of docs/c_api.md).
DRIVER = r"""
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "m.h"
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static double median(double *t, int n) { qsort(t, (size_t)n, sizeof *t, cmp); return t[n / 2]; }
int main(int argc, char **argv) {
    FILE *f = fopen(argv[1], "r");
    int32_t nr, nc, nnz;
    if (!f || fscanf(f, "%d %d %d", &nr, &nc, &nnz) != 3) return 2;
    int32_t *ip = malloc(sizeof(int32_t) * (size_t)(nr + 1)), *ix = malloc(sizeof(int32_t) * (size_t)(nnz + 1));
    for (int32_t i = 0; i <= nr; i++) if (fscanf(f, "%d", &ip[i]) != 1) return 2;
    for (int32_t i = 0; i < nnz; i++) if (fscanf(f, "%d", &ix[i]) != 1) return 2;
    fclose(f);
    int reps = atoi(argv[2]), order[m_NCONFIGS];
    double ms[m_NCONFIGS], *t = malloc(sizeof(double) * (size_t)reps);
    double *rows = malloc(sizeof(double) * (size_t)(m_NCONFIGS * m_model.ncols));
    spmv_csr A = {nr, nc, ip, ix};
    spmv_gpu_props dev = {@DEV@};
    if (m_rank(nr, nc, ip, ix, order, ms) != 0) return 3;
    for (int r = 0; r < reps; r++) { double t0 = now(); m_rank(nr, nc, ip, ix, order, ms); t[r] = now() - t0; }
    double rank_us = median(t, reps) * 1e6;
    for (int r = 0; r < reps; r++) { double t0 = now(); spmv_design_rows(&A, &dev, &m_configs, @VB@, 0, rows, NULL); t[r] = now() - t0; }
    double rows_us = median(t, reps) * 1e6;
    for (int r = 0; r < reps; r++) { double t0 = now(); spmv_rank_rows(&m_configs, &m_model, rows, NULL, order, ms, NULL, NULL); t[r] = now() - t0; }
    printf("%.3f %.3f %.3f\n", rank_us, rows_us, median(t, reps) * 1e6);
    return 0;
}
"""


def write_csr(path: Path, A: pyspmv.Matrix) -> None:
    path.write_text(f"{A.nrows} {A.ncols} {A.nnz}\n" + " ".join(map(str, A.indptr.tolist())) + "\n"
                    + " ".join(map(str, A.indices.tolist())) + "\n")


def cc(src: Path, exe: Path, *inc: Path) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(["cc", "-std=c99", "-O2", *[f"-I{p}" for p in inc], "-o", str(exe), str(src), "-lm"],
                       capture_output=True, text=True, check=False)
    if r.returncode:
        raise RuntimeError(r.stderr[-2000:])
    return time.perf_counter() - t0


def timed(fn, reps: int) -> float:
    """Median µs of fn() over reps calls (after one warm-up)."""
    fn()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter_ns()
        fn()
        ts.append(time.perf_counter_ns() - t0)
    return statistics.median(ts) / 1e3


def c_times(rm: pyspmv.RankModel, A: pyspmv.Matrix, work: Path, reps: int) -> tuple[float, float, float, float]:
    """Medians in µs of ``NAME_rank`` (the whole ranking), ``spmv_design_rows`` and ``spmv_rank_rows`` (every
    configuration evaluated, then sorted) of ``rm`` exported as a C header and compiled in ``work``, on ``A``;
    and the compile seconds."""
    pyspmv.export_c(rm, work / "m.h", name="m", dtype="float64")
    dev = ", ".join(str(rm.gpu[k]) for k in ("sm_count", "threads_per_sm", "warp_size"))
    (work / "drv.c").write_text(DRIVER.replace("@DEV@", dev).replace("@VB@", "8"))
    comp = cc(work / "drv.c", work / "drv", work)
    write_csr(work / "A.txt", A)
    out = subprocess.run([str(work / "drv"), str(work / "A.txt"), str(reps)], capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0]), float(out[1]), float(out[2]), comp


def laplacian(k: int) -> pyspmv.Matrix:
    """The 2-D 5-point Laplacian of a k x k grid."""
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k))
    return pyspmv.Matrix(sp.kronsum(T, T, format="csr"), name=f"laplace2d {k}x{k}")


def uniform(n: int, per_row: int) -> pyspmv.Matrix:
    """n x n, ``per_row`` uniform random columns per row (duplicates summed), seed 1."""
    rng = np.random.default_rng(1)
    rows = np.repeat(np.arange(n), per_row)
    A = sp.csr_array((rng.uniform(-1, 1, rows.size), (rows, rng.integers(0, n, rows.size))), shape=(n, n))
    A.sum_duplicates()
    return pyspmv.Matrix(A, name=f"uniform n={n}")


def folder_matrices(folder: str | Path | None) -> list[pyspmv.Matrix]:
    """The Matrix Market files of ``folder`` (none when it is None) that ``pyspmv.load`` reads; the others are
    skipped, as a benchmark over a collection skips what it cannot use."""
    out = []
    for p in sorted(Path(folder).glob("*.mtx*")) if folder else []:
        try:
            out.append(pyspmv.load(p))
        except (ValueError, OSError):
            continue
    return out


def product_us(M: pyspmv.Matrix, reps: int) -> float:
    """Median µs of one ``cpu/csr/rows`` product of M in float64 on one OpenMP thread, as
    :func:`pyspmv.benchmark` times it (the C core's own timer, no Python call; checked first)."""
    with threadpool_limits(1, user_api="openmp"):
        df = pyspmv.benchmark(M, ["cpu/csr/rows"], dtype="float64", repeats=reps,
                              budget_s=max(0.2, 2e-8 * reps * M.nnz))
    return float(df["median_ms"].iloc[0]) * 1e3


def reps_for(nnz: int) -> int:
    """Timed calls for a matrix of ``nnz`` entries: about 2e7 entries in all, 20 to 2000."""
    return int(np.clip(2e7 / max(nnz, 1), 20, 2000))


def each_pair(mats: Iterable[pyspmv.Matrix], measure: Callable[[pyspmv.Matrix, str], dict[str, Any]]
              ) -> list[dict[str, Any]]:
    """``measure(M, dtype)`` of every matrix in float64 and float32, each row printed as it comes; a pair whose
    values pass float32's range (``measure`` raises ValueError) is skipped, saying so."""
    rows = []
    for M in mats:
        for dtype in ("float64", "float32"):
            try:
                r = measure(M, dtype)
            except ValueError as exc:
                print(f"{M.name} {dtype}: skipped ({exc})", flush=True)
                continue
            rows.append(r)
            print({k: (round(v, 3) if isinstance(v, float) else v) for k, v in r.items()}, flush=True)
    return rows


def shifted_laplacian(A: sp.csr_array) -> sp.csr_array:
    """``D - W + I / 100``: symmetric positive definite on the pattern of ``A`` (``W = |A| + |A|^T`` off the diagonal,
    scaled to unit mean weight; ``D`` its row sums)."""
    W = abs(A).tocsr()
    W = (W + W.T).tocsr()
    W.setdiag(0)
    W.eliminate_zeros()
    W.data /= W.data.mean()
    L = sp.diags(np.asarray(W.sum(axis=1)).ravel() + 0.01) - W
    return sp.csr_array(L).sorted_indices()


def large_problems(generated: str, scaled: str | None, lo: float, hi: float, per_kind: int,
                   seed: int) -> list[tuple[str, object, list[str]]]:
    """The large CG problems: generated stencils and scaled real matrices as shifted Laplacians."""
    out = []
    for item in filter(None, generated.split(",")):
        kind, size = item.split(":")
        out.append((f"{kind}_{size}", pyspmv.generate(kind, int(size)).to_scipy().tocsr(), ["cg"]))
    if scaled:
        for e in pyspmv.datasets.scaled_corpus(scaled, lo, hi, per_kind=per_kind, seed=seed):
            A = e.build().to_scipy().tocsr()
            if A.shape[0] == A.shape[1]:          # a rectangular one (an LP's) has no Laplacian
                out.append((f"{e.name}_lap", shifted_laplacian(A), ["cg"]))
    return out
