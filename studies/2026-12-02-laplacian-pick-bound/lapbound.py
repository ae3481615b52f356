"""Per product, on the solver page's scaled graph Laplacians (float64): cuSPARSE's CSR default against the best of
every cuda configuration (own and cuSPARSE's), each product between its own events and 16 back to back.

python lapbound.py OUT.csv SECONDS DIR

DIR: the corpus files of ../2026-12-01-matrix-stream-caching/solver_dir.txt and their MANIFEST rows.
"""
import sys
import time
from pathlib import Path
import pandas as pd
ROOT = next(p for p in Path(__file__).resolve().parents if (p / "benchmarks" / "_timing.py").exists())
sys.path.insert(0, str(ROOT / "benchmarks"))
from _timing import large_problems  # noqa: E402
import pyspmv  # noqa: E402

t_end = time.time() + float(sys.argv[2])
probs = large_problems("", sys.argv[-1], 1e6, 1.2e7, 1, 4)
probs.sort(key=lambda p: p[1].nnz)
cfgs = [c for c in pyspmv.configs("cuda") if "order=1" not in c.id]
rows = []
for name, A, _ in probs:
    if time.time() > t_end:
        break
    M = pyspmv.Matrix(A)
    df = pyspmv.benchmark(M, cfgs, device="cuda", dtype="float64", repeats=30, budget_s=0.05, progress=False)
    df["matrix"], df["nnz"] = name, M.nnz
    ok = df[df.status == "ok"]
    top = ok.nsmallest(3, "median_ms").config.tolist() + ["cusparse/csr/default"]
    b2b = pyspmv.benchmark(M, list(dict.fromkeys(top)), device="cuda", dtype="float64", repeats=30, budget_s=0.1,
                           progress=False, check=False, back_to_back=16)
    b2b["matrix"], b2b["nnz"], b2b["b2b"] = name, M.nnz, 16
    rows += [df, b2b]
    pd.concat(rows).to_csv(sys.argv[1], index=False)
    cs = ok.set_index("config").median_ms["cusparse/csr/default"]
    own = ok[ok.config.str.startswith("pyspmv/")].nsmallest(1, "median_ms").iloc[0]
    best = ok.nsmallest(1, "median_ms").iloc[0]
    bb = b2b.set_index("config").median_ms
    print(f"{name} nnz {M.nnz}: cuSPARSE default {cs * 1e3:.1f} us; best own {own.config} {own.median_ms * 1e3:.1f} us "
          f"({cs / own.median_ms:.3f}x); best {best.config} ({cs / best.median_ms:.3f}x); b2b default "
          f"{bb['cusparse/csr/default'] * 1e3:.1f} us, best of top 3 {bb.min() * 1e3:.1f} us "
          f"({bb['cusparse/csr/default'] / bb.min():.3f}x) [{t_end - time.time():.0f} s left]", flush=True)
