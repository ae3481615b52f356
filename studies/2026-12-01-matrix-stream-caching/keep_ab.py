"""Same-run A/B of how the matrix streams are cached: evict-first ('evict'), default caching ('keep'), or as the tree
decides ('rule'), switched per process call by SPMV_PROBE_EVICT ('1', '0', unset), which a tree patched with
``probe.diff`` (kernels/kern.h's spmv_by_evict) reads at each launch; nothing else differs between the modes.

    git apply studies/2026-12-01-matrix-stream-caching/probe.diff && pip install --no-build-isolation .
    python keep_ab.py solve OUT.csv                         # fixed CG, 3 configurations, 9 stencils, keep vs evict
    python keep_ab.py kernels BASES OUT.csv SECONDS         # single products, 9 configurations, rule/keep/evict
    python keep_ab.py solve2 OUT.csv                        # after 2eae73b: CG and BiCGSTAB, rule/keep/evict
    python keep_ab.py kernels2 BASES OUT.csv SECONDS B2B    # rule against evict, default repeats, B2B back to back

BASES: a folder of real matrices with a MANIFEST.csv holding the bases of the ``h200_scaled`` (and, for ``kernels``,
``h200_scaled_seed1``) datasets' matrices (kernels_floor.py's ``--scaled`` and ``--corpus``); matrices in a random
order until SECONDS have passed.
"""
import argparse
import os
import random
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd

import pyspmv
import pyspmv.solvers as S

# the benchmarks' helpers (kernels_floor's matrices, _internal's gpu), from the repository this script is in
ROOT = next(p for p in Path(__file__).resolve().parents if (p / "benchmarks" / "_internal.py").exists())
sys.path.insert(0, str(ROOT / "benchmarks"))
from _internal import gpu  # noqa: E402  (after the path above)

MODES = {"evict": "1", "keep": "0", "rule": ""}


def set_mode(m):
    if MODES[m]:
        os.environ["SPMV_PROBE_EVICT"] = MODES[m]
    else:
        os.environ.pop("SPMV_PROBE_EVICT", None)


def matrix_bytes(M, cid, dtype):
    c = pyspmv.config(cid)
    if c.library != "pyspmv":
        return np.nan
    return pyspmv.convert(M, c.format, dtype=dtype, **c.format_kwargs).nbytes


def solves(out):
    l2 = int(gpu.device_info()["l2_bytes"])
    probs = [("poisson2d", 500), ("poisson2d", 700), ("poisson2d", 850), ("poisson2d", 1000),
             ("poisson2d", 1200), ("poisson2d", 1400), ("poisson3d", 80), ("poisson3d", 100),
             ("poisson3d", 120)]
    cfgs = ["pyspmv/jad/vals=8/bs=512", "pyspmv/csr/adaptive/bs=256", "pyspmv/sell/c=16/sigma=256/bs=256"]
    rows = []
    for kind, size in probs:
        M = pyspmv.generate(kind, size)
        A = M.to_scipy().tocsr()
        b = np.random.default_rng(0).uniform(-1, 1, A.shape[0])
        b /= np.linalg.norm(b)
        for dt in ("float64", "float32"):
            es = np.dtype(dt).itemsize
            for cfg in cfgs:
                mb = matrix_bytes(M, cfg, dt)
                for r in range(4):
                    order = ["evict", "keep"] if r % 2 == 0 else ["keep", "evict"]
                    for m in order:
                        set_mode(m)
                        x, info, rec = S.cg(A, b, rtol=1e-30, maxiter=300, device="cuda", policy="fixed",
                                            config=cfg, dtype=dt)
                        if r > 0:
                            rows.append(dict(problem=f"{kind}_{size}", n=A.shape[0], nnz=A.nnz, dtype=dt,
                                             config=cfg, mode=m, round=r, matrix_bytes=mb,
                                             vector_bytes=4 * A.shape[0] * es, l2=l2,
                                             us_it=rec.iterate_s / rec.iterations * 1e6))
                d = pd.DataFrame([x for x in rows if x["problem"] == f"{kind}_{size}" and x["dtype"] == dt
                                  and x["config"] == cfg])
                med = d.groupby("mode").us_it.median()
                print(f"{kind}_{size} {dt} {cfg} ws {(mb + 4 * A.shape[0] * es) / 2**20:.1f} MiB: evict "
                      f"{med['evict']:.1f} keep {med['keep']:.1f} keep/evict time {med['keep'] / med['evict']:.3f}",
                      flush=True)
                pd.DataFrame(rows).to_csv(out, index=False)
    # end to end: async solves, the way solvers_gpu runs them
    for kind, size in [("poisson2d", 700), ("poisson2d", 1000), ("poisson3d", 100)]:
        A = pyspmv.generate(kind, size).to_scipy().tocsr()
        b = np.random.default_rng(0).uniform(-1, 1, A.shape[0])
        t = {m: [] for m in ("evict", "keep", "rule")}
        for r in range(4):
            for m in random.Random(r).sample(list(t), 3):
                set_mode(m)
                t0 = time.perf_counter()
                x, info, rec = S.cg(A, b, rtol=1e-8, device="cuda", policy="async")
                el = time.perf_counter() - t0
                if r > 0:
                    t[m].append(el)
                    rows.append(dict(problem=f"{kind}_{size}", n=A.shape[0], nnz=A.nnz, dtype="float64",
                                     config="async", mode=m, round=r, wall_s=el,
                                     iterations=rec.iterations, l2=l2))
        print(f"async {kind}_{size}: " + " ".join(f"{m} {np.median(v):.4f} [{min(v):.4f}-{max(v):.4f}]"
                                                 for m, v in t.items()), flush=True)
        pd.DataFrame(rows).to_csv(out, index=False)
    set_mode("rule")


