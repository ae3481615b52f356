"""Design rows and rank() cost against one single-thread CSR product, exact and estimated, and what the
estimated mode (rank(estimate=True): spmv_design_rows_estimate) costs in ranking quality.

    python studies/2026-11-24-estimated-ranking/estimate.py [--corpus ../shared/corpus] [--min-nnz 1e5] [--max-nnz 3e7]
                                  [--out studies/2026-11-24-estimated-ranking/estimate.md]

Cost: generated matrices of 1e3 to 1e7 entries (2-D 5-point Laplacians and uniform random ones); each
time is the median of many time.perf_counter calls (Python call included) divided by the median of
single-thread ``cpu/csr/rows`` products of the same matrix (``_core.mv``, OMP_NUM_THREADS=1 for the whole
run, so the design rows run on one thread too). Estimated with rank.ESTIMATE_ROWS and rank.ESTIMATE_NNZ.

Quality: the default models of both devices (the shipped ones, whatever their kind) rank every matrix of
datasets/h100 and datasets/cpu with ``--min-nnz`` to ``--max-nnz`` entries that can be rebuilt here (the real
ones of ``--corpus``, the standard generated corpus and its scaled-up real matrices) exactly and estimated
with each sample budget of BUDGETS (rows, entries; entries 0: rows only); each pick (the first ranked
configuration with a measured time) is scored by its measured time over the matrix's best measured time,
by size band. Where a budget's sample would be half of the matrix or more the estimate is the exact path,
as in rank(). Then each feature's relative error, estimated (rank's budgets) against exact, over those
matrices.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os

os.environ["OMP_NUM_THREADS"] = "1"

import argparse
import math
import platform
import statistics
import sys
import time
from pathlib import Path

import numpy as np
import scipy.sparse as sp

import pyspmv
from pyspmv import _core, datasets
from pyspmv.ranking.rank import _prepared, default_model

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/_common.py
from _common import md_header, md_row

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
RANK = sys.modules["pyspmv.ranking.rank"]  # the module (pyspmv.rank is the function)
#: Sample budgets compared: (rows, entries; 0: rows only).
BUDGETS = ((16384, 0), (16384, 131072), (16384, 65536), (16384, 32768))
#: The datasets whose measured times score the picks, and the device each ranks for.
TABLES = {"h100": "cuda", "cpu": "cpu"}
#: Size bands of the quality table, in stored entries.
BANDS = (1e5, 3e5, 1e6, 4e6, 1e7)
MACHINE = "2-core AMD EPYC dev VM, no GPU"


def median_s(f, budget: float = 0.3, lo: int = 5, hi: int = 2000) -> float:
    f()
    t, start = [], time.perf_counter()
    while len(t) < hi and (len(t) < lo or time.perf_counter() - start < budget):
        a = time.perf_counter()
        f()
        t.append(time.perf_counter() - a)
    return statistics.median(t)


def laplacian(k: int) -> sp.csr_matrix:
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k))
    A = sp.kronsum(T, T, format="csr")
    A.sort_indices()
    return A


def uniform(n: int, nnz: int) -> sp.csr_matrix:
    rng = np.random.default_rng(1)
    A = sp.csr_matrix(sp.random_array((n, n), density=nnz / (n * n), format="csr", random_state=rng))
    A.sum_duplicates()
    A.sort_indices()
    return A


def cost_rows() -> list[str]:
    p = _prepared(default_model("cuda"), "float64")
    out = md_header(["matrix", "nnz", "1-thread CSR product (us)", "exact rows", "exact rank()", "estimated rows",
                     "estimated rank()"], "lrrrrrr")
    cases = [("laplace2d", k) for k in (16, 45, 142, 447, 1414)] + [("uniform", n) for n in (100, 1000, 10_000,
                                                                                          100_000, 1_000_000)]
    for kind, k in cases:
        A = laplacian(k) if kind == "laplace2d" else uniform(k, 10 * k)
        M = pyspmv.Matrix(A)
        st = _core.convert(0, 0, 0, 0.0, M.nrows, M.ncols, M.indptr, M.indices, np.ones(M.nnz))
        x, y = np.ones(M.ncols), np.zeros(M.nrows)
        tmv = median_s(lambda st=st, x=x, y=y: _core.mv(st, 0, x, y))
        args = (p.capsule, M.nrows, M.ncols, M.indptr, M.indices, 8)
        t = [median_s(lambda a=args: _core.core_rows(*a)),
             median_s(lambda M=M: pyspmv.rank(M, estimate=False)),
             median_s(lambda a=args: _core.core_rows(*a, RANK.ESTIMATE_ROWS, RANK.ESTIMATE_NNZ)),
             median_s(lambda M=M: pyspmv.rank(M, estimate=True))]
        out.append(md_row([f"{kind} {M.nrows} rows", f"{M.nnz:.2g}", f"{tmv * 1e6:.1f}",
                           *(f"{v / tmv:.2f} ({v * 1e6:.0f} us)" for v in t)]))
        print(out[-1], flush=True)
    return out


def matrices(corpus: Path, min_nnz: float, max_nnz: float, names: set[str]):
    entries = datasets.standard_corpus(max_nnz=max_nnz, min_nnz=min_nnz, seed=0,
                                       real=corpus if corpus.is_dir() else None)
    if corpus.is_dir():
        entries += [e for e in datasets.folder_corpus(corpus) if min_nnz <= e.nnz <= max_nnz]
    for e in sorted(entries, key=lambda e: e.nnz):
        if e.name in names:
            yield e.name, e.build()


def band(nnz: int) -> str:
    lo = next((b for b in reversed(BANDS) if nnz >= b), BANDS[0])  # a corpus entry's nnz is approximate
    hi = next((b for b in BANDS if b > lo), None)
    return f"{lo:.0e} - {hi:.0e}" if hi else f">= {lo:.0e}"


def label(b: tuple[int, int]) -> str:
    return f"{b[0]} rows" + (f", {b[1]} entries" if b[1] else "")


def quality(corpus: Path, min_nnz: float, max_nnz: float) -> list[str]:
    out: list[str] = []
    names = list(_core.design_columns())[:len(_core.feature_names())]
    budget = (RANK.ESTIMATE_ROWS, RANK.ESTIMATE_NNZ)
    errs: dict[str, list[float]] = {f: [] for f in names}
    keys = ["exact", *BUDGETS]
    exact_path: list[bool] = []     # per matrix: the estimate took the exact path (its rows equal exact's)
    times, res, same = {}, {}, {}        # per table: measured ms; band -> key -> t_pick / t_best; same picks
    for table in TABLES:
        ds = datasets.load(table, dtype="float64")
        t = ds.X[["config"]].assign(matrix=ds.groups.to_numpy(), ms=ds.y.to_numpy())
        times[table] = {m: dict(zip(g["config"], g["ms"], strict=True)) for m, g in t.dropna().groupby("matrix")}
        res[table], same[table] = {}, {}
    p = _prepared(default_model("cuda"), "float64")
    for name, M in matrices(corpus, min_nnz, max_nnz, set().union(*times.values())):
        args = (p.capsule, M.nrows, M.ncols, M.indptr, M.indices, 8)
        fe, fs = _core.core_rows(*args)[:len(names)], _core.core_rows(*args, *budget)[:len(names)]
        exact_path.append(bool(np.array_equal(fe, fs)))
        for f, a, b in zip(names, fe, fs, strict=True):
            errs[f].append(abs(b - a) / max(abs(a), 1e-300) if a != b else 0.0)
        for table, device in TABLES.items():
            meas = times[table].get(name)
            if meas is None:
                continue
            best = min(meas.values())

            def pick(r, meas=meas):
                return next((c for c, _ in r if c in meas), None)
            ex = pick(pyspmv.rank(M, device=device, estimate=False))
            if ex is None:
                continue
            bd = band(M.nnz)
            r = res[table].setdefault(bd, {k: [] for k in keys})
            sm = same[table].setdefault(bd, {k: 0 for k in BUDGETS})
            r["exact"].append(meas[ex] / best)
            for b in BUDGETS:
                RANK.ESTIMATE_ROWS, RANK.ESTIMATE_NNZ = b
                es = pick(pyspmv.rank(M, device=device, estimate=True))
                r[b].append(meas[es] / best)
                sm[b] += es == ex
            RANK.ESTIMATE_ROWS, RANK.ESTIMATE_NNZ = budget
        print(name, M.nnz, flush=True)
    for table, device in TABLES.items():
        out += [(f"\n**{table}** (device {device}, float64, default model "
                 f"{default_model(device).source.split('(')[0]}): matrices of the dataset rebuilt here, by stored "
                 "entries.\n"),
                *md_header(["entries", "matrices", "sample", "within 5 % of best", "beyond 20 %",
                            "geomean t_pick / t_best", "same pick as exact"], "lrlrrrr")]
        for bd in sorted(res[table], key=lambda s: float(s.split()[-1] if s[0] == ">" else s.split()[0])):
            for key, v in res[table][bd].items():
                a = np.array(v)
                sp_ = "" if key == "exact" else f"{same[table][bd][key] / len(a):.0%}"
                out.append(f"| {bd} | {len(a)} | {'exact' if key == 'exact' else label(key)} | "
                           f"{np.mean(a < 1.05):.1%} | {np.mean(a > 1.2):.1%} | {math.exp(np.mean(np.log(a))):.4f} "
                           f"| {sp_} |")
    out += ["", f"### Relative error of each estimated feature ({label(budget)}), every matrix above", "",
            (f"With rank()'s budget the estimate took the exact path for {sum(exact_path)} of the {len(exact_path)} "
             "matrices (a sample of half the matrix or more, or a block of 256 rows holding more than twice the "
             "entries of the fullest sampled one: the sample missed long rows)."), "",
            "|estimated - exact| / |exact| per matrix (0 where equal); only features that differ somewhere.", "",
            *md_header(["feature", "median", "90th percentile", "max", "matrices off by > 10 %"], "lrrrr")]
    for f in sorted(names, key=lambda f: (-np.quantile(errs[f], 0.9), -np.mean(errs[f])) if errs[f] else (0, 0)):
        e = np.array(errs[f])
        if e.size and e.max() > 0:
            out.append(f"| {f} | {np.median(e):.3g} | {np.quantile(e, 0.9):.3g} | {e.max():.3g} | "
                       f"{np.mean(e > 0.1):.0%} |")
    print("\n".join(out), flush=True)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    ap.add_argument("--min-nnz", type=float, default=1e5)
    ap.add_argument("--max-nnz", type=float, default=3e7)
    ap.add_argument("--out", type=Path, default=HERE / "estimate.md")
    a = ap.parse_args()
    lines = ["# Design rows and rank(): exact and estimated", "",
             (f"Machine: {MACHINE} ({platform.processor() or platform.machine()}); a shared machine (other "
              "engineers' jobs on the same 2 cores), so times are medians of many runs and still noisy. "
              f"OMP_NUM_THREADS=1. Made by `python studies/2026-11-24-estimated-ranking/estimate.py --min-nnz {a.min_nnz:g} "
              f"--max-nnz {a.max_nnz:g}` with the corpus `{a.corpus.parent.name}/{a.corpus.name}` "
              f"({'found' if a.corpus.is_dir() else 'missing: generated matrices only'})."), "",
             "## Cost, in single-thread `cpu/csr/rows` products of the same matrix (default cuda model, float64)",
             "", (f"Estimated: at most {RANK.ESTIMATE_ROWS} rows and {RANK.ESTIMATE_NNZ} entries "
                  "(`pyspmv.ranking.rank.ESTIMATE_ROWS`, `ESTIMATE_NNZ`). rank() includes the model's evaluation and the sort."),
             ""]
    lines += cost_rows()
    lines += ["", "## Ranking quality of the estimated mode", ""]
    lines += quality(a.corpus, a.min_nnz, a.max_nnz)
    a.out.write_text("\n".join(lines) + "\n")
    print(f"wrote {a.out}")


if __name__ == "__main__":
    main()
