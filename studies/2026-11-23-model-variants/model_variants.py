"""Variants of the default ranking model compared on held-out matrices: objectives, ties, one forest for
both value types, features of the literature; hyper-parameters chosen inside the training matrices only.

    python studies/2026-11-23-model-variants/model_variants.py [DATASET ...] [--variants NAME ...] [--out studies/2026-11-23-model-variants/model_variants.md]
    python studies/2026-11-23-model-variants/model_variants.py --c-eval MODEL.pyspmv [...]   # C evaluation time, as rank_cost.py
    python studies/2026-11-23-model-variants/model_variants.py h100 cpu --grid listwise        # CV of every grid point, both datasets

Per dataset (default ``h100`` and ``cpu``): the matrices are split as benchmarks/default_quality.py splits
them (25 % held out, by matrix, seed 0). Each variant is a ``ForestModel`` (train_default's kind) with
some parameters set and a small grid of others; the grid point is chosen by 3-fold cross-validation
grouped by matrix inside the training matrices (the lowest mean over both value types of the pooled log
geomean t_pick / t_best), then fitted on all training matrices (both value types at once, as
train_default fits) and scored on the held-out ones per value type: picks within 5 % of the measured best,
beyond 20 %, geomean t_pick / t_best, each strict (measured medians) and tie-aware (a pick whose q25 is
at most the best's q75 counts as the best, as benchmarks/default_quality.py scores). Also: fit seconds of
the final fit, mean nodes per tree (what the C evaluation walks). The ``+lit`` variants add the features
of literature_features.py (beside it; its table must cover every matrix of the dataset).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import itertools
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from literature_features import CACHE, names
from sklearn.model_selection import GroupKFold

from pyspmv import FEATURE_NAMES, datasets, device_info
from pyspmv.models import ForestModel

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/_common.py
from _common import split_by_matrix

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
GRID = {"min_samples_leaf": [1, 2, 4], "clip": [0.3, 0.5, 1.0]}
BEST = {"target": "best"}
#: name -> (what it tries, fixed ForestModel parameters, grid searched by CV, literature features added).
VARIANTS: dict[str, tuple[str, dict[str, Any], dict[str, list[Any]], tuple[str, ...]]] = {
    "previous default": ("the default before this comparison, no search",
                         {"target": "best", "min_samples_leaf": 4, "clip": 0.5}, {}, ()),
    "default": ("ForestModel's defaults now: listwise, min_samples_leaf 2, temperature 0.1, no search", {}, {}, ()),
    "best": ("split on log(t / t_best), capped (the previous target)", BEST, GRID, ()),
    "pairwise": ("split on row-centred capped slowdowns (all pairwise differences)", {"target": "pairwise"}, GRID, ()),
    "reference": ("split on log(t / t_cusparse_csr_default) (cpu: cpu/csr/rows)", {"target": "reference"}, GRID, ()),
    "absolute": ("split on log t", {"target": "absolute"}, GRID, ()),
    "listwise": ("split on ListNet top-one probabilities softmax(-slowdown / T)", {"target": "listwise"},
                 {"min_samples_leaf": [1, 2, 4], "temperature": [0.02, 0.05, 0.1]}, ()),
    "tie_tol": ("best, slowdowns up to tol count as ties in the targets", BEST,
                {"min_samples_leaf": [1, 2, 4], "tie_tol": [0.01, 0.02, 0.05]}, ()),
    "ties_noise": ("best, q25 <= best's q75 counts as a tie in the targets", {**BEST, "ties": "noise"}, GRID, ()),
    "joint": ("best, one forest for both value types (outputs side by side)", {**BEST, "joint": True}, GRID, ()),
    "joint_ties_noise": ("joint and noise ties", {**BEST, "joint": True, "ties": "noise"}, GRID, ()),
    "best+lit": ("best with every literature feature", BEST, GRID, ("all",)),
    "best+lit_rows": ("best with the row-length skew, Gini, histogram and warp features", BEST, GRID, ("rows",)),
    "best+lit_locality": ("best with the x-locality features", BEST, GRID, ("locality",)),
    "default+lit": ("the default with every literature feature, no search", {}, {}, ("all",)),
}
LOCALITY = ("adj_row_reuse", "x_seg_block", "cl_cov", "cl_max_ratio")


def make(fixed: dict[str, Any], point: dict[str, Any], extra: tuple[str, ...]) -> ForestModel:
    """The variant's model; ``extra`` literature features join pyspmv's as the open schema's own columns."""
    return ForestModel(**fixed, **point, features=[*FEATURE_NAMES, *extra] if extra else None)


def unit_scores(scores: np.ndarray, y: np.ndarray, q25: np.ndarray, q75: np.ndarray, unit: np.ndarray) -> pd.DataFrame:
    """Per unit (matrix@value_bytes): ratio t_pick / t_best and whether the pick ties the best."""
    df = pd.DataFrame({"u": unit, "s": np.where(np.isfinite(scores), scores, np.inf), "t": y, "q25": q25, "q75": q75})
    gb = df.groupby("u", sort=False)
    p, b = df.loc[gb["s"].idxmin()].set_index("u"), df.loc[gb["t"].idxmin()].set_index("u")
    return pd.DataFrame({"ratio": p["t"] / b["t"], "tie": p["q25"] <= b["q75"]}).rename_axis("unit").reset_index()


