"""Evaluation of runtime models as the literature reports it: divergence, ranking quality, speedups.

Everything is per *test matrix*: a matrix measured in two value types counts as two (matrix, dtype)
units. Train and test are split by matrix, so no matrix (in any dtype) is on both sides.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
from scipy.stats import kendalltau
from sklearn.base import clone
from sklearn.model_selection import GroupKFold, GroupShuffleSplit

from . import datasets
from ._params import InstanceOf, Interval, OneOf, validate

# unit_key, the (matrix, value type) key of each row, is the models' own (they rank per unit too).
from .datasets.corpus import base_matrix
from .matrices.configs import config
from .matrices.matrix import INDEX_BYTES, VALUE_BYTES
from .models import MODELS
from .models._common import unit_key
from .ranking.modelfile import save_model

#: Matrices whose CSR arrays take fewer bytes than this fit the H100's L2 cache (50 MB).
L2_BYTES = 50e6
#: Slowdown buckets of the pick against the measured best.
BUCKETS = ("<5%", "5-20%", ">20%")


def split_by_matrix(groups: Any, test_size: float = 0.25, random_state: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Row indices (train, test) with every matrix's rows on one side only (GroupShuffleSplit)."""
    g = np.asarray(groups)
    if len(np.unique(g)) < 2:
        raise ValueError(f"The 'groups' parameter of split_by_matrix() must name at least 2 matrices. "
                         f"Got {len(np.unique(g))} instead.")
    validate("split_by_matrix()", {"test_size": Interval(None, 0, 1, "neither")}, locals())
    gss = GroupShuffleSplit(n_splits=1, test_size=test_size, random_state=random_state)
    return next(gss.split(np.zeros(len(g)), groups=g))


def family_folds(families: Any, n_splits: int = 5) -> list[tuple[np.ndarray, np.ndarray]]:
    """Grouped k-fold by matrix family (e.g. the dataset's ``group`` column): no family on both sides."""
    f = np.asarray(families)
    k = min(n_splits, len(np.unique(f)))
    if k < 2:
        raise ValueError(f"The 'families' parameter of family_folds() must name at least 2 families. Got {k} instead.")
    return list(GroupKFold(n_splits=k).split(np.zeros(len(f)), groups=f))


def base_folds(groups: Any, n_splits: int = 5, random_state: int = 0) -> list[tuple[np.ndarray, np.ndarray]]:
    """Grouped k-fold (shuffled) over each row's base matrix (:func:`pyspmv.datasets.corpus.base_matrix`): a real
    matrix and its scaled copies (``<matrix>_x<k>tile_r<seed>``) are never on both sides of a fold."""
    bases = np.asarray(pd.Series(np.asarray(groups)).map(base_matrix))
    k = min(n_splits, len(np.unique(bases)))
    if k < 2:
        raise ValueError(f"The 'groups' parameter of base_folds() must name at least 2 base matrices. Got {k} instead.")
    return list(GroupKFold(n_splits=k, shuffle=True, random_state=random_state).split(np.zeros(len(bases)),
                                                                                      groups=bases))


#: Size bands of the held-out quality tables (issue 48) and their targets: (label, matrices, fewest stored entries,
#: most (excluded), within 5 % at least, beyond 20 % at most, geomean at most; None: no target). ``matrices``:
#: 'real', 'generated' (those of :func:`pyspmv.datasets.standard_corpus`) or 'all'.
SIZE_BANDS = (("real < 1e6", "real", 0.0, 1e6, 0.95, 0.0, 1.01),
              ("all >= 1e6", "all", 1e6, np.inf, 0.90, 0.01, 1.02),
              ("generated < 1e6", "generated", 0.0, 1e6, None, None, None))


def with_sizes(per: pd.DataFrame, features: pd.DataFrame) -> pd.DataFrame:
    """A copy of an evaluation's per-matrix frame (``per_matrix``) with what :func:`in_band` reads: each unit's
    ``matrix``, ``real`` (not one of :func:`pyspmv.datasets.standard_corpus`'s, seeds 0 and 1) and ``nnz`` (from
    a dataset's ``features``)."""
    generated = {e.name for seed in (0, 1) for e in datasets.standard_corpus(seed=seed)}
    nnz = features.drop_duplicates("matrix").set_index("matrix")["nnz"]
    out = per.copy()
    out["matrix"] = out["unit"].str.rsplit("@", n=1).str[0]
    out["real"] = ~out["matrix"].isin(generated)
    out["nnz"] = out["matrix"].map(nnz).to_numpy()
    return out


