"""Does the H200 default's forest lack capacity at 1e6 entries and more: more trees, other forests, finer leaves?

    python studies/2026-12-01-forest-capacity/forest_capacity.py

Every matrix of the H200 data the shipped default is trained on (``pyspmv.ranking.targets.training_data('h200')``) is
held out once, grouped 5-fold over base matrices (``benchmarks/default_quality.py --cv 5``'s folds), and ranked by the
cuda recipe's forest (``make_model('forest', device='cuda')``: 24 trees at 234 configurations) and by variants of it
(:data:`VARIANTS`), each with two forest seeds. Writes ``forest_capacity.md`` beside this file.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "benchmarks"))
from _internal import SIZE_BANDS, base_folds, column_for, evaluate_folds, in_band, make_model, training_data, with_sizes
from _md import md_header, summary, write_report

from pyspmv import datasets

#: The recipe, then one change at a time: more trees (what a larger file would allow), a bootstrapped random forest,
#: single-sample leaves with more features a split, every feature a split, a sharper split target.
VARIANTS = ({}, {"n_estimators": 64}, {"n_estimators": 128}, {"forest": "random", "bootstrap": True},
            {"min_samples_leaf": 1, "max_features": 0.8}, {"max_features": 1.0}, {"temperature": 0.03})
SEEDS = (0, 1)


def main() -> None:
    lines = []
    for dtype in ("float64", "float32"):
        ds = datasets.combine(*training_data("h200"), dtype=dtype)
        folds = list(base_folds(ds.groups, 5))
        for v in VARIANTS:
            for seed in SEEDS:
                model = make_model("forest", device="cuda").set_params(random_state=seed, **v)
                ev = evaluate_folds(model, ds.X, ds.y, ds.groups, q25=ds.q25, q75=ds.q75,
                                    convert_ms=column_for(ds, "convert_ms"), folds=folds)
                per = with_sizes(ev.per_matrix, ds.features)
                name = ", ".join(f"{k}={x}" for k, x in v.items()) or "the recipe (24 trees)"
                lines += [f"| {dtype} | {name} | {seed} | {band[0]} | {summary(per[in_band(per, band)])} |"
                          for band in SIZE_BANDS[:2]]
            print(dtype, v, flush=True)
    write_report(HERE / "forest_capacity.md", "The H200 default's forest: more capacity at 1e6 entries and more?",
                 [*md_header(["dtype", "forest", "seed", "band", "within 5 %", "beyond 20 %", "geomean", "n"],
                             "llllrrrr"), *lines])


if __name__ == "__main__":
    main()
