"""Should the H200 default rank csr/adaptive's ept=4 and the value tables (vals=8|16) that win products at scale?

    python studies/2026-12-02-ranking-new-configurations/new_configurations.py

Every matrix of the H200 default's training data (``pyspmv.ranking.targets.training_data('h200')``) is held out once,
grouped 5-fold over base matrices (``benchmarks/default_quality.py --cv 5``'s folds, each matrix kept in its fold
whatever rows are added), and ranked by the cuda recipe's forest trained on four sets of rows: the shipped data
(``unmeasured='cap'``, the shipped recipe, and ``'skip'``), and with the supplements ``h200_adaptive`` (csr/adaptive's
20 configurations without value tables, measured again, ``ept=4`` among them), ``h200_tables`` (the 100 configurations
with a value table) or both joined (``pyspmv.datasets.combine``; ``unmeasured='skip'``: a configuration absent from a
matrix's collection does not count as slow). Two scores:

- each set's own: the pick against the fastest configuration that set measured (the bar rises with each set);
- on the 381 matrices the supplements measured: the pick's time against the fastest of all rows (both supplements
  joined), within 5 % and beyond 20 % of it, and cuSPARSE's CSR default's time over the pick's (geometric mean).

Last, a rule that needs no training data for the tables: the shipped data's pick, replaced by its value-table variant
(vals=8, else 16) wherever that was measured (the table applies), scored the same way. Writes
``new_configurations.md`` and, per held-out unit, ``new_configurations.csv.gz``.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "benchmarks"))
from _internal import (SIZE_BANDS, base_folds, column_for, evaluate_folds, in_band, make_model, table_variants,
                       training_data, with_sizes)
from _md import md_header, summary, write_report

import pyspmv
from pyspmv import datasets

SUPPLEMENTS = {"adaptive": "h200_adaptive", "tables": "h200_tables"}
#: SELL measured again (it keeps a matrix that fits the L2 since 2026-12-01) on 128 of the 381, at 1e6 entries and more.
SELL = "h200_sell"
FLOORS = (0, 15e6, 25e6, 40e6, 60e6, np.inf)
#: (label, supplements joined, the forest's ``unmeasured``)
SETS = (("shipped data, cap (the recipe)", (), "cap"), ("shipped data, skip", (), "skip"),
        ("+ h200_adaptive", ("adaptive",), "skip"), ("+ h200_tables", ("tables",), "skip"),
        ("+ both", ("adaptive", "tables"), "skip"), ("+ h200_sell", ("sell",), "skip"))
BASELINE = "cusparse/csr/default"
SIZES = (("< 1e6", 0.0, 1e6), (">= 1e6", 1e6, np.inf))


def gmean(x: pd.Series) -> float:
    return float(np.exp(np.log(x).mean()))


def variant(cid: str, bits: int) -> str | None:
    """The id of ``cid`` with a value table of ``bits`` (csr/vector, csr/adaptive, jad), or None."""
    v = table_variants(pyspmv.config(cid), (bits,))
    return v[0].id if v else None


def absolute(per: pd.DataFrame, T: pd.Series, measured: set[str]) -> pd.DataFrame:
    """Per unit of ``per`` on a supplemented matrix: its pick's time over the fastest of ``T`` (every row), and
    cuSPARSE's default over the pick's."""
    rows = []
    for r in per[per["matrix"].isin(measured)].itertuples():
        tm = T.loc[r.matrix]
        t = tm.get(r.pick, np.nan)
        rows.append((r.matrix, r.nnz, r.pick, t / tm.min(), tm.get(BASELINE, np.nan) / t))
    return pd.DataFrame(rows, columns=["matrix", "nnz", "pick", "ratio", "gain"]).dropna()


def sell_rows() -> list[str]:
    """SELL's new medians over the shipped ones (section 4)."""
    new = datasets.load(SELL, dtype=None).table
    lines = []
    for dtype, vb in (("float64", 8), ("float32", 4)):
        ds = datasets.combine(*training_data("h200"), dtype=dtype)
        old = pd.Series(ds.y.to_numpy(), index=pd.MultiIndex.from_arrays([ds.groups, ds.X["config"]]), name="old")
        t = new[(new["status"] == "ok") & (new["dtype"] == dtype)]
        fresh = pd.Series(t["median_ms"].to_numpy(), name="new",
                          index=pd.MultiIndex.from_arrays([t["matrix"], t["config"]]))
        j = pd.concat([old, fresh], axis=1, join="inner")
        nnz = ds.features.drop_duplicates("matrix").set_index("matrix")["nnz"]
        floor = nnz.reindex(j.index.get_level_values(0)).to_numpy() * (vb + 4)
        j["r"], j["band"] = j["new"] / j["old"], pd.cut(floor, FLOORS)
        for band, b in j.groupby("band", observed=True):
            best = b.groupby(level=0)["new"].min() / b.groupby(level=0)["old"].min()
            q = b["r"].quantile([0.25, 0.5, 0.75]).to_numpy()
            lines.append(f"| {dtype} | {band.left / 1e6:g}-{band.right / 1e6:g} | {len(b)} | {q[0]:.3f} | {q[1]:.3f} | "
                         f"{q[2]:.3f} | {best.median():.3f} |")
    return lines


