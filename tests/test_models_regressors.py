"""Regressors on data with a known relation: planted coefficients, the training neighbour, exact trees."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pytest
from modeldata import cpu_frame, planted_frame

from pyspmv.models import BoostedModel, KNNModel, LinearModel


@pytest.mark.parametrize("select", [True, False])
def test_linear_recovers_planted_coefficients(select):
    d = planted_frame()
    m = LinearModel(select=select).fit(d.X, d.y, groups=d.groups)
    names = list(m.feature_names_)
    # planted per configuration j (in planted_frame's order): b0 = -6 + 0.1 j, 0.9 log1p(nnz), 0.2 j log1p(nnz_max)
    order = list(dict.fromkeys(d.X["config"]))
    for j, cid in enumerate(order):
        key = m.groups_[np.flatnonzero([cid.startswith(g.split("@")[0]) for g in m.groups_])[0]]
        i = list(m.groups_).index(key)
        assert m.coef_[i, names.index("nnz")] == pytest.approx(0.9, abs=1e-8)
        assert m.coef_[i, names.index("nnz_max")] == pytest.approx(0.2 * j, abs=1e-8)
        assert m.intercept_[i] == pytest.approx(-6 + 0.1 * j, abs=1e-7)
    np.testing.assert_allclose(m.predict(d.X), d.y, rtol=1e-9)


def test_linear_selection_keeps_what_matters():
    d = planted_frame()
    m = LinearModel().fit(d.X, d.y, groups=d.groups)
    assert "nnz" in m.selected_["csr"] and "nnz_max" in m.selected_["csr"]


def test_linear_fits_every_format_of_a_measured_table():
    d = cpu_frame()
    m = LinearModel().fit(d.X, d.y, groups=d.groups)
    assert set(m.selected_) == set(d.X["format"])
    assert m.coef_.shape == (len(m.groups_), len(m.feature_names_))


def test_knn_k1_returns_training_neighbour():
    d = cpu_frame()
    g = d.groups.to_numpy()
    names = list(dict.fromkeys(g))
    train = np.isin(g, names[: len(names) // 2])
    m = KNNModel(k=1, k_by_format={}, learn_weights=False).fit(d.X[train], d.y[train], groups=d.groups[train])
    # a training matrix predicts its own times
    np.testing.assert_allclose(m.predict(d.X[train]), d.y[train], rtol=1e-12)
    # a test matrix predicts the time of its nearest training matrix (by the model's own scaled distance)
    test = d.X[~train].reset_index(drop=True)
    q = test["config"] == test["config"].iloc[0]
    row = test[q].iloc[[0]]
    Zq = m._scale(row)[0]
    dist = np.sqrt(((m.Z_ - Zq) ** 2) @ m.weights_)
    col = list(m.groups_).index(row["config"].iloc[0] + "@f64")
    measured = np.isfinite(m.T_[:, col])
    nearest = np.flatnonzero(measured)[np.argmin(dist[measured])]
    assert m.predict(row)[0] == pytest.approx(np.exp(m.T_[nearest, col]), rel=1e-12)


def test_knn_k_per_format_and_weights():
    d = cpu_frame()
    m = KNNModel(n_passes=1).fit(d.X, d.y, groups=d.groups)
    ks = dict(zip(m.groups_, m.k_, strict=True))
    assert ks["cpu/sell/c=8/sigma=64@f64"] == 2 and ks["cpu/csr/rows@f64"] == 4
    assert m.weights_.shape == (33,) and m.weights_.any()
    assert np.all((m.Z_ >= 0) & (m.Z_ <= 1))


def test_knn_weight_search_lowers_leave_one_out_error():
    d = planted_frame()
    uniform = KNNModel(weight_grid=(1.0,)).fit(d.X, d.y, groups=d.groups)      # the search cannot move
    learned = KNNModel(n_passes=2).fit(d.X, d.y, groups=d.groups)
    assert np.all(uniform.weights_ == 1.0)
    assert learned.loo_error_ < uniform.loo_error_
    assert not np.all(learned.weights_ == 1.0)


@pytest.mark.parametrize("per", ["global", "format", "config"])
def test_boosted_fits_and_exposes_flat_trees(per):
    d = planted_frame()
    m = BoostedModel(per=per, n_estimators=60, subsample=1.0, max_features=None).fit(d.X, d.y, groups=d.groups)
    assert np.median(np.abs(m.predict(d.X) / d.y - 1)) < 0.1
    tree = m.estimators_[0].estimators_[0, 0].tree_
    assert tree.feature.shape == tree.threshold.shape == tree.children_left.shape == tree.children_right.shape
    assert len(m.feature_names_) == m.estimators_[0].n_features_in_


def test_boosted_focus_weighs_rows_near_each_best():
    d = planted_frame()
    plain = BoostedModel(n_estimators=30).fit(d.X, d.y, groups=d.groups)
    focus = BoostedModel(n_estimators=30, focus=2.0).fit(d.X, d.y, groups=d.groups)
    assert not np.array_equal(plain.predict(d.X), focus.predict(d.X))      # the weights reached the trees
    assert len(focus.estimators_) == len(plain.estimators_)
    with pytest.raises(ValueError, match="'focus'"):
        BoostedModel(focus=-1.0).fit(d.X, d.y, groups=d.groups)
