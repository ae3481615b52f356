"""The ``cuda`` default kind on larger matrices than it was trained on, measured on the H100 but never trained on.

    python studies/2026-11-24-unseen-large/unseen_large.py [FOLDER] [--dataset h100] [--out studies/2026-11-24-unseen-large/unseen_large_h100.md]

FOLDER (default: the shipped ``h100_large``) is a collection (``pyspmv collect --corpus standard --min-nnz 1.19e7 ...
--device cuda``) of standard-corpus matrices; those of ``--dataset`` are only compared with it (the same matrix
measured twice, on other days and hosts). Every other matrix is built here from the standard corpus (seed 0), its
features checked against the collection's (the same matrix), and ranked by ``pyspmv.rank`` as a user would, with the
default recipe fitted on ``--dataset`` alone (``pyspmv.training.train_default.train``: the shipped default before these matrices
joined its training), in both value types, exactly and with ``estimate=True``. Per matrix and value type: the pick's measured
time against the measured best (a pick whose q25 is at most the best's q75 counts as the best, as
``pyspmv.evaluate.ranking``), its speedup over cuSPARSE CSR default, rank() time on this machine in µs and in
single-thread ``cpu/csr/rows`` products of the matrix, and the break-even number of products against cuSPARSE CSR
default: (rank time + the pick's conversion and upload beyond the baseline's) / (t baseline - t pick).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import pyspmv
from pyspmv import datasets, device_info

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/_common.py
from _common import make_model, md_header, product_us, ranking, reps_for, split_by_matrix, timed, train, unit_key

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
BASELINE = "cusparse/csr/default"
DTYPES = ("float32", "float64")


def repeat_lines(t: pd.DataFrame, ref: pd.DataFrame, names: list[str]) -> list[str]:
    """The matrices measured in both: per value type, how the configurations' medians moved."""
    lines = md_header(["matrix", "dtype", "configurations", "median ratio (new / dataset)", "p10-p90",
                       "within 5 %", "best (dataset)", "best (new)", "dataset's best, new timing / new best"],
                      "llrrrrllr")
    for m in names:
        for dt in DTYPES:
            a = ref[(ref["matrix"] == m) & (ref["dtype"] == dt) & (ref["status"] == "ok")]
            b = t[(t["matrix"] == m) & (t["dtype"] == dt) & (t["status"] == "ok")]
            j = a.merge(b, on="config", suffixes=("_a", "_b")).set_index("config")
            if j.empty:
                continue
            r = j["median_ms_b"] / j["median_ms_a"]
            ba, bb = j["median_ms_a"].idxmin(), j["median_ms_b"].idxmin()
            lines.append(f"| {m} | {dt} | {len(j)} | {r.median():.3f} | {r.quantile(0.1):.3f}-{r.quantile(0.9):.3f} | "
                         f"{100 * (np.abs(np.log(r)) < np.log(1.05)).mean():.0f} % | `{ba}` | `{bb}` | "
                         f"{j.loc[ba, 'median_ms_b'] / j.loc[bb, 'median_ms_b']:.3f} |")
    return lines


def judge(t: pd.DataFrame, m: str, dt: str, ranked: pyspmv.Ranking) -> dict:
    """The pick of ``ranked`` judged by the measured times of matrix m (ok rows only)."""
    d = t[(t["matrix"] == m) & (t["dtype"] == dt) & (t["status"] == "ok")].reset_index(drop=True)
    score = dict(ranked)
    s = np.array([score.get(c, np.inf) for c in d["config"]])
    per = ranking(s, d["median_ms"], np.zeros(len(d)), d["config"], d["q25_ms"], d["q75_ms"]).iloc[0]
    top = ranked.best
    base = d.set_index("config").loc[BASELINE]
    pk = d.set_index("config").loc[per["pick"]]
    extra = 0.0 if per["pick"] == BASELINE else max(0.0, (pk["convert_ms"] + pk["upload_ms"])
                                                   - (base["convert_ms"] + base["upload_ms"]))
    return {"pick": per["pick"], "best": per["best"], "ratio": per["ratio"], "slowdown": per["slowdown"],
            "ranked_first_measured": top == per["pick"], "speedup_vs_baseline": base["median_ms"] / per["t_pick"],
            "gain_ms": base["median_ms"] - per["t_pick"], "extra_convert_ms": extra}


