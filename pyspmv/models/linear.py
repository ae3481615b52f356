"""Lehnert et al.'s linear model: least squares on log features, one fit per format and thread mapping."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from .._params import Interval, OneOf, validate
from ..ranking.layout import Layout, feature_inputs, lookup_keys
from ..ranking.rankmodel import Table
from ..ranking.spec import BIG, Spec, concat_inputs, head, inputs
from ._common import (
    CONFIG_FEATURES,
    LEHNERT_FEATURES,
    PARAM_COLUMNS,
    VERBOSE,
    RankMixin,
    check_y,
    group_index,
    group_key,
    log_features,
    param_logs,
    progress,
)

#: The candidate regressors: log1p of Lehnert's Table 2 and the per-configuration features, then log2 of
#: each configuration parameter (which varies inside a mapping group, e.g. the block size).
CANDIDATES: tuple[str, ...] = (*LEHNERT_FEATURES, *CONFIG_FEATURES, *(f"log2_{p}" for p in PARAM_COLUMNS))


def design(X: pd.DataFrame, model: Any = None) -> np.ndarray:
    """The candidate regressor matrix for rows of ``X`` (float64): pyspmv's :data:`CANDIDATES`, or on a
    user's schema the fitted model's transformed features and log2 of its parameters."""
    schema = getattr(model, "schema_", None)
    if schema is None or schema.own:
        return np.hstack([log_features(X, (*LEHNERT_FEATURES, *CONFIG_FEATURES)), param_logs(X)])
    return np.hstack([model.feature_tf_.apply(X), param_logs(X, schema.params)])


def candidates(model: Any) -> tuple[str, ...]:
    """Names of :func:`design`'s columns for the fitted ``model``."""
    schema = model.schema_
    if schema.own:
        return CANDIDATES
    return (*schema.features, *(f"log2_{p}" for p in schema.params))


def _lstsq(A: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, float]:
    """Least squares with an intercept, columns constant over the rows dropped (coefficient 0)."""
    coef = np.zeros(A.shape[1])
    if A.shape[0] == 0:
        return coef, 0.0
    mean = A.mean(axis=0)
    keep = np.ptp(A, axis=0) > 1e-12 * np.maximum(1.0, np.abs(mean))
    Ak = A[:, keep] - mean[keep]
    bm = b.mean()
    if Ak.shape[1]:
        sol = np.linalg.lstsq(Ak, b - bm, rcond=None)[0]
        coef[keep] = sol
    return coef, float(bm - mean @ coef)


#: LinearModel's parameters, checked when it fits.
_PARAMS = {"group_by": OneOf(("mapping", "config", "format"), "list"), "cv": Interval("int", 2),
           "tol": Interval("float", 0, 1), "verbose": VERBOSE}


