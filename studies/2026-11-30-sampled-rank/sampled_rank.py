"""How much ranking quality does ``rank(estimate=True)`` lose against the exact design rows on the large H200 matrices?

    python studies/2026-11-30-sampled-rank/sampled_rank.py [--cv 5] [--n-calls 10000] [--cache-dir /tmp/sampled_study]

The matrices of ``datasets/h200_scaled_seed1`` (3.6e6-1.4e7 entries) and ``datasets/h200_scaled`` (1.1e6-3.2e6) are
rebuilt as datasets/README.md says they were made (``pyspmv.datasets.scaled_corpus`` of ``../shared/corpus``), checked
against the datasets' features (name, shape, entries) and cached under ``--cache-dir``. Every matrix of
``datasets.combine("h200", "h200_scaled_seed1", "h200_scaled")`` is held out once, as benchmarks/verify_auto.py holds
them out (grouped K-fold over base matrices, the cuda default's recipe fitted on the other folds, per value type).
For each held-out matrix of the two scaled datasets, its fold's model (in portable form, :func:`pyspmv.portable`)
ranks it with :func:`pyspmv.rank`:

- exact: ``estimate=False``, the design rows of the whole matrix;
- sampled: ``estimate=True``, the rows estimated from at most ``ESTIMATE_ROWS`` = 16384 rows and ``ESTIMATE_NNZ`` =
  65536 entries (blocks of 256 rows), or the exact rows where the sample would cover half of the matrix or misses its
  long rows (the fallback: then every predicted time equals the exact one, which is how it is counted here).

Scored on the dataset's measured medians, over the configurations the dataset measured as ``ok`` for that matrix:
the first pick (the ranking's first such configuration; within 5 % counting a pick whose [q25, q75] overlaps the
best's as the best, as benchmarks/default_quality.py counts), and ``verify="auto"`` replayed with
``n_calls=--n-calls`` by benchmarks/verify_auto.py's ``replay`` (its tolerance table computed from the held-out
predictions on the stored rows, as verify_auto.py computes it) from each ranking's predicted times.

Sanity checks: the exact design rows (:meth:`pyspmv.RankModel.core_rows`) against the dataset's stored rows of X;
the refitted fold models' predictions on the stored rows against verify_auto.py's ``held_out``; the C core's exact
predictions against the estimator's.

Then ``rank()``'s own time on this machine, exact against ``estimate=True``, with the shipped H200 default, for three
rebuilt matrices near 1.5e6, 5e6 and 1.4e7 entries that the sample does not send to the exact path (median of 5).

Resumable: every result is kept in ``--cache-dir``/cache.pkl as it is made. Writes ``sampled_rank.md`` and the
per-matrix frame ``sampled_rank.csv.gz`` beside this file.

The sampled design rows themselves are not read here: ``_core.core_rows(..., sample_rows, sample_nnz)`` is beyond
the public API and benchmarks/_internal.py does not list it (tests/test_public_api.py checks the studies' imports),
so the sampled rows are seen through what ``rank(estimate=True)`` makes of them: its predicted times.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import csv
import dataclasses
import os
import pickle
import shlex
import statistics
import subprocess
import sys
import time
import warnings
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import clone
from tqdm import tqdm

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from _internal import base_folds, make_model, ranking, unit_key  # noqa: E402
from _md import md_header  # noqa: E402
from _replay import held_out, median_equivalent, replay, tol_for, unit_errors  # noqa: E402

import pyspmv  # noqa: E402
from pyspmv import Matrix, datasets  # noqa: E402

#: The two datasets whose matrices are scored, and how datasets/README.md says each set was made:
#: (corpus folder filter: largest file size in bytes or None for all, min_nnz, max_nnz, per_kind, seeds, keep the
#: smallest n of the union or None for all).
SCALED: dict[str, tuple[int | None, float, float, int, tuple[int, ...], int | None]] = {
    "h200_scaled_seed1": (None, 3e6, 1.6e7, 3, (1,), None),
    "h200_scaled": (400_000, 1e6, 5e6, 4, (2, 3), 42),
}
#: Every dataset the folds are made of (verify_auto.py's defaults).
COMBINED = ("h200", "h200_scaled_seed1", "h200_scaled")
DTYPES = ("float64", "float32")
#: The size bands reported: (label, fewest entries, most entries excluded).
BANDS = (("1e6-3e6", 1e6, 3e6), (">= 3e6", 3e6, np.inf), ("all >= 1e6", 1e6, np.inf))
#: rank(estimate=True)'s budget: pyspmv.ranking.rank.ESTIMATE_ROWS and ESTIMATE_NNZ (not exported, so repeated here).
SAMPLE_ROWS, SAMPLE_NNZ = 16384, 65536
#: csrc/design.c's SPMV_PASS_BLOCK (rows of a sampled block) and SPMV_ESTIMATE_TAIL (the exact path where a block
#: of A holds more than this many times the entries of the fullest sampled one).
BLOCK, TAIL = 256, 2
#: Targets of the rank() timing, in stored entries.
TIMING_TARGETS = (1.5e6, 5e6, 1.4e7)
#: The design-row columns the sanity check compares (everything numeric of X but the configuration's parameters,
#: which both sides take from the id).
FEATURE_COLS = tuple(pyspmv.FEATURE_NAMES)
CONFIG_COLS = tuple(pyspmv.CONFIG_FEATURE_NAMES)


@dataclass
class Unit:
    """What was computed for one held-out (matrix, value type).

    Attributes
    ----------
    matrix, dataset, dtype : str
    fold : int
        The fold (of ``base_folds``) that holds the matrix out.
    nnz : int
    configs : list of str
        The configurations the dataset measured as ok for the unit, in the dataset's order.
    ms, q25, q75 : numpy.ndarray
        Their measured median and quartiles (ms).
    pred_exact, pred_sampled : numpy.ndarray
        The fold model's predicted ms from ``rank(estimate=False)`` and ``rank(estimate=True)`` (inf: the ranking
        says the configuration cannot serve the matrix; NaN: not in the ranking).
    pos_exact, pos_sampled : numpy.ndarray
        Each configuration's position in those rankings (0: first).
    pred_stored, score_stored : numpy.ndarray
        The fold estimator's ``predict`` and ``rank_scores`` on the dataset's stored rows.
    first_exact_all, first_sampled_all : str
        The first configuration of each ranking, measured or not.
    plan : str
        What the sample does with the matrix (:func:`sample_plan`): ``sampled`` (k blocks), ``half`` (a sample of
        half of A or more: exact) or ``tail`` (the sample misses long rows: exact).
    fallback : bool
        ``plan`` is not ``sampled``: ``rank(estimate=True)`` took the exact path.
    same_predictions : bool
        Every predicted time of the sampled ranking equals the exact one's (so it must where ``fallback``).
    row_diff : dict
        The exact design rows against the stored ones: largest relative difference of the feature columns and of
        the configuration columns, NaN patterns that differ, configurations compared.
    rank_s : tuple of float
        The seconds the two rank() calls took (one run each, while the study ran).
    """

    matrix: str
    dataset: str
    dtype: str
    fold: int
    nnz: int
    configs: list[str]
    ms: np.ndarray
    q25: np.ndarray
    q75: np.ndarray
    pred_exact: np.ndarray
    pred_sampled: np.ndarray
    pos_exact: np.ndarray
    pos_sampled: np.ndarray
    pred_stored: np.ndarray
    score_stored: np.ndarray
    first_exact_all: str
    first_sampled_all: str
    plan: str
    fallback: bool
    same_predictions: bool
    row_diff: dict[str, float] = field(default_factory=dict)
    rank_s: tuple[float, float] = (np.nan, np.nan)


class Cache:
    """A pickled dict kept in a file, written whole (atomically) after every change; :class:`Unit` values are kept as
    plain dicts (``("unit", fields)``), so that the file reads back whatever module loads it."""

    def __init__(self, path: Path):
        self.path = path
        self.data: dict[Any, Any] = pickle.loads(path.read_bytes()) if path.is_file() else {}

    def get(self, key: Any) -> Any:
        v = self.data.get(key)
        return Unit(**v[1]) if isinstance(v, tuple) and len(v) == 2 and v[0] == "unit" else v

    def units(self) -> list[Unit]:
        """Every :class:`Unit` kept."""
        return [Unit(**v[1]) for v in self.data.values() if isinstance(v, tuple) and len(v) == 2 and v[0] == "unit"]

    def put(self, key: Any, value: Any) -> None:
        self.data[key] = ("unit", dataclasses.asdict(value)) if isinstance(value, Unit) else value
        tmp = self.path.with_suffix(".tmp")
        tmp.write_bytes(pickle.dumps(self.data))
        os.replace(tmp, self.path)


# ---- the matrices -------------------------------------------------------------------------------------------------

def small_folder(corpus: Path, limit: int, into: Path) -> Path:
    """The files of ``corpus`` under ``limit`` bytes as a folder of their own (links, and a MANIFEST.csv of them):
    the ``FOLDER`` datasets/README.md names for ``h200_scaled``.

    Parameters
    ----------
    corpus : Path
        A folder with a MANIFEST.csv (``../shared/corpus``).
    limit : int
        Largest file size kept, exclusive, in bytes.
    into : Path
        The folder to make (made anew).

    Returns
    -------
    Path
        ``into``.
    """
    into.mkdir(parents=True, exist_ok=True)
    for p in into.iterdir():
        p.unlink()
    with open(corpus / "MANIFEST.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    keep = []
    for r in rows:
        f = next(corpus / f"{r['name']}{ext}" for ext in (".mtx", ".mtx.gz")
                 if (corpus / f"{r['name']}{ext}").is_file())
        if f.stat().st_size < limit:
            (into / f.name).symlink_to(f)
            keep.append(r)
    with open(into / "MANIFEST.csv", "w", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(keep)
    return into


def entries_of(name: str, corpus: Path, cache_dir: Path) -> tuple[list[Any], list[str]]:
    """The corpus entries that made dataset ``name``, as datasets/README.md says, and what was found on the way.

    Returns
    -------
    (list of CorpusEntry, list of str)
        The entries (smallest first where the collection kept the smallest), and lines saying how they compare with
        the dataset's matrices.
    """
    limit, lo, hi, per_kind, seeds, first = SCALED[name]
    folder = corpus if limit is None else small_folder(corpus, limit, cache_dir / f"corpus_under_{limit}")
    entries = [e for s in seeds for e in datasets.scaled_corpus(folder, lo, hi, per_kind=per_kind, seed=s)]
    if first is not None:                   # "smallest first; stopped by the call's time after `first`"
        entries = sorted(entries, key=lambda e: (e.nnz, e.name))[:first]
    have = set(datasets.load(name, dtype=None).features["matrix"])
    made = {e.name for e in entries}
    how = (f"`scaled_corpus({'../shared/corpus' if limit is None else f'FOLDER (files under {limit:,} bytes)'}, "
           f"{lo:g}, {hi:g}, per_kind={per_kind}, seed={'/'.join(map(str, seeds))})`"
           f"{'' if first is None else f', the {first} smallest of the union'}")
    note = [f"`{name}`: {how} gives {len(made)} matrices; the dataset has {len(have)}; "
            f"{len(made & have)} names in both, {len(have - made)} of the dataset's not made"
            + (f" ({', '.join(sorted(have - made))})" if have - made else "") + "."]
    return [e for e in entries if e.name in have], note


def matrix_path(cache_dir: Path, name: str) -> Path:
    return cache_dir / "matrices" / f"{name}.npz"


def rebuild(corpus: Path, cache_dir: Path) -> tuple[dict[str, tuple[str, int]], list[str]]:
    """Build (or find in ``cache_dir``) every matrix of the scaled datasets, checked against their features.

    Returns
    -------
    (dict, list of str)
        ``{matrix: (dataset, nnz)}`` of the matrices rebuilt identically in name, shape and entries, and the lines
        of the report that say what was checked and dropped.
    """
    (cache_dir / "matrices").mkdir(parents=True, exist_ok=True)
    out: dict[str, tuple[str, int]] = {}
    lines: list[str] = []
    for name in SCALED:
        entries, note = entries_of(name, corpus, cache_dir)
        lines += note
        feats = datasets.load(name, dtype=None).features.drop_duplicates("matrix").set_index("matrix")
        bad = []
        for e in tqdm(entries, desc=f"rebuilding {name}", unit="matrix"):
            p = matrix_path(cache_dir, e.name)
            if p.is_file():
                with np.load(p) as z:
                    shape = tuple(int(s) for s in z["shape"])
                    nnz = int(z["indptr"][-1])
            else:
                M = e.build()
                shape, nnz = (M.nrows, M.ncols), M.nnz
                tmp = p.with_name(p.name + ".tmp.npz")
                np.savez(tmp, indptr=M.indptr, indices=M.indices, data=M.data, shape=np.array(shape))
                os.replace(tmp, p)
            want = feats.loc[e.name]
            if (shape, nnz) == ((int(want["nrows"]), int(want["ncols"])), int(want["nnz"])):
                out[e.name] = (name, nnz)
            else:
                bad.append(f"{e.name} (built {shape[0]}x{shape[1]}, {nnz:,} entries; the dataset: "
                           f"{int(want['nrows'])}x{int(want['ncols'])}, {int(want['nnz']):,})")
        lines.append(f"`{name}`: {len(entries) - len(bad)} of {len(feats)} rebuilt with the dataset's shape and entries"
                     + (f"; dropped: {'; '.join(bad)}." if bad else "."))
    return out, lines


def load_matrix(cache_dir: Path, name: str) -> Matrix:
    """A rebuilt matrix from the cache."""
    with np.load(matrix_path(cache_dir, name)) as z:
        return Matrix.from_csr_arrays(z["indptr"], z["indices"], z["data"], tuple(int(s) for s in z["shape"]),
                                      name=name)


def sample_plan(indptr: np.ndarray, sample_rows: int = SAMPLE_ROWS, sample_nnz: int = SAMPLE_NNZ) -> str:
    """What ``spmv_design_rows_estimate`` (csrc/design.c: ``spmv_sample_blocks``, then its long-row check) does
    with a matrix of this ``indptr``: ``'sampled k=<blocks>'``, ``'half'`` (a sample of half of A's blocks or more:
    the exact rows) or ``'tail'`` (a block of A holds more than :data:`TAIL` times the entries of the fullest
    sampled one: the exact rows).

    The sampled design rows are not reachable from a study (see the module's docstring), so the C core's plan is
    repeated here from indptr alone, O(nrows / 256); :func:`run_fold` checks it against ``rank()``'s predictions
    (a fallen-back sample must predict every time as the exact rows do).
    """
    ip = np.asarray(indptr, dtype=np.int64)
    n = len(ip) - 1
    nnz = int(ip[n])
    nblk = (n + BLOCK - 1) // BLOCK
    ends = np.minimum(np.arange(nblk + 1, dtype=np.int64) * BLOCK, n)
    per_block = np.diff(ip[ends])                   # entries of each block of A

    def starts(k: int) -> np.ndarray:               # sample_start: the middle of each of k equal strata
        b: np.ndarray = np.arange(k, dtype=np.int64)
        return (2 * b + 1) * nblk // (2 * k)        # block indices (rows: times BLOCK)

    k = (sample_rows + BLOCK - 1) // BLOCK if sample_rows > 0 else 0
    if k > 0 and sample_nnz > 0 and nnz > sample_nnz:
        kn = int(float(sample_nnz) / (float(nnz) / float(nblk)))
        k = 1 if kn < 1 else min(kn, k)
        while k > 1 and 2 * k <= nblk:
            e = int(per_block[starts(k)].sum())
            if e <= sample_nnz:
                break
            kk = int(float(k) * float(sample_nnz) / float(e))
            k = 1 if kk < 1 else kk if kk < k else k - 1
    if k < 1 or 2 * k > nblk:
        return "half"
    if int(per_block.max()) > TAIL * int(per_block[starts(k)].max()):
        return "tail"
    return f"sampled k={k}"


# ---- held out -----------------------------------------------------------------------------------------------------

def rows_diff(stored: pd.DataFrame, exact: pd.DataFrame) -> dict[str, float]:
    """The largest relative difference of the exact design rows from the stored ones, feature and configuration
    columns apart, and the cells whose NaN pattern differs."""
    out: dict[str, float] = {"configs": float(len(stored))}
    for what, cols in (("features", FEATURE_COLS), ("config_features", CONFIG_COLS)):
        a = stored[list(cols)].to_numpy(np.float64)
        b = exact[list(cols)].to_numpy(np.float64)
        both = np.isfinite(a) & np.isfinite(b)
        with np.errstate(divide="ignore", invalid="ignore"):
            rel = np.where(a[both] == b[both], 0.0, np.abs(a[both] - b[both]) / np.abs(a[both]))
        out[what] = float(rel.max(initial=0.0))
        out[f"{what}_nan_mismatch"] = float((np.isnan(a) != np.isnan(b)).sum())
    return out


def ranked(r: pyspmv.Ranking, configs: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """Each of ``configs``' predicted ms and position in ranking ``r`` (NaN and a position past the end where it
    is not ranked)."""
    pos = {c: i for i, (c, _) in enumerate(r)}
    ms = dict(r)
    return (np.array([ms.get(c, np.nan) for c in configs], dtype=np.float64),
            np.array([pos.get(c, len(r)) for c in configs], dtype=np.int64))


def run_fold(dtype: str, fold: int, ds: datasets.Dataset, tr: np.ndarray, te: np.ndarray,
             matrices: dict[str, tuple[str, int]], cache: Cache, cache_dir: Path) -> None:
    """Fit the fold's model and rank each of its held-out large matrices exactly and from the sample."""
    g = ds.groups.astype(str).to_numpy()
    todo = [m for m in dict.fromkeys(g[te]) if m in matrices and cache.get((dtype, m)) is None]
    if not todo:
        return
    model = clone(make_model("forest", device="cuda"))
    model.fit(ds.X.iloc[tr].reset_index(drop=True), ds.y.to_numpy()[tr], groups=g[tr])
    rm = pyspmv.portable(model, "cuda")
    ids = list(rm.table(dtype).config_ids)
    cols = list(pyspmv.FEATURE_NAMES) + [c for c in ds.X.columns if c.startswith("p_")] + \
        ["value_bytes", *pyspmv.CONFIG_FEATURE_NAMES]
    for name in tqdm(todo, desc=f"{dtype} fold {fold}", unit="matrix", leave=False):
        A = load_matrix(cache_dir, name)
        sel = np.flatnonzero(g == name)
        X = ds.X.iloc[sel].reset_index(drop=True)
        configs = X["config"].astype(str).tolist()
        core = pd.DataFrame(rm.core_rows(A, dtype)[:, :len(cols)], columns=cols, index=ids).loc[configs]
        t0 = time.perf_counter()
        r_exact = pyspmv.rank(A, model=rm, dtype=dtype, estimate=False)
        t1 = time.perf_counter()
        r_sampled = pyspmv.rank(A, model=rm, dtype=dtype, estimate=True)
        t2 = time.perf_counter()
        pe, qe = ranked(r_exact, configs)
        ps, qs = ranked(r_sampled, configs)
        full_e, full_s = dict(r_exact), dict(r_sampled)
        same = full_e.keys() == full_s.keys() and all(
            full_e[c] == full_s[c] or (np.isnan(full_e[c]) and np.isnan(full_s[c])) for c in full_e)
        plan = sample_plan(A.indptr)
        if not plan.startswith("sampled") and not same:
            raise AssertionError(f"{name}: the plan repeated here says {plan!r} (the exact rows), but rank("
                                 "estimate=True) predicted other times than the exact rows: the repeat is wrong")
        cache.put((dtype, name), Unit(
            matrix=name, dataset=matrices[name][0], dtype=dtype, fold=fold, nnz=A.nnz, configs=configs,
            ms=ds.y.to_numpy()[sel], q25=ds.q25.to_numpy()[sel], q75=ds.q75.to_numpy()[sel],
            pred_exact=pe, pred_sampled=ps, pos_exact=qe, pos_sampled=qs,
            pred_stored=np.asarray(model.predict(X), dtype=np.float64),
            score_stored=np.asarray(model.rank_scores(X), dtype=np.float64),
            first_exact_all=r_exact.best or "", first_sampled_all=r_sampled.best or "", plan=plan,
            fallback=not plan.startswith("sampled"), same_predictions=bool(same),
            row_diff=rows_diff(X, core.reset_index(drop=True)), rank_s=(t1 - t0, t2 - t1)))


