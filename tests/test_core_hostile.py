"""Issue 11: hostile inputs reach the C core through the public API and through ``pyspmv._core``.

Every case used to crash (or read out of bounds under ASan); each must now be a ValueError naming
the argument and the limit.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import pickle

import numpy as np
import pytest
import scipy.sparse as sp
from glue import code, state_args

import pyspmv
from pyspmv import _core

H100 = (132, 2048, 32)
FORMATS = ["csr", "coo", "ell", "sell", "bro_ell", "hyb", "dia", "jad", "bsr", "cidx"]
PARAMS = {"sell": {"c": 4, "sigma": 8}, "bro_ell": {"h": 4}, "bsr": {"b": 2}, "hyb": {"k": 1}, "cidx": {"bits": 8}}


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
        _core.convert(code("ell"), 0, 0, 20.0, 3, 5, ip, ix, np.ones(4))
    with pytest.raises(ValueError, match="outside|column"):
        _core.fmt_size(code("csr"), 0, 0, 20.0, 3, 5, ip, ix)


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
    from pyspmv.ranking.rank import _prepared

    cap = _prepared(rm, "float64").capsule
    ip = np.array([0, 2, 3], np.int32)
    for col in (2**30, -7):
        with pytest.raises(ValueError, match="column index"):
            _core.rank(cap, 2, 3, ip, np.array([0, col, 1], np.int32), 8, None)
        with pytest.raises(ValueError, match="column index"):
            _core.core_rows(cap, 2, 3, ip, np.array([0, col, 1], np.int32), 8)


def test_rank_core_pairs_and_their_argument_checks():
    rm = pyspmv.default_model("cpu")
    from pyspmv.ranking.rank import _prepared

    p = _prepared(rm, "float64")
    M = pyspmv.matrices.generators.poisson2d(6)
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
    """A State whose ELL width says more slots than its arrays hold is refused when made; the products
    take nothing but a State, so a tuple of the same numbers never reaches them."""
    B = pyspmv.convert(grid(), "ell")
    s = B.state.scalars
    bad = state_args(B.state, scalars=(s[0] + 3, *s[1:]))
    with pytest.raises(ValueError, match=r"idx\[0\] \(col\) has \d+ entries; it must have \d+"):
        _core.State(**bad)
    with pytest.raises(ValueError, match=r"idx\[0\] \(col\) has \d+ entries; it must have \d+"):
        pyspmv.FormatMatrix(tuple(bad.values()), B.params)
    nrows, ncols = B.shape
    for call in (lambda: _core.to_csr(tuple(bad.values())),
                 lambda: _core.mv(tuple(bad.values()), 0, np.ones(ncols), np.zeros(nrows)),
                 lambda: _core.recast(tuple(bad.values()), False),
                 lambda: _core.bench(tuple(bad.values()), 0, np.ones(ncols), np.zeros(nrows), 0, 1, 0.0)):
        with pytest.raises(TypeError, match="format state"):
            call()


def writeable_copy(B):
    """The constructor arguments of B's state with writeable copies of its arrays."""
    st = B.state
    return state_args(st, index_arrays=tuple(a.copy() for a in st.index_arrays),
                      value_arrays=tuple(a.copy() for a in st.value_arrays))


@pytest.mark.parametrize(("fmt", "kw", "name"), [("sell", {"c": 4, "sigma": 1}, "c"), ("bro_ell", {}, "h")])
def test_state_with_a_zero_slice_height_is_refused(fmt, kw, name):
    """A state whose slice height is 0 is refused by its parameter check before anything divides by it
    (the fuzzer found sell_check computing nrows / c first)."""
    B = pyspmv.convert(grid(), fmt, max_fill=1e9, **kw)
    st = writeable_copy(B)
    st["params"] = (0, *st["params"][1:])
    with pytest.raises(ValueError, match=f"'{name}' parameter of {fmt}"):
        _core.State(**st)


@pytest.mark.parametrize("fmt", FORMATS)
def test_state_made_writeable_and_corrupted_is_refused(fmt):
    """The arrays of a FormatMatrix cannot be made writeable; a State made of writeable arrays is
    checked on copies of them, so arrays corrupted before it is made are refused and arrays corrupted
    after it is made do not reach it."""
    A = grid()
    B = pyspmv.convert(A, fmt, max_fill=1e9, **PARAMS.get(fmt, {}))
    pyspmv.FormatMatrix(B.state, B.params)  # a consistent state passes
    for a in (*B.index_arrays, *B.value_arrays):
        with pytest.raises(ValueError, match="WRITEABLE"):
            a.flags.writeable = True
    x, y = np.ones(A.shape[1]), np.zeros(A.shape[0])
    bitwords = {("dia", 1), ("bsr", 2), ("bro_ell", 3)}  # presence bits, packed symbols: checked apart
    args = writeable_copy(B)
    made = _core.State(**args)                             # copies of the given arrays, checked
    assert all(m is not g for m, g in zip(made.index_arrays, args["index_arrays"]))
    for k, a in enumerate(args["index_arrays"]):
        if a.size == 0 or (fmt, k) in bitwords:
            continue
        keep = a[0]
        for wild in (2**30, -5):
            a[0] = wild
            with pytest.raises(ValueError, match=f"state of a {fmt} matrix"):
                _core.State(**args)
            with pytest.raises(ValueError, match=f"state of a {fmt} matrix"):
                pyspmv.FormatMatrix(tuple(args.values()), B.params)
            _core.mv(made, 0, x, y)                        # made before: its copies are as checked
            np.testing.assert_allclose(y, A @ x)
        a[0] = keep
    _core.mv(_core.State(**args), 0, x, y)
    np.testing.assert_allclose(y, A @ x)
    assert abs(B.to_csr().to_scipy() - A).max() == 0