KCFGS = ["pyspmv/csr/adaptive/bs=256", "pyspmv/csr/adaptive/ept=4/bs=256", "pyspmv/csr/adaptive/vals=8/bs=256",
         "pyspmv/sell/c=16/sigma=256/bs=256", "pyspmv/sell/c=64/sigma=256/bs=256", "pyspmv/jad/bs=256",
         "pyspmv/jad/vals=8/bs=256", "pyspmv/csr/vector/tpv=8/bs=256", "cusparse/csr/default"]


def kernels(bases, out, seconds, modes=tuple(MODES), repeats=50, budget_s=0.1, b2b=1, seed1=True):
    import kernels_floor as KF
    t_end = time.time() + seconds
    args = argparse.Namespace(corpus=Path(bases) if seed1 else None, scaled=Path(bases), real=None, generated=False)
    src = KF.sources(args)
    random.Random(0).shuffle(src)
    rows = []
    l2 = int(gpu.device_info()["l2_bytes"])
    for e in src:
        if time.time() > t_end:
            break
        M = e.build() if hasattr(e, "build") else e
        name = getattr(e, "name", "")
        for dt in ("float32", "float64"):
            fb = KF.floor_bytes(M, np.dtype(dt).itemsize)
            for r in range(2):
                for m in random.Random(hash((name, dt, r))).sample(list(modes), len(modes)):
                    set_mode(m)
                    df = pyspmv.benchmark(M, KCFGS, device="cuda", dtype=dt, repeats=repeats, budget_s=budget_s,
                                          progress=False, check=(r == 0), back_to_back=b2b)
                    for _, row in df.iterrows():
                        rows.append(dict(matrix=name, nnz=M.nnz, nrows=M.nrows, dtype=dt, floor_bytes=fb, l2=l2,
                                         config=row.config, status=row.status, mode=m, round=r, b2b=b2b,
                                         median_ms=row.median_ms))
        pd.DataFrame(rows).to_csv(out, index=False)
        print(name, M.nnz, f"{len(rows)} rows", f"{t_end - time.time():.0f} s left", flush=True)
    set_mode("rule")


def solves2(out):
    """After the solver's change: CG's default ('rule') against forced keep and evict, and BiCGSTAB's keep
    against evict, fixed solves, us an iteration."""
    rows = []
    runs = [("cg", ("poisson2d", 1000)), ("cg", ("poisson3d", 100)), ("cg", ("poisson2d", 1400)),
            ("bicgstab", ("poisson2d", 700)), ("bicgstab", ("poisson2d", 1000)), ("bicgstab", ("poisson2d", 1400)),
            ("bicgstab", ("poisson3d", 100))]
    for method, (kind, size) in runs:
        M = pyspmv.generate(kind, size)
        A = M.to_scipy().tocsr()
        b = np.random.default_rng(0).uniform(-1, 1, A.shape[0])
        b /= np.linalg.norm(b)
        fn = getattr(S, method)
        for cfg in ["pyspmv/jad/vals=8/bs=512", "pyspmv/csr/adaptive/bs=256"]:
            mb = matrix_bytes(M, cfg, "float64")
            modes = ["rule", "evict", "keep"]
            for r in range(4):
                for m in random.Random(r).sample(modes, 3):
                    set_mode(m)
                    x, info, rec = fn(A, b, rtol=1e-30, maxiter=200, device="cuda", policy="fixed", config=cfg)
                    if r > 0:
                        rows.append(dict(method=method, problem=f"{kind}_{size}", n=A.shape[0], nnz=A.nnz,
                                         dtype="float64", config=cfg, mode=m, round=r, matrix_bytes=mb,
                                         us_it=rec.iterate_s / rec.iterations * 1e6))
            d = pd.DataFrame([x for x in rows if x["method"] == method and x["problem"] == f"{kind}_{size}"
                              and x["config"] == cfg])
            med = d.groupby("mode").us_it.median()
            print(f"{method} {kind}_{size} {cfg}: " + " ".join(f"{m} {med[m]:.1f}" for m in modes)
                  + f" keep/evict {med['keep'] / med['evict']:.3f} rule/evict {med['rule'] / med['evict']:.3f}",
                  flush=True)
            pd.DataFrame(rows).to_csv(out, index=False)
    set_mode("rule")


if __name__ == "__main__":
    if sys.argv[1] == "solve":
        solves(sys.argv[2])
    elif sys.argv[1] == "solve2":
        solves2(sys.argv[2])
    elif sys.argv[1] == "kernels2":
        # the tie-breaker: the plan's rule against evict-first, default repeats, each product between its own
        # events (b2b 1) and 16 back to back
        kernels(sys.argv[2], sys.argv[3], float(sys.argv[4]), modes=("rule", "evict"), repeats=200, budget_s=1.0,
                b2b=int(sys.argv[5]), seed1=False)
    else:
        kernels(sys.argv[2], sys.argv[3], float(sys.argv[4]))
