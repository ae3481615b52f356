"""After how many products the default's pick pays for ranking it, per size band, on a GPU dataset's held-out picks.

Usage: python benchmarks/break_even.py [--picks benchmarks/results/default_quality_h200.csv] [--dataset h200 ...]
                                       [--out benchmarks/results/break_even_h200.md]

The picks are ``benchmarks/default_quality.py --cv``'s (every matrix held out once, its pick made by a model that
never saw it or its scaled copies). For each (matrix, value type): break-even = (rank time + the pick's conversion
beyond the baseline's) / (t_baseline - t_pick), in products, the baseline being cuSPARSE's CSR default and the
times and conversions (``convert_ms``: conversion, upload and library setup) the dataset's measured ones. The rank
time is ``pyspmv.rank(A, target=...)`` timed on this machine (medians of repeated calls, ``rank()``'s default mode)
on generated matrices of 1e3 to 1e7 entries, interpolated in log-log at the matrix's entry count. Where the pick
is not faster than the baseline it never pays (counted apart; the medians count it as infinite). Two bounds beside
it: the same had each pick been its matrix's fastest measured configuration, and that with rank() free.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd
from _internal import training_data
from _md import md_header, write_report
from _timing import laplacian, product_us, reps_for, timed, uniform

import pyspmv
from pyspmv import datasets

ROOT = Path(__file__).resolve().parents[1]
BASELINE = "cusparse/csr/default"
#: Size bands (stored entries): [lo, hi).
BANDS = ((0, 1e4), (1e4, 1e5), (1e5, 1e6), (1e6, 1e7), (1e7, np.inf))


def rank_times(target: str) -> pd.DataFrame:
    """rank()'s median µs on generated matrices from 1e3 to 1e7 entries, and one single-thread CSR product's (the
    host's speed: rank() costs a few of them, and a dev VM's products vary from day to day)."""
    mats = [laplacian(k) for k in (14, 45, 142, 447, 1414)] + [uniform(n, 10) for n in (100, 1000, 10_000, 100_000,
                                                                                        1_000_000)]
    rows = [{"nnz": M.nnz, "rank_us": timed(lambda M=M: pyspmv.rank(M, target=target), reps_for(M.nnz)),
             "product_us": product_us(M, reps_for(M.nnz))} for M in mats]
    return pd.DataFrame(rows).sort_values("nnz")


def _paid_back(b: pd.Series, p: pd.Series, pick: str, rank_ms: float) -> tuple[float, float, float]:
    """(conversion beyond the baseline's, gain a product, break-even) of ``pick``'s row ``p`` against the
    baseline's ``b``, ranked for ``rank_ms``."""
    conv = max(0.0, float(p["convert_ms"]) - float(b["convert_ms"])) if pick != BASELINE else 0.0
    gain = float(b["median_ms"]) - float(p["median_ms"])
    return conv, gain, (rank_ms + conv) / gain if gain > 0 else np.inf


def break_even(picks: pd.DataFrame, table: pd.DataFrame, nnz: pd.Series, cost: pd.DataFrame) -> pd.DataFrame:
    """Per held-out pick: its break-even, and two bounds no ranking can pass on these timings: had it picked the
    configuration measured fastest (``best_break_even``), and that with rank() free (``best_free_break_even``:
    the conversion beyond the baseline's alone)."""
    t = table.set_index(["matrix", "dtype", "config"])
    timed = table[table["median_ms"].notna()]
    fastest = timed.loc[timed.groupby(["matrix", "dtype"])["median_ms"].idxmin()].set_index(["matrix", "dtype"])
    lx, ly = np.log(cost["nnz"].to_numpy(float)), np.log(cost["rank_us"].to_numpy(float))
    out = []
    for r in picks.itertuples():
        try:
            b, p = t.loc[(r.matrix, r.dtype, BASELINE)], t.loc[(r.matrix, r.dtype, r.pick)]
        except KeyError:
            continue
        n = float(nnz[r.matrix])
        rank_ms = float(np.exp(np.interp(np.log(max(n, 1.0)), lx, ly))) / 1e3
        conv, gain, be = _paid_back(b, p, r.pick, rank_ms)
        best = fastest.loc[(r.matrix, r.dtype)]
        out.append({"matrix": r.matrix, "dtype": r.dtype, "nnz": n, "pick": r.pick, "rank_ms": rank_ms,
                    "extra_convert_ms": conv, "gain_ms": gain, "break_even": be, "best": best["config"],
                    "best_break_even": _paid_back(b, best, best["config"], rank_ms)[2],
                    "best_free_break_even": _paid_back(b, best, best["config"], 0.0)[2]})
    return pd.DataFrame(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--picks", type=Path, default=ROOT / "benchmarks" / "results" / "default_quality_h200.csv")
    ap.add_argument("--dataset", nargs="+", default=list(training_data("h200")))
    ap.add_argument("--target", default="h200", help="whose shipped default rank() is timed with")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "break_even_h200.md")
    a = ap.parse_args()
    picks = pd.read_csv(a.picks)
    picks = picks[picks["model"] == "forest"]
    ds = datasets.combine(*a.dataset, dtype=None)
    nnz = ds.features.drop_duplicates("matrix").set_index("matrix")["nnz"]
    cost = rank_times(a.target)
    df = break_even(picks, ds.table, nnz, cost)
    df.to_csv(a.out.with_suffix(".csv"), index=False)
    lines = [f"Picks: `{a.picks.relative_to(ROOT) if a.picks.is_relative_to(ROOT) else a.picks}` (held out by grouped "
             f"folds); times and conversions: {', '.join(f'`datasets/{d}`' for d in a.dataset)}; rank time: "
             f"`pyspmv.rank(A, target={a.target!r})` on this machine. Target (issue 48): median break-even at most 100 "
             "products in every size band.", "",
             *md_header(["band (entries)", "units", "pick faster than baseline", "median break-even (all)",
                         "≤ 100 products", "median rank µs", "median extra conversion ms", "target",
                         "the fastest picked", "the fastest picked, rank() free"], "lrrrrrrlrr")]
    for lo, hi in BANDS:
        d = df[(df["nnz"] >= lo) & (df["nnz"] < hi)]
        if d.empty:
            continue
        pays = d[np.isfinite(d["break_even"])]
        med = float(np.median(d["break_even"]))
        label = f"{lo:.0e} – {hi:.0e}" if np.isfinite(hi) else f"≥ {lo:.0e}"
        lines.append(f"| {label} | {len(d)} | {len(pays)} | {med:.3g} | {(d['break_even'] <= 100).mean() * 100:.0f} % | "
                     f"{np.median(d['rank_ms']) * 1e3:.3g} | "
                     f"{np.median(pays['extra_convert_ms']) if len(pays) else np.nan:.3g} | "
                     f"{'met' if med <= 100 else 'missed'} | {float(np.median(d['best_break_even'])):.3g} | "
                     f"{float(np.median(d['best_free_break_even'])):.3g} |")
        print(lines[-1], flush=True)
    lines += ["", "The last two columns bound what any ranking could reach on these timings: the median break-even had "
              "each unit's pick been its fastest measured configuration, with this rank() time, and with none (the "
              "conversion beyond the baseline's alone, as measured: on the host, then the upload). Where the last is "
              "above 100, no model and no speed of rank() meets the target in that band with conversions as costly; "
              "only a cheaper conversion (on the GPU, from an uploaded CSR) could.",
              "", "rank() on this machine, beside one single-thread `cpu/csr/rows` product of the same matrix (the "
              "host's speed: the break-even scales with it):", "",
              *md_header(["nnz", "rank µs", "1-thread CSR product µs", "rank in products"], "rrrr"),
              *[f"| {int(r.nnz):,} | {r.rank_us:.3g} | {r.product_us:.3g} | {r.rank_us / r.product_us:.2f} |"
                for r in cost.itertuples()]]
    write_report(a.out, "Break-even of the H200 default's held-out picks against cuSPARSE's CSR default, by size band",
                 lines)


if __name__ == "__main__":
    main()
