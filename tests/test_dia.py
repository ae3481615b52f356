"""DIA through the private glue: offsets, presence bits, round trip, products, the guard."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import functools

import numpy as np
import pytest
import scipy.sparse as sp
from glue import assert_exact_and_close, convert_raw, rel_err
from glue import random_csr as glue_random_csr

from pyspmv import _core


def convert(A, dtype=np.float64, max_fill=0.0):
    return convert_raw("dia", A, dtype=dtype, max_fill=max_fill)


random_csr = functools.partial(glue_random_csr, placement="uniform")


def banded(m, n, offsets, seed, dtype=np.float64):
    """Random values on the given diagonals (clipped to the shape), every 5th an explicit zero."""
    rng = np.random.default_rng(seed)
    A = sp.diags([rng.uniform(-1, 1, min(m, n) + abs(o)) for o in offsets], offsets, shape=(m, n),
                 format="csr", dtype=dtype)
    A.sort_indices()
    A.data[::5] = 0
    return A


def test_layout_offsets_data_and_presence_bits():
    # 3x4: (0,0)=1, (0,2)=0 explicit, row 1 empty, (2,1)=3, (2,3)=4
    A = sp.csr_matrix((np.array([1.0, 0.0, 3.0, 4.0]), np.array([0, 2, 1, 3]), np.array([0, 2, 2, 4])),
                      shape=(3, 4))
    s = convert(A)
    idx, val = s.index_arrays, s.value_arrays
    assert (s.format_name, s.nrows, s.ncols, s.nnz, s.scalars) == ("dia", 3, 4, 4, (4, 0, 0, 0))
    np.testing.assert_array_equal(idx[0], [-1, 0, 1, 2])
    np.testing.assert_array_equal(val[0], [0, 0, 3, 1, 0, 0, 0, 0, 4, 0, 0, 0])
    # bits d*nrows + i: (d=0,i=2)=2, (1,0)=3, (2,2)=8, (3,0)=9 -- bit 9 is the explicit zero
    np.testing.assert_array_equal(idx[1], [(1 << 2) | (1 << 3) | (1 << 8) | (1 << 9)])
    assert idx[2].size == 0 and idx[3].size == 0 and val[1].size == 0


def test_presence_bits_span_words():
    A = banded(40, 40, [-3, 0, 5], seed=1)
    st = convert(A)
    assert st.scalars[0] == 3 and st.index_arrays[1].size == (3 * 40 + 31) // 32
    bits = np.unpackbits(st.index_arrays[1].view(np.uint8), bitorder="little")[: 3 * 40].reshape(3, 40)
    for d, o in enumerate([-3, 0, 5]):
        rows = np.arange(40)
        np.testing.assert_array_equal(bits[d], (rows + o >= 0) & (rows + o < 40))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_no_entries_gives_no_diagonals(dtype):
    st = convert(sp.csr_matrix((4, 6), dtype=dtype), dtype)
    assert st.scalars[0] == 0 and all(a.size == 0 for a in st.index_arrays) and all(a.size == 0 for a in st.value_arrays)
    ip, ix, v = _core.to_csr(st)
    np.testing.assert_array_equal(ip, np.zeros(5))
    assert ix.size == 0 and v.size == 0 and v.dtype == dtype
    y = np.full(4, np.nan, dtype)
    _core.mv(st, 0, np.ones(6, dtype), y)
    np.testing.assert_array_equal(y, np.zeros(4))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("m", "n", "density"), [(1, 1, 1.0), (1, 1, 0.0), (40, 40, 0.1), (30, 70, 0.05),
                                                 (70, 30, 0.2), (9, 9, 0.0), (1, 60, 0.5), (60, 1, 0.5)])
def test_random_round_trip_and_mv(m, n, density, dtype):
    A = random_csr(m, n, density, seed=m * n, dtype=dtype)
    st = convert(A, dtype, max_fill=1e9)
    assert st.scalars[0] == len(np.unique(A.indices - np.repeat(np.arange(m), np.diff(A.indptr))))
    assert_exact_and_close(st, A, dtype)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("m", "n", "offsets"), [(20000, 20000, [-700, -1, 0, 1, 3000]),
                                                 (3000, 5000, [-2999, -10, 0, 2500, 4999]),
                                                 (5000, 3000, [-4999, -2500, 0, 7, 2999])])
def test_banded_round_trip_and_mv(m, n, offsets, dtype):
    # diagonals that run off either edge: the kernel must clip them to x's range
    A = banded(m, n, offsets, seed=m + n, dtype=dtype)
    st = convert(A, dtype)
    np.testing.assert_array_equal(st.index_arrays[0], offsets)
    assert_exact_and_close(st, A, dtype)


def test_many_diagonals_are_refused():
    n = 200
    A = sp.csr_matrix(np.fliplr(np.eye(n)))  # anti-diagonal: n distinct offsets, one entry each
    with pytest.raises(_core.NotApplicableError, match=r"DIA with 200 diagonals.*max_fill=20"):
        convert(A)
    st = convert(A, max_fill=1e9)
    assert st.scalars[0] == n and rel_err(st, A, np.float64) <= 1e-12
