"""Held-out picks of two recipes judged on the same truth: ``benchmarks/default_quality.py --cv 5`` writes each
matrix's held-out pick; a recipe trained on more data is judged there on that data, so two recipes' tables measure
against different times. Here each CSV's picks are looked up in one truth, the default's datasets with the
refresh's supplements (``datasets.combine`` replaces the rows a supplement measured), by issue 48's size bands.

    python quality.py TRUTH_DATASET... -- NAME=default_quality_h200.csv ...      # prints and writes quality.md
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

from pyspmv import datasets


def truth(names: list[str]) -> pd.DataFrame:
    parts = []
    for dt in ("float64", "float32"):
        t = datasets.combine(*names, dtype=dt).table
        t = t[(t.status == "ok") & (t.dtype == dt)]       # the table holds both types; X and y are dtype's
        parts.append(t[["matrix", "dtype", "config", "median_ms", "q25_ms", "q75_ms"]])
    return pd.concat(parts).set_index(["matrix", "dtype", "config"])


def score(picks: pd.DataFrame, t: pd.DataFrame) -> pd.DataFrame:
    best = t.loc[t.groupby(level=["matrix", "dtype"]).median_ms.idxmin()].droplevel("config")
    p = t.reindex(pd.MultiIndex.from_frame(picks[["matrix", "dtype", "pick"]].rename(columns={"pick": "config"})))
    p.index = p.index.droplevel("config")
    b = best.reindex(p.index)
    out = picks[["matrix", "dtype", "real", "nnz"]].copy()
    out["ratio"] = (p.median_ms / b.median_ms).to_numpy()
    out["tie"] = (p.q25_ms <= b.q75_ms).to_numpy()
    return out


def bands(s: pd.DataFrame) -> dict[str, pd.DataFrame]:
    return {"real < 1e6": s[s.real & (s.nnz < 1e6)], "all >= 1e6": s[s.nnz >= 1e6],
            "generated < 1e6": s[~s.real & (s.nnz < 1e6)]}


def main(names: list[str], csvs: dict[str, Path]) -> None:
    t = truth(names)
    lines = [f"# Held-out picks judged on one truth: {', '.join(f'`{Path(n).name}`' for n in names)}\n",
             "Within 5 % (a pick whose [q25, q75] overlaps the best's counts as the best), beyond 20 %, geomean "
             "t_pick / t_best; a pick the truth lacks is left out (count beside n).\n",
             "| recipe | dtype | band | within 5 % | beyond 20 % | geomean | n | no time |",
             "|---|---|---|---:|---:|---:|---:|---:|"]
    for label, path in csvs.items():
        s = score(pd.read_csv(path), t)
        for dt in ("float64", "float32"):
            for band, b in bands(s[s.dtype == dt]).items():
                ok = b[b.ratio.notna()]
                within = ((ok.ratio < 1.05) | ok.tie).mean()
                beyond, geo = (ok.ratio > 1.2).mean(), np.exp(np.log(ok.ratio).mean())
                lines.append(f"| {label} | {dt} | {band} | {100 * within:.1f} % | {100 * beyond:.1f} % | {geo:.3f} | "
                             f"{len(ok)} | {len(b) - len(ok)} |")
    (Path(__file__).resolve().parent / "quality.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    cut = sys.argv.index("--")
    main(sys.argv[1:cut], {a.split("=", 1)[0]: Path(a.split("=", 1)[1]) for a in sys.argv[cut + 1:]})
