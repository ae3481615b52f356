"""Whether scaled copies of the corpus's last unscaled real matrices help the H200 default at 1e6 entries and more.

    python studies/2026-11-30-more-bases/more_bases.py [--new h200_scaled_seed5 --new h200_scaled_seed6]

Every matrix of the H200 default's former training data (``pyspmv.ranking.targets.training_data('h200')`` less the
new collections, which it is trained on since) and of the new collections is held out once, in grouped folds over
base matrices (``benchmarks/default_quality.py --cv 5``'s folds, drawn over all of them), and ranked by the cuda
recipe's forest. Each fold trains four times (:data:`VARIANTS`): without the new collections (the former default's
data), with them, and with them and larger leaves or fewer trees. All are scored on the same held-out matrices, by
issue 48's size bands, and on the new matrices alone (which the first model has never seen scaled: their base
matrices are in no other H200 scaled dataset), over two forest seeds. Paired: the mean over held-out units of
log(t_pick / t_best), a variant minus the first, and z over its standard error (taken over units, each unit's seeds
averaged; negative: the variant picks faster configurations). Last, the size of the file each variant would ship.
Writes ``more_bases.md`` beside this file.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import importlib.util
import sys
import tempfile
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

import pyspmv  # noqa: E402
from pyspmv import datasets  # noqa: E402

LARGE = 1e6
SEEDS = (0, 1)


#: The variants each fold trains: (label, trained on the new collections too, the forest's settings). The last two
#: try to keep the default's file under the 8 MiB of a committed file: larger leaves, fewer trees. 32 trees were
#: the recipe's n_estimators="auto" at 234 configurations when this ran; 24 since (``forest.AUTO_TREES``).
VARIANTS = (("without (the former default's data)", False, {"n_estimators": 32}),
            ("with the new collections", True, {"n_estimators": 32}),
            ("with them, min_samples_leaf=3", True, {"min_samples_leaf": 3, "n_estimators": 32}),
            ("with them, n_estimators=24", True, {"n_estimators": 24}))
#: tools/store_models.py, loaded by path: the bytes of a model file as the defaults are shipped.
_SPEC = importlib.util.spec_from_file_location("store_models", HERE.parents[1] / "tools" / "store_models.py")
assert _SPEC is not None and _SPEC.loader is not None
store_models = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(store_models)


def former(new: list[str]) -> list[str]:
    """The default's training datasets less the new ones (it is trained on them too since this study)."""
    return [d for d in training_data("h200") if d not in new]


def shipped_mb(new: list[str], with_new: bool, params: dict[str, object]) -> float:
    """MB of the default a variant would ship: fitted on all its rows, both value types, as train-default fits it,
    then stored as tools/store_models.py --deflate stores the shipped ones."""
    ds = datasets.combine(*former(new), *(new if with_new else ()), dtype=None)
    model = make_model("forest", 0, "cuda").set_params(**params)
    model.fit(ds.X, ds.y, ds.groups, convert_ms=column_for(ds, "convert_ms"))
    with tempfile.TemporaryDirectory() as tmp:
        path = pyspmv.save_model(model, Path(tmp) / "default_h200.pyspmv", device="cuda")
        return len(store_models.rewrite(path, deflate=True)) / 1e6


def held_out(ds: datasets.Dataset, keep: np.ndarray | None, seed: int, **params: object) -> pd.DataFrame:
    """Per held-out unit scores over base_folds(5); ``keep``: the rows a fold may train on (None: all)."""
    folds = [(tr if keep is None else tr[keep[tr]], te) for tr, te in base_folds(ds.groups, 5)]
    ev = evaluate_folds(make_model("forest", seed, "cuda").set_params(**params), ds.X, ds.y, ds.groups, q25=ds.q25,
                        q75=ds.q75, convert_ms=column_for(ds, "convert_ms"), folds=folds)
    return with_sizes(ev.per_matrix, ds.features).assign(repeat=seed)


def compare(dtype: str, new: list[str]) -> list[str]:
    ds = datasets.combine(*former(new), *new, dtype=dtype)
    groups = np.asarray(ds.groups)
    fresh = set(datasets.combine(*new, dtype=dtype).groups)
    is_new = np.isin(groups, list(fresh))
    per = {}
    for label, with_new, params in VARIANTS:
        per[label] = pd.concat([held_out(ds, None if with_new else ~is_new, seed, **params) for seed in SEEDS],
                               ignore_index=True)
        print(dtype, label, "done", flush=True)
    bands = [(b[0], lambda p, b=b: in_band(p, b)) for b in SIZE_BANDS]
    bands.append(("≥ 1e6, the new matrices only", lambda p: p["matrix"].isin(fresh) & (p["nnz"] >= LARGE)))
    lines = []
    for band, pick in bands:
        sel = {k: v[pick(v)] for k, v in per.items()}
        ratio = {k: v.set_index(["matrix", "repeat"])["ratio"] for k, v in sel.items()}
        base = VARIANTS[0][0]
        for label in per:
            mean, se = paired_diff(ratio[label], ratio[base].reindex(ratio[label].index))
            paired = "" if label == base else f"{mean:+.4f}" + (f" (z {mean / se:+.1f})" if se > 0 else "")
            lines.append(f"| {dtype} | {band} | {label} | {summary(sel[label])} | {paired} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--new", action="append", default=None, help="a new H200 dataset (repeatable)")
    args = ap.parse_args()
    new = args.new or ["h200_scaled_seed5", "h200_scaled_seed6"]
    lines = [line for dtype in ("float64", "float32") for line in compare(dtype, new)]
    sizes = [f"| {label} | {shipped_mb(new, with_new, params):.2f} |" for label, with_new, params in VARIANTS]
    text = [__doc__.split("\n\n", 2)[2].split("\n\nWrites")[0], "", f"New collections: {', '.join(new)}.", "",
            
            *md_header(["dtype", "band", "trained", "within 5 %", "beyond 20 %", "geomean", "units x seeds",
                        "paired, against the first"], "lllrrrrl"), *lines, "",
            "The default each variant would ship (every row, both value types; stored as `tools/store_models.py "
            "--deflate` stores the shipped ones), against the 8 MiB (8.39 MB) a committed file may take:", "",
            *md_header(["trained", "MB"], "lr"), *sizes]
    write_report(HERE / "more_bases.md", "More large real-structured bases for the H200 default", text)


if __name__ == "__main__":
    main()
