"""Does a reverse Cuthill-McKee order make our kernels faster on large real-structured matrices, and by
how much after paying to permute x in and y out?  (Issue "At scale, part 1", item 3: decides whether the
reordering axis is worth its cost before it is built into the conversion.)

Usage (on the GPU machine): python studies/2026-11-29-rcm-locality/rcm_locality.py --corpus DIR
    [--prior timings.csv.gz] [--limit 13] [--dtype float64] [--out DIR]

For each square matrix of ``scaled_corpus(DIR, 3e6, 1.6e7, per_kind=3, seed=1)`` (the first ``--limit``:
one per kind first): the symmetric RCM order of the pattern of A + A^T (scipy.sparse.csgraph), B = P A P^T,
and in one run the kernel times on A and on B of every csr/merge configuration, the prior's 6 fastest own
configurations of A, and cuSPARSE's CSR default: the kernel alone, without gathering x into the new order
and scattering y back (the configurations with ``order=1`` of benchmarks/kernels_floor.py time those too).
Writes rcm_locality.csv and rcm_locality.md beside this file (or in --out).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp
from scipy.sparse.csgraph import reverse_cuthill_mckee

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/_common.py
from _common import provenance  # noqa: E402
from _md import md_frame  # noqa: E402

import pyspmv  # noqa: E402
from pyspmv.datasets import scaled_corpus  # noqa: E402

HERE = Path(__file__).resolve().parent


def rcm(A: sp.csr_matrix) -> np.ndarray:
    S = (abs(A) + abs(A).T).tocsr()
    return np.asarray(reverse_cuthill_mckee(S, symmetric_mode=True), dtype=np.int64)


def bandwidth(A: sp.csr_matrix) -> float:
    C = A.tocoo()
    return float(np.abs(C.row.astype(np.int64) - C.col).mean()) if C.nnz else 0.0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, required=True)
    ap.add_argument("--prior", type=Path)
    ap.add_argument("--limit", type=int, default=13)
    ap.add_argument("--dtype", default="float64")
    ap.add_argument("--out", type=Path, default=HERE)
    args = ap.parse_args()
    prior = pd.read_csv(args.prior) if args.prior else None
    rows = []
    t0 = time.perf_counter()
    for e in scaled_corpus(args.corpus, 3e6, 1.6e7, per_kind=3, seed=1)[:args.limit]:
        M = e.build()
        if M.nrows != M.ncols:
            continue
        A = sp.csr_matrix((M.data, M.indices, M.indptr), shape=M.shape)
        t1 = time.perf_counter()
        perm = rcm(A)
        B = A[perm][:, perm].tocsr()
        B.sort_indices()
        order_s = time.perf_counter() - t1
        MB = pyspmv.Matrix(B, name=e.name + "_rcm")
        cfgs = [c for c in pyspmv.configs("cuda") if c.kernel_id == "pyspmv/csr/merge"] + ["cusparse/csr/default"]
        if prior is not None:
            p = prior[(prior.matrix == e.name) & (prior.dtype == args.dtype) & (prior.status == "ok")]
            cfgs += list(p[p.config.str.startswith("pyspmv/")].nsmallest(6, "median_ms").config)
        ta = pyspmv.benchmark(M, cfgs, device="cuda", dtype=args.dtype, repeats=50, budget_s=0.1, progress=False)
        tb = pyspmv.benchmark(MB, cfgs, device="cuda", dtype=args.dtype, repeats=50, budget_s=0.1, progress=False)
        ta, tb = ta[ta.status == "ok"].set_index("config"), tb[tb.status == "ok"].set_index("config")
        own_a = ta[ta.index.str.startswith("pyspmv/")].median_ms.min() * 1e3
        own_b = tb[tb.index.str.startswith("pyspmv/")].median_ms.min() * 1e3
        rows.append({"matrix": e.name, "group": e.group, "nnz": M.nnz, "nrows": M.nrows,
                     "bw_a": bandwidth(A), "bw_b": bandwidth(B), "order_s": order_s,
                     "best_own_a": ta[ta.index.str.startswith("pyspmv/")].median_ms.idxmin(),
                     "own_a_us": own_a, "best_own_b": tb[tb.index.str.startswith("pyspmv/")].median_ms.idxmin(),
                     "own_b_us": own_b,
                     "cusparse_a_us": ta.median_ms.get("cusparse/csr/default", np.nan) * 1e3,
                     "cusparse_b_us": tb.median_ms.get("cusparse/csr/default", np.nan) * 1e3,
                     "kernel_gain": own_a / own_b})
        print(rows[-1], flush=True)
    df = pd.DataFrame(rows)
    args.out.mkdir(parents=True, exist_ok=True)
    df.to_csv(args.out / "rcm_locality.csv", index=False, float_format="%.6g")
    with open(args.out / "rcm_locality.md", "w", encoding="utf-8") as f:
        f.write(f"# RCM order and our kernels ({args.dtype})\n\n{provenance('cuda')}\n\n")
        f.write(md_frame(df))
    print(df.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print(f"{time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
