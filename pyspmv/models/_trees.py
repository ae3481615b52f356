"""Tree ensembles in portable form: scikit-learn's fitted trees as the flat node arrays of the C
``trees`` kind (``csrc/model_trees.c``), shared by the estimators that hold gradient-boosted trees
(:mod:`.boosted`, :mod:`.classifiers`)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.dummy import DummyRegressor


def _gb_init(est: Any, nfeat: int) -> np.ndarray:
    """Raw initial prediction of a fitted GradientBoosting* (per output)."""
    if isinstance(est.init_, DummyRegressor):
        return np.asarray(est.init_.constant_, dtype=np.float64).reshape(-1)[:1]
    if est.init_ == "zero":
        return np.zeros(est.estimators_.shape[1])
    # The constant scikit-learn derives from its initial estimator (priors' log-odds, ...).
    return np.asarray(est._raw_predict_init(np.zeros((1, nfeat), dtype=np.float32)), dtype=np.float64)[0]


def tree_fields(ensembles: list[tuple[list[Any], float]], scale: float, cast_f32: bool) -> dict[str, Any]:
    """Flat node arrays of ensembles, one per (group, output) in order: each ``(trees, init)``.

    ``trees`` are scikit-learn ``Tree`` objects (``tree_``) or HistGradientBoosting predictors."""
    feat, thr, left, right, val, miss, root, ptr, init = [], [], [], [], [], [], [], [0], []
    off = 0
    for trees, i0 in ensembles:
        for t in trees:
            if hasattr(t, "nodes"):                                     # HistGradientBoosting predictor
                nd = t.nodes
                if nd["is_categorical"].any():
                    raise TypeError("HistGradientBoosting trees with categorical splits have no portable form.")
                leaf = nd["is_leaf"].astype(bool)
                f = np.where(leaf, -1, nd["feature_idx"]).astype(np.int32)
                th, v = nd["num_threshold"].astype(np.float64), nd["value"].astype(np.float64)
                lc, rc = nd["left"].astype(np.int64), nd["right"].astype(np.int64)
                m = nd["missing_go_to_left"].astype(np.uint8)
            else:                                                       # sklearn.tree._tree.Tree
                lc, rc = t.children_left.astype(np.int64), t.children_right.astype(np.int64)
                leaf = lc < 0
                f = np.where(leaf, -1, t.feature).astype(np.int32)
                th, v = t.threshold.astype(np.float64), t.value[:, 0, 0].astype(np.float64)
                m = np.asarray(getattr(t, "missing_go_to_left", np.zeros(len(f))), dtype=np.uint8)
            feat.append(f)
            thr.append(th)
            left.append(np.where(leaf, -1, lc + off).astype(np.int32))
            right.append(np.where(leaf, -1, rc + off).astype(np.int32))
            val.append(v)
            miss.append(m)
            root.append(off)
            off += len(f)
        ptr.append(ptr[-1] + len(trees))
        init.append(float(i0))

    def cat(parts: list[np.ndarray], dt: Any) -> np.ndarray:
        return np.ascontiguousarray(np.concatenate(parts) if parts else np.zeros(0), dtype=dt)

    return {"trees.ntrees": len(root), "trees.nnodes": off, "trees.tree_ptr": np.array(ptr, np.int32),
            "trees.root": np.array(root, np.int32), "trees.feature": cat(feat, np.int32),
            "trees.left": cat(left, np.int32), "trees.right": cat(right, np.int32),
            "trees.threshold": cat(thr, np.float64), "trees.value": cat(val, np.float64),
            "trees.missing_left": cat(miss, np.uint8), "trees.init": np.array(init, np.float64),
            "trees.scale": float(scale), "trees.cast_f32": int(cast_f32)}


def gb_ensembles(est: Any, nfeat: int) -> list[tuple[list[Any], float]]:
    """(trees, init) per output of a fitted GradientBoostingRegressor/Classifier."""
    init = _gb_init(est, nfeat)
    K = est.estimators_.shape[1]
    return [([est.estimators_[i, k].tree_ for i in range(est.estimators_.shape[0])], init[k]) for k in range(K)]
