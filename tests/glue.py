"""Helpers for the tests that drive the private `_core` glue directly (tests/test_<format>.py)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from pyspmv import _core


def code(fmt):
    """Format code of ``fmt`` ('ell', 'jad', ...): its place in the core's registry (csrc/formats.def)."""
    return _core.format_names().index(fmt)


def convert_raw(fmt, A, p0=0, p1=0, dtype=np.float64, max_fill=0.0):
    """_core.convert of A (made CSR with sorted indices) to format `fmt` (a name) with parameters p0, p1:
    a _core.State."""
    A = sp.csr_matrix(A)
    A.sort_indices()
    return _core.convert(code(fmt), p0, p1, max_fill, A.shape[0], A.shape[1], A.indptr.astype(np.int32),
                         A.indices.astype(np.int32), A.data.astype(dtype))


def state_args(state, **change):
    """The constructor arguments of ``state`` (a _core.State) as a dict, with ``change`` applied: what
    ``_core.State(**state_args(...))`` checks again."""
    names = ("format", "nrows", "ncols", "nnz", "params", "scalars", "index_arrays", "value_arrays")
    return {**{k: getattr(state, k) for k in names}, **change}


def random_csr(m, n, density, seed, dtype=np.float64, placement="scipy"):
    """Random m x n CSR, every 7th value an explicit zero.

    placement="scipy": scipy.sparse.random(random_state=seed), indices sorted.
    placement="uniform": round(density*m*n) entries placed uniformly by np.random.default_rng(seed),
    duplicates merged.
    """
    if placement == "uniform":
        rng = np.random.default_rng(seed)
        k = round(density * m * n)
        A = sp.csr_matrix((rng.uniform(-1, 1, k), (rng.integers(0, m, k), rng.integers(0, n, k))),
                          shape=(m, n), dtype=dtype)
        A.sum_duplicates()
    elif placement == "scipy":
        A = sp.random(m, n, density=density, format="csr", dtype=dtype, random_state=seed)
        A.sort_indices()
    else:
        raise ValueError(f"unknown placement {placement!r}")
    A.data[::7] = 0
    return A


def rel_err(state, A, dtype, seed=0):
    """Max error of _core.mv(state) against A @ x in float64, relative to max(|A| @ |x|)."""
    x = np.random.default_rng(seed).uniform(-1, 1, A.shape[1]).astype(dtype)
    y = np.full(A.shape[0], np.nan, dtype=dtype)
    _core.mv(state, 0, x, y)
    S = A.astype(np.float64)
    ref = S @ x.astype(np.float64)
    scale = float(np.max(abs(S) @ np.abs(x.astype(np.float64)), initial=0.0))
    err = float(np.max(np.abs(y.astype(np.float64) - ref), initial=0.0))
    return err / scale if scale > 0 else err


TOL = {np.float32: 1e-5, np.float64: 1e-12}


def assert_exact_and_close(state, A, dtype):
    """``state`` converts back to ``A`` exactly (explicit zeros kept, bit for bit, in ``dtype``) and
    its product matches scipy in float64 within ``TOL[dtype]``."""
    indptr, indices, values = _core.to_csr(state)
    np.testing.assert_array_equal(indptr, A.indptr)
    np.testing.assert_array_equal(indices, A.indices)
    assert values.dtype == dtype
    np.testing.assert_array_equal(values, A.data)
    assert rel_err(state, A, dtype) <= TOL[dtype]


def few_values(m, n, density, seed, dtype, k):
    """random_csr's pattern (explicit zeros included) with values drawn from k distinct ones, 0.0 and -0.0 among
    them (distinct bits: the table must keep both)."""
    A = random_csr(m, n, density, seed=seed, dtype=dtype)
    pool = np.concatenate([[0.0, -0.0], np.random.default_rng(seed).standard_normal(max(k - 2, 0))]).astype(dtype)
    A.data = pool[np.random.default_rng(seed + 1).integers(0, k, A.nnz)]
    return A


def value_indices(state, bits):
    """The layout's value index of every slot, as the CUDA kernels read the words (little-endian)."""
    return state.index_arrays[3].view(np.uint8 if bits == 8 else np.uint16)[:state.nnz]
