"""Conversion on the GPU from a resident CSR to each own format, against the product of the converted format
and against the host's conversion plus upload.

    python benchmarks/convert_gpu.py --matrices DIR [--min-nnz 1e5] [--repeats 5] [--out benchmarks/results/convert_gpu.md]

For every matrix of 1e5 entries or more (generated ones, and the Matrix Market files of ``--matrices``), float64:
the CSR is uploaded once and wrapped (``DeviceMatrix.wrap_csr``); then for each format (one configuration per
format and format parameters of the registry, the fastest thread mapping's product as ``pyspmv.benchmark``
measures it) ``pyspmv.devices.gpu.convert_on_device`` is timed end to end (``time.perf_counter`` around the call,
which returns after the device has finished: allocation, kernels, sizes read back), median of ``--repeats``.
Columns: conversion ms, the product's ms, their ratio in products (the issue's target: at most 5 for 1e5 entries
and more), and the host's ``pyspmv.convert`` plus upload (``DeviceMatrix``) for the same format.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import statistics
import time

import numpy as np
from _internal import arrays, gpu
from _md import md_table, write_report
from _timing import folder_matrices, laplacian, uniform

import pyspmv


def matrices(folder: str | None, min_nnz: int) -> list[pyspmv.Matrix]:
    out = [laplacian(300), uniform(100000, 10), pyspmv.generate("powerlaw", 200000), *folder_matrices(folder)]
    return [M for M in out if M.nnz >= min_nnz]


def formats() -> dict[tuple[str, tuple], list[pyspmv.Config]]:
    """The registry's own CUDA configurations by (format, format parameters)."""
    out: dict[tuple[str, tuple], list[pyspmv.Config]] = {}
    for c in pyspmv.configs("cuda"):
        if c.library == "pyspmv" and c.format != "csr":
            out.setdefault((c.format, tuple(sorted(c.format_kwargs.items()))), []).append(c)
    return out


def wall_ms(fn, repeats: int) -> float:
    fn()                                     # warm: the first call pays for module and pool set-up
    t = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        r = fn()
        t.append((time.perf_counter() - t0) * 1e3)
        del r
    return statistics.median(t)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrices", help="folder of Matrix Market files")
    ap.add_argument("--min-nnz", type=float, default=1e5)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default="benchmarks/results/convert_gpu.md")
    a = ap.parse_args()
    import cupy as cp
    import cupyx.scipy.sparse as csp

    rows = []
    groups = formats()
    for M in matrices(a.matrices, int(a.min_nnz)):
        S = M.to_scipy()
        D = arrays.device_csr(csp.csr_matrix(S), "float64")
        DM = gpu.DeviceMatrix.wrap_csr(D)
        for (fmt, params), cfgs in groups.items():
            kw = dict(params)
            try:
                conv = wall_ms(lambda fmt=fmt, kw=kw, DM=DM: gpu.convert_on_device(DM, fmt, **kw), a.repeats)
                host = wall_ms(lambda fmt=fmt, kw=kw, M=M: gpu.DeviceMatrix(pyspmv.convert(M, fmt, dtype="float64", **kw)),
                               a.repeats)
            except pyspmv.NotApplicableError:
                continue
            bench = pyspmv.benchmark(M, cfgs, device="cuda", dtype="float64", repeats=50, budget_s=0.2,
                                     progress=False)
            bench = bench[np.isfinite(bench["median_ms"])]
            if bench.empty:
                continue
            best = bench.loc[bench["median_ms"].idxmin()]
            prod = float(best["median_ms"])
            rows.append({"matrix": M.name, "nnz": M.nnz, "format": fmt + "".join(f"/{k}={v}" for k, v in params),
                         "conv": conv, "product": prod, "ratio": conv / prod, "host": host})
            print(rows[-1], flush=True)
        cp.get_default_memory_pool().free_all_blocks()
    ratios = [r["ratio"] for r in rows]
    table = md_table(["matrix", "nnz", "format", "device conversion ms", "product ms", "conversion / product",
                      "host convert + upload ms"],
                     [[r["matrix"], f"{r['nnz']:,}", f"`{r['format']}`", f"{r['conv']:.3f}", f"{r['product']:.4f}",
                       f"{r['ratio']:.1f}", f"{r['host']:.2f}"] for r in rows], "lrlrrrr")
    by_fmt: dict[str, list[float]] = {}
    for r in rows:
        by_fmt.setdefault(r["format"].split("/")[0], []).append(r["ratio"])
    lines = [
        (f"float64; device conversion and host conversion + upload are medians of {a.repeats} calls after one "
         "untimed, wall-clock ms around the call; product is `pyspmv.benchmark()`'s median for the format's fastest "
         "thread mapping."),
        "",
        *table,
        "",
        (f"Over {len(rows)} matrix/format pairs of {a.min_nnz:.0e} entries and more: conversion in products median "
         f"{statistics.median(ratios):.1f}, max {max(ratios):.1f}; {sum(r <= 5 for r in ratios)} of {len(ratios)} "
         "at most 5. Per format, median (max): "
         + "; ".join(f"{f} {statistics.median(v):.1f} ({max(v):.1f})" for f, v in sorted(by_fmt.items())) + "."),
    ]
    write_report(a.out, "Conversion on the GPU", lines, device="cuda")
    print(lines[-1])


if __name__ == "__main__":
    main()
