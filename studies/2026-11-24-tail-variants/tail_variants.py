"""The cuda default's tail (picks beyond 20 % of the best, most of them on matrices of millions of entries): whether a
larger forest, smaller leaves, a forest of its own for large matrices, or picks kept to well-supported configurations
shrink it. Cross-validation inside the training matrices only, as 2026-11-24-more-large's part 1.

Usage: python studies/2026-11-24-tail-variants/tail_variants.py [--folds 4] [--repeats 5] [--out studies/2026-11-24-tail-variants]

Pool: the training side of datasets/h100's split (by matrix, seed 0) and datasets/h100_large; grouped k-fold over it
(twins in one fold, ``_common.recipe``), ``--repeats`` shuffles; every variant ranks the same test matrices
with forests of the same seeds. Variants (train_default's forest unless said):

- ``default``: the shipped recipe;
- ``trees N``, ``min_samples_leaf 1``, ``max_features 0.8``: that parameter changed;
- ``large own forest >= L``: test matrices of at least 1e6 entries ranked by a forest fitted on the training matrices
  of at least L entries only (the rest by the default);
- ``support >= K``: the default's picks kept to configurations within 5 % of the best on at least K training matrices;
- ``listwise + T trees``: the mean of the scores of the default forest and one whose trees split on target T (both
  hold mean slowdowns in their leaves, so this is one forest of both kinds of trees), ``16 each`` with half the trees.

Writes ``tail_variants.md`` (picks within 5 % of the best, ties in [q25, q75] counting as the best; beyond 20 %;
geomean t_pick / t_best; all tests and those of at least 3e6 entries; the paired difference against ``default``)
and ``tail_variants.csv.gz`` (one row per test).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from pyspmv import datasets, device_info

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/_common.py
from _common import LARGE, make_model, md_header, metrics, paired_diff, pool_of, ranking, recipe, repeated_folds

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
OWN_FOREST_FROM = 1e6  # test matrices from this many entries get the large matrices' own forest
#: name -> (forests whose scores are averaged, by their parameters; smallest training matrix of the large forest;
#: least support)
VARIANTS: dict[str, tuple[list[dict[str, object]], float, int]] = {
    "default": ([{}], 0, 0),
    "trees 64": ([{"n_estimators": 64}], 0, 0),
    "trees 128": ([{"n_estimators": 128}], 0, 0),
    "min_samples_leaf 1": ([{"min_samples_leaf": 1}], 0, 0),
    "max_features 0.8": ([{"max_features": 0.8}], 0, 0),
    "large own forest >= 1e5": ([{}], 1e5, 0),
    "large own forest >= 1e6": ([{}], 1e6, 0),
    "support >= 3": ([{}], 0, 3),
    "support >= 10": ([{}], 0, 10),
    "listwise + pairwise trees": ([{}, {"target": "pairwise"}], 0, 0),
    "listwise + best trees": ([{}, {"target": "best"}], 0, 0),
    "listwise + pairwise trees, 16 each": ([{"n_estimators": 16}, {"n_estimators": 16, "target": "pairwise"}], 0, 0),
}


def scores(ds: datasets.Dataset, fit: np.ndarray, test: np.ndarray, seed: int, params: dict[str, object]) -> np.ndarray:
    model = make_model("forest", seed).set_params(**params)
    model.fit(ds.X.iloc[fit], ds.y.iloc[fit], ds.groups.iloc[fit])
    return np.asarray(model.rank_scores(ds.X.iloc[test]), dtype=np.float64)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--folds", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(HERE))
    args = ap.parse_args()
    rows = []
    t0 = time.perf_counter()
    for dtype in ("float64", "float32"):
        own = datasets.load("h100", dtype=dtype)
        ds = datasets.combine("h100", "h100_large", dtype=dtype)
        mat = ds.groups.astype(str).to_numpy()
        nnz_of = ds.features.set_index("matrix")["nnz"]
        nnz = nnz_of.reindex(mat).to_numpy()
        rec = np.array([recipe(m, set(mat)) for m in mat])
        cfg = ds.X["config"].astype(str).to_numpy()
        y, q25, q75 = ds.y.to_numpy(), ds.q25.to_numpy(), ds.q75.to_numpy()
        near = y <= 1.05 * pd.Series(y).groupby(mat).transform("min").to_numpy()
        pool, _ = pool_of(own, ds)
        for r, k, fit, test in repeated_folds(pool, rec, args.folds, args.repeats):
            fitted: dict[str, np.ndarray] = {}  # each forest of the fold fitted once, by its parameters
            support = pd.Series(near[fit]).groupby(cfg[fit]).sum()
            for name, (forests, large_from, least) in VARIANTS.items():
                keys = [repr(sorted(p.items())) for p in forests]
                for key, p in zip(keys, forests, strict=True):
                    if key not in fitted:
                        fitted[key] = scores(ds, fit, test, r, p)
                s = np.mean([fitted[key] for key in keys], axis=0)
                if large_from:
                    big = nnz[test] >= OWN_FOREST_FROM
                    s = s.copy()
                    s[big] = scores(ds, fit[nnz[fit] >= large_from], test[big], r, {})
                if least:
                    s = np.where(np.isin(cfg[test], support.index[support >= least]), s, np.inf)
                per = ranking(s, y[test], mat[test], cfg[test], q25[test], q75[test])
                per["nnz"] = per["unit"].map(nnz_of).to_numpy()
                per["variant"], per["dtype"], per["repeat"] = name, dtype, r
                rows.append(per)
            if k == args.folds - 1:
                print(f"{dtype} repeat {r} done at {time.perf_counter() - t0:.0f} s", flush=True)
    allp = pd.concat(rows, ignore_index=True).rename(columns={"unit": "matrix"})
    out = Path(args.out)
    allp.to_csv(out / "tail_variants.csv.gz", index=False, compression={"method": "gzip", "mtime": 0})
    cpu = device_info("cpu")
    lines = ["# The cuda default's tail: forest variants under cross-validation", "",
             (f"`python studies/2026-11-24-tail-variants/tail_variants.py --folds {args.folds} --repeats {args.repeats}`, fitted on the "
              f"{cpu['processor']} dev VM ({cpu['cpu_count']} cores). Pool: the training side of `h100`'s split (by "
              f"matrix, seed 0) and `h100_large`; grouped {args.folds}-fold over it, twins in one fold, "
              f"{args.repeats} repeats, every variant on the same folds and seeds (the script's docstring says what "
              "each variant is). Cells: picks within 5 % of the measured best (ties within [q25, q75] count as the "
              "best) / beyond 20 % / geomean t_pick / t_best; large: tests of at least "
              f"{LARGE:.0e} entries. Paired: mean of log(t_pick / t_best) minus the default's on the same tests, and "
              "that over its standard error taken over matrices (|z| < 2: within the cross-validation's noise)."), "",
             *md_header(["variant", "float64 all", "float64 large", "float64 paired", "float32 all", "float32 large",
                         "float32 paired"], "lllllll")]
    better = set(VARIANTS) - {"default"}  # fewer large tests beyond 20 % than the default in both value types
    for name in VARIANTS:
        cells = []
        for dtype in ("float64", "float32"):
            g = allp[(allp["dtype"] == dtype) & (allp["variant"] == name)]
            d0 = allp[(allp["dtype"] == dtype) & (allp["variant"] == "default")]
            for sub in (g, g[g["nnz"] >= LARGE]):
                w, b, gm = metrics(sub)
                cells.append(f"{100 * w:.1f} / {100 * b:.2f} / {gm:.4f}")
            mean, se = paired_diff(g.set_index(["matrix", "repeat"])["ratio"],
                                   d0.set_index(["matrix", "repeat"])["ratio"])
            cells.append("–" if name == "default" else "the same picks" if se == 0 else
                         f"{mean:+.4f} (z {mean / se:+.1f})")
            if name != "default" and b >= metrics(d0[d0["nnz"] >= LARGE])[1]:
                better.discard(name)
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    n = allp[allp["variant"] == "default"].groupby("dtype").size()
    lines += ["", (f"Tests per variant: float64 {n.get('float64', 0)}, float32 {n.get('float32', 0)} "
                   f"({args.repeats} repeats of every pool matrix)."),
              "", "Variants with fewer large tests beyond 20 % than the default in both value types: "
              + (", ".join(f"`{v}`" for v in VARIANTS if v in better) or "none") + "."]
    (out / "tail_variants.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
