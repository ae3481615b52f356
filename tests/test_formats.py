"""Every format and every CPU configuration against scipy: round trips and products."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pytest
from conftest import shared_params
from hypothesis import given
from strategies import csr_matrices

import pyspmv

DTYPES = ["float32", "float64"]
TOL = {"float32": 1e-5, "float64": 1e-12}

# Formats with parameters that exercise their corner cases (slice and block sizes that do not
# divide the small hypothesis shapes, no sorting and wide sorting windows, fixed and adaptive bits).
FORMAT_CASES = [
    ("csr", {}), ("coo", {}), ("ell", {}), ("sell", {"c": 4, "sigma": 1}), ("sell", {"c": 8, "sigma": 64}),
    ("sell", {"c": 1, "sigma": 1}), ("bro_ell", {"h": 4, "bits": 0}), ("bro_ell", {"h": 32, "bits": 32}),
    ("bro_ell", {"h": 1, "bits": 16}), ("hyb", {"k": -1}), ("hyb", {"k": 2}), ("dia", {}), ("jad", {}),
    ("bsr", {"b": 1}), ("bsr", {"b": 3}), ("bsr", {"b": 8}), ("cidx", {"bits": 8}), ("cidx", {"bits": 16}),
]
CASE_IDS = [f + "".join(f"-{k}{v}" for k, v in p.items()) for f, p in FORMAT_CASES]
CPU_CONFIGS = pyspmv.configs("cpu")


def relative_error(y: np.ndarray, A: pyspmv.Matrix, x: np.ndarray) -> float:
    """max |y - A x| / max (|A| |x|), the reference in float64 on the same (rounded) inputs."""
    S = A.astype("float64").to_scipy()
    x64 = x.astype(np.float64)
    ref = S @ x64
    scale = float(np.max(abs(S) @ np.abs(x64), initial=0.0))
    err = float(np.max(np.abs(y.astype(np.float64) - ref), initial=0.0))
    return err / scale if scale > 0 else err


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("fmt", "params"), FORMAT_CASES, ids=CASE_IDS)
@given(A=csr_matrices())
def test_round_trip_is_exact(fmt, params, dtype, A):
    A = A.astype(dtype)
    B = pyspmv.convert(A, fmt, max_fill=1e9, **params)
    assert B.dtype == A.dtype
    assert B.to_csr() == A  # pattern (explicit zeros included), values and dtype


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("cfg", CPU_CONFIGS, ids=[c.id for c in CPU_CONFIGS])
@given(A=csr_matrices())
def test_cpu_kernel_matches_scipy(cfg, dtype, A):
    A = A.astype(dtype)
    F = pyspmv.convert(A, cfg.format, max_fill=1e9, **cfg.format_kwargs)
    x = np.random.default_rng(A.nnz).uniform(-1, 1, A.ncols).astype(dtype)
    y = pyspmv.spmv(F, x, cfg)
    assert y.dtype == np.dtype(dtype) and y.shape == (A.nrows,)
    assert relative_error(y, A, x) <= TOL[dtype]


@pytest.mark.parametrize("path", shared_params())
def test_shared_matrix_every_format_and_config(path):
    A = pyspmv.load(path)
    x = np.random.default_rng(0).uniform(-1, 1, A.ncols)
    for fmt, params in FORMAT_CASES:
        try:
            B = pyspmv.convert(A, fmt, **params)
        except pyspmv.NotApplicableError as exc:
            assert "max_fill" in str(exc) or "int32" in str(exc) or "bits" in str(exc)
            continue
        assert B.to_csr() == A, (fmt, params)
    for dtype in DTYPES:
        try:
            Ad = A.astype(dtype)
        except ValueError as exc:  # values past float32's range (e.g. 'temp'): refused, not made inf
            assert "past the float32 limit" in str(exc)
            continue
        for cfg in CPU_CONFIGS:
            try:
                y = pyspmv.spmv(Ad, x, cfg)
            except pyspmv.NotApplicableError:
                continue
            assert relative_error(y, Ad, x.astype(dtype)) <= TOL[dtype], (cfg.id, dtype)


def test_every_format_has_a_case_and_a_cpu_config():
    assert {f for f, _ in FORMAT_CASES} == set(pyspmv.FORMATS)
    assert {c.format for c in CPU_CONFIGS} == set(pyspmv.FORMATS)


def test_padding_guard_reports_not_applicable_with_reason():
    # one dense row among 1000 single-entry rows: ELL would pad to 1000 x 1000 slots
    import scipy.sparse as sp
    S = sp.lil_array((1000, 1000))
    S.setdiag(1.0)
    S[0, :] = 2.0
    A = pyspmv.Matrix(S)
    with pytest.raises(pyspmv.NotApplicableError, match="max_fill"):
        pyspmv.convert(A, "ell")
    assert pyspmv.convert(A, "ell", max_fill=1000).to_csr() == A


@pytest.mark.parametrize(("fmt", "params"), FORMAT_CASES, ids=CASE_IDS)
def test_formatmatrix_of_a_user_state_copies_and_checks_it(fmt, params):
    """A state of writeable arrays is copied into read-only arrays over bytes, once, at construction:
    later writes to the user's arrays do not reach the FormatMatrix."""
    A = pyspmv.generate("random", 40, seed=3)
    B = pyspmv.convert(A, fmt, **params)
    st = B.state
    idx, val = tuple(a.copy() for a in st.index_arrays), tuple(a.copy() for a in st.value_arrays)
    F = pyspmv.FormatMatrix((fmt, st.nrows, st.ncols, st.nnz, st.params, st.scalars, idx, val), B.params)
    assert F.format == fmt and F.state.format == B.state.format
    for theirs, ours in zip(idx + val, F.index_arrays + F.value_arrays):
        assert ours is not theirs and type(ours.base) is bytes and not ours.flags.writeable
        np.testing.assert_array_equal(ours, theirs)
        theirs[...] = -7                                   # the user's copy, garbage now
    assert F.to_csr() == A
    x, y = np.arange(A.ncols, dtype=np.float64), np.zeros(A.nrows)
    pyspmv._core.mv(F.state, 0, x, y)                      # kernel 0: every format's default
    np.testing.assert_allclose(y, A.to_scipy() @ x, rtol=1e-12)


