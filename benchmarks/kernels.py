"""Every CUDA configuration on large generated matrices and the shared ones, against the device's
copy bandwidth and cuSPARSE's CSR default measured in the same run.

Usage: python benchmarks/kernels.py [--matrices DIR] [--out benchmarks/results] [--dtypes float32 float64]
                                    [--large] [--repeats 200]

Writes ``kernels_<gpu>.csv`` (one row per matrix, dtype and configuration, appended matrix by
matrix so an interrupted run keeps what it measured) and ``kernels_<gpu>.md`` (per matrix and dtype:
the best own kernel and the best cuSPARSE configuration against cuSPARSE CSR default).

Columns beyond :func:`pyspmv.benchmark`'s:

- ``floor_bytes``: the least a CSR product must move, the matrix once (int32 row pointers and
  column indices, values) plus x read once and y written once;
- ``bytes_moved``: what this configuration's format moves (padding included, plus x and y);
- ``eff_gbs = floor_bytes / median``, and ``eff_frac = eff_gbs / copy_gbs``, the fraction of the
  device-to-device copy bandwidth (bytes read plus written) measured at the start of the run;
- ``own_gbs = bytes_moved / median`` and ``own_frac``, the same for the format's own traffic;
- ``vs_cusparse = cusparse/csr/default median / this median`` (above 1: faster than cuSPARSE).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import re
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _internal import gpu
from _md import gpu_software
from _md import md_frame as markdown
from _md import provenance
from tqdm.auto import tqdm

import pyspmv

BASELINE = "cusparse/csr/default"


def large_matrices() -> list[pyspmv.Matrix]:
    """The issue's large cases: a 3D 7-point stencil of 49M entries, a power-law matrix of 12M
    entries and a 5-diagonal banded matrix of 20M entries."""
    return [pyspmv.generate("poisson3d", 192), pyspmv.generate("powerlaw", 1_500_000, seed=1),
            pyspmv.generate("banded", 4_000_000)]


def small_generated() -> list[pyspmv.Matrix]:
    return [pyspmv.generate("poisson2d", 100), pyspmv.generate("poisson3d", 30), pyspmv.generate("powerlaw", 20_000, seed=2),
            pyspmv.generate("banded", 50_000), pyspmv.generate("random", 20_000, seed=3)]  # random: 10 entries a row


def floor_bytes(M: pyspmv.Matrix, itemsize: int) -> int:
    return 4 * (M.nrows + 1) + (4 + itemsize) * M.nnz + itemsize * (M.nrows + M.ncols)


def measure(M: pyspmv.Matrix, dtype: str, copy_gbs: float, repeats: int, budget_s: float) -> pd.DataFrame:
    cfgs = pyspmv.configs("cuda")
    df = pyspmv.benchmark(M, cfgs, device="cuda", dtype=dtype, repeats=repeats, budget_s=budget_s, progress=False)
    cf = pyspmv.config_features(M, cfgs, dtype=dtype)
    df["nrows"], df["nnz"] = M.nrows, M.nnz
    df["floor_bytes"] = floor_bytes(M, np.dtype(dtype).itemsize)
    df["bytes_moved"] = df.config.map(cf.bytes_moved)
    df["launches"] = df.config.map(cf.launches)
    df["eff_gbs"] = df.floor_bytes / (df.median_ms * 1e6)
    df["eff_frac"] = df.eff_gbs / copy_gbs
    df["own_gbs"] = df.bytes_moved / (df.median_ms * 1e6)
    df["own_frac"] = df.own_gbs / copy_gbs
    base = df.loc[df.config == BASELINE, "median_ms"]
    df["vs_cusparse"] = (float(base.iloc[0]) if len(base) else np.nan) / df.median_ms
    df["copy_gbs"] = copy_gbs
    df["timing"] = "queued"  # each run queued behind a wait kernel (see pyspmv.devices.gpu.Plan.bench)
    return df


def summary(df: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for (name, dtype), g in df[df.status == "ok"].groupby(["matrix", "dtype"], sort=False):
        own = g[g.config.str.startswith("pyspmv/")].sort_values("median_ms")
        cus = g[g.config.str.startswith("cusparse/")].sort_values("median_ms")
        base = g[g.config == BASELINE]
        if own.empty or base.empty:
            continue
        b, c0 = own.iloc[0], base.iloc[0]
        rows.append({
            "matrix": name, "dtype": dtype, "nnz": int(b.nnz),
            "best_own": b.config, "own_us": b.median_ms * 1e3, "own_eff_frac": b.eff_frac,
            "own_frac_of_its_bytes": b.own_frac,
            "best_cusparse": cus.iloc[0].config, "cusparse_best_us": cus.iloc[0].median_ms * 1e3,
            "csr_default_us": c0.median_ms * 1e3, "csr_default_eff_frac": c0.eff_frac,
            "speedup_vs_csr_default": c0.median_ms / b.median_ms,
            "floor_us": b.floor_bytes / (b.copy_gbs * 1e3),
        })
    return pd.DataFrame(rows)


def targets(s: pd.DataFrame) -> str:
    """The issue's two targets, read off the summary."""
    small = s[s.nnz < 300_000]
    big = s[s.matrix.str.startswith("poisson3d") & (s.nnz >= 40_000_000)]
    out = [(f"- Matrices under 300k nonzeros ({len(small)} matrix/dtype pairs): best own kernel against cuSPARSE "
            f"CSR default, median speedup {small.speedup_vs_csr_default.median():.2f}x (min "
            f"{small.speedup_vs_csr_default.min():.2f}x, max {small.speedup_vs_csr_default.max():.2f}x); "
            f"{(small.speedup_vs_csr_default >= 2).sum()} of {len(small)} reach 2x. Median times: own "
            f"{small.own_us.median():.2f} us, cuSPARSE CSR default {small.csr_default_us.median():.2f} us.")]
    for r in big.itertuples():
        out.append(f"- {r.matrix} {r.dtype} ({r.nnz} nonzeros): best own {r.best_own} at {r.own_us:.0f} us moves its "
                   f"own bytes at {r.own_frac_of_its_bytes:.3f} of copy bandwidth; cuSPARSE CSR default "
                   f"{r.csr_default_us:.0f} us, {r.csr_default_eff_frac:.3f} of copy bandwidth.")
    return "\n".join(out) + "\n"


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--matrices", type=Path, help="folder of .mtx/.mtx.gz files to add")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    ap.add_argument("--large", action="store_true", help="add the large generated matrices")
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--budget", type=float, default=1.0, help="seconds of timed runs per configuration")
    args = ap.parse_args(argv)

    info = gpu.device_info()
    tag = re.sub(r"[^a-z0-9]+", "_", info["name"].lower()).strip("_")
    args.out.mkdir(parents=True, exist_ok=True)
    csv, md = args.out / f"kernels_{tag}.csv.gz", args.out / f"kernels_{tag}.md"
    copy_gbs = gpu.copy_bandwidth(1 << 30, repeats=50)
    done = set(pd.read_csv(csv).matrix + "/" + pd.read_csv(csv).dtype) if csv.exists() else set()

    sources: list = small_generated()
    if args.matrices and args.matrices.is_dir():
        sources += sorted(list(args.matrices.glob("*.mtx.gz")) + list(args.matrices.glob("*.mtx")))
    if args.large:
        sources += large_matrices()
    t0 = time.perf_counter()
    for src in tqdm(sources, desc="matrices"):
        M = src if isinstance(src, pyspmv.Matrix) else pyspmv.load(src)
        for dtype in args.dtypes:
            if f"{M.name}/{dtype}" in done:
                continue
            if dtype == "float32" and M.nnz and float(np.max(np.abs(M.data))) > 3e38:
                continue
            df = measure(M, dtype, copy_gbs, args.repeats, args.budget)
            df.to_csv(csv, mode="a", header=not csv.exists(), index=False, float_format="%.6g")
    full = pd.read_csv(csv)
    s = summary(full)
    with open(md, "w", encoding="utf-8") as f:
        f.write(f"# CUDA kernels on {info['name']}\n\n{provenance('cuda')}\n\n")
        f.write(f"{gpu_software(info)}; device copy bandwidth {copy_gbs:.0f} GB/s (read + write, "
                f"measured in the same run); median of up to {args.repeats} event-timed runs per configuration "
                f"(fewer where {args.budget} s of runs ran out), each queued behind a wait kernel so the events "
                f"time the GPU's work, not the host's launch latency.\n\n")
        f.write(targets(s) + "\n")
        f.write(markdown(s))
    print(s.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print(f"copy bandwidth {copy_gbs:.0f} GB/s; {len(full)} rows in {csv}; {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
