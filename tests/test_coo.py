"""COO through the private glue: exact layout, exact round trip, products against scipy."""
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
    return convert_raw("coo", A, dtype=dtype, max_fill=max_fill)


random_csr = functools.partial(glue_random_csr, placement="uniform")


def test_layout():
    A = sp.csr_matrix((np.array([1.0, 0.0, 3.0, 4.0, 5.0]), np.array([0, 2, 1, 0, 3]),
                       np.array([0, 2, 2, 3, 5])), shape=(4, 4))
    s = convert(A)
    idx, val = s.index_arrays, s.value_arrays
    assert (s.format_name, s.nrows, s.ncols, s.nnz, s.scalars) == ("coo", 4, 4, 5, (0, 0, 0, 0))
    np.testing.assert_array_equal(idx[0], [0, 0, 2, 3, 3])
    np.testing.assert_array_equal(idx[1], [0, 2, 1, 0, 3])
    assert idx[2].size == 0 and idx[3].size == 0
    np.testing.assert_array_equal(val[0], [1.0, 0.0, 3.0, 4.0, 5.0])
    assert val[1].size == 0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("m", "n", "density"), [(1, 1, 1.0), (1, 1, 0.0), (40, 40, 0.1), (30, 70, 0.05),
                                                 (70, 30, 0.2), (9, 9, 0.0)])
def test_round_trip_exact(m, n, density, dtype):
    A = random_csr(m, n, density, seed=m * n, dtype=dtype)
    ip, ix, v = _core.to_csr(convert(A, dtype))
    np.testing.assert_array_equal(ip, A.indptr)
    np.testing.assert_array_equal(ix, A.indices)
    assert v.dtype == dtype
    np.testing.assert_array_equal(v, A.data)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("m", "n", "density"), [(1, 1, 1.0), (1, 1, 0.0), (50, 50, 0.1), (20, 90, 0.1),
                                                 (90, 20, 0.3), (400, 300, 0.25), (6, 4, 0.0)])
def test_mv_matches_scipy(m, n, density, dtype):
    A = random_csr(m, n, density, seed=m + n, dtype=dtype)
    assert rel_err(convert(A, dtype), A, dtype) <= TOL[dtype]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_mv_threaded_long_row_and_empty_rows(dtype):
    # One dense row bigger than a thread's share, empty rows at both ends: chunk ends must move
    # to row boundaries without losing or doubling a row.
    dense = sp.csr_matrix(np.random.default_rng(1).uniform(-1, 1, (1, 40000)).astype(dtype))
    middle = random_csr(2980, 40000, 0.0002, seed=2, dtype=dtype)
    A = sp.vstack([sp.csr_matrix((5, 40000), dtype=dtype), dense, sp.csr_matrix((4, 40000), dtype=dtype),
                   middle, sp.csr_matrix((10, 40000), dtype=dtype)], format="csr")
    A.sort_indices()
    assert A.nnz > 40000
    st = convert(A, dtype)
    assert rel_err(st, A, dtype) <= TOL[dtype]
    y1, y2 = np.empty(3000, dtype), np.empty(3000, dtype)
    x = np.ones(40000, dtype)
    _core.mv(st, 0, x, y1)
    _core.mv(st, 0, x, y2)
    np.testing.assert_array_equal(y1, y2)
    assert np.all(y1[:5] == 0) and np.all(y1[2990:] == 0)


def test_y_is_overwritten():
    A = random_csr(30, 30, 0.1, seed=3)
    x = np.ones(30)
    y = np.full(30, 1e300)
    _core.mv(convert(A), 0, x, y)
    np.testing.assert_allclose(y, A @ x, rtol=1e-12, atol=0)
