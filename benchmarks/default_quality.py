"""Ranking quality of the default model kind on held-out matrices, real and generated apart.

Usage: python benchmarks/default_quality.py [DATASET] [--models forest boosted] [--extra DATASET ...]
                                          [--cv K] [--out benchmarks/results]

For each value type: the model (train_default's defaults for the dataset's device, as ``make_model(kind, device=...)``
gives them: the cuda forest ranks near-ties by bytes moved) is fitted on 75 % of the dataset's matrices
(split by matrix, seed 0, as benchmarks/models.py) and ranks the other 25 %; the share of picks within 5 %
of the measured best (a pick whose [q25, q75] overlaps the best's counts as the best), beyond 20 %, and
geomean t_pick / t_best are reported for all held-out matrices, the real ones and the generated ones
(the names of ``pyspmv.datasets.standard_corpus()``). Writes ``default_quality_<dataset>.md`` and the
per-matrix picks as ``default_quality_<dataset>.csv``.

With ``--cv K`` every matrix of the dataset and of ``--extra`` is held out once instead: grouped K-fold over
base matrices (a scaled copy, ``<matrix>_x<k>tile_r<seed>``, and its real matrix always on one side), and the
table gives issue 48's size bands beside its targets: real matrices below 1e6 stored entries, every matrix
at 1e6 or more, generated ones below 1e6.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from _internal import (SIZE_BANDS, base_folds, column_for, evaluate, evaluate_folds, in_band, make_model,
                       split_by_matrix, with_sizes)
from _md import md_header, summary, write_report

from pyspmv import datasets

ROOT = Path(__file__).resolve().parents[1]
def verdict(sub: pd.DataFrame, within: float | None, beyond: float | None, geo: float | None) -> str:
    """Whether a band meets its targets, in words ('met', or what is missed)."""
    if within is None or sub.empty:
        return "–"
    got = ((sub["slowdown"] < 0.05) | (sub["bucket"] == "<5%")).mean(), (sub["slowdown"] > 0.20).mean(), \
        float(np.exp(np.mean(np.log(sub["ratio"]))))
    miss = [f"{name} {g:.3f} vs {t}" for name, g, t, worse in (
        ("within 5 %", got[0], within, got[0] < within), ("beyond 20 %", got[1], beyond, got[1] > beyond + 1e-12),
        ("geomean", got[2], geo, got[2] > geo)) if worse]
    return "met" if not miss else "missed: " + "; ".join(miss)


def cross_validated(args: argparse.Namespace) -> tuple[list[str], list[pd.DataFrame]]:
    """``--cv``: every matrix held out once, the bands' table lines and the per-matrix frames."""
    lines = [f"Fitted on this machine, each kind as train-default makes it for the dataset's device; every matrix of "
             f"{', '.join(f'`{Path(d).name}`' for d in [args.dataset, *args.extra])} held out once, grouped {args.cv}-fold "
             "over base matrices (a scaled copy and its real matrix on one side; shuffled, seed 0). Columns: picks "
             "within 5 % of the measured best (ties within [q25, q75] count as the best), beyond 20 %, geomean "
             "t_pick / t_best, held-out matrices; the targets of issue 48 for the band.", "",
             *md_header(["dtype", "model", "band", "within 5 %", "beyond 20 %", "geomean", "n", "target"], "lllrrrrl")]
    rows = []
    for dtype in ("float64", "float32"):
        ds = datasets.combine(args.dataset, *args.extra, dtype=dtype)
        for kind in args.models:
            ev = evaluate_folds(make_model(kind, device=str(ds.table["device"].iloc[0])), ds.X, ds.y, ds.groups,
                                folds=base_folds(ds.groups, args.cv), q25=ds.q25, q75=ds.q75,
                                convert_ms=column_for(ds, "convert_ms"))
            per = with_sizes(ev.per_matrix, ds.features)
            per["dtype"], per["model"] = dtype, kind
            rows.append(per)
            for band in SIZE_BANDS:
                sub = per[in_band(per, band)]
                lines.append(f"| {dtype} | {kind} | {band[0]} | {summary(sub)} | {verdict(sub, *band[4:])} |")
            print("\n".join(lines[-len(SIZE_BANDS):]), flush=True)
    return lines, rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", nargs="?", default="h100")
    ap.add_argument("--models", nargs="+", default=["forest"])
    ap.add_argument("--extra", nargs="*", default=[], help="datasets whose new matrices join every training side only "
                    "(as train-default --extra); the held-out matrices stay the dataset's own split")
    ap.add_argument("--cv", type=int, default=0, help="hold out every matrix once: grouped K-fold over base "
                    "matrices, with --extra's matrices in the folds too, reported by size band")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args()
    name = Path(args.dataset).name
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)  # before the fits: a folder missing at the end would lose them
    if args.cv:
        lines, rows = cross_validated(args)
        pd.concat(rows, ignore_index=True).to_csv(out / f"default_quality_{name}.csv", index=False)
        write_report(out / f"default_quality_{name}.md", f"The default model kinds on every matrix of `{name}`, held "
                     "out by grouped folds, by size band", lines)
        return
    generated = {e.name for e in datasets.standard_corpus()}
    title = f"Default model kinds on held-out matrices of `{name}`, real and generated apart"
    lines = [(f"Fitted on this machine, each kind as "
             "train-default makes it for the dataset's device (`train_default.make_model`; for cuda the forest's "
             f"`bytes_prior` is {make_model('forest', device='cuda').bytes_prior}). Held out: 25 % of "
             f"the matrices of `{name}`, split by matrix, seed 0"
             f"{'; the matrices of ' + ', '.join(args.extra) + ' it lacks join the training side' if args.extra else ''}"
             ". Columns: picks within 5 % of the measured best (ties within [q25, q75] "
             "count as the best), beyond 20 %, geomean t_pick / t_best, held-out matrices."), "",
             *md_header(["dtype", "model", "matrices", "within 5 %", "beyond 20 %", "geomean", "n"], "lllrrrr")]
    rows = []
    for dtype in ("float64", "float32"):
        own = datasets.load(args.dataset, dtype=dtype)
        ds = datasets.combine(args.dataset, *args.extra, dtype=dtype)
        tr, te = split_by_matrix(own.groups)         # the dataset's own split; its rows come first in ds
        tr = np.r_[tr, np.arange(len(own.X), len(ds.X))]
        for kind in args.models:
            ev = evaluate(make_model(kind, device=str(ds.table["device"].iloc[0])), ds.X, ds.y, ds.groups, q25=ds.q25, q75=ds.q75,
                          convert_ms=column_for(ds, "convert_ms"), train_index=tr, test_index=te)
            per = ev.per_matrix.copy()
            per["matrix"] = per["unit"].str.rsplit("@", n=1).str[0]
            per["real"] = ~per["matrix"].isin(generated)
            per["dtype"], per["model"] = dtype, kind
            rows.append(per)
            for label, sub in (("all", per), ("real", per[per["real"]]), ("generated", per[~per["real"]])):
                lines.append(f"| {dtype} | {kind} | {label} | {summary(sub)} |")
            print(lines[-3:], flush=True)
    pd.concat(rows, ignore_index=True).to_csv(out / f"default_quality_{name}.csv", index=False)
    write_report(out / f"default_quality_{name}.md", title, lines)


if __name__ == "__main__":
    main()
