"""The estimated design rows' sample (spmv_design_rows_estimate): its entry budget and the diagonals it counts."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

import pyspmv
from pyspmv import _core
from pyspmv.ranking.rank import _prepared, default_model
from pyspmv.ranking.schema import COL

BLOCK = 256


def _even(n: int, per_row: int, seed: int = 0) -> pyspmv.Matrix:
    """n x n, exactly per_row entries in every row, random columns."""
    rng = np.random.default_rng(seed)
    ix = np.sort(np.stack([rng.choice(n, per_row, replace=False) for _ in range(n)]), axis=1)
    ip = np.arange(0, n * per_row + 1, per_row)
    return pyspmv.Matrix(sp.csr_array((np.ones(n * per_row), ix.ravel(), ip), shape=(n, n)))


def _rows(M: pyspmv.Matrix, *sample: int) -> np.ndarray:
    p = _prepared(default_model("cuda"), "float64")
    return _core.core_rows(p.capsule, M.nrows, M.ncols, M.indptr, M.indices, 8, *sample).reshape(len(p.ids), -1)


def test_entry_budget_takes_fewer_blocks():
    """Even rows of 10: a budget of 65536 entries keeps the 25 blocks (64,000 entries) it holds, the same rows
    as asking for 25 blocks' rows; without a budget, or one above the rows' entries, the rows decide."""
    M = _even(100_000, 10)
    np.testing.assert_array_equal(_rows(M, 16384, 65536), _rows(M, 25 * BLOCK, 0))
    np.testing.assert_array_equal(_rows(M, 16384, 1 << 30), _rows(M, 16384))
    assert not np.array_equal(_rows(M, 16384, 65536), _rows(M, 16384), equal_nan=True)


def test_sampled_diagonals_are_those_of_the_sampled_rows():
    """ndiag and the gaps between occupied diagonals of the estimate are exactly those of A with only the sampled
    rows kept (each sampled block in the middle of one of k equal strata), on random columns that mark offsets all
    over."""
    n, k = 30_000, 4096 // BLOCK
    M = _even(n, 7, seed=3)
    nblk = -(-n // BLOCK)
    keep = np.zeros(n, bool)
    for b in range(k):
        r0 = (2 * b + 1) * nblk // (2 * k) * BLOCK
        keep[r0:r0 + BLOCK] = True
    lens = np.diff(M.indptr) * keep
    ix = M.indices[np.repeat(keep, np.diff(M.indptr))]
    S = pyspmv.Matrix(sp.csr_array((np.ones(ix.size), ix, np.concatenate(([0], np.cumsum(lens)))), shape=(n, n)))
    es, ex = _rows(M, 4096)[0], _rows(S)[0]
    for c in ("ndiag", "diag_dist_mean", "diag_dist_sd"):
        assert es[COL[c]] == ex[COL[c]], c
    assert es[COL["ndiag"]] > 1000


def test_a_sample_that_misses_the_long_rows_takes_the_exact_path():
    """Even rows of 4 plus one dense row in a block no stratum samples: the estimate would pad ELL and SELL to
    4 columns; the exact path is taken instead (equal rows). A row of 8 there leaves that block within twice
    the entries of a sampled one, and it stays an estimate."""
    n = 200_000
    base = sp.csr_array(_even(n, 4).to_scipy())
    dense = 256 * 3 + 7                                  # row 775: in block 3, which no stratum's middle holds
    lil = base.tolil()
    lil[dense, :] = 0
    lil[dense, np.arange(0, n, 20)] = 1.0
    M = pyspmv.Matrix(lil.tocsr())
    assert M.nrows == n and np.diff(M.indptr).max() == n // 20
    np.testing.assert_array_equal(_rows(M, 16384), _rows(M))
    lil = base.tolil()
    lil[dense, :] = 0
    lil[dense, :8] = 1.0
    M = pyspmv.Matrix(lil.tocsr())
    assert not np.array_equal(_rows(M, 16384), _rows(M), equal_nan=True)

