"""The C model forms against scikit-learn estimators directly: regression and per-class trees of
GradientBoosting and HistGradientBoosting (float32 and float64 compares, missing values),
KNeighborsRegressor with weights="distance" (exact matches included), SVR and SVC's decision
function."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pytest
from sklearn.ensemble import (
    GradientBoostingClassifier,
    GradientBoostingRegressor,
    HistGradientBoostingRegressor,
)
from sklearn.neighbors import KNeighborsRegressor
from sklearn.svm import SVC, SVR

from pyspmv import _core
from pyspmv.models._trees import gb_ensembles, tree_fields
from pyspmv.ranking.rankmodel import RankModel, Table
from pyspmv.ranking.spec import KNN_WEIGHTING
from pyspmv.ranking.spec import Spec, head, inputs

D = 5                                     # inputs: design-row columns 0..D-1
TOL = 1e-9


def c_eval(spec_fields: dict, kind: str, X: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ms, raw) of the C core for rows X (n x D) through group 0."""
    spec = Spec(kind, {**head(1, _core.NCOLS, inputs(list(range(D)))), **spec_fields})
    rm = RankModel("cpu", {"float64": Table(["cpu/csr/rows"], np.zeros(1, np.int32), np.zeros((1, 0)), spec)})
    rows = np.zeros((len(X), _core.NCOLS))
    rows[:, :D] = X
    return _core.model_predict(rm.capsule("float64"), rows.reshape(-1), _core.NCOLS, np.zeros(len(X), np.int32))


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, D)) * np.array([1, 10, 0.1, 1e3, 1])
    y = X[:, 0] ** 2 + np.sin(X[:, 1]) + 0.01 * X[:, 3] + rng.normal(0, 0.1, 300)
    Xq = rng.normal(size=(80, D)) * np.array([1, 10, 0.1, 1e3, 1])
    return X, y, Xq


def test_gradient_boosting_regressor(data):
    X, y, Xq = data
    est = GradientBoostingRegressor(n_estimators=40, max_depth=4, random_state=0).fit(X, y)
    f = {"trees.nout": 1, **tree_fields(gb_ensembles(est, D), est.learning_rate, True)}
    ms, _ = c_eval(f, "trees", Xq)
    assert np.array_equal(ms, est.predict(Xq))          # same compares, same order of sums


def test_hist_gradient_boosting_regressor_with_missing_values(data):
    X, y, Xq = data
    X = X.copy()
    X[::7, 1] = np.nan
    est = HistGradientBoostingRegressor(max_iter=30, random_state=0).fit(X, y)
    Xq = Xq.copy()
    Xq[::5, 1] = np.nan
    ens = [([p[0] for p in est._predictors], float(est._baseline_prediction.ravel()[0]))]
    f = {"trees.nout": 1, **tree_fields(ens, 1.0, False)}
    ms, _ = c_eval(f, "trees", Xq)
    assert np.max(np.abs(ms - est.predict(Xq)) / np.abs(est.predict(Xq))) <= TOL


def test_gradient_boosting_classifier_per_class_trees(data):
    X, y, Xq = data
    labels = np.digitize(y, np.quantile(y, [0.33, 0.66]))
    est = GradientBoostingClassifier(n_estimators=20, max_depth=3, random_state=0).fit(X, labels)
    ens = gb_ensembles(est, D)
    f = {"trees.nout": len(ens), **tree_fields(ens, est.learning_rate, True)}
    _, raw = c_eval(f, "trees", Xq)
    assert np.array_equal(raw.reshape(len(Xq), -1), est.decision_function(Xq))


def test_knn_distance_weights_and_exact_matches(data):
    X, y, Xq = data
    Xq = np.vstack([Xq, X[:5]])                         # exact matches of training points
    est = KNeighborsRegressor(n_neighbors=4, weights="distance", algorithm="brute").fit(X, y)
    n = len(X)
    f = {"knn.nsets": 1, "knn.npoints": n, "knn.ntargets": 1, "knn.set_ptr": np.array([0, n], np.int32),
         "knn.points": np.ascontiguousarray(X).reshape(-1), "knn.target": y.astype(np.float64),
         "knn.set": np.zeros(1, np.int32), "knn.k": np.array([4], np.int32), "knn.tcol": np.zeros(1, np.int32),
         "knn.weighting": KNN_WEIGHTING["sklearn"], "knn.dmin": 0.0}
    ms, _ = c_eval(f, "knn", Xq)
    ref = est.predict(Xq)
    assert np.max(np.abs(ms - ref) / np.abs(ref)) <= TOL
    assert np.array_equal(ms[-5:], y[:5])


@pytest.mark.parametrize("cls", [SVR, SVC])
def test_rbf_svm(data, cls):
    X, y, Xq = data
    Xs, Xqs = X / X.std(axis=0), Xq / X.std(axis=0)
    est = cls(C=10.0, gamma=0.3).fit(Xs, y if cls is SVR else (y > np.median(y)).astype(int))
    f = {"svm.nsv": len(est.support_vectors_), "svm.classify": 0, "svm.penalty": 1.0,
         "svm.sv_ptr": np.array([0, len(est.support_vectors_)], np.int32),
         "svm.sv": np.ascontiguousarray(est.support_vectors_).reshape(-1),
         "svm.dual": np.ascontiguousarray(est.dual_coef_[0]), "svm.gamma": np.array([est._gamma]),
         "svm.intercept": np.array([est.intercept_[0]])}
    ms, _ = c_eval(f, "svm", Xqs)
    ref = est.predict(Xqs) if cls is SVR else est.decision_function(Xqs)
    assert np.max(np.abs(ms - ref) / np.maximum(np.abs(ref), 1e-3)) <= TOL
