"""The held-out replay of ``rank(verify="auto")`` on a dataset's measured times, shared by
``benchmarks/verify_auto.py`` and the studies that replay it (imported as a sibling module, as ``_timing``).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse

import numpy as np
import pandas as pd
from _internal import base_folds, evaluate_folds, make_model, verify, with_sizes

from pyspmv import datasets

#: The configurations ranked 2 to this whose error on the ratio to the pick is the model's error (Precision.tie_tol).
RANKS = 10


def held_out(args: argparse.Namespace) -> pd.DataFrame:
    """Every configuration's held-out prediction and measured median: unit, config, ms, pred_ms, nnz, real."""
    frames = []
    for dtype in ("float64", "float32"):
        ds = datasets.combine(args.dataset, *args.extra, dtype=dtype)
        ev = evaluate_folds(make_model("forest", device="cuda"), ds.X, ds.y, ds.groups,
                            folds=base_folds(ds.groups, args.cv), q25=ds.q25, q75=ds.q75)
        sizes = with_sizes(ev.per_matrix[["unit"]], ds.features).set_index("unit")
        p = ev.predictions[["unit", "config", "ms", "pred_ms"]].copy()
        p["nnz"] = p["unit"].map(sizes["nnz"])
        p["real"] = p["unit"].map(sizes["real"])
        frames.append(p)
    return pd.concat(frames, ignore_index=True)


def unit_errors(preds: pd.DataFrame) -> dict[str, np.ndarray]:
    """Per unit: |log g_pred - log g_measured| of its configurations ranked 2..RANKS."""
    out = {}
    for u, g in preds.groupby("unit", sort=False):
        g = g[np.isfinite(g["ms"]) & np.isfinite(g["pred_ms"])].sort_values("pred_ms", kind="stable")
        p, m = g["pred_ms"].to_numpy(), g["ms"].to_numpy()
        out[u] = np.abs(np.log(p[1:RANKS] / p[0]) - np.log(m[1:RANKS] / m[0]))
    return out


def median_equivalent(errors: np.ndarray) -> float:
    """The median |x| of the normal x whose mean |x| is that of ``errors`` (mean |x| = sigma sqrt(2 / pi))."""
    return float(np.mean(errors) / np.sqrt(2.0 / np.pi) * verify._MEDIAN_ABS_NORMAL)


def tol_for(nnz: float, table: list[tuple[float, float]]) -> float:
    """The band error of a matrix of ``nnz`` entries from ``[(upper bound, error), ...]``."""
    return next(tol for hi, tol in table if nnz < hi)


def replay(g: pd.DataFrame, n_calls: int | None, k_fixed: int, tol: float) -> tuple[float, int, float]:
    """One unit: (measured ms of the kept configuration, k timed, cost in products of the pick's measured time);
    with ``n_calls`` (``verify="auto"``) among :func:`pyspmv.ranking.verify.auto_candidates` of its ``config``
    column, else (``verify=k``) among the first ``k_fixed``."""
    g = g[np.isfinite(g["ms"]) & np.isfinite(g["pred_ms"])].sort_values("pred_ms", kind="stable")
    if n_calls is not None:
        g = g.iloc[verify.auto_candidates(list(g["config"]))]
    t = g["pred_ms"].to_numpy()[:verify.AUTO_MAX]
    m = g["ms"].to_numpy()
    conv = [verify.device_convert_ms(x) for x in t]
    k = k_fixed if n_calls is None else verify.choose_k(list(t), conv, n_calls, tol)[0]
    if k < 2:
        return float(m[0]), 0, 0.0
    auto = n_calls is not None
    cost = sum(verify.device_convert_ms(x) + verify.verify_runs(x, auto) * x for x in m[:k])
    return float(m[:k].min()), k, cost / m[0]