def held_out_predictions(cv: int, cache_dir: Path) -> pd.DataFrame:
    """verify_auto.py's held-out predictions on the stored rows (its ``held_out``), kept in ``cache_dir``."""
    path = cache_dir / f"held_out_cv{cv}.csv.gz"
    if path.is_file():
        return pd.read_csv(path)
    preds = held_out(argparse.Namespace(dataset=COMBINED[0], extra=list(COMBINED[1:]), cv=cv))
    preds.to_csv(path, index=False)
    return preds


def tolerance_table(preds: pd.DataFrame) -> tuple[list[tuple[float, float]], list[str]]:
    """verify_auto.py's table of the model's error on the ratio to the pick by size band, ``[(upper bound, error)]``,
    from its held-out predictions, and the report's lines of it."""
    errs = unit_errors(preds)
    info = preds.groupby("unit", sort=False)[["nnz"]].first()
    table, lines, lo = [], [*md_header(["stored entries", "error read", "matrices"], "lrr")], 0.0
    for hi in (1e5, 1e6, np.inf):
        units = info.index[(info["nnz"] >= lo) & (info["nnz"] < hi)]
        tol = median_equivalent(np.concatenate([errs[u] for u in units]))
        table.append((hi, tol))
        lines.append(f"| [{lo:.0e}, {hi:.0e}) | {tol:.4f} | {len(units)} |")
        lo = hi
    return table, lines


