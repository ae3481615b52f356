"""Why the H200 default's picks at 1e6 entries and more stay at 70-80 % within 5 %, and what more data buys.

    python studies/2026-11-30-large-band/large_band.py

Every matrix of the H200 data the shipped default is trained on (``pyspmv.ranking.targets.training_data('h200')``:
``h200``, ``h200_scaled_seed1``, ``h200_scaled`` and, since 2026-11-30, ``h200_scaled_seed4`` and ``h200_generated``)
is held out once, grouped 5-fold over base matrices (``benchmarks/default_quality.py --cv 5``'s folds), and ranked by
the cuda recipe's forest (``make_model('forest', device='cuda')``). Four questions:

1. **More data or not**: the same folds, the forest trained without the two collections of 2026-11-30 (the recipe
   before) and with them (the recipe after), each band scored on the same held-out matrices.
2. **A learning curve at scale**: the forest trained with a share (0 to 1, three draws each below 1) of the base
   matrices that have a scaled or generated copy of 1e6 entries or more, every smaller matrix kept; scored on the
   held-out matrices of 1e6 entries or more.
3. **How narrow the target is**: per matrix and value type, how many of the 234 configurations are within 5 % of the
   measured best, and of how many kernels (a kernel: an id without its parameters).
4. **Where the picks go wrong** at 1e6 entries or more: the model's pick; the best measured configuration of the
   pick's kernel (the kernel right, its parameters measured); the model's own choice of parameters within the
   measured best kernel (the kernel told, the parameters the model's); the fastest of the model's first k measured
   (what ``rank(verify=k)`` can reach).
5. **The recipe's settings**: one parameter of the forest changed at a time (:data:`VARIANTS`), the bands of issue 48.

Writes ``large_band.md`` beside this file.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "benchmarks"))
from _internal import (SIZE_BANDS, base_folds, base_matrix, column_for, evaluate_folds, in_band,  # noqa: E402
                       make_model, training_data, with_sizes)
from _md import md_header, summary, write_report  # noqa: E402

import pyspmv  # noqa: E402
from pyspmv import datasets  # noqa: E402

DATA = training_data("h200")
NEW = ("h200_scaled_seed4", "h200_generated")  # the collections of 2026-11-30
BEFORE = tuple(d for d in DATA if d not in NEW)
LARGE = 1e6
SHARES = (0.0, 0.25, 0.5, 0.75, 1.0)
TOP_K = (1, 3, 5, 10)
#: One setting of the recipe's forest changed at a time (its defaults: ``ForestModel``'s, ``bytes_prior`` 0.05).
VARIANTS = ({"min_samples_leaf": 1}, {"min_samples_leaf": 3}, {"temperature": 0.05}, {"temperature": 0.2},
            {"max_features": 0.3}, {"max_features": 0.8}, {"tie_tol": 0.02}, {"clip": 1.0}, {"bytes_prior": 0.1})


def held_out(ds: datasets.Dataset, keep: np.ndarray | None = None, predictions: bool = False,
             **params: object) -> pd.DataFrame:
    """Per held-out unit scores over base_folds(5) (``keep``: the rows a fold may train on; ``params`` set on the
    forest), or the predictions."""
    folds = [(tr if keep is None else tr[keep[tr]], te) for tr, te in base_folds(ds.groups, 5)]
    ev = evaluate_folds(make_model("forest", device="cuda").set_params(**params), ds.X, ds.y, ds.groups, q25=ds.q25,
                        q75=ds.q75, convert_ms=column_for(ds, "convert_ms"), folds=folds)
    return ev.predictions if predictions else with_sizes(ev.per_matrix, ds.features)


def kernel(config: pd.Series) -> pd.Series:
    """Each configuration's kernel (:attr:`pyspmv.Config.kernel_id`: ``pyspmv/csr/vector`` of its thread mappings)."""
    ids = {c: pyspmv.config(c).kernel_id for c in config.unique()}
    return config.map(ids)


def more_data(ds: datasets.Dataset, dtype: str) -> list[str]:
    groups = np.asarray(ds.groups)
    before = np.isin(groups, list(set(datasets.combine(*BEFORE, dtype=dtype).groups)))
    lines = []
    for label, keep in (("before (without the 2026-11-30 data)", before), ("after (with it: the shipped recipe)", None)):
        per = held_out(ds, keep)
        for band in SIZE_BANDS:
            lines.append(f"| {dtype} | {label} | {band[0]} | {summary(per[in_band(per, band)])} |")
        new = per["matrix"].isin(set(groups[~before]))
        lines.append(f"| {dtype} | {label} | ≥ 1e6, the 2026-11-30 matrices only | "
                     f"{summary(per[new & (per['nnz'] >= LARGE)])} |")
    return lines


def learning_curve(ds: datasets.Dataset, dtype: str) -> list[str]:
    groups = pd.Series(np.asarray(ds.groups))
    nnz = ds.X["nnz"].to_numpy()
    bases = groups.map(base_matrix).to_numpy()
    large = nnz >= LARGE
    large_bases = np.unique(bases[large])
    lines = []
    for share in SHARES:
        scores = []
        for draw in range(3 if 0 < share < 1 else 1):
            rng = np.random.default_rng(draw)
            kept = rng.choice(large_bases, int(round(share * len(large_bases))), replace=False)
            per = held_out(ds, ~large | np.isin(bases, kept))
            scores.append(per[per["nnz"] >= LARGE])
        cells = [summary(s).split(" | ") for s in scores]
        within = [float(c[0].rstrip(" %")) for c in cells]
        beyond = [float(c[1].rstrip(" %")) for c in cells]
        lines.append(f"| {dtype} | {share:.2f} ({int(round(share * len(large_bases)))} of {len(large_bases)}) | "
                     f"{np.mean(within):.1f} % ({min(within):.1f}-{max(within):.1f}) | {np.mean(beyond):.1f} % | "
                     f"{len(scores[0])} |")
    return lines


