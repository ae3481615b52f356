"""Matrix features of the literature that pyspmv's C features lack, prototyped in Python for
model_variants.py (beside it): row-length skew and histogram (WISE), warp-level imbalance, and x-access
locality between neighbouring rows and within blocks of rows.

    python studies/2026-11-23-model-variants/literature_features.py DATASET [DATASET ...] [--max-nnz 2e8]

Rebuilds every matrix of the datasets (the real ones from ../shared/matrices and ../shared/corpus, the
generated ones from ``pyspmv.datasets.standard_corpus(seed=0)``) and writes their features to
``studies/2026-11-23-model-variants/literature_features.csv.gz`` (one row per matrix; kept rows of earlier runs).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import itertools
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pandas as pd

import pyspmv
from pyspmv import datasets

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
CACHE = HERE / "literature_features.csv.gz"
#: Row-length histogram bins (lower edges, in entries): 0, 1, 2-3, 4-7, ... 512-1023, >= 1024.
BINS = (0, 1, 2, 4, 8, 16, 32, 64, 128, 512, 1024)
#: Rows per block for the block locality feature (a 256-thread block, a row per thread).
BLOCK = 256
#: Columns per 128-byte segment of x in float64.
SEGMENT = 16


def literature_features(indptr: np.ndarray, indices: np.ndarray, ncols: int) -> dict[str, float]:
    """The prototype features of one CSR matrix (sorted column indices), by name."""
    rl = np.diff(indptr).astype(np.float64)
    n, nnz = len(rl), float(indptr[-1])
    mu, sd = rl.mean(), rl.std()
    out: dict[str, float] = {"rl_skew": float(((rl - mu) ** 3).mean() / sd ** 3) if sd > 0 else 0.0}
    srt = np.sort(rl)
    out["rl_gini"] = float(1 - 2 * np.sum(np.cumsum(srt)) / (n * srt.sum()) + 1 / n) if srt.sum() > 0 else 0.0
    edges = (*BINS, np.inf)
    for lo, hi in itertools.pairwise(edges):
        out[f"rl_hist_{lo}"] = float(((rl >= lo) & (rl < hi)).mean())
    out["nnz_in_rows_ge32"] = float(rl[rl >= 32].sum() / max(nnz, 1))
    pad = np.zeros(-n % 32)
    chunks = np.concatenate([rl, pad]).reshape(-1, 32)
    mx = chunks.max(axis=1)
    out["warp_fill"] = float(32 * mx.sum() / max(nnz, 1))
    means = chunks.mean(axis=1)
    ok = means > 0
    out["warp_imbalance"] = float(np.mean(mx[ok] / means[ok])) if ok.any() else 1.0
    rows = np.repeat(np.arange(n, dtype=np.int64), np.diff(indptr))
    key = rows * ncols + indices.astype(np.int64)
    prev = key - ncols                                       # the same column one row up
    pos = np.minimum(np.searchsorted(key, prev), len(key) - 1)
    out["adj_row_reuse"] = float(np.mean(key[pos] == prev)) if len(key) else 0.0
    seg = (rows // BLOCK) * (ncols // SEGMENT + 1) + indices.astype(np.int64) // SEGMENT
    out["x_seg_block"] = float(len(np.unique(seg)) / max(nnz, 1))
    cl = np.bincount(indices, minlength=ncols).astype(np.float64)
    out["cl_cov"] = float(cl.std() / cl.mean()) if cl.mean() > 0 else 0.0
    out["cl_max_ratio"] = float(cl.max() / cl.mean()) if cl.mean() > 0 else 0.0
    return out


def names() -> tuple[str, ...]:
    """The prototype features' names, in order."""
    return tuple(literature_features(np.array([0, 1]), np.array([0], dtype=np.int32), 1))


def matrices(wanted: set[str], max_nnz: float) -> Iterator[tuple[str, pyspmv.Matrix]]:
    """(name, matrix) of every wanted matrix that can be rebuilt here."""
    for d in ("matrices", "corpus"):
        for base in (ROOT.parent / "shared" / d, ROOT.parents[1] / "shared" / d):
            if base.is_dir():
                for f in sorted(base.glob("*.mtx*")):
                    name = f.name.split(".")[0]
                    if name in wanted:
                        wanted.discard(name)
                        yield name, pyspmv.load(f)
                break
    for e in datasets.standard_corpus(max_nnz=max_nnz, seed=0):
        if e.name in wanted:
            wanted.discard(e.name)
            yield e.name, e.build()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets", nargs="+")
    ap.add_argument("--max-nnz", type=float, default=2e8)
    ap.add_argument("--out", default=str(CACHE))
    a = ap.parse_args()
    out = Path(a.out)
    old = pd.read_csv(out) if out.is_file() else pd.DataFrame(columns=["matrix"])
    wanted = set()
    for d in a.datasets:
        wanted |= set(datasets.load(d, dtype=None).features["matrix"].astype(str))
    wanted -= set(old["matrix"].astype(str))
    rows, t0 = [], time.perf_counter()
    for i, (name, M) in enumerate(matrices(set(wanted), a.max_nnz)):
        rows.append({"matrix": name, **literature_features(M.indptr, M.indices, M.ncols)})
        print(f"{i + 1}/{len(wanted)} {name} nnz={M.nnz} {time.perf_counter() - t0:.0f}s", file=sys.stderr, flush=True)
        if len(rows) % 25 == 0:
            pd.concat([old, pd.DataFrame(rows)]).to_csv(out, index=False)
    table = pd.concat([old, pd.DataFrame(rows)]).sort_values("matrix")
    table.to_csv(out, index=False)
    missing = wanted - set(table["matrix"])
    print(f"{len(table)} matrices in {out}; not rebuilt here: {len(missing)}", file=sys.stderr)


if __name__ == "__main__":
    main()
