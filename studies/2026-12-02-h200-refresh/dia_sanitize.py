"""DIA's kept kernels (one row a thread, and two where the diagonals are few and the rows many) on awkward matrices,
every DIA configuration, both types, against scipy in float64; run under compute-sanitizer memcheck and racecheck:
``compute-sanitizer --tool memcheck python dia_sanitize.py``. Prints the counts; exits 1 on a wrong product.
"""
# SPDX-License-Identifier: BSD-3-Clause
import sys

import numpy as np
import scipy.sparse as sp

import pyspmv


def diagonals(m: int, n: int, offsets: list[int], rng: np.random.Generator) -> sp.csr_array:
    rows = np.concatenate([np.arange(max(0, -o), min(m, n - o)) for o in offsets])
    cols = rows + np.repeat(offsets, [min(m, n - o) - max(0, -o) for o in offsets])
    keep = rows != 7                                            # an empty row
    A = sp.csr_array((rng.uniform(-1, 1, keep.sum()), (rows[keep], cols[keep])), shape=(m, n))
    A.data[A.nnz // 2] = 0.0                                    # an explicit zero
    return A


rng = np.random.default_rng(3)
mats = {  # two rows a thread: <= 8 diagonals and >= 200,000 rows; one otherwise
    "two_wide": diagonals(200_003, 200_500, [-3, 0, 1, 250], rng),
    "two_tall": diagonals(300_001, 200_000, [-100_000, 0, 5], rng),
    "two_one_diagonal": diagonals(262_145, 262_145, [0], rng),
    "one_nine": diagonals(200_003, 200_003, list(range(-4, 5)), rng),
    "one_few_rows": diagonals(199_999, 199_999, [-1, 0, 1], rng),
    "one_row": sp.csr_array(rng.uniform(-1, 1, (1, 37))),
    "wide": diagonals(300, 700, [0, 100, 250], rng),
    "tall": diagonals(700, 300, [0, -100, -250], rng),
    "duplicates": sp.coo_array((np.array([1.0, 2.0, 0.0, 3.0]), (np.array([0, 0, 2, 5]), np.array([1, 1, 2, 5]))),
                               shape=(4099, 4099)).tocsr(),
    "poisson": pyspmv.generate("poisson2d", 67).to_scipy().tocsr(),
}
cfgs = [c for c in pyspmv.configs("cuda") if c.format == "dia"]
ok = bad = 0
for name, S in mats.items():
    M = pyspmv.Matrix(S)
    x = rng.uniform(-1, 1, M.ncols)
    A = M.to_scipy().astype(np.float64)
    ref, scale = A @ x, abs(A) @ np.abs(x) + 1e-30
    for dt in ("float32", "float64"):
        for c in cfgs:
            y = pyspmv.spmv(M, x, c, dtype=dt)
            good = np.all(np.abs(y - ref) <= (1e-4 if dt == "float32" else 1e-12) * scale)
            ok, bad = ok + good, bad + (not good)
            if not good:
                print("WRONG", name, dt, c.id)
print(f"dia_sanitize: {ok} products right, {bad} wrong, {len(mats)} matrices")
sys.exit(1 if bad else 0)
