"""Gradient-boosted regression trees on log runtime, global over configurations or per group."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.utils.validation import check_is_fitted

from .._params import Interval, OneOf, validate
from ..ranking.layout import Layout, feature_inputs, lookup_keys
from ..ranking.rankmodel import Table
from ..ranking.spec import BIG, Spec, concat_inputs, head, inputs
from ._common import VERBOSE, RankMixin, Schema, check_y, group_index, group_key, log_features, progress, unit_key
from ._trees import gb_ensembles, tree_fields


def categorical_columns(schema: Schema) -> tuple[str, ...]:
    """The one-hot encoded columns: pyspmv's library, format and kernel; on a user's schema, the
    configuration id (the trees' only way to tell the user's configurations apart besides their
    parameters)."""
    return ("library", "format", "kernel") if schema.own else ("config",)


def encode(X: pd.DataFrame, categories: dict[str, list[str]], model: Any) -> np.ndarray:
    """Tree inputs: the transformed features (``model.feature_tf_``), one-hot categorical columns over
    ``categories``, the parameters (NaN -> -1), value bytes, and on pyspmv's schema log1p(bytes moved),
    padding ratio and launches (float64)."""
    schema = model.schema_
    parts = [model.feature_tf_.apply(X)]
    for col in categorical_columns(schema):
        v = X[col].fillna("").astype(str).to_numpy()
        parts.append(np.stack([v == c for c in categories[col]], axis=1).astype(np.float64)
                     if categories[col] else np.zeros((len(X), 0)))
    p = X.loc[:, list(schema.params)].to_numpy(dtype=np.float64, copy=True)
    p[~np.isfinite(p)] = -1.0
    parts.append(p)
    parts.append(X.loc[:, ["value_bytes"]].to_numpy(dtype=np.float64))
    if schema.own:
        parts.append(log_features(X, ("bytes_moved",)))
        rest = X.loc[:, ["padding_ratio", "launches"]].to_numpy(dtype=np.float64, copy=True)
        parts.append(np.nan_to_num(rest, nan=0.0, posinf=1e30))
    return np.hstack(parts)


def encoded_names(categories: dict[str, list[str]], model: Any) -> list[str]:
    """Column names of :func:`encode`'s output."""
    schema, tf = model.schema_, model.feature_tf_
    names = [f"{'slog1p' if sg else 'log1p'}_{f}" for f, sg in zip(tf.names, tf.signed, strict=True)]
    for col in categorical_columns(schema):
        names += [f"{col}={c}" for c in categories[col]]
    names += [*schema.params, "value_bytes"]
    return names + (["log1p_bytes_moved", "padding_ratio", "launches"] if schema.own else [])


#: BoostedModel's parameters, checked when it fits.
_PARAMS = {"verbose": VERBOSE, "per": OneOf(("global", "format", "mapping", "config"), "list"),
           "focus": Interval("float", 0)}


