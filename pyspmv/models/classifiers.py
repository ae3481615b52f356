"""Classifiers of the best configuration: Li & Suda's SVMs and Gao et al.'s cascade of boosted trees."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.model_selection import KFold, cross_val_score
from sklearn.svm import SVC, SVR
from sklearn.utils.validation import check_is_fitted

from ..features import FEATURE_NAMES
from ._common import RankMixin, check_verbose, check_X, check_y, group_key, log_features, matrix_ids, progress


def _matrix_table(X: pd.DataFrame, groups: Any) -> tuple[np.ndarray, np.ndarray]:
    """Ids of (matrix, value type) per row and the first row of each."""
    mids = matrix_ids(X, groups)
    vb = X["value_bytes"].to_numpy(dtype=np.float64)
    key = pd.factorize(pd.Series(mids).astype(str) + "@" + pd.Series(vb).astype(str))[0]
    return key, np.unique(key, return_index=True)[1]


def _inputs(X: pd.DataFrame) -> np.ndarray:
    """log1p of the 33 matrix features and the value size."""
    return np.hstack([log_features(X, FEATURE_NAMES), X[["value_bytes"]].to_numpy(dtype=np.float64)])


class SVMModel(RankMixin, ClassifierMixin, BaseEstimator):
    """Li & Suda's SVMs: per configuration, an RBF SVC says good or bad, an epsilon-SVR predicts runtime.

    For each training matrix (and value type), with performance p = 1/runtime over its configurations,
    a configuration is *good* if ``p >= mean(p) + factor * (max(p) - mean(p))``. Per configuration an
    SVC learns good/bad and an SVR learns log runtime from standardised log1p matrix features.
    C and gamma of each kind are chosen by 5-fold cross-validation over matrices (one row per matrix
    per configuration, so folds never share a matrix) on a sample of configurations.

    ``predict(X)`` returns 1 (good) or 0 per row; ``predict_ms(X)`` the SVR runtime;
    ``rank_scores(X)`` the SVR runtime, times ``bad_penalty`` for rows classified bad, so the pick is
    the fastest predicted among the good ones.

    Parameters
    ----------
    factor : float, default=0.5
    C_grid, gamma_grid : tuple of float
        Grids of the cross-validation; gamma values are multiplied by 1 / n_inputs.
    epsilon : float, default=0.05
        SVR's epsilon (log ms).
    bad_penalty : float, default=1e3
    max_search_groups : int, default=16
    random_state : int, default=0
    verbose : int, default=0
        0: silent; >= 1: progress bars on stderr (scikit-learn's convention).

    Attributes
    ----------
    groups_ : ndarray of str; mean_, scale_ : ndarray, the standardisation; svc_C_, svc_gamma_, svr_C_,
    svr_gamma_ : float; svcs_ : list of SVC or None (one class only: const_ holds it); const_ : ndarray;
    svrs_ : list of SVR; classes_ : ndarray [0, 1].
    """

    def __init__(self, factor: float = 0.5, C_grid: tuple[float, ...] = (1.0, 10.0, 100.0),
                 gamma_grid: tuple[float, ...] = (0.3, 1.0, 3.0), epsilon: float = 0.05, bad_penalty: float = 1e3,
                 max_search_groups: int = 16, random_state: int = 0, verbose: int = 0):
        self.factor = factor
        self.C_grid = C_grid
        self.gamma_grid = gamma_grid
        self.epsilon = epsilon
        self.bad_penalty = bad_penalty
        self.max_search_groups = max_search_groups
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X: pd.DataFrame, y: Any, groups: Any = None, convert_ms: Any = None) -> SVMModel:
        """Label configurations per matrix from runtimes ``y`` (ms) and fit the SVC and SVR of each;
        ``convert_ms``: conversion time (ms) per row, for the conversion-cost fit (``convert_ms_``)."""
        check_verbose(self.verbose, "SVMModel")
        if not 0.0 <= float(self.factor) <= 1.0:
            raise ValueError(f"The 'factor' parameter of SVMModel must be a float in [0, 1]. Got {self.factor!r} "
                             "instead.")
        X = check_X(X, "SVMModel.fit")
        ms = check_y(y, len(X), "SVMModel.fit")
        key, _ = _matrix_table(X, groups)
        perf = pd.Series(1.0 / ms)
        g = perf.groupby(key)
        top, mean = g.transform("max").to_numpy(), g.transform("mean").to_numpy()
        good = (perf.to_numpy() >= mean + float(self.factor) * (top - mean) - 1e-12 * top).astype(int)
        F = _inputs(X)
        self.mean_, self.scale_ = F.mean(axis=0), F.std(axis=0)
        self.scale_[self.scale_ == 0] = 1.0
        Z = (F - self.mean_) / self.scale_
        gk = group_key(X, "config")
        self.groups_ = np.unique(gk)
        rows = [np.flatnonzero(gk == k) for k in self.groups_]
        t = np.log(ms)
        self._choose(Z, good, t, rows)
        self.svcs_, self.svrs_ = [], []
        self.const_ = np.zeros(len(rows), dtype=int)
        nf = Z.shape[1]
        for i, r in enumerate(progress(rows, desc="SVMModel: configurations", verbose=self.verbose)):
            labels = good[r]
            if labels.min() == labels.max():
                self.svcs_.append(None)
                self.const_[i] = labels[0]
            else:
                self.svcs_.append(SVC(C=self.svc_C_, gamma=self.svc_gamma_ / nf).fit(Z[r], labels))
            self.svrs_.append(SVR(C=self.svr_C_, gamma=self.svr_gamma_ / nf, epsilon=self.epsilon).fit(Z[r], t[r]))
        self.classes_ = np.array([0, 1])
        self._fit_extras(X, convert_ms, "SVMModel.fit")
        self.n_features_in_ = X.shape[1]
        return self

    def _choose(self, Z: np.ndarray, good: np.ndarray, t: np.ndarray, rows: list[np.ndarray]) -> None:
        """C and gamma of the SVC and of the SVR by 5-fold CV pooled over sampled configurations."""
        rng = np.random.default_rng(self.random_state)
        sample = [rows[i] for i in rng.permutation(len(rows))[: self.max_search_groups] if len(rows[i]) >= 10]
        nf = Z.shape[1]
        best_c, best_r = (-np.inf, 1.0, 1.0), (-np.inf, 1.0, 1.0)
        grid = [(C, gm) for C in self.C_grid for gm in self.gamma_grid]
        for C, gm in progress(grid, desc="SVMModel: C and gamma (CV)", verbose=self.verbose):
            sc, sr = [], []
            for r in sample:
                cv = KFold(5, shuffle=True, random_state=self.random_state)
                lab = good[r]
                if lab.min() != lab.max() and np.bincount(lab).min() >= 5:
                    sc.append(cross_val_score(SVC(C=C, gamma=gm / nf), Z[r], lab, cv=cv).mean())
                sr.append(cross_val_score(SVR(C=C, gamma=gm / nf, epsilon=self.epsilon), Z[r], t[r], cv=cv,
                                          scoring="neg_mean_squared_error").mean())
            if sc and np.mean(sc) > best_c[0]:
                best_c = (float(np.mean(sc)), C, gm)
            if sr and np.mean(sr) > best_r[0]:
                best_r = (float(np.mean(sr)), C, gm)
        _, self.svc_C_, self.svc_gamma_ = best_c
        _, self.svr_C_, self.svr_gamma_ = best_r

    def _each(self, X: pd.DataFrame, who: str) -> tuple[np.ndarray, np.ndarray, list[tuple[int, np.ndarray]]]:
        check_is_fitted(self, "svrs_")
        X = check_X(X, who)
        Z = (_inputs(X) - self.mean_) / self.scale_
        gk = group_key(X, "config")
        parts = []
        for g in np.unique(gk):
            i = int(np.searchsorted(self.groups_, g))
            if i >= len(self.groups_) or self.groups_[i] != g:
                raise ValueError(f"The 'X' parameter of {who} has configuration {g!r} that the model was not "
                                 f"trained on ({len(self.groups_)} known).")
            parts.append((i, np.flatnonzero(gk == g)))
        return Z, gk, parts

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """1 where the configuration is classified good for the row's matrix, else 0."""
        Z, _, parts = self._each(X, "SVMModel.predict")
        out = np.zeros(len(Z), dtype=int)
        for i, r in parts:
            out[r] = self.const_[i] if self.svcs_[i] is None else self.svcs_[i].predict(Z[r])
        return out

    def predict_ms(self, X: pd.DataFrame) -> np.ndarray:
        """The SVR's runtime (ms) per row."""
        Z, _, parts = self._each(X, "SVMModel.predict_ms")
        out = np.empty(len(Z))
        for i, r in parts:
            out[r] = np.exp(self.svrs_[i].predict(Z[r]))
        return out

    def rank_scores(self, X: pd.DataFrame) -> np.ndarray:
        """SVR runtime, times ``bad_penalty`` where classified bad (lower is better)."""
        return self.predict_ms(X) * np.where(self.predict(X) == 1, 1.0, float(self.bad_penalty))


class CascadeModel(RankMixin, ClassifierMixin, BaseEstimator):
    """Gao et al.'s cascade: format, then library (own kernels or cuSPARSE), then the configuration.

    Labels, for every training matrix (and value type): level 1, the format of its fastest configuration;
    level 2 for each format, the library of the fastest configuration *of that format*; level 3 for each
    (format, library), the fastest configuration of that pair (its parameters: threads per row, block
    size, C and sigma ...). Each level is made for every matrix on which the choice exists, not only
    for those whose level-1 label led there, so deeper classifiers see all the data. Each node is a
    GradientBoostingClassifier on log1p matrix features and the value size.

    ``predict(X)`` returns 1 for the row the cascade picks for its matrix, else 0; ``rank_scores(X)``
    is minus the chained probability P(format) P(library | format) P(config | format, library).

    Parameters
    ----------
    n_estimators, learning_rate, max_depth, random_state
        Passed to every GradientBoostingClassifier.
    verbose : int, default=0
        0: silent; >= 1: progress bars on stderr (scikit-learn's convention).

    Attributes
    ----------
    nodes_ : list of str (``""``, ``"<format>"``, ``"<format>/<library>"``); labels_ : list of ndarray, the
    classes of each node; classifiers_ : list of GradientBoostingClassifier or None (one class only);
    classes_ : ndarray [0, 1].
    """

    def __init__(self, n_estimators: int = 100, learning_rate: float = 0.1, max_depth: int = 3,
                 random_state: int = 0, verbose: int = 0):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.random_state = random_state
        self.verbose = verbose

    def fit(self, X: pd.DataFrame, y: Any, groups: Any = None, convert_ms: Any = None) -> CascadeModel:
        """Make the three levels' labels from runtimes ``y`` (ms) and fit one classifier per node;
        ``convert_ms``: conversion time (ms) per row, for the conversion-cost fit (``convert_ms_``)."""
        check_verbose(self.verbose, "CascadeModel")
        X = check_X(X, "CascadeModel.fit")
        ms = check_y(y, len(X), "CascadeModel.fit")
        key, first = _matrix_table(X, groups)
        F = _inputs(X.iloc[first])
        df = pd.DataFrame({"key": key, "ms": ms, "format": X["format"].astype(str).to_numpy(),
                           "library": X["library"].astype(str).to_numpy(), "config": X["config"].astype(str).to_numpy()})
        self.nodes_, self.labels_, self.classifiers_ = [], [], []
        pairs = df[["format", "library"]].drop_duplicates()
        bar = progress(total=1 + pairs["format"].nunique() + len(pairs), desc="CascadeModel: nodes", verbose=self.verbose)

        def node(name: str, sub: pd.DataFrame, label: str) -> None:
            best = sub.loc[sub.groupby("key")["ms"].idxmin()]
            lab = best[label].to_numpy()
            classes = np.unique(lab)
            clf = None
            if len(classes) > 1:
                clf = GradientBoostingClassifier(n_estimators=self.n_estimators, learning_rate=self.learning_rate,
                                                 max_depth=self.max_depth, random_state=self.random_state)
                with warnings.catch_warnings():   # many classes for few matrices is expected deep in the cascade
                    warnings.filterwarnings("ignore", message="The number of unique classes is greater than 50%")
                    clf.fit(F[best["key"].to_numpy()], lab)
                classes = clf.classes_
            self.nodes_.append(name)
            self.labels_.append(np.asarray(classes, dtype=object))
            self.classifiers_.append(clf)
            bar.update(1)

        node("", df, "format")
        for f in sorted(df["format"].unique()):
            sf = df[df["format"] == f]
            node(f, sf, "library")
            for lib in sorted(sf["library"].unique()):
                node(f"{f}/{lib}", sf[sf["library"] == lib], "config")
        bar.close()
        self.classes_ = np.array([0, 1])
        self._fit_extras(X, convert_ms, "CascadeModel.fit")
        self.n_features_in_ = X.shape[1]
        return self

    def _proba(self, i: int, F: np.ndarray) -> np.ndarray:
        clf = self.classifiers_[i]
        return np.ones((len(F), 1)) if clf is None else clf.predict_proba(F)

    def rank_scores(self, X: pd.DataFrame) -> np.ndarray:
        """Minus P(format) P(library | format) P(config | format, library) per row (lower is better)."""
        check_is_fitted(self, "classifiers_")
        X = check_X(X, "CascadeModel.rank_scores")
        key, first = _matrix_table(X, None)
        F = _inputs(X.iloc[first])
        idx = {n: i for i, n in enumerate(self.nodes_)}
        fmt, lib, cfg = (X[c].astype(str).to_numpy() for c in ("format", "library", "config"))
        p = np.zeros(len(X))
        cache: dict[int, np.ndarray] = {}

        def prob(name: str, label: str, rows: np.ndarray) -> np.ndarray:
            i = idx.get(name)
            if i is None:
                return np.zeros(len(rows))
            if i not in cache:
                cache[i] = self._proba(i, F)
            hit = np.flatnonzero(self.labels_[i] == label)
            return cache[i][key[rows], hit[0]] if hit.size else np.zeros(len(rows))

        for (f, b, c), r in pd.DataFrame({"f": fmt, "b": lib, "c": cfg}).groupby(["f", "b", "c"]).indices.items():
            p[r] = prob("", f, r) * prob(f, b, r) * prob(f"{f}/{b}", c, r)
        return -p

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """1 for the row picked for its matrix (highest chained probability), else 0."""
        s = self.rank_scores(X)
        key, _ = _matrix_table(X, None)
        out = np.zeros(len(X), dtype=int)
        out[pd.Series(s).groupby(key).idxmin().to_numpy()] = 1
        return out
