"""Same-run A/B of the L2 window's parts, over a tree patched by ``patch.py modes`` (environment switches):
the vectors' layout (one allocation each as before, the slab, the slab padded), the window's attributes (none, a
zero window, the stream's only, the stream's and the graph nodes'), with graphs and with direct launches.

    python patch.py modes && pip install . && python modes.py      (on the GPU machine, from the tree's root)

CG with a fixed configuration, 600 iterations (a tolerance not reached), Poisson 1000^2 and 2000^2, float64;
three rounds after an untimed one, the modes in turn; the iterations' time over their count."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from _internal import solver_device

import pyspmv
import pyspmv.solvers as S

MODES = {  # name: (environment, USE_L2)
    "old": ({"SPMV_PROBE_SEPARATE": "1", "SPMV_PROBE_NOZERO": "1"}, False),
    "slab": ({"SPMV_PROBE_NOZERO": "1"}, False),
    "slab_zeroattr": ({}, False),
    "pad_noattr": ({"SPMV_PROBE_NOZERO": "1", "SPMV_PROBE_PAD": "1048832"}, False),
    "on_stream": ({"SPMV_PROBE_NONODE": "1"}, True),
    "on": ({}, True),
    "on_pad": ({"SPMV_PROBE_PAD": "1048832"}, True),
}
KEYS = ["SPMV_PROBE_SEPARATE", "SPMV_PROBE_NOZERO", "SPMV_PROBE_PAD", "SPMV_PROBE_NONODE"]


def main() -> None:
    for size in (1000, 2000):
        M = pyspmv.generate("poisson2d", size)
        b = np.random.default_rng(0).uniform(-1, 1, M.nrows)
        for cfg in ("pyspmv/jad/vals=8/bs=512", "cusparse/csr/default"):
            for graphs in (True, False):
                solver_device.USE_GRAPHS = graphs
                t: dict[str, list[float]] = {m: [] for m in MODES}
                for rnd in range(4):
                    for m, (env, l2) in MODES.items():
                        for k in KEYS:
                            os.environ.pop(k, None)
                        os.environ.update(env)
                        solver_device.USE_L2 = l2
                        _x, _info, rec = S.cg(M, b, rtol=1e-15, maxiter=600, device="cuda", policy="fixed", config=cfg)
                        if rnd:
                            t[m].append(1e6 * rec.iterate_s / rec.iterations)
                print(f"poisson2d_{size} {cfg} graphs={graphs}: " +
                      ", ".join(f"{m} {statistics.median(v):.1f} [{min(v):.1f}-{max(v):.1f}]" for m, v in t.items()),
                      flush=True)


if __name__ == "__main__":
    main()
