"""Every CUDA configuration, in float32 and float64, against scipy in float64 (needs a GPU).

Each product runs on an output poisoned with NaN, so a row a kernel fails to write fails the check.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from conftest import shared_params

import pyspmv
from pyspmv.devices import gpu
from pyspmv.devices.benchmark import MAX_BACK_TO_BACK

pytestmark = pytest.mark.gpu

TOL = {"float32": 1e-5, "float64": 1e-12}


def _long_rows(seed: int) -> sp.csr_array:
    """Mostly short rows, a few of 3,000 to 250,000 entries, and empty rows."""
    rng = np.random.default_rng(seed)
    n = 300_000
    lengths = rng.integers(0, 6, n)
    lengths[rng.choice(n, 5, replace=False)] = [3_000, 20_000, 70_000, 250_000, 1_025]
    rows = np.repeat(np.arange(n), lengths)
    cols = rng.integers(0, n, rows.size)
    A = sp.csr_array((rng.uniform(-1, 1, rows.size), (rows, cols)), shape=(n, n))
    A.sum_duplicates()
    return A


def _with_empty_rows(m: int, n: int, density: float, seed: int) -> sp.csr_array:
    rng = np.random.default_rng(seed)
    A = sp.random_array((m, n), density=density, format="lil", random_state=rng)
    for i in rng.choice(m, m // 5, replace=False):  # a fifth of the rows empty
        A.rows[i], A.data[i] = [], []
    A = A.tocsr()
    A.data[::7] = 0.0  # explicit zeros
    return A


def matrices() -> dict[str, object]:
    return {
        "random_empty_rows": _with_empty_rows(2_000, 2_000, 0.01, 1),
        "wide": _with_empty_rows(300, 9_000, 0.02, 2),
        "tall": _with_empty_rows(9_000, 300, 0.02, 3),
        "one_row": sp.random_array((1, 5_000), density=0.3, format="csr", random_state=4),
        "one_column": sp.random_array((5_000, 1), density=0.3, format="csr", random_state=5),
        "one_by_one": sp.csr_array(np.array([[2.5]])),
        "no_entries": sp.csr_array((100, 70)),
        "duplicates": sp.csr_array((np.ones(6), ([0, 0, 3, 3, 3, 7], [1, 1, 2, 2, 5, 0])), shape=(9, 8)),
        "poisson2d": pyspmv.generate("poisson2d", 120),
        "powerlaw": pyspmv.generate("powerlaw", 50_000),
        "banded": pyspmv.generate("banded", 30_000),
        "long_rows": _long_rows(6),
    }


MATRICES = matrices()


def rel_err(A64: sp.csr_array, x: np.ndarray, y: np.ndarray) -> float:
    """max |y - A x| over max (|A| |x|), in float64."""
    x64 = x.astype(np.float64)
    ref = A64 @ x64
    scale = float(np.max(abs(A64) @ np.abs(x64), initial=0.0))
    err = float(np.max(np.abs(y.astype(np.float64) - ref), initial=0.0))
    return err / scale if scale > 0 else err


def check_all(M: pyspmv.Matrix, dtype: str) -> tuple[list[str], int]:
    """Run every CUDA configuration on M; return the failures and how many ran."""
    A64 = M.astype(np.float64).to_scipy()
    x = np.random.default_rng(0).uniform(-1, 1, M.ncols).astype(dtype)
    x[x == 0] = 0.5
    failures, ran, converted = [], 0, {}
    for c in pyspmv.configs("cuda"):
        key = (c.format, tuple(sorted(c.format_kwargs.items())))
        if key not in converted:  # one upload per format, shared by its thread mappings (as benchmark())
            try:
                F = pyspmv.convert(M, c.format, dtype=dtype, **c.format_kwargs)
                converted[key] = (F, gpu.DeviceMatrix(F))
            except pyspmv.NotApplicableError as exc:
                converted[key] = exc
        if isinstance(converted[key], Exception):
            continue
        F, on = converted[key]
        try:
            with gpu.Plan(on, c) as plan:
                y = plan.mv(x)
        except pyspmv.NotApplicableError:
            continue
        except Exception as exc:  # noqa: BLE001 (every failure of every configuration is reported, not the first)
            failures.append(f"{c.id}: {type(exc).__name__}: {exc}")
            continue
        ran += 1
        err = rel_err(A64, x, y)
        if not err <= TOL[dtype]:  # also catches NaN left by the poison
            failures.append(f"{c.id}: relative error {err:.3g} > {TOL[dtype]:g}")
    return failures, ran


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(MATRICES))
def test_every_config_matches_scipy(name, dtype):
    failures, ran = check_all(pyspmv.Matrix(MATRICES[name], name=name), dtype)
    assert not failures, "\n".join(failures)
    assert ran >= 20  # at least the CSR kernels and cuSPARSE ran


@pytest.mark.shared
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("path", shared_params())
def test_every_config_on_shared_matrices(path, dtype):
    M = pyspmv.load(path)
    if M.dtype == np.float64 and dtype == "float32" and np.max(np.abs(M.data), initial=0) > 3e38:
        pytest.skip("values beyond float32's range")
    failures, ran = check_all(M, dtype)
    assert not failures, "\n".join(failures)
    assert ran >= 20


#: Configurations whose kernel loads the matrix streams evict-first only where the matrix, x and y pass the
#: device's L2 (SELL's: kernels/kern.h's spmv_ld): every matrix above fits it.
PAST_L2 = ["pyspmv/sell/c=32/sigma=1/bs=256", "pyspmv/sell/c=16/sigma=256/bs=128"]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_streams_past_the_l2_match_scipy(dtype):
    l2 = int(gpu.device_info()["l2_bytes"])
    n = int(np.ceil(np.sqrt(2 * l2 / 52)))  # a 5-point stencil moves about 52 bytes a row in float32
    M = pyspmv.generate("poisson2d", n)
    A64 = M.to_scipy()
    x = np.random.default_rng(1).uniform(-1, 1, M.ncols).astype(dtype)
    for cid in PAST_L2:
        F = pyspmv.convert(M, pyspmv.config(cid).format, dtype=dtype, **pyspmv.config(cid).format_kwargs)
        assert F.nbytes > l2, (cid, F.nbytes, l2)
        with gpu.Plan(F, pyspmv.config(cid)) as plan:
            assert not plan._plan.keeps_matrix, cid   # past the L2: its streams evict-first
            err = rel_err(A64, x, plan.mv(x))
        assert err <= TOL[dtype], (cid, err)


def _diagonals(m: int, n: int, offsets: list[int], seed: int) -> sp.csr_array:
    """The diagonals ``offsets`` of an m x n matrix, random values, row 7 empty and one explicit zero."""
    rng = np.random.default_rng(seed)
    rows = np.concatenate([np.arange(max(0, -o), min(m, n - o)) for o in offsets])
    cols = rows + np.repeat(offsets, [min(m, n - o) - max(0, -o) for o in offsets])
    keep = rows != 7
    A = sp.csr_array((rng.uniform(-1, 1, keep.sum()), (rows[keep], cols[keep])), shape=(m, n))
    A.data[A.nnz // 2] = 0.0
    return A


#: kernels/dia.cu takes two rows a thread where the diagonals are few (<= 8) and the rows many (>= 2e5), one
#: otherwise: these reach both, with a last tile that ends mid-block, wide and tall.
DIA_CASES = {
    "two_rows_wide": (200_003, 200_500, [-3, 0, 1, 250]),
    "two_rows_tall": (300_001, 200_000, [-100_000, 0, 5]),
    "one_row_many_diagonals": (200_003, 200_003, list(range(-4, 5))),
    "one_row_few_rows": (199_999, 199_999, [-1, 0, 1]),
}


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("case", list(DIA_CASES))
def test_dia_kernels_match_scipy(case, dtype):
    m, n, offsets = DIA_CASES[case]
    A64 = _diagonals(m, n, offsets, seed=len(offsets))
    x = np.random.default_rng(2).uniform(-1, 1, n).astype(dtype)
    F = pyspmv.convert(pyspmv.Matrix(A64), "dia", dtype=dtype)
    assert F.scalars[0] == len(offsets)
    on = gpu.DeviceMatrix(F)
    for c in (c for c in pyspmv.configs("cuda") if c.format == "dia"):
        with gpu.Plan(on, c) as plan:
            err = rel_err(A64, x, plan.mv(x))
        assert err <= TOL[dtype], (c.id, err)


def test_config_space_is_complete():
    ids = {c.id for c in pyspmv.configs("cuda")}
    for bs in (64, 128, 256, 512, 1024):
        assert f"pyspmv/csr/scalar/bs={bs}" in ids
        for tpv in (2, 4, 8, 16, 32):
            assert f"pyspmv/csr/vector/tpv={tpv}/bs={bs}" in ids
    for cid in ("cusparse/csr/default", "cusparse/csr/alg1", "cusparse/csr/alg2", "cusparse/coo/alg1",
                "cusparse/coo/alg2", "cusparse/sell/alg1/c=32", "cusparse/bsr/b=4"):
        assert cid in ids


def test_spmv_and_benchmark_on_gpu():
    M = pyspmv.generate("poisson2d", 50)
    x = np.linspace(-1, 1, M.ncols)
    y = pyspmv.spmv(M, x, "pyspmv/csr/vector/tpv=4/bs=128")
    np.testing.assert_allclose(y, M.to_scipy() @ x, rtol=1e-12, atol=1e-12)
    df = pyspmv.benchmark(M, ["pyspmv/ell/bs=256", "cusparse/csr/default"], device="cuda", repeats=20,
                          progress=False)
    assert list(df.status) == ["ok", "ok"]
    assert (df.median_ms > 0).all() and (df.repeats == 20).all()
    assert (df.upload_ms > 0).all() and (df.convert_ms >= df.upload_ms).all()
    info = df.attrs["device_info"]
    assert info["gpu_sm_count"] > 0 and info["gpu_name"] and info["gpu_cusparse_version"]


def test_gpu_out_of_memory_is_memoryerror_with_sizes():
    with pytest.raises(MemoryError, match=r"needs \d+ bytes, \d+ of \d+ bytes free"):
        gpu.copy_bandwidth(1 << 50, repeats=1)


def test_bad_thread_mapping_is_a_clear_error():
    M = pyspmv.generate("poisson2d", 10)
    with pytest.raises(ValueError, match="bs=100"):
        pyspmv.spmv(M, np.ones(M.ncols), "pyspmv/csr/scalar/bs=100")
    with pytest.raises(ValueError, match="tpv"):
        pyspmv.spmv(M, np.ones(M.ncols), "pyspmv/csr/vector/tpv=3/bs=128")


def test_copy_bandwidth_is_plausible():
    assert 100 < gpu.copy_bandwidth(1 << 28, repeats=5) < 20_000


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_batched_timing_leaves_the_product_and_counts_runs(dtype):
    """bench() queues products in batches behind a gate; the last product is still right, every
    run is counted and timed, and a plan on a shared upload and one with its own agree."""
    M = pyspmv.Matrix(MATRICES["powerlaw"], name="powerlaw")
    A64 = M.astype(np.float64).to_scipy()
    x = np.random.default_rng(1).uniform(-1, 1, M.ncols).astype(dtype)
    for cid in ("pyspmv/csr/vector/tpv=8/bs=256", "cusparse/csr/alg2", "pyspmv/sell/c=32/sigma=1/bs=256"):
        c = pyspmv.config(cid)
        F = pyspmv.convert(M, c.format, dtype=dtype, **c.format_kwargs)
        on = gpu.DeviceMatrix(F)
        with gpu.Plan(on, c) as shared, gpu.Plan(F, c) as alone:
            med, q25, q75, mn, runs, y = shared.bench(x, warmup=3, repeats=77, budget_s=0)
            assert runs == 77 and 0 < mn <= q25 <= med <= q75
            assert rel_err(A64, x, y) <= TOL[dtype]
            np.testing.assert_array_equal(alone.mv(x), y)
            assert alone.nbytes > shared.nbytes and alone.setup_ms > 0
        med, *_, runs, _ = gpu.Plan(on, c).bench(x, warmup=0, repeats=10_000, budget_s=0.01)
        assert 1 <= runs < 10_000  # the budget ends it


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_back_to_back_runs_time_a_product_and_refuse_bad_lengths(dtype):
    """bench(back_to_back=k) times runs of k products between two events, per product: the last product is still
    right, runs are counted, the time per product is of the order of one timed alone (less: no events around each),
    and a run length outside [1, SPMV_CUDA_MAX_RUN] is refused with the bounds; benchmark() passes it through."""
    M = pyspmv.Matrix(MATRICES["powerlaw"], name="powerlaw")
    A64 = M.astype(np.float64).to_scipy()
    x = np.random.default_rng(2).uniform(-1, 1, M.ncols).astype(dtype)
    c = pyspmv.config("pyspmv/csr/adaptive/bs=128")
    F = pyspmv.convert(M, c.format, dtype=dtype, **c.format_kwargs)
    with gpu.Plan(F, c) as plan:
        one = plan.bench(x, warmup=3, repeats=40, budget_s=0)
        run = plan.bench(x, warmup=3, repeats=40, budget_s=0, back_to_back=16)
        assert run[4] == 40 and 0 < run[3] <= run[1] <= run[0] <= run[2]
        assert rel_err(A64, x, run[5]) <= TOL[dtype]
        assert run[0] < 3 * one[0]  # the same product; a run only drops the events around each
        for bad in (0, MAX_BACK_TO_BACK + 1):
            with pytest.raises(ValueError, match=r"\[1, 1024\]"):
                plan._plan.bench(x, None, 0, 1, 0.0, bad)
    df = pyspmv.benchmark(M, [c.id], device="cuda", dtype=dtype, repeats=5, back_to_back=4, progress=False)
    assert df.status.tolist() == ["ok"] and df.repeats.tolist() == [5]


def device_x(n: int) -> np.ndarray:
    """The x a plan makes on the device when timed without one (kernels/vec.cu's fill_kernel), restated: (2k + 1) /
    2^23 - 1 for k the top 23 bits of splitmix64's finaliser of the index."""
    with np.errstate(over="ignore"):
        z = np.arange(n, dtype=np.uint64) + np.uint64(0x9E3779B97F4A7C15)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        z ^= z >> np.uint64(31)
    return (2 * (z >> np.uint64(41)).astype(np.int64) + 1) / 8388608.0 - 1.0


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name, cid", [("wide", "pyspmv/csr/vector/tpv=8/bs=256"), ("tall", "cusparse/csr/alg2"),
                                       ("powerlaw", "pyspmv/sell/c=32/sigma=1/bs=256"),
                                       ("no_entries", "pyspmv/csr/scalar/bs=128")])
