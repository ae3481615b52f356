"""ForestModel's training variants: leaves that hold runtimes, ties in the targets, the bytes prior, the number of
trees."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest
from modeldata import planted_frame

import pyspmv
from pyspmv.matrices.matrix import VALUE_BYTES
from pyspmv.models import ForestModel


def distinct() -> types.SimpleNamespace:
    """The planted table with each time scaled by a random factor, so no two matrices share their slowdowns."""
    d = planted_frame()
    d.y = d.y * np.exp(np.random.default_rng(0).normal(0.0, 0.3, len(d.y)))
    return d


def both_types() -> types.SimpleNamespace:
    """The distinct table in float64 and, 1.5x faster, float32."""
    d = distinct()
    X32 = d.X.assign(value_bytes=4.0)
    return types.SimpleNamespace(X=pd.concat([d.X, X32], ignore_index=True),
                                 y=pd.concat([d.y, d.y / 1.5], ignore_index=True),
                                 groups=pd.concat([d.groups, d.groups], ignore_index=True))


def exact(**kw) -> ForestModel:
    """A forest whose leaves hold one training matrix each (a high temperature keeps every matrix's split targets
    apart: at 0.1 the far slowdowns' probabilities underflow alike)."""
    return ForestModel(n_estimators=4, min_samples_leaf=1, max_features=1.0, clip=np.inf, **{"temperature": 100.0, **kw})


def test_leaves_hold_runtimes():
    d = distinct()
    m = exact().fit(d.X, d.y, d.groups)
    np.testing.assert_allclose(m.predict(d.X), d.y, rtol=1e-9)


def test_listwise_target_picks_each_training_matrix_best():
    d = distinct()
    m = ForestModel(n_estimators=4, min_samples_leaf=1, max_features=1.0).fit(d.X, d.y, d.groups)
    best = d.X.loc[d.y.groupby(d.groups.to_numpy()).idxmin(), "config"].to_numpy()
    np.testing.assert_array_equal(m.predict_best(d.X, d.groups).loc[sorted(set(d.groups))].to_numpy(), best)


def best_and_next(d: types.SimpleNamespace) -> tuple[np.ndarray, np.ndarray]:
    """Per matrix, the row of its fastest configuration and another row of the same matrix."""
    g = d.groups.to_numpy()
    first = d.y.groupby(g).idxmin().to_numpy()
    other = []
    for i in first:
        rows = np.flatnonzero(g == g[i])
        other.append(rows[rows != i][0])
    return first, np.array(other)


def test_tie_tol_makes_near_best_configurations_ties():
    d = distinct()
    first, near = best_and_next(d)
    y = d.y.to_numpy().copy()
    y[near] = y[first] * 1.01
    m = exact(tie_tol=0.02).fit(d.X, y, d.groups)
    np.testing.assert_allclose(m.predict(d.X.iloc[near]), y[first], rtol=1e-9)
    plain = exact().fit(d.X, y, d.groups)
    np.testing.assert_allclose(plain.predict(d.X.iloc[near]), y[near], rtol=1e-9)


def test_forest_of_both_value_types_ranks_like_c(tmp_path):
    """The saved forest, evaluated by the C core, predicts what Python predicts, in both value types."""
    d = with_bytes(both_types())
    m = ForestModel(n_estimators=4).fit(d.X, d.y, d.groups)
    back = pyspmv.load_model(pyspmv.save_model(m, tmp_path / "m.pyspmv", device="cuda"))
    A = pyspmv.generate("poisson2d", 10)
    known = list(d.X["config"].unique())
    for dtype in ("float32", "float64"):
        got = {c: ms for c, ms in pyspmv.rank(A, model=back, device="cuda", dtype=dtype) if c in known}
        X = pyspmv.datasets.design_rows(pyspmv.features(A), known, pyspmv.config_features(A, known, dtype=dtype),
                                        float(VALUE_BYTES[dtype]))
        np.testing.assert_allclose([got[c] for c in known], m.predict(X), rtol=1e-6)


def with_bytes(d: types.SimpleNamespace) -> types.SimpleNamespace:
    """The table with every row's bytes_moved known (the planted one leaves some unset)."""
    d.X = d.X.assign(bytes_moved=d.X["bytes_moved"].fillna(1000.0))
    return d


@pytest.mark.parametrize("prior", [0.0, 0.05, 1.0])
def test_bytes_prior_orders_the_c_ranking_as_python_and_leaves_the_times(tmp_path, prior):
    """rank() (the C core, from a saved model) orders by predicted ms * (bytes_moved / (nnz * value_bytes))^prior,
    as rank_scores does, and reports the predicted ms themselves; with a prior the order of these near-equal times
    is not the times' own."""
    d = with_bytes(both_types())
    near = np.random.default_rng(1).uniform(1.0, 1.01, len(d.y))   # every configuration within 1 % of the others
    m = ForestModel(n_estimators=4, bytes_prior=prior).fit(d.X, near, d.groups)
    path = pyspmv.save_model(m, tmp_path / "m.pyspmv", device="cuda")
    back = pyspmv.load_model(path)
    A = pyspmv.generate("poisson2d", 10)
    known = list(d.X["config"].unique())
    for dtype in ("float32", "float64"):
        r = [(c, ms) for c, ms in pyspmv.rank(A, model=back, device="cuda", dtype=dtype) if c in known]
        X = pyspmv.datasets.design_rows(pyspmv.features(A), known, pyspmv.config_features(A, known, dtype=dtype),
                                        float(VALUE_BYTES[dtype]))
        ms, s = m.predict(X), m.rank_scores(X)
        q = X["bytes_moved"] / (X["nnz"] * X["value_bytes"])
        np.testing.assert_allclose(s, ms * q ** prior, rtol=1e-12)
        order = [known.index(c) for c, _ in r]
        assert sorted(order) == list(range(len(known)))
        assert np.all(np.diff(s[order]) >= -1e-9 * s[order][1:])      # C's order by the scores (ties either way)
        np.testing.assert_allclose([t for _, t in r], ms[order], rtol=1e-6)
        if prior:
            assert np.any(np.diff(ms[order]) < -1e-6 * ms[order][1:])   # not the times' order


def test_bytes_prior_is_in_the_file_only_when_set(tmp_path):
    """A forest without the prior saves format version 1 and no rank_bytes_pow (older pyspmv read it); with it,
    version 3; both load with their value."""
    import json
    d = with_bytes(distinct())
    for prior, version in ((0.0, 1), (0.25, 3)):
        m = ForestModel(n_estimators=2, bytes_prior=prior).fit(d.X, d.y, d.groups)
        path = pyspmv.save_model(m, tmp_path / f"m{version}.pyspmv", device="cuda")
        with np.load(path, allow_pickle=False) as z:
            header = json.loads(bytes(z["header.json"]).decode())
        assert header["version"] == version
        assert ("rank_bytes_pow" in header["tables"]["float64"]["spec"]["scalars"]) == bool(prior)
        assert pyspmv.load_model(path).tables["float64"].spec.fields["rank_bytes_pow"] == prior


def test_bytes_prior_needs_pyspmvs_columns():
    X = pd.DataFrame({"f": np.arange(4.0), "config": "a", "value_bytes": 8.0})
    with pytest.raises(ValueError, match="'bytes_prior' parameter of ForestModel reads pyspmv's bytes_moved"):
        ForestModel(n_estimators=1, bytes_prior=0.1, features=["f"], params=[]).fit(X, np.ones(4),
                                                                                   [f"m{i}" for i in range(4)])


@pytest.mark.parametrize(("param", "value", "message"), [
    ("forest", "boosted", "'forest' parameter of ForestModel must be one of"),
    ("temperature", 0.0, "'temperature' parameter of ForestModel must be a float > 0"),
    ("tie_tol", -0.1, "'tie_tol' parameter of ForestModel must be a float >= 0"),
    ("bytes_prior", 1.5, r"'bytes_prior' parameter of ForestModel must be a float in \[0, 1\]"),
    ("bytes_prior", -0.1, r"'bytes_prior' parameter of ForestModel must be a float in \[0, 1\]"),
    ("bytes_prior", True, r"'bytes_prior' parameter of ForestModel must be a float in \[0, 1\]"),
    ("bytes_prior", "0.1", r"'bytes_prior' parameter of ForestModel must be a float in \[0, 1\]"),
    ("n_estimators", 0, "'n_estimators' parameter of ForestModel must be an int >= 1 or 'auto'"),
    ("n_estimators", "many", "'n_estimators' parameter of ForestModel must be an int >= 1 or 'auto'"),
])
def test_bad_variant_parameters_name_themselves(param, value, message):
    d = planted_frame()
    kw = {"n_estimators": 2, param: value}
    with pytest.raises(ValueError, match=message):
        ForestModel(**kw).fit(d.X, d.y, d.groups)


def test_auto_trees_spend_the_evaluation_budget():
    """n_estimators="auto": trees x configurations near AUTO_TREE_BUDGET, within AUTO_TREES."""
    from pyspmv.models.forest import AUTO_TREE_BUDGET, AUTO_TREES
    d = both_types()
    nkeys = d.X["config"].nunique()
    m = ForestModel().fit(d.X, d.y, d.groups)
    want = int(np.clip(round(AUTO_TREE_BUDGET / nkeys), *AUTO_TREES))
    assert {dt: len(e.estimators_) for dt, e in m.estimators_.items()} == {"float32": want, "float64": want}
    assert m._trees(135) == 32 and m._trees(23) == 188 and m._trees(1) == AUTO_TREES[1] and m._trees(10**6) == AUTO_TREES[0] == 24
    assert len(ForestModel(n_estimators=3).fit(d.X, d.y, d.groups).estimators_["float64"].estimators_) == 3


def test_stake_weight_weighs_the_matrices_by_their_best_time():
    """stake_weight=0 is the unweighted fit (the same tables); a weight changes the forest's leaves, never the
    schema; a weight outside [0, 1] is refused naming it."""
    d = distinct()
    base = ForestModel(n_estimators=8, random_state=0).fit(d.X, d.y, d.groups)
    zero = ForestModel(n_estimators=8, random_state=0, stake_weight=0.0).fit(d.X, d.y, d.groups)
    one = ForestModel(n_estimators=8, random_state=0, stake_weight=1.0).fit(d.X, d.y, d.groups)
    for dt, tb in base.tables_.items():
        assert np.array_equal(tb["value"], zero.tables_[dt]["value"])
        assert list(tb["keys"]) == list(one.tables_[dt]["keys"])
        a, b = tb["value"], one.tables_[dt]["value"]
        assert a.shape != b.shape or not np.array_equal(a, b)
    with pytest.raises(ValueError, match=r"'stake_weight' parameter of ForestModel must be a float in \[0, 1\]"):
        ForestModel(stake_weight=2.0).fit(d.X, d.y, d.groups)


def test_unmeasured_skip_averages_only_the_matrices_that_measured_a_configuration():
    """unmeasured='skip': a leaf predicts a configuration from its matrices that measured it, where 'cap' counts each
    absence as a slowdown of clip; with every configuration measured the two are the same forest."""
    d = distinct()
    one = dict(n_estimators=1, min_samples_leaf=10_000, clip=0.5)    # one leaf: the means over every matrix
    full = [ForestModel(unmeasured=u, **one).fit(d.X, d.y, d.groups) for u in ("cap", "skip")]
    np.testing.assert_array_equal(full[0].tables_["float64"]["value"], full[1].tables_["float64"]["value"])
    T0 = pd.Series(np.log(d.y.to_numpy()), index=pd.MultiIndex.from_arrays([d.groups, d.X["config"]])).unstack()
    cfg = T0.sub(T0.min(axis=1), axis=0).mean().idxmin()        # a configuration near the best: its absence shows
    mats = sorted(set(d.groups))
    gone = (d.X["config"] == cfg).to_numpy() & d.groups.isin(mats[: len(mats) // 2]).to_numpy()
    X, y, g = d.X[~gone], d.y[~gone], d.groups[~gone]
    T = pd.Series(np.log(y.to_numpy()), index=pd.MultiIndex.from_arrays([g, X["config"]])).unstack()
    S = np.minimum(T.sub(T.min(axis=1), axis=0), 0.5)[cfg]
    j = list(T.columns).index(cfg)
    for u, want in (("skip", S.mean()), ("cap", S.fillna(0.5).mean())):
        tb = ForestModel(unmeasured=u, **one).fit(X, y, g).tables_["float64"]
        assert tb["keys"][j] == f"{cfg}@f64" or cfg in tb["keys"][j]
        assert tb["value"][0, j] == pytest.approx(want, rel=1e-12)
    assert S.mean() < S.fillna(0.5).mean()
    with pytest.raises(ValueError, match="unmeasured"):
        ForestModel(unmeasured="drop").fit(d.X, d.y, d.groups)
