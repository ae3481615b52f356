"""Solvers that choose their SpMV while they run: each policy of pyspmv.solvers against a ``fixed``
``cpu/csr/rows`` solve, on the real SPD and unsymmetric matrices of Matrix Market folders.

    python benchmarks/solvers.py [--matrices DIR] [--corpus DIR] [--repeats 5] [--min-time 0.25] [--rtol 1e-8]
                                 [--max-products 500] [--max-nnz 3e6] [--machine "2-core VM"]
                                 [--out benchmarks/results/solvers] [--limit N]

Matrices (``pyspmv.load``; a folder's MANIFEST.csv, where present, drops ``pattern`` files): square,
real, finite, at least 100 rows. Symmetric with a positive diagonal: CG ("spd"; positive definiteness
is presumed, not proven: a breakdown shows in ``info``). Not symmetric: BiCGSTAB and GMRES(30).
Symmetric with a zero or negative diagonal: skipped (indefinite). Right-hand side ``A @ ones``
(scaled to unit norm), ``x0 = 0``, float64, ``rtol``; ``maxiter`` caps each solve at about
``--max-products`` products (a solve that reaches it still compares policies on the same work).

Per (matrix, solver): one untimed solve first (the model is loaded, caches warm), then ``--repeats``
rounds (more for short solves: until the fixed solves add up to ``--min-time`` seconds, at most
``--max-repeats`` rounds, since a sub-millisecond solve varies by several per cent from run to run),
each running every policy once, in an order drawn at random per round (seeded), each timed end to end
(``time.perf_counter`` around the call: checks, conversion, ranking and iterations; a solve returns
only once its selection thread has, so none loads the next).
Columns: median, min and max seconds of the repeats; ``speedup`` = median(fixed) / median(policy).
Each policy's final configuration is also compared with every CPU configuration measured by
``pyspmv.benchmark`` (``t_final / t_best``, per product).

The file also times the vector operations the solvers could use (BLAS via scipy.linalg.blas against
NumPy ufuncs and ``np.dot``) at the matrices' sizes: the solvers use BLAS.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import csv
import datetime
import math
import os
import time
import timeit
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import scipy
from _md import md_header, md_row, md_table, provenance
from scipy.linalg import blas
from threadpoolctl import threadpool_limits

import pyspmv
import pyspmv.solvers as S

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared"
POLICIES = S.POLICIES
params = [list(POLICIES)]                # asv-style grid description
param_names = ["policy"]


def files(folder: Path) -> list[Path]:
    """Matrix Market files of ``folder`` that MANIFEST.csv (where present) does not mark ``pattern``."""
    skip: set[str] = set()
    man = folder / "MANIFEST.csv"
    if man.is_file():
        with open(man, newline="", encoding="utf-8") as f:
            skip = {r["name"] for r in csv.DictReader(f) if r.get("field") == "pattern"}
    out = [p for p in folder.glob("*.mtx*") if p.name.split(".")[0] not in skip]
    return sorted(out, key=lambda p: p.stat().st_size)


def classify(A: pyspmv.Matrix) -> str | None:
    """``'spd'``, ``'unsymmetric'`` or None (skipped)."""
    if A.nrows != A.ncols or A.nrows < 100 or not np.isfinite(A.data).all():
        return None
    S_ = A.to_scipy()
    diag = S_.diagonal()
    if abs(S_ - S_.T).max() == 0:
        return "spd" if (diag > 0).all() else None
    return "unsymmetric"


def solve(fn: Any, A: pyspmv.Matrix, b: np.ndarray, rtol: float, maxiter: int, policy: str,
          extra: dict[str, Any]) -> tuple[float, S.SolveRecord]:
    t = time.perf_counter()
    _x, _info, rec = fn(A, b, rtol=rtol, maxiter=maxiter, policy=policy, **extra)
    return time.perf_counter() - t, rec


def product_times(A: pyspmv.Matrix) -> dict[str, float]:
    """Median ms of one product with every CPU configuration that can serve ``A``."""
    df = pyspmv.benchmark(A, pyspmv.configs("cpu"), device="cpu", dtype="float64", repeats=50, warmup=3,
                          budget_s=0.1, check=False, progress=False)
    ok = df[df.status == "ok"]
    return dict(zip(ok.config, ok.median_ms, strict=True))


def run_matrix(A: pyspmv.Matrix, kind: str, args: argparse.Namespace) -> list[dict[str, Any]]:
    n = A.nrows
    b = A.to_scipy() @ np.ones(n)
    b /= np.linalg.norm(b)
    cases = [("cg", S.cg, {}, args.max_products)] if kind == "spd" else [
        ("bicgstab", S.bicgstab, {}, max(1, args.max_products // 2)),
        ("gmres", S.gmres, {"restart": 30}, max(1, args.max_products // 31))]
    best = product_times(A)
    t_best = min(best.values()) if best else math.nan
    rows = []
    for name, fn, extra, maxiter in cases:
        solve(fn, A, b, args.rtol, maxiter, "online", extra)          # untimed: model loaded, caches warm
        times: dict[str, list[float]] = {p: [] for p in POLICIES}
        recs: dict[str, S.SolveRecord] = {}
        rng = np.random.default_rng(0)
        rounds = 0      # at least --repeats; short solves repeat until fixed has run --min-time seconds
        while rounds < args.repeats or (sum(times["fixed"]) < args.min_time and rounds < args.max_repeats):
            rounds += 1
            # A random order per round: a rotation keeps the cyclic order, so a policy mostly follows
            # the same one and inherits its after-effects (on the Xeon, async, right after serial in
            # three rounds of four, ran 5-17 % slower than fixed on the smallest solves, where its code
            # path is fixed's; fixed never followed serial).
            for p in map(str, rng.permutation(POLICIES)):
                t, recs[p] = solve(fn, A, b, args.rtol, maxiter, p, extra)
                times[p].append(t)
        fixed = float(np.median(times["fixed"]))
        for p in POLICIES:
            rec, ts = recs[p], np.array(times[p])
            rows.append({
                "matrix": A.name, "kind": kind, "nrows": n, "nnz": A.nnz, "solver": name, "policy": p,
                "median_s": float(np.median(ts)), "min_s": float(ts.min()), "max_s": float(ts.max()),
                "spread": float((ts.max() - ts.min()) / np.median(ts)), "runs": len(ts),
                "speedup": fixed / float(np.median(ts)), "info": rec.info, "iterations": rec.iterations,
                "products": rec.products, "config": rec.config, "schedule": "; ".join(f"{i}:{c}" for i, c in rec.schedule),
                "rank_ms": 1e3 * rec.rank_s, "convert_ms": 1e3 * rec.convert_s, "probe_ms": 1e3 * rec.probe_s,
                "iterations_during_ranking": rec.iterations_during_ranking(),
                "final_vs_best": best.get(rec.config, math.nan) / t_best, "best_config": min(best, key=best.get),
                "events": "; ".join(e for _, e in rec.events)})
    return rows


def vector_ops(sizes: list[int]) -> pd.DataFrame:
    """Microseconds per call of dot and axpy: BLAS (scipy.linalg.blas, on one thread, as the solvers run it)
    against NumPy."""
    rows = []
    for n in sizes:
        x, y, t = np.ones(n), np.ones(n), np.empty(n)
        cases = {"dot blas": lambda x=x, y=y: blas.ddot(x, y), "dot numpy": lambda x=x, y=y: np.dot(x, y),
                 "axpy blas": lambda x=x, y=y: blas.daxpy(x, y, a=1e-9),
                 "axpy numpy": lambda x=x, y=y, t=t: (np.multiply(x, 1e-9, out=t), np.add(y, t, out=y))}
        number = max(5, 200_000 // n)
        for k, f in cases.items():
            rows.append({"n": n, "op": k, "us": 1e6 * min(timeit.repeat(f, number=number, repeat=5)) / number})
    return pd.DataFrame(rows).pivot(index="n", columns="op", values="us").reset_index()


def summary(df: pd.DataFrame) -> list[str]:
    out = md_header(["solver", "policy", "cases", "geomean speedup", "worst", "slower > 5 %", "median spread",
                     "final/best geomean", "final within 5 % of best"])
    for (solver, p), g in df.groupby(["solver", "policy"], sort=False):
        fb = g.final_vs_best.dropna()
        out.append(f"| {solver} | {p} | {len(g)} | {math.exp(np.log(g.speedup).mean()):.3f} | {g.speedup.min():.3f} | "
                   f"{int((g.speedup < 1 / 1.05).sum())} | {g.spread.median():.1%} | "
                   f"{math.exp(np.log(fb).mean()):.3f} | {int((fb <= 1.05).sum())}/{len(fb)} |")
    return out


def command(ap: argparse.ArgumentParser, args: argparse.Namespace) -> str:
    """The command line that reproduces the table: the options that changed what was measured (not
    ``--machine``, paths only where they left the defaults)."""
    parts = ["python benchmarks/solvers.py"]
    for a in ap._actions:
        if a.dest in ("help", "machine", "matrices", "corpus"):
            continue
        v = getattr(args, a.dest)
        if v != a.default:
            v = v.relative_to(ROOT) if isinstance(v, Path) and v.is_relative_to(ROOT) else v
            parts.append(f"{a.option_strings[0]} {v}")
    return " ".join(parts)


def parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--matrices", type=Path, default=SHARED / "matrices")
    ap.add_argument("--corpus", type=Path, default=SHARED / "corpus")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--min-time", type=float, default=0.25, help="seconds of fixed solves to repeat at least")
    ap.add_argument("--max-repeats", type=int, default=200)
    ap.add_argument("--rtol", type=float, default=1e-8)
    ap.add_argument("--max-products", type=int, default=500)
    ap.add_argument("--max-nnz", type=float, default=3e6)
    ap.add_argument("--limit", type=int, default=0, help="at most this many matrices per folder (0: all)")
    ap.add_argument("--machine", default="")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "solvers")
    return ap


def main() -> None:
    ap = parser()
    args = ap.parse_args()
    info = pyspmv.device_info("cpu")
    load_before = os.getloadavg()
    started = datetime.datetime.now().isoformat(timespec="seconds")
    rows: list[dict[str, Any]] = []
    skipped: list[str] = []
    # One BLAS thread throughout, as inside the solvers: otherwise OpenBLAS's threads, woken by the
    # script's own vector work (the right-hand side's norm), spin beside the OpenMP products that
    # product_times() measures (on the 16-core Xeon host, cpu/csr/rows of 200k-entry matrices came out
    # several hundred times slower than inside the solves).
    blas_one = threadpool_limits(1, user_api="blas")
    for folder in (args.matrices, args.corpus):
        if not folder.is_dir():
            print(f"no folder {folder}; skipped")
            continue
        paths = files(folder)
        taken = 0
        for path in paths:
            if args.limit and taken >= args.limit:
                break
            A = pyspmv.load(path, dtype="float64")
            if A.nnz > args.max_nnz:
                continue
            kind = classify(A)
            if kind is None:
                skipped.append(A.name or path.name)
                continue
            taken += 1
            t = time.perf_counter()
            new = run_matrix(A, kind, args)
            rows += new
            print(f"{A.name}: {kind}, {A.nnz} stored, {time.perf_counter() - t:.1f} s; "
                  + ", ".join(f"{r['solver']}/{r['policy']} {r['speedup']:.2f}" for r in new), flush=True)
    df = pd.DataFrame(rows)
    sizes = sorted({int(10 ** k) for k in np.linspace(3, math.log10(max(df.nrows.max(), 1e3)), 4).round()})
    vec = vector_ops(sizes)
    blas_one.restore_original_limits()
    load_after = os.getloadavg()
    args.out.parent.mkdir(parents=True, exist_ok=True)
    machine = args.machine or f"{info['processor']}, {info['cpu_count']} cores"
    header = (f"# machine: {machine}; python {info['python']}, numpy {np.__version__}, scipy {scipy.__version__}, "
              f"OMP_NUM_THREADS={info['omp_num_threads'] or 'unset'}; started {started}; load average "
              f"{load_before[0]:.2f} before, {load_after[0]:.2f} after; repeats {args.repeats} (short solves until {args.min_time} s, at most {args.max_repeats}), rtol {args.rtol}, "
              f"max products {args.max_products}")
    with open(args.out.with_suffix(".csv"), "w", encoding="utf-8") as f:
        f.write(header + "\n")
        df.to_csv(f, index=False)
    per = df.pivot_table(index=["matrix", "nnz", "solver"], columns="policy", values="speedup").reset_index()
    per = per.sort_values(["solver", "nnz"])
    lines = ["# Solvers that choose their SpMV while they run", "", provenance(host=machine), "", header.lstrip("# "), "",
             (f"Produced by `{command(ap, args)}` (see its docstring for the method); "
              f"{df.matrix.nunique()} matrices, {len(skipped)} skipped (symmetric indefinite, too small or "
              "not square). `speedup` = median time of the fixed `cpu/csr/rows` solve / the policy's; "
              "`final/best`: product time of the configuration a solve ended on / the fastest CPU configuration "
              "measured by `pyspmv.benchmark`. Targets (CPU): `async` never more than 5 % slower than `fixed`, "
              "faster in geometric mean; `online` ends within 5 % of the fastest measured configuration."), "",
             *summary(df), "", "## Per matrix (speedup over fixed)", "",
             *md_header(["matrix", "nnz", "solver", *POLICIES])]
    for _, r in per.iterrows():
        lines.append(md_row([r.matrix, r.nnz, r.solver, *(f"{r[p]:.3f}" for p in POLICIES)]))
    cols = list(vec.columns)
    lines += ["", "## Vector operations, µs per call (float64)", "",
              *md_table(cols, ([f"{int(r[c])}" if c == "n" else f"{r[c]:.2f}" for c in cols]
                               for _, r in vec.iterrows()))]
    lines.append("")
    args.out.with_suffix(".md").write_text("\n".join(lines), encoding="utf-8")
    print("\n".join(summary(df)))


if __name__ == "__main__":
    main()