def in_band(per: pd.DataFrame, band: tuple[Any, ...]) -> pd.Series:
    """Rows of a per-matrix frame (with ``real`` and ``nnz`` columns) in one of :data:`SIZE_BANDS`."""
    _, which, lo, hi = band[:4]
    size = (per["nnz"] >= lo) & (per["nnz"] < hi)
    return size & (per["real"] if which == "real" else ~per["real"] if which == "generated" else True)


def divergence(y_true: Any, y_pred: Any, formats: Any = None) -> dict[str, Any]:
    """``|pred - meas| / meas`` over rows with a prediction (not NaN): median, mean, count, median per format."""
    t, p = np.asarray(y_true, dtype=np.float64), np.asarray(y_pred, dtype=np.float64)
    ok = ~np.isnan(p)                        # NaN: not predicted; inf: predicted, infinitely wrong
    with np.errstate(over="ignore"):         # a wild extrapolation (1e305 ms) is as wrong as inf, not an error
        d = np.abs(p[ok] - t[ok]) / t[ok]
    out: dict[str, Any] = {"median": float(np.median(d)) if d.size else np.nan,
                           "mean": float(np.mean(d)) if d.size else np.nan, "n": int(d.size)}
    if formats is not None:
        s = pd.Series(d).groupby(np.asarray(formats)[ok]).median()
        out["per_format"] = {str(k): float(v) for k, v in s.items()}
    return out


def ranking(scores: Any, y: Any, unit: Any, configs: Any, q25: Any = None, q75: Any = None) -> pd.DataFrame:
    """Ranking quality per unit (matrix, or matrix and dtype), one row each.

    ``scores``: lower is better (NaN: not ranked). Columns: ``unit, pick, best, t_pick, t_best, ratio``
    (t_pick / t_best), ``tie`` (the pick's [q25, q75] overlaps the best's), ``slowdown`` (ratio - 1, 0 for
    a tie), ``bucket``, ``top1`` (pick is a tie of the best), ``top3`` (one of the three lowest scores is),
    ``tau`` (Kendall's tau-b of scores against measured times; NaN when either is constant).
    Without q25/q75 only exact equality ties.
    """
    s = np.asarray(scores, dtype=np.float64)
    df = pd.DataFrame({"unit": np.asarray(unit), "s": np.where(np.isfinite(s), s, np.inf),
                       "finite": np.isfinite(s), "t": np.asarray(y, dtype=np.float64),
                       "config": np.asarray(configs)})
    df["q25"] = df["t"] if q25 is None else np.asarray(q25, dtype=np.float64)
    df["q75"] = df["t"] if q75 is None else np.asarray(q75, dtype=np.float64)
    rows = []
    for u, d in df.groupby("unit", sort=False):
        ib = int(np.argmin(d["t"].to_numpy()))
        q75b = d["q75"].to_numpy()[ib]
        tie = d["q25"].to_numpy() <= q75b
        tie[ib] = True
        order = np.argsort(d["s"].to_numpy(), kind="stable")
        ip = order[0]
        t_pick, t_best = d["t"].to_numpy()[ip], d["t"].to_numpy()[ib]
        f = d["finite"].to_numpy()
        tau = np.nan
        if f.sum() >= 2 and np.ptp(d["s"].to_numpy()[f]) > 0 and np.ptp(d["t"].to_numpy()[f]) > 0:
            tau = float(kendalltau(d["s"].to_numpy()[f], d["t"].to_numpy()[f]).statistic)
        ratio = t_pick / t_best
        slow = 0.0 if tie[ip] else ratio - 1.0
        rows.append({"unit": u, "pick": d["config"].to_numpy()[ip], "best": d["config"].to_numpy()[ib],
                     "t_pick": t_pick, "t_best": t_best, "ratio": ratio, "tie": bool(tie[ip]), "slowdown": slow,
                     "bucket": BUCKETS[0] if slow < 0.05 else BUCKETS[1] if slow <= 0.20 else BUCKETS[2],
                     "top1": bool(tie[ip]), "top3": bool(tie[order[:3]].any()), "tau": tau})
    return pd.DataFrame(rows)


