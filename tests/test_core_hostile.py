"""Issue 11: hostile inputs reach the C core through the public API and through ``pyspmv._core``.

Every case used to crash (or read out of bounds under ASan); each must now be a ValueError naming
the argument and the limit.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import pyspmv
from pyspmv import _core

H100 = (132, 2048, 32)
FORMATS = ["csr", "coo", "ell", "sell", "bro_ell", "hyb", "dia", "jad", "bsr"]
PARAMS = {"sell": {"c": 4, "sigma": 8}, "bro_ell": {"h": 4}, "bsr": {"b": 2}, "hyb": {"k": 1}}


def unchecked(indptr, indices, shape):
    """A scipy matrix whose constructor does not look at the index values."""
    ip, ix = np.asarray(indptr, np.int32), np.asarray(indices, np.int32)
    return sp.csr_matrix((np.ones(ix.size), ix, ip), shape=shape)


def grid(n=12):
    A = sp.random(n, n + 3, density=0.3, format="csr", random_state=7) + sp.eye(n, n + 3, format="csr")
    A.sum_duplicates()
    return A.tocsr()


@pytest.mark.parametrize("col", [2**30, -1, 5, -(2**31)])
def test_out_of_range_column_refused_by_core(col):
    ip = np.array([0, 2, 3, 4], np.int32)
    ix = np.array([0, col, 1, 2], np.int32)
    with pytest.raises(ValueError, match=r"column index -?\d+ in row 0 is outside \[0, ncols = 5\)|"
                                         r"row 0 has column"):
        _core.features(3, 5, ip, ix, *H100)
    with pytest.raises(ValueError, match="outside|column"):
        _core.convert(2, 0, 0, 20.0, 3, 5, ip, ix, np.ones(4))
    with pytest.raises(ValueError, match="outside|column"):
        _core.fmt_size(0, 0, 0, 20.0, 3, 5, ip, ix)


def test_out_of_range_column_public_api():
    """The reproducer: pyspmv.Matrix over a scipy matrix with a column index of 2**30."""
    S = unchecked([0, 1, 2], [0, 2**30], (2, 3))
    with pytest.raises(ValueError, match="column|outside|index"):
        pyspmv.features(pyspmv.Matrix(S))
    with pytest.raises(ValueError, match="column|outside|index"):
        pyspmv.rank(pyspmv.Matrix(S), device="cpu")


def test_unsorted_and_bad_indptr_refused_by_features():
    with pytest.raises(ValueError, match="row 0 has column 1 after column 2"):
        _core.features(2, 3, np.array([0, 2, 3], np.int32), np.array([2, 1, 0], np.int32), *H100)
    with pytest.raises(ValueError, match="indptr decreases at position 2"):
        _core.features(2, 3, np.array([0, 3, 1], np.int32), np.array([0, 1, 2], np.int32), *H100)
    with pytest.raises(ValueError, match=r"indptr\[0\] is 1"):
        _core.features(2, 3, np.array([1, 2, 3], np.int32), np.array([0, 1, 2], np.int32), *H100)
    with pytest.raises(ValueError, match=r"indptr has 3 entries; it must have nrows\+1 = 4"):
        _core.features(3, 3, np.array([0, 1, 2], np.int32), np.array([0, 1], np.int32), *H100)
    with pytest.raises(ValueError, match=r"indptr\[nrows\] = 9 but indices has 2 entries"):
        _core.features(2, 3, np.array([0, 1, 9], np.int32), np.array([0, 1], np.int32), *H100)


def test_csr_check_reads_indptr_before_indices():
    """indptr pointing past indices: refused on indptr alone, nothing past indices in the message."""
    with pytest.raises(ValueError, match="indptr decreases at position 2: 2 after 100"):
        _core.csr_check(2, 3, np.array([0, 100, 2], np.int32), np.array([0, 1], np.int32))


def test_rank_core_refuses_bad_columns():
    rm = pyspmv.default_model("cpu")
    from pyspmv.rank import _prepared

    cap = _prepared(rm, "float64").capsule
    ip = np.array([0, 2, 3], np.int32)
    for col in (2**30, -7):
        with pytest.raises(ValueError, match="column index"):
            _core.rank(cap, 2, 3, ip, np.array([0, col, 1], np.int32), 8, None)
        with pytest.raises(ValueError, match="column index"):
            _core.core_rows(cap, 2, 3, ip, np.array([0, col, 1], np.int32), 8)


def test_rank_core_pairs_and_their_argument_checks():
    rm = pyspmv.default_model("cpu")
    from pyspmv.rank import _prepared

    p = _prepared(rm, "float64")
    M = pyspmv.generators.poisson2d(6)
    args = (p.capsule, M.nrows, M.ncols, M.indptr, M.indices, 8, None, 0)
    order, ms = _core.rank(*args)
    n = len(p.id_tuple)
    assert _core.rank(*args, p.id_tuple) == [(p.id_tuple[i], ms[i]) for i in order]
    keep = tuple(i % 3 == 0 for i in range(n))
    assert _core.rank(*args, p.id_tuple, keep) == [(p.id_tuple[i], ms[i]) for i in order if keep[i]]
    class Falsy:
        def __bool__(self):
            raise RuntimeError("no truth")
    with pytest.raises(RuntimeError, match="no truth"):
        _core.rank(*args, p.id_tuple, (Falsy(),) * n)
    for ids, kp in ((p.id_tuple[:-1], None), (list(p.id_tuple), None), (None, keep), (p.id_tuple, keep[:-1]),
                    (p.id_tuple, list(keep))):
        with pytest.raises(ValueError, match=f"tuples of {n} items"):
            _core.rank(*args, ids, kp)


def chain_spec(depth):
    """A regression tree that is a chain `depth` splits deep, every row going left at each."""
    nodes = 2 * depth + 1
    n = np.arange(nodes, dtype=np.int32)
    internal = (n % 2 == 0) & (n < nodes - 1)
    feature = np.where(internal, 0, -1).astype(np.int32)
    left = np.where(internal, n + 2, -1).astype(np.int32)
    right = np.where(internal, n + 1, -1).astype(np.int32)
    value = np.zeros(nodes)
    value[-1] = 1.0
    ncols = _core.NCOLS
    f64, i32 = (lambda *v: np.array(v, np.float64)), (lambda *v: np.array(v, np.int32))
    return {
        "kind": 2, "ngroups": 1, "ncols": ncols, "ninputs": 1, "out_tf": 0, "out_col": -1, "out_lo": -np.inf,
        "rank_bytes_pow": 0.0,
        "in_col": i32(_core.NFEATURES), "in_tf": i32(0), "in_nan": f64(0), "in_lo": f64(-np.inf),
        "in_hi": f64(np.inf), "in_shift": f64(0), "in_div": f64(1),
        "trees.nout": 1, "trees.ntrees": 1, "trees.nnodes": nodes, "trees.cast_f32": 0, "trees.scale": 1.0,
        "trees.tree_ptr": i32(0, 1), "trees.root": i32(0), "trees.feature": feature, "trees.left": left,
        "trees.right": right, "trees.threshold": np.full(nodes, 1e300), "trees.value": value,
        "trees.init": f64(0),
        "cfg.n": 0, "cfg.nextra": 0, "cfg.ids": (),
        "cfg.group": i32(), "cfg.extra": f64(), "dev": i32(*H100),
    }


def test_deep_tree_chain_does_not_overflow_the_stack():
    cap = _core.model_new(chain_spec(100_000))
    rows = np.zeros((4, _core.NCOLS))
    rows[:, _core.NFEATURES] = [0, 1, 2, 3]  # rows differ: the batch walk partitions them at every split
    ms, _ = _core.model_predict(cap, rows.ravel(), _core.NCOLS, np.zeros(4, np.int32))
    assert ms.tolist() == [1.0, 1.0, 1.0, 1.0]


def test_ell_raised_width_refused():
    """Also with B's seal kept: the seal holds for B's scalars, not these."""
    B = pyspmv.convert(grid(), "ell")
    fmt, nrows, ncols, nnz, p, s, idx, val, seal = B._state
    bad = (fmt, nrows, ncols, nnz, p, (s[0] + 3, *s[1:]), idx, val, seal)
    with pytest.raises(ValueError, match=r"idx\[0\] \(col\) has \d+ entries; it must have \d+"):
        pyspmv.FormatMatrix(bad, B.params)
    for call in (lambda: _core.to_csr(bad), lambda: _core.mv(bad, 0, np.ones(ncols), np.zeros(nrows)),
                 lambda: _core.fmt_bytes(bad, 8), lambda: _core.fmt_check(bad),
                 lambda: _core.bench(bad, 0, np.ones(ncols), np.zeros(nrows), 0, 1, 0.0)):
        with pytest.raises(ValueError, match="ELL|ell"):
            call()


def writeable_copy(B):
    """B's state with writeable copies of its arrays, B's seal kept."""
    fmt, nrows, ncols, nnz, p, s, idx, val, seal = B._state
    return (fmt, nrows, ncols, nnz, p, s, tuple(a.copy() for a in idx), tuple(a.copy() for a in val), seal)


@pytest.mark.parametrize(("fmt", "kw", "name"), [("sell", {"c": 4, "sigma": 1}, "c"), ("bro_ell", {}, "h")])
def test_state_with_a_zero_slice_height_is_refused(fmt, kw, name):
    """A state whose slice height is 0 is refused by its parameter check before anything divides by it
    (the fuzzer found sell_check computing nrows / c first)."""
    B = pyspmv.convert(grid(), fmt, max_fill=1e9, **kw)
    st = list(writeable_copy(B))
    st[4] = (0, *st[4][1:])
    with pytest.raises(ValueError, match=f"'{name}' parameter of {fmt}"):
        _core.fmt_check(tuple(st))

@pytest.mark.parametrize("fmt", FORMATS)
def test_state_made_writeable_and_corrupted_is_refused(fmt):
    """The arrays of a FormatMatrix cannot be made writeable; a state of writeable arrays (the seal
    of another matrix kept, or none) is checked on every call, so corrupting it between calls is
    refused."""
    A = grid()
    B = pyspmv.convert(A, fmt, max_fill=1e9, **PARAMS.get(fmt, {}))
    pyspmv.FormatMatrix(B._state, B.params)  # a consistent state passes
    for a in (*B.index_arrays, *B.value_arrays):
        with pytest.raises(ValueError, match="WRITEABLE"):
            a.flags.writeable = True
    x, y = np.ones(A.shape[1]), np.zeros(A.shape[0])
    bitwords = {("dia", 1), ("bsr", 2), ("bro_ell", 3)}  # presence bits, packed symbols: checked apart
    for state in (writeable_copy(B), writeable_copy(B)[:8]):
        for k, a in enumerate(state[6]):
            if a.size == 0 or (fmt, k) in bitwords:
                continue
            keep = a[0]
            for wild in (2**30, -5):
                a[0] = wild
                with pytest.raises(ValueError, match=f"state of a {fmt} matrix"):
                    _core.mv(state, 0, x, y)
                with pytest.raises(ValueError, match=f"state of a {fmt} matrix"):
                    _core.to_csr(state)
                with pytest.raises(ValueError, match=f"state of a {fmt} matrix"):
                    pyspmv.FormatMatrix(state, B.params)
            a[0] = keep
        _core.mv(state, 0, x, y)
        np.testing.assert_allclose(y, A @ x)
    assert abs(B.to_csr().to_scipy() - A).max() == 0


def test_formatmatrix_state_shape_refused():
    with pytest.raises(ValueError, match=r"the tuple convert\(\) makes"):
        pyspmv.FormatMatrix((0, 1), {})
    B = pyspmv.convert(grid(), "sell", c=4, sigma=8)
    fmt, nrows, ncols, nnz, p, s, idx, val, _seal = B._state
    perm = idx[0].copy()
    perm[1] = perm[0]
    bad = (fmt, nrows, ncols, nnz, p, s, (perm, *idx[1:]), val)
    with pytest.raises(ValueError, match="perm.*permutation"):
        pyspmv.FormatMatrix(bad, B.params)
    with pytest.raises(ValueError, match="nnz"):
        pyspmv.FormatMatrix((fmt, nrows, ncols, nnz + 1, p, s, idx, val), B.params)


def sealed_copy(a):
    """A read-only array over a bytes object, like the ones convert() makes, holding a's values."""
    return np.frombuffer(a.tobytes(), a.dtype)


