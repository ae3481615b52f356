"""Fixed CG solves (float64, rtol 1e-8) of the solver benchmark's scaled Laplacians on configurations the GPU
selection does not reach today (CSR's value tables, csr/adaptive's ept=4, the locality order): µs an iteration and
the conversion, two rounds each, against cuSPARSE's CSR default."""
import sys, time
import numpy as np, scipy.sparse as sp
import pyspmv.solvers as S

CFGS = ["cusparse/csr/default", "pyspmv/csr/adaptive/bs=256", "pyspmv/csr/adaptive/ept=4/bs=256",
        "pyspmv/csr/adaptive/vals=16/bs=256", "pyspmv/csr/adaptive/vals=16/ept=4/bs=256",
        "pyspmv/csr/adaptive/order=1/vals=16/bs=256", "pyspmv/csr/vector/vals=16/tpv=16/bs=256",
        "pyspmv/csr/vector/vals=16/tpv=32/bs=256", "pyspmv/jad/vals=16/bs=256"]
for f in sys.argv[1:]:
    A = sp.load_npz(f).tocsr()
    b = np.random.default_rng(0).uniform(-1, 1, A.shape[0]); b /= np.linalg.norm(b)
    name = f.split("/")[-1][:-4]
    base = None
    for c in CFGS:
        us, conv = [], []
        try:
            for r in range(2):
                x, info, rec = S.cg(A, b, rtol=1e-8, maxiter=3000, device="cuda", policy="fixed", config=c,
                                    dtype="float64")
                us.append(1e6 * rec.iterate_s / max(1, rec.iterations))
                conv.append(rec.convert_s * 1e3)
        except Exception as exc:
            print(f"LAP {name} {c}: {type(exc).__name__}: {str(exc)[:90]}", flush=True)
            continue
        u = min(us)
        if base is None:
            base = u
        print(f"LAP {name} {c}: {u:.1f} us/it ({base / u:.3f}x cuSPARSE), it {rec.iterations}, info {info}, "
              f"convert {min(conv):.1f} ms", flush=True)