def summarize(per: pd.DataFrame) -> dict[str, float]:
    """Fractions per bucket, geomean t_pick / t_best, top-1, top-3, mean tau, over the rows of ``per``."""
    if per.empty:
        return {"n": 0}
    return {"n": len(per), **{f"within{b}": float((per["bucket"] == b).mean()) for b in BUCKETS},
            "geomean_ratio": float(np.exp(np.mean(np.log(per["ratio"])))), "top1": float(per["top1"].mean()),
            "top3": float(per["top3"].mean()), "tau": float(per["tau"].mean()) if per["tau"].notna().any() else np.nan}


def _pick_config(ids: set[str], prefix: str) -> str | None:
    """The configuration id equal to ``prefix`` or, failing that, ``prefix/bs=256``, then the first match."""
    if prefix in ids:
        return prefix
    if f"{prefix}/bs=256" in ids:
        return f"{prefix}/bs=256"
    hits = sorted(i for i in ids if i.startswith(prefix + "/"))
    return hits[0] if hits else None


def _devices(ids: set[str]) -> set[str]:
    """The devices of the ids that are pyspmv configurations (the core parses them; a user's own ids,
    which it does not know, count for none)."""
    out = set()
    for i in ids:
        try:
            out.add(config(i).device)
        except (ValueError, TypeError):
            pass
    return out


def free_rules(feats: pd.DataFrame, ids: set[str]) -> dict[str, np.ndarray]:
    """Configurations the free rules choose per row of ``feats`` (nnz, nnz_max, nnz_mean); None where the
    rule's configuration is not in ``ids``.

    Ginkgo: CSR-adaptive (load-balanced) if nnz > 1e6 or nnz_max > 1024, else classical CSR vector
    (32 threads per row); on the CPU nnz-balanced CSR, else row-parallel. CUSP: CSR vector with threads per
    row the power of two nearest the mean row length, clamped to 2..32 (GPU only).
    """
    big = (feats["nnz"].to_numpy() > 1e6) | (feats["nnz_max"].to_numpy() > 1024)
    gpu = "cuda" in _devices(ids)
    if gpu:
        lb, cl = _pick_config(ids, "pyspmv/csr/adaptive"), _pick_config(ids, "pyspmv/csr/vector/tpv=32")
    else:
        lb, cl = _pick_config(ids, "cpu/csr/nnz"), _pick_config(ids, "cpu/csr/rows")
    ginkgo = np.where(big, lb, cl).astype(object)
    mean = np.maximum(feats["nnz_mean"].to_numpy(dtype=np.float64), 1e-9)
    tpv = np.clip(2.0 ** np.rint(np.log2(mean)), 2, 32).astype(int)
    cusp = np.array([_pick_config(ids, f"pyspmv/csr/vector/tpv={v}") if gpu else None for v in tpv], dtype=object)
    return {"ginkgo": ginkgo, "cusp": cusp}


def best_single(y: Any, unit: Any, configs: Any) -> str:
    """The configuration with the best geomean of t / t_best over the units it was measured on, among
    those measured on the most units (ties of coverage broken by the geomean)."""
    df = pd.DataFrame({"u": np.asarray(unit), "t": np.asarray(y, dtype=np.float64), "c": np.asarray(configs)})
    df["r"] = np.log(df["t"] / df.groupby("u")["t"].transform("min"))
    g = df.groupby("c")["r"].agg(["count", "mean"])
    g = g[g["count"] == g["count"].max()]
    return str(g["mean"].idxmin())


def baseline_id(ids: set[str]) -> str | None:
    """The baseline configuration that speedups are reported against.

    Parameters
    ----------
    ids : set of str
        The configuration ids of a table (a dataset's, or the measured ones of one matrix).

    Returns
    -------
    str or None
        ``cusparse/csr/default`` (cuSPARSE's CSR default) where ``ids`` holds it, else
        ``cpu/csr/rows`` (row-parallel CPU CSR) where it holds that, else None.
    """
    for c in ("cusparse/csr/default", "cpu/csr/rows"):
        if c in ids:
            return c
    return None


