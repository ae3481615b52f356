"""Whether large real-structured matrices rank better when others like them join the training: the cuda default's
recipe ranking datasets/h100_scaled's matrices, trained with or without the other scaled matrices.

Usage: python studies/2026-11-24-scaled-cv/scaled_cv.py [--folds 4] [--repeats 3] [--out studies/2026-11-24-scaled-cv]

Tests: h100_scaled's 33 matrices (real matrices scaled to 3e6-1.7e7 entries), grouped k-fold by their base matrix
(``_common.recipe``: a scaled matrix is a twin of its base). Training: datasets/h100 (every matrix, not only its
training split: the tests here are none of them) and h100_large, less the test matrices' twins ("without"), plus the
scaled matrices of the other folds ("with"). Both rank the tests by the default's rule (train_default's cuda forest,
near-ties by bytes moved). studies/2026-11-24-more-large (more_large_h100_scaled.md) asked the other question (do the scaled matrices help rank
h100's own matrices: no, within noise); this asks what they do for matrices like themselves. Writes
``scaled_cv.md``.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import GroupKFold

from pyspmv import datasets, device_info

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/_common.py
from _common import make_model, md_header, metrics, paired_diff, ranking, recipe

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folds", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--out", default=str(HERE))
    args = ap.parse_args()
    rows = []
    for dtype in ("float64", "float32"):
        ds = datasets.combine("h100", "h100_large", "h100_scaled", dtype=dtype)
        mat = ds.groups.astype(str).to_numpy()
        rec = np.array([recipe(m, set(mat)) for m in mat])
        scaled = np.isin(mat, datasets.load("h100_scaled", dtype=dtype).groups.astype(str).unique())
        cfg = ds.X["config"].astype(str).to_numpy()
        y, q25, q75 = ds.y.to_numpy(), ds.q25.to_numpy(), ds.q75.to_numpy()
        S = np.flatnonzero(scaled)
        for r in range(args.repeats):
            for k, (_, b) in enumerate(GroupKFold(args.folds, shuffle=True, random_state=r).split(S, groups=rec[S])):
                test = S[b]
                twin = np.isin(rec, np.unique(rec[test]))
                for variant, fit in (("without", np.flatnonzero(~scaled & ~twin)),
                                     ("with", np.flatnonzero(~twin))):
                    model = make_model("forest", r, "cuda").fit(ds.X.iloc[fit], ds.y.iloc[fit], ds.groups.iloc[fit])
                    per = ranking(model.rank_scores(ds.X.iloc[test]), y[test], mat[test], cfg[test], q25[test],
                                  q75[test])
                    per["variant"], per["dtype"], per["repeat"] = variant, dtype, r
                    rows.append(per)
                print(f"{dtype} repeat {r} fold {k} done", flush=True)
    allp = pd.concat(rows, ignore_index=True).rename(columns={"unit": "matrix"})
    cpu = device_info("cpu")
    lines = ["# Large real-structured matrices, ranked with and without others like them in training", "",
             (f"`python studies/2026-11-24-scaled-cv/scaled_cv.py --folds {args.folds} --repeats {args.repeats}`, fitted on the "
              f"{cpu['processor']} dev VM ({cpu['cpu_count']} cores); the script's docstring says what is trained on "
              "what. Cells: picks within 5 % of the measured best (ties within [q25, q75] count as the best) / beyond "
              "20 % / geomean t_pick / t_best, over every test of every repeat. Paired: mean of log(t_pick / t_best) "
              "with minus without, z over its standard error taken over matrices."), "",
             *md_header(["dtype", "without", "with", "paired", "tests"], "llllr")]
    for dtype in ("float64", "float32"):
        g = allp[allp["dtype"] == dtype]
        a, b = (g[g["variant"] == v] for v in ("without", "with"))
        cells = [f"{100 * m[0]:.1f} / {100 * m[1]:.1f} / {m[2]:.4f}" for m in (metrics(a), metrics(b))]
        mean, se = paired_diff(b.set_index(["matrix", "repeat"])["ratio"], a.set_index(["matrix", "repeat"])["ratio"])
        lines.append(f"| {dtype} | {cells[0]} | {cells[1]} | {mean:+.4f} (z {mean / se:+.1f}) | {len(a)} |")
    (Path(args.out) / "scaled_cv.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