# ---- scoring ------------------------------------------------------------------------------------------------------

def kept_row(u: Unit, i: int, best: int, ratio: float) -> dict[str, Any]:
    """One kept configuration scored: its ratio to the best, whether its [q25, q75] overlaps the best's (a tie, as
    :func:`pyspmv.evaluate.ranking` counts), the slowdown then counted."""
    tie = bool(u.q25[i] <= u.q75[best]) or i == best
    return {"ratio": ratio, "tie": tie, "slowdown": 0.0 if tie else ratio - 1.0, "kept": u.configs[i]}


def score_unit(u: Unit, n_calls: int, table: list[tuple[float, float]]) -> list[dict[str, Any]]:
    """The four runs of one unit: exact and sampled first pick, exact and sampled with verify='auto' replayed."""
    unit = f"{u.matrix}@{u.dtype}"
    best = int(np.argmin(u.ms))
    rows = []
    for source, pos, pred in (("exact", u.pos_exact, u.pred_exact), ("sampled", u.pos_sampled, u.pred_sampled)):
        per = ranking(pos.astype(np.float64), u.ms, np.full(len(u.ms), unit), np.array(u.configs), u.q25, u.q75)
        i = u.configs.index(str(per["pick"].iloc[0]))
        rows.append({"run": f"{source} first pick", "k": 0, **kept_row(u, i, best, float(per["ratio"].iloc[0]))})
        if abs(rows[-1]["slowdown"] - float(per["slowdown"].iloc[0])) > 1e-12:
            raise AssertionError(f"{unit}: the tie counted here differs from pyspmv.evaluate.ranking's")
        g = pd.DataFrame({"config": u.configs, "ms": u.ms, "pred_ms": pred})
        ms_kept, k, _ = replay(g, n_calls, 0, tol_for(float(u.nnz), table))
        ok = np.isfinite(u.ms) & np.isfinite(pred)
        cand = np.flatnonzero(ok & (u.ms == ms_kept))
        rows.append({"run": f"{source} + verify='auto'", "k": k,
                     **kept_row(u, int(cand[0]), best, ms_kept / float(u.ms[best]))})
    base = {"unit": unit, "matrix": u.matrix, "dataset": u.dataset, "dtype": u.dtype, "nnz": u.nnz, "fold": u.fold,
            "fallback": u.fallback, "best": u.configs[best]}
    return [{**base, **r} for r in rows]