def test_formatmatrix_state_shape_refused():
    with pytest.raises(ValueError, match="the 8 arguments of its constructor"):
        pyspmv.FormatMatrix((0, 1), {})
    with pytest.raises(TypeError, match="pyspmv._core.State"):
        pyspmv.FormatMatrix([0, 1], {})
    B = pyspmv.convert(grid(), "sell", c=4, sigma=8)
    idx = B.state.index_arrays
    perm = idx[0].copy()
    perm[1] = perm[0]
    with pytest.raises(ValueError, match="perm.*permutation"):
        pyspmv.FormatMatrix(tuple(state_args(B.state, index_arrays=(perm, *idx[1:])).values()), B.params)
    with pytest.raises(ValueError, match="nnz"):
        _core.State(**state_args(B.state, nnz=B.nnz + 1))


def test_state_is_immutable_and_cannot_be_imitated():
    """A State's attributes cannot be set, its type takes no subclass, and nothing else passes for one:
    not a tuple, not an object with the same attributes."""
    B = pyspmv.convert(grid(), "ell")
    st = B.state
    for name in ("format", "nrows", "ncols", "nnz", "params", "scalars", "index_arrays", "value_arrays"):
        with pytest.raises(AttributeError):
            setattr(st, name, getattr(st, name))
    with pytest.raises(AttributeError):
        st.extra = 1
    with pytest.raises(TypeError):
        type("Forged", (_core.State,), {})
    forged = type("Forged", (), state_args(st))()
    x, y = np.ones(st.ncols), np.zeros(st.nrows)
    for bad in (forged, tuple(state_args(st).values()), None):
        with pytest.raises(TypeError, match="format state"):
            _core.mv(bad, 0, x, y)
        with pytest.raises(TypeError, match="format state"):
            _core.to_csr(bad)


def test_state_pickles_through_its_checked_constructor():
    """A State pickles as its constructor's arguments: unpickling makes and checks a new one."""
    A = grid()
    B = pyspmv.convert(A, "sell", c=4, sigma=8)
    st = pickle.loads(pickle.dumps(B.state))
    assert st is not B.state and (st.format_name, st.params, st.scalars) == ("sell", (4, 8), B.state.scalars)
    x, y = np.ones(A.shape[1]), np.zeros(A.shape[0])
    _core.mv(st, 0, x, y)
    np.testing.assert_allclose(y, A @ x)
    bad = pickle.dumps(B.state).replace(B.state.index_arrays[1].tobytes(), b"\xff" * B.state.index_arrays[1].nbytes)
    with pytest.raises(ValueError, match="state of a sell matrix"):
        pickle.loads(bad)


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


def test_array_given_new_memory_does_not_reach_the_state():
    """ndarray.__setstate__ swaps an array's buffer in place (same object, new writeable memory): the
    State keeps the bytes it checked and reads them, so the corruption does not reach its products,
    and a State made of the corrupted array is refused."""
    A = grid()
    B = pyspmv.convert(A, "ell")
    a = B.index_arrays[0]
    bad = a.copy()
    bad[0] = 2**30
    a.__setstate__((1, a.shape, a.dtype, False, bad.tobytes()))
    assert a.flags.writeable and a is B.state.index_arrays[0] and a[0] == 2**30
    x, y = np.ones(A.shape[1]), np.zeros(A.shape[0])
    _core.mv(B.state, 0, x, y)
    np.testing.assert_allclose(y, A @ x)
    assert abs(B.to_csr().to_scipy() - A).max() == 0
    with pytest.raises(ValueError, match="state of a ell matrix"):
        _core.State(**state_args(B.state))
    a.flags.writeable = False                              # read-only again, but not over bytes
    with pytest.raises(ValueError, match="state of a ell matrix"):
        _core.State(**state_args(B.state))


