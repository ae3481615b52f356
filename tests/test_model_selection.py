"""scikit-learn model selection with the matrices as groups (issue 35): under metadata routing every model's
fit requests ``groups`` by default, so cross_val_score and GridSearchCV give the same groups to a group
splitter and to fit; without routing, fit's error says how to pass them."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pytest
import sklearn
from modeldata import cpu_frame
from sklearn.base import clone
from sklearn.model_selection import GridSearchCV, GroupKFold, cross_val_score, cross_validate
from test_models_api import IDS, MODELS

from pyspmv.models import LinearModel


class _Spy(LinearModel):
    """A LinearModel that records the groups its fit was given."""

    def fit(self, X, y, groups=None, convert_ms=None):
        self.seen_ = None if groups is None else np.asarray(groups)
        return super().fit(X, y, groups, convert_ms)


def _ranked(est, X, y) -> float:
    """A scorer that needs no groups: the share of rows the model gives a finite score."""
    return float(np.isfinite(est.rank_scores(X)).mean())


@pytest.fixture
def routing():
    with sklearn.config_context(enable_metadata_routing=True):
        yield


@pytest.mark.parametrize("model", MODELS, ids=IDS)
def test_cross_validate_routes_groups_to_splitter_and_fit(model, routing):
    d = cpu_frame()
    res = cross_validate(clone(model), d.X, d.y, cv=GroupKFold(3), params={"groups": d.groups}, scoring=_ranked,
                         error_score="raise", return_indices=True)
    g = np.asarray(d.groups)
    for train, test in zip(res["indices"]["train"], res["indices"]["test"], strict=True):
        assert not set(g[train]) & set(g[test])                 # the splitter got the groups
    assert np.all(res["test_score"] > 0)


def test_fit_gets_each_training_folds_groups(routing):
    d = cpu_frame()
    g = np.asarray(d.groups)
    res = cross_validate(_Spy(), d.X, d.y, cv=GroupKFold(4), params={"groups": d.groups}, return_estimator=True,
                         return_indices=True, error_score="raise")
    for est, train in zip(res["estimator"], res["indices"]["train"], strict=True):
        assert np.array_equal(est.seen_, g[train])
    scores = cross_val_score(LinearModel(), d.X, d.y, cv=GroupKFold(4), params={"groups": d.groups},
                             error_score="raise")
    assert scores.shape == (4,) and np.all(np.isfinite(scores))


def test_grid_search_fit_with_groups(routing):
    d = cpu_frame()
    gs = GridSearchCV(_Spy(), {"select": [True, False]}, cv=GroupKFold(3), scoring=_ranked, error_score="raise")
    gs.fit(d.X, d.y, groups=d.groups)
    assert np.array_equal(gs.best_estimator_.seen_, np.asarray(d.groups))   # the refit on everything
    assert np.all(np.isfinite(gs.cv_results_["mean_test_score"]))
    knn = MODELS[IDS.index("KNNModel")]
    gs = GridSearchCV(clone(knn), {"k": [1, 3]}, cv=GroupKFold(3), error_score="raise").fit(d.X, d.y, groups=d.groups)
    assert gs.best_params_["k"] in (1, 3)


def test_the_default_request_can_be_turned_off(routing):
    d = cpu_frame()
    with pytest.raises(ValueError, match="'groups' parameter of LinearModel.fit"):
        cross_val_score(LinearModel().set_fit_request(groups=False), d.X, d.y, cv=GroupKFold(3),
                        params={"groups": d.groups}, error_score="raise")


def test_without_routing_the_error_says_how():
    """scikit-learn's default: groups= reaches the splitter only; fit refuses to guess the matrices, says how
    to pass them, and passing them to both works."""
    d = cpu_frame()
    assert not sklearn.get_config()["enable_metadata_routing"]
    for call in (lambda: cross_val_score(LinearModel(), d.X, d.y, cv=GroupKFold(3), groups=d.groups,
                                         error_score="raise"),
                 lambda: GridSearchCV(LinearModel(), {"select": [True, False]}, cv=GroupKFold(3),
                                      error_score="raise").fit(d.X, d.y, groups=d.groups)):
        with pytest.raises(ValueError, match=r"enable_metadata_routing=True.*params=\{'groups': g\}"):
            call()
    scores = cross_val_score(LinearModel(), d.X, d.y, cv=GroupKFold(3), groups=d.groups,
                             params={"groups": d.groups}, error_score="raise")
    assert np.all(np.isfinite(scores))
