"""Matrix features of the C core (csrc/features.c) against NumPy computations of their definitions."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.io
import scipy.sparse as sp
from conftest import shared_params
from hypothesis import given
from hypothesis import strategies as st

from pyspmv import _core

NAMES = (
    "nrows", "ncols", "nnz", "density", "nnz_mean", "nnz_min", "nnz_max", "nnz_mode", "nnz_median",
    "nnz_sd", "nnz_cov", "nnz_max_minus_mean", "ell_fill", "empty_rows", "hyb_width",
    "gpu_strips_rows", "gpu_strips_warps", "gpu_strips_nnz", "dist_min", "dist_max", "bandwidth",
    "col_span_mean", "cluster_mean", "ndiag", "dia_fill", "diag_dist_mean", "diag_dist_sd",
    "low_band_mean", "up_band_mean", "low_band_sd", "up_band_sd", "x_seg_row_mean", "x_seg_warp_mean",
)
H100 = (132, 2048, 32)


def canonical(A) -> sp.csr_matrix:
    A = sp.csr_matrix(A)
    A.sum_duplicates()
    A.sort_indices()
    return A


def c_features(A, gpu=H100) -> dict[str, float]:
    A = canonical(A)
    out = _core.features(A.shape[0], A.shape[1], A.indptr.astype(np.int32), A.indices.astype(np.int32), *gpu)
    assert out.dtype == np.float64 and out.shape == (33,)
    return dict(zip(_core.feature_names(), out.tolist()))


def ratio(a, b) -> float:
    return a / b if b else 0.0


def mean0(v) -> float:
    return float(np.mean(v)) if len(v) else 0.0


def std0(v) -> float:
    return float(np.std(v)) if len(v) else 0.0


def reference(A, gpu=H100) -> dict[str, float]:
    """Every feature from its written definition, vectorised NumPy, nothing shared with the C code."""
    A = canonical(A)
    sm, tps, warp = gpu
    T = sm * tps
    n, m = A.shape
    ip = A.indptr.astype(np.int64)
    ix = A.indices.astype(np.int64)
    nnz = int(ix.size)
    lens = np.diff(ip)
    rows = np.repeat(np.arange(n, dtype=np.int64), lens)
    f: dict[str, float] = {"nrows": n, "ncols": m, "nnz": nnz, "density": nnz / (n * m), "nnz_mean": nnz / n}
    f["nnz_min"], f["nnz_max"] = lens.min(), lens.max()
    values, counts = np.unique(lens, return_counts=True)
    f["nnz_mode"] = values[np.argmax(counts)]                 # argmax takes the first: the smallest
    f["nnz_median"] = np.median(lens)
    f["nnz_sd"] = np.std(lens)
    f["nnz_cov"] = ratio(f["nnz_sd"], f["nnz_mean"])
    f["nnz_max_minus_mean"] = lens.max() - nnz / n
    f["ell_fill"] = ratio(n * lens.max(), nnz)
    f["empty_rows"] = np.count_nonzero(lens == 0)
    # Bell-Garland: the largest K with at least t rows of length >= K is the t-th longest length.
    t = min(n, max(4096, -(-n // 3)))
    f["hyb_width"] = np.sort(lens)[::-1][t - 1]
    f["gpu_strips_rows"] = -(-n // T)
    f["gpu_strips_warps"] = -(-(n * warp) // T)
    f["gpu_strips_nnz"] = -(-nnz // T)

    same_row = rows[1:] == rows[:-1]
    gaps = np.diff(ix)[same_row]
    f["dist_min"] = gaps.min() if gaps.size else 0
    f["dist_max"] = gaps.max() if gaps.size else 0
    f["bandwidth"] = np.abs(ix - rows).max() if nnz else 0
    full = lens > 0
    first, last, r = ix[ip[:-1][full]], ix[ip[1:][full] - 1], np.flatnonzero(full)
    f["col_span_mean"] = mean0(last - first)
    # Runs of consecutive columns: a run starts wherever an entry does not continue its left neighbour.
    starts = np.ones(nnz, dtype=bool)
    starts[1:] = ~(same_row & (np.diff(ix) == 1))
    run_id = np.cumsum(starts) - 1
    run_len = np.bincount(run_id, minlength=int(starts.sum())) if nnz else np.zeros(0, np.int64)
    longest = np.zeros(n, dtype=np.int64)
    np.maximum.at(longest, rows[starts], run_len)
    f["cluster_mean"] = mean0(longest[full])
    offsets = np.unique(ix - rows)
    f["ndiag"] = offsets.size
    f["dia_fill"] = ratio(offsets.size * n, nnz)
    dd = np.diff(offsets)
    f["diag_dist_mean"], f["diag_dist_sd"] = mean0(dd), std0(dd)
    low, up = np.maximum(0, r - first), np.maximum(0, last - r)
    f["low_band_mean"], f["up_band_mean"] = mean0(low), mean0(up)
    f["low_band_sd"], f["up_band_sd"] = std0(low), std0(up)
    seg = ix // 16
    nseg = -(-m // 16)
    f["x_seg_row_mean"] = ratio(np.unique(rows * nseg + seg).size, np.count_nonzero(full))
    f["x_seg_warp_mean"] = np.unique((rows // 32) * nseg + seg).size / -(-n // 32)
    assert list(f) == list(NAMES)
    return {k: float(v) for k, v in f.items()}


def assert_matches_reference(A, gpu=H100) -> dict[str, float]:
    got = c_features(A, gpu)
    assert got == pytest.approx(reference(A, gpu), rel=1e-12, abs=0)
    return got


def csr(nrows, ncols, row_cols) -> sp.csr_matrix:
    """CSR from {row: [cols]}."""
    r = [i for i, cs in row_cols.items() for _ in cs]
    c = [j for cs in row_cols.values() for j in cs]
    return sp.csr_matrix((np.ones(len(r)), (r, c)), shape=(nrows, ncols))


# ---- names, hand-computed values, edge shapes ----

def test_feature_names_are_the_33_documented_names_in_order():
    assert _core.feature_names() == NAMES


def test_hand_computed_values_of_a_4x5_matrix_with_an_empty_row():
    A = csr(4, 5, {0: [0, 1, 2, 4], 2: [1], 3: [0, 3, 4]})
    f = assert_matches_reference(A)
    expected = {
        "nnz": 8, "density": 0.4, "nnz_mean": 2, "nnz_min": 0, "nnz_max": 4, "nnz_mode": 0, "nnz_median": 2,
        "nnz_sd": math.sqrt(2.5), "nnz_cov": math.sqrt(2.5) / 2, "nnz_max_minus_mean": 2, "ell_fill": 2,
        "empty_rows": 1, "hyb_width": 0, "gpu_strips_rows": 1, "gpu_strips_warps": 1, "gpu_strips_nnz": 1,
        "dist_min": 1, "dist_max": 3, "bandwidth": 4, "col_span_mean": 8 / 3, "cluster_mean": 2,
        "ndiag": 6, "dia_fill": 3, "diag_dist_mean": 1.4, "diag_dist_sd": math.sqrt(0.24),
        "low_band_mean": 4 / 3, "up_band_mean": 5 / 3, "low_band_sd": math.sqrt(14) / 3,
        "up_band_sd": math.sqrt(26) / 3, "x_seg_row_mean": 1, "x_seg_warp_mean": 1,
    }
    assert {k: f[k] for k in expected} == pytest.approx(expected, rel=1e-12, abs=0)


def test_hand_computed_segments_gaps_and_runs_of_one_long_row():
    f = assert_matches_reference(csr(1, 40, {0: [0, 15, 16, 31, 32, 39]}))
    assert (f["x_seg_row_mean"], f["x_seg_warp_mean"]) == (3, 3)       # segments 0, 0, 1, 1, 2, 2
    assert (f["dist_min"], f["dist_max"], f["cluster_mean"]) == (1, 15, 2)
    assert (f["bandwidth"], f["ndiag"], f["diag_dist_mean"]) == (39, 6, 7.8)


@pytest.mark.parametrize(("n", "warp_mean"), [(64, 2.0), (33, 1.5), (32, 2.0), (1, 1.0)])
def test_hand_computed_identity_has_one_diagonal_and_warp_segments(n, warp_mean):
    f = assert_matches_reference(sp.identity(n, format="csr"))
    assert (f["ndiag"], f["dia_fill"], f["bandwidth"], f["cluster_mean"]) == (1, 1, 0, 1)
    assert (f["dist_min"], f["dist_max"], f["diag_dist_mean"], f["diag_dist_sd"]) == (0, 0, 0, 0)
    assert f["x_seg_row_mean"] == 1 and f["x_seg_warp_mean"] == warp_mean


def test_no_entries_gives_zero_for_every_entry_feature():
    f = assert_matches_reference(sp.csr_matrix((3, 4)))
    nonzero = {"nrows": 3, "ncols": 4, "empty_rows": 3, "gpu_strips_rows": 1, "gpu_strips_warps": 1}
    assert f == {k: float(nonzero.get(k, 0)) for k in NAMES}


@pytest.mark.parametrize("A", [
    pytest.param(sp.csr_matrix(np.ones((1, 1))), id="1x1"),
    pytest.param(sp.csr_matrix((1, 1)), id="1x1-empty"),
    pytest.param(csr(1, 50, {0: [3, 4, 5, 20, 49]}), id="one-row"),
    pytest.param(csr(50, 1, {i: [0] for i in range(0, 50, 3)}), id="one-column"),
    pytest.param(csr(7, 300, {0: list(range(300)), 3: [5, 150], 6: [299]}), id="wide"),
    pytest.param(csr(300, 7, {i: [i % 7, 6] if i % 7 != 6 else [6] for i in range(0, 300, 2)}), id="tall"),
    pytest.param(csr(6, 6, {0: [5], 5: [0]}), id="anti-corners"),
])
def test_edge_shapes_match_reference(A):
    assert_matches_reference(A)


def test_banded_matrix_has_its_bandwidth_and_diagonals():
    n = 500
    A = sp.diags([np.ones(n - abs(k)) for k in (-3, -1, 0, 2, 7)], [-3, -1, 0, 2, 7], format="csr")
    f = assert_matches_reference(A)
    assert (f["bandwidth"], f["ndiag"], f["diag_dist_mean"]) == (7, 5, 2.5)
    assert f["dia_fill"] == pytest.approx(5 * n / A.nnz, rel=1e-12)


def test_narrow_band_far_from_the_diagonal_keeps_its_sd_accurate():
    # low_i is about 1e6 for every row and nearly constant: a one-pass sum of squares would cancel.
    n, shift = 3000, 1_000_000
    rows = np.arange(n)
    A = sp.csr_matrix((np.ones(n), (rows, rows + shift - (rows % 3 == 0))), shape=(n, shift + n))
    assert_matches_reference(A)
    assert_matches_reference(sp.csr_matrix(A.T))


def test_nearly_constant_long_rows_keep_nnz_sd_accurate():
    lens = np.full(800, 1000)
    lens[7] = 1001                                  # sd ~ 0.035 against a mean of 1000
    rows = np.repeat(np.arange(lens.size), lens)
    cols = np.concatenate([np.arange(k) for k in lens])
    f = assert_matches_reference(sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(lens.size, 1001)))
    assert f["nnz_sd"] == pytest.approx(np.std(lens), rel=1e-12, abs=0) and f["nnz_sd"] > 0


def test_gpu_properties_set_the_strip_counts():
    A = sp.random(1000, 900, density=0.01, format="csr", random_state=3)
    f = assert_matches_reference(A, gpu=(3, 7, 5))
    assert f["gpu_strips_rows"] == math.ceil(1000 / 21) and f["gpu_strips_warps"] == math.ceil(5000 / 21)
    assert f["gpu_strips_nnz"] == math.ceil(A.nnz / 21)


def test_h100_strips_of_a_tall_matrix_span_several_full_gpu_iterations():
    n = 132 * 2048 + 1
    f = assert_matches_reference(sp.identity(n, format="csr"))
    assert (f["gpu_strips_rows"], f["gpu_strips_warps"], f["gpu_strips_nnz"]) == (2, 33, 2)


@pytest.mark.parametrize("gpu", [(0, 2048, 32), (132, 0, 32), (132, 2048, -1)])
def test_nonpositive_gpu_properties_are_refused(gpu):
    with pytest.raises(ValueError, match="positive"):
        _core.features(1, 1, np.array([0, 0], np.int32), np.array([], np.int32), *gpu)


# ---- random and generated matrices ----

@pytest.mark.parametrize("density", [1e-4, 3e-3, 0.05, 0.3, 1.0])
def test_random_matrices_of_several_densities_match_reference(density):
    assert_matches_reference(sp.random(700, 1100, density=density, format="csr", random_state=int(density * 1e4)))


def test_power_law_rows_past_4096_match_reference_hyb_width():
    rng = np.random.default_rng(5)
    n, m = 20000, 5000
    lens = np.minimum(m, (rng.pareto(1.2, n) * 2).astype(np.int64))
    rows = np.repeat(np.arange(n), lens)
    cols = np.concatenate([rng.choice(m, k, replace=False) for k in lens])
    A = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, m))
    f = assert_matches_reference(A)
    assert f["hyb_width"] > 0 and f["empty_rows"] > 0


def test_laplacian_2d_matches_reference():
    k = 60
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k))
    A = sp.kronsum(T, T, format="csr")
    f = assert_matches_reference(A)
    assert (f["ndiag"], f["bandwidth"], f["nnz_max"]) == (5, k, 5)


@st.composite
def small_csr(draw) -> sp.csr_matrix:
    nrows = draw(st.integers(1, 70))
    ncols = draw(st.one_of(st.integers(1, 40), st.integers(1, 400)))
    near = draw(st.booleans())                     # columns near the diagonal: runs and few offsets
    row_cols = {}
    for i in range(nrows):
        if near:
            lo = max(0, min(ncols - 1, i - 4))
            cols = st.sets(st.integers(lo, min(ncols - 1, lo + 8)), max_size=9)
        else:
            cols = st.sets(st.integers(0, ncols - 1), max_size=min(ncols, 12))
        row_cols[i] = sorted(draw(cols))
    return csr(nrows, ncols, row_cols)


@given(small_csr())
def test_hypothesis_matrices_match_reference(A):
    assert_matches_reference(A)


@given(small_csr(), st.integers(1, 200), st.integers(1, 64), st.integers(1, 64))
def test_hypothesis_gpu_properties_match_reference(A, sm, tps, warp):
    assert_matches_reference(A, gpu=(sm, tps, warp))


# ---- real matrices ----

@pytest.mark.shared
@pytest.mark.parametrize("path", shared_params())
def test_shared_real_matrix_matches_reference(path):
    A = canonical(scipy.io.mmread(path))
    f = assert_matches_reference(A)
    assert all(math.isfinite(v) for v in f.values())
