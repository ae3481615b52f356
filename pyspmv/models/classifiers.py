"""Classifiers of the best configuration: Li & Suda's SVMs and Gao et al.'s cascade of boosted trees."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import warnings
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, ClassifierMixin
from sklearn.ensemble import GradientBoostingClassifier
from sklearn.model_selection import KFold
from sklearn.svm import LinearSVC, LinearSVR
from sklearn.utils.validation import check_is_fitted

from .._params import Interval, validate
from ..ranking.layout import Layout, feature_inputs, lookup_keys
from ..ranking.rankmodel import Table
from ..ranking.spec import Spec, concat_inputs, head, inputs
from ._common import (
    VERBOSE,
    RankMixin,
    check_groups,
    check_verbose,
    check_y,
    group_index,
    group_key,
    progress,
    unique_rows,
    unit_key,
)
from ._trees import gb_ensembles, tree_fields


def _units(mids: np.ndarray, X: pd.DataFrame) -> tuple[np.ndarray, np.ndarray]:
    """Ids of (matrix, value type) per row and the first row of each."""
    key = pd.factorize(unit_key(mids, X["value_bytes"]))[0]
    return key, np.unique(key, return_index=True)[1]


def _inputs(model: Any, X: pd.DataFrame) -> np.ndarray:
    """The transformed matrix features (``feature_tf_``) and the value size."""
    return np.hstack([model.feature_tf_.apply(X), X[["value_bytes"]].to_numpy(dtype=np.float64)])


def _rbf(Z: np.ndarray, P: np.ndarray, gamma: float) -> np.ndarray:
    """exp(-gamma |z - p|^2) of every row of Z against every landmark P (as csrc/model_svm.c sums it)."""
    d2 = ((Z[:, None, :] - P[None, :, :]) ** 2).sum(axis=2)
    return np.exp(-gamma * d2)


#: SVMModel's parameters, checked when it fits.
_SVM_PARAMS = {"verbose": VERBOSE, "factor": Interval("float", 0, 1, "both"), "n_components": Interval("int", 1)}


class SVMModel(RankMixin, ClassifierMixin, BaseEstimator):
    """Li & Suda's SVMs: per configuration, an RBF classifier says good or bad, an epsilon-SVR predicts runtime.

    For each training matrix (and value type), with performance p = 1/runtime over its configurations,
    a configuration is *good* if ``p >= mean(p) + factor * (max(p) - mean(p))``. Inputs are the
    standardised transformed matrix features and value size. The RBF kernel is approximated on
    ``n_components`` landmark training matrices (a reduced-set kernel machine: the features of a
    matrix are its kernel values against the landmarks), on which per configuration a linear SVC
    learns good/bad and a linear epsilon-SVR learns log runtime, so that a fit costs linear time in
    the matrices instead of the quadratic-to-cubic time of exact SVMs (liblinear's primal solvers:
    squared hinge and squared epsilon-insensitive losses). The decision functions are
    still ``sum_i w_i exp(-gamma |z - landmark_i|^2) + b``, the form csrc/model_svm.c evaluates.
    C and gamma of each kind are chosen by 3-fold cross-validation over matrices (one row per matrix
    per configuration, so folds never share a matrix) on a sample of configurations.

    On datasets/h100 in float64 (65,530 rows: 508 matrices x 135 configurations) a fit takes 5.2 s on
    the 2-core AMD EPYC dev VM, where the exact SVMs took 15.4 s (11.5 s against 43.1 s on 2,540
    matrices x 8 configurations); on its held-out quarter of the matrices (seed 0) 83.5 % of picks are
    within 5 % of the best, geomean t_pick / t_best 1.037 (exact SVMs: 85.0 %, 1.028; 256 landmarks:
    85.0 %, 1.034).

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
    n_components : int, default=128
        Landmark matrices of the kernel approximation (at most the training matrices).
    max_search_groups : int, default=16
    random_state : int, default=0
    verbose : int, default=0
        0: silent; >= 1: progress bars on stderr (scikit-learn's convention).
    features, params : list of str or None, default=None
        The feature and parameter columns of X (None: pyspmv's; see :mod:`pyspmv.models`).

    Attributes
    ----------
    groups_ : ndarray of str; ``mean_``, ``scale_`` : ndarray, the standardisation; ``landmarks_`` :
    ndarray (n_components, n_inputs), standardised; ``svc_C_``, ``svc_gamma_``, ``svr_C_``, ``svr_gamma_`` :
    float; ``svc_coef_``, ``svr_coef_`` : ndarray (n_groups, n_components), ``svc_intercept_``,
    ``svr_intercept_`` : ndarray (n_groups,), the decision functions on the kernel features (a configuration
    of one class only: coefficients 0 and intercept +1 or -1); ``classes_`` : ndarray [0, 1].
    """

    def __init__(self, factor: float = 0.5, C_grid: tuple[float, ...] = (1.0, 10.0, 100.0),
                 gamma_grid: tuple[float, ...] = (0.3, 1.0, 3.0), epsilon: float = 0.05, bad_penalty: float = 1e3,
                 n_components: int = 128, max_search_groups: int = 16, random_state: int = 0, verbose: int = 0,
                 features: list[str] | None = None, params: list[str] | None = None):
        self.factor = factor
        self.C_grid = C_grid
        self.gamma_grid = gamma_grid
        self.epsilon = epsilon
        self.bad_penalty = bad_penalty
        self.n_components = n_components
        self.max_search_groups = max_search_groups
        self.random_state = random_state
        self.verbose = verbose
        self.features = features
        self.params = params

    def fit(self, X: pd.DataFrame, y: Any, groups: Any = None, convert_ms: Any = None) -> SVMModel:
        """Label configurations per matrix from runtimes ``y`` (ms) and fit the SVC and SVR of each;
        ``groups``: the matrix of each row (required; in cross-validation, see scikit-learn's model selection: :mod:`pyspmv.models`);
        ``convert_ms``: conversion time (ms) per row, for the conversion-cost fit (``convert_ms_``)."""
        validate("SVMModel", _SVM_PARAMS, vars(self))
        X, mids = self._fit_schema(X, groups, "SVMModel.fit")
        ms = check_y(y, len(X), "SVMModel.fit")
        key, first = _units(mids, X)
        perf = pd.Series(1.0 / ms)
        g = perf.groupby(key)
        top, mean = g.transform("max").to_numpy(), g.transform("mean").to_numpy()
        good = (perf.to_numpy() >= mean + float(self.factor) * (top - mean) - 1e-12 * top).astype(int)
        F = _inputs(self, X)
        self.mean_, self.scale_ = F.mean(axis=0), F.std(axis=0)
        self.scale_[self.scale_ == 0] = 1.0
        Z = (F - self.mean_) / self.scale_
        rng = np.random.default_rng(self.random_state)
        uz, _ = unique_rows(Z[first])
        pick = rng.permutation(len(uz))[: int(self.n_components)]
        self.landmarks_ = Z[first[uz[np.sort(pick)]]]
        gk = group_key(X, "config")
        self.groups_ = np.unique(gk)
        rows = [np.flatnonzero(gk == k) for k in self.groups_]
        t = np.log(ms)
        # every row's kernel features come from its unit's (matrix and value type's) inputs
        self._choose(Z, first, key, good, t, rows, rng)
        nf = Z.shape[1]
        Kc = _rbf(Z[first], self.landmarks_, self.svc_gamma_ / nf)             # per unit; rows take key[r]
        Kr = Kc if self.svr_gamma_ == self.svc_gamma_ else _rbf(Z[first], self.landmarks_, self.svr_gamma_ / nf)
        G, m = len(rows), len(self.landmarks_)
        self.svc_coef_, self.svr_coef_ = np.zeros((G, m)), np.zeros((G, m))
        self.svc_intercept_, self.svr_intercept_ = np.zeros(G), np.zeros(G)
        for i, r in enumerate(progress(rows, desc="SVMModel: configurations", verbose=self.verbose)):
            labels = good[r]
            if labels.min() == labels.max():
                self.svc_intercept_[i] = 1.0 if labels[0] == 1 else -1.0
            else:
                c = _svc(self.svc_C_).fit(Kc[key[r]], labels)
                self.svc_coef_[i], self.svc_intercept_[i] = c.coef_[0], c.intercept_[0]
            v = _svr(self.svr_C_, self.epsilon).fit(Kr[key[r]], t[r])
            self.svr_coef_[i], self.svr_intercept_[i] = v.coef_, float(np.ravel(v.intercept_)[0])
        self.classes_ = np.array([0, 1])
        self._fit_extras(X, convert_ms, "SVMModel.fit")
        self.n_features_in_ = X.shape[1]
        return self

    def _choose(self, Z: np.ndarray, first: np.ndarray, key: np.ndarray, good: np.ndarray, t: np.ndarray,
                rows: list[np.ndarray], rng: np.random.Generator) -> None:
        """C and gamma of the SVC and of the SVR by 3-fold CV pooled over sampled configurations."""
        sample = [rows[i] for i in rng.permutation(len(rows))[: self.max_search_groups] if len(rows[i]) >= 10]
        nf = Z.shape[1]
        best_c, best_r = (-np.inf, self.C_grid[0], self.gamma_grid[0]), (-np.inf, self.C_grid[0], self.gamma_grid[0])
        cv = KFold(3, shuffle=True, random_state=self.random_state)
        grid = [(gm, C) for gm in self.gamma_grid for C in self.C_grid]
        K, K_gm = None, None
        for gm, C in progress(grid, desc="SVMModel: C and gamma (CV)", verbose=self.verbose):
            if gm != K_gm:
                K, K_gm = _rbf(Z[first], self.landmarks_, gm / nf), gm
            sc, sr = [], []
            for r in sample:
                lab = good[r]
                two = lab.min() != lab.max() and np.bincount(lab).min() >= 3
                for tr, te in cv.split(r):
                    a, b = r[tr], r[te]
                    Ka, Kb = K[key[a]], K[key[b]]
                    if two and lab[tr].min() != lab[tr].max():
                        sc.append(float((_svc(C).fit(Ka, good[a]).predict(Kb) == good[b]).mean()))
                    sr.append(-float(np.mean((_svr(C, self.epsilon).fit(Ka, t[a]).predict(Kb) - t[b]) ** 2)))
            if sc and np.mean(sc) > best_c[0]:
                best_c = (float(np.mean(sc)), C, gm)
            if sr and np.mean(sr) > best_r[0]:
                best_r = (float(np.mean(sr)), C, gm)
        _, self.svc_C_, self.svc_gamma_ = best_c
        _, self.svr_C_, self.svr_gamma_ = best_r

    def _decisions(self, X: pd.DataFrame, who: str) -> tuple[np.ndarray, np.ndarray]:
        """The SVR's log runtime and the SVC's decision per row, as csrc/model_svm.c sums them."""
        check_is_fitted(self, "svr_coef_")
        X = self._check(X, who)
        Z = (_inputs(self, X) - self.mean_) / self.scale_
        gk = group_key(X, "config")
        gi = group_index(gk, self.groups_, who)
        first, inv = unique_rows(Z)
        nf = Z.shape[1]
        Kc = _rbf(Z[first], self.landmarks_, self.svc_gamma_ / nf)[inv]
        Kr = _rbf(Z[first], self.landmarks_, self.svr_gamma_ / nf)[inv]
        reg = np.einsum("ij,ij->i", Kr, self.svr_coef_[gi]) + self.svr_intercept_[gi]
        cls = np.einsum("ij,ij->i", Kc, self.svc_coef_[gi]) + self.svc_intercept_[gi]
        return reg, cls

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """1 where the configuration is classified good for the row's matrix, else 0."""
        return (self._decisions(X, "SVMModel.predict")[1] > 0).astype(int)

    def predict_ms(self, X: pd.DataFrame) -> np.ndarray:
        """The SVR's runtime (ms) per row."""
        return np.exp(self._decisions(X, "SVMModel.predict_ms")[0])

    def rank_scores(self, X: pd.DataFrame) -> np.ndarray:
        """SVR runtime, times ``bad_penalty`` where classified bad (lower is better)."""
        reg, cls = self._decisions(X, "SVMModel.rank_scores")
        return np.exp(reg) * np.where(cls > 0, 1.0, float(self.bad_penalty))

    def _portable_table(self, layout: Any) -> Any:
        """The portable form's table (:func:`pyspmv.ranking.portable.portable`)."""
        return _svm_table(self, layout)


def _svc(C: float) -> LinearSVC:
    # primal solvers: more matrices than landmarks, where liblinear's dual converges slowly
    return LinearSVC(C=C, dual=False, max_iter=5000)


def _svr(C: float, epsilon: float) -> LinearSVR:
    return LinearSVR(C=C, epsilon=epsilon, loss="squared_epsilon_insensitive", dual=False, max_iter=5000)


class CascadeModel(RankMixin, ClassifierMixin, BaseEstimator):
    """Gao et al.'s cascade: format, then library (own kernels or cuSPARSE), then the configuration.

    Labels, for every training matrix (and value type): level 1, the format of its fastest configuration;
    level 2 for each format, the library of the fastest configuration *of that format*; level 3 for each
    (format, library), the fastest configuration of that pair (its parameters: threads per row, block
    size, C and sigma ...). Each level is made for every matrix on which the choice exists, not only
    for those whose level-1 label led there, so deeper classifiers see all the data. Each node is a
    GradientBoostingClassifier on the transformed matrix features and the value size. On a user's
    schema (no format or library) the cascade is one level: the configuration.

    ``predict(X, groups)`` returns 1 for the row the cascade picks for its matrix, else 0;
    ``rank_scores(X)`` is minus the chained probability P(format) P(library | format) P(config | format,
    library).

    Parameters
    ----------
    n_estimators, learning_rate, max_depth, random_state
        Passed to every GradientBoostingClassifier.
    verbose : int, default=0
        0: silent; >= 1: progress bars on stderr (scikit-learn's convention).
    features, params : list of str or None, default=None
        The feature and parameter columns of X (None: pyspmv's; see :mod:`pyspmv.models`).

    Attributes
    ----------
    levels_ : tuple of str, the columns chosen level by level; ``nodes_`` : list of str (``""``, then the
    labels of the levels above joined by ``/``: ``"<format>"``, ``"<format>/<library>"``); ``labels_`` : list
    of ndarray, the classes of each node; ``classifiers_`` : list of GradientBoostingClassifier or None (one
    class only); ``classes_`` : ndarray [0, 1].
    """

    _portable_score = "score"      # its output ranks but is no runtime

    def __init__(self, n_estimators: int = 100, learning_rate: float = 0.1, max_depth: int = 3,
                 random_state: int = 0, verbose: int = 0, features: list[str] | None = None,
                 params: list[str] | None = None):
        self.n_estimators = n_estimators
        self.learning_rate = learning_rate
        self.max_depth = max_depth
        self.random_state = random_state
        self.verbose = verbose
        self.features = features
        self.params = params

    def path(self, row: Any) -> list[tuple[str, str]]:
        """(node, label) pairs of a configuration's path, from its columns (a Series or a mapping)."""
        out, prefix = [], []
        for col in self.levels_:
            out.append(("/".join(prefix), str(row[col])))
            prefix.append(str(row[col]))
        return out

    def fit(self, X: pd.DataFrame, y: Any, groups: Any = None, convert_ms: Any = None) -> CascadeModel:
        """Make the levels' labels from runtimes ``y`` (ms) and fit one classifier per node; ``groups``:
        the matrix of each row (required; in cross-validation, see scikit-learn's model selection: :mod:`pyspmv.models`);
        ``convert_ms``: conversion time (ms) per row, for the conversion-cost fit (``convert_ms_``)."""
        check_verbose(self.verbose, "CascadeModel")
        X, mids = self._fit_schema(X, groups, "CascadeModel.fit")
        ms = check_y(y, len(X), "CascadeModel.fit")
        self.levels_ = ("format", "library", "config") if self.schema_.own else ("config",)
        key, first = _units(mids, X)
        F = _inputs(self, X.iloc[first])
        df = pd.DataFrame({"key": key, "ms": ms, **{c: X[c].astype(str).to_numpy() for c in self.levels_}})
        self.nodes_, self.labels_, self.classifiers_ = [], [], []
        bar = progress(desc="CascadeModel: nodes", verbose=self.verbose)

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

        def grow(name: str, sub: pd.DataFrame, depth: int) -> None:
            col = self.levels_[depth]
            node(name, sub, col)
            if depth + 1 < len(self.levels_):
                for v in sorted(sub[col].unique()):
                    grow(f"{name}/{v}" if name else v, sub[sub[col] == v], depth + 1)

        grow("", df, 0)
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
        X = self._check(X, "CascadeModel.rank_scores")
        Fall = _inputs(self, X)
        first, key = unique_rows(Fall)             # rows of equal inputs share their probabilities
        F = Fall[first]
        idx = {n: i for i, n in enumerate(self.nodes_)}
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

        cols = pd.DataFrame({c: X[c].astype(str).to_numpy() for c in self.levels_})
        for vals, r in cols.groupby(list(self.levels_)).indices.items():
            vals = vals if isinstance(vals, tuple) else (vals,)
            q = np.ones(len(r))
            for name, label in self.path(dict(zip(self.levels_, vals, strict=True))):
                q = q * prob(name, label, r)
            p[r] = q
        return -p

    def predict(self, X: pd.DataFrame, groups: Any = None) -> np.ndarray:
        """1 for the row picked for its matrix (highest chained probability; ``groups``, required: the
        matrix of each row), else 0."""
        g = check_groups(groups, len(X) if hasattr(X, "__len__") else -1, "CascadeModel.predict")
        s = self.rank_scores(X)
        key, _ = _units(g, self._check(X, "CascadeModel.predict"))
        out = np.zeros(len(X), dtype=int)
        out[pd.Series(s).groupby(key).idxmin().to_numpy()] = 1
        return out

    def _portable_table(self, layout: Any) -> Any:
        """The portable form's table (:func:`pyspmv.ranking.portable.portable`)."""
        return _cascade_table(self, layout)


# ---- portable form ----------------------------------------------------------------------------

def _matrix_inputs(model: Any, layout: Layout) -> dict[str, Any]:
    """pyspmv.models.classifiers' ``_inputs``: the transformed features and the value size."""
    return concat_inputs(feature_inputs(layout, model.feature_tf_), inputs([layout.col("value_bytes")]))


def _svm_table(model: Any, layout: Layout) -> Table | None:
    """SVMModel: standardised inputs; per configuration the SVR (log ms, exp) and the classifier, each
    ``sum_i coef_i exp(-gamma |z - landmark_i|^2) + intercept`` over the shared landmarks (a classifier
    of one class: its intercept +1 or -1 alone), the penalty where the classifier says bad."""
    base = _matrix_inputs(model, layout)
    ins = {**base, "in_shift": np.ascontiguousarray(model.mean_, dtype=np.float64),
           "in_div": np.ascontiguousarray(model.scale_, dtype=np.float64)}
    G, ni = len(model.groups_), ins["ninputs"]
    L = np.asarray(model.landmarks_, dtype=np.float64)
    sets = [(model.svr_coef_[g], model.svr_intercept_[g], model.svr_gamma_) for g in range(G)]
    sets += [(model.svc_coef_[g], model.svc_intercept_[g], model.svc_gamma_) for g in range(G)]
    ptr, sv, dual, gam, icpt = [0], [], [], [], []
    for coef, b, gm in sets:
        used = bool(np.any(coef != 0))
        if used:
            sv.append(L)
            dual.append(np.asarray(coef, dtype=np.float64))
        gam.append(float(gm) / ni)
        icpt.append(float(b))
        ptr.append(ptr[-1] + (len(L) if used else 0))
    spec = Spec("svm", {**head(G, layout.ncols, ins, "exp"), "svm.nsv": ptr[-1], "svm.classify": 1,
                        "svm.penalty": float(model.bad_penalty), "svm.sv_ptr": np.array(ptr, np.int32),
                        "svm.sv": np.ascontiguousarray(np.vstack(sv) if sv else np.zeros((0, ni))).reshape(-1),
                        "svm.dual": np.ascontiguousarray(np.concatenate(dual) if dual else np.zeros(0)),
                        "svm.gamma": np.array(gam), "svm.intercept": np.array(icpt)})
    group = lookup_keys(group_key(layout.frame, "config"), model.groups_)
    return layout.table(group, spec)


def _cascade_table(model: Any, layout: Layout) -> Table | None:
    """CascadeModel: each node's GradientBoostingClassifier as a tree stage (or one class), each
    configuration's path through the levels (pyspmv's: format -> library -> configuration) as
    (stage, class) pairs; the score is minus the chained probability."""
    ins = _matrix_inputs(model, layout)
    subs = []
    for clf in model.classifiers_:
        if clf is None:
            subs.append(Spec("constant", {**head(1, layout.ncols, inputs([])), "ngroups": 1}))
            continue
        ens = gb_ensembles(clf, ins["ninputs"])
        subs.append(Spec("trees", {**head(1, layout.ncols, ins), "trees.nout": len(ens),
                                   **tree_fields(ens, clf.learning_rate, True)}))
    idx = {n: i for i, n in enumerate(model.nodes_)}
    node, cls = [], []
    fr = layout.frame
    for j in range(len(layout.ids)):
        for name, label in model.path(fr.iloc[j]):
            s = idx.get(name, -1)
            hit = np.flatnonzero(model.labels_[s] == label) if s >= 0 else np.zeros(0, int)
            node.append(s)
            cls.append(int(hit[0]) if hit.size else -1)
    n = len(layout.ids)
    spec = Spec("cascade", {**head(n, layout.ncols, inputs([])), "cascade.nlevels": len(model.levels_),
                            "cascade.node": np.array(node, np.int32), "cascade.cls": np.array(cls, np.int32)}, subs)
    return layout.table(np.arange(n, dtype=np.int32), spec)
