"""What going back to a plan already made costs a GPU CG solve: chunks of 40 iterations on the plan that runs,
against a chunk that first makes another plan ready (Krylov.prepare: a trial product, the iteration's graph captured
and instantiated), median of 15 rounds, both directions; Poisson 1000^2 and a 2e7-entry graph Laplacian."""
import statistics, sys, time
import numpy as np
import pyspmv
from pyspmv.devices import gpu
from pyspmv.matrices.configs import config
from pyspmv.matrices.mmio import as_matrix
from pyspmv.ranking.verify import upload_csr
from pyspmv.solvers import device as D

cuda = gpu.cuda()
probs = [("poisson2d_1000", pyspmv.generate("poisson2d", 1000).to_scipy().tocsr(), "pyspmv/jad/vals=8/bs=512")]
if len(sys.argv) > 1:
    import scipy.sparse as sp
    probs.append((sys.argv[1].split("/")[-1], sp.load_npz(sys.argv[1]).tocsr(), "cusparse/coo/alg1"))
for name, A, other in probs:
    M = as_matrix(A)
    dt = np.dtype(np.float64)
    n = A.shape[0]
    csr = upload_csr(M, dt)
    p = [D.prepare(M, config("cusparse/csr/default"), dt, csr), D.prepare(M, config(other), dt, csr)]
    K = cuda.Krylov(D.METHODS["cg"], n, 8, 1)
    K.set_graphs(True)
    K.set_l2(True)
    K.load(0, np.random.default_rng(0).uniform(-1, 1, n))
    K.load(1, np.zeros(n))
    K.start(p[0].plan._plan, 0.0, True)
    it = 0
    for r in range(4):
        for q in p:
            K.prepare(q.plan._plan)
            it = K.iterate(q.plan._plan, 40, 10**9)[0]
    stay, move = {0: [], 1: []}, {0: [], 1: []}
    for r in range(15):
        for k in (0, 1):
            t = time.perf_counter()
            K.prepare(p[k].plan._plan)
            it = K.iterate(p[k].plan._plan, 40, 10**9)[0]
            move[k].append(time.perf_counter() - t)
            t = time.perf_counter()
            it = K.iterate(p[k].plan._plan, 40, 10**9)[0]
            stay[k].append(time.perf_counter() - t)
    t = time.perf_counter()
    K.prepare(p[1].plan._plan)
    prep_only = time.perf_counter() - t
    for k, q in enumerate(p):
        ms, mm = statistics.median(stay[k]) * 1e3, statistics.median(move[k]) * 1e3
        print(f"RET {name} to {q.config.id}: 40 iterations {ms:.3f} ms staying, {mm:.3f} ms after prepare(); "
              f"return cost {mm - ms:.3f} ms [{(min(move[k]) - max(stay[k]))*1e3:.3f}, {(max(move[k]) - min(stay[k]))*1e3:.3f}]",
              flush=True)
    print(f"RET {name}: a prepare() alone {prep_only*1e3:.3f} ms; status {K.status()}", flush=True)
    K.close()
    for q in p:
        q.plan.close()
