"""CSR with its values as a table (``vals`` = 8 or 16, csrc/csr.c and csrc/vtab.c) through the private glue: exact
layout, exact round trip with and without the locality order, products against scipy in float64, refusals; and the
property test of both formats that keep a table (CSR's and JAD's)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from glue import TOL, assert_exact_and_close, convert_raw, few_values, state_args, value_indices
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import csr_matrices

import pyspmv
from pyspmv import _core

# rows: 0 -> cols 1, 4; 1 -> empty; 2 -> cols 0, 1, 2 (explicit zero), 5; 3 -> col 3; 4 -> cols 2, 5
SMALL = sp.csr_matrix((np.array([1.0, 2.0, 3.0, 4.0, 0.0, 5.0, 6.0, 7.0, 8.0]),
                       np.array([1, 4, 0, 1, 2, 5, 3, 2, 5]), np.array([0, 2, 2, 6, 7, 9])), shape=(5, 6))


@pytest.mark.parametrize("bits", [8, 16])
def test_layout(bits):
    s = convert_raw("csr", SMALL, 0, bits)
    idx, val = s.index_arrays, s.value_arrays
    assert s.params == (0, bits) and s.scalars == (0, 0, 0, 0)
    np.testing.assert_array_equal(idx[0], SMALL.indptr)                     # CSR's own row pointers ...
    np.testing.assert_array_equal(idx[1], SMALL.indices)                    # ... and columns
    assert idx[2].size == 0                                                 # no order
    np.testing.assert_array_equal(val[0], [0, 1, 2, 3, 4, 5, 6, 7, 8])      # distinct values, ascending bits
    assert idx[3].size == -(-9 * bits // 32)
    np.testing.assert_array_equal(value_indices(s, bits), [1, 2, 3, 4, 0, 5, 6, 7, 8])   # CSR's entry order
    assert not idx[3].view(np.uint8)[9 * bits // 8:].any()                  # the last word's spare slots: 0


@pytest.mark.parametrize("bits", [0, 8, 16])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
# the threaded loops run in .ci/run's sanitized build, whose SPMV_OMP_MIN_WORK is 64
@pytest.mark.parametrize(("m", "n", "density", "k"), [(1, 1, 1.0, 1), (1, 1, 0.0, 1), (9, 9, 0.0, 3),
                                                      (45, 45, 0.1, 2), (37, 90, 0.05, 7), (90, 13, 0.3, 256),
                                                      (400, 300, 0.2, 200), (3, 500, 1.0, 40)])
def test_round_trip_and_product(m, n, density, k, dtype, bits):
    """Empty matrices, one row, empty rows, rectangular shapes, a row of 500, explicit zeros and -0.0, every CPU
    kernel: the values come back bit for bit and the products match scipy."""
    A = few_values(m, n, density, m * n, dtype, k)
    s = convert_raw("csr", A, 0, bits, dtype=dtype)
    if bits:
        table = s.value_arrays[0]
        assert table.dtype == dtype and table.size == min(2**bits, A.nnz)
        distinct = np.unique(A.data.view(np.uint32 if dtype == np.float32 else np.uint64))
        np.testing.assert_array_equal(table.view(distinct.dtype)[:distinct.size], distinct)
        assert not table[distinct.size:].any()
    assert_exact_and_close(s, A, dtype)
    bits_of = np.uint32 if dtype == np.float32 else np.uint64
    np.testing.assert_array_equal(_core.to_csr(s)[2].view(bits_of), A.data.view(bits_of))   # -0.0 stays -0.0
    x = np.random.default_rng(k).uniform(-1, 1, n).astype(dtype)
    ref, scale = A.astype(np.float64) @ x.astype(np.float64), abs(A.astype(np.float64)) @ np.abs(x.astype(np.float64))
    for kernel in (0, 1):                                      # rows split evenly; nnz-balanced
        y = np.full(m, np.nan, dtype)
        _core.mv(s, kernel, x, y)
        assert np.all(np.abs(y - ref) <= TOL[dtype] * max(float(np.max(scale, initial=0.0)), 1e-300))


@pytest.mark.parametrize("bits", [8, 16])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_with_the_locality_order(bits, dtype):
    """order=1 and a table together: the table holds the permuted values' distinct ones, the product and the round
    trip undo the order."""
    A = few_values(120, 120, 0.06, 5, dtype, 9)
    A = sp.csr_matrix(A + A.T)                                  # RCM orders A + A^T; any square matrix will do
    A.sort_indices()
    s = convert_raw("csr", A, 1, bits, dtype=dtype)
    assert s.params == (1, bits) and s.index_arrays[2].size == 120
    assert_exact_and_close(s, A, dtype)
    plain = convert_raw("csr", A, 1, 0, dtype=dtype)
    np.testing.assert_array_equal(s.index_arrays[1], plain.index_arrays[1])          # same permuted pattern
    np.testing.assert_array_equal(s.value_arrays[0][value_indices(s, bits)], plain.value_arrays[0])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_too_many_values_is_not_applicable(dtype):
    A = few_values(40, 40, 0.5, 3, dtype, 2)
    A.data = np.arange(A.nnz, dtype=dtype) + 1                  # 800 distinct
    with pytest.raises(_core.NotApplicableError, match=r"vals=8 indexes at most 256 distinct values; this matrix "
                                                       r"has more: use vals=16 or vals=0"):
        convert_raw("csr", A, 0, 8, dtype=dtype)
    assert_exact_and_close(convert_raw("csr", A, 0, 16, dtype=dtype), A, dtype)
    with pytest.raises(ValueError, match=r"The 'vals' parameter of csr must be 0 \(values as they are\), 8 or 16"):
        convert_raw("csr", A, 0, 12, dtype=dtype)
    with pytest.raises(pyspmv.NotApplicableError, match=r"vals=8 indexes at most 256"):
        pyspmv.convert(A, "csr", vals=8)


@pytest.mark.parametrize(("fmt", "params"), [("csr", (0, 8)), ("jad", (8, 0))])
def test_state_checks(fmt, params):
    """Either format's state whose indices pass the table, whose spare slots are not 0, or whose index array has the
    wrong length is refused by name; its own arrays make a state again (a table holds no padding for the padding
    check to count)."""
    s = convert_raw(fmt, SMALL, *params)
    assert _core.to_csr(_core.State(**state_args(s)))[2].tolist() == SMALL.data.tolist()
    words = s.index_arrays[3].copy()
    words.view(np.uint8)[4] = 9                                 # entry 4's index: the table holds 9 values
    with pytest.raises(ValueError, match=fr"{fmt}: value index 9 of entry 4 is past the table's 9 values"):
        _core.State(**state_args(s, index_arrays=(*s.index_arrays[:3], words)))
    words = s.index_arrays[3].copy()
    words.view(np.uint8)[10] = 1                                # past nnz = 9
    with pytest.raises(ValueError, match=fr"{fmt}: value index slot 10 is past nnz = 9 and must hold 0"):
        _core.State(**state_args(s, index_arrays=(*s.index_arrays[:3], words)))
    with pytest.raises(ValueError, match=r"idx\[3\] \(value indices\) has 2 entries; it must have 3"):
        _core.State(**state_args(s, index_arrays=(*s.index_arrays[:3], s.index_arrays[3][:2])))


def test_csr_state_checks():
    """CSR's own: the vals slot's range, and a table's arrays under vals=0."""
    s = convert_raw("csr", SMALL, 0, 8)
    with pytest.raises(ValueError, match=r"The 'vals' parameter of csr must be 0"):
        _core.State(**state_args(s, params=(0, 4)))
    plain = convert_raw("csr", SMALL)                           # a table's arrays under vals=0: lengths refused
    with pytest.raises(ValueError, match=r"value indices"):
        _core.State(**state_args(plain, index_arrays=(*plain.index_arrays[:3], s.index_arrays[3])))