def band_rows(per: pd.DataFrame) -> list[str]:
    """The quality table's lines: per value type and band, the four runs."""
    lines = md_header(["dtype", "band", "run", "within 5 %", "ratio <= 1.05", "beyond 20 %", "geomean", "mean k",
                       "same kept as exact", "n"], "lllrrrrrrr")
    for dtype in DTYPES:
        for label, lo, hi in BANDS:
            sub = per[(per["dtype"] == dtype) & (per["nnz"] >= lo) & (per["nnz"] < hi)]
            for run in ("exact first pick", "sampled first pick", "exact + verify='auto'", "sampled + verify='auto'"):
                s = sub[sub["run"] == run]
                ex = sub[sub["run"] == run.replace("sampled", "exact")].set_index("unit")["kept"]
                same = (s.set_index("unit")["kept"] == ex.reindex(s["unit"])).mean()
                mean_k = f"{s['k'].mean():.2f}" if "verify" in run else "–"
                lines.append(f"| {dtype} | {label} | {run} | {(s['slowdown'] < 0.05).mean():.1%} | "
                             f"{(s['ratio'] <= 1.05).mean():.1%} | {(s['slowdown'] > 0.20).mean():.1%} | "
                             f"{np.exp(np.log(s['ratio']).mean()):.4f} | {mean_k} | "
                             f"{'–' if run.startswith('exact') else f'{same:.1%}'} | {len(s)} |")
    return lines


