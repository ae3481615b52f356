"""Same-run A/B of CG's residual step that finishes p . q itself (``cg_step_pq_kernel``) against the separate sum
of the product's partials, over a tree patched by ``patch.py fold`` (``SPMV_PROBE_NOFOLD=1``: never folded).

    python patch.py fold && pip install . && python fold_ab.py      (on the GPU machine)

Fixed configurations that make the dot in the product, Poisson 300^2 to 2000^2, both types, 600 iterations; three
rounds after an untimed one, alternating; the solutions compared."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
import statistics

import numpy as np

import pyspmv
import pyspmv.solvers as S


def main() -> None:
    for size in (300, 500, 1000, 1400, 2000):
        M = pyspmv.generate("poisson2d", size)
        b = np.random.default_rng(0).uniform(-1, 1, M.nrows)
        for dt in ("float64", "float32"):
            for cfg in ("pyspmv/jad/vals=8/bs=512", "pyspmv/csr/vector/tpv=8/bs=256"):
                t: dict[str, list[float]] = {"fold": [], "nofold": []}
                xs = {}
                for rnd in range(4):
                    for m, times in t.items():
                        os.environ.pop("SPMV_PROBE_NOFOLD", None)
                        if m == "nofold":
                            os.environ["SPMV_PROBE_NOFOLD"] = "1"
                        x, info, rec = S.cg(M, b, rtol=1e-30, maxiter=600, device="cuda", policy="fixed", config=cfg,
                                            dtype=dt)
                        xs[m] = (x, rec.iterations, info)
                        if rnd:
                            times.append(1e6 * rec.iterate_s / rec.iterations)
                os.environ.pop("SPMV_PROBE_NOFOLD", None)
                d = np.linalg.norm(xs["fold"][0] - xs["nofold"][0]) / np.linalg.norm(xs["nofold"][0])
                med = {m: statistics.median(v) for m, v in t.items()}
                print(f"poisson2d_{size} {dt} {cfg}: " +
                      ", ".join(f"{m} {med[m]:.1f} [{min(v):.1f}-{max(v):.1f}]" for m, v in t.items()) +
                      f"; ratio {med['nofold'] / med['fold']:.3f}; iters {xs['fold'][1]}/{xs['nofold'][1]}, "
                      f"x rel diff {d:.2e}", flush=True)


if __name__ == "__main__":
    main()