def main() -> None:
    own, abs_lines, alias_lines, units, bar = [], [], [], [], []
    measured = set(datasets.load(SUPPLEMENTS["adaptive"], dtype=None).features["matrix"])
    for dtype in ("float64", "float32"):
        shipped = datasets.combine(*training_data("h200"), dtype=dtype)
        fold_of = {m: k for k, (_, te) in enumerate(base_folds(shipped.groups, 5))
                   for m in set(shipped.groups.iloc[te])}
        full = datasets.combine(*training_data("h200"), *SUPPLEMENTS.values(), SELL, dtype=dtype)
        T = pd.Series(full.y.to_numpy(), index=pd.MultiIndex.from_arrays([full.groups, full.X["config"]]))
        T0 = pd.Series(shipped.y.to_numpy(), index=pd.MultiIndex.from_arrays([shipped.groups, shipped.X["config"]]))
        nnz = shipped.features.drop_duplicates("matrix").set_index("matrix")["nnz"]
        for name, lo, hi in SIZES:
            ms = [m for m in sorted(measured & set(shipped.groups)) if lo <= nnz[m] < hi]  # float32: 'temp' overflows
            best = pd.Series({m: T.loc[m].idxmin() for m in ms})
            new = best.str.contains("/ept=4/|/vals=")
            gap = gmean(pd.Series([T0.loc[m].min() / T.loc[m].min() for m in ms]))
            bar.append(f"| {dtype} | {name} | {len(ms)} | {gap:.3f} | {100 * new.mean():.1f} % | "
                       f"{100 * best.str.contains('/vals=').mean():.1f} % |")
        for label, sup, unmeasured in SETS:
            ds = datasets.combine(*training_data("h200"), *({**SUPPLEMENTS, "sell": SELL}[s] for s in sup), dtype=dtype)
            fk = ds.groups.map(fold_of).to_numpy()
            folds = [(np.flatnonzero(fk != k), np.flatnonzero(fk == k)) for k in range(5)]
            ev = evaluate_folds(make_model("forest", device="cuda").set_params(unmeasured=unmeasured), ds.X, ds.y,
                                ds.groups, q25=ds.q25, q75=ds.q75, convert_ms=column_for(ds, "convert_ms"), folds=folds)
            per = with_sizes(ev.per_matrix, ds.features)
            own += [f"| {dtype} | {label} | {b[0]} | {summary(per[in_band(per, b)])} |" for b in SIZE_BANDS[:2]]
            a = absolute(per, T, measured)
            units.append(a.assign(dtype=dtype, set=label))
            for name, lo, hi in SIZES:
                s = a[(a["nnz"] >= lo) & (a["nnz"] < hi)]
                abs_lines.append(f"| {dtype} | {label} | {name} | {100 * (s['ratio'] <= 1.05).mean():.1f} % | "
                                 f"{100 * (s['ratio'] > 1.2).mean():.1f} % | {gmean(s['ratio']):.3f} | "
                                 f"{gmean(s['gain']):.3f} | {len(s)} |")
            if label.startswith("shipped data, cap"):
                alias = a.copy()
                for i, r in alias.iterrows():
                    tm = T.loc[r["matrix"]]
                    for bits in (8, 16):
                        v = variant(r["pick"], bits)
                        if v is not None and v in tm.index:
                            alias.loc[i, ["ratio", "gain"]] = [tm[v] / tm.min(), tm.get(BASELINE, np.nan) / tm[v]]
                            break
                for name, lo, hi in SIZES:
                    s, b = (x[(x["nnz"] >= lo) & (x["nnz"] < hi)] for x in (alias, a))
                    changed = s["ratio"].to_numpy() != b["ratio"].to_numpy()
                    alias_lines.append(f"| {dtype} | {name} | {int(changed.sum())} of {len(s)} | "
                                       f"{100 * (s['ratio'] <= 1.05).mean():.1f} % | "
                                       f"{100 * (s['ratio'] > 1.2).mean():.1f} % | "
                                       f"{gmean(s['ratio']):.3f} | {gmean(s['gain']):.3f} | "
                                       f"{gmean(s['ratio'][changed] / b['ratio'][changed]):.3f} |")
            print(dtype, label, flush=True)
    stale = sell_rows()
    pd.concat(units, ignore_index=True).to_csv(HERE / "new_configurations.csv.gz", index=False)
    write_report(HERE / "new_configurations.md", "Ranking csr/adaptive's ept=4 and the value tables on the H200", [
        "## 0. How much faster the fastest configuration gets on the 381 matrices the supplements measured", "",
        "The shipped data's fastest over the fastest of every row (csr/adaptive and SELL measured again included), and "
        "the "
        "share of matrices whose fastest is a configuration the shipped data lacks (ept=4 or a value table).", "",
        *md_header(["dtype", "entries", "matrices", "shipped fastest / fastest of all", "fastest is new",
                    "of which a value table"], "llrrrr"), *bar, "",
        "## 1. Each set of rows scored against its own fastest (the bar rises as rows are added)", "",
        *md_header(["dtype", "trained on", "band", "within 5 %", "beyond 20 %", "geomean", "n"], "lllrrrr"), *own, "",
        "## 2. On the 381 matrices the supplements measured: the pick against the fastest of every row", "",
        "Within 5 % and beyond 20 % here are t_pick / t_best without the tie rule of section 1.", "",
        *md_header(["dtype", "trained on", "entries", "within 5 %", "beyond 20 %", "geomean t_pick / t_best",
                    f"{BASELINE} / pick", "n"], "lllrrrrr"), *abs_lines, "",
        "## 3. The shipped data's pick, taking its value-table variant wherever the table applies", "",
        *md_header(["dtype", "entries", "picks changed", "within 5 %", "beyond 20 %", "geomean t_pick / t_best",
                    f"{BASELINE} / pick", "changed: variant / pick"], "llrrrrrr"), *alias_lines, "",
        "## 4. SELL measured again: how stale were the shipped rows?", "",
        f"`{SELL}`: the 45 SELL configurations on 128 of the matrices of 1e6 entries and more (the device call's time "
        "stopped it before the last 7 of `h200_scaled_seed6`), over the shipped rows of the same matrix, value type "
        "and "
        "configuration, by the CSR byte floor (entries times value and index bytes). Trained on with the shipped data: "
        "the row `+ h200_sell` of sections 1 and 2.", "",
        *md_header(["dtype", "CSR floor MB", "pairs", "q25 new / shipped", "median", "q75",
                    "each matrix's fastest SELL, new / shipped (median)"], "lrrrrrr"), *stale])


if __name__ == "__main__":
    main()