def test_sealed_arrays_cannot_be_made_writeable():
    """Each trick numpy offers to get a writeable array onto a FormatMatrix's memory is refused.

    Out of reach by design: a raw address made into an array (``__array_interface__`` with
    ``readonly`` False, ctypes), which can write anywhere in the process."""
    B = pyspmv.convert(grid(), "ell")
    a = B.index_arrays[0]
    assert type(a.base) is bytes and not a.flags.writeable
    views = [a, a[:], a[::-1], a.view(np.float32), np.asarray(a), np.array(a, copy=False), a.reshape(-1),
             np.ndarray(a.shape, a.dtype, buffer=a), np.ndarray(a.shape, a.dtype, buffer=a.base),
             np.frombuffer(a.base, a.dtype), np.lib.stride_tricks.as_strided(a),
             np.lib.stride_tricks.as_strided(a, writeable=True)]
    for v in views:
        assert not v.flags.writeable
        with pytest.raises(ValueError, match="WRITEABLE"):
            v.flags.writeable = True
        with pytest.raises(ValueError, match="WRITEABLE"):
            v.setflags(write=True)
        with pytest.raises(ValueError, match="read-only"):
            v[...] = 0
    assert abs(B.to_csr().to_scipy() - grid()).max() == 0


def test_sealed_array_given_new_memory_is_checked_again():
    """ndarray.__setstate__ swaps an array's buffer in place (same object, new writeable memory):
    the data pointer no longer matches the seal's, so the state is checked and the corruption refused."""
    A = grid()
    B = pyspmv.convert(A, "ell")
    a = B.index_arrays[0]
    bad = a.copy()
    bad[0] = 2**30
    a.__setstate__((1, a.shape, a.dtype, False, bad.tobytes()))
    assert a.flags.writeable and a is B._state[6][0]
    x, y = np.ones(A.shape[1]), np.zeros(A.shape[0])
    with pytest.raises(ValueError, match="state of a ell matrix"):
        _core.mv(B._state, 0, x, y)
    a.flags.writeable = False                             # read-only again, but not the sealed memory
    with pytest.raises(ValueError, match="state of a ell matrix"):
        B.to_csr()


