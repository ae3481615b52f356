"""Fixed CG solves (rtol 1e-8, float64) of the solver page's scaled graph Laplacians on cuSPARSE's CSR default
against the configuration that multiplied fastest alone (lapbound.py): what a perfect pick would give end to end.

python lapsolve.py DIR

DIR: the corpus files of ../2026-12-01-matrix-stream-caching/solver_dir.txt and their MANIFEST rows.
"""
import sys
import time
from pathlib import Path
import numpy as np
ROOT = next(p for p in Path(__file__).resolve().parents if (p / "benchmarks" / "_timing.py").exists())
sys.path.insert(0, str(ROOT / "benchmarks"))
from _timing import large_problems  # noqa: E402
import pyspmv.solvers as S  # noqa: E402

BEST = {"cfd_foam_diamond_wing_x5kron_r4_lap": "pyspmv/jad/vals=16/bs=128",
        "fem_dolfin_channel_with_flap_x106kron_r4_lap": "pyspmv/csr/adaptive/bs=512",
        "cfd_su2_centrifugal_blade_su2mesh_x12kron_r4_lap": "pyspmv/csr/vector/vals=8/tpv=8/bs=128",
        "hgr_powersim_x13tile_r4_lap": "pyspmv/csr/adaptive/vals=16/bs=256",
        "polblogs_x26kron_r4_lap": "pyspmv/csr/vector/vals=16/tpv=32/bs=256",
        "hb_big_x64kron_r4_lap": "pyspmv/csr/adaptive/bs=128",
        "snap_ca-HepTh_x38kron_r4_lap": "pyspmv/csr/adaptive/vals=16/bs=256",
        "case_ACTIVSg2000_Bdc_x309kron_r4_lap": "pyspmv/csr/adaptive/bs=512"}
def med(v, i):
    return float(np.median([e[i] for e in v]))


for name, A, _ in sorted(large_problems("", sys.argv[-1], 1e6, 1.2e7, 1, 4), key=lambda p: p[1].nnz):
    b = np.random.default_rng(0).uniform(-1, 1, A.shape[0])
    b /= np.linalg.norm(b)
    t = {}
    for r in range(4):
        for cfg in (["cusparse/csr/default", BEST[name]] if r % 2 else [BEST[name], "cusparse/csr/default"]):
            t0 = time.perf_counter()
            x, info, rec = S.cg(A, b, rtol=1e-8, maxiter=3000, device="cuda", policy="fixed", config=cfg)
            el = time.perf_counter() - t0
            if r:
                t.setdefault(cfg, []).append((el, rec.iterate_s / rec.iterations * 1e6, rec.iterations, info))
    f, o = t["cusparse/csr/default"], t[BEST[name]]
    print(f"{name}: fixed cuSPARSE {med(f, 0):.4f} s ({med(f, 1):.0f} us/it, {f[0][2]} it), {BEST[name]} "
          f"{med(o, 0):.4f} s ({med(o, 1):.0f} us/it, {o[0][2]} it, info {o[0][3]}): "
          f"{med(f, 0) / med(o, 0):.3f}x end to end, "
          f"{med(f, 1) / med(o, 1):.3f}x an iteration", flush=True)
