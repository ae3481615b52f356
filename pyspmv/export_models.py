"""Each pyspmv.models estimator in portable form, read from its fitted attributes.

One builder per model kind, ``<kind>_table(model, layout) -> Table`` (or None when the model knows
no configuration of that value type), called by the estimator's own ``_portable_table(layout)``
(:func:`pyspmv.portable.portable` asks the estimator, never its class name). Each builder states the
model's inputs exactly as the model computes them (transforms, clamps, scaling), so that the C core
reproduces ``rank_scores`` to rounding, on pyspmv's design rows or on a user's feature vector
(:class:`pyspmv.portable.Layout`).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from typing import Any

import numpy as np
from sklearn.dummy import DummyRegressor

from .portable import BIG, Layout, Spec, Table, concat_inputs, feature_inputs, head, inputs, lookup_keys

# ---- linear -----------------------------------------------------------------------------------------

def linear_table(model: Any, layout: Layout) -> Table | None:
    """LinearModel: the transformed features (pyspmv's: log1p of Lehnert's and the per-configuration
    features) and log2 of the parameters (NaN or <= 0 -> 1), one coefficient row per group, exp.  The
    parameters' part of the sum is a constant of each configuration: it travels as one
    per-configuration column of coefficient 1, so a ranking transforms only the matrix's features
    (once) and two columns per configuration."""
    from .models._common import CONFIG_FEATURES, LEHNERT_FEATURES, param_logs
    schema = model.schema_
    if schema.own:
        ins = inputs([layout.col(n) for n in (*LEHNERT_FEATURES, *CONFIG_FEATURES)], "log1p", nan=0.0, lo=0.0,
                     hi=BIG)
        nf = len(LEHNERT_FEATURES) + len(CONFIG_FEATURES)
    else:
        ins = feature_inputs(layout, model.feature_tf_)
        nf = len(schema.features)
    group = lookup_keys(layout.keys(model.group_by), model.groups_)
    coef = np.asarray(model.coef_, dtype=np.float64)
    P = param_logs(layout.frame, schema.params)
    ins = concat_inputs(ins, inputs([layout.add([float(P[j] @ coef[g, nf:]) if g >= 0 else 0.0
                                                 for j, g in enumerate(group)])]))
    G = len(model.groups_)
    spec = Spec("linear", {**head(G, layout.ncols, ins, "exp"),
                           "coef": np.ascontiguousarray(np.hstack([coef[:, :nf], np.ones((G, 1))])).reshape(-1),
                           "intercept": np.ascontiguousarray(model.intercept_, dtype=np.float64)})
    return layout.table(group, spec)


# ---- trees ------------------------------------------------------------------------------------------

def _gb_init(est: Any, nfeat: int) -> np.ndarray:
    """Raw initial prediction of a fitted GradientBoosting* (per output)."""
    if isinstance(est.init_, DummyRegressor):
        return np.asarray(est.init_.constant_, dtype=np.float64).reshape(-1)[:1]
    if est.init_ == "zero":
        return np.zeros(est.estimators_.shape[1])
    # The constant scikit-learn derives from its initial estimator (priors' log-odds, ...).
    return np.asarray(est._raw_predict_init(np.zeros((1, nfeat), dtype=np.float32)), dtype=np.float64)[0]


def tree_fields(ensembles: list[tuple[list[Any], float]], scale: float, cast_f32: bool) -> dict[str, Any]:
    """Flat node arrays of ensembles, one per (group, output) in order: each ``(trees, init)``.

    ``trees`` are scikit-learn ``Tree`` objects (``tree_``) or HistGradientBoosting predictors."""
    feat, thr, left, right, val, miss, root, ptr, init = [], [], [], [], [], [], [], [0], []
    off = 0
    for trees, i0 in ensembles:
        for t in trees:
            if hasattr(t, "nodes"):                                     # HistGradientBoosting predictor
                nd = t.nodes
                if nd["is_categorical"].any():
                    raise TypeError("HistGradientBoosting trees with categorical splits have no portable form.")
                leaf = nd["is_leaf"].astype(bool)
                f = np.where(leaf, -1, nd["feature_idx"]).astype(np.int32)
                th, v = nd["num_threshold"].astype(np.float64), nd["value"].astype(np.float64)
                lc, rc = nd["left"].astype(np.int64), nd["right"].astype(np.int64)
                m = nd["missing_go_to_left"].astype(np.uint8)
            else:                                                       # sklearn.tree._tree.Tree
                lc, rc = t.children_left.astype(np.int64), t.children_right.astype(np.int64)
                leaf = lc < 0
                f = np.where(leaf, -1, t.feature).astype(np.int32)
                th, v = t.threshold.astype(np.float64), t.value[:, 0, 0].astype(np.float64)
                m = np.asarray(getattr(t, "missing_go_to_left", np.zeros(len(f))), dtype=np.uint8)
            feat.append(f)
            thr.append(th)
            left.append(np.where(leaf, -1, lc + off).astype(np.int32))
            right.append(np.where(leaf, -1, rc + off).astype(np.int32))
            val.append(v)
            miss.append(m)
            root.append(off)
            off += len(f)
        ptr.append(ptr[-1] + len(trees))
        init.append(float(i0))

    def cat(parts: list[np.ndarray], dt: Any) -> np.ndarray:
        return np.ascontiguousarray(np.concatenate(parts) if parts else np.zeros(0), dtype=dt)

    return {"trees.ntrees": len(root), "trees.nnodes": off, "trees.tree_ptr": np.array(ptr, np.int32),
            "trees.root": np.array(root, np.int32), "trees.feature": cat(feat, np.int32),
            "trees.left": cat(left, np.int32), "trees.right": cat(right, np.int32),
            "trees.threshold": cat(thr, np.float64), "trees.value": cat(val, np.float64),
            "trees.missing_left": cat(miss, np.uint8), "trees.init": np.array(init, np.float64),
            "trees.scale": float(scale), "trees.cast_f32": int(cast_f32)}


def gb_ensembles(est: Any, nfeat: int) -> list[tuple[list[Any], float]]:
    """(trees, init) per output of a fitted GradientBoostingRegressor/Classifier."""
    init = _gb_init(est, nfeat)
    K = est.estimators_.shape[1]
    return [([est.estimators_[i, k].tree_ for i in range(est.estimators_.shape[0])], init[k]) for k in range(K)]


def boosted_table(model: Any, layout: Layout) -> Table | None:
    """BoostedModel: the transformed features, one-hot categorical columns (per-configuration
    columns), parameters (NaN -> -1), value bytes, and on pyspmv's schema log1p(bytes moved), padding
    ratio and launches (NaN -> 0, inf -> 1e30); GradientBoostingRegressor trees per group (float32
    compares), exp."""
    from .models.boosted import categorical_columns
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
    keys = np.full(len(layout.ids), "*", dtype=object) if model.per == "global" else layout.keys(model.per)
    group = lookup_keys(keys, model.groups_)
    nfeat = ins_all["ninputs"]
    ens = [e for est in model.estimators_ for e in gb_ensembles(est, nfeat)]
    spec = Spec("trees", {**head(len(model.groups_), layout.ncols, ins_all, "exp"), "trees.nout": 1,
                          **tree_fields(ens, model.learning_rate, True)})
    return layout.table(group, spec)


# ---- KNN --------------------------------------------------------------------------------------------

def knn_table(model: Any, layout: Layout) -> Table | None:
    """KNNModel: transformed features min-max scaled by the training range; one point set (the training
    matrices) with the learned weights; per configuration its target column (log runtime, NaN where
    not measured) and k; weights 1 / max(d, 1e-12); exp."""
    from .models.knn import _EPS
    span = np.where(model.hi_ > model.lo_, model.hi_ - model.lo_, 1.0)
    ins = feature_inputs(layout, model.feature_tf_.subset(model.features_), shift=model.lo_, div=span)
    group = lookup_keys(layout.keys("config"), model.groups_)
    m, G = model.T_.shape
    spec = Spec("knn", {**head(G, layout.ncols, ins, "exp"), "knn.nsets": 1, "knn.npoints": m, "knn.ntargets": G,
                        "knn.set_ptr": np.array([0, m], np.int32),
                        "knn.points": np.ascontiguousarray(model.Z_, dtype=np.float64).reshape(-1),
                        "knn.target": np.ascontiguousarray(model.T_, dtype=np.float64).reshape(-1),
                        "knn.weight": np.ascontiguousarray(model.weights_, dtype=np.float64),
                        "knn.set": np.zeros(G, np.int32), "knn.k": np.asarray(model.k_, np.int32),
                        "knn.tcol": np.arange(G, dtype=np.int32), "knn.weighting": 2, "knn.dmin": float(_EPS)})
    return layout.table(group, spec)


# ---- Guo and Wang -----------------------------------------------------------------------------------

_FORMULA_INPUTS = ("nrows", "nnz", "nnz_mean", "nnz_mode", "nnz_max", "nnz_sd", "hyb_width", "padding_ratio")


def formula_table(model: Any, layout: Layout) -> Table | None:
    """GuoModel, WangModel: the raw statistics, strips derived as the models do (ceil(n / threads),
    at least 1; HYB's COO strips from the padding), one gated term per column of ``_terms``; the
    output floored at 1e-9 ms."""
    I = {n: i for i, n in enumerate(_FORMULA_INPUTS)}
    ins = inputs([layout.col(n) for n in _FORMULA_INPUTS])
    ni = len(_FORMULA_INPUTS)
    T = float(model.props_["sm_count"] * model.props_["max_threads_per_sm"])
    B = float(model.props_["max_threads_per_block"])
    # derived: s_rows, s_nnz, s_coo, s_rows - 1
    d = {"da": [I["nrows"], I["nnz"], I["padding_ratio"], I["nrows"]], "db": [-1, -1, I["nnz"], -1],
         "dc": [-1, -1, I["nrows"], -1], "dd": [-1, -1, I["hyb_width"], -1], "dceil": [1, 1, 1, 1],
         "dlo": [-np.inf, -np.inf, 0.0, -np.inf], "ddiv": [T] * 4, "dlo2": [1.0, 1.0, -np.inf, 1.0],
         "dadd": [0.0, 0.0, 0.0, -1.0]}
    S, SN, SC, S1 = ni, ni + 1, ni + 2, ni + 3
    one = -1
    inf = np.inf
    x, mx, w = I["nnz_mode"], I["nnz_max"], I["hyb_width"]
    # (a, b, gate, lo, hi) per column of each kind's _terms, in order
    shapes: dict[str, list[tuple[int, int, int, float, float]]] = {
        "guo:csr": [(S, one, x, -inf, B), (S, x, x, -inf, B), (S, one, x, B, inf), (S, x, x, B, inf)],
        "guo:ell": [(one, one, -1, 0, 0), (mx, one, -1, 0, 0), (S1, one, -1, 0, 0), (S1, mx, -1, 0, 0)],
        "guo:coo": [(one, one, -1, 0, 0), (SN, one, -1, 0, 0)],
        "guo:hyb": [(one, one, -1, 0, 0), (w, one, -1, 0, 0), (S1, one, -1, 0, 0), (S1, w, -1, 0, 0),
                    (SC, one, -1, 0, 0)],
        "wang:csr": [(S, one, -1, 0, 0), (S, I["nnz_mean"], -1, 0, 0), (S, I["nnz_sd"], -1, 0, 0),
                     (S, mx, -1, 0, 0)],
        "wang:ell": [(S, one, -1, 0, 0), (S, mx, -1, 0, 0)],
        "wang:jad": [(one, one, -1, 0, 0), (SN, one, -1, 0, 0), (mx, one, -1, 0, 0)],
    }
    fam = model._family
    ptr, cols = [0], {k: [] for k in ("a", "b", "gate", "coef", "lo", "hi")}
    for i, kind in enumerate(model.kinds_):
        terms = shapes[f"{fam}:{kind}"]
        for t, (a, b, g, lo, hi) in enumerate(terms):
            for k, v in zip(("a", "b", "gate", "coef", "lo", "hi"), (a, b, g, model.coef_[i, t], lo, hi), strict=True):
                cols[k].append(v)
        ptr.append(ptr[-1] + len(terms))
    group = lookup_keys(layout.keys("config"), model.groups_)
    f: dict[str, Any] = {**head(len(model.groups_), layout.ncols, ins, "identity", out_lo=1e-9), "formula.nderived": 4,
                         "formula.nterms": ptr[-1], "formula.term_ptr": np.array(ptr, np.int32)}
    for k in ("da", "db", "dc", "dd", "dceil"):
        f[f"formula.{k}"] = np.array(d[k], np.int32)
    for k in ("dlo", "ddiv", "dlo2", "dadd"):
        f[f"formula.{k}"] = np.array(d[k], np.float64)
    for k in ("a", "b", "gate"):
        f[f"formula.{k}"] = np.array(cols[k], np.int32)
    for k in ("coef", "lo", "hi"):
        f[f"formula.{k}"] = np.array(cols[k], np.float64)
    return layout.table(group, Spec("formula", f))


# ---- SVM ----------------------------------------------------------------------------------------------

def _matrix_inputs(model: Any, layout: Layout) -> dict[str, Any]:
    """pyspmv.models.classifiers' ``_inputs``: the transformed features and the value size."""
    return concat_inputs(feature_inputs(layout, model.feature_tf_), inputs([layout.col("value_bytes")]))


def svm_table(model: Any, layout: Layout) -> Table | None:
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
    group = lookup_keys(layout.keys("config"), model.groups_)
    return layout.table(group, spec)


# ---- cascade ------------------------------------------------------------------------------------------

def cascade_table(model: Any, layout: Layout) -> Table | None:
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
