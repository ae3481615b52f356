"""Adapting a ranking model to one machine's measurements: correct the shipped model, or retrain.

A correction multiplies each configuration's predicted time by a factor learnt from the local
measurements (the median ratio measured / predicted, per configuration or per format); it is carried
by the portable form itself (one more per-configuration column, which the C core multiplies the
prediction by: ``out_col``), so the C core, exported headers and model files need nothing new. A
retrained model is fitted on the local measurements, alone or together with the shipped dataset whose
times are first translated to this machine by the per-configuration correction. :func:`choose` picks
whichever ranks the local matrices best under cross-validation grouped by matrix.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from .._params import OneOf, validate
from ..evaluate import column_for, ranking, summarize, unit_key
from ..matrices.configs import config
from ..matrices.matrix import VALUE_BYTES
from ..models._common import conversion_fit
from ..ranking.portable import portable
from ..ranking.rankmodel import RankModel, Table
from ..ranking.spec import Spec
from .train_default import make_model

#: Candidate adaptations: the shipped model as it is (where this machine ranks like the one it was
#: measured on, nothing to adapt), (b) corrected per configuration or per format, (a) retrained on the
#: local measurements with the translated shipped dataset or alone. Between equals, the earlier is
#: chosen (the shipped model, then a correction, keep what was learnt from many more matrices).
CANDIDATES = ("shipped", "correct/config", "correct/format", "retrain/mixed", "retrain/local")
#: The columns of each candidate's held-out picks that :func:`cross_validate` keeps for :func:`judge`.
PER_COLUMNS = ("unit", "matrix", "ratio", "bucket", "top1", "top3", "tau")
#: How many times a local matrix counts against one of the shipped dataset in ``retrain/mixed``
#: (each local matrix is repeated): the local ones are this machine's, the shipped ones another's.
LOCAL_WEIGHT = 4


@dataclass
class Local:
    """Measurements as a model takes them: X, y (ms), quartiles, matrix and conversion time (ms) per row."""

    X: pd.DataFrame
    y: np.ndarray
    groups: np.ndarray
    q25: np.ndarray
    q75: np.ndarray
    convert_ms: np.ndarray

    @classmethod
    def of(cls, ds: Any) -> Local:
        """From a :class:`pyspmv.datasets.Dataset`."""
        return cls(ds.X.reset_index(drop=True), ds.y.to_numpy(np.float64), ds.groups.astype(str).to_numpy(),
                   ds.q25.to_numpy(np.float64), ds.q75.to_numpy(np.float64), column_for(ds, "convert_ms"))

    def take(self, rows: np.ndarray) -> Local:
        return Local(self.X.iloc[rows].reset_index(drop=True), self.y[rows], self.groups[rows], self.q25[rows],
                     self.q75[rows], self.convert_ms[rows])


def _keys(X: pd.DataFrame, by: str) -> np.ndarray:
    """Correction key per row: value type and configuration id (or format)."""
    col = X["config"] if by == "config" else X["format"]
    return (X["value_bytes"].astype(int).astype(str) + "|" + col.astype(str)).to_numpy()


def correction_factors(rm: RankModel, local: Local, by: str = "config") -> dict[str, float]:
    """Per ``value bytes|configuration`` (``by='config'``) or ``value bytes|format``: exp of the median
    over local rows of log(measured / predicted). Keys without a finite prediction are left out."""
    validate("correction_factors()", {"by": OneOf(("config", "format"), "or")}, locals())
    r = np.log(local.y) - np.log(rm.predict(local.X))
    ok = np.isfinite(r)
    s = pd.Series(r[ok]).groupby(_keys(local.X, by)[ok]).median()
    return {str(k): float(np.exp(v)) for k, v in s.items()}


def factor_per_row(factors: dict[str, float], X: pd.DataFrame, by: str) -> np.ndarray:
    """The factor of each row of X (1 where none was learnt)."""
    return np.array([factors.get(k, 1.0) for k in _keys(X, by)])


def corrected(rm: RankModel, factors: dict[str, float], by: str = "config") -> RankModel:
    """``rm`` with every configuration's prediction multiplied by its factor (:func:`correction_factors`).

    The factors become one more per-configuration column of each table, named by the spec's
    ``out_col`` (prediction times that column), so that the C core, :func:`pyspmv.export_c` and
    :func:`pyspmv.save_model` carry the correction unchanged.

    Raises
    ------
    ValueError
        ``rm`` ranks by a score (classifiers: nothing to scale) or already scales its prediction by a column.
    """
    if rm.score != "ms":
        raise ValueError(f"Only runtime models can be corrected; this one ranks by {rm.score!r} ({rm.source}).")
    tables = {}
    for dtype, t in rm.tables.items():
        if t.spec.fields["out_col"] >= 0:
            raise ValueError(f"The {dtype} model already scales its prediction by column {t.spec.fields['out_col']}; "
                             "it cannot carry a correction too.")
        fr = pd.DataFrame({"config": t.config_ids, "value_bytes": float(VALUE_BYTES[dtype]),
                           "format": [config(c).format for c in t.config_ids]})
        f = factor_per_row(factors, fr, by)
        ncols = int(t.spec.fields["ncols"])
        spec = Spec(t.spec.kind, {**t.spec.fields, "ncols": ncols + 1, "out_col": ncols}, list(t.spec.subs))
        tables[dtype] = Table(list(t.config_ids), t.group.copy(), np.hstack([t.extra, f[:, None]]), spec)
    return RankModel(rm.device, tables, source=f"corrected {rm.source}", gpu=rm.gpu, score=rm.score,
                     meta=dict(rm.meta), features=rm.features)


def _measured_here(shipped: Local, local: Local) -> np.ndarray:
    """Rows of ``shipped`` whose matrix was measured locally too. A hash lookup: ``np.isin`` on these
    object arrays compares every pair (10.6 s for datasets/h100's 130,925 rows against 55 matrices on the
    dev VM, once per retrained fold: a cuda calibration overran its time limit by a minute)."""
    return pd.Series(shipped.groups).isin(set(local.groups)).to_numpy()


def _repeat(local: Local, times: int) -> tuple[pd.DataFrame, np.ndarray, np.ndarray, np.ndarray]:
    """X, y, groups and conversion times of ``local`` repeated ``times``, each copy of a matrix its own group."""
    X = pd.concat([local.X] * times, ignore_index=True)
    g = np.concatenate([np.char.add(local.groups.astype(str), f"#{k}") for k in range(times)])
    return X, np.tile(local.y, times), g, np.tile(local.convert_ms, times)


def retrain(kind: str, local: Local, shipped: Local | None = None, factors: dict[str, float] | None = None,
            seed: int = 0) -> Any:
    """A ``pyspmv.models.MODELS[kind]`` fitted on ``local`` (repeated :data:`LOCAL_WEIGHT` times when
    ``shipped`` is given) plus ``shipped`` with its times multiplied by the per-configuration
    ``factors``; shipped matrices that were measured locally are left out (the local ones supersede)."""
    est = make_model(kind, seed)
    if shipped is None:
        X, y, g, c = local.X, local.y, local.groups, local.convert_ms
    else:
        X, y, g, c = _repeat(local, LOCAL_WEIGHT)
        keep = ~_measured_here(shipped, local)
        sX = shipped.X.loc[keep].reset_index(drop=True)
        sy = shipped.y[keep] * factor_per_row(factors or {}, sX, "config")
        X = pd.concat([X, sX[X.columns]], ignore_index=True)
        y = np.concatenate([y, sy])
        g = np.concatenate([g, np.char.add("shipped:", shipped.groups[keep].astype(str))])
        c = np.concatenate([c, shipped.convert_ms[keep]])
    return est.fit(X, y, g, convert_ms=c)


def _scores(name: str, rm: RankModel, train: Local, test: Local, shipped: Local | None, kind: str,
            seed: int) -> np.ndarray:
    """Predicted ms of candidate ``name`` for the rows of ``test``, adapted on ``train`` only."""
    if name == "shipped":
        return rm.predict(test.X)
    if name.startswith("correct/"):
        by = name.split("/")[1]
        return rm.predict(test.X) * factor_per_row(correction_factors(rm, train, by), test.X, by)
    mixed = name == "retrain/mixed"
    if mixed and shipped is None:
        return np.full(len(test.y), np.nan)
    est = retrain(kind, train, shipped if mixed else None, correction_factors(rm, train) if mixed else None, seed)
    return np.asarray(est.predict(test.X), dtype=np.float64)


def _train_rows(name: str, local: Local, shipped: Local | None) -> int:
    """Rows a retrained candidate fits on (what its fitting time grows with)."""
    if name == "retrain/mixed" and shipped is not None:
        return LOCAL_WEIGHT * len(local.y) + int((~_measured_here(shipped, local)).sum())
    return len(local.y)


def cross_validate(rm: RankModel, local: Local, shipped: Local | None = None, kind: str = "forest",
                   n_splits: int = 4, seed: int = 0, deadline: float | None = None,
                   folds_by: np.ndarray | None = None) -> pd.DataFrame:
    """Ranking quality of the shipped model and of every :data:`CANDIDATES` adaptation on the local
    matrices, each held-out fold adapted on the other folds only (GroupKFold by matrix, or by
    ``folds_by``, one label per row of ``local``: e.g. the real matrix each scaled copy was made from,
    so that a matrix and its copies are never on both sides of a fold).

    ``deadline`` (a ``time.monotonic()`` value): a retrained candidate whose cross-validation and final
    fit are foreseen to end past it is skipped (its cost foreseen from the previous retrain's, in
    proportion to the rows each fits on; the first retrain is always tried); the others are cheap.

    Returns one row per candidate tried: ``n`` (held-out (matrix, value type) units), ``within<5%``,
    ``within>20%``, ``geomean_ratio`` (t_pick / t_best), ``top1``, as :func:`pyspmv.evaluate.summarize`;
    ``df.attrs["skipped"]`` lists the candidates left out for the deadline, ``df.attrs["per"]`` holds each
    candidate's held-out picks (:data:`PER_COLUMNS` of :func:`pyspmv.evaluate.ranking`, one per unit, plus
    its ``matrix``, as lists): what :func:`judge` compares on a subset of the matrices.
    """

    from sklearn.model_selection import GroupKFold

    by = local.groups if folds_by is None else np.asarray(folds_by)
    if len(by) != len(local.y):
        raise ValueError(f"The 'folds_by' parameter of cross_validate() needs one label per local row ({len(local.y)}). "
                         f"Got {len(by)} instead.")
    k = min(n_splits, len(np.unique(by)))
    if k < 2:
        raise ValueError(f"Cross-validation needs at least 2 measured matrices (fold groups). Got {k} instead.")
    folds = list(GroupKFold(n_splits=k).split(local.X, groups=by))
    unit = unit_key(local.groups, local.X["value_bytes"])
    matrix_of = dict(zip(unit, local.groups))
    rows, skipped, pers = {}, [], {}
    per_row_s = None                     # seconds per training row of the last retrain (folds and final fit)
    # The cheap candidates first, then the retrained ones from the smallest training set up, so that
    # each retrain's cost can be foreseen from the one before.
    order = sorted(CANDIDATES, key=lambda c: (c.startswith("retrain/"),
                                              _train_rows(c, local, shipped) if c.startswith("retrain/") else 0))
    for n in order:
        retrained = n.startswith("retrain/")
        if retrained and n == "retrain/mixed" and shipped is None:
            continue
        if retrained and deadline is not None and per_row_s is not None and \
                time.monotonic() + per_row_s * _train_rows(n, local, shipped) > deadline:
            skipped.append(n)
            continue
        t = time.monotonic()
        pred = np.full(len(local.y), np.nan)
        for tr, te in folds:
            pred[te] = _scores(n, rm, local.take(tr), local.take(te), shipped, kind, seed)
        if retrained:   # k folds on (k-1)/k of the rows each, then the final fit on all of them
            per_row_s = (time.monotonic() - t) * (1 + 1 / (k - 1)) / _train_rows(n, local, shipped)
        per = ranking(pred, local.y, unit, local.X["config"], local.q25, local.q75)
        per["matrix"] = per["unit"].map(matrix_of)
        rows[n] = {"candidate": n, **summarize(per)}
        pers[n] = per[list(PER_COLUMNS)].to_dict("list")     # plain lists: attrs are compared by pd.concat
    out = pd.DataFrame([rows[n] for n in CANDIDATES if n in rows]).set_index("candidate")
    out.attrs["skipped"] = skipped
    out.attrs["per"] = {n: pers[n] for n in CANDIDATES if n in pers}
    return out


def best_candidate(cv: pd.DataFrame) -> str:
    """The adaptation of :data:`CANDIDATES` with the lowest geometric mean t_pick / t_best (then the
    most picks within 5 %, then the earliest listed)."""
    c = cv.loc[[n for n in CANDIDATES if n in cv.index]]
    order = sorted(c.index, key=lambda n: (round(float(c.loc[n, "geomean_ratio"]), 6),
                                            -float(c.loc[n, "within<5%"]), CANDIDATES.index(n)))
    return order[0]


def adapt(name: str, rm: RankModel, local: Local, shipped: Local | None = None, kind: str = "forest",
          seed: int = 0) -> RankModel:
    """Candidate ``name`` adapted on every local measurement, in portable form, ranking the value
    types measured."""
    if name == "shipped" or name.startswith("correct/"):
        measured = {b: d for d, b in VALUE_BYTES.items() if (local.X["value_bytes"] == b).any()}.values()
        only = RankModel(rm.device, {d: t for d, t in rm.tables.items() if d in measured}, source=rm.source,
                         gpu=rm.gpu, score=rm.score, meta=dict(rm.meta), features=rm.features,
                         precision=rm.precision)
        if name == "shipped":    # its own copy: the caller records this machine in its meta
            out = only
        else:
            by = name.split("/")[1]
            out = corrected(only, correction_factors(rm, local, by), by)
        fit = conversion_fit(local.X["format"].astype(str).to_numpy(), local.X["nnz"], local.convert_ms)
        if fit:
            out.meta["convert_ms"] = {**(rm.meta.get("convert_ms") or {}), **fit}
        return out
    validate("adapt()", {"name": OneOf(CANDIDATES)}, locals())
    mixed = name == "retrain/mixed"
    est = retrain(kind, local, shipped if mixed else None, correction_factors(rm, local) if mixed else None, seed)
    out = portable(est, rm.device)
    for k in ("dataset", "n_matrices"):
        if k in rm.meta:
            out.meta[f"shipped_{k}"] = rm.meta[k]
    return out


#: Bootstrap resamples of the judged matrices (:func:`judge`) and the fewest of the user's own matrices
#: that are judged on by themselves (fewer: every measured matrix is).
BOOTSTRAP = 200
JUDGE_MIN_MATRICES = 3
#: The rule :func:`judge` applies, as recorded in a calibrated model's metadata.
RULE = ("the candidate with the lowest geomean t_pick/t_best on the judged matrices (yours, else the real-structured "
        "ones, else all) replaces the shipped model only when it is lower than the shipped model's by more than the "
        "noise on the geomean and its share within 5 % is not lower by more than the noise on that share; noise = the "
        "larger of the timing noise (each matrix timed in rounds, or the same matrices timed twice) and twice the "
        "bootstrap standard deviation of the difference over the judged matrices")
#: The sets of matrices a judgement reports, in the order they are judged on when enough were measured.
SETS = ("yours", "real", "generated")


def _metrics(per: pd.DataFrame) -> dict[str, Any]:
    s = summarize(per)
    return {"n": int(s["n"]), "matrices": int(per["matrix"].nunique()) if len(per) else 0,
            **{k: float(s[k]) for k in ("within<5%", "within>20%", "geomean_ratio") if k in s}}


def _geomean(r: np.ndarray) -> float:
    return float(np.exp(np.mean(np.log(r))))


def _bootstrap_sd(a: pd.DataFrame, b: pd.DataFrame, seed: int) -> dict[str, float]:
    """Standard deviation of the paired differences shipped - candidate (geomean) and candidate - shipped
    (share within 5 %) over :data:`BOOTSTRAP` resamples of the matrices of ``a`` and ``b`` (the same units)."""
    m = a[["unit", "matrix", "ratio", "bucket"]].merge(b[["unit", "ratio", "bucket"]], on="unit", suffixes=("_a", "_b"))
    if m["matrix"].nunique() < 2:
        return {"geomean_ratio": 0.0, "within<5%": 0.0}
    rows = [g.index.to_numpy() for _, g in m.groupby("matrix", sort=True)]
    ra, rb = m["ratio_a"].to_numpy(), m["ratio_b"].to_numpy()
    wa, wb = (m["bucket_a"] == "<5%").to_numpy(float), (m["bucket_b"] == "<5%").to_numpy(float)
    rng = np.random.default_rng(seed)
    dg, dw = [], []
    for _ in range(BOOTSTRAP):
        i = np.concatenate([rows[k] for k in rng.integers(0, len(rows), len(rows))])
        dg.append(_geomean(ra[i]) - _geomean(rb[i]))
        dw.append(wb[i].mean() - wa[i].mean())
    return {"geomean_ratio": float(np.std(dg)), "within<5%": float(np.std(dw))}


def judge(cv: pd.DataFrame, timing_noise: dict[str, float], yours: set[str] | None = None,
          seed: int = 0, real: set[str] | None = None) -> dict[str, Any]:
    """The choice between the shipped model and the candidates of ``cv`` (:func:`cross_validate`, with
    its held-out picks in ``cv.attrs["per"]``), made so that noise cannot decide it.

    The judged matrices: the user's own (``yours``, the names of the matrices measured from
    ``calibrate(matrices=...)``) when at least :data:`JUDGE_MIN_MATRICES` of them were measured, else the
    real-structured ones (``real``: the real matrices shipped with pyspmv and their scaled copies) when at
    least as many were, else every measured matrix: generated matrices did not predict real ones (issue 39). On their held-out (matrix, value type) units each candidate has its geomean
    t_pick/t_best and its share within 5 % of the best. The best candidate (:func:`best_candidate` on those
    numbers) replaces the shipped model only when

    - its geomean is lower than the shipped model's by more than the noise on the geomean, and
    - its share within 5 % is not lower than the shipped model's by more than the noise on that share,

    where each noise is the larger of the timing noise (``timing_noise``: how far the same matrices timed
    twice move the metric, from :func:`pyspmv.training.calibrate.timing_noise`) and twice the standard
    deviation of the difference between the two over :data:`BOOTSTRAP` resamples of the judged matrices
    (the noise of having measured these matrices and not others). Otherwise the shipped model stays.

    Returns a dict (JSON-ready, recorded in the calibrated model's metadata): ``on`` (which matrices were
    judged: ``'yours'``, ``'real'`` or ``'all'``), ``matrices`` (counts of :data:`SETS`), ``table``
    (candidate -> each of :data:`SETS` measured and ``all`` -> metrics), ``best``, ``margin``, ``noise``
    (``geomean_ratio``, ``within<5%``, and their ``timing`` and ``bootstrap`` parts), ``choice`` and
    ``decision`` (a sentence), ``rule`` (:data:`RULE`).
    """
    per = {n: pd.DataFrame(d) for n, d in cv.attrs["per"].items()}
    yours, real = set(yours or ()), set(real or ()) - set(yours or ())

    def which(p: pd.DataFrame) -> dict[str, np.ndarray]:
        y, r = p["matrix"].isin(yours).to_numpy(), p["matrix"].isin(real).to_numpy()
        return {"yours": y, "real": r, "generated": ~(y | r), "all": np.ones(len(p), bool)}
    ref = per["shipped"]
    counts = {k: int(ref.loc[sel, "matrix"].nunique()) for k, sel in which(ref).items() if k in SETS}
    on = next((k for k in ("yours", "real") if counts[k] >= JUDGE_MIN_MATRICES), "all")
    table = {name: {k: _metrics(p[sel]) for k, sel in which(p).items() if sel.any()} for name, p in per.items()}
    judged = {n: p[which(p)[on]] for n, p in per.items()}
    scores = pd.DataFrame({n: {"geomean_ratio": table[n][on]["geomean_ratio"],
                               "within<5%": table[n][on]["within<5%"]} for n in per}).T
    best = best_candidate(scores)
    s, b = table["shipped"][on], table[best][on]
    margin = {"geomean_ratio": s["geomean_ratio"] - b["geomean_ratio"], "within<5%": b["within<5%"] - s["within<5%"]}
    boot = _bootstrap_sd(judged["shipped"], judged[best], seed) if best != "shipped" else \
        {"geomean_ratio": 0.0, "within<5%": 0.0}
    noise = {k: max(float(timing_noise.get(k) or 0.0), 2.0 * boot[k]) for k in ("geomean_ratio", "within<5%")}
    replace = best != "shipped" and margin["geomean_ratio"] > noise["geomean_ratio"] and \
        margin["within<5%"] >= -noise["within<5%"]
    where = {"yours": "your matrices", "real": "the real-structured matrices"}.get(on, "the measured matrices")
    if best == "shipped":
        decision = f"kept the shipped model: no candidate ranked {where} better"
    elif replace:
        decision = (f"replaced the shipped model by {best}: geomean {margin['geomean_ratio']:+.3f} better on {where}, "
                    f"more than the noise {noise['geomean_ratio']:.3f}")
    else:
        decision = (f"kept the shipped model: {best} was {margin['geomean_ratio']:+.3f} better in geomean and "
                    f"{margin['within<5%']:+.1%} within 5 % on {where}, not more than the noise "
                    f"({noise['geomean_ratio']:.3f}, {noise['within<5%']:.1%})")
    return {"on": on, "matrices": counts, "table": table, "best": best,
            "margin": margin, "noise": {**noise, "timing": dict(timing_noise), "bootstrap": boot},
            "choice": best if replace else "shipped", "decision": decision, "rule": RULE}
