"""One product of a configuration on a scaled real matrix, for ncu: argv matrix dtype config."""
import os, sys, numpy as np, pyspmv
from pyspmv.matrices.generators import scaled
here = os.path.dirname(os.path.abspath(__file__))
m, dt, cid = sys.argv[1:4]
base, rest = m.rsplit("_x", 1)
f = int("".join(ch for ch in rest.split("_")[0] if ch.isdigit()))
A = scaled(pyspmv.load(os.path.join(here, "bases", base + ".mtx.gz")), f, mode="tile" if "tile" in rest else "kron",
           density=min(0.3, 4.0 / f), seed=int(rest.rsplit("_r", 1)[1]))
df = pyspmv.benchmark(A, [cid], device="cuda", dtype=dt, repeats=8, warmup=2, budget_s=0, progress=False, check=False)
print(m, dt, cid, df.median_ms.iloc[0])
