"""``rank(verify="auto")`` on held-out matrices, replayed on a dataset's measured times, by size band.

Usage: python benchmarks/verify_auto.py [DATASET] [--extra DATASET ...] [--cv K] [--n-calls N ...]
                                        [--cache FILE] [--out benchmarks/results]

Every matrix of the dataset and of ``--extra`` is held out once (grouped K-fold over base matrices, as
``default_quality.py --cv``): the cuda default's recipe is fitted on the other folds and predicts every
configuration's time. From those held-out predictions:

- the model's error on the ratio to the pick per size band: the errors ``|log g_pred - log g_measured|`` of the
  configurations ranked 2 to 10 (``g`` a time over the pick's), pooled over the band's matrices, as the median
  ``|x|`` of the normal ``x`` with their mean ``|x|``: what ``rank(verify="auto")`` reads as the model's error at a
  matrix's size (:data:`pyspmv.ranking.precision.SIZE_TIE_TOL`). A normal matched to the median would be too
  light: the errors are heavy-tailed at scale (a few picks off by 20 %+), and those tails are what verifying buys;
- ``verify="auto"`` replayed for each ``--n-calls``: :func:`pyspmv.ranking.verify.choose_k` chooses k from the
  predicted times (conversions on the GPU counted as ``verify.py`` counts them), and the fastest of the first k by
  the dataset's measured medians is kept; fixed k (``verify=k``) beside it. Replaying assumes verification measures
  what the collection measured (its spread, a few per cent at 1e6+ entries, is not simulated); the cost column is
  the products made (runs and device conversions as counted), in products of the pick's measured time.

Writes ``verify_auto_<dataset>.md`` and the per-matrix frame as ``verify_auto_<dataset>.csv.gz``.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from _internal import SIZE_BANDS, in_band, training_data, verify
from _md import md_header, write_report
from _replay import RANKS, held_out, median_equivalent, replay, tol_for, unit_errors
from tqdm import tqdm


ROOT = Path(__file__).resolve().parents[1]
def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    first, *extra = training_data("h200")  # the data the shipped H200 default was trained on
    ap.add_argument("dataset", nargs="?", default=first)
    ap.add_argument("--extra", nargs="*", default=extra)
    ap.add_argument("--cv", type=int, default=5)
    ap.add_argument("--n-calls", type=int, nargs="+", default=[1000, 10000, 100000])
    ap.add_argument("--cache", default=None, help="held-out predictions (csv.gz): read if present, else written")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args()
    cache = Path(args.cache) if args.cache else None
    preds = pd.read_csv(cache) if cache is not None and cache.exists() else held_out(args)
    if cache is not None and not cache.exists():
        preds.to_csv(cache, index=False)
    errs = unit_errors(preds)
    info = preds.groupby("unit", sort=False)[["nnz", "real"]].first()
    bounds = [1e5, 1e6, np.inf]
    table, lines = [], [
        "Fitted on this machine with the cuda default's recipe (`make_model('forest', device='cuda')`); every "
        f"matrix of {', '.join(f'`{d}`' for d in [args.dataset, *args.extra])} held out once, grouped "
        f"{args.cv}-fold over base matrices (shuffled, seed 0); both value types.", "",
        "## The model's error on the ratio to the pick, by size", "",
        f"`e = |log g_pred - log g_measured|` of the configurations ranked 2 to {RANKS} of each held-out matrix, "
        "pooled by band: its median, mean, 90th percentile, and the error verify='auto' reads (the median |x| of "
        "the normal x with the same mean |x|).", "",
        *md_header(["stored entries", "median e", "mean e", "p90 e", "error read", "matrices"], "lrrrrr")]
    lo = 0.0
    for hi in bounds:
        units = info.index[(info["nnz"] >= lo) & (info["nnz"] < hi)]
        e = np.concatenate([errs[u] for u in units]) if len(units) else np.array([np.nan])
        tol = median_equivalent(e)
        table.append((hi, tol))
        lines.append(f"| [{lo:.0e}, {hi:.0e}) | {np.median(e):.4f} | {np.mean(e):.4f} | {np.quantile(e, 0.9):.4f} | "
                     f"{tol:.4f} | {len(units)} |")
        lo = hi
    rows = []
    units = list(preds.groupby("unit", sort=False))
    runs = [(f"verify='auto', n_calls={n}", n, 0) for n in args.n_calls] + \
           [(f"verify={k}", None, k) for k in (0, 3, 5, 10)]
    for u, g in tqdm(units, desc="replaying", unit="matrix"):
        nnz = float(info.at[u, "nnz"])
        best = float(g["ms"][np.isfinite(g["ms"])].min())
        for name, n, k in runs:
            ms, kk, cost = replay(g, n, k, tol_for(nnz, table))
            rows.append({"unit": u, "run": name, "ratio": ms / best, "k": kk, "cost_products": cost, "nnz": nnz,
                         "real": bool(info.at[u, "real"])})
    per = pd.DataFrame(rows)
    lines += ["", "## Picks kept, by size band", "",
              "Within 5 % / beyond 20 %: the kept configuration's measured median over the best measured one; k: "
              "configurations timed (mean); cost: products made measuring, in products of the pick's measured time "
              "(median, and 90th percentile).", "",
              *md_header(["band", "run", "within 5 %", "beyond 20 %", "geomean", "mean k", "cost median", "cost p90",
                          "n"], "llrrrrrrr")]
    for band in SIZE_BANDS:
        sub_all = per[in_band(per, band)]
        for name, _, _ in runs:
            s = sub_all[sub_all["run"] == name]
            if s.empty:
                continue
            lines.append(f"| {band[0]} | {name} | {(s['ratio'] <= 1.05).mean():.1%} | {(s['ratio'] > 1.2).mean():.1%} | "
                         f"{np.exp(np.log(s['ratio']).mean()):.3f} | {s['k'].mean():.1f} | "
                         f"{s['cost_products'].median():.0f} | {s['cost_products'].quantile(0.9):.0f} | {len(s)} |")
    out = Path(args.out)
    name = Path(args.dataset).name
    per.to_csv(out / f"verify_auto_{name}.csv.gz", index=False)
    write_report(out / f"verify_auto_{name}.md", f'rank(verify="auto") replayed on held-out matrices of `{name}`',
                 lines)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
