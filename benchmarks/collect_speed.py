"""Matrices measured per device minute by the dataset collection, on a Matrix Market folder.

Usage: python benchmarks/collect_speed.py FOLDER [--limit 12] [--device cuda] [--repeats 200]
                                          [--budget 0.25] [--label after] [--out results.csv]

Runs :func:`pyspmv.datasets.collect.measure` (what ``pyspmv collect`` runs per matrix: features,
every configuration in both value types, checked and timed) on the ``--limit`` smallest matrices of
FOLDER (a folder with MANIFEST.csv, :func:`pyspmv.datasets.folder_corpus`), and appends one row to
``--out``: label, pyspmv version, matrices, entries, wall seconds, matrices per minute, and the
median seconds per matrix. Run it with two builds of pyspmv (``PYTHONPATH``) on the same folder to
compare them; the matrices are built (read) outside the timed part.

``--breakdown`` instead times the GPU steps of one configuration on the folder's first matrix
(upload, plan setup, checked product, timed products, close; mean of 20) for an own kernel and a
cuSPARSE one: where the time per configuration goes.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import csv
import statistics
import time
from pathlib import Path

from _internal import gpu, measure
from _md import provenance

import pyspmv
from pyspmv.datasets import CorpusEntry, folder_corpus


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("folder")
    ap.add_argument("--limit", type=int, default=12)
    ap.add_argument("--device", default="cuda", choices=["cpu", "cuda"])
    ap.add_argument("--repeats", type=int, default=200)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--budget", type=float, default=0.25)
    ap.add_argument("--label", default="")
    ap.add_argument("--out", default="collect_speed.csv")
    ap.add_argument("--breakdown", action="store_true")
    args = ap.parse_args()
    if args.breakdown:
        breakdown(folder_corpus(args.folder)[0].build(), args.repeats, args.warmup)
        return
    entries = folder_corpus(args.folder)[: args.limit]
    built = [(e, e.build()) for e in entries]  # reading the files is not collection work
    per, nnz = [], 0
    t_all = time.perf_counter()
    for e, M in built:
        t0 = time.perf_counter()
        r = measure(CorpusEntry(e.name, e.group, e.nnz, lambda M=M: M), device=args.device,
                    dtypes=("float32", "float64"), configs=None, repeats=args.repeats, warmup=args.warmup,
                    budget_s=args.budget)
        if r["failure"] is not None:
            raise SystemExit(f"{e.name} failed: {r['failure']}")
        per.append(time.perf_counter() - t0)
        nnz += M.nnz
        print(f"{args.label} {e.name}: {M.nnz} entries, {per[-1]:.2f} s, {len(r['timings'])} rows", flush=True)
    wall = time.perf_counter() - t_all
    row = {"provenance": provenance(args.device), "label": args.label, "pyspmv": pyspmv.__version__,
           "device": args.device, "repeats": args.repeats,
           "budget_s": args.budget, "matrices": len(built), "entries": nnz, "wall_s": round(wall, 2),
           "matrices_per_min": round(60 * len(built) / wall, 2),
           "median_s_per_matrix": round(statistics.median(per), 3)}
    out = Path(args.out)
    new = not out.exists()
    with open(out, "a", newline="", encoding="utf-8") as fh:
        w = csv.DictWriter(fh, fieldnames=list(row))
        if new:
            w.writeheader()
        w.writerow(row)
    print(row, flush=True)


def breakdown(M: pyspmv.Matrix, repeats: int, warmup: int, n: int = 20) -> None:
    """Mean ms of each GPU step of one configuration, for an own kernel and a cuSPARSE one."""
    import numpy as np


    x = np.linspace(-1, 1, M.ncols)
    for cid in ("pyspmv/csr/vector/tpv=4/bs=256", "cusparse/csr/default"):
        c = pyspmv.config(cid)
        F = pyspmv.convert(M, c.format, **c.format_kwargs)
        steps: dict[str, float] = {}

        def timed(step: str, fn, steps=steps):  # type: ignore[no-untyped-def]
            t0 = time.perf_counter()
            out = fn()
            steps[step] = steps.get(step, 0.0) + (time.perf_counter() - t0) * 1e3 / n
            return out

        for _ in range(n):
            on = timed("upload", lambda F=F: gpu.DeviceMatrix(F))
            plan = timed("plan", lambda on=on, c=c: gpu.Plan(on, c))
            timed("mv", lambda plan=plan: plan.mv(x))
            timed("bench", lambda plan=plan: plan.bench(x, warmup=warmup, repeats=repeats, budget_s=0))
            timed("close", plan.close)
        print(f"{M.name} ({M.nnz} entries) {cid}: " + ", ".join(f"{k} {v:.3f} ms" for k, v in steps.items()),
              flush=True)


if __name__ == "__main__":
    main()
