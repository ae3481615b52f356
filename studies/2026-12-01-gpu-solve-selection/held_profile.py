"""Where a held async GPU solve spends its time outside the iterations: cProfile of the main thread over 20 solves
each (fixed, async), the callers of lock waits, and the records' split."""
import cProfile, io, pstats, statistics, sys, time
import numpy as np, scipy.sparse as sp, cupy as cp
import pyspmv.solvers as S

sync = cp.cuda.Device().synchronize
A = sp.load_npz(sys.argv[1]).tocsr()
b = np.random.default_rng(0).uniform(-1, 1, A.shape[0]); b /= np.linalg.norm(b)
run = lambda policy: S.cg(A, b, rtol=1e-8, maxiter=3000, device="cuda", policy=policy, config="cusparse/csr/default",
                          dtype="float64")
for p in ("fixed", "async"):
    run(p)
for p in ("fixed", "async"):
    pr = cProfile.Profile()
    out = []
    for r in range(20):
        sync()
        pr.enable()
        t = time.perf_counter()
        x, info, rec = run(p)
        sync()
        dt = time.perf_counter() - t
        pr.disable()
        out.append((dt, rec.iterate_s, rec.wall_s - rec.iterate_s))
    print(f"== {p}: wall {statistics.median(o[0] for o in out)*1e3:.3f} iterate {statistics.median(o[1] for o in out)*1e3:.3f} "
          f"outside {statistics.median(o[2] for o in out)*1e3:.3f} ms (median of 20)", flush=True)
    s = io.StringIO()
    st = pstats.Stats(pr, stream=s).sort_stats("tottime")
    st.print_stats(18)
    st.print_callers("acquire|join|shutdown|wait")
    print("\n".join(l for l in s.getvalue().splitlines() if l.strip())[:6000], flush=True)
