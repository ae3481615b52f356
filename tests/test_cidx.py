"""cidx (CSR with 8- or 16-bit column offsets per chunk of 32 entries): layout, exact round trips, sizes from
the one pass, state checks, CPU products against float64, and (marker gpu) the CUDA kernels."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from glue import assert_exact_and_close, convert_raw, random_csr, state_args
from hypothesis import given, settings
from hypothesis import strategies as st
from strategies import csr_matrices

import pyspmv
from pyspmv import _core

DTYPES = [np.float32, np.float64]
BITS = [8, 16]
TOL = {"float32": 1e-5, "float64": 1e-12}


def convert(A, bits, dtype=np.float64):
    return convert_raw("cidx", A, bits, 0, dtype=dtype)


def unpack(words: np.ndarray, b: int) -> np.ndarray:
    """The b-bit fields of a packed int32 array, in the layout csrc/cidx.c documents."""
    return words.view(np.uint32).view({8: np.uint8, 16: np.uint16, 32: np.uint32}[b]).astype(np.int64)


def decode(state) -> np.ndarray:
    """Every entry's column from the state's base, off and hi read as the CUDA kernels read them (the words'
    bytes as uint8 or uint16 arrays), as csrc/cidx.c describes them."""
    bits = state.params[0]
    base, off, hi = (state.index_arrays[k] for k in (1, 2, 3))
    off, hi = unpack(off, bits)[:state.nnz], unpack(hi, 16 if bits == 16 else 32)
    p = np.arange(state.nnz)
    b = base[p // 32].astype(np.int64)
    esc = b < 0
    out = b + off
    out[esc] = (hi[32 * (-1 - b[esc]) + p[esc] % 32] << bits) | off[esc]
    return out


def spread(A: pyspmv.Matrix, stride: int) -> pyspmv.Matrix:
    """A with column j moved to j * stride (and as many more columns): the same rows, wider spans."""
    S = A.to_scipy().tocsr()
    B = sp.csr_matrix((S.data, S.indices.astype(np.int64) * stride, S.indptr), shape=(S.shape[0], S.shape[1] * stride))
    return pyspmv.Matrix(B)


@st.composite
def wide_matrices(draw):
    """csr_matrices() spread over wider columns, so that chunks escape 8 and 16 bits alike."""
    return spread(draw(csr_matrices()), draw(st.sampled_from([1, 7, 300, 5000])))


# ---- layout -------------------------------------------------------------------------------------------

def test_layout_ordinary_and_escape_chunks():
    """40 entries: chunk 0 (entries 0-31) spans columns 0..40001, chunk 1 (entries 32-39) 40002..40009."""
    rows = np.repeat(np.arange(4), 10)
    cols = np.concatenate([np.arange(10) * 31 + r for r in range(3)] + [np.arange(40_000, 40_010)])
    A = sp.csr_matrix((np.arange(1.0, 41.0), (rows, cols)), shape=(4, 40_010))
    A.data[5] = 0.0  # an explicit zero stays an entry
    s8 = convert(A, 8)
    assert (s8.format_name, s8.params, s8.scalars) == ("cidx", (8, 0), (2, 1, 0, 0))
    base, off, hi = s8.index_arrays[1:]
    assert base.tolist() == [-1, 40_002]                 # chunk 0 escapes 8 bits; chunk 1 does not
    assert off.size == 2 * 8 and hi.size == 32             # 8 words an 8-bit chunk, 32 a 32-bit hi chunk
    col = A.indices.astype(np.int64)
    np.testing.assert_array_equal(unpack(off, 8)[:40], np.concatenate([col[:32] & 255, col[32:] - 40_002]))
    np.testing.assert_array_equal(unpack(hi, 32), col[:32] >> 8)
    assert unpack(off, 8)[40:].tolist() == [0] * 24        # the last chunk's slots past nnz
    s16 = convert(A, 16)
    assert s16.scalars == (2, 0, 0, 0) and s16.index_arrays[1].tolist() == [0, 40_002]
    assert s16.index_arrays[2].size == 32 and s16.index_arrays[3].size == 0
    for s in (s8, s16):
        np.testing.assert_array_equal(s.index_arrays[0], A.indptr)
        np.testing.assert_array_equal(s.value_arrays[0], A.data)
        np.testing.assert_array_equal(decode(s), A.indices)
        assert_exact_and_close(s, A, np.float64)


def test_sixteen_bit_escape_keeps_sixteen_bit_high_parts():
    cols = np.array([0, 70_000, 2**31 - 2])
    A = sp.csr_matrix((np.ones(3), cols, [0, 3]), shape=(1, 2**31 - 1))
    s = convert(A, 16)
    assert s.scalars[:2] == (1, 1) and s.index_arrays[1].tolist() == [-1]
    assert s.index_arrays[3].size == 16                    # 32 high halves of 16 bits
    np.testing.assert_array_equal(unpack(s.index_arrays[3], 16)[:3], cols >> 16)
    np.testing.assert_array_equal(decode(s), cols)
    np.testing.assert_array_equal(_core.to_csr(s)[1], cols)


@pytest.mark.parametrize("bits", BITS)
def test_empty_matrix(bits):
    s = convert(sp.csr_matrix((4, 3)), bits)
    assert s.scalars == (0, 0, 0, 0)
    assert [a.size for a in s.index_arrays] == [5, 0, 0, 0] and s.value_arrays[0].size == 0
    y = np.full(4, np.nan)
    _core.mv(s, 0, np.ones(3), y)
    np.testing.assert_array_equal(y, 0)


def test_bits_refused_outside_8_and_16():
    for bits in (0, 4, 32):
        with pytest.raises(ValueError, match="'bits' parameter of cidx must be 8 or 16. Got"):
            pyspmv.convert(sp.eye(3, format="csr"), "cidx", bits=bits)


# ---- round trips and CPU products ---------------------------------------------------------------------

@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("dtype", DTYPES)
# the threaded loops run in .ci/run's sanitized build, whose SPMV_OMP_MIN_WORK is 64
@pytest.mark.parametrize(("m", "n", "density"), [(1, 1, 1.0), (1, 1, 0.0), (9, 9, 0.0), (45, 45, 0.1),
                                                 (37, 90, 0.05), (90, 13, 0.3), (400, 300, 0.2),
                                                 (3, 500, 1.0), (300, 90_000, 0.002), (70_000, 5, 0.05)])
def test_round_trip_and_product(m, n, density, dtype, bits):
    A = random_csr(m, n, density, seed=m * n, dtype=dtype)
    s = convert(A, bits, dtype)
    assert s.value_arrays[0].dtype == dtype
    assert_exact_and_close(s, A, dtype)


@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@settings(max_examples=60, deadline=None)
@given(A=wide_matrices())
def test_round_trip_is_exact_with_escapes(bits, dtype, A):
    A = A.astype(dtype)
    B = pyspmv.convert(A, "cidx", bits=bits)
    assert B.to_csr() == A                                 # pattern (explicit zeros included), values, dtype
    s = B._state
    np.testing.assert_array_equal(decode(s), A.indices)    # what the GPU reads gives the columns too
    nesc = sum(int(A.indices[p:p + 32].max()) - int(A.indices[p:p + 32].min()) >= 2**bits
               for p in range(0, A.nnz, 32))
    assert s.scalars[:2] == (-(-A.nnz // 32), nesc)


@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@settings(max_examples=60, deadline=None)
@given(A=wide_matrices())
def test_cpu_kernel_matches_float64(bits, dtype, A):
    A = A.astype(dtype)
    x = np.random.default_rng(A.nnz).uniform(-1, 1, A.ncols).astype(dtype)
    y = pyspmv.spmv(A, x, f"cpu/cidx/bits={bits}")
    S = A.astype("float64").to_scipy()
    ref, scale = S @ x.astype(np.float64), abs(S) @ np.abs(x.astype(np.float64))
    assert y.dtype == np.dtype(dtype) and y.shape == (A.nrows,)
    assert np.all(np.abs(y - ref) <= TOL[dtype] * max(float(np.max(scale, initial=0.0)), 1e-300))


@pytest.mark.parametrize("bits", BITS)
@pytest.mark.parametrize("dtype", DTYPES)
def test_one_huge_row(bits, dtype):
    A = sp.lil_matrix((500, 200_000))
    A.setdiag(1.0)
    A[250, ::3] = np.linspace(-1, 1, len(range(0, 200_000, 3)))
    A = sp.csr_matrix(A, dtype=dtype)
    assert_exact_and_close(convert(A, bits, dtype), A, dtype)


# ---- sizes --------------------------------------------------------------------------------------------

def _sizes_agree(M: pyspmv.Matrix) -> None:
    """config_features (the one pass) gives every cidx configuration the bytes of its size query."""
    ids = [c.id for c in pyspmv.configs() if c.format == "cidx"]
    for dtype, vb in (("float32", 4), ("float64", 8)):
        df = pyspmv.config_features(M, ids, dtype=dtype)
        for cid in ids:
            bits = pyspmv.config(cid).format_params[0]
            _, nidx, nval = _core.fmt_size(_core.format_names().index("cidx"), bits, 0, 20.0, M.nrows, M.ncols,
                                           M.indptr, M.indices)
            want = 4 * sum(nidx) + vb * (sum(nval) + M.nrows + M.ncols)
            assert df.loc[cid, "bytes_moved"] == want, (cid, dtype)
            assert df.loc[cid, "padding_ratio"] == 1.0


@settings(max_examples=60, deadline=None)
@given(wide_matrices())
def test_one_pass_sizes_equal_size_queries(M):
    _sizes_agree(M)


def _banded(n: int, half: int, seed: int) -> pyspmv.Matrix:
    """n x n, each row a random subset of its band |i - j| <= half (rows of 0 to 2 half + 1 entries)."""
    rng = np.random.default_rng(seed)
    rows = np.repeat(np.arange(n), 2 * half + 1)
    cols = rows + np.tile(np.arange(-half, half + 1), n)
    keep = (cols >= 0) & (cols < n) & (rng.random(rows.size) < 0.4)
    return pyspmv.Matrix(sp.csr_matrix((np.ones(keep.sum()), (rows[keep], cols[keep])), shape=(n, n)))


@pytest.mark.parametrize(("n", "half"), [(20_000, 100), (20_000, 3_000), (5_000, 40_000 // 2)])
def test_one_pass_sizes_threaded(n, half):
    """Matrices past the pass's threading threshold: chunks straddle the threads' row ranges."""
    _sizes_agree(_banded(n, half, seed=n + half))


_THREADS_SCRIPT = """
import sys, numpy as np, scipy.sparse as sp, pyspmv
rng = np.random.default_rng(3)
n = 60_000
lens = np.minimum(4000, (rng.pareto(1.1, n) * 4).astype(np.int64))
rows = np.repeat(np.arange(n), lens)
cols = (rows + rng.integers(-40_000, 40_000, rows.size)) % n
A = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n)); A.sum_duplicates()
ids = [c.id for c in pyspmv.configs() if c.format == "cidx"]
print(list(pyspmv.config_features(A, ids)["bytes_moved"]))
"""


def test_one_pass_sizes_any_thread_count():
    out = set()
    for t in ("1", "3", "7"):
        # cwd: the tests' folder, so that the checkout's pyspmv/ (no compiled core) does not shadow the installed one
        r = subprocess.run([sys.executable, "-c", _THREADS_SCRIPT], env={**os.environ, "OMP_NUM_THREADS": t},
                           capture_output=True, text=True, check=True, cwd=Path(__file__).parent)
        out.add(r.stdout)
    assert len(out) == 1, out
    M = pyspmv.Matrix(sp.csr_matrix((np.ones(1), ([0], [0])), shape=(1, 1)))
    _sizes_agree(M)


def test_bytes_moved_below_csr_on_a_narrow_band():
    """The point of the format: on a banded matrix every chunk fits, and indices cost 1.125 or 2.125 bytes."""
    M = _banded(50_000, 60, seed=1)
    ids = ["cpu/csr/rows", "cpu/cidx/bits=8", "cpu/cidx/bits=16"]
    for dtype in ("float32", "float64"):
        b = pyspmv.config_features(M, ids, dtype=dtype)["bytes_moved"]
        assert b["cpu/cidx/bits=8"] < b["cpu/cidx/bits=16"] < b["cpu/csr/rows"]
        assert b["cpu/cidx/bits=16"] / b["cpu/csr/rows"] < (0.8 if dtype == "float32" else 0.86)
    s = convert(M.to_scipy(), 8)
    assert s.scalars[1] == 0


# ---- registry and ranking ------------------------------------------------------------------------------

def test_registered_benchmarked_and_ranked_where_the_default_was_trained_with_it():
    """configs() and benchmark() take cidx's configurations; a default model ranks only the configurations
    listed in its file: the cpu default, retrained on datasets/cpu of 2026-11-27, ranks cidx; the H100's
    came before cidx and does not; the H200's, trained on datasets/h200, does."""
    assert [c.id for c in pyspmv.configs("cpu") if c.format == "cidx"] == ["cpu/cidx/bits=8", "cpu/cidx/bits=16"]
    cuda = [c.id for c in pyspmv.configs("cuda") if c.format == "cidx"]
    assert len(cuda) == 2 * 5 + 2 * 25 and "pyspmv/cidx/vector/bits=16/tpv=8/bs=256" in cuda
    A = pyspmv.generate("poisson2d", 30)
    cpu = [i for i, _ in pyspmv.rank(A, device="cpu")]
    assert {"cpu/cidx/bits=8", "cpu/cidx/bits=16"} <= set(cpu)
    ids = [i for i, _ in pyspmv.rank(A, target="h100")]
    assert ids and not any("cidx" in i for i in ids)
    assert set(cuda) <= {i for i, _ in pyspmv.rank(A, target="h200")}
    df = pyspmv.benchmark(A, device="cpu", repeats=3, warmup=1)
    got = df[df["config"].str.contains("cidx")]
    assert sorted(got["config"]) == ["cpu/cidx/bits=16", "cpu/cidx/bits=8"] and (got["median_ms"] > 0).all()


