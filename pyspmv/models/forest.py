"""Whole-matrix model: a multi-output forest from a matrix's features to every configuration's time."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.ensemble import ExtraTreesRegressor, RandomForestRegressor
from sklearn.utils.validation import check_is_fitted

from .._params import AnyOf, Interval, OneOf, validate
from ..matrices.matrix import VALUE_BYTES
from ..ranking.layout import feature_inputs, lookup_keys
from ..ranking.precision import DEFAULT_PRECISION, Precision
from ..ranking.spec import Spec, head
from ._common import VERBOSE, RankMixin, check_y, group_index, group_key, unique_rows

_DTYPES = {float(b): d for d, b in VALUE_BYTES.items()}
_FORESTS = ("extra", "random")
_UNMEASURED = ("cap", "skip")
#: ForestModel's parameters, checked when it fits.
_PARAMS = {"verbose": VERBOSE, "forest": OneOf(_FORESTS), "clip": Interval("float", 0, closed="neither"),
           "temperature": Interval("float", 0, closed="neither"),
           "n_estimators": AnyOf((Interval("int", 1), OneOf(("auto",), "or"))),
           "bytes_prior": Interval("float", 0, 1, "both"), "tie_tol": Interval("float", 0),
           "stake_weight": Interval("float", 0, 1, "both"), "unmeasured": OneOf(_UNMEASURED)}
#: ``n_estimators="auto"``: trees x configurations a forest may cost (one addition per tree and
#: configuration), the budget of 32 trees over the H100's 135: as many trees as fit, 24 to 256. A
#: device with fewer configurations then gets more trees, which steadies the picks of a forest fitted
#: on the few matrices of a calibration (benchmarks/results/calibrate_xeon.md: the spread over seeds).
#: The floor was 32 until the H200's default (234 configurations) outgrew the 8 MiB of a committed file:
#: on its seven datasets 32 trees ship 9.31 MB and 24 ship 7.63 MB, and 24 ranked held-out matrices as
#: 32 did, within their noise (studies/2026-11-30-more-bases). The H100's 135 and the CPU's 25 are above it.
AUTO_TREE_BUDGET = 32 * 135
AUTO_TREES = (24, 256)


class ForestModel(RankMixin, RegressorMixin, BaseEstimator):
    """Every configuration's runtime from one multi-output forest over the matrix's features.

    Per value type, one scikit-learn ExtraTreesRegressor (or RandomForestRegressor) is fit on the
    training matrices: inputs ``log1p`` of the matrix features, one output per configuration.
    The splits are grown on ListNet's top-one probability of each configuration, a softmax of minus
    its log slowdown ``log(t / t_best)`` against the matrix's fastest measured configuration: the
    splits then separate matrices by which configurations are near their best, not by how much
    slower the bad ones are. Configurations not measured on a
    training matrix (not applicable, failed) take a slowdown of ``clip``. Each leaf then holds the mean over its
    training matrices of every configuration's slowdown, capped at ``clip``, and of ``log t_best``, so that one walk
    of each tree predicts every configuration: ``exp(mean slowdown + mean log t_best)`` ms. Ranking
    cost does not grow with the number of configurations beyond one addition per tree each.

    Parameters
    ----------
    n_estimators : int or "auto", default="auto"
        ``"auto"``: :data:`AUTO_TREE_BUDGET` divided by the number of configurations of the value type,
        within :data:`AUTO_TREES` (the trees a ranking's cost allows at the same cross-validated quality:
        studies/2026-11-23-hyperparameters/forest_tuning.md).
    forest : {"extra", "random"}, default="extra"
        ExtraTreesRegressor or RandomForestRegressor.
    max_features : float, int or None, default=0.5
    min_samples_leaf : int, default=2
    max_depth : int or None, default=None
    bootstrap : bool, default=False
    clip : float, default=0.5
        Cap of the log slowdown target (0.5: 65 % slower); inf: no cap (unmeasured then take each
        matrix's slowest measured slowdown).
    temperature : float, default=0.1
        Of the split target ``softmax(-slowdown / temperature)``, in log slowdown (0.1: about 10 % slower
        weighs e^-1 as much).
    tie_tol : float, default=0.0
        Configurations at most this much slower than the matrix's best (0.02: 2 %) count as ties of
        the best in the targets (slowdown 0).
    bytes_prior : float, default=0.0
        How the ranking settles the forest's near-ties (``rank_scores``, :func:`pyspmv.rank`, exported
        headers; ``predict`` is unchanged): configurations are ranked by their predicted time times
        ``(bytes_moved / (nnz * value_bytes)) ** bytes_prior``, the bytes a product moves per byte of the
        matrix's values, so that of two predictions a few per cent apart the one that moves fewer bytes
        ranks first (0.05: 1.5 times the bytes weighs as 2 % more time). A large matrix's product is bound
        by the bytes it moves, which the forest's neighbours (smaller matrices, mostly) do not see. In [0, 1];
        needs pyspmv's schema. The cuda default uses 0.05, kept by cross-validation inside the training
        matrices (studies/2026-11-24-pick-rules/pick_rules_h100.md); on datasets/cpu no value ranked better.
    stake_weight : float, default=0.0
        Weighs each training matrix by its best measured product time to this power (relative to the median
        matrix's), in [0, 1]: the time at stake. A corpus holds many small matrices and few large ones, whose
        products cost 100 to 10,000 times as much; 0 weighs every matrix alike.
    unmeasured : {"cap", "skip"}, default="cap"
        What a configuration with no time on a training matrix (not applicable there, or not in the collection
        that measured it) weighs in a leaf's prediction of that configuration: ``"cap"``, a slowdown of ``clip``;
        ``"skip"``, nothing: the leaf predicts it from the matrices that measured it (``clip`` where none of the
        leaf's did). ``"skip"`` lets datasets measured with fewer configurations, or a later collection of new
        configurations on some of the matrices, train every configuration without counting its absence as
        slowness; the ranking then relies on the formats' size queries to leave out what does not apply (a
        configuration whose refusal they cannot foresee should stay with ``"cap"``). The split target is the
        same either way.

    The defaults were chosen by 3-fold cross-validation grouped by matrix inside the training
    matrices of benchmarks/default_quality.py's split, by the geomean t_pick / t_best averaged over
    datasets/h100 and datasets/cpu, both value types: among the settings within 0.1 % of the best, the
    one with the larger leaves (smaller trees, a faster C evaluation). The variants that ranked worse
    and were removed (other split targets, noise ties, one forest for both value types, risk-averse
    leaves, time per byte moved) are in studies/2026-11-23-model-variants/ and studies/2026-11-24-leaf-variants/.
    The number of trees, ``max_features`` and the forest kind come from the earlier search of
    studies/2026-11-23-hyperparameters/forest_tuning.md.
    random_state : int, default=0
    verbose : int, default=0
    features, params : list of str or None, default=None
        The feature and parameter columns of X (None: pyspmv's; see :mod:`pyspmv.models`). Inputs
        are the transformed features (``feature_tf_``) only.

    Attributes
    ----------
    groups_ : ndarray of str, configuration keys (``config@f32|f64``) in output order, per value type
        contiguous; ``tables_`` : dict, value type -> dict of the portable arrays (``keys``, ``root``,
        ``feature``, ``left``, ``right``, ``threshold``, ``value`` (nleaves x (nkeys + 1), already
        divided by the number of trees; the last column is log t_best)); ``estimators_`` : dict, value
        type -> the fitted scikit-learn forest.
    """

    #: How far the predicted times of the model it builds can be read, per device (:func:`pyspmv.portable` records
    #: it in :attr:`pyspmv.RankModel.precision`, model files store it, :func:`pyspmv.rank` marks ties and
    #: order-only rows by it): the default recipe's error on held-out matrices, measured by
    #: benchmarks/rank_table.py. The only kind whose error was measured; other estimators state none.
    _portable_precision: ClassVar[dict[str, Precision]] = DEFAULT_PRECISION

    def __init__(self, n_estimators: int | str = "auto", forest: str = "extra", max_features: Any = 0.5,
                 min_samples_leaf: int = 2, max_depth: int | None = None, bootstrap: bool = False,
                 clip: float = 0.5, temperature: float = 0.1, tie_tol: float = 0.0, bytes_prior: float = 0.0,
                 stake_weight: float = 0.0, unmeasured: str = "cap", random_state: int = 0,
                 verbose: int = 0, features: list[str] | None = None, params: list[str] | None = None):
        self.features = features
        self.params = params
        self.n_estimators = n_estimators
        self.forest = forest
        self.max_features = max_features
        self.min_samples_leaf = min_samples_leaf
        self.max_depth = max_depth
        self.bootstrap = bootstrap
        self.clip = clip
        self.temperature = temperature
        self.tie_tol = tie_tol
        self.bytes_prior = bytes_prior
        self.stake_weight = stake_weight
        self.unmeasured = unmeasured
        self.random_state = random_state
        self.verbose = verbose

    def _check_params(self) -> None:
        validate("ForestModel", _PARAMS, vars(self))

    def fit(self, X: pd.DataFrame, y: Any, groups: Any = None, convert_ms: Any = None) -> ForestModel:
        """Fit one forest per value type on the matrices x configurations table of log slowdowns;
        ``groups``: the matrix of each row (required; in cross-validation, see scikit-learn's model
        selection: :mod:`pyspmv.models`); ``convert_ms``: conversion time (ms) per row, for the
        conversion-cost fit (``convert_ms_``)."""
        self._check_params()
        X, mids = self._fit_schema(X, groups, "ForestModel.fit")
        if self.bytes_prior and not self.schema_.own:
            raise ValueError("The 'bytes_prior' parameter of ForestModel reads pyspmv's bytes_moved, nnz and "
                             "value_bytes columns, which a model on your own features does not have; leave it 0.")
        t = np.log(check_y(y, len(X), "ForestModel.fit"))
        keys = group_key(X, "config")
        vb = X["value_bytes"].to_numpy(np.float64)
        unknown = sorted(set(vb.tolist()) - set(_DTYPES))
        if unknown:
            raise ValueError(f"The 'X' parameter of ForestModel.fit has value_bytes {unknown[0]!r}; known: 4, 8.")
        parts = {}
        for b in sorted(set(vb.tolist())):
            r = np.flatnonzero(vb == b)
            m, mi = np.unique(mids[r], return_index=True)
            row_m = np.searchsorted(m, mids[r])
            ks, ki = np.unique(keys[r], return_inverse=True)
            T = np.full((len(m), len(ks)), np.nan)
            T[row_m, ki] = t[r]
            S, Z = self._targets(T)
            best = np.nanmin(T, axis=1)
            if self.unmeasured == "skip":                 # the leaves average what was measured (_leaf_means)
                S = np.where(np.isnan(T), np.nan, S)
            parts[_DTYPES[b]] = (self.feature_tf_.apply(X.iloc[r[mi]]), S, Z, ks, best)
        self.tables_, self.estimators_ = {}, {}
        for dt, (L, S, Z, ks, best) in parts.items():
            w = np.exp(float(self.stake_weight) * (best - np.median(best))) if self.stake_weight else None
            est = self._forest(len(ks)).fit(L, Z if Z.shape[1] > 1 else Z[:, 0], sample_weight=w)
            self.estimators_[dt] = est
            cap = float(self.clip) if np.isfinite(float(self.clip)) else float(np.nanmax(S))
            self.tables_[dt] = _flatten(est, L, np.hstack([S, best[:, None]]), ks, cap)
        self.groups_ = np.concatenate([tb["keys"] for _, tb in sorted(self.tables_.items())])
        self._fit_extras(X, convert_ms, "ForestModel.fit")
        self.n_features_in_ = X.shape[1]
        return self

    def _trees(self, nkeys: int) -> int:
        """Trees of a forest over ``nkeys`` configurations (``n_estimators``, or "auto"'s rule)."""
        if self.n_estimators != "auto":
            return int(self.n_estimators)
        lo, hi = AUTO_TREES
        return int(np.clip(round(AUTO_TREE_BUDGET / max(nkeys, 1)), lo, hi))

    def _forest(self, nkeys: int) -> Any:
        cls = ExtraTreesRegressor if self.forest == "extra" else RandomForestRegressor
        return cls(n_estimators=self._trees(nkeys), max_features=self.max_features,
                   min_samples_leaf=self.min_samples_leaf, max_depth=self.max_depth, bootstrap=self.bootstrap,
                   random_state=self.random_state, n_jobs=1, verbose=max(0, int(self.verbose) - 1))

    def _targets(self, T: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Leaf target S (capped log slowdowns, ties 0, unmeasured at the cap) and split target Z (ListNet's
        top-one probabilities) of the log times T (matrices x configurations, NaN where unmeasured)."""
        best = np.nanmin(T, axis=1)
        S = T - best[:, None]
        if float(self.tie_tol) > 0:
            S = np.where(S <= np.log1p(float(self.tie_tol)), 0.0, S)
        cap = float(self.clip)
        if np.isfinite(cap):
            S = np.where(np.isnan(S), cap, np.minimum(S, cap))
        else:
            S = np.where(np.isnan(S), np.nanmax(S, axis=1)[:, None], S)
        E = np.exp(-(S - S.min(axis=1, keepdims=True)) / float(self.temperature))
        return S, E / E.sum(axis=1, keepdims=True)

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """Predicted runtime (ms) per row; a configuration not seen in training is an error."""
        check_is_fitted(self, "tables_")
        X = self._check(X, "ForestModel.predict")
        keys = group_key(X, "config")
        vb = X["value_bytes"].to_numpy(np.float64)
        out = np.empty(len(X))
        for b in np.unique(vb):
            r = np.flatnonzero(vb == b)
            tb = self.tables_.get(_DTYPES.get(float(b), "?"))
            if tb is None:
                raise ValueError(f"The 'X' parameter of ForestModel.predict has value_bytes {b!r}; the model was "
                                 f"trained on {sorted(self.tables_)}.")
            j = group_index(keys[r], tb["keys"], "ForestModel.predict")
            F = self.feature_tf_.apply(X.iloc[r])
            first, q = unique_rows(F)                  # rows of equal features share their walks
            S = forest_sums(tb, F[first])
            out[r] = np.exp(S[q, j] + S[q, -1])
        return out

    def rank_scores(self, X: pd.DataFrame) -> np.ndarray:
        """Score per row of ``X``, lower is better: the predicted runtime (ms) times the bytes it moves per
        byte of the matrix's values to the power ``bytes_prior`` (:func:`bytes_per_value`, as csrc/rank.c ranks;
        rows without entries by their time alone)."""
        ms = self.predict(X)
        return ms * bytes_per_value(X) ** float(self.bytes_prior) if self.bytes_prior else ms

    def _portable_table(self, layout: Any) -> Any:
        """The portable form's table of ``layout``'s value type (:func:`pyspmv.ranking.portable.portable`):
        inputs as ``feature_tf_`` computes them, one group per configuration the forest knows,
        base output log t_best, exp."""
        tb = self.tables_.get(layout.dtype)
        if tb is None:
            return None
        group = lookup_keys(group_key(layout.frame, "config"), tb["keys"])
        nk = len(tb["keys"])
        V = tb["value"]
        inputs = feature_inputs(layout, self.feature_tf_)
        spec = Spec("forest", {**head(nk, layout.ncols, inputs, "exp", rank_bytes_pow=float(self.bytes_prior)),
                               "forest.ntrees": len(tb["root"]), "forest.nnodes": len(tb["feature"]),
                               "forest.nleaves": V.shape[0], "forest.nout": V.shape[1], "forest.base": nk,
                               "forest.cast_f32": 1, "forest.root": tb["root"], "forest.feature": tb["feature"],
                               "forest.left": tb["left"], "forest.right": tb["right"],
                               "forest.threshold": tb["threshold"],
                               "forest.value": np.ascontiguousarray(V, dtype=np.float64).reshape(-1)})
        return layout.table(group, spec)


def bytes_per_value(X: pd.DataFrame) -> np.ndarray:
    """The bytes each row's configuration moves per byte of the matrix's values.

    What a ranking with ``bytes_prior`` p (:class:`ForestModel`) multiplies the predicted time by,
    to the power p (csrc/rank.c).

    Parameters
    ----------
    X : pandas.DataFrame
        Design rows (a dataset's ``X``) with the ``bytes_moved``, ``nnz`` and ``value_bytes`` columns.

    Returns
    -------
    numpy.ndarray
        float64, one value per row: ``bytes_moved / (nnz * value_bytes)``, 1 where that is not finite
        and > 0 (no entries, configuration not applicable).
    """
    with np.errstate(divide="ignore", invalid="ignore"):
        q = X["bytes_moved"].to_numpy(np.float64) / (X["nnz"].to_numpy(np.float64)
                                                      * X["value_bytes"].to_numpy(np.float64))
    return np.where((q > 0) & np.isfinite(q), q, 1.0)


def forest_sums(tb: dict[str, Any], Z: np.ndarray) -> np.ndarray:
    """The summed leaf vectors (n x (nkeys + 1)) for inputs Z, tree by tree in order, as csrc/model_forest.c
    adds them: features cast to float32 before comparing, as scikit-learn reads X."""
    Z = np.asarray(Z, dtype=np.float32).astype(np.float64)
    feat, left, right, thr, V = tb["feature"], tb["left"], tb["right"], tb["threshold"], tb["value"]
    acc = np.zeros((len(Z), V.shape[1]))
    rows = np.arange(len(Z))
    for root in tb["root"]:
        node = np.full(len(Z), root, dtype=np.int64)
        while True:
            f = feat[node]
            inner = f >= 0
            if not inner.any():
                break
            x = Z[rows[inner], f[inner]]
            n = node[inner]
            node[inner] = np.where(x <= thr[n], left[n], right[n])
        acc += V[left[node]]
    return acc


def _flatten(est: Any, L: np.ndarray, Y: np.ndarray, keys: np.ndarray, missing: float) -> dict[str, Any]:
    """Flat node arrays of a fitted forest, leaf vectors the mean of Y over the training rows of L
    reaching each leaf (divided by the number of trees; NaN entries of Y left out, ``missing`` where a
    leaf has none), nodes numbered tree after tree."""
    leaves = est.apply(L.astype(np.float32))                  # (n, ntrees) node ids
    ntrees = len(est.estimators_)
    feat, thr, left, right, root, vals = [], [], [], [], [], []
    off, nleaf = 0, 0
    for i, tree in enumerate(est.estimators_):
        tr = tree.tree_
        lc, rc = tr.children_left.astype(np.int64), tr.children_right.astype(np.int64)
        leaf = lc < 0
        lid = np.cumsum(leaf) - 1 + nleaf                     # each leaf's vector
        means = _leaf_means(leaves[:, i], Y, len(lc), missing)[leaf]
        feat.append(np.where(leaf, -1, tr.feature).astype(np.int32))
        thr.append(np.where(leaf, 0.0, tr.threshold).astype(np.float64))
        left.append(np.where(leaf, lid, lc + off).astype(np.int32))
        right.append(np.where(leaf, -1, rc + off).astype(np.int32))
        vals.append(means / ntrees)
        root.append(off)
        off += len(lc)
        nleaf += int(leaf.sum())
    feature, left_, value = np.concatenate(feat), np.concatenate(left), np.vstack(vals)
    left_, value = share_leaf_vectors(feature, left_, value)
    return {"keys": np.asarray(keys), "root": np.array(root, np.int32), "feature": feature,
            "threshold": np.concatenate(thr), "left": left_, "right": np.concatenate(right),
            "value": np.ascontiguousarray(value)}


def share_leaf_vectors(feature: np.ndarray, left: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The leaf vectors ``value`` (leaf vectors x outputs) kept once each, bit for bit, and ``left`` with each
    leaf's entry (``feature < 0``; a leaf's ``left`` is its row of ``value``) pointing at its one copy, in the
    order of first use. Leaves reached by the same training matrices hold the same means: the shipped
    defaults' forests repeat half (cuda) and two thirds (cpu) of their vectors. Every walk then adds the same
    numbers, so predictions and rankings do not change by one bit; the model file shrinks by the rows saved."""
    value = np.ascontiguousarray(value)
    bits = value.view(np.uint64) if value.dtype == np.float64 else value    # -0.0 and 0.0 kept apart, as NaNs
    _, first, inverse = np.unique(bits, axis=0, return_index=True, return_inverse=True)
    inverse = np.asarray(inverse).reshape(-1)
    order = np.argsort(first, kind="stable")                # the unique rows in the order of first use
    new_row = np.empty_like(order)
    new_row[order] = np.arange(len(order))
    leaf = np.asarray(feature) < 0
    out = np.array(left, copy=True)
    out[leaf] = new_row[inverse[out[leaf]]].astype(out.dtype)
    return out, value[first[order]]


def _leaf_means(node: np.ndarray, Y: np.ndarray, nnodes: int, missing: float = 0.0) -> np.ndarray:
    """Per node and column, the mean of the rows of Y that reach it (``node``: each row's node), NaN entries
    left out; ``missing`` where the rows that reach it have only NaN in the column (an inner node, which no
    row reaches, then holds ``missing`` too: only leaves are read)."""
    known = ~np.isnan(Y)
    cnt = np.zeros((nnodes, Y.shape[1]))
    np.add.at(cnt, node, known)
    sums = np.zeros((nnodes, Y.shape[1]))
    np.add.at(sums, node, np.where(known, Y, 0.0))
    return np.where(cnt > 0, sums / np.maximum(cnt, 1), missing)
