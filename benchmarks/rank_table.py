"""How far the default model's predicted times can be read: the figures behind the ranking table's tie marks.

Usage: python benchmarks/rank_table.py [DATASET] [--extra DATASET ...] [--out benchmarks/results]

For each value type the default recipe (``train_default.make_model('forest', device=...)``, as
benchmarks/default_quality.py) is fitted on 75 % of the dataset's matrices (split by matrix, seed 0; the
matrices of ``--extra`` datasets it lacks join the training side) and predicts the other 25 %. Per held-out
matrix the pick is the configuration ranked first (``rank_scores``: for cuda, predicted time times bytes
moved to the power 0.05), and every measured configuration ``c`` has

- ``g_pred = pred(c) / pred(pick)``, the gap :class:`pyspmv.Ranking` would show, and
- ``g_meas = t(c) / t(pick)``, the measured gap (median timings);
- its error ``|log(g_pred / g_meas)|``.

Reported: the median error of the configurations ranked 2 to 10 (what the tie mark uses: a configuration
predicted within that much of the pick cannot be told from it), the median error by rank position and by
predicted gap, and how the tie rule fares (how often a tie is measured within 5 % of the pick, or faster).
The rule for how far predicted times are printed was fixed before measuring: up to the largest predicted
gap ``G`` from {1.05, 1.1, 1.2, 1.3, 1.5} such that every bin of predicted gaps below it has a median
error at most 10 %; beyond it the table gives the order only. Writes ``rank_table_<dataset>.md``.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import itertools
from pathlib import Path

import numpy as np
import pandas as pd
from _internal import column_for, evaluate, make_model, split_by_matrix
from _md import md_header, md_row, write_report

from pyspmv import datasets

ROOT = Path(__file__).resolve().parents[1]
#: Rank positions whose median error sets the tie tolerance (the pick is 1).
TIE_RANKS = (2, 10)
#: Candidate gaps up to which predicted times are printed, and the bins of predicted gaps.
GAPS = (1.0, 1.05, 1.1, 1.2, 1.3, 1.5, np.inf)
#: A bin of predicted gaps whose median error is at most this reads as a time (fixed before measuring).
MAX_ERROR = 0.10
RANK_BANDS = ((2, 3), (4, 5), (6, 10), (11, 20), (21, 50), (51, 10**9))


def gaps(preds: pd.DataFrame) -> pd.DataFrame:
    """Per held-out row: unit, config, predicted rank ``r``, ``g_pred``, ``g_meas``, ``err``."""
    out = []
    for u, d in preds.groupby("unit", sort=False):
        d = d[np.isfinite(d["ms"]) & np.isfinite(d["pred_ms"])]
        order = np.argsort(np.where(np.isfinite(d["score"]), d["score"], np.inf), kind="stable")
        d = d.iloc[order].reset_index(drop=True)
        if len(d) < 2:
            continue
        g_pred = d["pred_ms"].to_numpy() / d["pred_ms"].iloc[0]
        g_meas = d["ms"].to_numpy() / d["ms"].iloc[0]
        out.append(pd.DataFrame({"unit": u, "config": d["config"], "r": np.arange(1, len(d) + 1),
                                 "g_pred": g_pred, "g_meas": g_meas,
                                 "err": np.abs(np.log(g_pred) - np.log(g_meas))}))
    return pd.concat(out, ignore_index=True)


def pct(x: float) -> str:
    return f"{100 * x:.1f} %"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("dataset", nargs="?", default="h100")
    ap.add_argument("--extra", nargs="*", default=[], help="datasets whose new matrices join the training side only")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    args = ap.parse_args()
    name = Path(args.dataset).name
    frames = []
    for dtype in ("float64", "float32"):
        own = datasets.load(args.dataset, dtype=dtype)
        ds = datasets.combine(args.dataset, *args.extra, dtype=dtype)
        tr, te = split_by_matrix(own.groups)
        tr = np.r_[tr, np.arange(len(own.X), len(ds.X))]
        device = str(ds.table["device"].iloc[0])
        ev = evaluate(make_model("forest", device=device), ds.X, ds.y, ds.groups, q25=ds.q25, q75=ds.q75,
                      convert_ms=column_for(ds, "convert_ms"), train_index=tr, test_index=te)
        g = gaps(ev.predictions)
        g["dtype"] = dtype
        frames.append(g)
        print(dtype, len(g), flush=True)
    g = pd.concat(frames, ignore_index=True)
    top = g[(g.r >= TIE_RANKS[0]) & (g.r <= TIE_RANKS[1])]
    tol = float(np.exp(np.median(top["err"])) - 1.0)
    gpu = f" ({ds.metadata.get('device_info', {}).get('gpu_name')})" if device == "cuda" else ""
    joined = f"; the matrices of {', '.join(args.extra)} it lacks join the training side" if args.extra else ""
    intro = (f"Fitted on this machine; timings measured on {device}{gpu}. The default recipe "
             f"(`train_default.make_model('forest', device=...)`) fitted on 75 % of the matrices of `{name}` (split "
             f"by matrix, seed 0{joined}), both value types pooled. Per held-out matrix and value type: the pick is "
             "ranked first (as rank() ranks); `g_pred` = predicted time / the pick's predicted time, `g_meas` = "
             "measured / the pick's measured; error = |log(g_pred / g_meas)|, given as a percentage (exp(error) - 1).")
    tie_line = (f"**Tie tolerance: {pct(tol)}**, the median error of the configurations ranked "
                f"{TIE_RANKS[0]}-{TIE_RANKS[1]} ({len(top)} of them, {top.unit.nunique()} matrix/value-type units).")
    title = f"How far the default model's predicted times can be read, on held-out matrices of `{name}`"
    lines = [intro, "", tie_line, "", "## Error by rank position", "",
             *md_header(["ranks", "n", "median g_pred", "median g_meas", "median error", "g_meas > g_pred"], "lrrrrr")]
    for lo, hi in RANK_BANDS:
        s = g[(g.r >= lo) & (g.r <= hi)]
        if s.empty:
            continue
        lines.append(md_row([f"{lo}-{hi}" if hi < 10**9 else f"{lo}+", len(s), f"{s.g_pred.median():.3f}",
                             f"{s.g_meas.median():.3f}", pct(np.exp(s.err.median()) - 1),
                             pct((s.g_meas > s.g_pred).mean())]))
    lines += ["", "## Error by predicted gap (all ranks but the pick)", "",
              *md_header(["g_pred", "n", "median g_meas", "g_meas q10-q90", "median error", "g_meas > g_pred"],
                         "lrrrrr")]
    rest = g[g.r > 1]
    shown = 1.0
    ok = True
    for lo, hi in itertools.pairwise(GAPS):
        s = rest[(rest.g_pred >= lo) & (rest.g_pred < hi)]
        if s.empty:
            continue
        e = float(np.exp(s.err.median()) - 1)
        if ok and e <= MAX_ERROR and np.isfinite(hi):
            shown = hi
        else:
            ok = False
        lines.append(md_row([f"[{lo:g}, {hi:g})", len(s), f"{s.g_meas.median():.3f}",
                             f"{s.g_meas.quantile(0.1):.3f}-{s.g_meas.quantile(0.9):.3f}", pct(e),
                             pct((s.g_meas > s.g_pred).mean())]))
    ties = rest[rest.g_pred <= 1 + tol]
    units = g.groupby("unit").size().index
    nties = ties.groupby("unit").size().reindex(units, fill_value=0)
    shown_line = (f"**Predicted times read as times up to g_pred = {shown:g}** (every bin below it has a median "
                  f"error at most {pct(MAX_ERROR)}); beyond, the order only.")
    lines += ["", shown_line, "",
              f"## The tie rule: predicted within {pct(tol)} of the pick", "",
              *md_header(["what", "value"], "lr"),
              md_row(["units with at least one tie", pct((nties > 0).mean())]),
              md_row(["ties per unit, median (max)", f"{nties.median():g} ({nties.max()})"]),
              md_row(["ties measured within 5 % of the pick", pct((ties.g_meas <= 1.05).mean())]),
              md_row([f"ties measured within {pct(tol)} of the pick", pct((ties.g_meas <= 1 + tol).mean())]),
              md_row(["ties measured faster than the pick", pct((ties.g_meas < 1).mean())]),
              md_row(["non-ties ranked 2-10 measured within 5 % of the pick",
                      pct((top[top.g_pred > 1 + tol].g_meas <= 1.05).mean())])]
    out = Path(args.out)
    print(write_report(out / f"rank_table_{name}.md", title, lines))


if __name__ == "__main__":
    main()
