"""Is a held async solve's extra time outside its iterations Python's garbage collector? Interleaved rounds of fixed
and async with the collector on and off around each solve; the records' split, median of 15."""
import gc, statistics, sys, time
import numpy as np, scipy.sparse as sp, cupy as cp
import pyspmv.solvers as S

sync = cp.cuda.Device().synchronize
A = sp.load_npz(sys.argv[1]).tocsr()
b = np.random.default_rng(0).uniform(-1, 1, A.shape[0]); b /= np.linalg.norm(b)
run = lambda p: S.cg(A, b, rtol=1e-8, maxiter=3000, device="cuda", policy=p, config="cusparse/csr/default",
                     dtype="float64")
variants = [("fixed", "fixed", True), ("async", "async", True), ("fixed_nogc", "fixed", False), ("async_nogc", "async", False)]
t = {k: ([], [], []) for k, _, _ in variants}
counts = {k: [] for k, _, _ in variants}
for k, p, _ in variants:
    run(p)
for r in range(15):
    for k, p, on in variants:
        sync()
        c0 = [s["collections"] for s in gc.get_stats()]
        if not on:
            gc.disable()
        t0 = time.perf_counter()
        x, info, rec = run(p)
        sync()
        dt = time.perf_counter() - t0
        gc.enable()
        counts[k].append(sum(s["collections"] for s in gc.get_stats()) - sum(c0))
        t[k][0].append(dt); t[k][1].append(rec.iterate_s); t[k][2].append(rec.wall_s - rec.iterate_s)
for k, v in t.items():
    print(f"GC {k}: wall {statistics.median(v[0])*1e3:.3f} iterate {statistics.median(v[1])*1e3:.3f} "
          f"outside {statistics.median(v[2])*1e3:.3f} ms; collections a solve {statistics.mean(counts[k]):.1f}", flush=True)
