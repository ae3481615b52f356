"""CSR in a locality order (``order=1``: reverse Cuthill-McKee, csrc/order.c and csrc/csr.c): the order, the
permuted conversion, its inverse and the products, on the host. The GPU's products of the same states are in
tests/test_gpu.py (every configuration against scipy)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp
from glue import convert_raw, random_csr, state_args
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import reverse_cuthill_mckee

import pyspmv
from pyspmv import _core


def mean_distance(A: sp.csr_matrix) -> float:
    """Mean |row - column| over the entries: what a locality order makes small."""
    C = sp.coo_matrix(A)
    return float(np.abs(C.row.astype(np.int64) - C.col).mean()) if C.nnz else 0.0


def square_cases() -> dict[str, sp.csr_matrix]:
    rng = np.random.default_rng(7)
    n = 400
    P = np.eye(n)[rng.permutation(n)]                        # a Poisson grid numbered at random
    poisson = sp.csr_matrix(P @ pyspmv.generate("poisson2d", 20).to_scipy().toarray() @ P.T)
    long_rows = sp.lil_matrix((300, 300))
    long_rows[3, :] = 1.0
    long_rows[:, 7] = 2.0
    empty = random_csr(500, 500, 0.004, 2).tolil()
    empty[::5] = 0                                           # every fifth row empty
    dups = sp.csr_matrix((np.ones(7), ([0, 0, 3, 3, 3, 7, 8], [1, 1, 2, 2, 5, 0, 8])), shape=(9, 9))
    return {"poisson_scrambled": poisson, "random": random_csr(700, 700, 0.01, 1),
            "long_rows": sp.csr_matrix(long_rows), "empty_rows": sp.csr_matrix(empty),
            "one_by_one": sp.csr_matrix(np.array([[2.5]])), "no_entries": sp.csr_matrix((50, 50)),
            "duplicates_and_zeros": dups + sp.csr_matrix(([0.0], ([4], [4])), shape=(9, 9)),
            "powerlaw": pyspmv.generate("powerlaw", 2000, seed=4).to_scipy()}


CASES = square_cases()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("name", list(CASES))
def test_order_round_trip_and_products(name, dtype):
    """The state holds P A P^T with P a permutation; back-conversion gives A exactly; both CPU kernels
    with order=1 give scipy's product."""
    M = pyspmv.Matrix(CASES[name], name=name).astype(dtype)
    F = pyspmv.convert(M, "csr", order=1)
    assert F.params == {"order": 1, "vals": 0}
    indptr, indices, perm = F.index_arrays[:3]
    n = M.nrows
    assert sorted(perm) == list(range(n))
    A = M.to_scipy()
    B = sp.csr_matrix((F.value_arrays[0], indices, indptr), shape=M.shape)
    assert (B != A[perm][:, perm]).nnz == 0                  # exactly P A P^T, zeros and all
    assert all(np.all(np.diff(indices[indptr[k]:indptr[k + 1]]) > 0) for k in range(n))
    back = F.to_csr().to_scipy()
    assert (back != A).nnz == 0 and back.nnz == A.nnz and np.array_equal(back.indptr, A.indptr)
    x = np.random.default_rng(1).uniform(-1, 1, n).astype(dtype)
    ref = A.astype(np.float64) @ x.astype(np.float64)
    scale = max(float(np.max(abs(A) @ np.abs(x.astype(np.float64)), initial=0.0)), 1e-30)
    for cid in ("cpu/csr/rows/order=1", "cpu/csr/nnz/order=1"):
        y = pyspmv.spmv(M, x, config=cid)
        assert y.dtype == dtype
        assert np.max(np.abs(y - ref), initial=0.0) / scale < (1e-5 if dtype == np.float32 else 1e-13), cid


def test_order_reduces_the_distance_like_scipys():
    """On a Poisson grid numbered at random, the order brings rows and columns together as scipy's
    reverse Cuthill-McKee does (not necessarily the same permutation: ties may fall otherwise)."""
    A = CASES["poisson_scrambled"]
    F = pyspmv.convert(pyspmv.Matrix(A), "csr", order=1)
    ours = F.to_csr()  # the original back: the order itself is in the state
    B = sp.csr_matrix((F.value_arrays[0], F.index_arrays[1], F.index_arrays[0]), shape=A.shape)
    p = reverse_cuthill_mckee(sp.csr_matrix(abs(A) + abs(A).T), symmetric_mode=True)
    theirs = mean_distance(A[p][:, p])
    assert mean_distance(B) <= 1.5 * theirs < mean_distance(A) / 5
    assert (ours.to_scipy() != A).nnz == 0