class LinearModel(RankMixin, RegressorMixin, BaseEstimator):
    """Least squares on log features predicting log runtime, per configuration group (Lehnert et al.).

    One model per group of rows (default: library, format, kernel and threads per row, so block sizes and
    format parameters of one mapping share a model through their log2 columns). Regressors are chosen per
    format by forward stepwise selection on grouped (by matrix) cross-validation, starting from Lehnert's
    Table 2 features plus bytes moved and padding ratio (:data:`CANDIDATES`).

    On a user's schema (``features``, ``params``) the candidates are every named feature (transformed as
    :class:`~pyspmv.models.FeatureTransform` says) and log2 of each parameter, and rows group by
    configuration (``group_by="config"``; "mapping" and "format" need pyspmv's columns).

    Parameters
    ----------
    group_by : {"mapping", "config", "format"}, default="mapping"
        How rows are grouped into separate least-squares fits.
    features, params : list of str or None, default=None
        The feature and parameter columns of X (None: pyspmv's; see :mod:`pyspmv.models`).
    select : bool, default=True
        Select regressors per format by cross-validation; False uses every candidate.
    cv : int, default=5
        Folds (grouped by matrix) of the selection.
    tol : float, default=0.005
        A candidate joins only if it lowers the cross-validated squared log error by this fraction.
    verbose : int, default=0
        0: silent; >= 1: progress bars on stderr (scikit-learn's convention).

    Attributes
    ----------
    feature_names_ : ndarray of str, the candidate regressor names (columns of ``coef_``).
    groups_ : ndarray of str, the group keys, one per row of ``coef_``.
    coef_ : ndarray (n_groups, n_candidates), 0 for regressors not selected.
    intercept_ : ndarray (n_groups,).
    selected_ : dict, format -> list of selected regressor names.
    """

    def __init__(self, group_by: str = "mapping", select: bool = True, cv: int = 5, tol: float = 0.005,
                 verbose: int = 0, features: list[str] | None = None, params: list[str] | None = None):
        self.group_by = group_by
        self.features = features
        self.params = params
        self.select = select
        self.cv = cv
        self.tol = tol
        self.verbose = verbose

    def _validate(self) -> None:
        validate("LinearModel", _PARAMS, vars(self))

    def fit(self, X: pd.DataFrame, y: Any, groups: Any = None, convert_ms: Any = None) -> LinearModel:
        """Fit every group's least squares; ``y`` is runtime in ms, ``groups`` the matrix of each row
        (required; in cross-validation, see scikit-learn's model selection: :mod:`pyspmv.models`);
        ``convert_ms``: conversion time (ms) per row, for the conversion-cost fit (``convert_ms_``)."""
        self._validate()
        X, mids = self._fit_schema(X, groups, "LinearModel.fit", min_features=0)
        t = np.log(check_y(y, len(X), "LinearModel.fit"))
        A = design(X, self)
        names = candidates(self)
        gk = group_key(X, self.group_by)
        fmt = X["format"].astype(str).to_numpy() if self.schema_.own else np.full(len(X), "*", dtype=object)
        keys = np.unique(gk)
        self.feature_names_ = np.array(names)
        self.groups_ = keys
        self.coef_ = np.zeros((len(keys), A.shape[1]))
        self.intercept_ = np.zeros(len(keys))
        self.selected_: dict[str, list[str]] = {}
        for f in progress(np.unique(fmt), desc="LinearModel: formats", verbose=self.verbose):
            rows = np.flatnonzero(fmt == f)
            cols = self._select(A[rows], t[rows], gk[rows], mids[rows]) if self.select else list(range(A.shape[1]))
            self.selected_[str(f)] = [names[c] for c in cols]
            for g in np.unique(gk[rows]):
                r = rows[gk[rows] == g]
                i = int(np.searchsorted(keys, g))
                coef, b = _lstsq(A[np.ix_(r, cols)], t[r])
                self.coef_[i, cols] = coef
                self.intercept_[i] = b
        self._fit_extras(X, convert_ms, "LinearModel.fit")
        self.n_features_in_ = X.shape[1]
        return self

    def _select(self, A: np.ndarray, t: np.ndarray, gk: np.ndarray, mids: np.ndarray) -> list[int]:
        """Forward stepwise selection of columns by grouped-CV squared error summed over the groups."""
        um = np.unique(mids)
        k = min(self.cv, len(um))
        if k < 2:
            return list(range(A.shape[1]))
        fold_of = np.random.default_rng(0).permutation(len(um)) % k
        fold = fold_of[np.searchsorted(um, mids)]
        gsets = [np.flatnonzero(gk == g) for g in np.unique(gk)]

        def cv_error(cols: list[int]) -> float:
            sse = 0.0
            for r in gsets:
                for j in range(k):
                    te, tr = r[fold[r] == j], r[fold[r] != j]
                    if te.size == 0 or tr.size == 0:
                        continue
                    coef, b = _lstsq(A[np.ix_(tr, cols)], t[tr])
                    sse += float(np.sum((A[np.ix_(te, cols)] @ coef + b - t[te]) ** 2))
            return sse / len(t)

        chosen: list[int] = []
        best = cv_error(chosen)
        while len(chosen) < A.shape[1] and best > 1e-20:
            trials = [(cv_error([*chosen, c]), c) for c in range(A.shape[1]) if c not in chosen]
            err, c = min(trials)
            if not err < best * (1.0 - float(self.tol)):
                break
            chosen.append(c)
            best = err
        return sorted(chosen)

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """Predicted runtime (ms) per row of ``X``; a group not seen in training is an error."""
        check_is_fitted(self, "coef_")
        X = self._check(X, "LinearModel.predict")
        gk = group_key(X, self.group_by)
        idx = group_index(gk, self.groups_, "LinearModel.predict", "configuration group")
        A = design(X, self)
        with np.errstate(over="ignore"):      # far extrapolation predicts inf ms: ranked last, as in C
            return np.exp(np.einsum("ij,ij->i", A, self.coef_[idx]) + self.intercept_[idx])

    def _portable_table(self, layout: Any) -> Any:
        """The portable form's table (:func:`pyspmv.ranking.portable.portable`)."""
        return _linear_table(self, layout)


# ---- portable form ----------------------------------------------------------------------------

def _linear_table(model: Any, layout: Layout) -> Table | None:
    """LinearModel: the transformed features (pyspmv's: log1p of Lehnert's and the per-configuration
    features) and log2 of the parameters (NaN or <= 0 -> 1), one coefficient row per group, exp.  The
    parameters' part of the sum is a constant of each configuration: it travels as one
    per-configuration column of coefficient 1, so a ranking transforms only the matrix's features
    (once) and two columns per configuration."""
    schema = model.schema_
    if schema.own:
        ins = inputs([layout.col(n) for n in (*LEHNERT_FEATURES, *CONFIG_FEATURES)], "log1p", nan=0.0, lo=0.0,
                     hi=BIG)
        nf = len(LEHNERT_FEATURES) + len(CONFIG_FEATURES)
    else:
        ins = feature_inputs(layout, model.feature_tf_)
        nf = len(schema.features)
    group = lookup_keys(group_key(layout.frame, model.group_by), model.groups_)
    coef = np.asarray(model.coef_, dtype=np.float64)
    P = param_logs(layout.frame, schema.params)
    ins = concat_inputs(ins, inputs([layout.add([float(P[j] @ coef[g, nf:]) if g >= 0 else 0.0
                                                 for j, g in enumerate(group)])]))
    G = len(model.groups_)
    spec = Spec("linear", {**head(G, layout.ncols, ins, "exp"),
                           "coef": np.ascontiguousarray(np.hstack([coef[:, :nf], np.ones((G, 1))])).reshape(-1),
                           "intercept": np.ascontiguousarray(model.intercept_, dtype=np.float64)})
    return layout.table(group, spec)
