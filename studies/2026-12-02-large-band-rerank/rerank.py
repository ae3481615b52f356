"""A second stage for matrices of 1e6 entries and more: re-rank the forest's first K by a model of their slowdowns.

    python studies/2026-12-02-large-band-rerank/rerank.py

The H200 default's forest puts a configuration within 5 % of the best among its first 8 for 96 % of the held-out
matrices of 1e6 entries and more, but first for only 67-74 % (``studies/2026-11-30-large-band``). Can a second model,
trained only on larger matrices, pick better among those K? Every matrix of the H200 default's data is held out once
(``benchmarks/default_quality.py --cv 5``'s grouped folds). In each outer fold the cuda recipe's forest is fitted on
the training matrices, and out-of-fold on them too (grouped 4-fold inside), so that the second stage learns from
rankings of matrices the forest did not see. Its rows: each training matrix of at least ``LO`` entries, its forest's
first K configurations; its inputs the place in the ranking, the log ratio of the score to the first's and of the bytes
moved to the first's, the configuration's parameters, its kernel (one-hot) and the matrix's features (log1p); its
target the log slowdown against the matrix's best. scikit-learn's HistGradientBoostingRegressor; on a held-out matrix
of 1e6 entries or more it picks the candidate of least predicted slowdown. Scored strictly (t / t_best <= 1.05,
without the tie rule of default_quality.py). Writes ``rerank.md`` beside this file.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.ensemble import HistGradientBoostingRegressor

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "benchmarks"))
from _internal import base_folds, bytes_per_value, make_model, training_data
from _md import md_header, write_report

import pyspmv
from pyspmv import FEATURE_NAMES, datasets

PARAMS = ["p_tpv", "p_bs", "p_c", "p_sigma", "p_h", "p_bits", "p_b"]
#: (K candidates, fewest entries of a training matrix of the second stage)
VARIANTS = ((8, 3e5), (8, 1e5), (4, 3e5), (3, 1e6))


def kernel(cid: str) -> str:
    """A configuration's kernel, a locality order kept apart (``pyspmv/csr/adaptive/order=1``)."""
    c = pyspmv.config(cid)
    return c.kernel_id + ("/order=1" if c.params.get("order") else "")


def candidates(ds: datasets.Dataset, rows: np.ndarray, score: np.ndarray, k: int, nnz_min: float) -> pd.DataFrame:
    """The first ``k`` configurations by ``score`` of each matrix of ``rows`` with at least ``nnz_min`` entries."""
    X = ds.X.iloc[rows]
    df = pd.DataFrame({"m": ds.groups.to_numpy()[rows], "score": score, "t": ds.y.to_numpy()[rows],
                       "cfg": X["config"].to_numpy(), "bpv": bytes_per_value(X), "nnz": X["nnz"].to_numpy(),
                       **{p: X[p].to_numpy() for p in PARAMS}})
    df["tbest"] = df.groupby("m")["t"].transform("min")
    df = df[df["nnz"] >= nnz_min].sort_values(["m", "score"])
    df["rk"] = df.groupby("m").cumcount()
    df = df[df["rk"] < k].copy()
    df["ls"] = np.log(df["score"] / df.groupby("m")["score"].transform("first"))
    df["lb"] = np.log(df["bpv"] / df.groupby("m")["bpv"].transform("first"))
    df["kern"] = df["cfg"].map(kernel)
    return df


def inputs(df: pd.DataFrame, feats: pd.DataFrame, kerns: list[str]) -> np.ndarray:
    onehot = np.stack([(df["kern"] == k).to_numpy() for k in kerns], axis=1).astype(float)
    return np.hstack([df[["rk", "ls", "lb"]].to_numpy(), df[PARAMS].fillna(-1).to_numpy(), onehot,
                      np.log1p(np.abs(feats.loc[df["m"]].to_numpy()))])


def scores(r: np.ndarray) -> str:
    return (f"{100 * (r <= 1.05).mean():.1f} % | {100 * (r > 1.2).mean():.1f} % | "
            f"{np.exp(np.log(r).mean()):.3f}")


def main() -> None:
    lines = []
    for dtype in ("float64", "float32"):
        ds = datasets.combine(*training_data("h200"), dtype=dtype)
        feats = ds.features.drop_duplicates("matrix").set_index("matrix")[list(FEATURE_NAMES)]
        kerns = sorted({kernel(c) for c in ds.X["config"].unique()})
        fitted = []                                  # per outer fold: (train rows, oof scores, test rows, scores)
        for tr, te in base_folds(ds.groups, 5):
            oof = np.full(len(tr), np.nan)
            for itr, ite in base_folds(ds.groups.iloc[tr], 4):
                m = make_model("forest", device="cuda").fit(ds.X.iloc[tr[itr]], ds.y.iloc[tr[itr]],
                                                            ds.groups.iloc[tr[itr]])
                oof[ite] = m.rank_scores(ds.X.iloc[tr[ite]])
            m = make_model("forest", device="cuda").fit(ds.X.iloc[tr], ds.y.iloc[tr], ds.groups.iloc[tr])
            fitted.append((tr, oof, te, m.rank_scores(ds.X.iloc[te])))
        for k, lo in VARIANTS:
            res = []
            for tr, oof, te, ste in fitted:
                ctr, cte = candidates(ds, tr, oof, k, lo), candidates(ds, te, ste, k, 1e6)
                hgb = HistGradientBoostingRegressor(max_iter=300, learning_rate=0.05, max_leaf_nodes=15,
                                                    min_samples_leaf=20, random_state=0)
                hgb.fit(inputs(ctr, feats, kerns), np.log(ctr["t"] / ctr["tbest"]))
                cte["pred"] = hgb.predict(inputs(cte, feats, kerns))
                for _, g in cte.groupby("m"):
                    best = g["tbest"].iloc[0]
                    res.append((g["t"].iloc[0] / best, g.loc[g["pred"].idxmin(), "t"] / best, g["t"].min() / best))
            r = np.array(res)
            lines += [f"| {dtype} | {k} | {lo:g} | {what} | {scores(r[:, i])} | {len(r)} |"
                      for i, what in enumerate(("the forest's first", "the second stage's pick",
                                                f"the best of the first {k} (measured)"))]
            print(dtype, k, lo, flush=True)
    write_report(HERE / "rerank.md", "A second stage at 1e6 entries and more: re-ranking the forest's first K", [
        "Held-out matrices of 1e6 entries and more, scored strictly (t_pick / t_best).", "",
        *md_header(["dtype", "K", "second stage trained from (entries)", "choice", "within 5 %", "beyond 20 %",
                    "geomean", "n"], "lrrlrrrr"), *lines])


if __name__ == "__main__":
    main()
