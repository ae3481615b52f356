"""scikit-learn estimator contract of every model: get_params, set_params, clone, not-fitted errors, bad X."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from modeldata import cpu_frame
from sklearn.base import clone, is_classifier, is_regressor
from sklearn.exceptions import NotFittedError

from pyspmv.models import (
    BoostedModel,
    CascadeModel,
    ForestModel,
    GuoModel,
    KNNModel,
    LinearModel,
    SVMModel,
    WangModel,
)

# parametrize_with_checks does not apply: every model needs the design columns of schema.md in a DataFrame
# (configuration ids, formats, parameters), which its generated numeric arrays do not have.
MODELS = [LinearModel(), BoostedModel(n_estimators=20), KNNModel(n_passes=1), GuoModel(), WangModel(),
          SVMModel(C_grid=(1.0,), gamma_grid=(1.0,)), CascadeModel(n_estimators=10), ForestModel(n_estimators=8)]
IDS = [type(m).__name__ for m in MODELS]


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_params_and_clone(model):
    params = model.get_params()
    c = clone(model)
    assert c is not model and c.get_params() == params
    name = next(iter(params))
    c.set_params(**{name: params[name]})
    assert c.get_params() == params
    with pytest.raises(ValueError, match="Invalid parameter"):
        c.set_params(no_such_parameter=1)
    assert is_regressor(model) or is_classifier(model)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_not_fitted(model):
    d = cpu_frame()
    with pytest.raises(NotFittedError):
        clone(model).rank_scores(d.X)


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_fit_predict_rank(model):
    d = cpu_frame()
    m = clone(model).fit(d.X, d.y, groups=d.groups)
    assert not any(k.endswith("_") and not k.startswith("_") for k in vars(model))   # fit left the prototype alone
    assert m.get_params() == model.get_params()                                       # and its parameters
    s = m.rank_scores(d.X)
    assert s.shape == (len(d.X),)
    assert np.isfinite(s).any()
    p = m.predict(d.X, d.groups) if isinstance(m, CascadeModel) else m.predict(d.X)   # picks per matrix
    assert p.shape == (len(d.X),)
    if is_classifier(m):
        assert set(np.unique(p)) <= {0, 1}
    else:
        ok = np.isfinite(p)
        assert ok.any() and np.all(p[ok] > 0)
    best = m.predict_best(d.X, d.groups)
    assert set(best.index) == set(d.groups) and set(best) <= set(d.X["config"])


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_bad_input(model):
    d = cpu_frame()
    g = d.groups
    with pytest.raises(TypeError, match="'X' parameter"):
        clone(model).fit(d.X.to_numpy(), d.y, groups=g)
    with pytest.raises(ValueError, match="lacks"):
        clone(model).fit(d.X.drop(columns=["nnz"]), d.y, groups=g)
    with pytest.raises(ValueError, match="'y' parameter"):
        clone(model).fit(d.X, d.y[:-1], groups=g)
    with pytest.raises(ValueError, match="'y' parameter"):
        clone(model).fit(d.X, -d.y, groups=g)
    with pytest.raises(ValueError, match="does not read: 'matrix'"):      # never ignored silently
        clone(model).fit(d.X.assign(matrix="m"), d.y, groups=g)


@pytest.mark.parametrize("model", [m for m in MODELS if not isinstance(m, GuoModel | WangModel)], ids=str)
def test_groups_are_required(model):
    d = cpu_frame()
    with pytest.raises(ValueError, match="'groups' parameter"):
        clone(model).fit(d.X, d.y)
    m = clone(model).fit(d.X, d.y, groups=d.groups)
    with pytest.raises(ValueError, match="'groups' parameter"):
        m.predict_best(d.X, None)


def test_unknown_configuration_is_an_error():
    d = cpu_frame()
    keep = d.X["config"] != "cpu/jad"
    for model in (LinearModel(), KNNModel(learn_weights=False), BoostedModel(per="config", n_estimators=5),
                  SVMModel(C_grid=(1.0,), gamma_grid=(1.0,)), ForestModel(n_estimators=4)):
        m = model.fit(d.X[keep], d.y[keep], groups=d.groups[keep])
        with pytest.raises(ValueError, match=r"predict has configuration (group )?'cpu/jad@f\d\d' that the model "
                                             r"was not trained on \(\d+ known\)"):
            m.predict(d.X)


def test_bad_parameters():
    d = cpu_frame()
    for model, match in ((LinearModel(group_by="row"), "'group_by'"), (LinearModel(cv=1), "'cv'"),
                         (KNNModel(k=0), "'k'"), (KNNModel(k_by_format={"sell": 0}), "'k_by_format'"),
                         (BoostedModel(per="matrix"), "'per'"), (SVMModel(factor=2.0), "'factor'"),
                         (GuoModel(device_props={"sm_count": 0}), "'device_props'")):
        with pytest.raises(ValueError, match=match):
            model.fit(d.X, d.y, groups=d.groups)


def test_predict_best_keeps_value_types_apart():
    d = cpu_frame()
    X2 = d.X.copy()
    X2["value_bytes"] = 4.0
    X = pd.concat([d.X, X2], ignore_index=True)
    y = pd.concat([d.y, d.y * 0.6], ignore_index=True)
    g = pd.concat([d.groups, d.groups], ignore_index=True)
    best = LinearModel().fit(X, y, groups=g).predict_best(X, g)
    assert len(best) == 2 * d.groups.nunique()
    assert set(best.index.get_level_values("value_bytes")) == {4.0, 8.0}


def test_model_names_are_one_list():
    """The command line's light list of model kinds names exactly pyspmv.models' classes."""
    from pyspmv.models import MODELS
    from pyspmv.training import train_default
    assert set(train_default.MODELS) == set(MODELS)
    for kind in MODELS:
        assert type(train_default.make_model(kind, seed=3)) is MODELS[kind]