# ---- state checks -------------------------------------------------------------------------------------

def _state():
    rows = np.repeat(np.arange(4), 10)
    cols = np.concatenate([np.arange(10) * 31 + r for r in range(3)] + [np.arange(40_000, 40_010)])
    return convert(sp.csr_matrix((np.arange(1.0, 41.0), (rows, cols)), shape=(4, 40_010)), 8)


def _changed(s, k, at, value):
    idx = [a.copy() for a in s.index_arrays]
    idx[k][at] = value
    return state_args(s, index_arrays=tuple(idx))


@pytest.mark.parametrize(("k", "at", "value", "match"), [
    (1, 0, -2, "escape chunk 0 must be -1"),               # escapes numbered in order
    (1, 1, -2, "escape chunk 1 must be -2|marks 2 escape chunks"),
    (1, 1, 2**31 - 5, r"outside \[0, ncols|column"),       # base + offset past ncols
    (2, 15, 1 << 24, "past nnz|must hold 0"),              # a padding slot of the last chunk
    (2, 8, 0x7F7F7F7F, "increasing|after|column"),         # offsets out of order within a row
    (3, 0, 2**23, r"outside \[0, ncols|column"),           # a high part past ncols
])
def test_check_refuses_bad_states(k, at, value, match):
    s = _state()
    with pytest.raises(ValueError, match=match):
        _core.State(**_changed(s, k, at, value))


