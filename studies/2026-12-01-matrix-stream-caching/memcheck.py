"""Products of the kernels whose loads changed (csr/adaptive, JAD, SELL) on small awkward matrices against scipy,
for compute-sanitizer."""
import numpy as np
import scipy.sparse as sp

import pyspmv

rng = np.random.default_rng(0)
mats = [pyspmv.generate("poisson2d", 40), pyspmv.generate("powerlaw", 3000, seed=1),
        pyspmv.Matrix(sp.random(300, 200, density=0.05, random_state=1, format="csr")),   # rectangular
        pyspmv.Matrix(sp.csr_matrix(np.vstack([np.zeros((3, 50)), rng.uniform(size=(1, 50)), np.zeros((2, 50))]))),
        pyspmv.Matrix(sp.diags([rng.uniform(1, 2, 4000)], [0]).tocsr())]
cfgs = [c for c in pyspmv.configs("cuda") if c.kernel_id in ("pyspmv/csr/adaptive", "pyspmv/jad", "pyspmv/sell")
        and c.params.get("bs") in (64, 1024)]
ok = bad = na = 0
for M in mats:
    for dt in ("float32", "float64"):
        df = pyspmv.benchmark(M, cfgs, device="cuda", dtype=dt, repeats=2, warmup=1, budget_s=0.01, progress=False)
        ok += int((df.status == "ok").sum())
        bad += int(df.status.isin(["wrong", "error"]).sum())
        na += int((df.status == "not_applicable").sum())
print(f"{len(cfgs)} configurations: {ok} ok, {bad} wrong or error, {na} not applicable")