def test_timing_without_a_host_x_makes_it_on_the_device(dtype, name, cid):
    """bench(None) (verification's timings): x made on the device, ncols fixed values in (-1, 1), none 0, the same
    in both types; the last product is A times them, every run counted; a y of the wrong size or type refused."""
    A = MATRICES[name]
    M = pyspmv.Matrix(A, name=name)
    xd = device_x(M.ncols)
    assert np.all(np.abs(xd) < 1) and np.all(xd != 0) and np.array_equal(xd.astype(np.float32), xd)
    c = pyspmv.config(cid)
    F = pyspmv.convert(M, c.format, dtype=dtype, **c.format_kwargs)
    with gpu.Plan(F, c) as plan:
        med, q25, q75, mn, runs, y = plan.bench(None, warmup=2, repeats=9, budget_s=0)
        assert runs == 9 and 0 < mn <= q25 <= med <= q75
        assert rel_err(M.astype(np.float64).to_scipy(), xd, y) <= TOL[dtype]
        with pytest.raises(ValueError, match="nrows"):
            plan._plan.bench(None, np.empty(M.nrows + 1, dtype=dtype), 0, 1, 0.0)
        other = np.float32 if dtype == "float64" else np.float64
        with pytest.raises(TypeError, match="dtype"):
            plan._plan.bench(None, np.empty(M.nrows, dtype=other), 0, 1, 0.0)


def test_benchmark_both_dtypes_in_one_call():
    M = pyspmv.generate("poisson2d", 40)
    ids = ["pyspmv/ell/bs=256", "pyspmv/ell/bs=512", "cusparse/csr/default"]
    df = pyspmv.benchmark(M, ids, device="cuda", dtype=["float32", "float64"], repeats=10, progress=False)
    assert list(df.dtype) == ["float32"] * 3 + ["float64"] * 3 and list(df.config) == ids * 2
    assert (df.status == "ok").all() and (df.repeats == 10).all() and (df.upload_ms > 0).all()
