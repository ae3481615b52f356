"""What the studies share: the benchmarks' helpers (Markdown tables and provenance, timing), the names of pyspmv
beyond its public API that they use (benchmarks/_internal.py says why each is needed), and the
cross-validation inside a dataset's training matrices that the studies of the cuda default's training data
and recipe use (first written for the study of more large matrices, ``2026-11-24-more-large``).

A study imports it after putting this folder on its path::

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/_common.py
    from _common import md_header, metrics

Studies import this module and the public API of pyspmv, never each other nor pyspmv's deeper modules.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import re
import sys
from collections.abc import Collection, Iterator
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import GroupKFold

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from _internal import (
    PARAM_COLUMNS,
    bytes_per_value,
    column_for,
    evaluate,
    make_model,
    ranking,
    split_by_matrix,
    train,
    unit_key,
)
from _md import md_header, md_row, md_table, provenance, summary, write_report
from _timing import c_times, cc, laplacian, product_us, reps_for, timed, uniform

from pyspmv import datasets

__all__ = ["LARGE", "PARAM_COLUMNS", "ROOT", "bytes_per_value", "c_times", "cc", "evaluate", "laplacian", "make_model",
           "md_header", "md_row", "md_table", "metrics", "paired_diff", "pool_of", "product_us", "provenance", "ranking",
           "recipe", "repeated_folds", "reps_for", "run", "split_by_matrix", "summary", "timed", "train", "uniform",
           "unit_key", "write_report"]

LARGE = 3e6  # entries from which a test matrix counts as large (the candidate's smallest)


def recipe(matrix: str, names: Collection[str] = ()) -> str:
    """A matrix's name without its seed (``_r0``, ``_r1``): twins share it. A scaled-up real matrix
    (``<name>_x<factor><mode>_r<seed>``, :func:`pyspmv.datasets.scaled_corpus`) is a twin of ``<name>`` when
    ``names`` holds it: the same structure at another size."""
    m = re.sub(r"_r\d+$", "", matrix)
    base = re.sub(r"_x\d+(tile|kron)$", "", m)
    return base if base in names else m


def run(ds: datasets.Dataset, tr: np.ndarray, te: np.ndarray, nnz: pd.Series, seed: int = 0,
        **params: object) -> pd.DataFrame:
    """Per test matrix scores of train_default's forest (``params`` set on it) fitted on rows tr, ranking rows te
    (conversion costs fitted on pyspmv's schema only: a model on the open schema has no formats)."""
    own = "features" not in params and "params" not in params
    ev = evaluate(make_model("forest", seed).set_params(**params), ds.X, ds.y, ds.groups, q25=ds.q25, q75=ds.q75,
                  convert_ms=column_for(ds, "convert_ms") if own else None, train_index=tr, test_index=te)
    per = ev.per_matrix.copy()
    per["matrix"] = per["unit"].str.rsplit("@", n=1).str[0]
    per["nnz"] = per["matrix"].map(nnz).to_numpy()
    return per


def pool_of(own: datasets.Dataset, ds: datasets.Dataset) -> tuple[np.ndarray, np.ndarray]:
    """(pool, held-out) rows of ``ds``, ``own`` combined with extras: the training side of ``own``'s split (by matrix,
    seed 0) and every row the extras add (combine() puts them after ``own``'s); the held-out side of the split."""
    tr, te = split_by_matrix(own.groups)
    return np.r_[tr, np.arange(len(own.X), len(ds.X))], te


def repeated_folds(pool: np.ndarray, rec: np.ndarray, folds: int, repeats: int,
                   first: int = 0) -> Iterator[tuple[int, int, np.ndarray, np.ndarray]]:
    """(repeat, fold, fit rows, test rows): grouped ``folds``-fold over the rows ``pool``, twins (same ``rec``) in one
    fold, folds shuffled with seed ``repeat`` (``first``, ``first + 1``, ...); every pool matrix tested once per
    repeat."""
    for r in range(first, first + repeats):
        for k, (a, b) in enumerate(GroupKFold(folds, shuffle=True, random_state=r).split(pool, groups=rec[pool])):
            yield r, k, pool[a], pool[b]


def paired_diff(a: pd.Series, b: pd.Series) -> tuple[float, float]:
    """Mean of log(a) - log(b), ratios indexed by (matrix, repeat), and its standard error taken over matrices (each
    matrix's mean over the repeats: a matrix's repeats are not independent)."""
    diff = np.log(a) - np.log(b)
    per = diff.groupby(level="matrix").mean()
    return float(diff.mean()), float(per.std(ddof=1) / np.sqrt(len(per)))


def metrics(per: pd.DataFrame) -> tuple[float, float, float]:
    """(share within 5 %, share beyond 20 %, geomean t_pick / t_best), as summary() reports them."""
    within = (per["bucket"] == "<5%").mean()
    return float(within), float((per["slowdown"] > 0.20).mean()), float(np.exp(np.mean(np.log(per["ratio"]))))