def narrowness(ds: datasets.Dataset, dtype: str) -> list[str]:
    t = ds.table[(ds.table["status"] == "ok") & (ds.table["dtype"] == dtype)].copy()
    t["r"] = t["median_ms"] / t.groupby("matrix")["median_ms"].transform("min")
    near = t[t["r"] <= 1.05]
    n = near.groupby("matrix").size()
    k = near.assign(k=kernel(near["config"])).groupby("matrix")["k"].nunique()
    nnz = ds.features.drop_duplicates("matrix").set_index("matrix")["nnz"]
    lines = []
    for label, lo, hi in (("< 1e5", 0, 1e5), ("1e5 to 1e6", 1e5, 1e6), ("≥ 1e6", 1e6, np.inf)):
        m = nnz[(nnz >= lo) & (nnz < hi)].index.intersection(n.index)
        lines.append(f"| {dtype} | {label} | {len(m)} | {n[m].median():.0f} | {n[m].quantile(0.1):.0f} | "
                     f"{k[m].median():.0f} | {100 * (k[m] == 1).mean():.0f} % |")
    return lines


def decomposition(ds: datasets.Dataset, dtype: str) -> list[str]:
    p = held_out(ds, predictions=True).dropna(subset=["ms"])
    nnz = ds.features.drop_duplicates("matrix").set_index("matrix")["nnz"]
    p = p[p["unit"].str.rsplit("@", n=1).str[0].map(nnz) >= LARGE].copy()
    p["kernel"] = kernel(p["config"])
    rows: dict[str, list[float]] = {}
    for _, g in p.groupby("unit"):
        best = g["ms"].min()
        pick = g.loc[g["score"].idxmin()]
        in_best = g[g["kernel"] == g.loc[g["ms"].idxmin(), "kernel"]]
        order = g.sort_values("score")["ms"].to_numpy()
        for label, t in (("the model's pick", pick["ms"]),
                         ("the pick's kernel, its best parameters", g[g["kernel"] == pick["kernel"]]["ms"].min()),
                         ("the best kernel, the model's parameters", in_best.loc[in_best["score"].idxmin(), "ms"]),
                         *((f"the fastest of the model's first {k}, measured", order[:k].min()) for k in TOP_K[1:])):
            rows.setdefault(label, []).append(t / best)
    lines = []
    for label, r in rows.items():
        r = np.asarray(r)
        lines.append(f"| {dtype} | {label} | {100 * np.mean(r <= 1.05):.1f} % | {100 * np.mean(r > 1.2):.1f} % | "
                     f"{np.exp(np.log(r).mean()):.3f} | {len(r)} |")
    return lines


def settings(ds: datasets.Dataset, dtype: str) -> list[str]:
    lines = []
    for v in ({}, *VARIANTS):
        per = held_out(ds, **v)
        name = ", ".join(f"{k}={x}" for k, x in v.items()) or "the recipe"
        lines += [f"| {dtype} | {name} | {band[0]} | {summary(per[in_band(per, band)])} |" for band in SIZE_BANDS[:2]]
    return lines


def main() -> None:
    sections = {"more": [], "curve": [], "narrow": [], "parts": [], "settings": []}
    for dtype in ("float64", "float32"):
        ds = datasets.combine(*DATA, dtype=dtype)
        sections["more"] += more_data(ds, dtype)
        sections["curve"] += learning_curve(ds, dtype)
        sections["narrow"] += narrowness(ds, dtype)
        sections["parts"] += decomposition(ds, dtype)
        sections["settings"] += settings(ds, dtype)
        print(dtype, "done", flush=True)
    text = [__doc__.split("\n\n", 2)[2].split("\n\nWrites")[0], "",
            "## 1. Before and after the data of 2026-11-30 (same folds, same held-out matrices)", "",
            *md_header(["dtype", "trained", "band", "within 5 %", "beyond 20 %", "geomean", "n"], "lllrrrr"),
            *sections["more"], "",
            "## 2. Learning curve at 1e6 entries and more", "",
            "Share of the base matrices with a copy of 1e6 entries or more whose large copies the forest trains on "
            "(the held-out folds' excluded as always); mean of the draws (range).", "",
            *md_header(["dtype", "share of large bases", "within 5 %", "beyond 20 %", "n"], "llrrr"),
            *sections["curve"], "",
            "## 3. How many configurations are within 5 % of the best", "",
            *md_header(["dtype", "entries", "matrices", "configurations within 5 % (median)", "(10th percentile)",
                        "kernels among them (median)", "one kernel only"], "llrrrrr"),
            *sections["narrow"], "",
            "## 4. Where the picks at 1e6 entries and more go wrong", "",
            "Within 5 % here is t ≤ 1.05 t_best, without the tables' rule that counts a pick whose [q25, q75] overlaps "
            "the best's as the best (so the model's pick scores a little lower than in section 1).", "",
            *md_header(["dtype", "choice", "within 5 %", "beyond 20 %", "geomean", "n"], "llrrrr"),
            *sections["parts"], "",
            "## 5. The recipe's settings, one at a time", "",
            *md_header(["dtype", "forest", "band", "within 5 %", "beyond 20 %", "geomean", "n"], "lllrrrr"),
            *sections["settings"]]
    write_report(HERE / "large_band.md", "The H200 default at 1e6 entries and more: data, narrowness, errors", text)


if __name__ == "__main__":
    main()
