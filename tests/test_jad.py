"""JAD through the private glue: exact layout, exact round trip, products against scipy."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from glue import assert_exact_and_close, convert_raw, few_values, random_csr, value_indices

from pyspmv import _core


def convert(A, dtype=np.float64, max_fill=0.0):
    return convert_raw("jad", A, dtype=dtype, max_fill=max_fill)


# rows: 0 -> cols 1, 4; 1 -> empty; 2 -> cols 0, 1, 2 (explicit zero), 5; 3 -> col 3; 4 -> cols 2, 5
SMALL = sp.csr_matrix((np.array([1.0, 2.0, 3.0, 4.0, 0.0, 5.0, 6.0, 7.0, 8.0]),
                       np.array([1, 4, 0, 1, 2, 5, 3, 2, 5]), np.array([0, 2, 2, 6, 7, 9])), shape=(5, 6))


def test_layout():
    s = convert(SMALL)
    idx, val = s.index_arrays, s.value_arrays
    assert (s.format_name, s.nrows, s.ncols, s.nnz, s.scalars) == ("jad", 5, 6, 9, (4, 0, 0, 0))
    np.testing.assert_array_equal(idx[0], [2, 0, 4, 3, 1])   # lengths 4, 2, 2, 1, 0; ties keep order
    np.testing.assert_array_equal(idx[1], [0, 4, 7, 8, 9])   # diagonals of 4, 3, 1, 1 rows
    np.testing.assert_array_equal(idx[2], [0, 1, 2, 3, 1, 4, 5, 2, 5])
    np.testing.assert_array_equal(val[0], [3, 1, 7, 6, 4, 2, 8, 0, 5])
    assert idx[3].size == 0 and val[1].size == 0


def test_empty_matrix():
    state = convert(sp.csr_matrix((4, 3)))
    assert state.scalars == (0, 0, 0, 0)
    np.testing.assert_array_equal(state.index_arrays[0], [0, 1, 2, 3])
    np.testing.assert_array_equal(state.index_arrays[1], [0])
    y = np.full(4, np.nan)
    _core.mv(state, 0, np.ones(3), y)
    np.testing.assert_array_equal(y, 0)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
# the threaded loops run in .ci/run's sanitized build, whose SPMV_OMP_MIN_WORK is 64
@pytest.mark.parametrize(("m", "n", "density"), [(1, 1, 1.0), (1, 1, 0.0), (9, 9, 0.0), (45, 45, 0.1),
                                                 (37, 90, 0.05), (90, 13, 0.3),
                                                 (400, 300, 0.2), (3, 500, 1.0)])
def test_round_trip_and_product(m, n, density, dtype):
    A = random_csr(m, n, density, seed=m * n, dtype=dtype)
    state = convert(A, dtype)
    assert state.value_arrays[0].dtype == dtype
    assert_exact_and_close(state, A, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_very_long_row_needs_no_padding(dtype):
    A = sp.lil_matrix((500, 400))
    A.setdiag(1.0)
    A[250, :] = np.linspace(-1, 1, 400)
    A = sp.csr_matrix(A, dtype=dtype)
    state = convert(A, dtype, max_fill=1.0)                  # exactly nnz slots: any max_fill is met
    assert state.scalars[0] == 400 and state.index_arrays[2].size == A.nnz
    assert state.index_arrays[0][0] == 250
    assert_exact_and_close(state, A, dtype)


# ---- values as indices into a table of the distinct ones (vals = 8 or 16; csrc/vtab.c) ------------------------

@pytest.mark.parametrize("bits", [8, 16])
def test_value_table_layout(bits):
    s = convert_raw("jad", SMALL, bits)
    idx, val = s.index_arrays, s.value_arrays
    assert s.params[0] == bits
    np.testing.assert_array_equal(idx[2], [0, 1, 2, 3, 1, 4, 5, 2, 5])      # the columns as without a table
    np.testing.assert_array_equal(val[0], np.arange(9.0))                   # distinct values, ascending bits
    assert idx[3].size == -(-9 * bits // 32)
    np.testing.assert_array_equal(value_indices(s, bits), [3, 1, 7, 6, 4, 2, 8, 0, 5])
    assert not idx[3].view(np.uint8)[9 * bits // 8:].any()                  # the last word's spare slots: 0


@pytest.mark.parametrize("bits", [8, 16])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("m", "n", "density", "k"), [(1, 1, 1.0, 1), (1, 1, 0.0, 1), (9, 9, 0.0, 3),
                                                      (45, 45, 0.1, 2), (37, 90, 0.05, 7), (90, 13, 0.3, 256),
                                                      (400, 300, 0.2, 200), (3, 500, 1.0, 40)])
def test_value_table_round_trip_and_product(m, n, density, k, dtype, bits):
    A = few_values(m, n, density, m * n, dtype, k)
    s = convert_raw("jad", A, bits, dtype=dtype)
    table = s.value_arrays[0]
    assert table.dtype == dtype and table.size == min(2**bits, A.nnz)
    distinct = np.unique(A.data.view(np.uint32 if dtype == np.float32 else np.uint64))
    np.testing.assert_array_equal(table.view(distinct.dtype)[:distinct.size], distinct)
    assert not table[distinct.size:].any()
    assert_exact_and_close(s, A, dtype)                     # -0.0 comes back as -0.0: compared bit for bit below
    np.testing.assert_array_equal(_core.to_csr(s)[2].view(distinct.dtype), A.data.view(distinct.dtype))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_value_table_of_too_many_values_is_not_applicable(dtype):
    A = random_csr(40, 40, 0.5, seed=3, dtype=dtype)
    A.data = np.arange(A.nnz, dtype=dtype) + 1                  # 800 distinct
    with pytest.raises(_core.NotApplicableError, match=r"vals=8 indexes at most 256 distinct values; this matrix "
                                                       r"has more: use vals=16 or vals=0"):
        convert_raw("jad", A, 8, dtype=dtype)
    assert_exact_and_close(convert_raw("jad", A, 16, dtype=dtype), A, dtype)
    B = A.copy()
    B.data = np.arange(B.nnz, dtype=np.float64) + 1
    B = sp.vstack([B] * 90, format="csr")                       # 72,000 entries, 800 distinct values ...
    B.data = np.arange(B.nnz, dtype=np.float64).astype(dtype)   # ... now each its own (exact in float32 too)
    with pytest.raises(_core.NotApplicableError, match=r"vals=16 indexes at most 65536 distinct values; this "
                                                       r"matrix has more: use vals=0$"):
        convert_raw("jad", B, 16, dtype=dtype)
    with pytest.raises(ValueError, match=r"The 'vals' parameter of jad must be 0 \(values as they are\), 8 or 16"):
        convert_raw("jad", A, 12, dtype=dtype)
