"""Cross-validated choice of model hyper-parameters, inside the training matrices of benchmarks/models.py's split.

    python studies/2026-11-23-hyperparameters/tune_boosted.py datasets/h100 float64 '[{}, {"n_estimators": 600, "learning_rate": 0.05}]'

The held-out matrices of benchmarks/models.py (GroupShuffleSplit by matrix, 25 %, seed 0) are never
touched: the training matrices are cut into 3 folds grouped by matrix (GroupKFold), each candidate is
fitted on two and ranked on the third, and the pooled ranking metrics are printed (one JSON line per
candidate): median divergence, share of matrices whose pick is within 5 % of the measured best (ties
within the [q25, q75] noise band count as the best), share beyond 20 %, geomean t_pick / t_best.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import GroupKFold

from pyspmv import datasets
from pyspmv.models import MODELS

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/_common.py
from _common import evaluate, split_by_matrix


def cross_validate(path: str, dtype: str, kind: str, params: dict, n_splits: int = 3) -> dict:
    """Pooled ranking metrics of ``MODELS[kind](**params)`` over grouped folds of the training matrices."""
    ds = datasets.load(path, dtype=dtype)
    g = ds.groups.to_numpy()
    tr, _ = split_by_matrix(g, 0.25, 0)
    X, y, gt = ds.X.iloc[tr].reset_index(drop=True), ds.y.to_numpy()[tr], g[tr]
    q25, q75 = ds.q25.to_numpy()[tr], ds.q75.to_numpy()[tr]
    t0 = time.perf_counter()
    per, pred = [], []
    for a, b in GroupKFold(n_splits=n_splits).split(np.zeros(len(gt)), groups=gt):
        r = evaluate(MODELS[kind](**params), X, y, gt, q25=q25, q75=q75, train_index=a, test_index=b,
                     rank_timing_units=2)
        per.append(r.per_matrix)
        pred.append(r.predictions)
    pm, pr = pd.concat(per), pd.concat(pred)
    div = float((np.abs(pr["pred_ms"] - pr["ms"]) / pr["ms"]).median()) if pr["pred_ms"].notna().any() else np.nan
    return {"params": params, "dtype": dtype, "kind": kind, "div": div, "w5": float((pm["bucket"] == "<5%").mean()),
            "w20": float((pm["bucket"] == ">20%").mean()), "geo": float(np.exp(np.log(pm["ratio"]).mean())),
            "n": len(pm), "s": round(time.perf_counter() - t0)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset")
    ap.add_argument("dtype", choices=["float64", "float32"])
    ap.add_argument("candidates", help="JSON list of parameter dicts")
    ap.add_argument("--kind", default="boosted", choices=list(MODELS))
    a = ap.parse_args()
    for params in json.loads(a.candidates):
        print(json.dumps(cross_validate(a.dataset, a.dtype, a.kind, params)), flush=True)


if __name__ == "__main__":
    main()
