"""Calibration: measure this machine on a few generated matrices that cover the training data, adapt the model.

``pyspmv calibrate`` (and :func:`calibrate`) picks generated matrices of the standard corpus that cover
the feature space of the dataset the shipped model was trained on, measures every configuration on
them within a time limit (resumably: each matrix is saved as :func:`pyspmv.collect` saves it),
re-measures configurations whose quartiles say the machine was busy, times a few matrices again to see
how far whole timings drift (:func:`repeatability`; past :data:`MAX_DRIFT` it stops there and saves
nothing, :class:`BusyMachineError`), adapts the shipped model to the
measurements (:mod:`pyspmv.training.adapt`: the shipped model as it is, a correction or a retrained model,
whichever ranks the local matrices best under cross-validation grouped by matrix, but the shipped model unless the
best beats it by more than the measured noise: :func:`pyspmv.training.adapt.judge`) and saves it where
:func:`pyspmv.rank` finds it, with this machine's fingerprint and the judgement. The user's own Matrix Market
files (``matrices=``, :func:`user_matrices`) are measured first and judged on first.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import datetime
import os
import shutil
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import datasets
from .._atomic import write_atomically
from .._params import Interval, OneOf, validate
from ..datasets import standard_corpus
from ..datasets.collect import _done, _safe, _save, _write_csv, measure, printable
from ..datasets.corpus import CorpusEntry, base_matrix, is_real, real_corpus
from ..devices.benchmark import BusyMachineError, NoisyTimingWarning, benchmark, device_info
from ..devices.machine import calibrated_path, fingerprint, fingerprint_id, fingerprint_of, home
from ..matrices.configs import DEVICES
from ..matrices.features import FEATURE_NAMES, features
from ..matrices.matrix import DTYPES
from ..ranking.modelfile import load_model, save_model
from ..ranking.rank import default_model, reread_calibrated
from . import rounds
from ._yours import MTX_SUFFIXES, USER_GROUP, failed_files, given_matrices, user_matrices  # noqa: F401 (docs)
from .adapt import Local, adapt, cross_validate, judge
from .defaults import (
    ADAPT_RESERVE_S,
    BUDGET_S,
    MAX_DRIFT,
    MAX_NNZ,
    MAX_SPREAD,
    REPEAT_MATRICES,
    REPEAT_SHARE,
    RETRIES,
    TIME_LIMIT_S,
)

if TYPE_CHECKING:                       # imported where used: pandas costs 0.4 s to import
    import pandas as pd

@dataclass
class Calibration:
    """What :func:`calibrate` did.

    Attributes
    ----------
    model : RankModel, the calibrated model (saved at ``path``)
    path : pathlib.Path, where it was saved
    choice : str, the adaptation in use (:data:`pyspmv.training.adapt.CANDIDATES`): the best candidate when it
        beat the shipped model by more than the noise (:func:`pyspmv.training.adapt.judge`), else ``'shipped'``
    cv : pandas.DataFrame, cross-validated ranking quality of the shipped model and of each candidate tried
        (``cv.attrs["skipped"]``: retrained candidates left out, foreseen to end past ``time_limit_s``)
    matrices : list of str, the matrices measured (this run and resumed ones)
    new : int, how many of them this run measured
    remeasured : pandas.DataFrame, configurations measured again: ``matrix, dtype, config, before, after`` (q75/q25)
    folder : pathlib.Path, the measurements (a :func:`pyspmv.collect` folder)
    wall_s : float, seconds this run took
    repeat : dict or None, matrices timed again after measuring (:func:`repeatability`; None: none this run)
    judged : dict, the choice and what it was judged on (:func:`pyspmv.training.adapt.judge`)
    bad : list of (str, str), the files of ``matrices`` skipped and why (one line each)
    """

    model: Any
    path: Path
    choice: str
    cv: pd.DataFrame
    matrices: list[str]
    new: int
    remeasured: pd.DataFrame
    folder: Path
    wall_s: float
    meta: dict[str, Any] = field(default_factory=dict)
    repeat: dict[str, Any] | None = None
    judged: dict[str, Any] = field(default_factory=dict)
    bad: list[tuple[str, str]] = field(default_factory=list)


def feature_space(F: pd.DataFrame, ref: pd.DataFrame) -> np.ndarray:
    """Matrix features as points: log1p of each feature (clipped at 0), standardised by ``ref``'s
    mean and standard deviation (features constant over ``ref`` are left out)."""

    def logs(d: pd.DataFrame) -> np.ndarray:
        a = np.nan_to_num(d.loc[:, list(FEATURE_NAMES)].to_numpy(np.float64), nan=0.0, posinf=1e300)
        return np.log1p(np.maximum(a, 0.0))
    R, P = logs(ref), logs(F)
    sd = R.std(axis=0)
    keep = sd > 0
    return (P[:, keep] - R.mean(axis=0)[keep]) / sd[keep]


def select(pool: pd.DataFrame, target: pd.DataFrame, cost: np.ndarray) -> list[int]:
    """Pool rows in the order calibration measures them: greedy facility location, each step taking
    the matrix that most reduces the summed distance from every ``target`` matrix (the training
    dataset) to its nearest chosen one, per second of ``cost``. Stops when no matrix reduces it.
    Deterministic: ties go to the earlier row."""
    from scipy.spatial.distance import cdist
    D = cdist(feature_space(target, target), feature_space(pool, target))
    cur = D.max(axis=1)
    cost = np.maximum(np.asarray(cost, dtype=np.float64), 1e-9)
    left = np.ones(D.shape[1], dtype=bool)
    order: list[int] = []
    while left.any():
        gain = np.maximum(cur[:, None] - D, 0.0).sum(axis=0) / cost
        gain[~left] = -1.0
        j = int(np.argmax(gain))
        if gain[j] <= 0:
            break
        order.append(j)
        left[j] = False
        cur = np.minimum(cur, D[:, j])
    return order


def matrix_cost(table: pd.DataFrame, budget_s: float, repeats: int, warmup: int) -> pd.Series:
    """Seconds :func:`pyspmv.datasets.collect` would spend timing each matrix of a timings table
    (its measured times, every value type it holds) at ``budget_s`` per configuration."""
    import pandas as pd
    ok = table[table["status"] == "ok"]
    t = ok["median_ms"].to_numpy(np.float64) / 1e3
    runs = np.clip(budget_s / np.maximum(t, 1e-9), 1, repeats)
    s = (warmup + runs) * t + np.nan_to_num(ok["convert_ms"].to_numpy(np.float64)) / 1e3
    return pd.Series(s, index=ok["matrix"].to_numpy()).groupby(level=0).sum()


def _cost_of(nnz: np.ndarray, known: pd.Series, known_nnz: pd.Series) -> np.ndarray:
    """A log-log fit of cost against nnz over the matrices whose cost is known."""
    x = np.log(np.maximum(known_nnz.reindex(known.index).to_numpy(np.float64), 1.0))
    b, a = np.polyfit(x, np.log(np.maximum(known.to_numpy(), 1e-6)), 1)
    return np.exp(a + b * np.log(np.maximum(nnz, 1.0)))


def _candidates(max_nnz: float, seed: int) -> list[CorpusEntry]:
    """The matrices calibration may measure besides the user's: the real matrices shipped with pyspmv and
    their scaled copies (:func:`pyspmv.datasets.real_corpus`), then the generated standard corpus."""
    return real_corpus(max_nnz=max_nnz, seed=seed) + standard_corpus(max_nnz=max_nnz, seed=seed)


def _pool(shipped: Any, device: str, max_nnz: float, seed: int, budget_s: float, repeats: int, warmup: int,
          ndtypes: int) -> tuple[list[Any], pd.DataFrame, np.ndarray]:
    """Candidate entries (:func:`_candidates`), their features (the shipped dataset's where it has them,
    computed otherwise) and their estimated measurement cost (s)."""
    import pandas as pd

    entries = _candidates(max_nnz, seed)
    if all(is_real(e.group) for e in entries):
        smallest = standard_corpus(seed=seed)[0].nnz
        raise ValueError(f"The 'max_nnz' parameter of calibrate() must be at least {smallest} (the smallest matrix of "
                         f"the standard corpus). Got {max_nnz:g} instead.")
    known = shipped.features.set_index("matrix")
    rows = []
    for e in entries:
        if e.name in known.index:
            rows.append(known.loc[e.name])
        else:
            rows.append(pd.Series(features(e.build()), name=e.name))
    F = pd.DataFrame(rows)
    cost = matrix_cost(shipped.table, budget_s, repeats, warmup)
    per_dtype = cost / max(1, shipped.table["dtype"].nunique())
    nnz = F["nnz"].to_numpy(np.float64)
    est = _cost_of(nnz, per_dtype, known["nnz"])
    have = per_dtype.reindex([e.name for e in entries]).to_numpy()
    est = np.where(np.isfinite(have), have, est) * ndtypes
    return entries, F.reset_index(drop=True), est


def measuring_order(entries: list[Any], F: pd.DataFrame, target: pd.DataFrame, cost: np.ndarray) -> list[int]:
    """The real matrices shipped with pyspmv first (smallest first: what the choice is judged on), then
    the scaled copies and generated matrices in :func:`select`'s order."""
    first = [i for i, e in enumerate(entries) if is_real(e.group) and base_matrix(e.name) == e.name]
    rest = np.array([i for i in range(len(entries)) if i not in set(first)], dtype=np.int64)
    if not len(rest):
        return first
    return first + [int(rest[j]) for j in select(F.iloc[rest], target, cost[rest])]


