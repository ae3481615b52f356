"""Ranking a matrix that lives on the GPU from its sampled rows alone (pyspmv.ranking.sampled,
spmv_design_rows_sampled): the same ranking, bit for bit, as the host's estimate of the whole matrix; nothing else
of the matrix is read; hostile structures are refused. The GPU's arrays are stood in for by host arrays here
(``arrays.take`` indexes those in place), so that this runs without a GPU; tests/test_gpu.py reads CuPy's."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import dataclasses
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

import pyspmv
from pyspmv import _core
from pyspmv.devices import arrays
from pyspmv.matrices import generators as g
from pyspmv.ranking import rank as R
from pyspmv.ranking.rank import _prepared, default_model
from pyspmv.ranking.sampled import SampledRows, sample_on_device

B = _core.SAMPLE_BLOCK


def _device(A: sp.spmatrix | sp.sparray, dtype: type = np.float64) -> arrays.DeviceCSR:
    """A canonical CSR as a DeviceCSR whose arrays are host arrays (the GPU's stand-in)."""
    A = sp.csr_matrix(A)
    A.sum_duplicates()
    return arrays.DeviceCSR(A.shape, int(A.nnz), A.indptr.astype(np.int32), A.indices.astype(np.int32),
                            A.data.astype(dtype), np.dtype(dtype), A)


def _random(nrows: int, ncols: int, nnz: int, seed: int, empty_every: int = 0) -> sp.csr_matrix:
    rng = np.random.default_rng(seed)
    r = rng.integers(0, nrows, nnz)
    if empty_every:
        r = r[r % empty_every != 0]
    c = rng.integers(0, ncols, r.size)
    return sp.csr_matrix((rng.uniform(-1, 1, r.size), (r, c)), shape=(nrows, ncols))


def _zeros(A: sp.csr_matrix) -> sp.csr_matrix:
    """A's pattern, every value an explicit zero."""
    A = A.copy()
    A.sum_duplicates()
    A.data[:] = 0.0
    return A


MATRICES = {
    "poisson2d": lambda: g.poisson2d(500).to_scipy(),
    "rectangular, empty rows": lambda: _random(300_000, 170_000, 1_200_000, 1, empty_every=7),
    "wide": lambda: _random(70_000, 900_000, 700_000, 2),
    "banded": lambda: g.banded(400_000, 3, 2).to_scipy(),
    "explicit zeros": lambda: _zeros(_random(200_000, 200_000, 600_000, 3)),
}


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("name", list(MATRICES))
def test_sampled_ranking_is_the_host_estimate_bit_for_bit(name, dtype):
    """rank() of a matrix on the (stood-in) GPU, estimated, reads only its sample and ranks exactly as the
    estimate of the whole host matrix: the same configurations in the same order with the same predicted times."""
    A = MATRICES[name]().astype(dtype)
    D = _device(A, dtype)
    S = sample_on_device(D, R.ESTIMATE_ROWS, R.ESTIMATE_NNZ)
    assert isinstance(S, SampledRows)
    assert list(pyspmv.rank(D, estimate=True)) == list(pyspmv.rank(A, estimate=True))
    n_calls = 1000
    assert list(pyspmv.rank(D, estimate=True, n_calls=n_calls)) == list(pyspmv.rank(A, estimate=True,
                                                                                    n_calls=n_calls))


def _rows(M, coarse=None):
    p = _prepared(default_model("cuda"), "float64")
    args = (p.capsule, M.nrows, M.ncols, M.indptr, M.indices, 8, R.ESTIMATE_ROWS, R.ESTIMATE_NNZ)
    return _core.core_rows(*args, *(() if coarse is None else (coarse,)))


def test_nothing_but_the_sampled_rows_is_read():
    """Every item of indptr and indices outside the sampled blocks poisoned (out of range, decreasing): the design
    rows are still the host estimate's, bit for bit: the C core reads nothing else."""
    A = _random(250_000, 250_000, 1_500_000, 4)
    S = sample_on_device(_device(A), R.ESTIMATE_ROWS, R.ESTIMATE_NNZ)
    ip, ix = S.indptr.copy(), S.indices.copy()
    read_ip = np.zeros(ip.size, bool)
    read_ix = np.zeros(ix.size, bool)
    read_ip[[0, -1]] = True
    for r0 in _core.sample_plan(S.coarse, S.nrows, R.ESTIMATE_ROWS, R.ESTIMATE_NNZ):
        r1 = min(int(r0) + B, S.nrows)
        read_ip[r0:r1 + 1] = True
        read_ix[A.indptr[r0]:A.indptr[r1]] = True
    rng = np.random.default_rng(0)
    ip[~read_ip] = rng.integers(-2**31, 2**31 - 1, int((~read_ip).sum()))
    ix[~read_ix] = rng.integers(-2**31, 2**31 - 1, int((~read_ix).sum()))
    poisoned = dataclasses.replace(S, indptr=ip, indices=ix)
    whole = pyspmv.Matrix(A)
    np.testing.assert_array_equal(_rows(poisoned, S.coarse), _rows(whole))
    # and those rows are all the plan names: a wrong item in one of them changes the rows or is refused
    k = int(np.flatnonzero(read_ix)[len(np.flatnonzero(read_ix)) // 2])
    ix[k] = (ix[k] + 1) % A.shape[1] if ix[k] + 1 < A.shape[1] else ix[k] - 1
    try:
        changed = _rows(dataclasses.replace(S, indptr=ip, indices=ix), S.coarse)
    except (ValueError, IndexError):
        return
    assert not np.array_equal(changed, _rows(whole), equal_nan=True)


def test_a_sample_that_misses_long_rows_reads_the_whole_matrix():
    """A few dense rows no sampled block holds: the plan is empty (the exact path), rank() reads the structure to
    the host and ranks exactly, as for the host matrix."""
    A = sp.lil_matrix(_random(200_000, 200_000, 400_000, 5))
    for r in (1_000, 50_001):                     # not in the middle of any stratum: missed by the sample
        A[r, ::20] = 1.0
    A = A.tocsr()
    D = _device(A)
    assert sample_on_device(D, R.ESTIMATE_ROWS, R.ESTIMATE_NNZ) is None
    assert list(pyspmv.rank(D, estimate=True)) == list(pyspmv.rank(A, estimate=False))


def test_device_matrices_are_sampled_from_the_device_threshold(monkeypatch):
    """estimate=None: a matrix on the GPU is sampled from DEVICE_ESTIMATE_MIN_NNZ entries, below it read whole;
    a host matrix stays exact below ESTIMATE_MIN_NNZ."""
    A = g.poisson2d(300).to_scipy()
    D = _device(A)
    seen = []
    real = R.sample_on_device
    monkeypatch.setattr(R, "sample_on_device", lambda *a: seen.append(a) or real(*a))
    monkeypatch.setattr(R, "DEVICE_ESTIMATE_MIN_NNZ", A.nnz + 1)
    assert list(pyspmv.rank(D)) == list(pyspmv.rank(A, estimate=False))
    assert seen == []
    monkeypatch.setattr(R, "DEVICE_ESTIMATE_MIN_NNZ", A.nnz)
    assert list(pyspmv.rank(D)) == list(pyspmv.rank(A, estimate=True))
    assert len(seen) == 1
    assert list(pyspmv.rank(D, estimate=False)) == list(pyspmv.rank(A, estimate=False))
    assert len(seen) == 1


def _with(D: arrays.DeviceCSR, indptr=None, indices=None) -> arrays.DeviceCSR:
    return D._replace(indptr=D.indptr if indptr is None else indptr, indices=D.indices if indices is None else indices)


def test_hostile_structures_are_refused_naming_A():
    """A GPU CSR whose indptr does not end at nnz, decreases in a sampled block, or whose sampled columns leave
    the matrix, is refused with a message naming A; nothing is ranked."""
    D = _device(g.poisson2d(400).to_scipy())
    S = sample_on_device(D, R.ESTIMATE_ROWS, R.ESTIMATE_NNZ)
    r0 = int(_core.sample_plan(S.coarse, S.nrows, R.ESTIMATE_ROWS, R.ESTIMATE_NNZ)[3])
    ip = D.indptr.copy()
    ip[-1] -= 1
    with pytest.raises(ValueError, match="'A'.*end at"):
        pyspmv.rank(_with(D, indptr=ip), estimate=True)
    ip = D.indptr.copy()
    ip[r0 + 5], ip[r0 + 6] = ip[r0 + 6], ip[r0 + 5]         # decreasing inside a sampled block
    with pytest.raises(ValueError, match="'A'.*indptr decreases"):
        pyspmv.rank(_with(D, indptr=ip), estimate=True)
    ix = D.indices.copy()
    ix[D.indptr[r0 + 9]] = D.shape[1] + 7                    # a sampled column past ncols
    with pytest.raises((ValueError, IndexError), match="(?i)col|index"):
        pyspmv.rank(_with(D, indices=ix), estimate=True)
    ix = D.indices.copy()
    a = int(D.indptr[r0 + 9])
    ix[a], ix[a + 1] = ix[a + 1], ix[a]                       # unsorted in a sampled row
    with pytest.raises(ValueError):
        pyspmv.rank(_with(D, indices=ix), estimate=True)


def test_glue_checks_the_coarse_indptr():
    """core_rows and rank take a coarse indptr of ceil(nrows / 256) + 1 int32 items, and only with a sample; the
    plan of a coarse indptr that the C core reads hostile values from stays within the matrix."""
    M = pyspmv.Matrix(g.poisson2d(300).to_scipy())
    p = _prepared(default_model("cuda"), "float64")
    coarse = M.indptr[np.append(np.arange(0, M.nrows, B), M.nrows)].astype(np.int32)
    base = (p.capsule, M.nrows, M.ncols, M.indptr, M.indices, 8)
    with pytest.raises(ValueError, match="coarse must hold"):
        _core.core_rows(*base, R.ESTIMATE_ROWS, R.ESTIMATE_NNZ, coarse[:-1])
    with pytest.raises(ValueError, match="coarse must hold"):
        _core.core_rows(*base, 0, 0, coarse)
    with pytest.raises(TypeError):
        _core.core_rows(*base, R.ESTIMATE_ROWS, R.ESTIMATE_NNZ, coarse.astype(np.int64))
    with pytest.raises(ValueError, match="coarse must hold"):
        _core.rank(*base, None, R.ESTIMATE_ROWS, None, None, R.ESTIMATE_NNZ, False, coarse[1:])
    rng = np.random.default_rng(1)
    for _ in range(20):
        bad = rng.integers(-2**31, 2**31 - 1, coarse.size).astype(np.int32)
        plan = _core.sample_plan(bad, M.nrows, R.ESTIMATE_ROWS, R.ESTIMATE_NNZ)
        assert ((plan >= 0) & (plan < M.nrows) & (plan % B == 0)).all()
    # the ranking of a sample whose blocks disagree with the coarse copy is refused by the C core too
    S = sample_on_device(_device(M.to_scipy()), R.ESTIMATE_ROWS, R.ESTIMATE_NNZ)
    wrong = S.coarse.copy()
    r0 = int(_core.sample_plan(S.coarse, S.nrows, R.ESTIMATE_ROWS, R.ESTIMATE_NNZ)[0])
    wrong[r0 // B] += 1
    with pytest.raises(ValueError, match="coarse copy"):
        _core.core_rows(p.capsule, S.nrows, S.ncols, S.indptr, S.indices, 8, R.ESTIMATE_ROWS, R.ESTIMATE_NNZ, wrong)


def _on_gpu(A: sp.csr_matrix, lib: str):
    """A as a CuPy CSR matrix or a PyTorch sparse CSR tensor on the GPU."""
    mod = pytest.importorskip(lib)
    if lib == "cupy":
        import cupyx.scipy.sparse as csp
        return csp.csr_matrix(A)
    # invariant checks explicitly on (else PyTorch warns they are off); its once-a-process notice that sparse CSR
    # is in beta is no fault of this test, whichever test makes the first tensor
    with mod.sparse.check_sparse_tensor_invariants(), warnings.catch_warnings():
        warnings.filterwarnings("ignore", "Sparse CSR tensor support is in beta", UserWarning)
        return mod.sparse_csr_tensor(mod.from_numpy(A.indptr.astype(np.int64)),
                                     mod.from_numpy(A.indices.astype(np.int64)), mod.from_numpy(A.data),
                                     size=A.shape).cuda()


@pytest.mark.gpu
@pytest.mark.parametrize("lib", ["cupy", "torch"])
@pytest.mark.parametrize("name", ["poisson2d", "rectangular, empty rows"])
def test_a_gpu_matrix_is_ranked_from_its_sample(name, lib):
    """A CuPy or PyTorch CSR on the GPU, estimated: the host estimate's ranking bit for bit (the sample gathered
    there); an Operator of it at 1e6+ entries runs the first of that ranking that can serve it, and its product
    matches scipy's in float64."""
    A = MATRICES[name]()
    A.sum_duplicates()
    Ad = _on_gpu(A, lib)
    assert list(pyspmv.rank(Ad, estimate=True)) == list(pyspmv.rank(A, estimate=True))
    assert A.nnz >= R.DEVICE_ESTIMATE_MIN_NNZ
    with pyspmv.Operator(Ad, "cuda", n_calls=100, verify=0) as op:
        assert op.config.id == next(c for c, ms in pyspmv.rank(A, estimate=True, n_calls=100, device="cuda")
                                    if np.isfinite(ms) and not pyspmv.config(c).format_kwargs.get("order"))
        x = np.random.default_rng(0).uniform(-1, 1, A.shape[1])
        y = op @ x
        ref = A @ x
        np.testing.assert_allclose(y, ref, rtol=1e-10, atol=1e-10 * np.abs(ref).max())


@pytest.mark.gpu
def test_a_host_matrix_for_the_gpu_is_ranked_from_its_sample_at_scale():
    """Operator(A, 'cuda') of a scipy matrix of 1e6+ entries ranks as rank(estimate=True) does; below, exactly."""
    A = MATRICES["poisson2d"]()
    with pyspmv.Operator(A, "cuda", n_calls=100, verify=0) as op:
        assert list(op.ranking) == list(pyspmv.rank(A, estimate=True, n_calls=100, device="cuda"))
    small = g.poisson2d(60).to_scipy()
    with pyspmv.Operator(small, "cuda", n_calls=100, verify=0) as op:
        assert list(op.ranking) == list(pyspmv.rank(small, estimate=False, n_calls=100, device="cuda"))


@pytest.mark.parametrize("starts, lengths", [([], []), ([5], [0]), ([0, 10, 3], [2, 0, 4]), ([7, 256, 1000], [3, 257, 1])])
def test_spans_are_the_ranges_one_after_another(starts: list[int], lengths: list[int]) -> None:
    from pyspmv.ranking.sampled import _spans
    want = [i for s, n in zip(starts, lengths) for i in range(s, s + n)]
    got = _spans(np.array(starts, np.int64), np.array(lengths, np.int64))
    assert got.dtype == np.int64 and got.tolist() == want
