"""BRO-ELL through the private glue: exact packed layout, symbol widths, round trip, products."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from glue import TOL, convert_raw, random_csr, rel_err

from pyspmv import _core


def convert(A, h, bits, dtype=np.float64, max_fill=0.0):
    return convert_raw("bro_ell", A, h, bits, dtype=dtype, max_fill=max_fill)


def from_rows(rows, ncols, dtype=np.float64):
    """CSR from a list of column lists; values 1, 2, 3, ..."""
    indptr = np.concatenate([[0], np.cumsum([len(r) for r in rows])]).astype(np.int32)
    indices = np.array([c for r in rows for c in r], dtype=np.int32)
    data = np.arange(1, indices.size + 1, dtype=dtype)
    return sp.csr_matrix((data, indices, indptr), shape=(len(rows), ncols))


def assert_round_trip(state, A):
    indptr, indices, values = _core.to_csr(state)
    np.testing.assert_array_equal(indptr, A.indptr)
    np.testing.assert_array_equal(indices, A.indices)
    np.testing.assert_array_equal(values, A.data)           # explicit zeros kept, bit for bit


# rows: 0 -> cols 1, 4; 1 -> empty; 2 -> cols 0, 1, 2 (explicit zero), 5; 3 -> col 3; 4 -> cols 2, 5
# symbols: 0 -> 2, 3; 2 -> 1, 1, 1, 3; 3 -> 4; 4 -> 3, 3
SMALL = sp.csr_matrix((np.array([1.0, 2.0, 3.0, 4.0, 0.0, 5.0, 6.0, 7.0, 8.0]),
                       np.array([1, 4, 0, 1, 2, 5, 3, 2, 5]), np.array([0, 2, 2, 6, 7, 9])), shape=(5, 6))
SMALL_VALUES = [1, 0, 2, 0, 3, 6, 4, 0, 0, 0, 5, 0, 7, 0, 8, 0]


def test_layout_adaptive():
    s = convert(SMALL, 2, 0)
    idx, val = s.index_arrays, s.value_arrays
    assert (s.format_name, s.nrows, s.ncols, s.nnz, s.params, s.scalars) == ("bro_ell", 5, 6, 9, (2, 0), (3, 6, 16, 0))
    np.testing.assert_array_equal(idx[0], [0, 2, 4, 6])      # one word per row in every slice
    np.testing.assert_array_equal(idx[1], [0, 4, 12, 16])
    np.testing.assert_array_equal(idx[2], [2, 2, 4, 3, 2, 2])  # (W, bits): max symbols 3, 4, 3
    np.testing.assert_array_equal(idx[3], [2 | 3 << 2, 0, 1 | 1 << 3 | 1 << 6 | 3 << 9, 4, 3 | 3 << 2, 0])
    np.testing.assert_array_equal(val[0], SMALL_VALUES)


def test_layout_fixed_8_and_32():
    s = convert(SMALL, 2, 8)
    scalars, idx, val = s.scalars, s.index_arrays, s.value_arrays
    assert scalars == (3, 6, 16, 0)
    np.testing.assert_array_equal(idx[2], [2, 8, 4, 8, 2, 8])
    np.testing.assert_array_equal(idx[3], [2 | 3 << 8, 0, 1 | 1 << 8 | 1 << 16 | 3 << 24, 4, 3 | 3 << 8, 0])
    np.testing.assert_array_equal(val[0], SMALL_VALUES)
    s = convert(SMALL, 2, 32)  # one symbol per word: W words per row
    scalars, idx, val = s.scalars, s.index_arrays, s.value_arrays
    assert scalars == (3, 16, 16, 0)
    np.testing.assert_array_equal(idx[0], [0, 4, 12, 16])
    np.testing.assert_array_equal(idx[3], [2, 0, 3, 0, 1, 4, 1, 0, 1, 0, 3, 0, 3, 0, 3, 0])
    np.testing.assert_array_equal(val[0], SMALL_VALUES)


def test_one_bit_symbols_fill_whole_words():
    # 40 consecutive columns: 40 symbols of 1 -> bits 1, 32 per word, the first word all ones
    A = from_rows([list(range(40)), [0]], 40)
    s = convert(A, 2, 0)
    scalars, idx = s.scalars, s.index_arrays
    np.testing.assert_array_equal(idx[2], [40, 1])
    np.testing.assert_array_equal(idx[3], [-1, 1, 0xFF, 0])  # 0xFFFFFFFF as int32, then 8 ones
    assert scalars == (1, 4, 80, 0)
    assert_round_trip(convert(A, 2, 0), A)
    assert rel_err(convert(A, 2, 0), A, np.float64) <= TOL[np.float64]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("h", "bits"), [(1, 0), (4, 0), (32, 32), (1, 16), (8, 8), (2, 16)])
# the threaded loops run in .ci/run's sanitized build, whose SPMV_OMP_MIN_WORK is 64
@pytest.mark.parametrize(("m", "n", "density"), [(1, 1, 1.0), (1, 1, 0.0), (9, 9, 0.0), (45, 45, 0.1),
                                                 (37, 90, 0.05), (90, 13, 0.3),
                                                 (400, 300, 0.2), (20, 200, 1.0)])
def test_round_trip_and_product(m, n, density, h, bits, dtype):
    A = random_csr(m, n, density, seed=m * n + h + bits, dtype=dtype)
    state = convert(A, h, bits, dtype, max_fill=1e9)
    assert state.index_arrays[3].dtype == np.int32 and state.value_arrays[0].dtype == dtype
    assert_round_trip(state, A)
    assert rel_err(state, A, dtype) <= TOL[dtype]


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("bits", [0, 32])
def test_deltas_near_two_to_the_16(bits, dtype):
    n = 3 * 2**16
    # slice maxima: 65535 (16 bits), 65537 (17 bits: one symbol per word), 6 (3 bits)
    rows = [[0, 2**16 - 1], [1], [2**16 - 1], [2**16, 2 * 2**16 + 1, n - 1], [], [5]]
    A = from_rows(rows, n, dtype)
    state = convert(A, 2, bits, dtype)
    expect = [(2, 16), (3, 17), (1, 3)] if bits == 0 else [(2, 32), (3, 32), (1, 32)]
    np.testing.assert_array_equal(state.index_arrays[2].reshape(-1, 2), expect)
    if bits == 0:                                            # symbols 1 and 65535 share one word
        np.testing.assert_array_equal(state.index_arrays[3][:2].view(np.uint32), [1 | 0xFFFF << 16, 2])
    assert_round_trip(state, A)
    assert rel_err(state, A, dtype) <= TOL[dtype]


def test_delta_too_wide_for_fixed_bits():
    n = 3 * 2**16
    ok = from_rows([[0, 2**16 - 1], [2**16 - 2]], n)        # symbols 1, 65535 and 65535
    assert_round_trip(convert(ok, 1, 16), ok)
    with pytest.raises(_core.NotApplicableError, match="bits=16 cannot code the column delta 65536 in row 1"):
        convert(from_rows([[0, 2**16 - 1], [0, 2**16]], n), 1, 16)
    with pytest.raises(_core.NotApplicableError, match="bits=16 cannot code the column delta 65536 in row 0"):
        convert(from_rows([[2**16 - 1]], n), 4, 16)          # the first symbol is col + 1
    with pytest.raises(_core.NotApplicableError, match="bits=8 cannot code the column delta 256 in row 2"):
        convert(from_rows([[0], [1, 200], [3, 259]], 300), 4, 8)


@pytest.mark.parametrize("bits", [0, 32])
def test_deltas_near_two_to_the_31(bits):
    n = 2**31 - 1                                            # largest ncols: no x of that size here
    rows = [[0, n - 1], [n - 1], [n - 2], [2**30, 2**31 - 3]]
    A = from_rows(rows, n)
    state = convert(A, 2, bits)
    np.testing.assert_array_equal(state.index_arrays[2], [2, 31, 2, 31] if bits == 0 else [2, 32, 2, 32])
    assert_round_trip(state, A)
    with pytest.raises(_core.NotApplicableError, match="delta 2147483646 in row 0"):
        convert(A, 2, 16)
    with pytest.raises(_core.NotApplicableError, match="delta 2147483647 in row 1"):
        convert(from_rows([[0], [n - 1]], n), 2, 16)


def test_large_gaps_product():
    n = 2**20 + 7
    rng = np.random.default_rng(3)
    rows = [sorted(rng.choice(n, size=int(rng.integers(0, 6)), replace=False).tolist()) for _ in range(50)]
    rows[7] = [0, n - 1]
    A = from_rows(rows, n)
    for bits in (0, 32):
        state = convert(A, 4, bits)
        assert_round_trip(state, A)
        assert rel_err(state, A, np.float64) <= TOL[np.float64]


@pytest.mark.parametrize(("h", "bits", "match"), [
    (48, 0, r"'h' parameter of bro_ell must be a power of two in \[1, 1024\]. Got 48"),
    (0, 0, "'h' parameter.*Got 0"), (2048, 0, "'h' parameter.*Got 2048"),
    (4, 12, r"'bits' parameter of bro_ell must be 0 \(adaptive\), 8, 16 or 32. Got 12"),
    (4, -8, "'bits' parameter.*Got -8"), (4, 64, "'bits' parameter.*Got 64"),
])
def test_bad_parameters(h, bits, match):
    with pytest.raises(ValueError, match=match):
        convert(SMALL, h, bits)


def test_guard():
    A = sp.lil_matrix((64, 64))
    A.setdiag(1.0)
    A[0, :] = 2.0                                            # one slice 64 wide, the rest width 1
    with pytest.raises(_core.NotApplicableError, match="BRO-ELL with h=64 pads to 4096 stored slots.*max_fill"):
        convert(A, 64, 0)
    assert convert(A, 4, 0).scalars[2] == 4 * 64 + 15 * 4 * 1
