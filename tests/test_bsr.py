"""BSR through the private glue: exact layout and presence bits, round trip, products, edge blocks."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from glue import assert_exact_and_close, convert_raw, random_csr

from pyspmv import _core


def convert(A, b, dtype=np.float64, max_fill=0.0):
    return convert_raw("bsr", A, b, dtype=dtype, max_fill=max_fill)


# rows: 0 -> cols 1, 4; 1 -> empty; 2 -> cols 0, 1, 2 (explicit zero), 5; 3 -> col 3; 4 -> cols 2, 5
SMALL = sp.csr_matrix((np.array([1.0, 2.0, 3.0, 4.0, 0.0, 5.0, 6.0, 7.0, 8.0]),
                       np.array([1, 4, 0, 1, 2, 5, 3, 2, 5]), np.array([0, 2, 2, 6, 7, 9])), shape=(5, 6))


def test_layout():
    s = convert(SMALL, 2)
    idx, val = s.index_arrays, s.value_arrays
    assert (s.format_name, s.nrows, s.ncols, s.nnz, s.params, s.scalars) == ("bsr", 5, 6, 9, (2, 0), (3, 3, 7, 0))
    np.testing.assert_array_equal(idx[0], [0, 2, 5, 7])
    np.testing.assert_array_equal(idx[1], [0, 2, 0, 1, 2, 1, 2])
    bits = sum(1 << k for k in [1, 4, 8, 9, 12, 15, 17, 20, 25])  # bit 12: the explicit zero
    np.testing.assert_array_equal(idx[2], [bits])
    np.testing.assert_array_equal(val[0], [0, 1, 0, 0, 2, 0, 0, 0, 3, 4, 0, 0, 0, 0, 0, 6,
                                           0, 5, 0, 0, 7, 0, 0, 0, 0, 8, 0, 0])
    assert idx[3].size == 0 and val[1].size == 0


def test_presence_bits_span_words():
    A = sp.csr_matrix(np.arange(1.0, 26.0).reshape(5, 5))   # b = 3: blocks of 9 bits across words
    state = convert(A, 3, max_fill=1e9)
    assert state.scalars == (2, 2, 4, 0)
    bits = state.index_arrays[2].view(np.uint32)
    assert bits.size == 2                                    # 36 bits
    got = [(int(bits[k >> 5]) >> (k & 31)) & 1 for k in range(36)]
    want = np.zeros((2, 2, 3, 3), dtype=int)                 # block row, block, row, col
    for i in range(5):
        for j in range(5):
            want[i // 3, j // 3, i % 3, j % 3] = 1
    assert got == want.ravel().tolist()


def test_edge_blocks_ignore_rows_and_columns_past_the_matrix():
    A = sp.csr_matrix(np.ones((3, 3)))
    state = convert(A, 4, max_fill=1e9)
    assert state.scalars == (1, 1, 1, 0)
    np.testing.assert_array_equal(state.value_arrays[0].reshape(4, 4), np.pad(np.ones((3, 3)), ((0, 1), (0, 1))))
    y = np.full(3, np.nan)
    _core.mv(state, 0, np.array([1.0, 2.0, 3.0]), y)        # x has exactly ncols entries
    np.testing.assert_array_equal(y, [6, 6, 6])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("b", [1, 2, 3, 4, 8, 32])
# the threaded loops run in .ci/run's sanitized build, whose SPMV_OMP_MIN_WORK is 64
@pytest.mark.parametrize(("m", "n", "density"), [(1, 1, 1.0), (1, 1, 0.0), (9, 9, 0.0), (45, 45, 0.1),
                                                 (37, 90, 0.05), (90, 13, 0.3),
                                                 (400, 300, 0.2), (3, 200, 1.0)])
def test_round_trip_and_product(m, n, density, b, dtype):
    A = random_csr(m, n, density, seed=m * n + b, dtype=dtype)
    state = convert(A, b, dtype, max_fill=1e9)
    assert state.value_arrays[0].dtype == dtype
    assert_exact_and_close(state, A, dtype)


def test_blocks_match_scipy_bsr():
    A = random_csr(41, 29, 0.15, seed=5)
    # scipy needs the shape a multiple of b: the same pattern in a 44 x 32 frame
    indptr = np.concatenate([A.indptr, np.full(3, A.nnz)])
    ref = sp.csr_matrix((A.data, A.indices, indptr), shape=(44, 32)).tobsr(blocksize=(4, 4))
    ref.sort_indices()
    s = convert(A, 4, max_fill=1e9)
    scalars, idx, val = s.scalars, s.index_arrays, s.value_arrays
    assert scalars == (11, 8, ref.indices.size, 0)
    np.testing.assert_array_equal(idx[0], ref.indptr)
    np.testing.assert_array_equal(idx[1], ref.indices)
    np.testing.assert_array_equal(val[0], ref.data.ravel())


@pytest.mark.parametrize("b", [0, -1, 33, 64])
def test_bad_block_size(b):
    with pytest.raises(ValueError, match=rf"'b' parameter of bsr must be a block size in \[1, 32\]. Got {b}"):
        convert(SMALL, b)


def test_guard():
    rows = np.arange(100)
    A = sp.csr_matrix((np.ones(100), (rows, 8 * rows)), shape=(100, 800))  # one entry per block
    with pytest.raises(_core.NotApplicableError, match="BSR with b=8 pads to 6400 stored slots.*max_fill"):
        convert(A, 8)
    assert convert(A, 4).scalars[2] == 100
