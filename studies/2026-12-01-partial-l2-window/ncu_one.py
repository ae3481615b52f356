"""A few CG iterations of Poisson SIZE^2 on one configuration (maxiter small), for ncu."""
import os, sys, numpy as np, pyspmv, pyspmv.solvers as S, cupy as cp
import pyspmv.solvers.device as SD
if os.environ.get('NO_L2'): SD.USE_L2 = False
size = int(sys.argv[1]); cfg = sys.argv[2]; it = int(sys.argv[3])
A = pyspmv.generate("poisson2d", size).to_scipy().tocsr()
b = np.random.default_rng(0).uniform(-1, 1, A.shape[0]); b /= np.linalg.norm(b)
run = lambda i: S.cg(A, b, rtol=1e-8, maxiter=i, device="cuda", policy="fixed", config=cfg, dtype="float64")
run(5); cp.cuda.Device().synchronize()
cp.cuda.runtime.profilerStart()
x, info, rec = run(it); cp.cuda.Device().synchronize()
cp.cuda.runtime.profilerStop()
print(cfg, size, rec.iterate_s / max(rec.iterations, 1) * 1e6, "us/it")
