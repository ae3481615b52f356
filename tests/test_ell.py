"""ELL through the private glue: column-major layout, padding, round trip, products, the guard."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.sparse as sp
from glue import TOL, convert_raw, rel_err
from glue import random_csr as glue_random_csr

from pyspmv import _core


def convert(A, dtype=np.float64, max_fill=0.0):
    return convert_raw("ell", A, dtype=dtype, max_fill=max_fill)


random_csr = functools.partial(glue_random_csr, placement="uniform")


def test_layout_is_column_major_with_padding():
    # rows: [1 . 0 .], [], [. 3 . .], [4 5 6 7]; the 0 is explicit
    A = sp.csr_matrix((np.array([1.0, 0.0, 3.0, 4.0, 5.0, 6.0, 7.0]), np.array([0, 2, 1, 0, 1, 2, 3]),
                       np.array([0, 2, 2, 3, 7])), shape=(4, 4))
    s = convert(A)
    idx, val = s.index_arrays, s.value_arrays
    assert (s.format_name, s.nrows, s.ncols, s.nnz, s.scalars) == ("ell", 4, 4, 7, (4, 0, 0, 0))
    np.testing.assert_array_equal(idx[0], [0, -1, 1, 0, 2, -1, -1, 1, -1, -1, -1, 2, -1, -1, -1, 3])
    np.testing.assert_array_equal(val[0], [1, 0, 3, 4, 0, 0, 0, 5, 0, 0, 0, 6, 0, 0, 0, 7])
    assert all(a.size == 0 for a in idx[1:]) and val[1].size == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_no_entries_gives_width_zero(dtype):
    A = sp.csr_matrix((5, 3), dtype=dtype)
    st = convert(A, dtype)
    assert st.scalars[0] == 0 and st.index_arrays[0].size == 0 and st.value_arrays[0].size == 0
    ip, ix, v = _core.to_csr(st)
    np.testing.assert_array_equal(ip, np.zeros(6))
    assert ix.size == 0 and v.size == 0 and v.dtype == dtype
    y = np.full(5, np.nan, dtype)
    _core.mv(st, 0, np.ones(3, dtype), y)
    np.testing.assert_array_equal(y, np.zeros(5))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("m", "n", "density"), [(1, 1, 1.0), (1, 1, 0.0), (40, 40, 0.1), (30, 70, 0.05),
                                                 (70, 30, 0.2), (9, 9, 0.0)])
def test_round_trip_exact(m, n, density, dtype):
    A = random_csr(m, n, density, seed=m * n, dtype=dtype)
    ip, ix, v = _core.to_csr(convert(A, dtype, max_fill=1e9))
    np.testing.assert_array_equal(ip, A.indptr)
    np.testing.assert_array_equal(ix, A.indices)
    assert v.dtype == dtype
    np.testing.assert_array_equal(v, A.data)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("m", "n", "density"), [(1, 1, 1.0), (1, 1, 0.0), (50, 50, 0.1), (20, 90, 0.1),
                                                 (90, 20, 0.3), (400, 300, 0.25), (3000, 2000, 0.005),
                                                 (6, 4, 0.0)])
def test_mv_matches_scipy(m, n, density, dtype):
    A = random_csr(m, n, density, seed=m + n, dtype=dtype)
    st = convert(A, dtype, max_fill=1e9)
    assert st.scalars[0] == np.diff(A.indptr).max(initial=0)
    assert rel_err(st, A, dtype) <= TOL[dtype]


def test_one_dense_row_is_refused():
    n = 1000
    rows = [sp.csr_matrix(np.ones((1, n)))] + [sp.identity(n, format="csr")[i:i + 1] for i in range(1, n)]
    A = sp.vstack(rows, format="csr")
    with pytest.raises(_core.NotApplicableError, match=r"ELL width 1000.*max_fill=20"):
        convert(A)
    with pytest.raises(_core.NotApplicableError, match=r"max_fill=5"):
        convert(A, max_fill=5.0)
    st = convert(A, max_fill=1e9)
    assert st.scalars[0] == n and rel_err(st, A, np.float64) <= 1e-12
