"""Hypothesis strategies for sparse matrices that stress the edge cases formats get wrong."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import scipy.sparse as sp
from hypothesis import strategies as st

import pyspmv

VALUES = st.one_of(st.just(0.0), st.floats(-10, 10, allow_nan=False, allow_infinity=False, allow_subnormal=False, width=32))


@st.composite
def csr_matrices(draw: st.DrawFn, max_rows: int = 40, max_cols: int = 40, max_long_row: int = 300) -> pyspmv.Matrix:
    """A pyspmv.Matrix with, deliberately and often: empty rows, one row, 1x1, rectangular shapes,
    duplicate coordinates (summed on construction), explicit zeros, and one very long row."""
    shape = draw(st.one_of(
        st.tuples(st.integers(1, max_rows), st.integers(1, max_cols)),
        st.just((1, 1)),
        st.tuples(st.just(1), st.integers(1, max_cols)),            # one row
        st.tuples(st.integers(1, max_rows), st.just(1)),            # one column
        st.tuples(st.integers(1, 6), st.integers(max_cols, max_long_row)),  # wide: long rows
    ))
    nrows, ncols = shape
    n = draw(st.integers(0, min(3 * nrows * ncols, 400)))
    rows = draw(st.lists(st.integers(0, nrows - 1), min_size=n, max_size=n))
    cols = draw(st.lists(st.integers(0, ncols - 1), min_size=n, max_size=n))
    vals = draw(st.lists(VALUES, min_size=n, max_size=n))
    if draw(st.booleans()):                                         # a long, possibly full row
        r = draw(st.integers(0, nrows - 1))
        k = draw(st.integers(1, ncols))
        rows += [r] * k
        cols += list(range(ncols - k, ncols))
        vals += [1.5] * k
    coo = sp.coo_array((np.array(vals, dtype=np.float64), (np.array(rows, dtype=np.int64), np.array(cols, dtype=np.int64))),
                       shape=shape)
    return pyspmv.Matrix(coo)