@pytest.mark.parametrize("fmt", ["csr", "ell", "sell", "coo"])
def test_seal_of_other_objects_does_not_vouch(fmt):
    """A seal vouches only for the very arrays and numbers it checked: equal-looking read-only arrays
    over bytes (not the sealed objects), or another matrix's seal, get the full check."""
    A = grid()
    B = pyspmv.convert(A, fmt, **PARAMS.get(fmt, {}))
    fmt_, nrows, ncols, nnz, p, s, idx, val, seal = B._state
    x, y = np.ones(ncols), np.zeros(nrows)
    k = 1 if fmt in ("csr", "coo") else 0                  # the column array
    w = idx[k].copy()
    w[0] = 2**30
    wild = sealed_copy(w)
    bad = (fmt_, nrows, ncols, nnz, p, s, (*idx[:k], wild, *idx[k + 1:]), val, seal)
    for call in (lambda: _core.mv(bad, 0, x, y), lambda: _core.to_csr(bad), lambda: _core.seal(bad),
                 lambda: pyspmv.FormatMatrix(bad, B.params)):
        with pytest.raises(ValueError, match=f"state of a {fmt} matrix"):
            call()
    other = pyspmv.convert(grid(9), fmt, **PARAMS.get(fmt, {}))
    swapped = (*B._state[:8], other._state[8])          # B's arrays, another matrix's seal
    assert _core.seal(swapped) is not swapped             # checked (and passed), sealed anew
    _core.mv(swapped, 0, x, y)
    np.testing.assert_allclose(y, A @ x)
    with pytest.raises(ValueError, match=f"state of a {fmt} matrix"):
        _core.mv((fmt_, nrows, ncols, nnz + 1, p, s, idx, val, seal), 0, x, y)