def speedups(per: pd.DataFrame, y: Any, unit: Any, configs: Any, choices: dict[str, Any]) -> dict[str, float]:
    """Geomean of t_choice / t_pick over the units where the choice was measured, per named choice.

    ``choices`` maps a name to one configuration id (same for every unit) or to a {unit: id} mapping.
    """
    t = pd.Series(np.asarray(y, dtype=np.float64), index=pd.MultiIndex.from_arrays([np.asarray(unit),
                                                                                   np.asarray(configs)]))
    t = t[~t.index.duplicated()]
    out = {}
    for name, ch in choices.items():
        r = []
        for u, tp in zip(per["unit"], per["t_pick"], strict=True):
            c = ch.get(u) if isinstance(ch, dict) else ch
            if c is not None and (u, c) in t.index:
                r.append(np.log(t[(u, c)] / tp))
        out[name] = float(np.exp(np.mean(r))) if r else np.nan
    return out


@dataclass
class Evaluation:
    """What :func:`evaluate` measured: ``summary`` (flat dict of every metric), ``per_matrix`` (ranking rows),
    ``predictions`` (test rows: unit, config, format, measured ms, predicted ms or NaN, score)."""

    summary: dict[str, Any] = field(default_factory=dict)
    per_matrix: pd.DataFrame = field(default_factory=pd.DataFrame)
    predictions: pd.DataFrame = field(default_factory=pd.DataFrame)


def _ms_predictions(model: Any, X: pd.DataFrame) -> np.ndarray | None:
    if hasattr(model, "predict_ms"):
        return np.asarray(model.predict_ms(X), dtype=np.float64)
    if getattr(model, "_estimator_type", None) == "regressor" or not hasattr(model, "classes_"):
        return np.asarray(model.predict(X), dtype=np.float64)
    return None


def _choices(ids: set[str], feats: pd.DataFrame, unit: np.ndarray, baseline: str | None,
             rules: dict[str, Any] | None, notes: list[str]) -> dict[str, Any]:
    """The baseline and the rules as :func:`speedups`' choices, per unit of ``feats`` (one row each)."""
    if baseline is not None and baseline not in ids:
        raise ValueError(f"The 'baseline' parameter of evaluate() must be a configuration id of X. Got {baseline!r} "
                         f"instead ({len(ids)} ids, e.g. {sorted(ids)[:3]}).")
    out: dict[str, Any] = {"baseline": baseline if baseline is not None else baseline_id(ids)}
    if out["baseline"] is None:
        notes.append("no baseline: X has neither cusparse/csr/default nor cpu/csr/rows; name one with 'baseline'")
    if rules is None:
        if not {"nnz", "nnz_max", "nnz_mean"} <= set(feats.columns) or not _devices(ids):
            notes.append("free rules (ginkgo, cusp) skipped: they choose among pyspmv's ids from pyspmv's features; "
                         "name your own with 'rules'")
            return out
        rules = free_rules(feats, ids)
    validate("evaluate()", {"rules": InstanceOf(dict, "a dict of name -> id or callable", by_type=True)}, locals())
    for name, rule in rules.items():
        pick = rule(feats) if callable(rule) else rule
        pick = np.broadcast_to(np.asarray(pick, dtype=object), (len(feats),))
        bad = [p for p in pick if p is not None and p not in ids]
        if bad:
            raise ValueError(f"The rule {name!r} of evaluate()'s 'rules' chose {bad[0]!r}, not a configuration id of X.")
        out[name] = dict(zip(unit, pick, strict=True))
    return out