class BoostedModel(RankMixin, RegressorMixin, BaseEstimator):
    """Gradient-boosted regression trees (scikit-learn's GradientBoostingRegressor) on log runtime.

    The trees compare float32 features against float32-rounded thresholds (scikit-learn casts X to
    float32), and each fitted ``estimators_[g].estimators_[i, 0].tree_`` holds flat node arrays
    (``feature``, ``threshold``, ``children_left``, ``children_right``, ``value``) ready for export.
    The prediction is ``exp(init + learning_rate * sum(tree values))`` of the group's ensemble.

    Parameters
    ----------
    per : {"global", "format", "mapping", "config"}, default="global"
        One ensemble over every configuration (with the configuration's columns as inputs), or one per
        format, per thread mapping, or per configuration.
    focus : float, default=0.0
        Rows weigh ``(t_best / t) ** focus`` in training, t_best the fastest time of the same matrix and
        value type: accuracy near each matrix's best configurations counts more (0: all rows alike).
        Training only; the fitted form is unchanged.
    n_estimators, learning_rate, max_depth, min_samples_leaf, subsample, max_features, random_state
        Passed to GradientBoostingRegressor. The defaults (600 trees of depth 6, learning rate 0.05) were
        chosen by 3-fold cross-validation grouped by matrix inside the training matrices of
        benchmarks/models.py's split of ``datasets/h100`` (300 trees at 0.1: geomean t_pick / t_best 1.046
        in float64 and 1.041 in float32; 600 at 0.05: 1.028 and 1.036); twice the trees cost twice the
        ranking time in C (about 0.9 ms for 135 configurations on the 2-core dev VM).
    verbose : int, default=0
        0: silent; >= 1: a progress bar over the boosting stages on stderr (scikit-learn's convention).
    features, params : list of str or None, default=None
        The feature and parameter columns of X (None: pyspmv's; see :mod:`pyspmv.models`). On a user's
        schema the configuration id is one-hot encoded instead of library, format and kernel.

    Attributes
    ----------
    categories_ : dict, the categorical values one-hot encoded, in column order.
    feature_names_ : list of str, the encoded input columns.
    groups_ : ndarray of str, group keys (``["*"]`` when global).
    estimators_ : list of GradientBoostingRegressor, one per group.
    """

    def __init__(self, per: str = "global", n_estimators: int = 600, learning_rate: float = 0.05,
                 max_depth: int = 6, min_samples_leaf: int = 3, subsample: float = 0.5,
                 max_features: float | None = 0.5, random_state: int = 0, focus: float = 0.0, verbose: int = 0,
                 features: list[str] | None = None, params: list[str] | None = None):
        self.per = per
        self.features = features
        self.params = params
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.min_samples_leaf = min_samples_leaf
        self.subsample = subsample
        self.max_features = max_features
        self.random_state = random_state
        self.focus = focus
        self.verbose = verbose

    def _keys(self, X: pd.DataFrame) -> np.ndarray:
        if self.per == "global":
            return np.full(len(X), "*", dtype=object)
        return group_key(X, self.per)

    def fit(self, X: pd.DataFrame, y: Any, groups: Any = None, convert_ms: Any = None) -> BoostedModel:
        """Fit the ensembles on log(y); ``groups``: the matrix of each row (required; in
        cross-validation, see scikit-learn's model selection: :mod:`pyspmv.models`);
        ``convert_ms``: conversion time (ms) per row, for the conversion-cost fit (``convert_ms_``)."""
        validate("BoostedModel", _PARAMS, vars(self))
        X, mids = self._fit_schema(X, groups, "BoostedModel.fit", min_features=0)
        t = np.log(check_y(y, len(X), "BoostedModel.fit"))
        self.categories_ = {c: sorted(set(X[c].fillna("").astype(str))) for c in categorical_columns(self.schema_)}
        self.feature_names_ = encoded_names(self.categories_, self)
        E = encode(X, self.categories_, self)
        w = None
        if self.focus:
            unit = unit_key(mids, X["value_bytes"])
            w = np.exp(-float(self.focus) * (t - pd.Series(t).groupby(unit).transform("min").to_numpy()))
        keys = self._keys(X)
        self.groups_ = np.unique(keys)
        self.estimators_ = []
        with progress(total=len(self.groups_) * int(self.n_estimators), desc="BoostedModel: trees",
                      verbose=self.verbose) as bar:
            def stage(i: int, est: Any, local: Any) -> bool:
                bar.update(1)
                return False                                      # never stop early
            for g in self.groups_:
                r = keys == g
                est = GradientBoostingRegressor(
                    n_estimators=self.n_estimators, learning_rate=self.learning_rate, max_depth=self.max_depth,
                    min_samples_leaf=self.min_samples_leaf, subsample=self.subsample, max_features=self.max_features,
                    random_state=self.random_state)
                self.estimators_.append(est.fit(E[r], t[r], sample_weight=None if w is None else w[r],
                                                monitor=stage if self.verbose else None))
        self._fit_extras(X, convert_ms, "BoostedModel.fit")
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """Predicted runtime (ms) per row; a group not seen in training is an error."""
        check_is_fitted(self, "estimators_")
        X = self._check(X, "BoostedModel.predict")
        keys = self._keys(X)
        E = encode(X, self.categories_, self)
        out = np.empty(len(X))
        ug = np.unique(keys)
        for g, i in zip(ug, group_index(ug, self.groups_, "BoostedModel.predict", "configuration group"), strict=True):
            r = keys == g
            out[r] = self.estimators_[i].predict(E[r])
        return np.exp(out)

    def _portable_table(self, layout: Any) -> Any:
        """The portable form's table (:func:`pyspmv.ranking.portable.portable`)."""
        return _boosted_table(self, layout)


# ---- portable form ----------------------------------------------------------------------------

def _boosted_table(model: Any, layout: Layout) -> Table | None:
    """BoostedModel: the transformed features, one-hot categorical columns (per-configuration
    columns), parameters (NaN -> -1), value bytes, and on pyspmv's schema log1p(bytes moved), padding
    ratio and launches (NaN -> 0, inf -> 1e30); GradientBoostingRegressor trees per group (float32
    compares), exp."""
    schema = model.schema_
    fr = layout.frame
    ins = [feature_inputs(layout, model.feature_tf_)]
    for col in categorical_columns(schema):
        for c in model.categories_[col]:
            ins.append(inputs([layout.add(fr[col].fillna("").astype(str).to_numpy() == c)]))
    ins.append(inputs([layout.col(p) for p in schema.params], nan=-1.0))
    ins.append(inputs([layout.col("value_bytes")]))
    if schema.own:
        ins.append(inputs([layout.col("bytes_moved")], "log1p", nan=0.0, lo=0.0, hi=BIG))
        ins.append(inputs([layout.col("padding_ratio"), layout.col("launches")], nan=0.0, lo=-BIG, hi=1e30))
    ins_all = concat_inputs(*ins)
    keys = np.full(len(layout.ids), "*", dtype=object) if model.per == "global" else group_key(layout.frame, model.per)
    group = lookup_keys(keys, model.groups_)
    nfeat = ins_all["ninputs"]
    ens = [e for est in model.estimators_ for e in gb_ensembles(est, nfeat)]
    spec = Spec("trees", {**head(len(model.groups_), layout.ncols, ins_all, "exp"), "trees.nout": 1,
                          **tree_fields(ens, model.learning_rate, True)})
    return layout.table(group, spec)