def noisy_rows(timings: pd.DataFrame, max_spread: float) -> np.ndarray:
    """Positions of the rows timed ``ok`` whose q75/q25 exceeds ``max_spread``."""
    q25, q75 = timings["q25_ms"].to_numpy(np.float64), timings["q75_ms"].to_numpy(np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        spread = np.where(q25 > 0, q75 / q25, np.inf)
    return np.flatnonzero((timings["status"].to_numpy() == "ok") & (spread > max_spread))


def remeasure(M: Any, timings: pd.DataFrame, *, device: str, max_spread: float, retries: int, repeats: int,
              warmup: int, budget_s: float) -> tuple[pd.DataFrame, list[dict[str, Any]]]:
    """``timings`` (one matrix's rows) with each configuration spread past ``max_spread`` timed again
    up to ``retries`` times, keeping its tightest timing; and what was re-measured."""
    out = timings.copy()
    done: list[dict[str, Any]] = []
    for i in noisy_rows(out, max_spread):
        r = out.iloc[i]
        before = float(r["q75_ms"] / r["q25_ms"])
        best, spread = None, before
        for _ in range(retries):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", NoisyTimingWarning)
                again = benchmark(M, [r["config"]], device=device, dtype=r["dtype"], repeats=repeats, warmup=warmup,
                                  budget_s=budget_s, progress=False).iloc[0]
            if again["status"] == "ok" and again["q25_ms"] > 0 and again["q75_ms"] / again["q25_ms"] < spread:
                best, spread = again, float(again["q75_ms"] / again["q25_ms"])
            if spread <= max_spread:
                break
        if best is not None:
            for k in ("median_ms", "q25_ms", "q75_ms", "min_ms", "repeats"):
                out.iloc[i, out.columns.get_loc(k)] = best[k]
        note = f"re-measured by calibrate: q75/q25 {before:.3g} -> {spread:.3g}"
        out.iloc[i, out.columns.get_loc("note")] = "; ".join(s for s in (str(r["note"] or ""), note) if s)
        done.append({"matrix": r["matrix"], "dtype": r["dtype"], "config": r["config"], "before": before,
                     "after": spread})
    return out, done


def repeatability(first: pd.DataFrame, second: pd.DataFrame) -> dict[str, Any]:
    """How two timings of the same matrices (``pyspmv.collect`` rows) agree, over the configurations
    timed ``ok`` in both: ``matrices``, ``pairs``, ``drift`` (median |t2 / t1 - 1|) and ``best_again``
    (geomean over (matrix, dtype) of the first timing's fastest configuration in the second timing,
    over the second's fastest: what the machine's own noise leaves of a perfect prediction)."""
    key = ["matrix", "dtype", "config"]
    a, b = (t.loc[t["status"] == "ok", [*key, "median_ms"]] for t in (first, second))
    m = a.merge(b, on=key, suffixes=("_1", "_2"))
    m = m[(m["median_ms_1"] > 0) & (m["median_ms_2"] > 0)]
    if m.empty:
        return {"matrices": 0, "pairs": 0, "drift": None, "best_again": None}
    r = np.log(m["median_ms_2"].to_numpy() / m["median_ms_1"].to_numpy())
    again = np.array([float(g["median_ms_2"].loc[g["median_ms_1"].idxmin()] / g["median_ms_2"].min())
                      for _, g in m.groupby(["matrix", "dtype"])])
    return {"matrices": int(m["matrix"].nunique()), "pairs": len(m), "drift": float(np.expm1(np.median(np.abs(r)))),
            "best_again": float(np.exp(np.mean(np.log(again)))), "within5_again": float(np.mean(again <= 1.05))}


def timing_noise(repeat: dict[str, Any] | None, local: Any, in_rounds: pd.DataFrame | None = None) -> dict[str, Any]:
    """How far the timings' own noise moves the metrics calibration chooses by, for
    :func:`pyspmv.training.adapt.judge`: ``geomean_ratio`` (how far above 1 the geomean t_pick/t_best of a
    perfect pick is) and ``within<5%`` (the share of picks it puts beyond 5 %), and ``from``.

    From the matrices timed in rounds (``in_rounds``, :func:`pyspmv.training.rounds.noise`: each round's
    fastest configurations timed by the other rounds, over every matrix measured so) where there are some,
    the larger of that and the matrices timed twice; otherwise from the matrices timed twice (``repeat``,
    :func:`repeatability`) where there are some: the first timing's fastest configurations judged by the
    second (``best_again - 1``, ``1 - within5_again``); otherwise from the per-configuration quartiles of the measurements (``local``, an
    :class:`~pyspmv.training.adapt.Local`): over the (matrix, value type) units, the geometric mean of the
    fastest configuration's q75/q25, less 1, and the share of units where it exceeds 1.05.
    """
    twice = None
    if repeat and repeat.get("best_again") is not None:
        twice = {"geomean_ratio": float(repeat["best_again"]) - 1.0,
                 "within<5%": 1.0 - float(repeat.get("within5_again", 1.0)), "from": "timed twice"}
    r = rounds.noise(in_rounds) if in_rounds is not None and len(in_rounds) else None
    if r is not None:
        if twice is not None:
            r = {**r, **{k: max(r[k], twice[k]) for k in ("geomean_ratio", "within<5%")},
                 "from": "rounds and timed twice"}
        return r
    if twice is not None:
        return twice
    import pandas as pd
    d = pd.DataFrame({"u": local.groups.astype(str), "b": local.X["value_bytes"].to_numpy(), "t": local.y,
                      "s": np.where(local.q25 > 0, local.q75 / np.where(local.q25 > 0, local.q25, 1.0), np.nan)})
    best = d.loc[d.groupby(["u", "b"])["t"].idxmin(), "s"].dropna().to_numpy()
    if not len(best):
        return {"geomean_ratio": 0.0, "within<5%": 0.0, "from": "none"}
    return {"geomean_ratio": float(np.exp(np.mean(np.log(np.maximum(best, 1.0))))) - 1.0,
            "within<5%": float(np.mean(best > 1.05)), "from": "quartiles"}


def _repeat(entries: list[Any], measured: list[tuple[int, float, pd.DataFrame]], deadline: float, *, device: str,
            dtypes: tuple[str, ...], repeats: int, warmup: int, budget_s: float) -> dict[str, Any] | None:
    """Time again the cheapest :data:`REPEAT_MATRICES` of the first ``2 * REPEAT_MATRICES`` ``measured``
    (entry, seconds, timings) that fit before ``deadline``, and compare (:func:`repeatability`)."""
    import pandas as pd

    picks = sorted(measured[:2 * REPEAT_MATRICES], key=lambda m: m[1])[:REPEAT_MATRICES]
    first, second = [], []
    for j, took, timings in picks:
        if time.monotonic() + took > deadline:
            break
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", NoisyTimingWarning)
            res = measure(entries[j], device=device, dtypes=dtypes, configs=None, repeats=repeats, warmup=warmup,
                          budget_s=budget_s)
        if res["timings"] is not None:
            first.append(timings)
            second.append(res["timings"])
    return repeatability(pd.concat(first), pd.concat(second)) if first else None


def _keeping(e: CorpusEntry) -> tuple[CorpusEntry, dict[str, Any]]:
    """``e`` whose build also keeps the matrix it built (in the dict, under ``"M"``): measured, then timed
    again in rounds without building it twice."""
    built: dict[str, Any] = {}

    def build() -> Any:
        built["M"] = e.build()
        return built["M"]
    return CorpusEntry(e.name, e.group, e.nnz, build), built


def _in_rounds(M: Any, res: dict[str, Any], folder: Path, *, device: str, dtypes: tuple[str, ...], repeats: int,
               warmup: int, budget_s: float) -> None:
    """Time every configuration of ``M`` again, round after round, until the rounds agree
    (:func:`pyspmv.training.rounds.settled`) or :data:`~pyspmv.training.rounds.MAX_ROUNDS` have run;
    ``res["timings"]`` (the first round) becomes their combination, and the rounds are saved in
    ``<folder>/rounds`` (before the timings, which mark the matrix done)."""
    import pandas as pd
    first = res["timings"]
    frames, later = [rounds.frame(first, 0)], []
    while len(frames) < rounds.MAX_ROUNDS:
        if len(frames) >= rounds.MIN_ROUNDS and rounds.settled(pd.concat(frames)):
            break
        try:
            t = benchmark(M, None, device=device, dtype=list(dtypes), repeats=repeats, warmup=warmup,
                          budget_s=budget_s, progress=False)
        except Exception:  # noqa: BLE001 (the first round stands; a matrix is never fatal, as in measure())
            break
        t["matrix"] = first["matrix"].iloc[0]
        later.append(t)
        frames.append(rounds.frame(t, len(frames)))
    res["timings"] = rounds.combine(first, later)
    (folder / "rounds").mkdir(exist_ok=True)
    _write_csv(pd.concat(frames, ignore_index=True), folder / "rounds" / f"{_safe(res['name'])}.csv.gz")


def _measure(entries: list[Any], order: list[int], est: np.ndarray, folder: Path, deadline: float, *,
             device: str, dtypes: tuple[str, ...], repeats: int, warmup: int, budget_s: float, max_spread: float,
             retries: int, progress: bool) -> tuple[int, list[dict[str, Any]], list[tuple[int, float, pd.DataFrame]]]:
    """Measure pool entries in ``order`` until ``deadline`` (time.monotonic), skipping those measured
    before and those whose estimated cost no longer fits; each matrix saved as soon as it is done.
    Returns how many were measured, what was re-measured, and (entry, seconds, timings) of the first
    ``2 * REPEAT_MATRICES`` measured."""
    from tqdm.auto import tqdm

    parts = folder / "parts"
    parts.mkdir(parents=True, exist_ok=True)
    for stale in parts.glob(".tmp-*"):
        stale.unlink(missing_ok=True)
    ratio, new, ratios = 1.0, 0, list[float]()
    remeasured: list[dict[str, Any]] = []
    measured: list[tuple[int, float, pd.DataFrame]] = []
    total = max(0.0, deadline - time.monotonic())
    with tqdm(total=round(total), desc="calibrate", unit="s", disable=not progress,
              bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} s{postfix}") as bar:
        for j in order:
            e = entries[j]
            if _done(parts, e.name):
                continue
            if time.monotonic() + est[j] * ratio > deadline:
                continue
            bar.set_postfix_str(f"{new} measured, now {printable(e.name)}")
            t0 = time.monotonic()
            kept, built = _keeping(e)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", NoisyTimingWarning)     # re-measured and reported below
                res = measure(kept, device=device, dtypes=dtypes, configs=None,
                              repeats=repeats, warmup=warmup, budget_s=budget_s)
                if res["timings"] is not None and len(noisy_rows(res["timings"], max_spread)):
                    res["timings"], again = remeasure(built["M"], res["timings"], device=device,
                                                      max_spread=max_spread, retries=retries, repeats=repeats,
                                                      warmup=warmup, budget_s=budget_s)
                    remeasured += again
                if res["timings"] is not None:
                    _in_rounds(built["M"], res, folder, device=device, dtypes=dtypes, repeats=repeats, warmup=warmup,
                               budget_s=budget_s)
            _save(res, parts)
            new += 1
            took = time.monotonic() - t0
            if res["timings"] is not None and len(measured) < 2 * REPEAT_MATRICES:
                measured.append((j, took, res["timings"]))
            # How much longer matrices take than estimated: the median over the matrices after the first, whose
            # time also pays one-off costs (a cold cache, lazy imports) that once stopped a whole run after it.
            ratios.append(took / max(float(est[j]), 1e-9))
            ratio = max(1.0, float(np.median(ratios[1:]))) if len(ratios) > 1 else 1.0
            bar.update(min(took, bar.total - bar.n))
        bar.set_postfix_str(f"{new} measured")
    return new, remeasured, measured


#: calibrate()'s parameters checked at its door.
_PARAMS = {"device": OneOf(DEVICES), "time_limit_s": Interval(None, 0, closed="neither", note=" s"),
           "max_spread": Interval(None, 1, closed="neither", note=" (a q75/q25 ratio)"),
           "max_drift": Interval(None, 0, closed="neither", note=" (0.5: 50 %)")}


def _taken(max_nnz: float, seed: int) -> list[CorpusEntry]:
    """The names the user's matrices may not take: calibration's candidates, and the shipped real matrices
    of any size too (an earlier run's may be in the folder)."""
    return list({e.name: e for e in _candidates(max_nnz, seed) + real_corpus(max_nnz=np.inf, copies=0)}.values())


def _plan(shipped: Any, mine: list[CorpusEntry], device: str, max_nnz: float, seed: int, budget_s: float,
          repeats: int, warmup: int, ndtypes: int, only_matrices: bool
          ) -> tuple[list[CorpusEntry], list[int], np.ndarray]:
    """What calibrate() measures: the entries, the order to measure them in and each one's estimated
    cost; the user's matrices first, smallest first, their cost from the shipped timings' fit."""
    if only_matrices:
        entries, order, est = [], [], np.zeros(0)
    else:
        entries, F, est = _pool(shipped, device, max_nnz, seed, budget_s, repeats, warmup, ndtypes)
        order = measuring_order(entries, F, shipped.features, est)
    if mine:
        cost = matrix_cost(shipped.table, budget_s, repeats, warmup) / max(1, shipped.table["dtype"].nunique())
        known = shipped.features.set_index("matrix")["nnz"]
        mest = _cost_of(np.array([e.nnz for e in mine], dtype=np.float64), cost, known) * ndtypes
        order = list(range(len(mine))) + [len(mine) + j for j in order]
        entries, est = mine + entries, np.concatenate([mest, est])
    return entries, order, est


def _refuse_drift(repeat: dict[str, Any] | None, max_drift: float, folder: Path) -> None:
    """BusyMachineError when the matrices timed again moved by more than ``max_drift``."""
    if repeat is not None and repeat["drift"] is not None and repeat["drift"] > max_drift:
        raise BusyMachineError(
            f"calibrate() saved no model: {repeat['matrices']} matrices timed again after measuring moved by a "
            f"median {repeat['drift']:.1%} (more than max_drift={max_drift:g}), so the machine was busy while "
            "measuring, and a model adapted to these timings would rank by the load, not by the kernels. When it "
            "is quiet (close other work; on a shared node, set OMP_NUM_THREADS to the cores you have), run "
            f"calibrate again with restart=True (pyspmv calibrate --restart) to discard the measurements in "
            f"{folder}; or accept them with max_drift above {repeat['drift']:.3g} (--max-drift).")


def _measurements(folder: Path, device: str, measure: bool, time_limit_s: float, fp: Any,
                  timing: tuple[Any, int, int, float]) -> tuple[Any, dict[str, Any], Any]:
    """The dataset of ``folder`` (consolidated first when this run measured, with ``timing``: dtypes,
    repeats, warmup, budget_s), the machine that measured it and its fingerprint (``fp`` when measured
    here)."""
    if not any((folder / "parts").glob("[!.]*.csv.gz")) and not (not measure and (folder / "timings.csv.gz").is_file()):
        raise ValueError(f"calibrate() found no measured matrix in folder={str(folder)!r}"
                         + (f" within time_limit_s={time_limit_s:g} s; raise it." if measure else
                            "; run it with measure=True (the CLI without --no-measure) first."))
    if measure:
        dtypes, repeats, warmup, budget_s = timing
        datasets.consolidate(folder, params={"device": device, "dtypes": list(dtypes), "repeats": repeats,
                                             "warmup": warmup, "budget_s": budget_s, "configs": "all"})
    ds = datasets.load(folder, dtype=None)
    info = device_info(device) if measure else dict(ds.metadata.get("device_info") or {})
    if not measure:
        if info.get("device", device) != device:
            raise ValueError(f"The measurements in folder={str(folder)!r} are of device {info.get('device')!r}; "
                             f"the 'device' parameter of calibrate() is {device!r}.")
        fp = fingerprint_of({"device": device, **info})
    return ds, info, fp


def _choose(rm: Any, ds: Any, shipped: Any, folder: Path, repeat: dict[str, Any] | None, kind: str, seed: int,
            deadline: float) -> tuple[Local, Local, Any, dict[str, Any]]:
    """The local rows, the shipped ones of the value types measured, the candidates' cross-validation and
    the judgement between them (:func:`pyspmv.training.adapt.judge`)."""
    groups = ds.table.drop_duplicates("matrix").set_index("matrix")["group"].astype(str)
    yours = {str(m) for m, g in groups.items() if g == USER_GROUP or g.startswith(USER_GROUP + ":")}
    real = {str(m) for m, g in groups.items() if is_real(g)}
    local, base = Local.of(ds), Local.of(shipped)
    base = base.take(np.flatnonzero(np.isin(base.X["value_bytes"].to_numpy(), local.X["value_bytes"].unique())))
    cv = cross_validate(rm, local, base, kind=kind, seed=seed, deadline=deadline,
                        folds_by=np.array([base_matrix(g) for g in local.groups]))
    noise = timing_noise(repeat, local, rounds.read(folder, set(groups.index.astype(str))))
    return local, base, cv, judge(cv, noise, yours, seed=seed, real=real)


def _base(device: str, model: Any, dataset: Any) -> tuple[Any, Any, Any]:
    """The model to adapt (``model``, a path to one or the default of ``device``), the name of the dataset it
    was trained on and that dataset."""
    rm = default_model(device) if model is None else load_model(model) if isinstance(model, (str, os.PathLike)) else model
    name = dataset if dataset is not None else rm.meta.get("dataset")
    if name is None:
        raise ValueError("The 'dataset' parameter of calibrate() is needed: the model records no dataset "
                         "(meta['dataset']) whose feature space to cover.")
    return rm, name, datasets.load(name, dtype=None)


def _save_calibrated(cal: Any, out: Any, device: str) -> Path:
    """Save the calibrated model to ``out`` (None: where :func:`pyspmv.rank` looks) and have rank() read it."""
    path = Path(out) if out is not None else calibrated_path(device)
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomically(path, lambda tmp: save_model(cal, tmp), ".pyspmv")   # rank() never reads a half-written model
    reread_calibrated()
    return path


def calibrate(device: str = "cpu", *, time_limit_s: float = TIME_LIMIT_S, budget_s: float = BUDGET_S,
              max_nnz: float = MAX_NNZ, dtypes: tuple[str, ...] = DTYPES, seed: int = 0,
              max_spread: float = MAX_SPREAD, retries: int = RETRIES, max_drift: float = MAX_DRIFT,
              kind: str = "forest", model: Any = None, dataset: Any = None, out: Any = None, folder: Any = None,
              restart: bool = False, repeats: int = 200, warmup: int = 10, progress: bool = True,
              measure: bool = True, matrices: Any = None, only_matrices: bool = False) -> Calibration:
    """Measure this machine and adapt the ranking model of ``device`` to it; see the module's docstring.

    Parameters
    ----------
    device : {'cpu', 'cuda'}
    time_limit_s : float
        Wall-time limit: measuring stops starting new matrices :data:`ADAPT_RESERVE_S` (of ``device``) before it.
    budget_s, repeats, warmup
        Timing of each configuration, as :func:`pyspmv.collect`.
    max_nnz : float
        Largest candidate matrix (stored entries).
    dtypes : tuple of str
        Value types measured (the calibrated model ranks these).
    seed : int
        Seed of the standard corpus the candidates come from (the selection is deterministic for it).
    max_spread, retries
        Re-measure rule: a configuration with q75/q25 > ``max_spread`` is timed again up to ``retries`` times.
    max_drift : float
        Refusal rule: when the matrices timed again after measuring (:func:`repeatability`) moved by a
        median of more than this (0.5: 50 %), no model is saved (:class:`BusyMachineError`); ``inf``
        accepts any drift.
    kind : str
        The model kind retrained (``pyspmv.models.MODELS``).
    model : RankModel or path, optional
        The model to adapt; default :func:`pyspmv.default_model` of ``device``.
    dataset : str or path, optional
        The dataset ``model`` was trained on (its ``meta['dataset']`` by default): the feature space to
        cover, cost estimates, and the shipped rows of the ``retrain/mixed`` candidate.
    out : path, optional
        Where to save the calibrated model; default :func:`pyspmv.devices.machine.calibrated_path` (where
        :func:`pyspmv.rank` looks).
    folder : path, optional
        The measurements (a collect folder, resumed when re-run on the same machine); default
        ``$PYSPMV_HOME/calibration/<fingerprint id>``.
    restart : bool
        Discard earlier measurements in ``folder`` first.
    progress : bool
        A progress bar (seconds of the measuring time) on stderr.
    measure : bool
        False: measure nothing, adapt ``model`` to the measurements already in ``folder`` (after an
        upgrade changed the shipped model, in seconds instead of minutes). The calibrated model then
        records the machine that measured them (their ``device_info``), not this one.
    matrices : path, optional
        A folder of your own Matrix Market files (:func:`user_matrices`), measured first, smallest first,
        beside the generated ones (resumably, as they are); a file that cannot be read or timed is
        skipped and listed in ``Calibration.bad`` with its reason. When at least
        :data:`pyspmv.training.adapt.JUDGE_MIN_MATRICES` of them were measured, the choice is judged on
        them (:func:`pyspmv.training.adapt.judge`). Their names are checked before anything is measured, as
        :func:`pyspmv.collect` checks its own: a file name that is not UTF-8 text or too long for its part
        files, and files whose names share part files with each other's or with one of pyspmv's matrices
        (``a b.mtx`` and ``a_b.mtx``; ``bcspwr08.mtx`` and the shipped real matrix) are refused, each named
        (``ValueError``; rename them).
    only_matrices : bool
        Measure only ``matrices``, no generated ones.

    The choice: the shipped model, its corrections and the retrained models are cross-validated on the
    measured matrices (grouped by matrix), and the best replaces the shipped model only when it beats it
    by more than the noise (the rule of :func:`pyspmv.training.adapt.judge`: geomean t_pick/t_best lower
    by more than the noise on it, share within 5 % not lower by more than the noise on that; the noise
    from the matrices timed twice, :func:`timing_noise`, or from resampling the judged matrices, whichever
    is larger). What it was judged on, the numbers, the noise and the decision are saved in the model's
    ``meta['calibration']['judged']`` (``pyspmv calibrate --report`` prints them).

    Returns
    -------
    Calibration

    Raises
    ------
    BusyMachineError
        The timings moved by more than ``max_drift`` while measuring (a busy machine): nothing saved.
    ValueError
        A bad parameter, or names of ``matrices`` refused (above): nothing measured.
    """
    import pandas as pd

    t_start = time.monotonic()
    validate("calibrate()", _PARAMS, locals())
    rm, name, shipped = _base(device, model, dataset)
    fp = fingerprint(device)
    folder = Path(folder) if folder is not None else home() / "calibration" / fingerprint_id(fp)
    new, remeasured, repeat = 0, [], None
    mine, bad = given_matrices(matrices, only_matrices, _taken(max_nnz, seed) if matrices is not None else [])
    if measure:
        if restart and (folder / "parts").is_dir():
            shutil.rmtree(folder / "parts")
        entries, order, est = _plan(shipped, mine, device, max_nnz, seed, budget_s, repeats, warmup, len(dtypes),
                                    only_matrices)
        deadline = t_start + time_limit_s - min(ADAPT_RESERVE_S[device], 0.5 * time_limit_s)
        kw = {"device": device, "dtypes": tuple(dtypes), "repeats": repeats, "warmup": warmup, "budget_s": budget_s}
        new, remeasured, measured = _measure(entries, order, est, folder, deadline - REPEAT_SHARE * time_limit_s,
                                             max_spread=max_spread, retries=retries, progress=progress, **kw)
        repeat = _repeat(entries, measured, deadline, **kw)
        _refuse_drift(repeat, max_drift, folder)
    ds, info, fp = _measurements(folder, device, measure, time_limit_s, fp, (dtypes, repeats, warmup, budget_s))
    bad = bad + failed_files(matrices, mine, folder)
    local, base, cv, judged = _choose(rm, ds, shipped, folder, repeat, kind, seed, t_start + time_limit_s)
    judged["yours_given"] = len(mine) if mine else None
    cal = adapt(choice := judged["choice"], rm, local, base, kind=kind, seed=seed)
    now = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    cal.meta.update({
        "fingerprint": fp, "device_info": info, "dataset": str(name),
        "calibration": {"choice": choice, "date": now, "matrices": int(ds.groups.nunique()),
                        "wall_s": round(time.monotonic() - t_start, 1), "time_limit_s": time_limit_s,
                        "budget_s": budget_s, "max_nnz": max_nnz, "seed": seed, "remeasured": len(remeasured),
                        "base": rm.source, "measured": measure, "repeat": repeat,
                        "cv": {k: {c: float(v) for c, v in r.items()} for k, r in cv.to_dict("index").items()},
                        "judged": judged, "bad": [list(b) for b in bad]}})
    path = _save_calibrated(cal, out, device)
    return Calibration(cal, path, choice, cv, sorted(ds.groups.unique()), new,
                       pd.DataFrame(remeasured, columns=["matrix", "dtype", "config", "before", "after"]), folder,
                       time.monotonic() - t_start, cal.meta["calibration"], repeat, judged, bad)
