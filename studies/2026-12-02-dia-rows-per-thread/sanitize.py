"""A format's GPU kernels on awkward matrices, every configuration of the format, both types, against scipy in float64;
run under compute-sanitizer memcheck and racecheck (``call.sh``): ``python sanitize.py [FORMAT]``, dia by default.

The matrices: an empty row, one row, wide and tall, duplicates summed with an explicit zero, a diagonal whose rows end
mid-tile, a stencil, a banded matrix; then a power-law matrix and one row of 5,000 entries, added for JAD's probe (DIA's
runs had the first eight).
"""
# SPDX-License-Identifier: BSD-3-Clause
import sys

import numpy as np
import scipy.sparse as sp

import pyspmv

rng = np.random.default_rng(3)
mats = {}
A = sp.diags([1.0, -2.0, 1.0], [-1, 0, 1], shape=(1001, 1001), format="lil")
A[500, :] = 0
mats["stencil_empty_row"] = A.tocsr()
mats["one_row"] = sp.csr_matrix(rng.uniform(-1, 1, (1, 37)))
mats["wide"] = sp.diags([rng.uniform(-1, 1, 300)] * 3, [0, 100, 250], shape=(300, 700), format="csr")
mats["tall"] = sp.diags([rng.uniform(-1, 1, 300)] * 3, [0, -100, -250], shape=(700, 300), format="csr")
d = sp.coo_matrix((np.array([1.0, 2.0, 0.0, 3.0]), (np.array([0, 0, 2, 5]), np.array([1, 1, 2, 5]))),
                  shape=(4099, 4099))
mats["duplicates_zero"] = d.tocsr()  # duplicates summed by Matrix, an explicit zero kept
mats["diagonal_odd"] = sp.diags(rng.uniform(0.5, 1.5, 4097 * 3 + 5), format="csr")
mats["poisson"] = pyspmv.generate("poisson2d", 67).to_scipy().tocsr()
mats["banded"] = pyspmv.generate("banded", 5003).to_scipy().tocsr()
mats["powerlaw"] = pyspmv.generate("powerlaw", 3001, seed=2).to_scipy().tocsr()
L = sp.lil_matrix((2053, 6000))
L[7, :5000] = rng.uniform(-1, 1, 5000)
L[1000, 3] = 2.0
mats["long_row"] = L.tocsr()
FORMAT = sys.argv[1] if len(sys.argv) > 1 else "dia"
cfgs = [c for c in pyspmv.configs("cuda") if c.format == FORMAT]
ok = bad = na = 0
for name, S in mats.items():
    M = pyspmv.Matrix(S)
    x = rng.uniform(-1, 1, M.ncols)
    ref = M.to_scipy().astype(np.float64) @ x
    for dt in ("float32", "float64"):
        for c in cfgs:
            try:
                y = pyspmv.spmv(M, x, c, dtype=dt)
            except pyspmv.NotApplicableError:
                na += 1
                continue
            tol = (1e-4 if dt == "float32" else 1e-12) * (np.abs(M.to_scipy()) @ np.abs(x) + 1e-30)
            if np.all(np.abs(y - ref) <= tol):
                ok += 1
            else:
                bad += 1
                print("WRONG", name, dt, c.id, np.max(np.abs(y - ref)))
print(f"{FORMAT} products: {ok} ok, {bad} wrong, {na} not applicable, {len(cfgs)} configurations")
sys.exit(1 if bad else 0)
