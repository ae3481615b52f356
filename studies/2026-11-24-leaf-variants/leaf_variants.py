"""Whether the default forest's leaves should hold something other than each configuration's mean slowdown:
a risk-averse mean (ForestModel's ``risk``, a power mean that weighs the training matrices on which a configuration
was slow more) or time per byte moved (``scale="bytes_moved"``); and whether the padding each format would add,
which the design row holds per configuration, helps as matrix features. Cross-validation inside the training
matrices decides, the held-out split reports.

Usage: python studies/2026-11-24-leaf-variants/leaf_variants.py [--variants NAME ...] [--folds 4] [--repeats 5] [--out studies/2026-11-24-leaf-variants]

Per dataset (``h100`` with ``h100_large`` as train-default fits the cuda default; ``cpu``) and value type: the pool is
the training side of the dataset's split (by matrix, seed 0, as every held-out table) and its extra datasets' matrices;
grouped k-fold over the pool (a matrix and its twins from another seed, the same name up to ``_r<seed>``, in one fold),
repeated ``--repeats`` times with the folds shuffled and the forests seeded by the repeat; every variant is fitted on the
same folds (train_default's forest with only the variant's parameters set). Then each variant fitted on the whole
pool ranks the held-out 25 %, reported only. The rule, written before the first run: the variant with the lowest
cross-validated geomean t_pick / t_best averaged (in log) over the four dataset x value type cells replaces the mean
when, against it, no cell's geomean and no cell's share beyond 20 % is worse. Writes ``leaf_variants.md`` and
``leaf_variants.csv.gz``.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd

from pyspmv import FEATURE_NAMES, datasets, device_info

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/_common.py
from _common import PARAM_COLUMNS, md_header, metrics, pool_of, recipe, repeated_folds, run, summary

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
#: The per-test columns written to leaf_variants.csv.gz (the rest of evaluate()'s follow from these or are unused here).
COLUMNS = ["dataset", "dtype", "part", "repeat", "fold", "variant", "matrix", "nnz", "pick", "best", "ratio", "tie",
           "bucket"]
POOLS = {"h100": ("h100_large",), "cpu": ()}    # each default's training data, as train-default is run
#: name -> (what the leaves hold, ForestModel parameters); the first is train_default's forest as it is.
VARIANTS: dict[str, tuple[str, dict[str, object]]] = {
    "mean": ("the mean slowdown (the default)", {}),
    **{f"risk {r:g}": (f"power mean of slowdowns, risk {r:g}", {"risk": r}) for r in (1, 2, 4, 8, 16)},
    "bytes": ("the mean slowdown less the log ratio of bytes moved to the best's; predictions times the bytes",
              {"scale": "bytes_moved"}),
    "paddings": ("the mean slowdown; each matrix's padding ratio under every padded configuration joins its features",
                 {}),
}
#: Variants whose forest also reads :func:`with_paddings`' columns (on the open schema).
PADDED = ("paddings",)


def with_paddings(ds: datasets.Dataset) -> tuple[datasets.Dataset, dict[str, object]]:
    """``ds`` whose X holds pyspmv's features and parameters plus, per matrix, the padding ratio of every configuration
    whose ratio is not the same on every matrix (distinct columns only; NaN where it does not apply: SELL-C-sigma's
    per C and sigma, BSR's per block, ELL's, HYB's, DIA's), and the ForestModel parameters that read them. The
    C core's design row has no such matrix columns: a trial of what the features miss, not a model to export."""
    g = ds.groups.astype(str).to_numpy()
    P = ds.X.assign(matrix=g).pivot_table(index="matrix", columns="config", values="padding_ratio")
    P = P.loc[:, P.std() > 1e-9].round(6).T.drop_duplicates().T
    P.columns = [f"pad:{c}" for c in P.columns]
    X = pd.concat([ds.X[["config", *FEATURE_NAMES, *PARAM_COLUMNS, "value_bytes"]],
                   P.reindex(g).reset_index(drop=True)], axis=1)
    return replace(ds, X=X), {"features": [*FEATURE_NAMES, *P.columns], "params": list(PARAM_COLUMNS)}


def folds_of(name: str, extra: tuple[str, ...], dtype: str, args: argparse.Namespace) -> list[pd.DataFrame]:
    own = datasets.load(name, dtype=dtype)
    ds = datasets.combine(name, *extra, dtype=dtype) if extra else own
    nnz = ds.features.set_index("matrix")["nnz"]
    rec = np.array([recipe(m) for m in ds.groups.astype(str)])
    pool, te = pool_of(own, ds)
    padded, pad_params = with_paddings(ds) if set(PADDED) & set(args.variants) else (ds, {})
    data = {v: (padded, {**VARIANTS[v][1], **pad_params}) if v in PADDED else (ds, VARIANTS[v][1])
            for v in args.variants}
    rows = []
    t0 = time.perf_counter()
    for r, k, fit, test in repeated_folds(pool, rec, args.folds, args.repeats):
        for v in args.variants:
            per = run(data[v][0], fit, test, nnz, seed=r, **data[v][1])
            per["part"], per["repeat"], per["fold"], per["variant"] = "cv", r, k, v
            rows.append(per)
        if k == args.folds - 1:
            print(f"{name} {dtype} repeat {r} done at {time.perf_counter() - t0:.0f} s", flush=True)
    for v in args.variants:
        per = run(data[v][0], pool, te, nnz, **data[v][1])
        per["part"], per["repeat"], per["fold"], per["variant"] = "held-out", 0, -1, v
        rows.append(per)
    for per in rows:
        per["dataset"], per["dtype"] = name, dtype
    return rows


