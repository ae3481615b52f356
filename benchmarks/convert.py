"""Conversion from CSR into every format: pyspmv's C core against scipy's equivalent where scipy has
one (COO, DIA, BSR, a CSR copy), and against one SpMV of the same matrix.

Usage: python benchmarks/convert.py [--matrices DIR] [--out benchmarks/results/convert.csv]

Writes one row per (matrix, format): pyspmv_ms, scipy_ms (NaN where scipy has no such format),
ratio = pyspmv_ms / scipy_ms, spmv_ms (one cpu/csr/rows SpMV on all cores, as benchmark() times
it) and the stored bytes.
Every conversion is checked (to_csr() equals the input) before it is timed.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import functools
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd
from _internal import generators
from _md import csv_provenance

import pyspmv

CASES = [("csr", {}), ("coo", {}), ("ell", {}), ("sell", {"c": 8, "sigma": 64}), ("bro_ell", {"h": 32, "bits": 0}),
         ("hyb", {}), ("dia", {}), ("jad", {}), ("bsr", {"b": 4})]
params = [c[0] for c in CASES]   # asv-style grid description
param_names = ["format"]


def median_ms(fn: Callable[[], object], budget_s: float = 0.5, max_runs: int = 50) -> float:
    fn()  # warm-up
    times = []
    t_end = time.perf_counter() + budget_s
    while len(times) < max_runs and (not times or time.perf_counter() < t_end):
        t0 = time.perf_counter_ns()
        fn()
        times.append((time.perf_counter_ns() - t0) / 1e6)
    return float(np.median(times))


def scipy_equivalent(S, fmt: str, params: dict) -> Callable[[], object] | None:
    if fmt == "csr":
        return S.copy
    if fmt == "coo":
        return S.tocoo
    if fmt == "dia":
        return S.todia
    if fmt == "bsr":
        b = params["b"]
        return lambda: S.tobsr(blocksize=(b, b)) if S.shape[0] % b == 0 and S.shape[1] % b == 0 else None
    return None


def matrices(folder: Path | None) -> list[pyspmv.Matrix]:
    out = []
    if folder and folder.is_dir():
        files = sorted(folder.glob("*.mtx.gz"), key=lambda p: p.stat().st_size)[-8:]
        out += [pyspmv.load(p) for p in files]
    out += [pyspmv.generate("poisson2d", 1000), pyspmv.generate("poisson3d", 100),
            generators.random(200_000, density=25 / 200_000), pyspmv.generate("powerlaw", 200_000),
            generators.full_band(1_000_000, 4, 4)]
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrices", type=Path, default=Path(__file__).resolve().parents[2] / "shared" / "matrices")
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "convert.csv")
    args = ap.parse_args()
    rows = []
    for A in matrices(args.matrices):
        S = A.to_scipy()
        df = pyspmv.benchmark(A, ["cpu/csr/rows"], repeats=100, budget_s=0.5, progress=False)
        spmv_ms = float(df.median_ms.iloc[0])  # the kernel alone, as benchmark() times it
        for fmt, p in CASES:
            row = {"matrix": A.name, "nrows": A.nrows, "nnz": A.nnz, "format": fmt, "params": p,
                   "pyspmv_ms": np.nan, "scipy_ms": np.nan, "spmv_ms": spmv_ms, "bytes": np.nan, "note": ""}
            try:
                F = pyspmv.convert(A, fmt, **p)
            except pyspmv.NotApplicableError as exc:
                row["note"] = str(exc)
                rows.append(row)
                continue
            assert F.to_csr() == A, (A.name, fmt)
            row["bytes"] = F.nbytes
            row["pyspmv_ms"] = median_ms(functools.partial(pyspmv.convert, A, fmt, **p))
            ref = scipy_equivalent(S, fmt, p)
            if ref is not None and ref() is not None:
                row["scipy_ms"] = median_ms(ref)
            rows.append(row)
            print(f"{A.name:>24} {fmt:>8} pyspmv {row['pyspmv_ms']:9.3f} ms  scipy {row['scipy_ms']:9.3f} ms  "
                  f"spmv {spmv_ms:8.3f} ms", flush=True)
    df = pd.DataFrame(rows)
    df["ratio"] = df.pyspmv_ms / df.scipy_ms
    df["convert_in_spmvs"] = df.pyspmv_ms / df.spmv_ms
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with open(args.out, "w", encoding="utf-8") as f:
        f.write(csv_provenance())
        df.to_csv(f, index=False)
    print(df.groupby("format")[["ratio", "convert_in_spmvs"]].median().to_string())


if __name__ == "__main__":
    main()