def test_order_is_deterministic_and_configured_by_id():
    A = pyspmv.Matrix(CASES["powerlaw"])
    p1 = pyspmv.convert(A, "csr", order=1).index_arrays[2]
    p2 = pyspmv.convert(A, "csr", order=1).index_arrays[2]
    assert np.array_equal(p1, p2)
    c = pyspmv.config("pyspmv/csr/adaptive/order=1/bs=256")
    assert c.format_kwargs == {"order": 1, "vals": 0} and c.params == {"order": 1, "bs": 256}
    # order=0 is every kernel's own: never printed, so the ids datasets and models hold stay as they were
    assert pyspmv.config("pyspmv/csr/adaptive/order=0/bs=256").id == "pyspmv/csr/adaptive/bs=256"
    assert pyspmv.config("cpu/csr/rows/order=0").id == "cpu/csr/rows"
    ids = [c.id for c in pyspmv.configs("cuda")]
    assert "pyspmv/csr/adaptive/bs=256" in ids and "pyspmv/csr/merge/order=1/bs=128" in ids
    assert not any("order=0" in i for i in ids)
    assert not any("order" in c.id for c in pyspmv.configs("cpu"))       # set by hand only on the CPU
    with pytest.raises(ValueError, match="given twice"):
        pyspmv.config("pyspmv/csr/adaptive/order=0/order=1")
    with pytest.raises(ValueError, match="order"):
        pyspmv.config("pyspmv/csr/adaptive/order=2")


def test_order_refuses_rectangular_and_bad_values():
    R = pyspmv.Matrix(random_csr(30, 40, 0.1, 3))
    with pytest.raises(pyspmv.NotApplicableError, match="square"):
        pyspmv.convert(R, "csr", order=1)
    with pytest.raises(ValueError, match="'order' parameter of csr must be 0"):
        convert_raw("csr", CASES["random"], p0=3)
    with pytest.raises(ValueError, match="'vals' parameter of csr must be 0"):   # the second slot: csr's vals
        convert_raw("csr", CASES["random"], p1=1)
    # a rectangular matrix in a benchmark: the order=1 configuration reports not_applicable
    df = pyspmv.benchmark(R, ["cpu/csr/rows/order=1", "cpu/csr/rows"], repeats=2, budget_s=0.01, progress=False)
    assert list(df.status) == ["not_applicable", "ok"] and "square" in df.note.iloc[0]


@pytest.mark.parametrize(("change", "match"), [
    (lambda p: p.__setitem__(0, len(p)), r"perm\[0\] = \d+ is outside"),
    (lambda p: p.__setitem__(1, p[0]), "repeats a row"),
    (lambda p: p.__setitem__(2, -1), r"perm\[2\] = -1 is outside"),
])
def test_a_state_whose_order_is_not_a_permutation_is_refused(change, match):
    s = convert_raw("csr", CASES["random"], p0=1)
    idx = [a.copy() for a in s.index_arrays]
    change(idx[2])
    with pytest.raises(ValueError, match=match):
        _core.State(**state_args(s, index_arrays=tuple(idx)))
    idx[2] = idx[2][:0]
    with pytest.raises(ValueError, match="perm"):                      # the order's array left out
        _core.State(**state_args(s, index_arrays=tuple(idx)))
    assert _core.State(**state_args(s)).nnz == s.nnz                    # unchanged: accepted


@settings(max_examples=40, deadline=None)
@given(n=st.integers(1, 60), density=st.floats(0.0, 0.3), seed=st.integers(0, 2**16))
def test_order_round_trip_property(n, density, seed):
    """Any square matrix (empty rows, isolated vertices, several components): a permutation, P A P^T,
    and the original back."""
    A = random_csr(n, n, density, seed, placement="uniform")
    F = pyspmv.convert(pyspmv.Matrix(A), "csr", order=1)
    perm = F.index_arrays[2]
    assert np.array_equal(np.sort(perm), np.arange(n))
    B = sp.csr_matrix((F.value_arrays[0], F.index_arrays[1], F.index_arrays[0]), shape=A.shape)
    assert (B != A[perm][:, perm]).nnz == 0
    back = F.to_csr().to_scipy()
    assert (back != A).nnz == 0 and back.nnz == A.nnz
