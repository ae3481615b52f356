"""Which configuration family is fastest, by matrix size: one figure and one table per shipped dataset.

Usage: python benchmarks/dataset_overview.py [h100 cpu ...]

Writes ``benchmarks/results/dataset_<name>.png`` (speed of the measured best configuration over the
baseline, against stored entries, coloured by the best's library/format) and ``dataset_<name>.md``
(share of matrix/dtype pairs each family wins, and the oracle's speedup over the baseline).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
from _internal import baseline_id
from _md import md_frame as markdown
from _md import write_report

from pyspmv import datasets


def best_rows(table: pd.DataFrame) -> pd.DataFrame:
    """The fastest ``ok`` row of every (matrix, dtype), with its speedup over the baseline."""
    ok = table[table.status == "ok"]
    best = ok.loc[ok.groupby(["matrix", "dtype"]).median_ms.idxmin()].copy()
    base = ok[ok.config == baseline_id(set(ok.config))].set_index(["matrix", "dtype"]).median_ms
    best["speedup"] = base.reindex(pd.MultiIndex.from_frame(best[["matrix", "dtype"]])).to_numpy() / best.median_ms
    best["family"] = best.config.str.split("/").str[:2].str.join("/")
    return best


def overview(name: str, out: Path) -> None:
    ds = datasets.load(name, dtype=None)
    best = best_rows(ds.table).merge(ds.features[["matrix", "nnz"]], on="matrix")
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5), sharey=True)
    fams = best.family.value_counts().index
    colours = dict(zip(fams, plt.cm.tab10(np.arange(len(fams)) % 10)))
    for ax, dt in zip(axes, ("float32", "float64")):
        b = best[best.dtype == dt]
        for fam in fams:
            s = b[b.family == fam]
            ax.scatter(s.nnz, s.speedup, s=14, color=colours[fam], label=fam)
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xlabel("stored entries")
        ax.set_title(f"{name}, {dt}")
    axes[0].set_ylabel(f"best configuration's speedup over {baseline_id(set(ds.table.config))}")
    axes[1].legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(out / f"dataset_{name}.png", dpi=110)
    share = best.groupby("dtype").family.value_counts(normalize=True).unstack(0).fillna(0).round(3)
    sp = best.groupby("dtype").speedup.agg(lambda v: float(np.exp(np.log(v.dropna()).mean())))
    md = [
          (f"{best.matrix.nunique()} matrices. Share of matrix/dtype pairs whose measured best configuration is "
          "of each library/format:\n"), markdown(share.reset_index()), "\n",
          f"Geometric-mean speedup of the measured best over {baseline_id(set(ds.table.config))}: "
          + ", ".join(f"{k} {v:.2f}x" for k, v in sp.items()), "\n"]
    print(write_report(out / f"dataset_{name}.md", f"Dataset {name}: which family is fastest", md))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", default=["h100", "cpu"])
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results")
    args = ap.parse_args()
    for n in args.names:
        overview(n, args.out)


if __name__ == "__main__":
    main()
