"""Same-run A/B: fixed CG solves with the solver's L2 window on (USE_L2) and off, µs an iteration, interleaved rounds."""
import statistics, sys, time
import numpy as np
import pyspmv, pyspmv.solvers as S
import pyspmv.solvers.device as SD
import cupy as cp

probs = [("poisson2d", 1000), ("poisson2d", 1400), ("poisson2d", 2000), ("poisson3d", 100), ("poisson3d", 150)]
cfgs = ["cusparse/csr/default", "pyspmv/jad/vals=8/bs=512"]
print("set-aside at start", cp.cuda.runtime.deviceGetLimit(0x06), "max", cp.cuda.runtime.deviceGetAttribute(108, 0), flush=True)
for kind, size in probs:
    A = pyspmv.generate(kind, size).to_scipy().tocsr()
    b = np.random.default_rng(0).uniform(-1, 1, A.shape[0]); b /= np.linalg.norm(b)
    for dt in ("float64", "float32"):
        for cfg in cfgs:
            res = {True: [], False: []}
            for r in range(4):
                for on in (True, False):
                    SD.USE_L2 = on
                    x, info, rec = S.cg(A, b, rtol=1e-30, maxiter=300, device="cuda", policy="fixed", config=cfg, dtype=dt)
                    if r > 0:
                        res[on].append(rec.iterate_s / rec.iterations * 1e6)
            on, off = statistics.median(res[True]), statistics.median(res[False])
            print(f"{kind}_{size} n={A.shape[0]} {dt} {cfg}: on {on:.1f} [{min(res[True]):.1f}-{max(res[True]):.1f}] off {off:.1f} "
                  f"[{min(res[False]):.1f}-{max(res[False]):.1f}] on/off {on/off:.3f}", flush=True)