def fallback_rows(per: pd.DataFrame, units: dict[Any, Unit]) -> list[str]:
    """The fallback table: per value type and band, units that took the exact path, and the first picks of those
    that did not."""
    lines = md_header(["dtype", "band", "units", "fell back: half of A", "fell back: long rows missed", "sampled",
                       "sampled, yet every prediction as exact", "exact first pick within 5 % (sampled ones)",
                       "sampled first pick within 5 % (sampled ones)", "geomean exact / sampled (sampled ones)",
                       "sampled's first config not measured ok"], "llrrrrrrrrr")
    for dtype in DTYPES:
        for label, lo, hi in BANDS:
            us = [u for (d, _), u in units.items() if d == dtype and lo <= u.nnz < hi]
            half = sum(u.plan == "half" for u in us)
            tail = sum(u.plan == "tail" for u in us)
            blind = sum(u.same_predictions and not u.fallback for u in us)
            keep = {f"{u.matrix}@{u.dtype}" for u in us if not u.fallback}
            sub = per[per["unit"].isin(keep)]
            e, s = sub[sub["run"] == "exact first pick"], sub[sub["run"] == "sampled first pick"]
            odd = sum(u.first_sampled_all not in u.configs for u in us)
            geo = (f"{np.exp(np.log(e['ratio']).mean()):.4f} / {np.exp(np.log(s['ratio']).mean()):.4f}"
                   if len(e) else "–")
            lines.append(f"| {dtype} | {label} | {len(us)} | {half} | {tail} | {len(keep)} | {blind} | "
                         f"{(e['slowdown'] < 0.05).mean() if len(e) else np.nan:.1%} | "
                         f"{(s['slowdown'] < 0.05).mean() if len(s) else np.nan:.1%} | {geo} | {odd} |")
    return lines