def summary(per: pd.DataFrame) -> dict[str, float]:
    r = per["ratio"].to_numpy()
    rt = np.where(per["tie"], 1.0, r)
    return {"w5": float(np.mean(r < 1.05)), "b20": float(np.mean(r > 1.2)), "geo": float(np.exp(np.log(r).mean())),
            "w5t": float(np.mean(rt < 1.05)), "b20t": float(np.mean(rt > 1.2)),
            "geot": float(np.exp(np.log(rt).mean())),
            "n": len(per)}


def fit_score(model: ForestModel, d: dict[str, Any], tr: np.ndarray, te: np.ndarray) -> tuple[pd.DataFrame, float]:
    """Per-unit scores of ``model`` fitted on rows tr and ranking rows te, and the fit's seconds."""
    X, y, g, q25, q75 = d["X"], d["y"], d["g"], d["q25"], d["q75"]
    if model.features is not None:                       # the open schema reads exactly the columns it names
        X = X.drop(columns=[c for c in names() if c in X.columns and c not in model.features])
    t0 = time.perf_counter()
    model.fit(X.iloc[tr], y[tr], groups=g[tr], q25=q25[tr], q75=q75[tr])
    fit_s = time.perf_counter() - t0
    per = unit_scores(model.rank_scores(X.iloc[te]), y[te], q25[te], q75[te], d["unit"][te])
    per["vb"] = per["unit"].str.rsplit("@", n=1).str[1]
    return per, fit_s


def cross_validate(d: dict[str, Any], tr: np.ndarray, fixed: dict, grid: dict,
                   extra: tuple[str, ...]) -> tuple[dict, float]:
    """The grid point with the lowest mean (over value types) pooled log geomean over grouped folds of tr,
    and that geomean."""
    folds = list(GroupKFold(n_splits=3).split(tr, groups=d["g"][tr]))
    best, best_score = {}, np.inf
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values, strict=True))
        per = pd.concat([fit_score(make(fixed, point, extra), d, tr[a], tr[b])[0] for a, b in folds])
        score = float(np.mean([np.log(p["ratio"]).mean() for _, p in per.groupby("vb")]))
        if score < best_score:
            best, best_score = point, score
    return best, float(np.exp(best_score))


def load(path: str, extra: tuple[str, ...]) -> dict[str, Any]:
    """The dataset's arrays and, per value type, default_quality's split: that type's held-out rows, and
    the training rows (both types) of every matrix not held out of it, so no matrix is on both sides."""
    ds = datasets.load(path, dtype=None)
    X, keep = ds.X, np.ones(len(ds.X), bool)
    if extra:
        lit = pd.read_csv(CACHE).set_index("matrix")
        keep = ds.groups.isin(lit.index).to_numpy()
        X = pd.concat([X.reset_index(drop=True), lit.reindex(ds.groups.to_numpy()).reset_index(drop=True)], axis=1)
        X = X.drop(columns=["library", "format", "kernel", "bytes_moved", "padding_ratio", "launches"])  # unread
    g = ds.groups.astype(str).to_numpy()
    vb = X["value_bytes"].to_numpy()
    d = {"X": X, "y": ds.y.to_numpy(), "g": g, "q25": ds.q25.to_numpy(), "q75": ds.q75.to_numpy(),
         "unit": (pd.Series(g) + "@" + X["value_bytes"].astype(int).astype(str)).to_numpy(), "splits": {}}
    for b, name in ((8.0, "f64"), (4.0, "f32")):
        r = np.flatnonzero(vb == b)
        _, te = split_by_matrix(g[r], 0.25, 0)             # as default_quality.py, on this value type's rows
        held = np.isin(g, np.unique(g[r[te]]))
        d["splits"][name] = (np.flatnonzero(~held & keep), np.flatnonzero(held & keep & (vb == b)))
    return d


def run_variant(d: dict[str, Any], name: str) -> dict[str, Any]:
    _, fixed, grid, lit = VARIANTS[name]
    extra = names() if "all" in lit else LOCALITY if "locality" in lit else \
        tuple(n for n in names() if n not in LOCALITY) if "rows" in lit else ()
    out: dict[str, Any] = {"variant": name, "params": {}, "cv": [], "fit_s": 0.0, "nodes_per_tree": 0.0}
    for vt, (tr, te) in d["splits"].items():
        point, cv = cross_validate(d, tr, fixed, grid, extra)
        out["cv"].append(cv)
        model = make(fixed, point, extra)
        per, fit_s = fit_score(model, d, tr, te)
        out["fit_s"] += fit_s / 2
        out["nodes_per_tree"] += np.mean([len(tb["feature"]) / len(tb["root"]) for tb in model.tables_.values()]) / 2
        out["params"][vt] = point
        out[vt] = summary(per)
    return out