def test_sealed_state_is_vouched_for():
    """The fast path, seen structurally: seal() hands back a sealed state itself (no copy, no new
    seal), and FormatMatrix of it shares it; the converter decides with the same test (_glue.h)."""
    B = pyspmv.convert(grid(), "sell", c=4, sigma=8)
    assert _core.seal(B._state) is B._state
    assert pyspmv.FormatMatrix(B._state, B.params)._state is B._state
    unsealed = B._state[:8]
    again = _core.seal(unsealed)
    assert again is not unsealed and all(a is b for a, b in zip(again[6] + again[7], unsealed[6] + unsealed[7]))
    assert _core.seal(again) is again


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_state_with_a_non_zero_padding_slot_is_refused(fmt, dtype):
    """DIA and BSR states whose padding slots held non-zeros were accepted, and their kernels added
    them to y (spmv disagreed with the matrix's own to_csr by up to 3.9e7); every format's padding
    is checked now (spmv_fmt_check_values)."""
    A = grid()
    A.data[:] = np.arange(1, A.nnz + 1)  # no explicit zeros: every zero slot is padding
    kw = {**PARAMS.get(fmt, {}), **({"k": 4} if fmt == "hyb" else {})}  # an ELL part wider than some rows
    B = pyspmv.convert(A, fmt, dtype=dtype, max_fill=1e9, **kw)
    pads = [(k, np.flatnonzero(v == 0)) for k, v in enumerate(B.value_arrays)]
    pads = [(k, q[0]) for k, q in pads if q.size]
    if not pads:
        assert fmt in ("csr", "coo", "jad"), f"{fmt} should pad this matrix"
        return
    for k, q in pads:
        state = writeable_copy(B)[:8]
        state[7][k][q] = 3.9e7
        with pytest.raises(ValueError, match=f"state of a {fmt} matrix: {fmt}: 1 padding slots hold non-zero"):
            pyspmv.FormatMatrix(state, B.params)
        state[7][k][q] = -0.0  # a signed zero adds nothing: accepted
        F = pyspmv.FormatMatrix(state, B.params)
        x = np.linspace(-1, 1, A.shape[1]).astype(dtype)
        y = np.zeros(A.shape[0], dtype=dtype)
        _core.mv(F.state, 0, x, y)
        np.testing.assert_allclose(y, A @ x, rtol=1e-5)
