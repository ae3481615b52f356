"""The shipped cuda default on measured matrices it was never trained on, ranking its near-ties by bytes moved or not.

Usage: python studies/2026-11-24-prior-unseen/prior_unseen.py [--model FILE] [--datasets h100_scaled h100_seed1] [--out studies/2026-11-24-prior-unseen]
                                        [--name prior_unseen_h100.md]

The cuda default (``--model``: a saved model, by default the shipped ``pyspmv/data/default_h100.pyspmv``; the
committed table used the one trained on datasets/h100 and h100_large, ``git show
04994b2:pyspmv/data/default_h100.pyspmv``, before h100_scaled joined its training) predicts every
configuration of each matrix of the given datasets (collected on the same H100, absent from its training:
``h100_scaled``, real matrices scaled to 3e6-1.7e7 entries; ``h100_seed1``, the standard corpus' matrices drawn
with another seed); the same predictions are ranked by time alone (``rank_bytes_pow`` 0) and as the default ranks
them (``rank_bytes_pow`` of the model file). The choice of the power was made on other matrices
(studies/2026-11-24-pick-rules); this is a check on matrices that took no part in it. Writes ``prior_unseen_h100.md``.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

import pyspmv
from pyspmv import datasets, device_info

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/_common.py
from _common import bytes_per_value, md_header, metrics, ranking

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", help="a saved cuda model (default: the shipped default)")
    ap.add_argument("--datasets", nargs="+", default=["h100_scaled", "h100_seed1"])
    ap.add_argument("--out", default=str(HERE))
    ap.add_argument("--name", default="prior_unseen_h100.md", help="the table's file name in --out")
    args = ap.parse_args()
    rm = pyspmv.load_model(args.model) if args.model else pyspmv.default_model("cuda")
    p = rm.tables["float64"].spec.fields["rank_bytes_pow"]
    cpu = device_info("cpu")
    lines = ["# The cuda default on matrices it never saw: near-ties by bytes moved or by time", "",
             (f"`python studies/2026-11-24-prior-unseen/prior_unseen.py --datasets {' '.join(args.datasets)} --name {args.name}`, ranked on the "
              f"{cpu['processor']} dev VM ({cpu['cpu_count']} cores) by the C core (`RankModel.predict`), the default "
              f"made by `{rm.meta.get('command', '?')}`. Same "
              f"predictions, ordered by time alone or by time x (bytes moved per byte of values)^{p} as the default "
              "ranks them. Cells: picks within 5 % of the measured best (ties within [q25, q75] count as the best) / "
              "beyond 20 % / geomean t_pick / t_best."), "",
             *md_header(["dataset", "dtype", "matrices", "by time alone", f"by bytes^{p} (the default)"], "lllll")]
    for name in args.datasets:
        for dtype in ("float64", "float32"):
            ds = datasets.load(name, dtype=dtype)
            X = ds.X
            ms = rm.predict(X)
            f = bytes_per_value(X)
            mat, cfg = ds.groups.astype(str).to_numpy(), X["config"].astype(str).to_numpy()
            cells = []
            for power in (0.0, p):
                per = ranking(ms * f ** power, ds.y.to_numpy(), mat, cfg, ds.q25.to_numpy(), ds.q75.to_numpy())
                w, b, g = metrics(per)
                cells.append(f"{100 * w:.1f} / {100 * b:.1f} / {g:.4f}")
            lines.append(f"| {name} | {dtype} | {len(np.unique(mat))} | " + " | ".join(cells) + " |")
    (Path(args.out) / args.name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