def row(r: dict[str, Any], dataset: str) -> str:
    def cell(s: dict[str, float]) -> str:
        return (f"{100 * s['w5']:.1f} / {100 * s['b20']:.1f} / {s['geo']:.3f} | "
                f"{100 * s['w5t']:.1f} / {100 * s['b20t']:.1f} / {s['geot']:.3f}")
    pts = [", ".join(f"{k} {v}" for k, v in p.items()) for p in r["params"].values()]
    p = (pts[0] if pts[0] == pts[1] else " · ".join(f"{vt}: {x}" for vt, x in zip(r["params"], pts, strict=True))) \
        or "–"
    return (f"| {dataset} | {r['variant']} | {VARIANTS[r['variant']][0]} | {p} | {cell(r['f64'])} | {cell(r['f32'])} | "
            f"{' · '.join(f'{c:.4f}' for c in r['cv'])} | {r['f64']['n']} | {r['fit_s']:.1f} | "
            f"{r['nodes_per_tree']:.0f} |")


def c_eval(files: list[str]) -> None:
    """Print rank_cost's C evaluation times (evaluate + sort every cuda configuration) of each model file."""
    import tempfile

    from _common import c_times, laplacian, uniform

    import pyspmv
    with tempfile.TemporaryDirectory() as tmp:
        for f in files:
            rm = pyspmv.load_model(f)
            for M in (laplacian(14), uniform(10_000, 10)):
                _, _, model_us, _ = c_times(rm, M, Path(tmp), 2000)
                print(f"| {Path(f).name} | {M.name} | {M.nnz:,} | {model_us:.3g} |", flush=True)


def grid_table(names: list[str], target: str) -> None:
    """Print the CV geomean of every grid point of ``target``'s variant per dataset (f64 split · f32 split),
    and the geometric mean over all: the table the defaults were chosen from."""
    _, fixed, grid, _ = VARIANTS[target]
    data = {n: load(n, ()) for n in names}
    for values in itertools.product(*grid.values()):
        point = dict(zip(grid, values, strict=True))
        cells, logs = [], []
        for d in data.values():
            cv = []
            for tr, _ in d["splits"].values():
                folds = list(GroupKFold(n_splits=3).split(tr, groups=d["g"][tr]))
                per = pd.concat([fit_score(make(fixed, point, ()), d, tr[a], tr[b])[0] for a, b in folds])
                cv.append(float(np.exp(np.mean([np.log(p["ratio"]).mean() for _, p in per.groupby("vb")]))))
            cells.append(" · ".join(f"{c:.4f}" for c in cv))
            logs += list(np.log(cv))
        print(f"| {target} | {', '.join(f'{k} {v}' for k, v in point.items())} | {' | '.join(cells)} | "
              f"{np.exp(np.mean(logs)):.4f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("datasets", nargs="*", default=["h100", "cpu"])
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--out", default=str(HERE / "model_variants.md"))
    ap.add_argument("--c-eval", nargs="+", metavar="MODEL", help="only time the C evaluation of these model files")
    ap.add_argument("--grid", choices=list(VARIANTS), help="only print the CV geomean of each grid point of a variant")
    a = ap.parse_args()
    if a.c_eval:
        c_eval(a.c_eval)
        return
    if a.grid:
        grid_table(a.datasets, a.grid)
        return
    info = device_info("cpu")
    lines = ["# Variants of the default ranking model on held-out matrices", "",
             (f"`python studies/2026-11-23-model-variants/model_variants.py {' '.join(a.datasets)}`, fitted on the {info['processor']} dev VM "
             f"({info['cpu_count']} cores, shared). Held out: 25 % of each dataset's matrices, split by matrix, seed 0 "
             "(benchmarks/default_quality.py's split); hyper-parameters: the grid point with the best mean log geomean "
             "of 3-fold cross-validation grouped by matrix inside the training matrices. Cells: within 5 % of the "
             "best / beyond 20 % / geomean t_pick / t_best, strict (medians) and tie-aware (a pick whose q25 is at "
             "most the best's q75 counts as the best). CV geomean: the chosen point's cross-validated geomean t_pick / "
             "t_best (mean of the log over both value types), inside the training matrices of the f64 split · of the "
             "f32 split. fit s: the final fit (both value types); nodes: mean nodes per tree (the C evaluation walks "
             "one root-to-leaf path per tree)."), "",
             ("| dataset | variant | what | chosen | f64 strict | f64 tie-aware | f32 strict | f32 tie-aware | CV geomean "
              "| n | fit s | nodes |"), "| --- | --- | --- | --- | --- | --- | --- | --- | --- | ---: | ---: | ---: |"]
    for ds in a.datasets:
        plain, lit = load(ds, ()), None
        for name in a.variants:
            if VARIANTS[name][3] and lit is None:
                lit = load(ds, ("lit",))
                if any(len(lit["splits"][k][1]) < len(plain["splits"][k][1]) for k in plain["splits"]):
                    sys.exit(f"{CACHE} lacks some matrices of {ds}: run studies/2026-11-23-model-variants/literature_features.py {ds}")
            r = run_variant(lit if VARIANTS[name][3] else plain, name)
            print(json.dumps({"dataset": ds, **r}), flush=True)
            lines.append(row(r, ds))
    Path(a.out).write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