def test_check_refuses_bad_counts():
    s = _state()
    with pytest.raises(ValueError, match="hi|scalar|escape"):
        _core.State(**state_args(s, scalars=(2, 2, 0, 0)))
    with pytest.raises(ValueError, match=r"idx\[2\] \(off\) has 16 entries; it must have 32"):
        _core.State(**state_args(s, params=(16, 0)))     # off of 8-bit chunks read as 16-bit: wrong lengths
    assert _core.State(**state_args(s)).nnz == 40          # unchanged: accepted


# ---- GPU (marker gpu: skipped without one) -------------------------------------------------------------

def _uniform(m: int, n: int, k: int, seed: int) -> sp.csr_matrix:
    """About k entries placed uniformly in m x n (duplicates summed): fast where sp.random samples m * n cells."""
    rng = np.random.default_rng(seed)
    A = sp.csr_matrix((rng.uniform(-1, 1, k), (rng.integers(0, m, k), rng.integers(0, n, k))), shape=(m, n))
    A.sum_duplicates()
    return A


def _gpu_matrices() -> dict[str, sp.csr_matrix]:
    rng = np.random.default_rng(11)
    empty = sp.random(3_000, 3_000, density=0.004, format="lil", random_state=12)
    for i in rng.choice(3_000, 600, replace=False):
        empty.rows[i], empty.data[i] = [], []
    huge = sp.lil_matrix((20_000, 300_000))
    huge.setdiag(1.0)
    huge[7, ::2] = 1.0
    out = {
        "empty_rows": empty.tocsr(),
        "one_row": _uniform(1, 200_000, 10_000, seed=13),
        "huge_row": huge.tocsr(),
        "wide": _uniform(400, 2_000_000, 400_000, seed=14),
        "tall": _uniform(200_000, 50, 400_000, seed=15),
        "banded": _banded(100_000, 50, seed=16).to_scipy().tocsr(),
        "scattered": _uniform(50_000, 50_000, 1_250_000, seed=17),
        "no_entries": sp.csr_matrix((100, 70)),
        "one_by_one": sp.csr_matrix(np.array([[2.5]])),
    }
    for A in out.values():
        A.sort_indices()
        if A.nnz:
            A.data[::7] = 0.0                              # explicit zeros
    return out


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_gpu_kernels_match_float64_and_repeat_bitwise(dtype):
    """Every cidx CUDA configuration on each matrix, against float64 on the CPU; two runs give the same bits."""
    from pyspmv.devices import gpu
    failures, ran = [], 0
    cfgs = [c for c in pyspmv.configs("cuda") if c.format == "cidx"]
    assert len(cfgs) == 60
    mats = _gpu_matrices()
    for name, S in mats.items():
        M = pyspmv.Matrix(S, name=name)
        A64 = M.astype("float64").to_scipy()
        x = np.random.default_rng(0).uniform(-1, 1, M.ncols).astype(dtype)
        x[x == 0] = 0.5
        ref, scale = A64 @ x.astype(np.float64), abs(A64) @ np.abs(x.astype(np.float64))
        lim = TOL[dtype] * max(float(np.max(scale, initial=0.0)), 1e-300)
        on = {}
        for c in cfgs:
            bits = c.format_params[0]
            if bits not in on:
                F = pyspmv.convert(M, "cidx", dtype=dtype, bits=bits)
                on[bits] = gpu.DeviceMatrix(F)
            try:
                with gpu.Plan(on[bits], c) as plan:
                    y1, y2 = plan.mv(x), plan.mv(x)
            except Exception as exc:  # noqa: BLE001 (every configuration's failure is reported)
                failures.append(f"{name} {c.id}: {type(exc).__name__}: {exc}")
                continue
            ran += 1
            err = float(np.max(np.abs(y1.astype(np.float64) - ref), initial=0.0))
            if not err <= lim:
                failures.append(f"{name} {c.id} {dtype}: max error {err:.3g} > {lim:.3g}")
            if y1.tobytes() != y2.tobytes():
                failures.append(f"{name} {c.id} {dtype}: two runs differ (claimed deterministic)")
    assert not failures, "\n".join(failures[:40])
    assert ran == len(cfgs) * len(mats)
