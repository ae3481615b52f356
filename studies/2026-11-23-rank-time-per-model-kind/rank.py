"""Ranking time per model kind: the C evaluator (exported header), pyspmv.rank() from Python, the
Python models' own prediction (scikit-learn / NumPy), and m2cgen-generated C where m2cgen supports
the estimator.

    python studies/2026-11-23-rank-time-per-model-kind/rank.py [--dataset h100|cpu|PATH] [--machine "2-core dev VM"]
                              [--out studies/2026-11-23-rank-time-per-model-kind/rank.md]

Every model is fitted on the dataset's float64 rows (device from the dataset), exported with
pyspmv.export_c and compiled with ``cc -O2``; a C driver times, per matrix, ``NAME_rank`` (CSR check,
features, the formats' size queries, evaluation of every configuration, sort) and
``spmv_rank_rows`` alone on the precomputed design rows ("model": every configuration evaluated,
then sorted), each the median over
repeated calls (clock_gettime).  "python" is ``pyspmv.rank(A, RankModel)``, "model.predict" the
Python model's ``rank_scores`` on that matrix's design rows (pandas included) and "sklearn" the bare
scikit-learn ``predict`` calls the model makes on already encoded inputs (one call per configuration
for per-configuration estimators).  m2cgen: the same estimators transpiled to C (nested ifs; one
function per estimator), timed on the same encoded inputs; its compile time is reported too.
KNN is also timed over 10,000 synthetic training points (the issue's target) with the fitted
model's weights, inputs and k.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

import pyspmv
from pyspmv import models
from pyspmv.datasets import design_rows
from pyspmv.ranking.rankmodel import Table

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/_common.py
from _common import c_times, cc, md_table, timed

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
SHARED = ROOT.parent / "shared" / "matrices"
KINDS = {"linear": lambda: models.LinearModel(), "boosted": lambda: models.BoostedModel(),
         "boosted_small": lambda: models.BoostedModel(n_estimators=50, max_depth=4),
         "knn": lambda: models.KNNModel(), "svm": lambda: models.SVMModel(), "cascade": lambda: models.CascadeModel(),
         "guo": lambda: models.GuoModel(), "wang": lambda: models.WangModel()}

M2C_DRIVER = r"""
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
@DECLS@
static double now(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec + 1e-9 * t.tv_nsec; }
static int cmp(const void *a, const void *b) { double x = *(const double *)a, y = *(const double *)b; return (x > y) - (x < y); }
static double X[@N@][@D@] = {@ROWS@};
int main(int argc, char **argv) {
    int reps = atoi(argv[1]);
    double *t = malloc(sizeof(double) * (size_t)reps), y[@N@], s = 0;
    X[0][0] += (double)(argc - 2);           /* inputs the compiler cannot fold: argc is 2 */
    for (int r = 0; r < reps; r++) {
        double t0 = now();
@CALLS@
        t[r] = now() - t0;
        for (int k = 0; k < @N@; k++) s += y[k];
        X[r % @N@][0] += 0.0 * s;            /* ... nor hoist out of the loop */
    }
    qsort(t, (size_t)reps, sizeof *t, cmp);
    printf("%.3f %g\n", t[reps / 2] * 1e6, s);
    return 0;
}
"""


def m2cgen_times(estimators: list, inputs: list[np.ndarray], work: Path, reps: int) -> tuple[float, float] | None:
    """m2cgen C of each (estimator, its input rows): total µs for all rows, compile seconds."""
    import m2cgen
    decls, calls, rows, d = [], [], [], inputs[0].shape[1]
    uniq = {id(e): (i, e) for i, e in enumerate(estimators)}
    for i, e in uniq.values():
        try:
            decls.append(m2cgen.export_to_c(e, function_name=f"score{i}"))
        except NotImplementedError as exc:                 # m2cgen 0.10: no GradientBoosting*
            print(f"m2cgen: {exc}", file=sys.stderr)
            return None
    k = 0
    for e, X in zip(estimators, inputs, strict=True):
        i = uniq[id(e)][0]
        for x in X:
            rows.append("{" + ", ".join(repr(float(v)) for v in x) + "}")
            calls.append(f"        y[{k}] = score{i}((double *)X[{k}]);")
            k += 1
    src = (M2C_DRIVER.replace("@DECLS@", "\n".join(decls)).replace("@N@", str(k)).replace("@D@", str(d))
           .replace("@ROWS@", ",\n".join(rows)).replace("@CALLS@", "\n".join(calls)))
    (work / "m2c.c").write_text(src)
    try:
        comp = cc(work / "m2c.c", work / "m2c")
    except RuntimeError as exc:
        print(f"m2cgen C did not compile: {exc}", file=sys.stderr)
        return None
    out = subprocess.run([str(work / "m2c"), str(reps)], capture_output=True, text=True, check=True).stdout.split()
    return float(out[0]), comp


def sklearn_parts(kind: str, m, X) -> tuple[list, list[np.ndarray]] | None:
    """The scikit-learn estimators a model calls on one matrix's rows and their encoded inputs
    (LinearModel: one LinearRegression per group holding its coefficients)."""
    if kind == "linear":
        from sklearn.linear_model import LinearRegression

        from pyspmv.models._common import group_key
        from pyspmv.models.linear import design
        A = design(X)
        gk = group_key(X, m.group_by)
        ests, ins = [], []
        for g in np.unique(gk):
            i = int(np.searchsorted(m.groups_, g))
            lr = LinearRegression()
            lr.coef_, lr.intercept_, lr.n_features_in_ = m.coef_[i].copy(), float(m.intercept_[i]), A.shape[1]
            ests.append(lr)
            ins.append(A[gk == g])
        return ests, ins
    if kind.startswith("boosted"):
        from pyspmv.models.boosted import encode
        E = encode(X, m.categories_)
        keys = np.full(len(X), "*", dtype=object) if m.per == "global" else m._keys(X)
        ests, ins = [], []
        for g in np.unique(keys):
            i = int(np.searchsorted(m.groups_, g))
            ests.append(m.estimators_[i])
            ins.append(E[keys == g])
        return ests, ins
    if kind == "svm":
        from pyspmv.models._common import group_key
        from pyspmv.models.classifiers import _inputs
        Z = (_inputs(X) - m.mean_) / m.scale_
        gk = group_key(X, "config")
        ests, ins = [], []
        for j, g in enumerate(gk):
            i = int(np.searchsorted(m.groups_, g))
            ests.append(m.svrs_[i])
            ins.append(Z[j:j + 1])
        return ests, ins
    if kind == "cascade":
        from pyspmv.models.classifiers import _inputs
        F = _inputs(X.iloc[:1])
        ests = [c for c in m.classifiers_ if c is not None]
        return ests, [F] * len(ests)
    return None


def knn_10k(rm: pyspmv.RankModel, npoints: int = 10_000, seed: int = 0) -> pyspmv.RankModel:
    """The fitted KNN's portable form with its training set replaced by npoints random points."""
    rng = np.random.default_rng(seed)
    tables = {}
    for dt, t in rm.tables.items():
        f = dict(t.spec.fields)
        d, G = f["ninputs"], f["knn.ntargets"]
        f["knn.npoints"] = npoints
        f["knn.set_ptr"] = np.array([0, npoints], np.int32)
        f["knn.points"] = rng.random(npoints * d)
        f["knn.target"] = rng.normal(-4, 1, npoints * G)
        tables[dt] = Table(t.config_ids, t.group, t.extra, type(t.spec)(t.spec.kind, f))
    return pyspmv.RankModel(rm.device, tables, source=rm.source + " (10k synthetic points)", gpu=rm.gpu)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--dataset", default="h100")
    ap.add_argument("--machine", default="2-core dev VM")
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--kinds", nargs="+", default=list(KINDS), choices=list(KINDS))
    ap.add_argument("--no-m2cgen", action="store_true")
    ap.add_argument("--out", default=str(HERE / "rank.md"))
    a = ap.parse_args()
    ds, src = pyspmv.datasets.load(a.dataset, dtype="float64"), a.dataset
    device = min(set(ds.table["device"]))
    cfgs = pyspmv.configs(device)
    mats = [("poisson2d 30x30", pyspmv.generate("poisson2d", 30))]
    if (SHARED / "bcsstk16.mtx.gz").is_file():
        mats.append(("bcsstk16", pyspmv.load(SHARED / "bcsstk16.mtx.gz")))
    else:
        mats.append(("random 20000", pyspmv.generate("random", 20000, seed=1)))
    rows = []
    work = Path(tempfile.mkdtemp())
    for kind in a.kinds:
        t0 = time.perf_counter()
        m = KINDS[kind]().fit(ds.X, ds.y, ds.groups)
        fit_s = time.perf_counter() - t0
        variants = [(kind, pyspmv.portable(m, device, dtypes=("float64",)))]
        if kind == "knn":
            variants.append(("knn, 10k points", knn_10k(variants[0][1])))
        for label, rm in variants:
            nconf = int((rm.table("float64").group >= 0).sum())
            for mname, A in mats:
                rank_us, rows_us, model_us, comp = c_times(rm, A, work, a.reps)
                py_us = timed(lambda A=A, rm=rm: pyspmv.rank(A, rm, device=device), max(20, a.reps // 4))
                r = {"model": label, "configs": nconf, "matrix": mname, "nnz": A.nnz, "C rank": rank_us,
                     "C rows": rows_us, "C model": model_us, "python rank": py_us, "header compile s": comp,
                     "fit s": fit_s}
                if label == kind:
                    X = design_rows(pyspmv.features(A), cfgs, pyspmv.config_features(A, cfgs, dtype="float64"), 8.0)
                    X = X[np.isfinite(X["bytes_moved"].to_numpy())].reset_index(drop=True)
                    r["model.predict"] = timed(lambda X=X, m=m: m.rank_scores(X), 10)
                    parts = sklearn_parts(kind, m, X)
                    if parts:
                        ests, ins = parts
                        r["sklearn"] = timed(lambda ests=ests, ins=ins: [e.predict(x) for e, x in
                                                                         zip(ests, ins, strict=True)], 10)
                        if not a.no_m2cgen and mname == mats[0][0]:
                            mt = m2cgen_times(ests, ins, work, a.reps)
                            if mt:
                                r["m2cgen C"], r["m2cgen compile s"] = mt
                rows.append(r)
                print(r, file=sys.stderr)
    write_table(rows, a, src, device)
    return 0


def write_table(rows: list[dict], a, src: str, device: str) -> None:
    cols = ["model", "configs", "matrix", "nnz", "C model", "C rows", "C rank", "python rank", "model.predict",
            "sklearn", "m2cgen C", "m2cgen compile s", "header compile s", "fit s"]

    def fmt(v):
        if v is None or (isinstance(v, float) and not np.isfinite(v)):
            return ""
        if isinstance(v, float):
            return f"{v:.3g}" if v < 1000 else f"{v:.0f}"
        return str(v)

    lines = [
        "# Ranking time per model kind",
        "",
        (f"`python studies/2026-11-23-rank-time-per-model-kind/rank.py --dataset {a.dataset}` on the {a.machine}, {time.strftime('%Y-%m-%d')}; "
         f"models fitted on {src} (float64 rows, {device} configurations). Times in µs (medians) unless "
         "marked s."),
        "",
        ("- **C model**: `spmv_rank_rows` on the design rows of every configuration (the model's evaluation "
         "and the sort); **C rows**: `spmv_design_rows` (features and every format's size query); **C rank**: the "
         "exported header's `NAME_rank` (CSR check, rows, evaluation, sort), compiled `cc -O2`."),
        "- **python rank**: `pyspmv.rank(A, RankModel)` (one C call through the glue).",
        ("- **model.predict**: the Python model's `rank_scores` on the matrix's design rows (pandas included); "
         "**sklearn**: the bare scikit-learn `predict` calls on encoded inputs (per-configuration SVRs: one "
         "call each; SVM: the SVRs only, while the C model also evaluates each configuration's SVC); **m2cgen C**: the same estimators transpiled by m2cgen 0.10 (nested ifs), all rows, "
         "same inputs, where m2cgen 0.10 supports the estimator: LinearRegression and SVR; it has no "
         "GradientBoosting*, no KNN and no closed-form formulas)."),
        "",
        *md_table(cols, ([fmt(r.get(c)) for c in cols] for r in rows),
                  "".join("l" if c in ("model", "matrix") else "r" for c in cols)),
    ]
    Path(a.out).write_text("\n".join(lines) + "\n")
    print(f"wrote {a.out}", file=sys.stderr)


if __name__ == "__main__":
    sys.exit(main())
