"""SELL-C-sigma through the private glue: exact layout, exact round trip, products against scipy."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from glue import assert_exact_and_close, convert_raw, random_csr

from pyspmv import _core


def convert(A, c, sigma, dtype=np.float64, max_fill=0.0):
    return convert_raw("sell", A, c, sigma, dtype=dtype, max_fill=max_fill)


def long_rows(m, n, seed):
    """Rows of length 0..n with a few completely dense ones: slices of very different widths."""
    rng = np.random.default_rng(seed)
    A = sp.lil_matrix((m, n))
    for i in range(m):
        k = n if i % 17 == 3 else int(rng.integers(0, 4))
        for j in rng.choice(n, size=k, replace=False):
            A[i, j] = rng.uniform(-1, 1)
    return sp.csr_matrix(A)


# rows: 0 -> cols 1, 4; 1 -> empty; 2 -> cols 0, 1, 2 (explicit zero), 5; 3 -> col 3; 4 -> cols 2, 5
SMALL = sp.csr_matrix((np.array([1.0, 2.0, 3.0, 4.0, 0.0, 5.0, 6.0, 7.0, 8.0]),
                       np.array([1, 4, 0, 1, 2, 5, 3, 2, 5]), np.array([0, 2, 2, 6, 7, 9])), shape=(5, 6))


def test_layout_sorted_windows():
    s = convert(SMALL, 2, 4)
    idx, val = s.index_arrays, s.value_arrays
    assert (s.format_name, s.nrows, s.ncols, s.nnz, s.params, s.scalars) == ("sell", 5, 6, 9, (2, 4), (3, 14, 0, 0))
    np.testing.assert_array_equal(idx[0], [2, 0, 3, 1, 4])    # window [0, 4) sorted, row 4 alone
    np.testing.assert_array_equal(idx[1], [0, 8, 10, 14])      # widths 4, 1, 2 times C = 2
    np.testing.assert_array_equal(idx[2], [0, 1, 1, 4, 2, -1, 5, -1, 3, -1, 2, -1, 5, -1])
    np.testing.assert_array_equal(val[0], [3, 1, 4, 2, 0, 0, 5, 0, 6, 0, 7, 0, 8, 0])
    assert idx[3].size == 0 and val[1].size == 0


def test_layout_unsorted():
    s = convert(SMALL, 2, 1)
    scalars, idx, val = s.scalars, s.index_arrays, s.value_arrays
    assert scalars == (3, 16, 0, 0)
    np.testing.assert_array_equal(idx[0], np.arange(5))
    np.testing.assert_array_equal(idx[1], [0, 4, 12, 16])
    np.testing.assert_array_equal(idx[2], [1, -1, 4, -1, 0, 3, 1, -1, 2, -1, 5, -1, 2, -1, 5, -1])
    np.testing.assert_array_equal(val[0], [1, 0, 2, 0, 3, 6, 4, 0, 0, 0, 5, 0, 7, 0, 8, 0])


def test_sorting_is_stable_and_stays_in_its_window():
    lengths = [1, 3, 1, 3, 2, 0, 2, 5]
    rows = [[j for j in range(k)] for k in lengths]
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    A = sp.csr_matrix((np.ones(indptr[-1]), np.concatenate(rows), indptr), shape=(8, 6))
    np.testing.assert_array_equal(convert(A, 2, 4).index_arrays[0], [1, 3, 0, 2, 7, 4, 6, 5])
    np.testing.assert_array_equal(convert(A, 1, 8).index_arrays[0], [7, 1, 3, 4, 6, 0, 2, 5])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("c", "sigma"), [(1, 1), (4, 1), (8, 64), (2, 2), (32, 1024)])
# the threaded loops run in .ci/run's sanitized build, whose SPMV_OMP_MIN_WORK is 64
@pytest.mark.parametrize(("m", "n", "density"), [(1, 1, 1.0), (1, 1, 0.0), (9, 9, 0.0), (45, 45, 0.1),
                                                 (37, 90, 0.05), (90, 13, 0.3),
                                                 (400, 300, 0.2)])
def test_round_trip_and_product(m, n, density, c, sigma, dtype):
    A = random_csr(m, n, density, seed=m * n + c, dtype=dtype)
    state = convert(A, c, sigma, dtype, max_fill=1e9)
    assert state.index_arrays[2].dtype == np.int32 and state.value_arrays[0].dtype == dtype
    assert_exact_and_close(state, A, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("c", "sigma"), [(4, 1), (8, 8), (16, 256)])
def test_very_long_rows(c, sigma, dtype):
    A = long_rows(203, 300, seed=c).astype(dtype)
    state = convert(A, c, sigma, dtype, max_fill=1e9)
    assert_exact_and_close(state, A, dtype)


def test_sorting_cuts_padding():
    A = long_rows(256, 300, seed=1)
    assert convert(A, 8, 256, max_fill=1e9).scalars[1] < convert(A, 8, 1, max_fill=1e9).scalars[1]


@pytest.mark.parametrize(("c", "sigma", "match"), [
    (48, 1, r"'c' parameter of sell must be a power of two in \[1, 1024\]. Got 48"),
    (0, 1, "'c' parameter.*Got 0"), (2048, 1, "'c' parameter.*Got 2048"), (-4, 1, "'c' parameter.*Got -4"),
    (4, 6, r"'sigma' parameter of sell must be 1 or a positive multiple of c = 4 up to 1048576. Got 6"),
    (4, 0, "'sigma' parameter.*Got 0"), (4, -4, "'sigma' parameter.*Got -4"),
    (4, 2**21, "'sigma' parameter.*Got 2097152"),
])
def test_bad_parameters(c, sigma, match):
    with pytest.raises(ValueError, match=match):
        convert(SMALL, c, sigma)


def test_guard():
    A = sp.lil_matrix((64, 64))
    A.setdiag(1.0)
    A[0, :] = 2.0                                            # one slice 64 wide, the rest width 1
    with pytest.raises(_core.NotApplicableError, match="SELL-64-1 pads to 4096 stored slots.*max_fill"):
        convert(A, 64, 1)
    assert convert(A, 4, 1).scalars[1] == 4 * 64 + 15 * 4 * 1