def sanity_rows(units: dict[Any, Unit], preds: pd.DataFrame) -> list[str]:
    """The sanity checks' lines: exact rows against stored, refitted models against held_out, C against Python."""
    lines = md_header(["dataset", "dtype", "units", "configs compared", "max rel. diff features",
                       "max rel. diff bytes_moved/padding/launches", "NaN patterns differing",
                       "fold model vs held_out (max rel.)", "C exact vs estimator (max rel.)",
                       "first pick: C exact = estimator on stored rows"], "llrrrrrrrr")
    ref = preds.set_index(["unit", "config"])["pred_ms"]
    for name in SCALED:
        for dtype in DTYPES:
            us = [u for (d, _), u in units.items() if d == dtype and u.dataset == name]
            if not us:
                continue
            d_ho, d_c, same = 0.0, 0.0, 0
            for u in us:
                key = unit_key(np.full(len(u.configs), u.matrix),
                               np.full(len(u.configs), 8.0 if dtype == "float64" else 4.0))
                want = ref.reindex(pd.MultiIndex.from_arrays([key, u.configs])).to_numpy()
                if np.isnan(want).any():
                    raise AssertionError(f"{u.matrix} {dtype}: held_out has no prediction for some configuration")
                d_ho = max(d_ho, float(np.max(np.abs(u.pred_stored / want - 1.0))))
                ok = np.isfinite(u.pred_exact)
                d_c = max(d_c, float(np.max(np.abs(u.pred_exact[ok] / u.pred_stored[ok] - 1.0), initial=0.0)))
                same += int(np.argmin(u.pos_exact) == np.argmin(u.score_stored))
            nan = sum(u.row_diff["features_nan_mismatch"] + u.row_diff["config_features_nan_mismatch"] for u in us)
            lines.append(
                f"| {name} | {dtype} | {len(us)} | {int(sum(u.row_diff['configs'] for u in us)):,} | "
                f"{max(u.row_diff['features'] for u in us):.2e} | "
                f"{max(u.row_diff['config_features'] for u in us):.2e} | {int(nan)} | "
                f"{d_ho:.2e} | {d_c:.2e} | {same} of {len(us)} |")
    return lines