def evaluate(model: Any, X: pd.DataFrame, y: Any, groups: Any, *, q25: Any = None, q75: Any = None,
             test_size: float = 0.25, random_state: int = 0, l2_bytes: float = L2_BYTES,
             fit: bool = True, train_index: Any = None, test_index: Any = None,
             rank_timing_units: int = 20, convert_ms: Any = None, baseline: str | None = None,
             rules: dict[str, Any] | None = None) -> Evaluation:
    """Fit a clone of ``model`` on the training matrices and report every metric on the test matrices.

    Works on pyspmv's table and on a user's own (any configuration ids, see :mod:`pyspmv.models`):
    ``baseline`` names the configuration the pick is compared with (default: cuSPARSE CSR default or
    CPU row CSR, when X has them); ``rules`` maps a name to a fixed configuration id or to a callable
    that takes the test units' rows of X (one per matrix and value type) and returns an id per row
    (default: Ginkgo's and CUSP's free rules, which know pyspmv's ids only and are skipped with a note
    in ``summary['notes']`` for other ids). ``groups`` (required) names the matrix of each row.

    The split is :func:`split_by_matrix` unless ``train_index``/``test_index`` are given. Metrics:
    divergence (median, mean, per format; models with runtimes only), ranking buckets, geomean
    t_pick / t_best, top-1, top-3, Kendall's tau, speedups of the pick over the baseline (cuSPARSE CSR
    default or CPU row CSR), the best single configuration of the training matrices and the free rules,
    training seconds and ranking ms per test unit, and the ranking metrics apart for units whose CSR
    arrays are below ``l2_bytes`` (``l2_*``) and the others (``large_*``). Overheads in SpMV-equivalents:
    ``rank_spmv`` (median over timed units of ranking ms / the best configuration's ms) and, given
    ``convert_ms`` aligned with X (see :func:`column_for`), ``convert_spmv`` (median of the pick's
    conversion ms / its SpMV ms: products needed to pay the conversion back, before any gain).
    """
    y = np.asarray(y, dtype=np.float64)
    if groups is None:
        raise ValueError("The 'groups' parameter of evaluate() must name the matrix of each row of X. Got None instead.")
    g = np.asarray(groups)
    if "value_bytes" not in X.columns:                # a user's table of one value type
        X = X.assign(value_bytes=8.0)
    if train_index is None or test_index is None:
        train_index, test_index = split_by_matrix(g, test_size, random_state)
    tr, te = np.asarray(train_index), np.asarray(test_index)
    if np.intersect1d(np.unique(g[tr]), np.unique(g[te])).size:
        raise ValueError("The train and test indices of evaluate() share a matrix.")
    Xtr, Xte = X.iloc[tr].reset_index(drop=True), X.iloc[te].reset_index(drop=True)
    m = clone(model) if fit else model
    t0 = time.perf_counter()
    if fit:
        extra = {} if convert_ms is None else {"convert_ms": np.asarray(convert_ms, dtype=np.float64)[tr]}
        m.fit(Xtr, y[tr], groups=g[tr], **extra)
    train_s = time.perf_counter() - t0
    u_tr = unit_key(g[tr], Xtr["value_bytes"])
    u_te = unit_key(g[te], Xte["value_bytes"])
    cfg_te = Xte["config"].astype(str).to_numpy()
    scores = np.asarray(m.rank_scores(Xte), dtype=np.float64)
    per = ranking(scores, y[te], u_te, cfg_te, None if q25 is None else np.asarray(q25)[te],
                  None if q75 is None else np.asarray(q75)[te])
    summary: dict[str, Any] = {"train_s": train_s, "n_train_matrices": len(np.unique(g[tr])),
                               "n_test_matrices": len(np.unique(g[te])), "n_test_units": len(per)}
    pm = _ms_predictions(m, Xte)
    fmt_te = Xte["format"].astype(str).to_numpy() if "format" in Xte.columns else np.full(len(Xte), "*", dtype=object)
    if pm is not None:
        dv = divergence(y[te], pm, fmt_te)
        summary.update({"div_median": dv["median"], "div_mean": dv["mean"]})
        summary.update({f"div_median_{k}": v for k, v in dv.get("per_format", {}).items()})
    else:
        summary.update({"div_median": np.nan, "div_mean": np.nan})
    summary.update(summarize(per))
    ids = set(np.unique(X["config"].astype(str)))
    first = pd.DataFrame({"u": u_te}).drop_duplicates().index.to_numpy()
    notes: list[str] = []
    choices = _choices(ids, Xte.iloc[first].reset_index(drop=True), u_te[first], baseline, rules, notes)
    choices["best_single"] = best_single(y[tr], u_tr, Xtr["config"].astype(str).to_numpy())
    summary["best_single_config"] = choices["best_single"]
    summary.update({f"speedup_vs_{k}": v for k, v in speedups(per, y[te], u_te, cfg_te, choices).items()})
    # Ranking cost: one call per unit, as rank() would make for a new matrix.
    times, equiv = [], []
    best_t = dict(zip(per["unit"], per["t_best"], strict=True))
    for u in list(dict.fromkeys(u_te))[:rank_timing_units]:
        rows = Xte[u_te == u]
        t0 = time.perf_counter()
        m.rank_scores(rows)
        times.append((time.perf_counter() - t0) * 1e3)
        equiv.append(times[-1] / best_t[u])
    summary["rank_ms"] = float(np.median(times))
    summary["rank_spmv"] = float(np.median(equiv))
    if convert_ms is not None:
        conv = pd.Series(np.asarray(convert_ms, dtype=np.float64)[te],
                         index=pd.MultiIndex.from_arrays([u_te, cfg_te]))
        conv = conv[~conv.index.duplicated()]
        r = [conv.get((u, c), np.nan) / t for u, c, t in zip(per["unit"], per["pick"], per["t_pick"], strict=True)]
        summary["convert_spmv"] = float(np.nanmedian(r)) if np.isfinite(r).any() else np.nan
    f0 = Xte.iloc[first]
    if {"nnz", "nrows"} <= set(f0.columns):
        nbytes = (f0["nnz"].to_numpy() * (f0["value_bytes"].to_numpy() + INDEX_BYTES)
                  + INDEX_BYTES * (f0["nrows"].to_numpy() + 1))
        small = dict(zip(u_te[first], nbytes < l2_bytes, strict=True))
        per["l2"] = per["unit"].map(small)
        for name, part in (("l2", per[per["l2"]]), ("large", per[~per["l2"]])):
            summary.update({f"{name}_{k}": v for k, v in summarize(part).items()})
    else:
        notes.append("L2 split skipped: X has no nnz and nrows")
    summary["notes"] = notes
    preds = pd.DataFrame({"unit": u_te, "config": cfg_te, "format": fmt_te,
                          "ms": y[te], "pred_ms": np.nan if pm is None else pm, "score": scores})
    return Evaluation(summary, per, preds)


