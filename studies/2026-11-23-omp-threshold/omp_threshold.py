"""When the CPU kernels should start their OpenMP threads: products of real matrices of 1,500 to 80,000
stored entries, built with one value of ``SPMV_OMP_MIN_WORK`` against another, in the same session.

The threshold is a compile-time constant of the C core (``csrc/spmv_internal.h``); each value is a build
of its own, installed beside the working one, and this script runs once per build:

    for T in 20000 4000; do
        pip install --no-deps --no-build-isolation --target /tmp/thr$T . \\
            -Csetup-args=-Dcuda=disabled "-Csetup-args=-Dc_args=-DSPMV_OMP_MIN_WORK=$T"
    done
    for rep in 1 2; do for T in 20000 4000; do      # alternating, so that a drift hits both
        PYTHONPATH=/tmp/thr$T python -P studies/2026-11-23-omp-threshold/omp_threshold.py time ../shared/corpus out/t${T}_$rep.csv
    done; done
    python studies/2026-11-23-omp-threshold/omp_threshold.py compare --old out/t20000_1.csv out/t20000_2.csv \\
        --new out/t4000_1.csv out/t4000_2.csv --machine "..." --out studies/2026-11-23-omp-threshold/omp_threshold.md

(With pyspmv installed in editable mode, its import hook wins over ``PYTHONPATH``: run ``time`` with
``python -S`` and the site-packages folder on ``PYTHONPATH``; ``time`` prints which build it imported.)

``time``: every CPU configuration, float64, on every square matrix of the folder with 1,500 to 80,000
stored entries (a spread of at most 40, evenly by size), ``pyspmv.benchmark`` with 200 repeats and a
0.05 s budget; one CSV row per (matrix, configuration). ``compare``: per format and size band, the
geometric mean of old / new (each side the geometric mean of its runs), the worst matrix, and the run-
to-run ratio of the old build's two runs (the noise); then the best configuration per matrix, old / new.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import pyspmv

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/_common.py
from _common import md_header, md_row

BANDS = [1500, 4000, 8000, 20000, 40000, 80001]


def time_build(folder: Path, out: Path) -> None:
    sel = []
    for f in sorted(folder.glob("*.mtx*")):
        try:
            A = pyspmv.load(f)
        except (ValueError, OSError):
            continue
        if BANDS[0] <= A.nnz < BANDS[-1] and A.nrows == A.ncols:
            sel.append(A)
    sel = sorted(sel, key=lambda A: A.nnz)[::max(1, len(sel) // 40)]
    ids = [c.id for c in pyspmv.configs("cpu")]
    rows = []
    for A in sel:
        df = pyspmv.benchmark(A, ids, device="cpu", dtype="float64", repeats=200, warmup=10, budget_s=0.05,
                              check=False, progress=False)
        for r in df.itertuples():
            rows.append({"matrix": A.name, "nnz": A.nnz, "config": r.config,
                         "ms": r.median_ms if r.status == "ok" else np.nan})
    pd.DataFrame(rows).to_csv(out, index=False)
    print(f"{len(sel)} matrices with the build in {Path(pyspmv.__file__).parent}")


def _gmean(s: pd.Series) -> float:
    s = s.dropna()
    return float(np.exp(np.log(s).mean())) if len(s) else float("nan")


def _side(paths: list[Path]) -> pd.Series:
    runs = [pd.read_csv(p).set_index(["matrix", "config"])["ms"] for p in paths]
    return np.exp(sum(np.log(r) for r in runs) / len(runs))


def compare(old: list[Path], new: list[Path], machine: str, out: Path, labels: tuple[str, str]) -> None:
    first = pd.read_csv(old[0]).set_index(["matrix", "config"])
    m = pd.DataFrame({"old": _side(old), "new": _side(new), "nnz": first["nnz"]})
    m["noise"] = (pd.read_csv(old[0]).set_index(["matrix", "config"])["ms"]
                  / pd.read_csv(old[-1]).set_index(["matrix", "config"])["ms"])
    m = m.reset_index()
    m["format"] = m["config"].str.split("/").str[1]
    m["band"] = pd.cut(m["nnz"], BANDS, right=False)
    lines = [f"Machine: {machine}. `{' '.join(sys.argv)}`", "",
             (f"old = {labels[0]}, new = {labels[1]}; old / new > 1: the new build is faster. Noise: the old "
              "build's first run over its last, same matrices."), ""]
    lines += md_header(["format", "entries", "products", "old / new (geomean)", "worst", "noise (geomean)"])
    for (fmt, band), d in m.groupby(["format", "band"], observed=True):
        r = d["old"] / d["new"]
        if r.notna().any():
            lines.append(md_row([fmt, f"{band.left:,}-{band.right - 1:,}", int(r.notna().sum()), f"{_gmean(r):.2f}",
                                 f"{r.min():.2f}", f"{_gmean(d['noise']):.2f}"]))
    best = m.groupby("matrix").agg(old=("old", "min"), new=("new", "min"), nnz=("nnz", "first"))
    lines += ["", "Best configuration per matrix (fastest of each build), old / new:", ""]
    lines += md_header(["entries", "matrices", "old / new (geomean)"])
    for band, d in best.groupby(pd.cut(best["nnz"], BANDS, right=False), observed=True):
        lines.append(md_row([f"{band.left:,}-{band.right - 1:,}", len(d), f"{_gmean(d['old'] / d['new']):.2f}"]))
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a", encoding="utf-8") as f:
        f.write("\n".join(lines) + "\n\n")
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("time")
    t.add_argument("folder", type=Path)
    t.add_argument("out", type=Path)
    c = sub.add_parser("compare")
    c.add_argument("--old", type=Path, nargs="+", required=True)
    c.add_argument("--new", type=Path, nargs="+", required=True)
    c.add_argument("--labels", nargs=2, default=("SPMV_OMP_MIN_WORK 20000", "4000"))
    c.add_argument("--machine", required=True)
    c.add_argument("--out", type=Path, required=True, help="markdown file the table is appended to")
    a = ap.parse_args()
    if a.cmd == "time":
        time_build(a.folder, a.out)
    else:
        compare(a.old, a.new, a.machine, a.out, tuple(a.labels))


if __name__ == "__main__":
    main()
