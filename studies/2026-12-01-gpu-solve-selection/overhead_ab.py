"""Where an async GPU solve that holds its start loses to the fixed one: interleaved rounds of fixed, async, async
without a ranking (select_min_nnz past the matrix: the policy's machinery alone), and async with the selection's
OpenMP on one thread; wall time with the device synchronised, median and range of 9 rounds."""
import statistics, sys, time
import numpy as np
import scipy.sparse as sp
import cupy as cp
import pyspmv.solvers as S
from pyspmv.solvers import device as D

sync = cp.cuda.Device().synchronize
real_count = D.os.cpu_count
for f in sys.argv[1:]:
    A = sp.load_npz(f).tocsr()
    b = np.random.default_rng(0).uniform(-1, 1, A.shape[0]); b /= np.linalg.norm(b)

    def run(policy, **kw):
        return S.cg(A, b, rtol=1e-8, maxiter=3000, device="cuda", policy=policy, config="cusparse/csr/default",
                    dtype="float64", **kw)

    variants = {"fixed": lambda: run("fixed"), "async": lambda: run("async"),
                "async_norank": lambda: run("async", select_min_nnz=10**12),
                "async_omp1": lambda: run("async")}
    t = {k: [] for k in variants}
    parts = {k: ([], []) for k in variants}
    for k, fn in variants.items():
        fn()
    for r in range(15):
        for k, fn in variants.items():
            D.os.cpu_count = (lambda: 3) if k == "async_omp1" else real_count
            sync()
            t0 = time.perf_counter()
            x, info, rec = fn()
            sync()
            t[k].append(time.perf_counter() - t0)
            parts[k][0].append(rec.iterate_s)
            parts[k][1].append(rec.wall_s - rec.iterate_s)
            if r == 14:
                print(f"  {k}: it {rec.iterations} iterate {rec.iterate_s*1e3:.2f} wall {rec.wall_s*1e3:.2f} "
                      f"rank {rec.rank_s*1e3:.1f} events {rec.events[-1:]}", flush=True)
    D.os.cpu_count = real_count
    print("PARTS", f.split("/")[-1], " ".join(f"{k}: iterate {statistics.median(v[0])*1e3:.3f} outside {statistics.median(v[1])*1e3:.3f}"
                                             for k, v in parts.items()), flush=True)
    base = statistics.median(t["fixed"])
    print("AB", f.split("/")[-1], " ".join(f"{k}={statistics.median(v)*1e3:.2f}ms[{min(v)*1e3:.2f}-{max(v)*1e3:.2f}]"
                                          f"({base/statistics.median(v):.3f}x)" for k, v in t.items()), flush=True)
