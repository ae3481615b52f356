"""JAD's rows a thread, A/B in one process: every JAD configuration (value tables included) on generated stencils,
banded, random and power-law matrices, both types, with 1 and 2 rows a thread, twice interleaved (a probe build of
kernels/jad.cu read the count from ``SPMV_PROBE_JAD_RPT`` at each launch: ``probe_jad.diff``; not kept).

Run on the GPU machine with the probe build installed: ``python ab_jad.py OUT_DIR`` (about 60 s).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
import sys
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/_common.py
import _common  # noqa: F401  (puts benchmarks/ on the path)
from _internal import gpu

import pyspmv


mats = []
for dt in ("float32", "float64"):
    for side in (423, 760, 1000, 2000):
        mats.append((f"poisson2d_{side}", dt, pyspmv.generate("poisson2d", side)))
    mats.append(("poisson3d_100", dt, pyspmv.generate("poisson3d", 100)))
    mats.append(("banded_1e6", dt, pyspmv.generate("banded", 1_000_000)))
    mats.append(("random_5e5", dt, pyspmv.generate("random", 500_000)))
    mats.append(("powerlaw_1e6", dt, pyspmv.generate("powerlaw", 1_000_000, seed=1)))
cfgs = [c for c in pyspmv.configs("cuda") if c.format == "jad"]
rows = []
copy = gpu.copy_bandwidth(1 << 30, repeats=20)
for name, dt, M in mats:
    for rep in range(2):
        for rpt in ("1", "2"):
            os.environ["SPMV_PROBE_JAD_RPT"] = rpt
            df = pyspmv.benchmark(M, cfgs, device="cuda", dtype=dt, repeats=100, budget_s=0.2, progress=False)
            df["name"], df["rpt"], df["rep"], df["nrows"], df["nnz"] = name, int(rpt), rep, M.nrows, M.nnz
            rows.append(df)
    d = pd.concat([r for r in rows if r["name"].iloc[0] == name and r["dtype"].iloc[0] == dt])
    bad = d[~d.status.isin(["ok", "not_applicable"])]
    assert bad.empty, bad[["config", "status", "note"]]
    d = d[d.status == "ok"]
    b = d.groupby("rpt").median_ms.min() * 1e3
    c = d.groupby(["config", "rpt"]).median_ms.min().unstack("rpt")
    print(f"{name} {dt} nnz {M.nnz}: best us rpt1 {b[1]:.2f}, rpt2 {b[2]:.2f}: {b[1] / b[2]:.3f}x; per config "
          f"{(c[1] / c[2]).min():.3f}-{(c[1] / c[2]).max():.3f}x over {len(c)}", flush=True)
out = pd.concat(rows)
out["copy_gbs"] = copy
out.to_csv(os.path.join(sys.argv[1], "ab_jad.csv.gz"), index=False)
