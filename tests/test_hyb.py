"""HYB through the private glue: the ELL/COO split, Bell-Garland width, round trip, products, K checks."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import functools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from glue import assert_exact_and_close, convert_raw
from glue import random_csr as glue_random_csr

from pyspmv import _core


def convert(A, k=-1, dtype=np.float64, max_fill=0.0):
    return convert_raw("hyb", A, k, dtype=dtype, max_fill=max_fill)


random_csr = functools.partial(glue_random_csr, placement="uniform")


def bell_garland(A):
    """Largest K with at least T = min(nrows, max(4096, ceil(nrows/3))) rows of length >= K."""
    lengths = np.diff(A.indptr)
    t = min(A.shape[0], max(4096, math.ceil(A.shape[0] / 3)))
    return max((k for k in range(lengths.max(initial=0) + 1) if np.count_nonzero(lengths >= k) >= t), default=0)


def small():
    # rows: [1 2 0 .], [], [. 3 . .], [4 5 6 7]; the 0 is explicit
    return sp.csr_matrix((np.array([1.0, 2.0, 0.0, 3.0, 4.0, 5.0, 6.0, 7.0]), np.array([0, 1, 2, 1, 0, 1, 2, 3]),
                          np.array([0, 3, 3, 4, 8])), shape=(4, 4))


def test_layout_splits_each_row_at_k():
    s = convert(small(), k=2)
    idx, val = s.index_arrays, s.value_arrays
    assert (s.format_name, s.nrows, s.ncols, s.nnz, s.params, s.scalars) == ("hyb", 4, 4, 8, (2, 0), (2, 3, 0, 0))
    np.testing.assert_array_equal(idx[0], [0, -1, 1, 0, 1, -1, -1, 1])
    np.testing.assert_array_equal(val[0], [1, 0, 3, 4, 2, 0, 0, 5])
    np.testing.assert_array_equal(idx[1], [0, 3, 3])
    np.testing.assert_array_equal(idx[2], [2, 2, 3])
    np.testing.assert_array_equal(val[1], [0, 6, 7])
    assert idx[3].size == 0


def test_k_zero_is_all_coo_and_k_past_longest_row_is_all_ell():
    st = convert(small(), k=0)
    assert st.scalars[:2] == (0, 8) and st.index_arrays[0].size == 0
    np.testing.assert_array_equal(st.index_arrays[1], [0, 0, 0, 2, 3, 3, 3, 3])
    st = convert(small(), k=6, max_fill=1e9)
    assert st.scalars[:2] == (6, 0) and st.index_arrays[0].size == 24 and st.index_arrays[1].size == 0 and st.value_arrays[1].size == 0
    np.testing.assert_array_equal(st.index_arrays[0][16:], [-1] * 8)
    for s in (convert(small(), k=0), convert(small(), k=6, max_fill=1e9)):
        ip, ix, v = _core.to_csr(s)
        np.testing.assert_array_equal(ip, small().indptr)
        np.testing.assert_array_equal(ix, small().indices)
        np.testing.assert_array_equal(v, small().data)


@pytest.mark.parametrize(("m", "n", "density"), [(4, 4, 0.5), (300, 200, 0.05), (15000, 200, 0.01),
                                                 (5000, 100, 0.0), (1, 1, 1.0)])
def test_default_width_is_bell_garland(m, n, density):
    A = random_csr(m, n, density, seed=m)
    st = convert(A, k=-1, max_fill=1e9)
    k = bell_garland(A)
    assert st.params == (-1, 0)
    assert st.scalars[0] == k
    assert st.scalars[1] == np.maximum(np.diff(A.indptr) - k, 0).sum()


def test_skewed_rows_bell_garland():
    # 6000 rows of length 2, 3000 of length 5: T = 4096, so K = 2 (only 3000 rows reach 5)
    lengths = np.array([2] * 6000 + [5] * 3000)
    indptr = np.concatenate([[0], np.cumsum(lengths)])
    indices = np.concatenate([np.arange(n) for n in lengths])
    A = sp.csr_matrix((np.ones(indptr[-1]), indices, indptr), shape=(9000, 10))
    st = convert(A, k=-1)
    assert st.scalars[:2] == (2, 3000 * 3) == (bell_garland(A), 9000)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("k", [-1, 0, 1, 3, 50])
@pytest.mark.parametrize(("m", "n", "density"), [(1, 1, 1.0), (1, 1, 0.0), (40, 40, 0.1), (30, 70, 0.05),
                                                 (70, 30, 0.2), (9, 9, 0.0), (2000, 3000, 0.01)])
def test_round_trip_and_mv(m, n, density, k, dtype):
    A = random_csr(m, n, density, seed=m * n + k, dtype=dtype)
    st = convert(A, k=k, dtype=dtype, max_fill=1e9)
    assert_exact_and_close(st, A, dtype)


@pytest.mark.parametrize("k", [-2, -100, -(2**31)])
def test_bad_k_is_refused(k):
    with pytest.raises(ValueError, match=r"'k' parameter.*-1.*\[0, 2147483647\]"):
        convert(small(), k=k)


def test_guard_counts_ell_padding_and_coo():
    assert convert(small(), k=40).scalars[:2] == (40, 0)  # 4*40 slots = 20 * nnz: at the limit
    with pytest.raises(_core.NotApplicableError, match=r"HYB with ELL width 41 .*max_fill=20"):
        convert(small(), k=41)
    with pytest.raises(_core.NotApplicableError, match=r"int32"):
        convert(small(), k=2**31 - 1)  # refused before anything of that size is allocated