def decision(cv: pd.DataFrame, variants: list[str]) -> str:
    cells = [(d, t) for d in POOLS for t in ("float64", "float32")]
    m = {(v, c): metrics(cv[(cv["variant"] == v) & (cv["dataset"] == c[0]) & (cv["dtype"] == c[1])])
         for v in variants for c in cells}
    score = {v: float(np.mean([np.log(m[v, c][2]) for c in cells])) for v in variants}
    best, base = min(variants, key=lambda v: score[v]), variants[0]
    worse = [f"{d} {t} {what} {x:.4f} -> {y:.4f}" for d, t in cells
             for what, i in (("beyond 20 %", 1), ("geomean", 2))
             for x, y in [(m[base, (d, t)][i], m[best, (d, t)][i])] if y - x > 1e-12]
    head = (f"Rule: the variant with the lowest mean log CV geomean over the four cells replaces `{base}` when no "
            f"cell's geomean or share beyond 20 % is worse than with `{base}`. Geomean (mean of the four cells' logs) "
            "per variant: " + ", ".join(f"{v}: {np.exp(score[v]):.4f}" for v in variants) + f". Lowest: `{best}`. ")
    if best == base:
        return head + f"Kept: `{base}` (no change)."
    if worse:
        return head + f"Not adopted; worse than `{base}`: {'; '.join(worse)}."
    if best in PADDED:
        return head + f"`{best}` passes the rule, but the C core's rows lack its features: a lead, not a default."
    return head + f"Adopted: `{best}`."


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--folds", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(HERE))
    args = ap.parse_args()
    args.variants = ["mean", *[v for v in args.variants if v != "mean"]]     # the baseline first
    rows = [per for name, extra in POOLS.items() for dtype in ("float64", "float32")
            for per in folds_of(name, extra, dtype, args)]
    allp = pd.concat(rows, ignore_index=True)
    out = Path(args.out)
    allp[COLUMNS].to_csv(out / "leaf_variants.csv.gz", index=False)
    cpu = device_info("cpu")
    variants = " ".join(f"'{v}'" if " " in v else v for v in args.variants)
    lines = ["# What the default forest's leaves hold and read: mean slowdown, risk-averse mean, time per byte, paddings",
             "",
             (f"`python studies/2026-11-24-leaf-variants/leaf_variants.py --variants {variants} --folds {args.folds} "
              f"--repeats {args.repeats}`, fitted on the {cpu['processor']} dev VM ({cpu['cpu_count']} cores) with "
              "train_default's forest recipe, only the variant's parameters set. risk r: a leaf holds, per "
              "configuration, log(mean(exp(r * slowdown))) / r over its training matrices (`ForestModel(risk=r)`); "
              "bytes: the mean of slowdown - log(bytes_moved / the best configuration's bytes_moved), a prediction "
              "times the ranked matrix's bytes_moved (`ForestModel(scale='bytes_moved')`). paddings: the padding ratio "
              "of every configuration whose ratio differs between matrices (distinct columns) joins each matrix's "
              "features, on the open schema (a trial: the C core's rows lack them). Pools: "
              "the training side of each dataset's split (by matrix, seed 0) and, for h100, h100_large (as the cuda "
              f"default is trained). cv: grouped {args.folds}-fold over the pool, {args.repeats} repeats (folds "
              "shuffled and forests seeded by the repeat), pooled, every variant on the same folds; n counts tests. "
              "held-out: fitted on the whole pool, ranking the dataset's held-out 25 %, reported only. Columns: picks "
              "within 5 % of the measured best (ties within [q25, q75] count as the best), beyond 20 %, geomean "
              "t_pick / t_best, matrices."), "",
             *md_header(["part", "dataset", "dtype", "variant", "within 5 %", "beyond 20 %", "geomean", "n"],
                        "llllrrrr")]
    for part in ("cv", "held-out"):
        for name in POOLS:
            for dtype in ("float64", "float32"):
                for v in args.variants:
                    sub = allp[(allp["part"] == part) & (allp["dataset"] == name) & (allp["dtype"] == dtype)
                               & (allp["variant"] == v)]
                    lines.append(f"| {part} | {name} | {dtype} | {v} | {summary(sub)} |")
    lines += ["", decision(allp[allp["part"] == "cv"], args.variants)]
    (out / "leaf_variants.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