def column_for(ds: Any, column: str = "convert_ms") -> np.ndarray:
    """A column of a dataset's full timings table aligned with the rows of ``ds.X``.

    ``ds.X`` holds one row per (matrix, value type, configuration); the timings table
    (``ds.table``) holds further columns of the same measurements, such as the conversion time.

    Parameters
    ----------
    ds : Dataset
        A dataset (:func:`pyspmv.datasets.load`, :func:`pyspmv.datasets.combine`).
    column : str, default "convert_ms"
        A numeric column of ``ds.table``.

    Returns
    -------
    numpy.ndarray
        float64, one value per row of ``ds.X``; NaN where the table has no such row. Pass it as
        ``convert_ms`` to an estimator's ``fit`` or to :func:`evaluate`.
    """
    t = ds.table
    key = pd.MultiIndex.from_arrays([t["matrix"].astype(str), t["dtype"].astype(str), t["config"].astype(str)])
    col = pd.Series(t[column].to_numpy(dtype=np.float64), index=key)
    col = col[~col.index.duplicated()]
    dt = np.where(ds.X["value_bytes"].to_numpy() == VALUE_BYTES["float32"], "float32", "float64")
    want = pd.MultiIndex.from_arrays([ds.groups.astype(str).to_numpy(), dt, ds.X["config"].astype(str).to_numpy()])
    return col.reindex(want).to_numpy()


