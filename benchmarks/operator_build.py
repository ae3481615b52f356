"""What building a GPU ``pyspmv.Operator`` costs, in products of its pick, from 1e5 to 5e7 entries.

    python benchmarks/operator_build.py --bases DIR            # results/operator_build.md (needs a GPU and CuPy)
    python benchmarks/operator_build.py --quick --out /tmp/ob.md

For each matrix and value type, wall-clock ms around each call, the GPU synchronised before the clock stops
(median of 3 calls below 1e7 entries, else of 1, after one untimed build of a small matrix that loads the model):

- ``rank``: ``pyspmv.rank(A, device="cuda", n_calls=N)`` of the scipy matrix alone (exact features on the host);
- ``rank sampled``: the same with ``estimate=True``, the ranking a GPU Operator makes from 1e6 entries;
- ``upload``: CuPy's ``cupyx.scipy.sparse.csr_matrix(A)``, the CSR's copy to the GPU any GPU library pays for a
  host matrix (the floor of a scipy input's build: its bytes over the host link);
- ``scipy``: ``Operator(A, "cuda", n_calls=N, verify=0)`` (no verification: rank, upload as CSR, conversion of the
  pick on the GPU, its plan);
- ``scipy auto``: ``Operator(A, "cuda", n_calls=N)``, ``verify='auto'`` (the default): k, the candidates it timed;
- ``cupy``: ``Operator(Ad, "cuda", n_calls=N, verify=0)`` of the CuPy CSR matrix ``Ad`` already on the GPU;
- ``cupy auto``: ``Operator(Ad, "cuda", n_calls=N)``, ``verify='auto'``.

Products: each build over the kernel time of its own pick (``pyspmv.benchmark()``'s median). The targets (issue 52),
at 1e6+ entries: a scipy input without verification at most 20 products, with ``verify='auto'`` at most 100, a CuPy
input at most 10.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from _md import md_table, write_report
from _timing import each_pair, laplacian, uniform
from tqdm import tqdm

import pyspmv
from pyspmv.datasets import scaled_corpus


def matrices(bases: str | None, quick: bool) -> list[pyspmv.Matrix]:
    """Generated matrices from 1e5 to 4.5e7 entries, then real ones scaled from ``bases`` to 1e6-2e7."""
    if quick:
        return [laplacian(150), uniform(100_000, 10)]
    out = [laplacian(150), laplacian(450), uniform(100_000, 10), laplacian(1000), uniform(1_000_000, 10),
           pyspmv.generate("powerlaw", 500_000, seed=1), laplacian(3000)]
    if bases:
        out += [e.build() for e in scaled_corpus(bases, 1e6, 2e7, per_kind=1, seed=5)[:6]]
    return out


def wall(cp: Any, fn: Callable[[], Any], n: int) -> tuple[float, Any]:
    """Median wall ms of ``n`` calls of ``fn`` (the device synchronised before each clock stops), and the last
    call's result."""
    out, res = [], None
    for _ in range(n):
        res = None
        cp.cuda.Device().synchronize()
        t0 = time.perf_counter()
        res = fn()
        cp.cuda.Device().synchronize()
        out.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(out), res


def kernel_ms(M: pyspmv.Matrix, cid: str, dtype: str) -> float:
    df = pyspmv.benchmark(M, [cid], device="cuda", dtype=dtype, repeats=50, budget_s=0.5, progress=False)
    return float(df["median_ms"].iloc[0])


