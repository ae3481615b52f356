"""ForestModel's training variants: split targets, ties in the targets, one forest for both value types."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import types

import numpy as np
import pandas as pd
import pytest
from modeldata import planted_frame

import pyspmv
from pyspmv.models import ForestModel
from pyspmv.models.forest import TARGETS


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
                                 groups=pd.concat([d.groups, d.groups], ignore_index=True),
                                 q25=pd.concat([d.q25, d.q25 / 1.5], ignore_index=True),
                                 q75=pd.concat([d.q75, d.q75 / 1.5], ignore_index=True))


def exact(**kw) -> ForestModel:
    """A forest whose leaves hold one training matrix each (splits on the slowdowns themselves unless told)."""
    return ForestModel(n_estimators=4, min_samples_leaf=1, max_features=1.0, clip=np.inf, **{"target": "best", **kw})


@pytest.mark.parametrize("target", [t for t in TARGETS if t != "listwise"])
def test_leaves_hold_runtimes_whatever_the_split_target(target):
    d = distinct()
    m = exact(target=target).fit(d.X, d.y, d.groups)
    np.testing.assert_allclose(m.predict(d.X), d.y, rtol=1e-9)


def test_listwise_target_picks_each_training_matrix_best():
    d = distinct()
    m = ForestModel(n_estimators=4, min_samples_leaf=1, max_features=1.0, target="listwise").fit(d.X, d.y, d.groups)
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


def test_noise_ties_need_quartiles_and_use_them():
    d = distinct()
    with pytest.raises(ValueError, match="'q25' and 'q75' parameters of ForestModel.fit"):
        exact(ties="noise").fit(d.X, d.y, d.groups)
    first, near = best_and_next(d)
    y = d.y.to_numpy().copy()
    y[near] = y[first] * 1.3
    q25, q75 = y * 0.999, y * 1.001
    q25[near] = y[first]                                          # its noise band reaches the best's
    m = exact(ties="noise").fit(d.X, y, d.groups, q25=q25, q75=q75)
    np.testing.assert_allclose(m.predict(d.X.iloc[near]), y[first], rtol=1e-9)
    others = np.setdiff1d(np.arange(len(y)), near)
    np.testing.assert_allclose(m.predict(d.X.iloc[others]), y[others], rtol=1e-9)


def test_joint_forest_shares_trees_and_keeps_each_types_leaves():
    d = both_types()
    m = exact(joint=True).fit(d.X, d.y, d.groups)
    t32, t64 = m.tables_["float32"], m.tables_["float64"]
    assert m.estimators_["float32"] is m.estimators_["float64"]
    for k in ("root", "feature", "threshold", "left", "right"):
        np.testing.assert_array_equal(t32[k], t64[k])
    np.testing.assert_allclose(m.predict(d.X), d.y, rtol=1e-9)
    rm = pyspmv.portable(m, "cuda")
    assert set(rm.tables) == {"float32", "float64"}


@pytest.mark.parametrize("kw", [{"joint": True}, {"scale": "bytes_moved"}])
def test_variant_forest_ranks_like_c(tmp_path, kw):
    """The saved forest (one for both value types; or scaled by bytes_moved, which the C core reads from the design
    row), evaluated by the C core, predicts what Python predicts, in both value types."""
    d = with_bytes(both_types())
    m = ForestModel(n_estimators=4, **kw).fit(d.X, d.y, d.groups)
    back = pyspmv.load_model(pyspmv.save_model(m, tmp_path / "m.pyspmv", device="cuda"))
    A = pyspmv.generate("poisson2d", 10)
    known = list(d.X["config"].unique())
    for dtype in ("float32", "float64"):
        got = {c: ms for c, ms in pyspmv.rank(A, model=back, device="cuda", dtype=dtype) if c in known}
        X = pyspmv.datasets.design_rows(pyspmv.features(A), known, pyspmv.config_features(A, known, dtype=dtype),
                                        4.0 if dtype == "float32" else 8.0)
        assert X["bytes_moved"].nunique() > 1                    # so that a scaled prediction depends on it
        np.testing.assert_allclose([got[c] for c in known], m.predict(X), rtol=1e-6)


@pytest.mark.parametrize("risk", [0.0, 2.0])
def test_risk_leaves_hold_the_power_mean_of_slowdowns(risk):
    """One leaf over every matrix: a configuration's prediction is exp(power mean of its slowdowns + mean log best)."""
    d = distinct()
    g = d.groups.to_numpy()
    n = len(set(g))
    m = ForestModel(n_estimators=1, min_samples_leaf=n, clip=np.inf, target="best", risk=risk).fit(d.X, d.y, d.groups)
    T = pd.DataFrame({"g": g, "c": d.X["config"].to_numpy(), "t": np.log(d.y.to_numpy())}).pivot(
        index="g", columns="c", values="t")
    S = T.sub(T.min(axis=1), axis=0)
    S = S.apply(lambda r: r.fillna(r.max()), axis=1)                    # unmeasured: the matrix's slowest
    lead = np.log(np.exp(risk * S).mean()) / risk if risk else S.mean()
    want = np.exp(lead + T.min(axis=1).mean())
    np.testing.assert_allclose(m.predict(d.X), want[d.X["config"]].to_numpy(), rtol=1e-9)


