"""One default per GPU, or one over both? And does the recipe's weighting help large matrices on the H200?

    python studies/2026-11-29-h200-default/per_device.py

Every matrix of the H200 data (``datasets/h200``, ``h200_scaled_seed1``, ``h200_scaled``) is held out once:
grouped 5-fold over base matrices (benchmarks/default_quality.py's folds), and ranked by the cuda recipe's forest
(``make_model('forest', device='cuda')``) trained on:

- ``h200``: the other H200 folds (the shipped H200 default's data);
- ``h100 only``: the H100 data (``h100``, ``h100_large``, ``h100_scaled``) alone, scored on the 135 configurations
  the H100 measured (what the shipped H100 default would pick on the H200, the best among those 135);
- ``pooled``: the other H200 folds and the H100 data less every H100 matrix whose base matrix is held out (one model
  over both devices, no device descriptor: the features and configurations alone);
- ``pooled, leaky``: the same with every H100 matrix, held-out ones included (how much a matrix's timings on the
  other GPU tell);
- ``h200, stake_weight=0.5`` and ``h200, bytes_prior=0.2``: the recipe's weighting of large matrices (the time at
  stake) and of the bytes moved, raised.

Writes ``per_device.md`` and ``per_device.csv.gz`` (per matrix) beside this file.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "benchmarks"))
from _internal import SIZE_BANDS, base_folds, base_matrix, column_for, evaluate, in_band, make_model, with_sizes  # noqa: E402,E501
from _md import md_header, summary, write_report  # noqa: E402

from pyspmv import datasets  # noqa: E402

H200 = ("h200", "h200_scaled_seed1", "h200_scaled")
H100 = ("h100", "h100_large", "h100_scaled")
VARIANTS = ("h200", "h100 only", "pooled", "pooled, leaky", "h200, stake_weight=0.5", "h200, bytes_prior=0.2")


def main() -> None:
    lines = md_header(["dtype", "trained on", "band", "within 5 %", "beyond 20 %", "geomean", "n"], "lllrrrr")
    frames = []
    for dtype in ("float64", "float32"):
        h2, h1 = datasets.combine(*H200, dtype=dtype), datasets.combine(*H100, dtype=dtype)
        n2 = len(h2.X)
        X = pd.concat([h2.X, h1.X], ignore_index=True)
        y, q25, q75 = np.r_[h2.y, h1.y], np.r_[h2.q25, h1.q25], np.r_[h2.q75, h1.q75]
        groups = np.r_[np.asarray(h2.groups), np.asarray(["h100:" + str(g) for g in np.asarray(h1.groups)])]
        conv = np.r_[np.asarray(column_for(h2, "convert_ms")), np.asarray(column_for(h1, "convert_ms"))]
        h1_rows = np.arange(n2, len(X))
        h1_base = pd.Series(np.asarray(h1.groups)).map(base_matrix).to_numpy()
        h1_configs = set(h1.X["config"].astype(str))
        for variant in VARIANTS:
            pers = []
            for tr, te in base_folds(h2.groups, 5):
                model = make_model("forest", device="cuda")
                if variant == "h100 only":
                    tr, te = h1_rows, te[np.isin(X["config"].astype(str).to_numpy()[te], list(h1_configs))]
                elif variant == "pooled":
                    held = set(pd.Series(groups[te]).map(base_matrix))
                    tr = np.r_[tr, h1_rows[~np.isin(h1_base, list(held))]]
                elif variant == "pooled, leaky":
                    tr = np.r_[tr, h1_rows]
                elif "=" in variant:
                    key, value = variant.split(", ")[1].split("=")
                    model.set_params(**{key: float(value)})
                ev = evaluate(model, X, y, groups, q25=q25, q75=q75, convert_ms=conv, train_index=tr, test_index=te)
                pers.append(ev.per_matrix)
            per = with_sizes(pd.concat(pers, ignore_index=True), h2.features)
            per["dtype"], per["variant"] = dtype, variant
            frames.append(per)
            for band in SIZE_BANDS:
                lines.append(f"| {dtype} | {variant} | {band[0]} | {summary(per[in_band(per, band)])} |")
            print("\n".join(lines[-len(SIZE_BANDS):]), flush=True)
    pd.concat(frames, ignore_index=True).to_csv(HERE / "per_device.csv.gz", index=False)
    write_report(HERE / "per_device.md", "One default per GPU or one over both, and the recipe's weights, on the H200",
                 [__doc__.split("\n\n", 2)[2].split("\n\nWrites")[0], "", *lines])


if __name__ == "__main__":
    main()
