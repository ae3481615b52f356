"""k nearest training matrices, per configuration, on 0-1 normalised weighted features (Lehnert et al.)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from .._params import Interval, validate
from ..ranking.layout import Layout, feature_inputs, lookup_keys
from ..ranking.rankmodel import Table
from ..ranking.spec import KNN_WEIGHTING, Spec, head
from ._common import VERBOSE, RankMixin, check_y, group_index, group_key, progress, unique_rows

_EPS = 1e-12  # distance floor of the inverse-distance weights: a duplicate matrix dominates, no division by 0


def _neighbour_mean(order: np.ndarray, dist: np.ndarray, T: np.ndarray, k: np.ndarray) -> np.ndarray:
    """Inverse-distance mean of T over the first k[c] neighbours (in ``order``) with T finite.

    order, dist: (m, n) neighbour indices and their distances, nearest first; T: (n_train, C); k: (C,).
    Returns (m, C), NaN where no neighbour has a value."""
    V = T[order]                                   # (m, n, C)
    ok = np.isfinite(V)
    take = ok & (np.cumsum(ok, axis=1, dtype=np.int32) <= k[None, None, :])
    w = np.where(take, 1.0 / np.maximum(dist, _EPS)[:, :, None], 0.0)
    sw = w.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(sw > 0, np.einsum("mnc,mnc->mc", w, np.where(take, V, 0.0)) / sw, np.nan)


#: KNNModel's parameters, checked when it fits.
_PARAMS = {"verbose": VERBOSE, "k": Interval("int", 1)}


class KNNModel(RankMixin, RegressorMixin, BaseEstimator):
    """Runtime of a configuration from the k nearest training matrices measured with it.

    Features are the transformed matrix features (``log1p``; signed ones ``sign * log1p(|x|)``), scaled to [0, 1] by the training minimum and maximum,
    and weighted per feature; the distance is the weighted Euclidean one. The prediction is the
    inverse-distance-weighted geometric mean of the neighbours' runtimes (weight 1/max(d, 1e-12)).
    Weights are learned by coordinate search over ``weight_grid``, each step keeping the value with the
    lowest leave-one-matrix-out squared log error (a grouped cross-validation with one matrix per fold).

    Parameters
    ----------
    k : int, default=4
        Neighbours for formats not in ``k_by_format``.
    k_by_format : dict or None, default=None
        Neighbours per format (on a user's schema: per configuration id); None means ``{"sell": 2}``
        (Lehnert's best).
    features : list of str or None, default=None
        Matrix features used; None: all of :data:`pyspmv.FEATURE_NAMES`. Names that are all pyspmv's
        (with ``params`` None) choose among pyspmv's table; any other names fit the model on the user's
        own schema (see :mod:`pyspmv.models`).
    params : list of str or None, default=None
        The user's parameter columns (None: pyspmv's); unused by the distance, which is per configuration.
    learn_weights : bool, default=True
        Learn per-feature weights; False keeps them all 1.
    weight_grid : tuple of float, default=(0.0, 0.25, 1.0, 4.0)
    n_passes : int, default=2
        Passes of the coordinate search over the features.
    max_search_matrices, max_search_groups : int
        Training matrices and configuration groups sampled for the weight search (speed).
    random_state : int, default=0
    verbose : int, default=0
        0: silent; >= 1: progress bars on stderr (scikit-learn's convention).

    Attributes
    ----------
    features_ : list of str; ``lo_``, ``hi_`` : ndarray, the min-max scaling of the transformed features;
    ``weights_`` : ndarray, per feature; ``Z_`` : ndarray (n_matrices, n_features), the scaled training matrices;
    ``groups_`` : ndarray of str, configuration keys (``config@f32|f64``); ``T_`` : ndarray (n_matrices, n_groups),
    log runtime (NaN where not measured); ``k_`` : ndarray of int, neighbours per group.
    """

    def __init__(self, k: int = 4, k_by_format: dict[str, int] | None = None, features: list[str] | None = None,
                 learn_weights: bool = True, weight_grid: tuple[float, ...] = (0.0, 0.25, 1.0, 4.0),
                 n_passes: int = 2, max_search_matrices: int = 400, max_search_groups: int = 48,
                 random_state: int = 0, verbose: int = 0, params: list[str] | None = None):
        self.k = k
        self.params = params
        self.k_by_format = k_by_format
        self.features = features
        self.learn_weights = learn_weights
        self.weight_grid = weight_grid
        self.n_passes = n_passes
        self.max_search_matrices = max_search_matrices
        self.max_search_groups = max_search_groups
        self.random_state = random_state
        self.verbose = verbose

    def _scale(self, X: pd.DataFrame) -> np.ndarray:
        span = np.where(self.hi_ > self.lo_, self.hi_ - self.lo_, 1.0)
        return (self.feature_tf_.subset(self.features_).apply(X) - self.lo_) / span

    def fit(self, X: pd.DataFrame, y: Any, groups: Any = None, convert_ms: Any = None) -> KNNModel:
        """Store the training matrices' scaled features and log runtimes and learn the feature weights;
        ``groups``: the matrix of each row (required; in cross-validation, see scikit-learn's model selection: :mod:`pyspmv.models`);
        ``convert_ms``: conversion time (ms) per row, for the conversion-cost fit (``convert_ms_``)."""
        validate("KNNModel", _PARAMS, vars(self))
        kbf = {"sell": 2} if self.k_by_format is None else dict(self.k_by_format)
        for f, v in kbf.items():
            if not isinstance(v, int | np.integer) or v < 1:
                raise ValueError(f"The 'k_by_format' parameter of KNNModel must map formats to ints >= 1. "
                                 f"Got {f}={v!r} instead.")
        X, mids = self._fit_schema(X, groups, "KNNModel.fit", own_subset=True)
        t = np.log(check_y(y, len(X), "KNNModel.fit"))
        self.features_ = list(self.schema_.features if self.features is None else self.features)
        if not self.features_:
            raise ValueError("The 'features' parameter of KNNModel must name at least 1 feature. Got 0.")
        first = np.unique(mids, return_index=True)[1]
        L = self.feature_tf_.subset(self.features_).apply(X.iloc[first])
        self.lo_, self.hi_ = L.min(axis=0), L.max(axis=0)
        self.Z_ = self._scale(X.iloc[first])
        gk = group_key(X, "config")
        self.groups_, gi = np.unique(gk, return_inverse=True)
        self.T_ = np.full((len(first), len(self.groups_)), np.nan)
        self.T_[mids, gi] = t
        fcol = X["format"] if "format" in X.columns else X["config"]     # a user's schema: k_by_format by id
        fmt = pd.Series(fcol.astype(str).to_numpy()).groupby(gi).first()
        self.k_ = np.array([int(kbf.get(fmt[g], self.k)) for g in range(len(self.groups_))])
        self.weights_ = np.ones(len(self.features_))
        if self.learn_weights and len(first) > 2:
            self._search()
        self._fit_extras(X, convert_ms, "KNNModel.fit")
        self.n_features_in_ = X.shape[1]
        return self

    def _search(self) -> None:
        """Coordinate search of the feature weights by leave-one-matrix-out error on a sample."""
        rng = np.random.default_rng(self.random_state)
        m, C = self.T_.shape
        rows = rng.choice(m, min(m, self.max_search_matrices), replace=False)
        cols = rng.choice(C, min(C, self.max_search_groups), replace=False)
        Z, T, k = self.Z_[rows], self.T_[np.ix_(rows, cols)], self.k_[cols]
        D2 = (Z[:, None, :] - Z[None, :, :]) ** 2                                     # (m, m, f)

        def loo(w: np.ndarray) -> float:
            d = np.sqrt(D2 @ w)
            np.fill_diagonal(d, np.inf)
            order = np.argsort(d, axis=1, kind="stable")[:, :-1]                      # self last, dropped
            pred = _neighbour_mean(order, np.take_along_axis(d, order, axis=1), T, k)
            err = (pred - T) ** 2
            return float(np.nanmean(err)) if np.isfinite(err).any() else np.inf

        w = self.weights_.copy()
        best = loo(w)
        with progress(total=self.n_passes * len(w), desc="KNNModel: feature weights", verbose=self.verbose) as bar:
            for _ in range(self.n_passes):
                changed = False
                for f in range(len(w)):
                    for v in self.weight_grid:
                        if v == w[f]:
                            continue
                        trial = w.copy()
                        trial[f] = v
                        if not trial.any():
                            continue
                        e = loo(trial)
                        if e < best - 1e-12:
                            best, w, changed = e, trial, True
                    bar.update(1)
                if not changed:
                    break
        self.weights_ = w
        self.loo_error_ = best

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """Predicted runtime (ms) per row; a configuration not seen in training is an error."""
        check_is_fitted(self, "T_")
        X = self._check(X, "KNNModel.predict")
        gk = group_key(X, "config")
        gi = group_index(gk, self.groups_, "KNNModel.predict")
        first, mids = unique_rows(self._scale(X))       # rows of equal features share their neighbours
        Zq = self._scale(X.iloc[first])
        d = np.sqrt(((Zq[:, None, :] - self.Z_[None, :, :]) ** 2) @ self.weights_)
        out = np.empty(len(X))
        for q in range(len(first)):
            r = np.flatnonzero(mids == q)
            cols = gi[r]
            order = np.argsort(d[q], kind="stable")[None, :]
            pred = _neighbour_mean(order, d[q][order], self.T_[:, cols], self.k_[cols])[0]
            out[r] = pred
        return np.exp(out)

    def _portable_table(self, layout: Any) -> Any:
        """The portable form's table (:func:`pyspmv.ranking.portable.portable`)."""
        return _knn_table(self, layout)


# ---- portable form ----------------------------------------------------------------------------

def _knn_table(model: Any, layout: Layout) -> Table | None:
    """KNNModel: transformed features min-max scaled by the training range; one point set (the training
    matrices) with the learned weights; per configuration its target column (log runtime, NaN where
    not measured) and k; weights 1 / max(d, 1e-12); exp."""
    span = np.where(model.hi_ > model.lo_, model.hi_ - model.lo_, 1.0)
    ins = feature_inputs(layout, model.feature_tf_.subset(model.features_), shift=model.lo_, div=span)
    group = lookup_keys(group_key(layout.frame, "config"), model.groups_)
    m, G = model.T_.shape
    spec = Spec("knn", {**head(G, layout.ncols, ins, "exp"), "knn.nsets": 1, "knn.npoints": m, "knn.ntargets": G,
                        "knn.set_ptr": np.array([0, m], np.int32),
                        "knn.points": np.ascontiguousarray(model.Z_, dtype=np.float64).reshape(-1),
                        "knn.target": np.ascontiguousarray(model.T_, dtype=np.float64).reshape(-1),
                        "knn.weight": np.ascontiguousarray(model.weights_, dtype=np.float64),
                        "knn.set": np.zeros(G, np.int32), "knn.k": np.asarray(model.k_, np.int32),
                        "knn.tcol": np.arange(G, dtype=np.int32), "knn.weighting": KNN_WEIGHTING["floor"], "knn.dmin": float(_EPS)})
    return layout.table(group, spec)