def test_configurations():
    """The GPU grid holds the table on csr/vector and csr/adaptive only; every published id stays (vals=0 is never
    printed)."""
    ids = [c.id for c in pyspmv.configs(device="cuda") if c.format == "csr"]
    with_table = [i for i in ids if "vals=" in i]
    assert with_table and all(i.startswith(("pyspmv/csr/vector/", "pyspmv/csr/adaptive/")) for i in with_table)
    assert {i.split("vals=")[1].split("/")[0] for i in with_table} == {"8", "16"}
    assert "pyspmv/csr/adaptive/bs=256" in ids and "pyspmv/csr/vector/tpv=8/bs=256" in ids
    assert not any("vals=0" in i for i in ids)
    assert pyspmv.config("pyspmv/csr/adaptive/vals=8/bs=64").params["vals"] == 8
    with pytest.raises(ValueError, match="vals"):
        pyspmv.config("pyspmv/csr/scalar/vals=8/bs=64")
    with pytest.raises(ValueError, match="vals"):
        pyspmv.config("cusparse/csr/default/vals=8")


@pytest.mark.parametrize(("fmt", "kernel"), [("csr", "cpu/csr/nnz"), ("jad", "cpu/jad")])
@pytest.mark.parametrize("bits", [8, 16])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@settings(max_examples=40, deadline=None)
@given(A=csr_matrices(), k=st.integers(1, 6))
def test_property(fmt, kernel, bits, dtype, k, A):
    """Any matrix of few distinct values (empty rows, one row, long rows, duplicates summed, explicit zeros)
    round-trips exactly through either format's table and multiplies as scipy does in float64, on its CPU kernel."""
    S = A.to_scipy().astype(dtype)
    S.data = (np.round(S.data) % k).astype(dtype)               # at most k distinct values, zeros kept stored
    B = pyspmv.convert(S, fmt, vals=bits)
    assert B.to_csr() == pyspmv.Matrix(S)
    x = np.random.default_rng(S.nnz).uniform(-1, 1, S.shape[1]).astype(dtype)
    y = pyspmv.spmv(S, x, f"{kernel}/vals={bits}")
    ref, scale = S.astype(np.float64) @ x.astype(np.float64), abs(S.astype(np.float64)) @ np.abs(x.astype(np.float64))
    assert np.all(np.abs(y - ref) <= TOL[np.dtype(dtype).type] * max(float(np.max(scale, initial=0.0)), 1e-300))