@pytest.mark.parametrize("fmt", ["csr", "ell", "sell", "coo"])
def test_state_of_sealed_looking_arrays_is_checked(fmt):
    """Read-only arrays over bytes that are not a State's own (the constructor takes them without a
    copy) are checked all the same: a wild column is refused, and B's arrays with another matrix's
    numbers too."""
    A = grid()
    B = pyspmv.convert(A, fmt, **PARAMS.get(fmt, {}))
    idx = B.state.index_arrays
    k = 1 if fmt in ("csr", "coo") else 0                  # the column array
    w = idx[k].copy()
    w[0] = 2**30
    bad = state_args(B.state, index_arrays=(*idx[:k], sealed_copy(w), *idx[k + 1:]))
    for call in (lambda: _core.State(**bad), lambda: pyspmv.FormatMatrix(tuple(bad.values()), B.params)):
        with pytest.raises(ValueError, match=f"state of a {fmt} matrix"):
            call()
    other = pyspmv.convert(grid(9), fmt, **PARAMS.get(fmt, {}))
    with pytest.raises(ValueError, match=f"state of a {fmt} matrix"):
        _core.State(**state_args(B.state, index_arrays=other.state.index_arrays))  # swapped arrays
    with pytest.raises(ValueError, match=f"state of a {fmt} matrix"):
        _core.State(**state_args(B.state, nnz=B.nnz + 1))


def test_state_of_a_states_arrays_shares_them():
    """A State made of another State's arrays takes them as they are (read-only over bytes: no copy),
    checked; FormatMatrix of a State shares it."""
    B = pyspmv.convert(grid(), "sell", c=4, sigma=8)
    assert pyspmv.FormatMatrix(B.state, B.params).state is B.state
    again = _core.State(**state_args(B.state))
    assert again is not B.state
    assert all(a is b for a, b in zip(again.index_arrays + again.value_arrays,
                                      B.state.index_arrays + B.state.value_arrays))
    assert _core.State(**state_args(B.state, format="sell")).format == B.state.format


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
        assert fmt in ("csr", "coo", "jad", "cidx"), f"{fmt} should pad this matrix"
        return
    for k, q in pads:
        state = writeable_copy(B)
        state["value_arrays"][k][q] = 3.9e7
        with pytest.raises(ValueError, match=f"state of a {fmt} matrix: {fmt}: 1 padding slots hold non-zero"):
            pyspmv.FormatMatrix(_core.State(**state), B.params)
        state["value_arrays"][k][q] = -0.0  # a signed zero adds nothing: accepted
        F = pyspmv.FormatMatrix(_core.State(**state), B.params)
        x = np.linspace(-1, 1, A.shape[1]).astype(dtype)
        y = np.zeros(A.shape[0], dtype=dtype)
        _core.mv(F.state, 0, x, y)
        np.testing.assert_allclose(y, A @ x, rtol=1e-5)


def test_state_of_byte_swapped_values_is_refused():
    """Issue 45 (3): a State of one's own arrays took '>f8' values as native; every product was then inf."""
    B = pyspmv.convert(pyspmv.generate("poisson2d", 10), "sell", c=8, sigma=64)
    st = B.state
    swapped = tuple(v.astype(v.dtype.newbyteorder()) for v in st.value_arrays)
    args = (st.format, st.nrows, st.ncols, st.nnz, st.params, st.scalars, st.index_arrays, swapped)
    with pytest.raises(TypeError, match="value array has non-native byte order"):
        pyspmv.FormatMatrix(args)
    idx = tuple(a.astype(a.dtype.newbyteorder()) for a in st.index_arrays)
    with pytest.raises(TypeError, match="index array has non-native byte order"):
        _core.State(*args[:6], idx, st.value_arrays)


def test_params_that_contradict_the_state_are_refused():
    """Issue 45 (8): FormatMatrix(state, params) took params the state was not laid out with (a SELL c=8,
    sigma=64 state labelled c=4, sigma=1), and an Operator then reported a configuration it did not run."""
    B = pyspmv.convert(pyspmv.generate("poisson2d", 10), "sell", c=8, sigma=64)
    with pytest.raises(ValueError, match=r"'params' parameter of FormatMatrix\(\).*'c': 8, 'sigma': 64"):
        pyspmv.FormatMatrix(B.state, {"c": 4, "sigma": 1})
    with pytest.raises(ValueError, match="'params'"):
        pyspmv.FormatMatrix(B.state, {"c": 8})               # sigma's default is 1, not this state's 64
    assert pyspmv.FormatMatrix(B.state).params == {"c": 8, "sigma": 64}
    assert pyspmv.FormatMatrix(B.state, {"C": 8, "sigma": 64}).params == {"c": 8, "sigma": 64}
    H = pyspmv.convert(pyspmv.generate("poisson2d", 10), "hyb")
    assert pyspmv.FormatMatrix(H.state, {}).params == {"k": -1}     # defaults fill in
    with pytest.raises(TypeError, match="'params'"):
        pyspmv.FormatMatrix(B.state, [("c", 8)])