def evaluate_folds(model: Any, X: pd.DataFrame, y: Any, groups: Any, families: Any = None, *, n_splits: int = 5,
                   q25: Any = None, q75: Any = None, l2_bytes: float = L2_BYTES, convert_ms: Any = None,
                   folds: Any = None, baseline: str | None = None, rules: dict[str, Any] | None = None) -> Evaluation:
    """Cross-validated :func:`evaluate`: every matrix is tested once. The folds are the user's (``folds``:
    a list of (train, test) row-index pairs, or a scikit-learn splitter, called as
    ``folds.split(X, y, groups)``), or grouped k-fold by matrix family (:func:`family_folds` of
    ``families``), so that a model saw no matrix of its family. A fold that puts a matrix on both sides
    is an error. ``baseline`` and ``rules`` as :func:`evaluate`. Ranking metrics and divergence are
    pooled over the folds; ``train_s`` and ``rank_ms`` are means over the folds and the speedups
    geomeans of the folds' (weighted by test units)."""
    if (folds is None) == (families is None):
        raise ValueError("evaluate_folds() needs exactly one of 'families' (matrix families, grouped k-fold) and "
                         f"'folds' (your own). Got {'both' if folds is not None else 'neither'}.")
    if folds is None:
        folds = family_folds(families, n_splits)
    elif hasattr(folds, "split"):
        folds = list(folds.split(X, y, groups))
    folds = [(np.asarray(tr), np.asarray(te)) for tr, te in folds]
    if not folds:
        raise ValueError("The 'folds' parameter of evaluate_folds() must hold at least one (train, test) pair. Got 0.")
    runs = [evaluate(model, X, y, groups, q25=q25, q75=q75, train_index=tr, test_index=te, l2_bytes=l2_bytes,
                     convert_ms=convert_ms, baseline=baseline, rules=rules) for tr, te in folds]
    per = pd.concat([r.per_matrix for r in runs], ignore_index=True)
    preds = pd.concat([r.predictions for r in runs], ignore_index=True)
    summary: dict[str, Any] = {"folds": len(runs), "train_s": float(np.mean([r.summary["train_s"] for r in runs])),
                               "n_test_units": len(per)}
    if preds["pred_ms"].notna().any():
        dv = divergence(preds["ms"], preds["pred_ms"], preds["format"])
        summary.update({"div_median": dv["median"], "div_mean": dv["mean"]})
        summary.update({f"div_median_{k}": v for k, v in dv["per_format"].items()})
    else:
        summary.update({"div_median": np.nan, "div_mean": np.nan})
    summary.update(summarize(per))
    w = np.array([r.summary["n_test_units"] for r in runs], dtype=np.float64)
    for k in [k for k in runs[0].summary if k.startswith("speedup_vs_")]:
        v = np.array([r.summary[k] for r in runs], dtype=np.float64)
        ok = np.isfinite(v)
        summary[k] = float(np.exp(np.sum(w[ok] * np.log(v[ok])) / w[ok].sum())) if ok.any() else np.nan
    for k in ("rank_ms", "rank_spmv", "convert_spmv"):
        if k in runs[0].summary:
            summary[k] = float(np.nanmean([r.summary[k] for r in runs]))
    if "l2" in per.columns:
        for name, part in (("l2", per[per["l2"]]), ("large", per[~per["l2"]])):
            summary.update({f"{name}_{k}": v for k, v in summarize(part).items()})
    summary["notes"] = sorted({n for r in runs for n in r.summary["notes"]})
    return Evaluation(summary, per, preds)


def format_summary(s: dict[str, Any]) -> str:
    """A readable block of :class:`Evaluation` ``summary`` lines."""
    lines = []
    for k, v in s.items():
        lines.append(f"{k:<28} {v:.4g}" if isinstance(v, float) else f"{k:<28} {v}")
    return "\n".join(lines)


def train(dataset: str, model: str = "boosted", *, dtype: str | None = "float64", out: str | None = None,
          test_size: float = 0.25, random_state: int = 0, verbose: int = 1) -> Evaluation:
    """What ``pyspmv train`` does: load ``dataset``, evaluate ``model`` on held-out matrices, then fit it
    on every matrix (with the conversion-cost fit of the dataset's ``convert_ms``) and save it to ``out``
    with :func:`pyspmv.save_model` (when given). ``verbose`` >= 1 shows each fit's progress on stderr.
    Returns the held-out evaluation."""
    validate("train()", {"model": OneOf(MODELS, "names")}, locals())
    ds = datasets.load(dataset, dtype=dtype)
    est = MODELS[model](verbose=verbose)
    conv = column_for(ds, "convert_ms")
    result = evaluate(est, ds.X, ds.y, ds.groups, q25=ds.q25, q75=ds.q75, test_size=test_size,
                      random_state=random_state, convert_ms=conv)
    if out:
        est.fit(ds.X, ds.y, groups=ds.groups, convert_ms=conv)
        save_model(est, out)
    return result