def summary_lines(df: pd.DataFrame) -> list[str]:
    lines = md_header(["dtype", "mode", "within 5 %", "beyond 20 %", "geomean t_pick / t_best",
                       "geomean speedup over cuSPARSE CSR default", "median break-even (products)", "n"], "llrrrrrr")
    for (dt, mode), d in df.groupby(["dtype", "mode"], sort=False):
        lines.append(f"| {dt} | {mode} | {100 * (d['slowdown'] < 0.05).mean():.1f} % | "
                     f"{100 * (d['slowdown'] > 0.20).mean():.1f} % | {np.exp(np.log(d['ratio']).mean()):.3f} | "
                     f"{np.exp(np.log(d['speedup_vs_baseline']).mean()):.3f} | {np.median(d['break_even']):.3g} | {len(d)} |")
    return lines


def training_effect(folder: str, dataset: str, new: list[str]) -> list[str]:
    """Would the default model kind, trained with the new matrices too, pick better?  (a) On the new matrices, in 5
    folds of them: trained on the whole dataset (the shipped default's data) against the dataset plus the other
    folds. (b) On the dataset's held-out 25 % (split by matrix, seed 0): trained on its other 75 % against those and
    every new matrix."""
    def per(m: object, X: pd.DataFrame, y: np.ndarray, g: np.ndarray, q25: np.ndarray, q75: np.ndarray) -> pd.DataFrame:
        return ranking(m.rank_scores(X), y, unit_key(g, X["value_bytes"]), X["config"].astype(str).to_numpy(), q25, q75)

    def cells(p: pd.DataFrame) -> str:
        return (f"{100 * (p['slowdown'] < 0.05).mean():.1f} % | {100 * (p['slowdown'] > 0.20).mean():.1f} % | "
                f"{np.exp(np.log(p['ratio']).mean()):.3f} | {len(p)}")

    lines = md_header(["dtype", "judged on", "trained on", "within 5 %", "beyond 20 %", "geomean", "n"], "lllrrrr")
    folds = np.array_split(np.random.default_rng(0).permutation(new), 5)
    for dt in DTYPES:
        H, B = datasets.load(dataset, dtype=dt), datasets.load(folder, dtype=dt)
        gH, yH, qH = np.asarray(H.groups), np.asarray(H.y), (np.asarray(H.q25), np.asarray(H.q75))
        k = np.isin(np.asarray(B.groups), new)
        XB, gB, yB = B.X[k].reset_index(drop=True), np.asarray(B.groups)[k], np.asarray(B.y)[k]
        qB = (np.asarray(B.q25)[k], np.asarray(B.q75)[k])
        whole = make_model("forest").fit(H.X, yH, groups=gH)
        a, b = [], []
        for f in folds:
            te = np.isin(gB, f)
            m = make_model("forest").fit(pd.concat([H.X, XB[~te]], ignore_index=True), np.r_[yH, yB[~te]],
                                         groups=np.r_[gH, gB[~te]])
            args = (XB[te].reset_index(drop=True), yB[te], gB[te], qB[0][te], qB[1][te])
            a.append(per(whole, *args))
            b.append(per(m, *args))
        lines.append(f"| {dt} | the new matrices (5 folds) | datasets/{dataset} | {cells(pd.concat(a))} |")
        lines.append(f"| {dt} | the new matrices (5 folds) | datasets/{dataset} + the other folds | {cells(pd.concat(b))} |")
        tr, te = split_by_matrix(gH)
        Xte = H.X.iloc[te].reset_index(drop=True)
        args = (Xte, yH[te], gH[te], qH[0][te], qH[1][te])
        m0 = make_model("forest").fit(H.X.iloc[tr], yH[tr], groups=gH[tr])
        m1 = make_model("forest").fit(pd.concat([H.X.iloc[tr], XB], ignore_index=True), np.r_[yH[tr], yB],
                                      groups=np.r_[gH[tr], gB])
        lines.append(f"| {dt} | datasets/{dataset}'s held-out 25 % | its other 75 % | {cells(per(m0, *args))} |")
        lines.append(f"| {dt} | datasets/{dataset}'s held-out 25 % | its other 75 % + every new matrix | "
                     f"{cells(per(m1, *args))} |")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder", nargs="?", default="h100_large")
    ap.add_argument("--dataset", default="h100")
    ap.add_argument("--machine", default=f"2-core dev VM ({device_info('cpu')['processor']}), no GPU")
    ap.add_argument("--out", type=Path, default=HERE / "unseen_large_h100.md")
    a = ap.parse_args()
    new = datasets.load(a.folder, dtype=None)
    model = train(a.dataset, verbose=0)
    t, feats = new.table, new.features.set_index("matrix")
    ref = datasets.load(a.dataset, dtype=None).table
    seen = sorted(set(t["matrix"]) & set(ref["matrix"]))
    entries = {e.name: e for e in datasets.standard_corpus()}
    todo = sorted(set(t["matrix"]) - set(seen), key=lambda m: entries[m].nnz)
    gpu = new.metadata["device_info"]["gpu_name"]
    nnz_ref = datasets.load(a.dataset, dtype="float64").features.set_index("matrix")["nnz"]
    rows = []
    for m in todo:
        M = entries[m].build()
        f = pyspmv.features(M)
        got = feats.loc[m, list(pyspmv.FEATURE_NAMES)].to_numpy(float)
        now = np.array([f[k] for k in pyspmv.FEATURE_NAMES], dtype=float)
        if not np.allclose(got, now, rtol=1e-9, equal_nan=True):
            raise SystemExit(f"{m}: the features built here differ from the collection's; not the same matrix")
        reps = max(5, reps_for(M.nnz) // 4)
        prod = product_us(M, reps)
        for dt in DTYPES:
            for mode, est in (("exact", False), ("estimated", True)):
                us = timed(lambda M=M, dt=dt, est=est: pyspmv.rank(M, model, dtype=dt, estimate=est), reps)
                r = judge(t, m, dt, pyspmv.rank(M, model, dtype=dt, estimate=est))
                be = (us / 1e3 + r["extra_convert_ms"]) / r["gain_ms"] if r["gain_ms"] > 0 else np.inf
                rows.append({"matrix": m, "nnz": M.nnz, "dtype": dt, "mode": mode, "rank_us": us, "product_us": prod,
                             "break_even": be, **r})
                print(f"{m} {M.nnz:,} {dt} {mode}: {r['pick']} ratio {r['ratio']:.3f} rank {us:.0f} us "
                      f"({us / prod:.2f} products) break-even {be:.3g}", flush=True)
        del M
    df = pd.DataFrame(rows)
    big = int((nnz_ref > df["nnz"].min()).sum())
    df.to_csv(a.out.with_suffix(".csv"), index=False)
    per = md_header(["matrix", "nnz", "dtype", "pick (exact)", "best", "t_pick / t_best", "× cuSPARSE default",
                     "rank() µs", "products", "break-even", "estimated: pick", "t_pick / t_best"], "lrlllrrrrrlr")
    for (m, dt), d in df.groupby(["matrix", "dtype"], sort=False):
        x, e = d[d["mode"] == "exact"].iloc[0], d[d["mode"] == "estimated"].iloc[0]
        per.append(f"| {m} | {x['nnz']:,} | {dt} | `{x['pick']}` | `{x['best']}` | {x['ratio']:.3f} | "
                   f"{x['speedup_vs_baseline']:.2f} | {x['rank_us']:.3g} | {x['rank_us'] / x['product_us']:.2f} | "
                   f"{x['break_even']:.3g} | `{e['pick']}` | {e['ratio']:.3f} |")
    text = [
        "# The shipped cuda default on larger matrices it never saw", "",
        (f"`python studies/2026-11-24-unseen-large/unseen_large.py {a.folder}`: {len(todo)} standard-corpus matrices of "
         f"{df['nnz'].min():.2g}-{df['nnz'].max():.2g} entries measured on the {gpu} (`pyspmv collect`, as "
         f"datasets/{a.dataset}'s large matrices) and absent from datasets/{a.dataset}, of whose matrices "
         f"{big} have more than {df['nnz'].min():.2g} entries; ranked by `pyspmv.rank` with the default recipe fitted on "
         f"datasets/{a.dataset} alone ({model.source.split('(')[0]}; the shipped default before these matrices joined its "
         f"training) on the {a.machine}. "
         "Ties: a pick whose q25 is at most the best's q75 counts as the best. Break-even: products after which rank() "
         "(timed here) and the pick's conversion and upload beyond cuSPARSE CSR default's (measured on the H100's host) "
"are paid back by its gain; inf where the pick is not faster."), "",
        "## Summary", "", *summary_lines(df), "",
        "## Per matrix", "", *per, "",
        "## Would training on them help?", "",
        ("The default model kind (`make_model('forest')`, as `pyspmv train-default`) fitted with and without the new "
         "matrices, judged by measured times as above (scores from the design rows of the collection, as "
         "`pyspmv.evaluate`; the first row reproduces the exact picks above)."), "",
        *training_effect(a.folder, a.dataset, todo), "",
        "## The same matrix measured twice", "",
        (f"Matrices of the collection that datasets/{a.dataset} already has, measured again on another day (and host): "
         "each configuration's median against the dataset's."), "", *repeat_lines(t, ref, seen), "",
    ]
    a.out.write_text("\n".join(text))
    print("\n".join(summary_lines(df)))


if __name__ == "__main__":
    main()