def test_risk_leaves_do_not_overflow():
    """risk * slowdown past exp's range (configurations 1e6 times slower than the best, risk 100: exp(1381)) still
    gives finite leaves and predictions."""
    d = distinct()
    y = d.y.to_numpy().copy()
    first, near = best_and_next(d)
    y[near] = y[first] * 1e6
    n = len(set(d.groups))
    m = ForestModel(n_estimators=1, min_samples_leaf=n, clip=np.inf, target="best", risk=100.0).fit(d.X, y, d.groups)
    assert np.isfinite(m.tables_["float64"]["value"]).all()
    assert np.isfinite(m.predict(d.X)).all()


def test_risk_ranks_a_sometimes_slow_configuration_lower():
    """Two configurations over one leaf: A 10 % slower than the best everywhere, B the best on 3 of 4 matrices and
    25 % slower on the fourth. Mean slowdown prefers B; a risk-averse leaf prefers A."""
    g = np.repeat([f"m{i}" for i in range(4)], 3)
    cfg = np.tile(["a", "b", "c"], 4)
    t = np.array([[1.1, 1.0, 3.0], [1.1, 1.0, 3.0], [1.1, 1.0, 3.0], [1.1, 1.25, 1.0]]).reshape(-1)
    X = pd.DataFrame({"f": np.repeat(np.arange(4.0), 3), "config": cfg, "value_bytes": 8.0})
    def pick(risk: float) -> str:
        m = ForestModel(n_estimators=1, min_samples_leaf=4, clip=np.inf, target="best", risk=risk,
                        features=["f"], params=[]).fit(X, t, g)
        p = m.predict(X.iloc[:3])
        return str(cfg[:3][np.argmin(p[:2])])
    assert pick(0.0) == "b"
    assert pick(8.0) == "a"


def with_bytes(d: types.SimpleNamespace) -> types.SimpleNamespace:
    """The table with every row's bytes_moved known (the planted one leaves some unset)."""
    d.X = d.X.assign(bytes_moved=d.X["bytes_moved"].fillna(1000.0))
    return d


def test_scaled_leaves_hold_runtimes_and_follow_the_ranked_rows_bytes():
    d = with_bytes(distinct())
    m = exact(scale="bytes_moved").fit(d.X, d.y, d.groups)
    np.testing.assert_allclose(m.predict(d.X), d.y, rtol=1e-9)
    doubled = d.X.assign(bytes_moved=2 * d.X["bytes_moved"])
    np.testing.assert_allclose(m.predict(doubled), 2 * d.y, rtol=1e-9)


def test_scale_must_be_a_positive_configuration_column():
    d = distinct()
    with pytest.raises(ValueError, match="'scale' parameter of ForestModel must name a per-configuration column"):
        exact(scale="nnz").fit(d.X, d.y, d.groups)
    with pytest.raises(ValueError, match="has bytes_moved = nan in row .*; the 'scale' column must be finite and > 0"):
        exact(scale="bytes_moved").fit(d.X, d.y, d.groups)
    m = exact(scale="bytes_moved").fit(with_bytes(distinct()).X, d.y, d.groups)
    with pytest.raises(ValueError, match=r"ForestModel.predict has bytes_moved = -1\.0"):
        m.predict(d.X.assign(bytes_moved=-1.0))


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
                                        4.0 if dtype == "float32" else 8.0)
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
    ("target", "rank", "'target' parameter of ForestModel must be one of"),
    ("ties", "q", "'ties' parameter of ForestModel must be one of"),
    ("temperature", 0.0, "'temperature' parameter of ForestModel must be a float > 0"),
    ("tie_tol", -0.1, "'tie_tol' parameter of ForestModel must be a float >= 0"),
    ("risk", -1.0, "'risk' parameter of ForestModel must be a finite float >= 0"),
    ("risk", np.inf, "'risk' parameter of ForestModel must be a finite float >= 0"),
    ("scale", 3, "'scale' parameter of ForestModel must be a column name or None"),
    ("bytes_prior", 1.5, r"'bytes_prior' parameter of ForestModel must be a float in \[0, 1\]"),
    ("bytes_prior", -0.1, r"'bytes_prior' parameter of ForestModel must be a float in \[0, 1\]"),
    ("bytes_prior", True, r"'bytes_prior' parameter of ForestModel must be a float in \[0, 1\]"),
    ("bytes_prior", "0.1", r"'bytes_prior' parameter of ForestModel must be a float in \[0, 1\]"),
    ("reference", "cpu/nothing", "'reference' parameter of ForestModel must be a configuration"),
    ("n_estimators", 0, "'n_estimators' parameter of ForestModel must be an int >= 1 or 'auto'"),
    ("n_estimators", "many", "'n_estimators' parameter of ForestModel must be an int >= 1 or 'auto'"),
])
def test_bad_variant_parameters_name_themselves(param, value, message):
    d = planted_frame()
    kw = {"n_estimators": 2, param: value, **({"target": "reference"} if param == "reference" else {})}
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
    assert m._trees(135) == 32 and m._trees(23) == 188 and m._trees(1) == AUTO_TREES[1] and m._trees(10**6) == 32
    joint = ForestModel(joint=True).fit(d.X, d.y, d.groups)
    assert len(joint.estimators_["float64"].estimators_) == int(np.clip(round(AUTO_TREE_BUDGET / (2 * nkeys)),
                                                                        *AUTO_TREES))
    assert len(ForestModel(n_estimators=3).fit(d.X, d.y, d.groups).estimators_["float64"].estimators_) == 3
