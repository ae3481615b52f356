"""Every model on every dataset: all metrics of "How a model is judged" (docs/guide/models.md) on held-out matrices.

    python benchmarks/models.py                       # every datasets/<name>/ present (cpu, h100, ...)
    python benchmarks/models.py datasets/h100 --models linear boosted --dtypes float64

For each dataset, value type and model: a clone is trained on 75 % of the matrices (GroupShuffleSplit by
matrix, seed 0) and evaluated on the other 25 %: prediction divergence |pred - meas| / meas (median,
mean; classifiers without runtimes: blank), the share of test matrices whose pick is < 5 %, 5-20 %,
> 20 % slower than the measured best (a pick whose [q25, q75] overlaps the best's counts as the best),
geomean t_pick / t_best, top-1, top-3, mean Kendall tau, speedups (geomean t_other / t_pick) over the
baseline (cuSPARSE CSR default; CPU: row-parallel CSR), the best single configuration on the training
matrices, Ginkgo's and CUSP's rules, training seconds and Python ranking ms per matrix, overheads in
SpMV-equivalents (rank_spmv: ranking ms / best SpMV ms; convert_spmv: the pick's conversion ms / its
SpMV ms), and the
ranking metrics again for matrices under 50 MB of CSR (L2-resident on the H100) and the larger ones.
GuoModel and WangModel are fitted from the dataset rows (their relations), not by instrumentation.
Writes benchmarks/results/models_<dataset>.csv (every metric) and .md (the main ones).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _internal import column_for, evaluate, evaluate_folds
from _md import md_header, md_row, provenance

from pyspmv import datasets
from pyspmv.models import MODELS

ROOT = Path(__file__).resolve().parents[1]
#: The rows of the table: every model with its defaults, plus the per-configuration variants of the
#: per-group models (Lehnert fit one model per format and mapping; one per configuration is the finer grain).
VARIANTS = {"linear": (MODELS["linear"], {}), "linear-config": (MODELS["linear"], {"group_by": "config"}),
            "boosted": (MODELS["boosted"], {}), "boosted-format": (MODELS["boosted"], {"per": "format"}),
            **{k: (MODELS[k], {}) for k in ("knn", "guo", "wang", "svm", "cascade", "forest")}}
MAIN = ["div_median", "div_mean", "within<5%", "within5-20%", "within>20%", "geomean_ratio", "top1", "top3", "tau",
        "speedup_vs_baseline", "speedup_vs_best_single", "speedup_vs_ginkgo", "speedup_vs_cusp", "train_s",
        "rank_ms", "rank_spmv", "convert_spmv", "l2_n", "l2_within<5%", "l2_geomean_ratio", "large_n",
        "large_within<5%", "large_geomean_ratio"]


def run(path: Path, models: list[str], dtypes: list[str], test_size: float, seed: int,
        family_folds: int = 0) -> pd.DataFrame:
    rows = []
    for dt in dtypes:
        try:
            ds = datasets.load(str(path), dtype=dt)
        except (ValueError, KeyError) as exc:
            print(f"{path.name} {dt}: skipped ({exc})")
            continue
        if ds.X.empty:
            continue
        conv = column_for(ds, "convert_ms")
        for name in models:
            t0 = time.perf_counter()
            cls, params = VARIANTS[name]
            r = evaluate(cls(**params), ds.X, ds.y, ds.groups, q25=ds.q25, q75=ds.q75, test_size=test_size,
                         random_state=seed, convert_ms=conv)
            rows.append({"dataset": path.name, "dtype": dt, "split": "holdout", "model": name, **r.summary})
            s = r.summary
            print(f"{path.name} {dt} {name:14s} div {s['div_median']:.3f}  <5% {s['within<5%']:.2f}  "
                  f">20% {s['within>20%']:.2f}  geo {s['geomean_ratio']:.3f}  ({time.perf_counter() - t0:.0f} s)",
                  flush=True)
            if family_folds:
                fam = ds.groups.map(ds.features.set_index("matrix")["group"]).fillna("").to_numpy()
                r = evaluate_folds(cls(**params), ds.X, ds.y, ds.groups, fam, n_splits=family_folds,
                                   q25=ds.q25, q75=ds.q75, convert_ms=conv)
                rows.append({"dataset": path.name, "dtype": dt, "split": f"family{family_folds}", "model": name,
                             **r.summary})
    return pd.DataFrame(rows)


def markdown(df: pd.DataFrame, path: Path, meta: dict, note: str = "") -> str:
    cols = [c for c in MAIN if c in df.columns]
    lines = [f"# Models on `{path.name}`", "", provenance(), "",
             (f"Dataset device: {meta.get('device_info', {}).get('gpu_name') or meta.get('device_info', {}).get('processor', '?')}; "
             "models trained and timed on the machine of the provenance line. Split: 75 % / 25 % of the matrices, seed 0. "
             "Columns: see benchmarks/models.py."
             + (f" Timings: `{meta['source']}`, the matrices found ({meta.get('n_matrices', '?')})."
                if "source" in meta else "")
             + (f" {note}" if note else "")), ""]
    for (dt, split), part in df.groupby(["dtype", "split"], sort=False):
        what = "held-out" if split == "holdout" else f"grouped {split[6:]}-fold by family, every"
        best = part["best_single_config"].iloc[0] if "best_single_config" in part else None
        best = f", best single configuration on the training matrices: `{best}`" if isinstance(best, str) else ""
        lines += [f"## {dt}, {what} ({int(part['n_test_units'].iloc[0])} test matrices{best})", "",
                  *md_header(["model", *cols], tight=True)]
        for _, r in part.iterrows():
            cells = []
            for c in cols:
                v = r[c]
                cells.append("" if isinstance(v, float) and np.isnan(v) else f"{v:.3g}" if isinstance(v, float) else str(v))
            lines.append(md_row([r["model"], *cells]))
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets", nargs="*", help="dataset folders (default: every folder under datasets/)")
    ap.add_argument("--models", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--dtypes", nargs="+", default=["float64", "float32"], choices=["float64", "float32"])
    ap.add_argument("--test-size", type=float, default=0.25)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--family-folds", type=int, default=0, metavar="K",
                    help="also grouped K-fold by matrix family (the dataset's group column)")
    ap.add_argument("--note", default="", help="a sentence appended to each table's header (the run's conditions)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results"))
    a = ap.parse_args()
    paths = [Path(p) for p in a.datasets] or sorted(p for p in (ROOT / "datasets").glob("*")
                                                     if (p / "timings.csv.gz").exists())
    if not paths:
        raise SystemExit("no dataset found: give a folder with timings.csv.gz, or collect one (pyspmv collect)")
    for path in paths:
        df = run(path, a.models, a.dtypes, a.test_size, a.seed, a.family_folds)
        if df.empty:
            continue
        meta = datasets.load(str(path), dtype=None).metadata
        out = Path(a.out)
        df.to_csv(out / f"models_{path.name}.csv", index=False, float_format="%.6g")
        (out / f"models_{path.name}.md").write_text(markdown(df, path, meta, a.note) + "\n")
        print(f"wrote {out / f'models_{path.name}.md'}")


if __name__ == "__main__":
    main()