def measure(cp: Any, csp: Any, M: pyspmv.Matrix, dtype: str, n_calls: int) -> dict[str, Any]:
    S = M.to_scipy().astype(dtype)
    reps = 3 if M.nnz < 10_000_000 else 1
    row: dict[str, Any] = {"name": M.name, "nnz": M.nnz, "dtype": dtype}
    row["rank"], _ = wall(cp, lambda: pyspmv.rank(S, device="cuda", n_calls=n_calls), reps)
    row["rank sampled"], _ = wall(cp, lambda: pyspmv.rank(S, device="cuda", n_calls=n_calls, estimate=True), reps)
    row["upload"], Ad = wall(cp, lambda: csp.csr_matrix(S), reps)
    row["scipy"], op = wall(cp, lambda: pyspmv.Operator(S, "cuda", n_calls=n_calls, verify=0), reps)
    row["scipy auto"], opa = wall(cp, lambda: pyspmv.Operator(S, "cuda", n_calls=n_calls), reps)
    row["cupy"], opc = wall(cp, lambda: pyspmv.Operator(Ad, "cuda", n_calls=n_calls, verify=0), reps)
    row["cupy auto"], opca = wall(cp, lambda: pyspmv.Operator(Ad, "cuda", n_calls=n_calls), reps)
    row["pick"], row["pick auto"] = op.config.id, opa.config.id
    row["k"] = len(opa.ranking.verified or ())
    t = {c: kernel_ms(M, c, dtype) for c in {op.config.id, opa.config.id, opc.config.id, opca.config.id}}
    row["kernel"], row["kernel auto"] = t[op.config.id], t[opa.config.id]
    row["products"] = {"scipy": row["scipy"] / t[op.config.id], "scipy auto": row["scipy auto"] / t[opa.config.id],
                       "cupy": row["cupy"] / t[opc.config.id], "cupy auto": row["cupy auto"] / t[opca.config.id],
                       "upload": row["upload"] / t[op.config.id]}
    x = cp.asarray(np.random.default_rng(0).uniform(-1, 1, M.ncols).astype(dtype))
    ref = S.astype(np.float64) @ cp.asnumpy(x).astype(np.float64)
    tol = 1e-4 if dtype == "float32" else 1e-10
    for o in (op, opa, opc, opca):
        assert np.allclose(cp.asnumpy(o @ x), ref, rtol=tol, atol=tol * np.abs(ref).max()), o.config.id
        o.close()
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bases", help="folder of real Matrix Market files to scale (pyspmv.datasets.scaled_corpus)")
    ap.add_argument("--n-calls", type=int, default=10_000, help="the n_calls each build is given (default 10000)")
    ap.add_argument("--quick", action="store_true", help="two small matrices, for a check")
    ap.add_argument("--out", default="benchmarks/results/operator_build.md")
    a = ap.parse_args()
    import cupy as cp
    import cupyx.scipy.sparse as csp

    pyspmv.Operator(laplacian(20), "cuda", n_calls=a.n_calls).close()       # loads the model: not a build's cost
    rows = each_pair(tqdm(matrices(a.bases, a.quick), desc="matrices", unit="matrix"),
                     lambda M, dtype: measure(cp, csp, M, dtype, a.n_calls))
    p = [r["products"] for r in rows]
    table = md_table(["matrix", "nnz", "dtype", "pick", "kernel ms", "rank ms", "rank sampled ms", "upload ms",
                      "scipy ms", "scipy auto ms", "k", "cupy ms", "cupy auto ms", "upload / kernel",
                      "scipy / kernel", "scipy auto / kernel", "cupy / kernel", "cupy auto / kernel"],
                     [[r["name"], f"{r['nnz']:,}", r["dtype"], f"`{r['pick']}`", f"{r['kernel']:.4f}",
                       f"{r['rank']:.2f}", f"{r['rank sampled']:.2f}", f"{r['upload']:.2f}", f"{r['scipy']:.2f}",
                       f"{r['scipy auto']:.2f}", r["k"], f"{r['cupy']:.2f}", f"{r['cupy auto']:.2f}",
                       f"{q['upload']:.0f}", f"{q['scipy']:.0f}", f"{q['scipy auto']:.0f}", f"{q['cupy']:.0f}",
                       f"{q['cupy auto']:.0f}"] for r, q in zip(rows, p)],
                     "lrllrrrrrrrrrrrrrr")
    big = [q for r, q in zip(rows, p) if r["nnz"] >= 1_000_000]

    def med(key: str) -> str:
        v = [q[key] for q in big]
        return f"median {statistics.median(v):.0f}, max {max(v):.0f}" if v else "none"

    lines = [
        (f"Wall-clock ms of each build with `n_calls={a.n_calls}` (median of 3 calls below 1e7 entries, else 1), the "
         "GPU synchronised; products: the build over its own pick's kernel time (`pyspmv.benchmark()` median). "
         "`upload` is CuPy's copy of the CSR to the GPU, the floor of any build from a host matrix."), "",
        *table, "",
        (f"At 1e6+ entries ({len(big)} matrix/dtype pairs), in products of the pick: upload alone {med('upload')}; "
         f"scipy input without verification {med('scipy')} (target 20); with verify='auto' {med('scipy auto')} "
         f"(target 100); CuPy input {med('cupy')} (target 10), with verify='auto' {med('cupy auto')}."),
    ]
    write_report(a.out, "Building a GPU Operator, in products of its pick", lines, device="cuda")
    print("\n".join(lines[-1:]))


if __name__ == "__main__":
    main()
