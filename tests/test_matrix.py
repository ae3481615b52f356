"""Matrix construction, canonicalisation and Matrix Market loading, bad input included."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import gzip

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from conftest import SHARED, bad_files

import pyspmv


def test_duplicates_are_summed_and_explicit_zeros_kept():
    coo = sp.coo_array(([1.0, 2.0, 0.0, 5.0], ([0, 0, 1, 1], [2, 2, 0, 1])), shape=(2, 3))
    A = pyspmv.Matrix(coo)
    assert A.indptr.tolist() == [0, 1, 3]
    assert A.indices.tolist() == [2, 0, 1]
    assert A.data.tolist() == [3.0, 0.0, 5.0]  # the explicit zero at (1, 0) is part of the pattern


def test_unsorted_indices_are_sorted():
    S = sp.csr_array((np.array([1.0, 2.0]), np.array([3, 1]), np.array([0, 2])), shape=(1, 4))
    A = pyspmv.Matrix(S)
    assert A.indices.tolist() == [1, 3] and A.data.tolist() == [2.0, 1.0]


def test_dtype_rules():
    S = sp.random(5, 5, density=0.5, random_state=0, format="csr")
    assert pyspmv.Matrix(S).dtype == np.float64
    assert pyspmv.Matrix(S.astype(np.float32)).dtype == np.float32
    assert pyspmv.Matrix(S.astype(np.int64)).dtype == np.float64
    assert pyspmv.Matrix(S, dtype="float32").dtype == np.float32
    with pytest.raises(TypeError, match="'dtype' parameter must be 'float32' or 'float64'"):
        pyspmv.Matrix(S, dtype="int32")


def test_values_past_float32_range_are_refused_not_made_inf():
    S = sp.csr_array(np.array([[1e40, 0.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="past the float32 limit"):
        pyspmv.Matrix(S, dtype="float32")
    assert pyspmv.Matrix(S).data.max() == 1e40


def test_arrays_are_read_only():
    A = pyspmv.generate("poisson2d", 4)
    with pytest.raises(ValueError):
        A.data[0] = 1.0


def test_from_csr_arrays_refuses_unsorted_and_duplicate_indices():
    with pytest.raises(ValueError, match="row 0 has column 1 after column 3: indices must be sorted"):
        pyspmv.Matrix.from_csr_arrays([0, 2], [3, 1], [1.0, 2.0], (1, 4))
    with pytest.raises(ValueError, match="row 1 has column 2 after column 2"):
        pyspmv.Matrix.from_csr_arrays([0, 0, 2], [2, 2], [1.0, 2.0], (2, 4))


@pytest.mark.parametrize(("indptr", "indices", "shape", "message"), [
    ([0, 1], [0], (2, 2), "indptr has length 2; it must be nrows\\+1 = 3"),
    ([1, 1], [0], (1, 2), "indptr\\[0\\] is 1; it must be 0"),
    ([0, 2, 1, 2], [0, 1], (3, 2), "indptr decreases at position 2: 1 after 2"),
    ([0, 1], [5], (1, 3), "column index 5 in row 0 is outside \\[0, ncols = 3\\)"),
    ([0, 1], [-1], (1, 3), "column index -1 in row 0"),
    ([0, 3], [0, 1], (1, 3), "indptr\\[nrows\\] = 3 but indices has length 2"),
])
def test_from_csr_arrays_names_the_problem(indptr, indices, shape, message):
    data = np.ones(len(indices))
    with pytest.raises(ValueError, match=message):
        pyspmv.Matrix.from_csr_arrays(indptr, indices, data, shape)


def test_from_csr_arrays_wrong_data_length():
    with pytest.raises(ValueError, match="'data' has shape \\(1,\\); it must be 1-D with len\\(indices\\) = 2"):
        pyspmv.Matrix.from_csr_arrays([0, 2], [0, 1], [1.0], (1, 2))


@pytest.mark.parametrize("shape", [(0, 3), (3, 0), (0, 0)])
def test_empty_shape_is_refused(shape):
    with pytest.raises(ValueError, match="empty"):
        pyspmv.Matrix(sp.coo_array(shape))


def test_int32_overflow_of_rows_is_refused_before_allocating():
    big = sp.coo_array((np.array([1.0]), (np.array([0]), np.array([0]))), shape=(2**31, 1))
    with pytest.raises(ValueError, match="2147483648 rows, past the limit 2147483646: indptr's nrows \\+ 1"):
        pyspmv.Matrix(big)


def test_int32_overflow_of_indices_in_raw_arrays():
    with pytest.raises(ValueError, match="past the int32 limit"):
        pyspmv.Matrix.from_csr_arrays(np.array([0, 1], dtype=np.int64), np.array([2**31], dtype=np.int64), [1.0], (1, 3))


def test_complex_values_are_refused():
    with pytest.raises(TypeError, match="complex"):
        pyspmv.Matrix(sp.csr_array(np.array([[1 + 1j]])))


def test_dense_input_and_bad_dimensions():
    A = pyspmv.Matrix(np.array([[0.0, 1.0], [2.0, 0.0]]))
    assert A.nnz == 2
    with pytest.raises(ValueError, match="2-D"):
        pyspmv.Matrix(np.ones(3))


def test_load_round_trip_mtx_and_gz(tmp_path):
    S = sp.random(30, 20, density=0.2, random_state=1, format="coo")
    scipy.io.mmwrite(tmp_path / "m.mtx", S)
    with open(tmp_path / "m.mtx", "rb") as f, gzip.open(tmp_path / "g.mtx.gz", "wb") as g:
        g.write(f.read())
    A, B = pyspmv.load(tmp_path / "m.mtx"), pyspmv.load(tmp_path / "g.mtx.gz")
    assert A.name == "m" and B.name == "g"
    np.testing.assert_array_equal(A.to_scipy().toarray(), S.toarray())
    assert A == pyspmv.Matrix(B, name="m")


def test_load_missing_file():
    with pytest.raises(FileNotFoundError, match="no such file"):
        pyspmv.load("/nonexistent/m.mtx")


def test_load_file_that_is_not_matrix_market(tmp_path):
    p = tmp_path / "x.mtx"
    p.write_text("this is not a matrix\n1 2 3\n")
    with pytest.raises(ValueError, match="is not a valid Matrix Market file"):
        pyspmv.load(p)


def test_load_dense_array_file(tmp_path):
    scipy.io.mmwrite(tmp_path / "d.mtx", np.array([[1.0, 0.0], [0.0, 3.0]]))
    assert pyspmv.load(tmp_path / "d.mtx").nnz == 2


# ---- the real malformed files of ../shared/matrices/bad ----------------------------------------

EXPECT = {
    "bad_dimensions.mtx": (ValueError, "not a valid Matrix Market file: it ends before its size line"),
    "bad_header.mtx": (ValueError, "not a valid Matrix Market file: the banner's symmetry must be one of .* Got 'bogus'"),
    "bad_matrix_type.mtx": (TypeError, "holds complex values"),
    "wrong.mtx": (ValueError, r"not a valid Matrix Market file: line 3: the row index 0 is outside \[1, 2\]"),
}


@pytest.mark.parametrize("path", bad_files() or [pytest.param(None, marks=pytest.mark.skip(reason=f"{SHARED}/bad is absent"))],
                         ids=lambda p: p.name if p else "absent")
def test_shared_bad_file(path):
    if path.name in EXPECT:
        exc, msg = EXPECT[path.name]
        with pytest.raises(exc, match=msg):
            pyspmv.load(path)
        return
    # empty.mtx and the skew files are valid: a documented, correct result, never a crash
    A = pyspmv.load(path)
    S = scipy.io.mmread(path).tocsr()
    assert A.shape == S.shape
    x = np.linspace(-1, 1, A.ncols)
    for cfg in pyspmv.configs("cpu"):
        try:
            y = pyspmv.spmv(A, x, cfg)
        except pyspmv.NotApplicableError:
            continue
        np.testing.assert_allclose(y, S @ x, rtol=1e-12, atol=1e-12, err_msg=cfg.id)


@pytest.mark.parametrize("fmt", ["csr", "csc", "bsr"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_canonical_input_is_copied_once_into_its_type(fmt, dtype):
    """A sorted, duplicate-free float input skips the float64 round trip: the same values, bit for bit, in
    arrays of the Matrix's own (the caller's stay writeable and unshared)."""
    S = sp.random_array((60, 40), density=0.2, format="csr", dtype=dtype, rng=np.random.default_rng(5))
    S.data[::7] = 0.0                                      # explicit zeros are kept
    given = S.asformat(fmt) if fmt != "bsr" else S.tobsr(blocksize=(2, 2))
    M = pyspmv.Matrix(given)
    ref = S.tocsr()
    ref.sort_indices()
    assert M.dtype == dtype
    if fmt != "bsr":                                       # bsr stores its blocks' zeros too
        assert M.nnz == ref.nnz
        np.testing.assert_array_equal(M.data, ref.data)
        np.testing.assert_array_equal(M.indices, ref.indices)
    np.testing.assert_array_equal(M.to_scipy().toarray(), S.toarray())
    for a in ("data", "indices", "indptr"):
        arr = getattr(given, a)
        assert arr.flags.writeable and not np.shares_memory(getattr(M, a), arr)


def test_canonical_float64_past_float32_refused_as_float32():
    S = sp.csr_array(np.array([[1e39, 0.0], [0.0, 1.0]]))
    with pytest.raises(ValueError, match="past the float32 limit"):
        pyspmv.Matrix(S, dtype=np.float32)
    S.data[0] = np.inf                                     # inf is no finite value past the range: kept
    assert np.isinf(pyspmv.Matrix(S, dtype=np.float32).data[0])


@pytest.mark.parametrize("given", [np.float32, np.float64])
@pytest.mark.parametrize("dtype", [None, np.float32, np.float64])
def test_canonical_csr_is_checked_and_copied_in_one_pass(monkeypatch, given, dtype):
    """A canonical CSR of int32 indices takes the one threaded pass (spmv_csr_copy) and gives the arrays of the
    general path, bit for bit; a CSR that fails the pass (unsorted, duplicate, out-of-range indices) takes the
    general path: sorted and summed, or refused naming the row, as before."""
    from pyspmv import _core
    calls = []
    real = _core.csr_copy
    monkeypatch.setattr(_core, "csr_copy", lambda *a: calls.append(a[5]) or real(*a))
    rng = np.random.default_rng(3)
    C = sp.random_array((500, 300), density=0.05, format="coo", dtype=given, rng=rng)
    keep = C.row % 7 != 0                                  # empty rows
    S = sp.coo_array((C.data[keep], (C.row[keep], C.col[keep])), shape=C.shape).tocsr()
    S.indices, S.indptr = S.indices.astype(np.int32), S.indptr.astype(np.int32)
    S.data[::9] = 0.0                                      # explicit zeros
    M = pyspmv.Matrix(S, dtype=dtype)
    assert len(calls) == 1
    wide = S.copy()
    wide.indices = wide.indices.astype(np.int64)           # not int32: the general path
    G = pyspmv.Matrix(wide, dtype=dtype)
    assert len(calls) == 1
    for a in ("indptr", "indices", "data"):
        assert getattr(M, a).dtype == getattr(G, a).dtype and not getattr(M, a).flags.writeable
        np.testing.assert_array_equal(getattr(M, a), getattr(G, a))
    r = int(np.argmax(np.diff(S.indptr)))                  # the longest row: reversed, then a duplicate
    a, b = int(S.indptr[r]), int(S.indptr[r + 1])
    U = S.copy()
    U.indices[a:b], U.data[a:b] = U.indices[a:b][::-1].copy(), U.data[a:b][::-1].copy()
    np.testing.assert_array_equal(pyspmv.Matrix(U).to_scipy().toarray(), S.toarray())
    D = S.copy()
    D.indices[a + 1] = D.indices[a]
    dense = S.toarray().astype(np.float64)
    dense[r, S.indices[a]] += S.data[a + 1]
    dense[r, S.indices[a + 1]] -= S.data[a + 1]
    np.testing.assert_allclose(pyspmv.Matrix(D, dtype=np.float64).to_scipy().toarray(), dense, rtol=1e-6)
    B = S.copy()
    B.indices[b - 1] = 300
    with pytest.raises(ValueError, match=rf"column index 300 in row {r} is outside \[0, ncols = 300\)"):
        pyspmv.Matrix(B)
    assert len(calls) == 4