@pytest.mark.parametrize(("fmt", "params"), FORMAT_CASES, ids=CASE_IDS)
@given(A=csr_matrices())
def test_astype_equals_converting_in_that_type(fmt, params, A):
    """One conversion serves both value types: casting a float64 conversion gives exactly the
    float32 conversion, with the same (shared, read-only) index arrays, and back again."""
    A64 = A.astype("float64")
    B = pyspmv.convert(A64, fmt, max_fill=1e9, **params)
    B32 = B.astype("float32")
    direct = pyspmv.convert(A64, fmt, dtype="float32", max_fill=1e9, **params)
    assert B32.dtype == np.float32 and B32.scalars == direct.scalars and B.astype("float64") is B
    assert all(a is b for a, b in zip(B32.index_arrays, B.index_arrays))
    for got, want in zip(B32.value_arrays, direct.value_arrays):
        np.testing.assert_array_equal(got, want)
        assert not got.flags.writeable
    assert B32.to_csr() == A64.astype("float32")
    x = np.linspace(-1, 1, A.ncols, dtype=np.float32)
    y = np.empty(A.nrows, np.float32)
    pyspmv._core.mv(B32.state, 0, x, y)  # the cast state needs no check and runs as converted
    assert relative_error(y, A64.astype("float32"), x) <= TOL["float32"]


def test_astype_refuses_values_past_float32():
    import scipy.sparse as sp
    B = pyspmv.convert(sp.csr_array(np.array([[1e300, 0.0], [0.0, 2.0]])), "ell")
    with pytest.raises(ValueError, match="past float32's range"):
        B.astype("float32")
    with pytest.raises(TypeError, match="format state"):
        pyspmv._core.recast(tuple(B.index_arrays), False)
