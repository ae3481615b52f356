"""DIA's rows a thread, A/B in one process: every DIA configuration on diagonal, 2-D/3-D stencil and banded matrices,
both types, with 1, 2 and 4 rows a thread, twice interleaved (a probe build of kernels/dia.cu read the count from
``SPMV_PROBE_DIA_RPT`` at each launch: ``probe_tree.diff``; not kept), each timed by :func:`pyspmv.benchmark` and
checked against scipy.

Run on the GPU machine with the probe build installed: ``python ab_dia.py OUT_DIR`` (about 80 s); then, anywhere,
``python ab_dia.py --report ab_dia.csv.gz`` writes ``results.md`` beside this script.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/_common.py
import _common  # noqa: F401  (puts benchmarks/ on the path)
from _internal import gpu

import pyspmv

RPTS = ("1", "2", "4")


def matrices() -> list[tuple[str, str, pyspmv.Matrix]]:
    rng = np.random.default_rng(0)

    def diag(mb: float, s: int) -> pyspmv.Matrix:
        n = int(mb * 1e6 / (12 + 2 * s))  # the CSR floor's bytes a row: indptr, index, value, x, y
        return pyspmv.Matrix(sp.diags(rng.uniform(0.5, 1.5, n), format="csr"))

    def pois(side: int) -> pyspmv.Matrix:
        A = pyspmv.generate("poisson2d", side).to_scipy().tocsr()
        A.data = rng.uniform(0.5, 1.5, A.nnz)
        return pyspmv.Matrix(A)

    mats = [(f"diag{mb}", dt, diag(mb, s)) for dt, s in (("float32", 4), ("float64", 8))
            for mb in (9.3, 20, 30, 60, 200)]
    mats += [(f"poisson2d_{side}", dt, pois(side)) for side in (423, 600, 760, 1000, 2000)
             for dt in ("float32", "float64")]
    for dt in ("float32", "float64"):
        mats += [("poisson3d_100", dt, pyspmv.generate("poisson3d", 100)),
                 ("banded_1e6", dt, pyspmv.generate("banded", 1_000_000))]
    return mats


def main(out: Path) -> None:
    cfgs = [pyspmv.config(f"pyspmv/dia/bs={b}") for b in (128, 256, 512, 1024)]
    rows = []
    copy = gpu.copy_bandwidth(1 << 30, repeats=20)
    for name, dt, M in matrices():
        for rep in range(2):
            for rpt in RPTS:
                os.environ["SPMV_PROBE_DIA_RPT"] = rpt
                df = pyspmv.benchmark(M, cfgs, device="cuda", dtype=dt, repeats=100, budget_s=0.2, progress=False)
                df["name"], df["rpt"], df["rep"], df["nrows"], df["nnz"] = name, int(rpt), rep, M.nrows, M.nnz
                rows.append(df)
        d = pd.concat([r for r in rows if r["name"].iloc[0] == name and r["dtype"].iloc[0] == dt])
        assert (d.status == "ok").all(), d[d.status != "ok"][["config", "status", "note"]]
        b = d.groupby("rpt").median_ms.min() * 1e3
        print(f"{name} {dt} nnz {M.nnz}: best us by rpt " + ", ".join(f"{k}: {v:.2f}" for k, v in b.items())
              + f"; rpt4/rpt1 {b[1] / b[4]:.3f}x, rpt2 {b[1] / b[2]:.3f}x", flush=True)
    out_df = pd.concat(rows)
    out_df["copy_gbs"] = copy
    out_df.to_csv(out / "ab_dia.csv.gz", index=False)


def report(csv: Path) -> None:
    d = pd.read_csv(csv)
    best = d.groupby(["name", "dtype", "nnz", "rpt"], sort=False).median_ms.min().unstack("rpt") * 1e3
    per_rep = d.groupby(["name", "dtype", "rpt", "rep"]).median_ms.min().unstack(["rpt", "rep"])
    spread = pd.concat([per_rep[(r, 0)] / per_rep[(r, 1)] for r in (1, 2, 4)])
    per_cfg = d.groupby(["name", "dtype", "config", "rpt"]).median_ms.min().unstack("rpt")
    g2, g4, c2 = best[1] / best[2], best[1] / best[4], per_cfg[1] / per_cfg[2]
    lines = [
        "# DIA's rows a thread on the H200\n",
        f"Every DIA configuration (bs 128-1024) of each matrix and type, with 1, 2 and 4 rows a thread, twice "
        f"interleaved in one process; {int((d.status == 'ok').sum())} timings of 100 products, each checked against "
        f"scipy. Copy bandwidth {d.copy_gbs.iloc[0]:.0f} GB/s.\n",
        f"- Two rows against one, each pair's best DIA configuration: median {g2.median():.3f}x, "
        f"{g2.min():.3f}-{g2.max():.3f}x, geometric mean {np.exp(np.log(g2).mean()):.3f}x over {len(g2)} pairs; "
        f"per configuration {int((c2 > 1).sum())} of {len(c2)} faster ({c2.min():.3f}-{c2.max():.3f}x).",
        f"- Four rows against one: median {g4.median():.3f}x ({g4.min():.3f}-{g4.max():.3f}x).",
        f"- The same mode's two passes, best over the configurations: {spread.min():.3f}-{spread.max():.3f} "
        f"(median {spread.median():.3f}).\n",
        "| matrix | dtype | entries | 1 row, µs | 2 rows, µs | 4 rows, µs | 2 rows' gain | 4 rows' gain |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for (name, dt, nnz), r in best.iterrows():
        lines.append(f"| {name} | {dt} | {nnz:,} | {r[1]:.2f} | {r[2]:.2f} | {r[4]:.2f} | {r[1] / r[2]:.3f}x | "
                     f"{r[1] / r[4]:.3f}x |")
    (Path(__file__).resolve().parent / "results.md").write_text("\n".join(lines) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "--report":
        report(Path(sys.argv[2]))
    else:
        main(Path(sys.argv[1]))
