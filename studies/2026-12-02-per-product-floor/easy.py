"""The per-product floor through pyspmv's own timing: the easiest matrices of the floor pairs' sizes (a diagonal and a
2-D Poisson stencil, float32, random values), every ``cuda`` configuration timed by :func:`pyspmv.benchmark` as
``benchmarks/kernels_floor.py`` times them, beside the copy bandwidth of the same run. If the best of them stays
below issue 47's minimum of 0.55 at a CSR floor, no real matrix of that floor is likely to pass it either.

Run on the GPU machine: ``python easy.py OUT_DIR`` (about a minute); writes ``easy.csv.gz`` there. Then, anywhere,
``python easy.py --report easy.csv.gz`` writes ``easy.md`` beside this script.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
import scipy.sparse as sp

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/_common.py
import _common  # noqa: F401  (puts benchmarks/ on the path)
from _internal import gpu

import pyspmv

FLOORS_MB = (9.3, 12.5, 20.0, 30.0)
TARGET_MIN = 0.55


def floor_bytes(M: pyspmv.Matrix, itemsize: int) -> int:
    """CSR's floor, as ``benchmarks/kernels_floor.py`` counts it."""
    return 4 * (M.nrows + 1) + (4 + itemsize) * M.nnz + itemsize * (M.nrows + M.ncols)


def diagonal(mb: float, rng: np.random.Generator) -> pyspmv.Matrix:
    n = int(mb * 1e6 / 20)  # 4 (indptr) + 8 (index, value) + 8 (x, y) bytes a row in float32
    return pyspmv.Matrix(sp.diags(rng.uniform(0.5, 1.5, n), format="csr"))


def stencil(mb: float, rng: np.random.Generator) -> pyspmv.Matrix:
    side = int(np.sqrt(mb * 1e6 / 52))  # 5 entries a row: 4 + 40 + 8 bytes
    A = pyspmv.generate("poisson2d", side).to_scipy().tocsr()
    A.data = rng.uniform(0.5, 1.5, A.nnz)
    return pyspmv.Matrix(A)


def main(out: Path) -> None:
    rng = np.random.default_rng(0)
    cfgs = pyspmv.configs("cuda")
    rows = []
    for kind, make in (("diagonal", diagonal), ("poisson2d", stencil)):
        for mb in FLOORS_MB:
            M = make(mb, rng)
            copy = gpu.copy_bandwidth(1 << 30, repeats=20)
            df = pyspmv.benchmark(M, cfgs, device="cuda", dtype="float32", repeats=100, budget_s=0.2,
                                  progress=False)
            df["kind"], df["floor_bytes"], df["copy_gbs"] = kind, floor_bytes(M, 4), copy
            df["eff_frac"] = df.floor_bytes / (df.median_ms * 1e6) / copy
            rows.append(df)
            ok = df[df.status == "ok"]
            b = ok.loc[ok.median_ms.idxmin()]
            print(f"{kind} {M.nrows} rows, CSR floor {b.floor_bytes / 1e6:.1f} MB: best {b.config} "
                  f"{b.median_ms * 1e3:.2f} us, {b.eff_frac:.3f} of copy ({copy:.0f} GB/s); "
                  f"{len(ok)} configurations ok, {(ok.eff_frac >= TARGET_MIN).sum()} at {TARGET_MIN} or more",
                  flush=True)
    pd.concat(rows).to_csv(out / "easy.csv.gz", index=False)


def report(csv: Path) -> None:
    """``easy.md``: per matrix, the best configuration and the best of cuSPARSE's."""
    df = pd.read_csv(csv)
    ok = df[df.status == "ok"]
    lines = ["| matrix | CSR floor MB | best | µs | fraction of copy | best cuSPARSE | its fraction | "
             f"configurations at {TARGET_MIN} or more |", "|---|---:|---|---:|---:|---|---:|---:|"]
    for (kind, fb), g in ok.groupby(["kind", "floor_bytes"], sort=False):
        b = g.loc[g.median_ms.idxmin()]
        cus = g[g.config.str.startswith("cusparse/")]
        c = cus.loc[cus.median_ms.idxmin()]
        lines.append(f"| {kind} | {fb / 1e6:.1f} | `{b.config}` | {b.median_ms * 1e3:.2f} | {b.eff_frac:.3f} | "
                     f"`{c.config}` | {c.eff_frac:.3f} | {(g.eff_frac >= TARGET_MIN).sum()} of {len(g)} |")
    (Path(__file__).resolve().parent / "easy.md").write_text(
        "# The easiest matrices of the floor pairs' sizes, timed by pyspmv (float32, H200)\n\n"
        f"Copy bandwidth {df.copy_gbs.median():.0f} GB/s (median of the run's measurements); every product checked "
        f"against scipy ({len(ok)} ok, {int((df.status == 'not_applicable').sum())} not applicable).\n\n"
        + "\n".join(lines) + "\n")


if __name__ == "__main__":
    if sys.argv[1] == "--report":
        report(Path(sys.argv[2]))
    else:
        main(Path(sys.argv[1]))
