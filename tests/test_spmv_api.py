"""spmv(), convert(), configs() and benchmark(): arguments, errors and results."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import pyspmv


@pytest.fixture
def A():
    return pyspmv.generate("poisson2d", 12)


def test_config_ids_are_stable_and_parse_back():
    ids = [c.id for c in pyspmv.configs("cpu")]
    assert len(ids) == len(set(ids))
    assert "cpu/csr/rows" in ids and "cpu/sell/c=8/sigma=64" in ids
    for i in ids:
        assert pyspmv.config(i).id == i


def test_unknown_config_ids():
    with pytest.raises(ValueError, match="Unknown configuration id 'cpu/nope'"):
        pyspmv.config("cpu/nope")
    with pytest.raises(ValueError, match="'q' is not a parameter of cpu/sell"):
        pyspmv.config("cpu/sell/q=3")
    with pytest.raises(ValueError, match="parameter 'c' must be a non-negative integer \\(ASCII digits\\). Got 'x'"):
        pyspmv.config("cpu/sell/c=x")
    with pytest.raises(TypeError):
        pyspmv.config(3)
    with pytest.raises(ValueError, match="'device' parameter of configs"):
        pyspmv.configs("tpu")


def test_omitted_parameters_take_defaults(A):
    c = pyspmv.config("cpu/sell")
    assert c.format_kwargs == {"c": 8, "sigma": 1}
    np.testing.assert_allclose(pyspmv.spmv(A, np.ones(A.ncols), c), A.to_scipy() @ np.ones(A.ncols))


def test_spmv_bad_x(A):
    with pytest.raises(ValueError, match="'x' has shape \\(3,\\); it must be 1-D with ncols = 144"):
        pyspmv.spmv(A, np.ones(3))
    with pytest.raises(TypeError, match="'x' must hold real numbers"):
        pyspmv.spmv(A, np.ones(A.ncols, dtype=complex))


@pytest.mark.parametrize("fmt", ["dia", "bsr"])
def test_non_finite_x_is_refused_where_padding_multiplies_it(A, fmt):
    x = np.ones(A.ncols)
    x[7] = np.inf
    cfg = next(c for c in pyspmv.configs() if c.format == fmt)
    with pytest.raises(ValueError, match=r"x\[7\] is inf: the .* format multiplies its padding zeros"):
        pyspmv.spmv(A, x, cfg)
    y = pyspmv.spmv(A, x, "cpu/csr/rows")  # CSR stores no padding: inf propagates as in scipy
    np.testing.assert_array_equal(y, A.to_scipy() @ x)


def test_spmv_with_mismatched_format_matrix(A):
    F = pyspmv.convert(A, "sell", c=4, sigma=1)
    with pytest.raises(ValueError, match="cannot run; pass the Matrix"):
        pyspmv.spmv(F, np.ones(A.ncols), "cpu/sell/c=8/sigma=1")


def test_convert_parameter_errors(A):
    with pytest.raises(ValueError, match="'fmt' parameter of convert\\(\\) must be one of"):
        pyspmv.convert(A, "csc")
    with pytest.raises(ValueError, match="unknown parameter\\(s\\) \\['q'\\] for format 'sell'"):
        pyspmv.convert(A, "sell", q=3)
    with pytest.raises(ValueError, match="'max_fill' parameter"):
        pyspmv.convert(A, "ell", max_fill=0)
    with pytest.raises(TypeError, match="'c' parameter of convert\\(\\) must be an integer"):
        pyspmv.convert(A, "sell", c=2.5)
    with pytest.raises(ValueError, match="c"):
        pyspmv.convert(A, "sell", C=48)  # case-insensitive name; 48 is not a power of two


def test_format_matrix_reports_sizes(A):
    F = pyspmv.convert(A, "csr")
    assert F.nbytes == 4 * (A.nrows + 1) + 4 * A.nnz + 8 * A.nnz
    assert F.padding_ratio == 1.0
    assert "csr" in repr(F)


def test_benchmark_table(A):
    df = pyspmv.benchmark(A, ["cpu/csr/rows", "cpu/csr/nnz"], dtype="float32", repeats=5, warmup=1, progress=False)
    assert list(df.columns) == pyspmv.benchmark.__globals__["COLUMNS"]
    assert (df.status == "ok").all() and (df.repeats == 5).all()
    assert (df.q25_ms <= df.median_ms).all() and (df.median_ms <= df.q75_ms).all() and (df.min_ms <= df.q25_ms).all()
    assert (df.convert_ms > 0).all() and (df.dtype == "float32").all()
    assert df.attrs["device_info"]["device"] == "cpu"


def test_benchmark_reports_not_applicable_rows_instead_of_dropping_them():
    import scipy.sparse as sp
    S = sp.lil_array((500, 500))
    S.setdiag(1.0)
    S[0, :] = 1.0
    df = pyspmv.benchmark(pyspmv.Matrix(S), ["cpu/ell", "cpu/csr/rows"], repeats=3, progress=False)
    ell = df.set_index("config").loc["cpu/ell"]
    assert ell.status == "not_applicable" and "max_fill" in ell.note and np.isnan(ell.median_ms)
    assert df.set_index("config").loc["cpu/csr/rows"].status == "ok"


def test_benchmark_budget_stops_early(A):
    df = pyspmv.benchmark(A, ["cpu/csr/rows"], repeats=10**6, warmup=0, budget_s=0.01, progress=False)
    assert 1 <= df.repeats.iloc[0] < 10**6


def test_benchmark_argument_errors(A):
    with pytest.raises(ValueError, match="'repeats' parameter"):
        pyspmv.benchmark(A, repeats=0)
    with pytest.raises(TypeError, match="'dtype' parameter"):
        pyspmv.benchmark(A, dtype="float16")


def test_gpu_absent_raises_device_unavailable(A):
    from pyspmv.devices import gpu

    reason = gpu.unavailable_reason()
    if reason is None:
        pytest.skip("a GPU is usable here")
    assert reason  # says why
    with pytest.raises(pyspmv.DeviceUnavailableError, match="CUDA"):
        pyspmv.benchmark(A, [], device="cuda")
    with pytest.raises(pyspmv.DeviceUnavailableError, match="CUDA"):
        pyspmv.spmv(A, np.ones(A.ncols), "pyspmv/csr/vector/tpv=4/bs=128")
    assert issubclass(pyspmv.DeviceUnavailableError, RuntimeError)


def test_float32_overflow_benchmark_rows_not_applicable():
    """A float64 matrix past float32's range: every float32 configuration is not_applicable with the
    reason (it was once converted to inf and reported as 'wrong'), and convert() refuses it."""
    A = pyspmv.Matrix(sp.csr_array(np.array([[1e300, 0.0], [0.0, 2.0]])))
    df = pyspmv.benchmark(A, dtype="float32", repeats=2, progress=False)
    assert set(df.status) == {"not_applicable"}
    assert df.note.str.contains("float32 limit").all()
    df64 = pyspmv.benchmark(A, dtype="float64", repeats=2, progress=False)
    assert (df64.status == "ok").any() and not df64.status.isin(["wrong", "error"]).any()
    with pytest.raises(ValueError, match="float32 limit"):
        pyspmv.convert(A, "ell", dtype="float32")


def test_spmv_of_a_formatmatrix_neither_converts_nor_checks_again(A, monkeypatch):
    """A FormatMatrix goes to the core as it is: its State, checked when made, so no conversion and no
    state check (x is still checked)."""
    F = pyspmv.convert(A, "sell", c=8, sigma=64)
    state = F.state

    def no_convert(*args, **kwargs):
        raise AssertionError("spmv() converted a FormatMatrix again")

    monkeypatch.setattr(pyspmv.devices.run, "convert", no_convert)
    x = np.arange(A.ncols, dtype=np.float64)
    np.testing.assert_allclose(pyspmv.spmv(F, x, "cpu/sell/c=8/sigma=64"), A.to_scipy() @ x, rtol=1e-12)
    assert F.state is state and isinstance(state, pyspmv._core.State)
    with pytest.raises(ValueError, match="'x' has shape"):
        pyspmv.spmv(F, x[:-1], "cpu/sell/c=8/sigma=64")


def test_benchmark_several_dtypes_in_one_call(A):
    """Rows per dtype in the order given, configurations in order within; each type checked against
    its own reference (a float64 run on values cast down from float32 would fail it)."""
    ids = ["cpu/csr/rows", "cpu/ell", "cpu/sell/c=8/sigma=64"]
    df = pyspmv.benchmark(A, ids, dtype=["float64", "float32"], repeats=3, warmup=0, progress=False)
    assert list(df.dtype) == ["float64"] * 3 + ["float32"] * 3 and list(df.config) == ids * 2
    assert (df.status == "ok").all() and (df.convert_ms > 0).all()
    with pytest.raises(ValueError, match="distinct"):
        pyspmv.benchmark(A, ids, dtype=["float32", "float32"])
