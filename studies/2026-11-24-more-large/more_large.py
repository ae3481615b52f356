"""Whether more large matrices (a candidate dataset: datasets/h100_seed1, the standard corpus's larger matrices drawn
again; datasets/h100_scaled, real matrices scaled up) should join the cuda default's training data: cross-validation
inside the training matrices decides, the held-out split reports.

Usage: python studies/2026-11-24-more-large/more_large.py [--extra h100_large] [--candidate h100_seed1] [--folds 4] [--repeats 5]
       [--out studies/2026-11-24-more-large]

Part 1 (the decision): the training side of datasets/h100's split (by matrix, seed 0, as every held-out table) and
the ``--extra`` datasets form a pool; grouped k-fold over it, a matrix and its twins (from another seed: the same
name up to ``_r<seed>``; scaled up: see :func:`recipe`) always in one fold, repeated with ``--repeats``
shuffles of the folds (repeat r: folds shuffled with seed r, forests seeded r). Each fold's model (train_default's
recipe) is fitted on the rest of the pool, then again with the ``--candidate`` matrices added (less the twins of the fold's test matrices), and
both rank the fold's test matrices. Part 2 (the report): fitted on the whole pool, without and with the candidate
(less the twins of held-out matrices), ranking the held-out 25 % of datasets/h100. Columns: picks within 5 % of
the measured best (ties within [q25, q75] count as the best), beyond 20 %, geomean t_pick / t_best, matrices;
for all test matrices and for those of at least 3e6 entries. Writes ``more_large_<candidate>.md`` and ``.csv.gz``.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

from pyspmv import datasets, device_info

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/_common.py
from _common import LARGE, md_header, metrics, paired_diff, recipe, repeated_folds, run, split_by_matrix, summary

HERE = Path(__file__).resolve().parent
def decision(cv: pd.DataFrame, cand: str) -> str:
    """The rule: the candidate joins when cross-validation over all pool matrices is no worse
    on any of the three measures in either value type."""
    worse = []
    for dtype in ("float64", "float32"):
        a = metrics(cv[(cv["dtype"] == dtype) & (cv["variant"] == "without")])
        b = metrics(cv[(cv["dtype"] == dtype) & (cv["variant"] == "with")])
        for name, x, y, sign, fmt in (("within 5 %", 100 * a[0], 100 * b[0], -1, ".1f"),
                                      ("beyond 20 %", 100 * a[1], 100 * b[1], 1, ".2f"),
                                      ("geomean", a[2], b[2], 1, ".4f")):
            if sign * (y - x) > 1e-12:
                worse.append(f"{dtype} {name} {x:{fmt}} -> {y:{fmt}}")
    return (f"Rule: `{cand}` joins the default's training data when cross-validation over all "
            "pool matrices is no worse on any of the three measures in either value type. "
            + (f"Not kept; worse with it: {'; '.join(worse)}." if worse else "Kept: no measure worse."))


def paired(cv: pd.DataFrame) -> str:
    """How far "with" differs from "without" against the CV's own noise: the mean over tests of
    log(ratio with) - log(ratio without) (same folds, same test), its standard error taken over matrices (each
    matrix's mean over the repeats, since a matrix's repeats are not independent), and their quotient z."""
    out = []
    for dtype in ("float64", "float32"):
        x = cv[cv["dtype"] == dtype].pivot_table(index=["matrix", "repeat"], columns="variant", values="ratio")
        mean, se = paired_diff(x["with"], x["without"])
        out.append(f"{dtype} {mean:+.5f} (standard error {se:.5f}, z {mean / se:+.2f}, "
                   f"{x.index.get_level_values('matrix').nunique()} matrices)")
    return ("Paired, on the same folds and tests: mean of log(t_pick / t_best) with the candidate minus without: "
            + "; ".join(out) + ". |z| < 2: no difference beyond the cross-validation's noise.")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="h100")
    ap.add_argument("--extra", nargs="*", default=["h100_large"])
    ap.add_argument("--candidate", default="h100_seed1")
    ap.add_argument("--folds", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--out", default=str(HERE))
    args = ap.parse_args()
    cand = Path(args.candidate).name
    rows, lines = [], []
    for dtype in ("float64", "float32"):
        own = datasets.load(args.dataset, dtype=dtype)
        ds = datasets.combine(args.dataset, *args.extra, args.candidate, dtype=dtype)
        # combine() puts each dataset's rows after the previous ones': the candidate's matrices are the last it gave
        cand_mats = pd.unique(ds.groups)[len(pd.unique(ds.groups)) - ds.metadata["sources"][-1][1]:]
        nnz = ds.features.set_index("matrix")["nnz"]
        mat = ds.groups.astype(str).to_numpy()
        known = set(mat)
        rec = np.array([recipe(m, known) for m in mat])
        tr, te = split_by_matrix(own.groups)
        is_cand = np.isin(mat, cand_mats)
        pool = np.r_[tr, np.flatnonzero(~is_cand)[len(own.X):]]
        t0 = time.perf_counter()
        for r, k, fit, test in repeated_folds(pool, rec, args.folds, args.repeats):
            twins = np.isin(rec, np.unique(rec[test]))
            add = np.flatnonzero(is_cand & ~twins)
            for variant, train in (("without", fit), ("with", np.r_[fit, add])):
                per = run(ds, train, test, nnz, seed=r)
                per["part"], per["repeat"], per["fold"], per["variant"], per["dtype"] = "cv", r, k, variant, dtype
                rows.append(per)
            if k == args.folds - 1:
                print(f"{dtype} repeat {r} done at {time.perf_counter() - t0:.0f} s", flush=True)
        add = np.flatnonzero(is_cand & ~np.isin(rec, np.unique(rec[te])))
        for variant, train in (("without", pool), ("with", np.r_[pool, add])):
            per = run(ds, train, te, nnz)
            per["part"], per["repeat"], per["fold"], per["variant"], per["dtype"] = "held-out", 0, -1, variant, dtype
            rows.append(per)
        print(f"{dtype} held-out done at {time.perf_counter() - t0:.0f} s", flush=True)
    allp = pd.concat(rows, ignore_index=True)
    out = Path(args.out)
    allp.to_csv(out / f"more_large_{cand}.csv.gz", index=False, compression={"method": "gzip", "mtime": 0})
    cpu = device_info("cpu")
    extra = " ".join(args.extra)
    lines = [f"# More large training matrices for the cuda default: `{cand}`", "",
             (f"`python studies/2026-11-24-more-large/more_large.py --extra {extra} --candidate {args.candidate} --folds {args.folds} "
             f"--repeats {args.repeats}`, "
             f"fitted on the {cpu['processor']} dev VM ({cpu['cpu_count']} cores) with train_default's forest recipe. "
             f"Pool: the training side of `{args.dataset}`'s split (by matrix, seed 0) and `{extra}`; `{cand}` "
             "added (\"with\") less the twins (same name up to `_r<seed>`; for a scaled-up real matrix, its own "
             "matrix) of the test matrices. cv: grouped "
             f"{args.folds}-fold over the pool, twins in one fold, every pool matrix tested once per repeat, "
             f"{args.repeats} repeats (folds shuffled and forests seeded by the repeat), pooled; n counts tests; "
             "held-out: the pool "
             f"fitted whole, ranking the 25 % of `{args.dataset}` held out. Large: at least {LARGE:.0e} entries. "
             "Columns: picks within 5 % of the measured best (ties within [q25, q75] count as the best), beyond 20 %, "
             "geomean t_pick / t_best, matrices."), "",
             *md_header(["part", "dtype", "matrices", "variant", "within 5 %", "beyond 20 %", "geomean", "n"],
                        "llllrrrr")]
    for part in ("cv", "held-out"):
        for dtype in ("float64", "float32"):
            for label in ("all", "large"):
                for variant in ("without", "with"):
                    sub = allp[(allp["part"] == part) & (allp["dtype"] == dtype) & (allp["variant"] == variant)]
                    if label == "large":
                        sub = sub[sub["nnz"] >= LARGE]
                    lines.append(f"| {part} | {dtype} | {label} | {variant} | {summary(sub)} |")
    lines += ["", decision(allp[allp["part"] == "cv"], cand), "", paired(allp[allp["part"] == "cv"])]
    (out / f"more_large_{cand}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
