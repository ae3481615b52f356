"""pyspmv.matrices.generators: each family's defining property, determinism, values, bad parameters."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import pyspmv
from pyspmv.matrices import generators as g


def lengths(A: pyspmv.Matrix) -> np.ndarray:
    return np.diff(A.indptr)


def pattern(S) -> tuple[np.ndarray, np.ndarray]:
    S = sp.csr_array(S)
    S.sum_duplicates()
    return S.indptr.astype(np.int64), S.indices.astype(np.int64)


@pytest.mark.parametrize("strips,k,mapping", [(3, 5, "warp"), (1, 2, "thread")])
def test_guo_rows_are_strips_of_full_gpu_iterations(strips, k, mapping):
    A = g.guo(strips, k, mapping=mapping)
    strip = 132 * 2048 // (32 if mapping == "warp" else 1)
    assert A.shape == (strips * strip, strips * strip)
    assert np.all(lengths(A) == k)                       # fixed entries per row, all distinct columns
    f = pyspmv.features(A)
    assert f["gpu_strips_warps" if mapping == "warp" else "gpu_strips_rows"] == strips


def test_guo_other_device():
    A = g.guo(4, 3, sm_count=2, threads_per_sm=64, warp_size=32)
    assert A.nrows == 4 * 4 and np.all(lengths(A) == 3)


def test_wang_normal_row_lengths():
    A = g.row_lengths(40000, 30, 6, dist="normal", seed=3)
    L = lengths(A)
    assert abs(L.mean() - 30) < 0.2 and abs(L.std() - 6) < 0.2
    assert L.min() >= 1 and A.group == "wang_normal"


def test_wang_uniform_row_lengths():
    A = g.row_lengths(20000, 20, 8, dist="uniform", seed=1)
    L = lengths(A)
    assert L.min() == 12 and L.max() == 28 and abs(L.mean() - 20) < 0.2
    assert abs(L.std() - np.sqrt((17 ** 2 - 1) / 12)) < 0.2      # discrete uniform on 17 values


def tri(n: int) -> sp.csr_array:
    return sp.csr_array(sp.diags([1.0, 1.0, 1.0], [-1, 0, 1], shape=(n, n)))


@pytest.mark.parametrize("dim,points", sorted(g.STENCILS))
def test_stencil_pattern_is_the_kron_construction(dim, points):
    n = 6
    T, I = tri(n), sp.identity(n, format="csr")
    if (dim, points) == (2, 5):
        K = sp.kron(I, T) + sp.kron(T, I)
    elif (dim, points) == (2, 9):
        K = sp.kron(T, T)
    elif (dim, points) == (3, 7):
        K = sp.kron(sp.kron(I, I), T) + sp.kron(sp.kron(I, T), I) + sp.kron(sp.kron(T, I), I)
    else:
        K = sp.kron(sp.kron(T, T), T)
    A = g.stencil(dim, points, n, seed=2)
    ip, ix = pattern(K)
    assert A.shape == K.shape
    np.testing.assert_array_equal(A.indptr, ip)
    np.testing.assert_array_equal(A.indices, ix)
    assert lengths(A).max() == points


def test_banded_bandwidth_bound():
    A = g.banded(3000, 25, 8, seed=4)
    S = A.to_scipy().tocoo()
    assert np.abs(S.row - S.col).max() <= 25
    assert np.all(A.to_scipy().diagonal() != 0)
    assert lengths(A).max() <= 9 and abs(lengths(A)[100:-100].mean() - 8.9) < 0.3
    assert pyspmv.features(A)["bandwidth"] <= 2 * 25 + 1


@pytest.mark.parametrize("dim,b", [(2, 3), (3, 2)])
def test_fem_blocks_are_dense(dim, b):
    A = g.fem_blocks(7, b, dim=dim, seed=1)
    S = A.to_scipy().tocoo()
    blocks = np.unique((S.row // b) * (A.nrows // b) + S.col // b)
    assert A.nnz == blocks.size * b * b
    assert A.nrows == 7 ** dim * b


@pytest.mark.parametrize("alpha", [2.2, 3.0])
def test_powerlaw_tail(alpha):
    A = g.powerlaw(100000, 8, alpha, seed=1)
    L = lengths(A)
    ks = np.array([20, 40, 80, 160])
    ccdf = np.array([(L > k).mean() for k in ks])
    slope = np.polyfit(np.log(ks), np.log(ccdf), 1)[0]
    assert abs(slope + (alpha - 1)) < 0.3                # P(len > k) ~ k^-(alpha-1)
    assert L.max() > 50 * L.mean()


def test_circuit_dense_rows_and_columns():
    n, d = 4000, 3
    A = g.circuit(n, short=3, dense=d, dense_len=1000, seed=5)
    S = A.to_scipy()
    rows = np.sort(np.flatnonzero(lengths(A) >= 1000))
    cols = np.sort(np.flatnonzero(np.diff(S.tocsc().indptr) >= 1000))
    assert rows.size == d and np.array_equal(rows, cols)   # the same nets are dense both ways
    assert np.median(lengths(A)) <= 6
    assert np.all(S.diagonal() != 0)


def test_diagonal_heavy_has_its_diagonals():
    A = g.diagonal_heavy(5000, 7, noise=0.5, seed=2)
    S = A.to_scipy().tocoo()
    off, counts = np.unique(S.col.astype(np.int64) - S.row, return_counts=True)
    full = off[counts >= 0.9 * (5000 - np.abs(off))]
    assert full.size == 7 and 0 in full
    assert abs(A.nnz / 5000 - (7 * 0.95 + 0.5)) < 0.7


@pytest.mark.parametrize("mode", ["tile", "kron"])
def test_scaled_nnz_is_the_product(mode):
    base = g.stencil(2, 5, 5)
    A = g.scaled(base, 6, mode=mode, density=0.3, seed=1)
    rng = np.random.default_rng(1)
    mask = rng.random((6, 6)) < 0.3
    np.fill_diagonal(mask, True)
    assert A.shape == (150, 150) and A.nnz == base.nnz * int(mask.sum())
    if mode == "tile":                                   # the base repeats on the block diagonal
        np.testing.assert_array_equal(A.to_scipy()[:25, :25].toarray() != 0, base.to_scipy().toarray() != 0)


CASES = [
    lambda s: g.guo(1, 3, seed=s), lambda s: g.row_lengths(500, 5, 2, seed=s),
    lambda s: g.row_lengths(500, 5, 2, dist="uniform", seed=s), lambda s: g.stencil(3, 27, 5, seed=s),
    lambda s: g.banded(500, 10, 4, seed=s), lambda s: g.fem_blocks(5, 3, seed=s), lambda s: g.powerlaw(500, 4, seed=s),
    lambda s: g.circuit(500, seed=s), lambda s: g.diagonal_heavy(500, 4, seed=s),
    lambda s: g.scaled(g.powerlaw(100, 3, seed=s), 4, seed=s),
]


@pytest.mark.parametrize("make", CASES)
def test_deterministic_named_and_nonzero(make):
    A, B, C = make(7), make(7), make(8)
    for arr in ("indptr", "indices", "data"):
        np.testing.assert_array_equal(getattr(A, arr), getattr(B, arr))
    assert A.name == B.name and A.name != C.name and A.group
    assert not (np.array_equal(A.indices, C.indices) and np.array_equal(A.data, C.data))
    assert np.all(np.isfinite(A.data)) and np.all(A.data != 0)


@pytest.mark.parametrize("call,match", [
    (lambda: g.guo(0, 3), "'strips'"), (lambda: g.guo(1, 3, mapping="block"), "'mapping'"),
    (lambda: g.row_lengths(10, 3, 1, dist="poisson"), "'dist'"), (lambda: g.stencil(2, 7, 4), "dim, points"),
    (lambda: g.powerlaw(100, 4, alpha=1.5), "'alpha'"), (lambda: g.fem_blocks(4, dim=4), "'dim'"),
    (lambda: g.scaled(g.stencil(2, 5, 3), 2, mode="x"), "'mode'"),
])
def test_bad_parameters(call, match):
    with pytest.raises(ValueError, match=match):
        call()


def test_the_former_name_pyspmv_datasets_generators_warns_and_is_the_same_module():
    with pytest.warns(DeprecationWarning, match="pyspmv.matrices.generators"):
        from pyspmv.datasets import generators as old
    assert old is g


def test_generate_kinds_are_the_small_examples():
    assert g.generate("banded", 50).name == "banded_50_2_2"
    assert g.generate("powerlaw", 300, seed=1).name == "powerlaw_300"
    with pytest.raises(ValueError, match="choose one of poisson2d"):
        g.generate("nope", 10)
