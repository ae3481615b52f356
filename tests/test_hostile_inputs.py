"""Issue 11: hostile inputs to the Python API each become a clear exception naming the argument and the
limit (or the right answer), never a crash or a silent wrong answer."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import ast
import bz2
import gzip
import importlib
import time
from pathlib import Path

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp

import pyspmv
from pyspmv.devices import gpu
from pyspmv.devices.benchmark import _Runner
from pyspmv.matrices import mmio

DENSE = np.array([[1.0, 0.0, 2.0], [0.0, 0.0, 3.0], [4.0, 5.0, 0.0]])
FORMATS = ("csr", "csc", "coo", "bsr", "dia", "dok", "lil")


# ---- 1. scipy.sparse input: every format, index arrays checked before sparsetools reads them ----

@pytest.mark.parametrize("kind", ["matrix", "array"])
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_scipy_format_is_taken(fmt, kind):
    S = getattr(sp, f"{fmt}_{kind}")(DENSE)
    A = pyspmv.Matrix(S)
    np.testing.assert_array_equal(A.to_scipy().toarray(), DENSE)
    np.testing.assert_array_equal(A @ np.ones(3), DENSE @ np.ones(3))


@pytest.mark.parametrize("bad", [2**30, -1, 3])
def test_csr_column_index_outside_the_matrix(bad):
    S = sp.csr_array(DENSE)
    S.indices[1] = bad                                     # scipy's constructor checks nothing of this
    with pytest.raises(ValueError, match=rf"'data' parameter of Matrix\(\): column index {bad} in row 0 is "
                                         r"outside \[0, ncols = 3\)"):
        pyspmv.Matrix(S)
    with pytest.raises(ValueError, match=rf"'A': .*column index {bad} in row 0"):
        pyspmv.features(S)


def test_csr_indptr_is_checked():
    S = sp.csr_array(DENSE)
    S.indptr[2] = 1
    with pytest.raises(ValueError, match=r"indptr decreases at row 1: indptr\[2\] = 1 after indptr\[1\] = 2"):
        pyspmv.Matrix(S)
    S = sp.csr_array(DENSE)
    S.indptr[-1] = 99
    with pytest.raises(ValueError, match=r"indptr\[3\] = 99 but indices has length 5"):
        pyspmv.Matrix(S)
    S = sp.csr_array(DENSE)
    S.indptr = S.indptr[:-1]
    with pytest.raises(ValueError, match="'indptr' has length 3; it must be 4"):
        pyspmv.Matrix(S)


def test_csc_bsr_coo_dok_lil_indices_are_checked():
    C = sp.csc_array(DENSE)
    C.indices[0] = 7
    with pytest.raises(ValueError, match=r"row index 7 in column 0 is outside \[0, nrows = 3\)"):
        pyspmv.Matrix(C)
    B = sp.bsr_array(np.ones((4, 4)), blocksize=(2, 2))
    B.indices[0] = 5
    with pytest.raises(ValueError, match=r"block column index 5 in block row 0 is outside \[0, ncols/C = 2\)"):
        pyspmv.Matrix(B)
    O = sp.coo_array(DENSE)
    O.row[2] = -4
    with pytest.raises(ValueError, match=r"entry 2 \(row -4, column 2\) has row index -4, outside \[0, nrows = 3\)"):
        pyspmv.Matrix(O)
    D = sp.dok_array((3, 3))
    getattr(D, "_dict", D)[(1, 2**30)] = 1.0              # past dok's own bounds check
    with pytest.raises(ValueError, match=r"'data' parameter of Matrix\(\): .*1073741824.* 3"):
        pyspmv.Matrix(D)
    L = sp.lil_array(DENSE)
    L.rows[0].append(2**30)                               # a column index without a value
    with pytest.raises(ValueError, match="lil row 0 has 3 column indices but 2 values"):
        pyspmv.Matrix(L)
    L = sp.lil_array(DENSE)
    L.rows[0][1], L.rows[0][0] = 2**30, 2**30
    with pytest.raises(ValueError, match=r"column index 1073741824 in row 0 is outside \[0, ncols = 3\)"):
        pyspmv.Matrix(L)


def test_dia_is_converted_without_trusting_offsets():
    S = sp.dia_array((np.ones((2, 3)), [0, 5]), shape=(3, 3))
    S.offsets = np.array([0, 2**40])                        # past what scipy's dia_tocsr (C++) would cast to int32
    np.testing.assert_array_equal(pyspmv.Matrix(S).to_scipy().toarray(), np.eye(3))


def test_value_types_and_shapes():
    assert pyspmv.Matrix(sp.csr_array(DENSE > 0)).dtype == np.float64            # bool: 1.0 where True
    assert pyspmv.Matrix(sp.csr_array(DENSE.astype(np.int64))).dtype == np.float64
    with pytest.raises(TypeError, match="'data' parameter must hold real numbers"):
        pyspmv.Matrix(np.array([[1, None]], dtype=object))
    with pytest.raises(TypeError, match="complex"):
        pyspmv.Matrix(sp.coo_array(DENSE.astype(complex)))
    with pytest.raises(ValueError, match="must be 2-D. Got a 1-D scipy.sparse array of shape \\(3,\\)"):
        pyspmv.Matrix(sp.coo_array(np.ones(3)))
    big = sp.csr_array(np.array([[np.finfo(np.longdouble).max]], dtype=np.longdouble))
    if np.finfo(np.longdouble).max > np.finfo(np.float64).max:
        with pytest.raises(ValueError, match="past the float64 limit"):
            pyspmv.Matrix(big)


def test_non_finite_values_are_stored_as_given():
    A = pyspmv.Matrix(sp.csr_array(np.array([[np.nan, 0.0], [0.0, np.inf]])))
    assert np.isnan(A.data[0]) and np.isinf(A.data[1])
    np.testing.assert_array_equal(A @ np.ones(2), [np.nan, np.inf])


# ---- 2. Matrix Market: header read and checked before scipy reads the body ------------------------

def _mtx(tmp_path: Path, text: str, name: str = "m.mtx") -> Path:
    p = tmp_path / name
    p.write_text(text)
    return p


def test_declared_size_past_int32_is_refused_before_reading(tmp_path):
    p = _mtx(tmp_path, "%%MatrixMarket matrix coordinate real general\n2147483647 2147483647 1\n1 1 1.0\n")
    with pytest.raises(ValueError, match="declares 2147483647x2147483647 with 1 entries: .*past the limit 2147483646"):
        pyspmv.load(p)
    p = _mtx(tmp_path, "%%MatrixMarket matrix coordinate real general\n3 3 3000000000\n1 1 1.0\n")
    with pytest.raises(ValueError, match="3000000000 stored entries, past the int32 limit 2147483647"):
        pyspmv.load(p)


def test_declared_size_past_available_memory_is_refused(tmp_path, monkeypatch):
    monkeypatch.setattr(mmio, "available_memory", lambda: 10**9)
    p = _mtx(tmp_path, "%%MatrixMarket matrix coordinate real symmetric\n1000000 1000000 50000000\n1 1 1.0\n")
    with pytest.raises(MemoryError, match="needs about 12 GB, more than the 1 GB of memory available"):
        pyspmv.load(p)
    assert mmio.load_bytes(10, 100) == 100 * 56 + 11 * 12


def test_gzip_and_bzip2_by_content(tmp_path):
    text = b"%%MatrixMarket matrix coordinate real general\n2 2 1\n2 1 5.0\n"
    (tmp_path / "g.mtx").write_bytes(gzip.compress(text))      # gzip whatever the name says
    (tmp_path / "b.mtx.bz2").write_bytes(bz2.compress(text))
    for name in ("g.mtx", "b.mtx.bz2"):
        A = pyspmv.load(tmp_path / name)
        assert A.nnz == 1 and A.to_scipy()[1, 0] == 5.0


def test_skew_symmetric_diagonal_entry_is_refused(tmp_path):
    p = _mtx(tmp_path, "%%MatrixMarket matrix coordinate real skew-symmetric\n3 3 2\n2 1 1.5\n3 3 2.0\n")
    with pytest.raises(ValueError, match=r"skew-symmetric but stores the diagonal entry \(3, 3\) = 2.0"):
        pyspmv.load(p)


def test_number_that_overflows_is_refused_but_written_inf_is_kept(tmp_path):
    p = _mtx(tmp_path, "%%MatrixMarket matrix coordinate real general\n% note\n2 2 2\n1 1 inf\n2 2 1e400\n")
    with pytest.raises(ValueError, match="line 5: the value '1e400' is past the float64 limit 1.8e\\+308"):
        pyspmv.load(p)
    p = _mtx(tmp_path, "%%MatrixMarket matrix coordinate real general\n2 2 2\n1 1 inf\n2 2 -Infinity\n")
    assert np.isinf(pyspmv.load(p).data).all()


@pytest.mark.parametrize(("content", "message"), [
    (b"", "first line must read '%%MatrixMarket matrix"),
    (b"\x00\x01\x02binary junk\xff\n", "not a valid Matrix Market file"),
    (b"%%MatrixMarket matrix coordinate real general\n", "ends before its size line"),
    (b"%%MatrixMarket tensor coordinate real general\n1 1 1\n1 1 1\n", "first line must read"),
    (b"%%MatrixMarket matrix sparse real general\n1 1 1\n1 1 1\n", "format must be one of coordinate, array"),
    (b"%%MatrixMarket matrix coordinate real general\n2 2\n1 1 1\n", "must hold 3 non-negative integers"),
    (b"%%MatrixMarket matrix coordinate real general\n2 -2 1\n1 1 1\n", "must hold 3 non-negative integers"),
    (b"%%MatrixMarket matrix coordinate real general\n2 2 1_0\n1 1 1\n", "must hold 3 non-negative integers"),
    (b"%%MatrixMarket matrix coordinate real symmetric\n2 3 1\n1 1 1\n", "symmetric matrix must be square"),
    (b"%%MatrixMarket matrix coordinate real general\n0 3 0\n", "empty"),
    (b"%%MatrixMarket matrix coordinate real general\n2 2 1\n1 9 1\n", "not a valid Matrix Market file"),
    (gzip.compress(b"%%MatrixMarket")[:-4] + b"junk", "not a valid Matrix Market file"),
])
def test_files_that_are_not_matrix_market(tmp_path, content, message):
    p = tmp_path / "x.mtx"
    p.write_bytes(content)
    with pytest.raises(ValueError, match=message):
        pyspmv.load(p)


def test_complex_file_is_a_type_error(tmp_path):
    p = _mtx(tmp_path, "%%MatrixMarket matrix coordinate complex general\n1 1 1\n1 1 1.0 2.0\n")
    with pytest.raises(TypeError, match="complex values"):
        pyspmv.load(p)


# ---- 3. A @ x, paths wherever a matrix is taken, rank()'s dtype and device ----------------------

def test_matmul_and_paths(tmp_path):
    A = pyspmv.generate("poisson2d", 6)
    x = np.linspace(-1, 1, A.ncols)
    np.testing.assert_allclose(A @ x, A.to_scipy() @ x, rtol=1e-14)
    with pytest.raises(ValueError, match="'x' has shape"):
        A @ np.ones(3)
    scipy.io.mmwrite(tmp_path / "m.mtx", A.to_scipy())
    for path in (tmp_path / "m.mtx", str(tmp_path / "m.mtx")):
        assert pyspmv.rank(path, device="cpu") == pyspmv.rank(A, device="cpu")
        assert pyspmv.features(path) == pyspmv.features(A)
        np.testing.assert_allclose(pyspmv.spmv(path, x), A @ x)


def test_rank_follows_the_matrix_dtype_and_the_model_device(tmp_path):
    A = pyspmv.generate("random", 300, seed=1)
    A32 = A.astype("float32")
    cpu = pyspmv.default_model("cpu")
    assert pyspmv.rank(A32, cpu) == pyspmv.rank(A, cpu, dtype="float32") != pyspmv.rank(A, cpu)
    r = pyspmv.rank(A, model=cpu)                           # no device: the model's
    assert r and all(c.startswith("cpu/") for c, _ in r)
    assert all(not c.startswith("cpu/") for c, _ in pyspmv.rank(A))   # no model: the cuda default
    pyspmv.save_model(cpu, tmp_path / "cpu.pyspmv")
    assert pyspmv.rank(A, model=tmp_path / "cpu.pyspmv") == r
    with pytest.raises(ValueError, match="model ranks 'cpu' configurations; rank\\(\\) was asked for device 'cuda'"):
        pyspmv.rank(A, model=cpu, device="cuda")
    with pytest.raises(ValueError, match="'dtype' parameter of rank\\(\\) must be one of"):
        pyspmv.rank(A, cpu, dtype="int8")


def test_benchmark_device_follows_the_configurations():
    A = pyspmv.generate("poisson2d", 5)
    df = pyspmv.benchmark(A, ["cpu/csr/rows"], repeats=2, progress=False)
    assert df.device.tolist() == ["cpu"]
    with pytest.raises(ValueError, match="one device per call"):
        pyspmv.benchmark(A, ["cpu/csr/rows", "cusparse/csr/default"])


# ---- 4. float32 x past float32's range ------------------------------------------------------------

def test_float32_x_overflow_is_refused():
    A = pyspmv.generate("poisson2d", 4).astype("float32")
    x = np.ones(A.ncols)
    x[3] = 1e39
    with pytest.raises(ValueError, match=r"'x' holds \|value\| = 1e\+39, past the float32 limit 3.4e\+38"):
        pyspmv.spmv(A, x)
    assert np.isfinite(pyspmv.spmv(A, x, dtype="float64")).all()            # float64 takes it
    x[3] = np.inf                                             # non-finite x propagates, as in scipy
    assert np.isinf(pyspmv.spmv(A, x)).any()


# ---- 5. configuration ids --------------------------------------------------------------------------

@pytest.mark.parametrize(("cid", "message"), [
    ("cpu/sell/c=1_6", "parameter 'c' must be a non-negative integer \\(ASCII digits\\). Got '1_6'"),
    ("cpu/sell/c=\uff18", "must be a non-negative integer"),
    ("cpu/sell/c=+8", "Got '\\+8'"),
    ("cpu/sell/c= 8", "Got ' 8'"),
    ("cpu/sell/c=8 ", "Got '8 '"),
    ("cpu/sell/c=-8", "Got '-8'"),
    ("cpu/sell/c=8/c=8", "parameter 'c' is given twice"),
    ("cpu/sell/c=32", "parameter 'c' of cpu/sell must be one of 4, 8, 16. Got 32"),
    ("cpu/sell/c=8/", "'' follows the parameters"),
    (" cpu/csr/rows", "Unknown configuration id ' cpu/csr/rows'.*pyspmv.configs\\('cpu'\\)"),
    ("cpu/c=8/sell", "Unknown configuration id"),
    ("cpu/coo/q=1", "'q' is not a parameter of cpu/coo; it takes none"),
])
def test_configuration_ids_are_strict(cid, message):
    with pytest.raises(ValueError, match=message):
        pyspmv.config(cid)


def test_negative_only_where_the_default_is():
    assert pyspmv.config("cpu/hyb/k=-1").params == {"k": -1}
    assert pyspmv.config("cpu/sell/c=08").id == "cpu/sell/c=8"


# ---- 6. no NVIDIA driver -------------------------------------------------------------------------

def test_no_driver_is_said_plainly(monkeypatch):
    raw = ("no usable CUDA device: CUDA driver version is insufficient for CUDA runtime version "
           "(cudaErrorInsufficientDriver)")

    class FakeCuda:
        @staticmethod
        def device_count():
            raise pyspmv.DeviceUnavailableError(raw)

    monkeypatch.setattr(gpu, "_load", lambda: FakeCuda)
    monkeypatch.setattr(gpu, "driver_missing", lambda: "libcuda.so.1: cannot open shared object file")
    with pytest.raises(pyspmv.DeviceUnavailableError, match=r"no NVIDIA driver found \(libcuda.so.1 cannot be loaded"):
        gpu.cuda()
    monkeypatch.setattr(gpu, "driver_missing", lambda: None)
    with pytest.raises(pyspmv.DeviceUnavailableError, match="driver is older than the CUDA runtime"):
        gpu.cuda()
    assert "finds no CUDA GPU" in gpu.explain("no usable CUDA device: no CUDA-capable device (cudaErrorNoDevice)")


def test_cuda_module_imports_without_a_driver():
    if pyspmv._core.HAVE_NVCC:
        importlib.import_module("pyspmv._cuda")  # must not need libcuda to import
    assert gpu.available() or "NVIDIA" in gpu.unavailable_reason() or "CUDA" in gpu.unavailable_reason()


# ---- 7. Python 3.10, which pyproject.toml allows ------------------------------------------------

#: Standard-library names added in Python 3.11 or later.
NEWER = {"typing": {"Self", "LiteralString", "Never", "assert_never", "assert_type", "reveal_type", "Required",
                    "NotRequired", "TypeVarTuple", "Unpack", "dataclass_transform", "override", "get_overloads"},
         "enum": {"StrEnum", "ReprEnum", "verify", "member", "nonmember", "global_enum"},
         "datetime": {"UTC"}, "asyncio": {"TaskGroup", "timeout"}, "itertools": {"batched"}}


@pytest.mark.parametrize("path", sorted((Path(pyspmv.__file__).parent).rglob("*.py")), ids=lambda p: p.name)
def test_no_python_3_11_only_features(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        assert not isinstance(node, getattr(ast, "TryStar", ())), f"{path.name}:{node.lineno}: except* needs 3.11"
        if isinstance(node, ast.Import):
            assert not {a.name for a in node.names} & {"tomllib"}, f"{path.name}:{node.lineno}: tomllib needs 3.11"
        if isinstance(node, ast.ImportFrom) and node.module in NEWER:
            bad = {a.name for a in node.names} & NEWER[node.module]
            assert not bad, f"{path.name}:{node.lineno}: {node.module}.{bad} needs Python >= 3.11"
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in NEWER:
            assert node.attr not in NEWER[node.value.id], f"{path.name}:{node.lineno}: needs Python >= 3.11"


# ---- 8. timings on a busy machine ----------------------------------------------------------------

def _fake_bench(results):
    calls = iter(results)
    return lambda self, x, warmup, repeats, budget_s, back_to_back=1: next(calls)


def test_noisy_timings_are_retimed_then_warned(monkeypatch):
    A = pyspmv.generate("poisson2d", 5)
    busy = (5.17, 0.09, 11.7, 0.08, 200)
    monkeypatch.setattr(_Runner, "bench", _fake_bench([busy, busy]))
    with pytest.warns(pyspmv.NoisyTimingWarning, match="cpu/csr/nnz.*OMP_NUM_THREADS"):
        df = pyspmv.benchmark(A, ["cpu/csr/nnz"], repeats=200, progress=False)
    assert "timed twice" in df.note[0] and "noisy: q75/q25 = 130" in df.note[0]
    quiet = (0.17, 0.16, 0.18, 0.15, 200)
    monkeypatch.setattr(_Runner, "bench", _fake_bench([busy, quiet]))
    df = pyspmv.benchmark(A, ["cpu/csr/nnz"], repeats=200, progress=False)   # no warning: filterwarnings=error
    assert df.median_ms[0] == 0.17 and df.note[0] == "timed twice: q75/q25 was 130"
    jitter = (0.001, 0.001, 0.004, 0.001, 200)                                # microseconds: not a busy machine
    monkeypatch.setattr(_Runner, "bench", _fake_bench([jitter]))
    assert pyspmv.benchmark(A, ["cpu/csr/nnz"], repeats=200, progress=False).note[0] == ""


def test_a_checked_run_that_spends_the_budget_is_the_warm_up(monkeypatch):
    A = pyspmv.generate("poisson2d", 5)
    seen = []
    monkeypatch.setattr(_Runner, "bench", lambda self, x, warmup, repeats, budget_s, back_to_back=1: seen.append(warmup)
                        or (0.2, 0.19, 0.21, 0.18, 1))
    mv = _Runner.mv
    monkeypatch.setattr(_Runner, "mv", lambda self, x: time.sleep(0.03) or mv(self, x))
    pyspmv.benchmark(A, ["cpu/csr/rows"], repeats=5, warmup=7, budget_s=0.02, progress=False)
    pyspmv.benchmark(A, ["cpu/csr/rows"], repeats=5, warmup=7, budget_s=5.0, progress=False)
    pyspmv.benchmark(A, ["cpu/csr/rows"], repeats=5, warmup=7, budget_s=0.02, check=False, progress=False)
    assert seen == [0, 7, 7]


def test_budget_cut_is_noted(monkeypatch):
    A = pyspmv.generate("poisson2d", 5)
    monkeypatch.setattr(_Runner, "bench", _fake_bench([(0.2, 0.19, 0.21, 0.18, 79)]))
    df = pyspmv.benchmark(A, ["cpu/csr/rows"], repeats=200, progress=False)
    assert df.repeats[0] == 79 and df.note[0] == "budget_s = 1 s cut the runs to 79 of 200"