def published_check(per: pd.DataFrame) -> list[str]:
    """The exact rows' verify='auto' replay per unit against benchmarks/results/verify_auto_h200.csv.gz (the same
    replay, run earlier by verify_auto.py itself), as lines of the report."""
    path = ROOT / "benchmarks" / "results" / "verify_auto_h200.csv.gz"
    if not path.is_file():
        return [f"No {path.relative_to(ROOT)} to compare the exact replay with."]
    v = pd.read_csv(path)
    v = v[v["run"] == "verify='auto', n_calls=10000"].set_index("unit")
    e = per[per["run"] == "exact + verify='auto'"]
    keys = unit_key(e["matrix"].to_numpy(), np.where(e["dtype"] == "float64", 8.0, 4.0))
    have = pd.Index(keys).isin(v.index)
    ratio = np.isclose(e["ratio"].to_numpy()[have], v.reindex(keys[have])["ratio"].to_numpy(), rtol=1e-9)
    k = e["k"].to_numpy()[have] == v.reindex(keys[have])["k"].to_numpy()
    return [(f"The exact rows' verify='auto' replay (n_calls=10000) against `{path.relative_to(ROOT)}` (the same "
            "replay by verify_auto.py, from an earlier run, its provenance in `verify_auto_h200.md`): "
            f"{int(have.sum())} of {len(e)} units found there; the same kept time for {int(ratio.sum())}, the same k "
            f"for {int(k.sum())}.")]


# ---- rank()'s time ------------------------------------------------------------------------------------------------

def time_rank(units: dict[Any, Unit], cache: Cache, cache_dir: Path, repeats: int) -> list[str]:
    """rank() with the shipped H200 default, exact against estimate=True, on three matrices near
    :data:`TIMING_TARGETS` entries that did not fall back (float64), median of ``repeats`` after one warm-up."""
    rows = cache.get("timing")
    if rows is None:
        pool = {u.matrix: u.nnz for (d, _), u in units.items() if d == "float64" and not u.fallback}
        picks = [min(pool, key=lambda m: float(abs(np.log(pool[m] / target)))) for target in TIMING_TARGETS]
        rows = []
        for name in tqdm(picks, desc="timing rank()", unit="matrix"):
            A = load_matrix(cache_dir, name)
            load = os.getloadavg()[0]
            times: dict[bool, list[float]] = {False: [], True: []}
            for est in (False, True):
                pyspmv.rank(A, target="h200", dtype="float64", estimate=est)       # warm-up: the model, the caches
            for _ in range(repeats):
                for est in (False, True):
                    t0 = time.perf_counter()
                    pyspmv.rank(A, target="h200", dtype="float64", estimate=est)
                    times[est].append(time.perf_counter() - t0)
            rows.append({"matrix": name, "nnz": A.nnz, "exact_ms": 1e3 * statistics.median(times[False]),
                         "estimate_ms": 1e3 * statistics.median(times[True]), "load": load,
                         "all": times})
        cache.put("timing", rows)
    lines = md_header(["matrix", "entries", "rank() exact (ms)", "rank(estimate=True) (ms)", "exact / estimate",
                       "fastest of the runs: exact / estimate (ms)", "load average (1 min) before"], "lrrrrrr")
    for r in rows:
        lines.append(f"| {r['matrix']} | {r['nnz']:.2e} | {r['exact_ms']:.2f} | {r['estimate_ms']:.3f} | "
                     f"{r['exact_ms'] / r['estimate_ms']:.0f} | {1e3 * min(r['all'][False]):.2f} / "
                     f"{1e3 * min(r['all'][True]):.3f} | {r['load']:.2f} |")
    return lines


# ---- the report ---------------------------------------------------------------------------------------------------

