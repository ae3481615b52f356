"""A truth that repeats: every configuration of a matrix timed in interleaved rounds.

One timing of a configuration holds its runs back to back, so a machine that drifts for a few seconds
moves it whole and no quartile shows it; on the 2-core dev VMs the same model scored 65-83 % within 5 %
of the best from one evening's measurement to the next (issue 39). Calibration therefore times each
matrix in rounds: every configuration once per round, round after round, until the rounds agree on
which configurations are fastest (:func:`settled`) or :data:`MAX_ROUNDS` have run. The timing kept is the
median of the rounds', its quartiles widened to the rounds' spread, and the rounds themselves are kept
(``<folder>/rounds``) so that the noise the choice is judged against (:func:`noise`) comes from every
matrix measured, not from a few timed again at the end.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

#: Rounds per matrix: at least MIN_ROUNDS (the fewest that show a spread), at most MAX_ROUNDS.
MIN_ROUNDS = 2
MAX_ROUNDS = 4
#: The rounds agree when each round's fastest configuration, timed by the other rounds, is within this
#: factor of their fastest (the 5 % that "within 5 % of the best" is judged at).
SETTLE = 1.05
#: The columns of a matrix's rounds file: one row per round, value type and configuration.
COLUMNS = ("matrix", "dtype", "config", "round", "median_ms")
_KEY = ["dtype", "config"]


def again(T: np.ndarray) -> np.ndarray:
    """For a (rounds x configurations) table of one matrix and value type (NaN: not timed ``ok``):
    each round's fastest configuration, timed by the median of the other rounds, over their fastest
    (1: the other rounds agree that it is the best). Rounds with nothing timed are left out."""
    T = np.asarray(T, dtype=np.float64)
    ok = np.isfinite(T).any(axis=1)
    T = T[ok]
    if len(T) < 2:
        return np.zeros(0)
    out = []
    for r in range(len(T)):
        if not np.isfinite(T[r]).any():
            continue
        b = int(np.nanargmin(T[r]))
        with np.errstate(all="ignore"):
            others = np.nanmedian(np.delete(T, r, axis=0), axis=0)
        if np.isfinite(others[b]) and np.nanmin(others) > 0:
            out.append(others[b] / np.nanmin(others))
    return np.asarray(out)


def _tables(rounds: pd.DataFrame) -> dict[tuple[str, str], np.ndarray]:
    """(matrix, dtype) -> its (rounds x configurations) table of medians."""
    out = {}
    for (m, d), g in rounds.groupby(["matrix", "dtype"], sort=True):
        out[(str(m), str(d))] = g.pivot_table(index="round", columns="config", values="median_ms",
                                              aggfunc="first").to_numpy(np.float64)
    return out


def settled(rounds: pd.DataFrame) -> bool:
    """Whether the rounds so far (:data:`COLUMNS`) agree on the fastest configuration within
    :data:`SETTLE` for every value type."""
    tables = _tables(rounds)
    return all(len(a := again(T)) > 0 and float(a.max()) <= SETTLE for T in tables.values())


def frame(timings: pd.DataFrame, r: int) -> pd.DataFrame:
    """Round ``r`` of a :func:`pyspmv.benchmark` or :func:`pyspmv.datasets.collect.measure` table, as rows of
    :data:`COLUMNS` (configurations not timed ``ok`` carry NaN)."""
    t = timings.loc[:, ["matrix", "dtype", "config"]].copy()
    t["round"] = r
    t["median_ms"] = np.where(timings["status"].to_numpy() == "ok", timings["median_ms"].to_numpy(np.float64), np.nan)
    return t.loc[:, list(COLUMNS)]


def combine(first: pd.DataFrame, later: list[pd.DataFrame]) -> pd.DataFrame:
    """``first`` (the first round's timings, every column of a dataset's timings table) with each
    configuration timed ``ok`` in every round given the median of the rounds' medians, ``q25_ms`` and
    ``q75_ms`` widened to the rounds' 25th and 75th percentiles where those lie outside, ``min_ms`` the least
    and ``repeats`` the sum; a configuration not ``ok`` in a later round keeps its first timing, with a note."""
    if not later:
        return first
    out = first.copy()
    key = out.set_index(_KEY).index
    med = [out["median_ms"].to_numpy(np.float64)]
    q25, q75 = [out["q25_ms"].to_numpy(np.float64)], [out["q75_ms"].to_numpy(np.float64)]
    mins, reps = [out["min_ms"].to_numpy(np.float64)], [out["repeats"].to_numpy(np.float64)]
    ok = out["status"].to_numpy() == "ok"
    for t in later:
        t = t.set_index(_KEY).reindex(key)
        ok &= (t["status"] == "ok").to_numpy()
        med.append(t["median_ms"].to_numpy(np.float64))
        q25.append(t["q25_ms"].to_numpy(np.float64))
        q75.append(t["q75_ms"].to_numpy(np.float64))
        mins.append(t["min_ms"].to_numpy(np.float64))
        reps.append(t["repeats"].to_numpy(np.float64))
    M = np.vstack(med)
    with np.errstate(all="ignore"):
        m = np.median(M, axis=0)
        lo = np.minimum(np.median(np.vstack(q25), axis=0), np.percentile(M, 25, axis=0))
        hi = np.maximum(np.median(np.vstack(q75), axis=0), np.percentile(M, 75, axis=0))
        spread = M.max(axis=0) / M.min(axis=0)
    n = len(med)
    out["median_ms"] = np.where(ok, m, out["median_ms"])
    out["q25_ms"] = np.where(ok, lo, out["q25_ms"])
    out["q75_ms"] = np.where(ok, hi, out["q75_ms"])
    out["min_ms"] = np.where(ok, np.vstack(mins).min(axis=0), out["min_ms"])
    out["repeats"] = np.where(ok, np.vstack(reps).sum(axis=0), out["repeats"]).astype(out["repeats"].dtype)
    first_ok = first["status"].to_numpy() == "ok"
    notes = [f"{n} rounds, their medians spread max/min {s:.3g}" if k else
             ("not ok in a later round: the first round's timing" if f else "")
             for k, f, s in zip(ok, first_ok, spread)]
    out["note"] = ["; ".join(x for x in (str(a or ""), b) if x) for a, b in zip(out["note"], notes)]
    return out


def noise(rounds: pd.DataFrame) -> dict[str, Any] | None:
    """How far the timings' own noise moves a perfect pick, from every matrix timed in rounds: over the
    (matrix, value type) units, each round's fastest configuration timed by the other rounds
    (:func:`again`); ``geomean_ratio``: the geometric mean of those ratios less 1; ``within<5%``: the share
    beyond 5 %; ``units``; ``spread``: the median over configurations of the rounds' max/min. None: no
    unit with two rounds."""
    tables = _tables(rounds)
    ratios = np.concatenate([again(T) for T in tables.values()]) if tables else np.zeros(0)
    if not len(ratios):
        return None
    spreads = np.concatenate([np.nanmax(T, axis=0) / np.nanmin(T, axis=0) for T in tables.values() if len(T) > 1])
    spreads = spreads[np.isfinite(spreads)]
    return {"geomean_ratio": float(np.exp(np.mean(np.log(ratios)))) - 1.0, "within<5%": float(np.mean(ratios > 1.05)),
            "from": "rounds", "units": len(tables), "spread": float(np.median(spreads)) if len(spreads) else None}


def read(folder: Path, matrices: set[str] | None = None) -> pd.DataFrame:
    """Every rounds file of ``<folder>/rounds`` (of ``matrices`` only, when given); a file that cannot be
    read is left out (its matrix then counts only through its timings)."""
    frames = []
    for p in sorted((Path(folder) / "rounds").glob("[!.]*.csv.gz")):
        try:
            f = pd.read_csv(p, dtype={"matrix": str, "dtype": str, "config": str})
        except (OSError, EOFError, ValueError):
            continue
        if set(COLUMNS) <= set(f.columns):
            frames.append(f.loc[:, list(COLUMNS)])
    out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=list(COLUMNS))
    return out if matrices is None else out[out["matrix"].isin(matrices)]
