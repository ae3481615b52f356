"""GPU solves that choose their SpMV while they run: ``policy="async"`` against ``fixed`` on
``cusparse/csr/default``, and both against CuPy's own ``cg``/``gmres``, on real matrices and on large
generated and real-structured problems.

    python benchmarks/solvers_gpu.py [--matrices DIR ...] [--generated KIND:SIZE,...] [--scaled FOLDER]
                                     [--rtol 1e-8] [--maxiter 3000] [--repeats 5] [--min-iters 200]
                                     [--out benchmarks/results/solvers_gpu.md]

Real matrices (``--matrices``; ``pyspmv.load``; a folder's MANIFEST.csv, where present, drops ``pattern`` files):
square, real, finite, 1e4 to 5e6 entries. Symmetric with a positive diagonal: CG (positive definiteness presumed; a
breakdown shows in ``info``). Not symmetric: BiCGSTAB and GMRES(30). Large problems, CG alone: ``--generated``
(``pyspmv.generate(kind, size)``: the 2-D and 3-D Poisson stencils, 5e6 to 2.8e7 entries by default), and
``--scaled FOLDER``: the real matrices of FOLDER scaled up by ``pyspmv.datasets.scaled_corpus(FOLDER,
*--scaled-range, per_kind=--scaled-per-kind, seed=--scaled-seed)`` and made symmetric positive definite as
shifted graph Laplacians of their pattern (``D - W + I / 100`` with ``W = |A| + |A|^T`` off the diagonal and ``D``
its row sums): a real matrix's structure, a solve CG can run.
Right-hand side uniform in [-1, 1] (seeded) scaled to unit norm: ``A @ ones`` would be an eigenvector of the
shifted graph Laplacians (CG then ends in one iteration). ``x0 = 0``, float64, ``rtol``; ``maxiter`` iterations
for CG and BiCGSTAB, ``--gmres-cycles`` restart cycles for GMRES (CuPy's ``gmres`` counts inner iterations: it
gets cycles x 30). Solves whose fixed run needs fewer than ``--min-iters`` iterations are left out (the issue's
targets are about solves of 200 iterations and more).

Per (matrix, solver): one untimed round, then ``--repeats`` rounds each running fixed, async and CuPy's solver
once; every solve timed end to end by ``time.perf_counter`` around the call with the device synchronised
after it (pyspmv: upload, conversion, ranking, iterations, the result back as NumPy; CuPy: the matrix
uploaded as ``cupyx.scipy.sparse.csr_matrix`` beforehand, the solve and its result on the device).
A solve counts as slower than fixed where every async round took longer than every fixed one: two equally fast
solvers do so by chance in 1 / C(2r, r) of the solves for r rounds each, 1 in 20 for 3 (about one of a page's 21
solves), 1 in 252 for 5, the default.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import csv
import inspect
import math
import statistics
import time
from pathlib import Path

import numpy as np
from _internal import gpu
from _md import gpu_software, md_table, write_report
from _timing import large_problems

import pyspmv
import pyspmv.datasets
import pyspmv.solvers as S

FIXED = "cusparse/csr/default"


def files(folders: list[str]) -> list[Path]:
    """Matrix Market files of the folders that MANIFEST.csv (where present) does not mark ``pattern``."""
    out = []
    for folder in map(Path, folders):
        skip: set[str] = set()
        man = folder / "MANIFEST.csv"
        if man.exists():
            with man.open() as f:
                skip = {r["name"] for r in csv.DictReader(f) if r.get("field") == "pattern"}
        out += [p for p in sorted(folder.glob("*.mtx*")) if p.name.split(".")[0] not in skip]
    return out


def problems(paths: list[Path]) -> list[tuple[str, object, list[str]]]:
    """(name, scipy CSR, solvers) of the usable matrices."""
    out = []
    for p in paths:
        try:
            M = pyspmv.load(p)
        except (ValueError, OSError):
            continue
        if M.nrows != M.ncols or not 10_000 <= M.nnz <= 5_000_000:
            continue
        A = M.to_scipy().tocsr()
        if not np.isfinite(A.data).all():
            continue
        d = A.diagonal()
        sym = (abs(A - A.T) > 1e-12 * abs(A).max()).nnz == 0
        if sym and (d > 0).all():
            out.append((M.name, A, ["cg"]))
        elif not sym:
            out.append((M.name, A, ["bicgstab", "gmres"]))
    return out


def timed(fn, sync) -> tuple[float, object]:
    t0 = time.perf_counter()
    r = fn()
    sync()
    return time.perf_counter() - t0, r


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--matrices", nargs="*", default=[], help="folders of Matrix Market files")
    ap.add_argument("--generated", default="poisson2d:1000,poisson2d:1400,poisson2d:2000,poisson3d:100,poisson3d:150",
                    help="large CG problems KIND:SIZE,... of pyspmv.generate ('' for none)")
    ap.add_argument("--scaled", help="a folder of real matrices to scale up into large CG problems")
    ap.add_argument("--scaled-range", type=float, nargs=2, default=(1e6, 1.2e7))
    ap.add_argument("--scaled-per-kind", type=int, default=1)
    ap.add_argument("--scaled-seed", type=int, default=4)
    ap.add_argument("--rtol", type=float, default=1e-8)
    ap.add_argument("--maxiter", type=int, default=3000)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--min-iters", type=int, default=200)
    ap.add_argument("--gmres-cycles", type=int, default=60, help="GMRES(30) restart cycles (default 60)")
    ap.add_argument("--limit", type=int, default=0, help="at most this many matrices (0: all)")
    ap.add_argument("--out", default="benchmarks/results/solvers_gpu.md")
    a = ap.parse_args()
    info = gpu.device_info()             # before any solve: the L2 set-aside as this process found it
    import cupy as cp
    import cupyx.scipy.sparse as csp
    import cupyx.scipy.sparse.linalg as cla

    sync = cp.cuda.Device().synchronize
    tol_kw = "rtol" if "rtol" in inspect.signature(cla.cg).parameters else "tol"
    rows = []
    probs = problems(files(a.matrices))
    if a.limit:
        probs = probs[:a.limit]
    probs += large_problems(a.generated, a.scaled, *a.scaled_range, a.scaled_per_kind, a.scaled_seed)
    for name, A, solvers in probs:
        n = A.shape[0]
        b = np.random.default_rng(0).uniform(-1, 1, n)
        b /= np.linalg.norm(b)
        Ad, bd = csp.csr_matrix(A), cp.asarray(b)
        for solver in solvers:
            ours = getattr(S, solver)
            theirs = getattr(cla, solver, None)      # CuPy has cg and gmres, not bicgstab
            kw = {"restart": 30} if solver == "gmres" else {}
            iters = a.gmres_cycles if solver == "gmres" else a.maxiter

            def run(policy, ours=ours, kw=kw, A=A, b=b, iters=iters):
                return ours(A, b, rtol=a.rtol, maxiter=iters, device="cuda", policy=policy,
                            config=FIXED, dtype="float64", **kw)

            def cupy_run(theirs=theirs, kw=kw, Ad=Ad, bd=bd, iters=iters * (30 if solver == "gmres" else 1)):
                return theirs(Ad, bd, maxiter=iters, **{tol_kw: a.rtol}, **kw)

            _, (_x, _info, rec) = timed(lambda: run("fixed"), sync)
            if rec.iterations < a.min_iters:
                print(f"{name} {solver}: {rec.iterations} iterations, left out", flush=True)
                continue
            timed(lambda: run("async"), sync)
            variants = [("fixed", lambda: run("fixed")), ("async", lambda: run("async"))]
            if theirs is not None:
                timed(cupy_run, sync)
                variants.append(("cupy", cupy_run))
            t = {k: [] for k, _ in variants}
            last = {}
            for _ in range(a.repeats):
                for k, fn in variants:
                    dt, r = timed(fn, sync)
                    t[k].append(dt)
                    last[k] = r
            xa, info_a, rec_a = last["async"]
            xc, info_c = last.get("cupy", (None, -99))
            res = {k: float(np.linalg.norm(A @ np.asarray(v) - b)) for k, v in
                   (("fixed", last["fixed"][0]), ("async", xa))}
            if xc is not None:
                res["cupy"] = float(np.linalg.norm(A @ cp.asnumpy(xc) - b))
            med = {k: statistics.median(v) for k, v in t.items()}
            rec_f = last["fixed"][2]
            switched = next((it for it, _c in rec_a.schedule[1:]), None)
            held = next((e.split(": ", 1)[1] for _i, e in rec_a.events if e.startswith("ranking picks")), "")
            row = {"matrix": name, "n": n, "nnz": A.nnz, "solver": solver, "iters": rec.iterations,
                   "info": last["fixed"][1], "info_async": info_a, "info_cupy": int(info_c),
                   "final": rec_a.schedule[-1][1], "fixed_s": med["fixed"], "async_s": med["async"],
                   "cupy_s": med.get("cupy", math.nan), "spread_async": (min(t["async"]), max(t["async"])),
                   "spread_fixed": (min(t["fixed"]), max(t["fixed"])), "res": res, "switched": switched,
                   "held": held, "setup_fixed": rec_f.wall_s - rec_f.iterate_s,
                   "iter_fixed_us": 1e6 * rec_f.iterate_s / max(1, rec_f.iterations),
                   "iter_async_us": 1e6 * rec_a.iterate_s / max(1, rec_a.iterations)}
            rows.append(row)
            print({k: v for k, v in row.items() if k != "res"}, flush=True)
            print(f"  async: rank {rec_a.rank_s * 1e3:.1f} ms, convert {rec_a.convert_s * 1e3:.1f} ms, probe "
                  f"{rec_a.probe_s * 1e3:.1f} ms, probes {rec_a.probes}; fixed: convert {rec_f.convert_s * 1e3:.1f} ms; "
                  f"events {rec_a.events}", flush=True)
    if not rows:
        raise SystemExit("no matrix gave a solve of --min-iters iterations")
    write_report(a.out, "GPU solves: async against fixed and CuPy", [gpu_software(info), "", *report(rows, a)],
                 device="cuda")


def gm(v: list[float]) -> float:
    return math.exp(statistics.fmean(map(math.log, v))) if v else math.nan


def report(rows: list[dict], a: argparse.Namespace) -> list[str]:
    """The results page's lines: the table, then the summary per size band."""
    table = md_table(
        ["matrix", "nnz", "solver", "iterations (fixed)", "info fixed/async/CuPy", "async's last configuration (from)",
         "fixed s [min-max]", "async s [min-max]", "CuPy s", "fixed / async", "CuPy / async",
         "fixed: set-up s, µs/iteration", "async µs/iteration"],
        [[r["matrix"], f"{r['nnz']:,}", r["solver"], r["iters"], f"{r['info']}/{r['info_async']}/{r['info_cupy']}",
          f"`{r['final']}`" + (f" (it {r['switched']})" if r["switched"] is not None else ""),
          f"{r['fixed_s']:.4f} [{r['spread_fixed'][0]:.4f}-{r['spread_fixed'][1]:.4f}]",
          f"{r['async_s']:.4f} [{r['spread_async'][0]:.4f}-{r['spread_async'][1]:.4f}]", f"{r['cupy_s']:.4f}",
          f"{r['fixed_s'] / r['async_s']:.2f}", f"{r['cupy_s'] / r['async_s']:.2f}",
          f"{r['setup_fixed']:.3f}, {r['iter_fixed_us']:.0f}", f"{r['iter_async_us']:.0f}"] for r in rows],
        "lrlrllrrrrrrr")
    lines = [
        (f"float64, rtol {a.rtol}, maxiter {a.maxiter}, GMRES restart 30; each cell the median of {a.repeats} "
         "rounds (fixed, async, CuPy in turn), seconds end to end with the device synchronised after the call. "
         "Set-up: the fixed solve's wall time less its iterations (checks, upload, the plan); µs/iteration: the "
         "iterations' time over their count (async's includes its selection and probe)."),
        "",
        *table,
        "",
    ]
    for band, keep in (("below 1e6 entries", lambda r: r["nnz"] < 1e6), ("at 1e6 entries and more",
                                                                          lambda r: r["nnz"] >= 1e6), ("all", None)):
        rs = [r for r in rows if keep is None or keep(r)]
        if not rs:
            continue
        f = [r["fixed_s"] / r["async_s"] for r in rs]
        # within the noise: async's fastest round at least as fast as fixed's slowest (by chance, for two equally fast
        # solvers, 1 / C(2r, r) of the pairs for r rounds each)
        lost = [r["matrix"] for r in rs if r["spread_async"][0] > r["spread_fixed"][1]]
        c = [r["cupy_s"] / r["async_s"] for r in rs if not math.isnan(r["cupy_s"])]
        lines.append(f"- {band} ({len(rs)} solves): async against fixed on `{FIXED}` {gm(f):.2f}x in geometric "
                     f"mean (min {min(f):.2f}x, max {max(f):.2f}x); slower than fixed beyond the rounds' spread: "
                     f"{', '.join(lost) or 'none'}; CuPy's solver against async {gm(c):.2f}x over {len(c)}"
                     + (f" (min {min(c):.2f}x)." if c else "."))
    return lines


if __name__ == "__main__":
    main()