def provenance(argv: Iterable[str], built_from: str | None) -> list[str]:
    """Command, machine, date (``date -u``), commit (``git rev-parse --short HEAD``) and the pyspmv that ran
    (``built_from``: the commit its build was made from, where the caller says)."""
    date = subprocess.run(["date", "-u"], capture_output=True, text=True, check=True).stdout.strip()
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    return [f"- Command: `{shlex.join(['python', str(Path(__file__).resolve().relative_to(ROOT)), *argv])}`",
            "- Machine: AMD EPYC 2-core dev VM (no GPU; timings measured on the H200 are the datasets')",
            f"- Date: {date}", f"- Commit: {head}",
            (f"- pyspmv {pyspmv.__version__}"
             + (f" built from `git archive {built_from}` in a virtual environment of its own" if built_from
                else " as installed")
             + ", OpenMP threads as the machine sets them (`OMP_NUM_THREADS`="
             f"{os.environ.get('OMP_NUM_THREADS', 'unset')})")]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cv", type=int, default=5, help="folds over base matrices (verify_auto.py's default)")
    ap.add_argument("--n-calls", type=int, default=10000, help="verify='auto''s n_calls")
    ap.add_argument("--corpus", default=str(ROOT.parent / "shared" / "corpus"))
    ap.add_argument("--cache-dir", default="/tmp/sampled_study")
    ap.add_argument("--repeats", type=int, default=5, help="rank() timings per matrix and mode")
    ap.add_argument("--out", default=str(HERE))
    ap.add_argument("--built-from", default=None, help="the commit the imported pyspmv was built from (provenance)")
    args = ap.parse_args()
    cache_dir = Path(args.cache_dir)
    cache_dir.mkdir(parents=True, exist_ok=True)
    cache = Cache(cache_dir / "cache.pkl")
    warnings.simplefilter("ignore", pyspmv.OtherMachineWarning)

    matrices, rebuilt = rebuild(Path(args.corpus), cache_dir)
    preds = held_out_predictions(args.cv, cache_dir)
    table, tol_lines = tolerance_table(preds)
    for dtype in DTYPES:
        ds = datasets.combine(*COMBINED, dtype=dtype)
        for fold, (tr, te) in enumerate(tqdm(base_folds(ds.groups, args.cv), desc=f"{dtype} folds", unit="fold")):
            run_fold(dtype, fold, ds, tr, te, matrices, cache, cache_dir)
    units: dict[Any, Unit] = {(u.dtype, u.matrix): u for u in cache.units() if u.matrix in matrices}
    per = pd.DataFrame([r for u in units.values() for r in score_unit(u, args.n_calls, table)])
    timing = time_rank(units, cache, cache_dir, args.repeats)

    out = Path(args.out)
    per.to_csv(out / "sampled_rank.csv.gz", index=False)
    n_fb = sum(u.fallback for u in units.values())
    lines = ["# rank(estimate=True) against exact design rows on the large H200 matrices, held out", "",
             *provenance(sys.argv[1:], args.built_from), "",
             "## Method", "",
             (f"Every matrix of {', '.join(f'`{d}`' for d in COMBINED)} is held out once per value type (grouped "
             f"{args.cv}-fold over base matrices, `base_folds`, as benchmarks/verify_auto.py); the cuda default's "
             "recipe (`make_model('forest', device='cuda')`) is fitted on the other folds and, in portable form, ranks "
             "each held-out matrix of the two scaled datasets (>= 1e6 entries) with `pyspmv.rank(A, model=..., "
             "dtype=..., estimate=False)` (exact) and `estimate=True` (16384 rows, 65536 entries at most). Scored over "
             "the configurations the dataset measured ok for the matrix. First pick: the ranking's first such "
             "configuration; *within 5 %* counts a pick whose [q25, q75] overlaps the best's as the best "
             "(benchmarks/default_quality.py's count), *ratio <= 1.05* does not (benchmarks/verify_auto.py's count); "
             "beyond 20 %: slowdown > 20 %, ties counted as the best. verify='auto': verify_auto.py's `replay` with "
             f"n_calls={args.n_calls} on each ranking's predicted ms (the fastest measured of the first k kept), its "
             "error table below (`replay` orders by predicted ms, as verify_auto.py does; the first pick is the "
             "ranking's own order, predicted ms times bytes moved per byte of values to the power 0.05); mean k: "
             "configurations timed. *same kept as exact*: the sampled run keeps the same "
             "configuration as the exact run."), "",
             "## The matrices", "", *[f"- {x}" for x in rebuilt], "",
             "## Sanity checks", "",
             ("Exact design rows (`RankModel.core_rows`, the C core's `spmv_design_rows`) against the dataset's stored "
             "rows of X (columns `features`: the 33 matrix features; then bytes_moved, padding_ratio, launches); the "
             "refitted fold model's predictions on the stored rows against verify_auto.py's `held_out`; the C core's "
             "exact predictions (rank) against the estimator's on the stored rows, and whether they pick alike "
             "(the estimator by `rank_scores`)."), "",
             *sanity_rows(units, preds), "", *published_check(per), "",
             "## verify='auto''s error table (verify_auto.py's, from the held-out predictions on the stored rows)", "",
             *tol_lines, "",
             "## Ranking quality, exact against sampled design rows", "",
             *band_rows(per), "",
             "## The sample's fallback to the exact rows", "",
             ("The sampled design rows are beyond the public API that studies may use, so whether the sample took the "
             "exact path is read from the matrix's indptr by the C core's rule repeated here (`sample_plan`: a sample "
             "of half of A's 256-row blocks or more, or a block of A holding more than twice the entries of the "
             "fullest sampled one); every unit it sends to the exact path was checked to get exactly the exact "
             "ranking's predicted times. Predictions alone cannot tell: the forest reads the matrix features only, "
             "and a sample that moves them a little may reach the same leaves (column *sampled, yet every prediction "
             f"as exact*). Fell back: {n_fb} of {len(units)} units ({n_fb // 2} matrices in both value types)."), "",
             *fallback_rows(per, units), "",
             (f"## rank()'s time on this machine (shipped H200 default, float64, median of {args.repeats}, after one "
             "warm-up each)"), "",
             ("Matrices nearest 1.5e6, 5e6 and 1.4e7 entries among those whose float64 sample did not fall back. The "
             "VM is shared with another engineer's work: the load average says how busy it was."), "",
             *timing, ""]
    (out / "sampled_rank.md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
