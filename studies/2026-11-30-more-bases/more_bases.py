"""Whether scaled copies of the corpus's last unscaled real matrices help the H200 default at 1e6 entries and more.

    python studies/2026-11-30-more-bases/more_bases.py [--new h200_scaled_seed5 --new h200_scaled_seed6]

Every matrix of the H200 default's training data (``pyspmv.ranking.targets.training_data('h200')``) and of the new
collections is held out once, in grouped folds over base matrices (``benchmarks/default_quality.py --cv 5``'s folds,
drawn over all of them), and ranked by the cuda recipe's forest. Each fold trains twice: without the new collections
(the shipped recipe's data) and with them. Both are scored on the same held-out matrices, by issue 48's size bands,
and on the new matrices alone (which the first model has never seen scaled: their base matrices are in no other
H200 scaled dataset), over two forest seeds. Paired: the mean over held-out units of log(t_pick / t_best) with the new
collections minus without, and z over its standard error (taken over units, each unit's seeds averaged; negative: the
new data picks faster configurations). Writes ``more_bases.md`` beside this file.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "benchmarks"))
from _internal import (SIZE_BANDS, base_folds, column_for, evaluate_folds, in_band, make_model,  # noqa: E402
                       training_data, with_sizes)
from _md import md_header, summary, write_report  # noqa: E402

sys.path.insert(0, str(HERE.parent))  # studies/_common.py
from _common import paired_diff  # noqa: E402

from pyspmv import datasets  # noqa: E402

LARGE = 1e6
SEEDS = (0, 1)


def held_out(ds: datasets.Dataset, keep: np.ndarray | None, seed: int) -> pd.DataFrame:
    """Per held-out unit scores over base_folds(5); ``keep``: the rows a fold may train on (None: all)."""
    folds = [(tr if keep is None else tr[keep[tr]], te) for tr, te in base_folds(ds.groups, 5)]
    ev = evaluate_folds(make_model("forest", seed, "cuda"), ds.X, ds.y, ds.groups, q25=ds.q25, q75=ds.q75,
                        convert_ms=column_for(ds, "convert_ms"), folds=folds)
    return with_sizes(ev.per_matrix, ds.features).assign(repeat=seed)


def compare(dtype: str, new: list[str]) -> list[str]:
    ds = datasets.combine(*training_data("h200"), *new, dtype=dtype)
    groups = np.asarray(ds.groups)
    fresh = set(datasets.combine(*new, dtype=dtype).groups)
    is_new = np.isin(groups, list(fresh))
    per = {}
    for label, keep in (("without", ~is_new), ("with", None)):
        per[label] = pd.concat([held_out(ds, keep, seed) for seed in SEEDS], ignore_index=True)
        print(dtype, label, "done", flush=True)
    lines = []
    for band, pick in ((b[0], lambda p, b=b: in_band(p, b)) for b in SIZE_BANDS):
        lines.append(row(dtype, band, per, pick))
    lines.append(row(dtype, "≥ 1e6, the new matrices only", per,
                     lambda p: p["matrix"].isin(fresh) & (p["nnz"] >= LARGE)))
    return lines


def row(dtype: str, band: str, per: dict[str, pd.DataFrame], pick: object) -> str:
    """One band's cells: each variant's summary over both seeds, and the paired difference."""
    sel = {k: v[pick(v)] for k, v in per.items()}  # type: ignore[operator]
    ratio = {k: v.set_index(["matrix", "repeat"])["ratio"] for k, v in sel.items()}
    mean, se = paired_diff(ratio["with"], ratio["without"].reindex(ratio["with"].index))
    z = f" (z {mean / se:+.1f})" if se > 0 else ""
    return f"| {dtype} | {band} | {summary(sel['without'])} | {summary(sel['with'])} | {mean:+.4f}{z} |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--new", action="append", default=None, help="a new H200 dataset (repeatable)")
    args = ap.parse_args()
    new = args.new or ["h200_scaled_seed5", "h200_scaled_seed6"]
    lines = [line for dtype in ("float64", "float32") for line in compare(dtype, new)]
    text = [__doc__.split("\n\n", 2)[2].split("\n\nWrites")[0], "", f"New collections: {', '.join(new)}.", "",
            "Cells: within 5 % | beyond 20 % | geomean t_pick / t_best | held-out units x seeds.", "",
            *md_header(["dtype", "band", "without (the shipped recipe's data)", "", "", "", "with the new collections",
                        "", "", "", "paired"], "llrrrrrrrrl"), *lines]
    write_report(HERE / "more_bases.md", "More large real-structured bases for the H200 default", text)


if __name__ == "__main__":
    main()
