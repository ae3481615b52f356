"""The design rows from one pass equal every format's own size query, bit for bit (csrc/design.c)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given, settings
from strategies import csr_matrices

import pyspmv
from pyspmv import _core
from pyspmv.matrices.formats import format_code
from pyspmv.matrices.matrix import VALUE_BYTES
from pyspmv.ranking.rank import _prepared, default_model
from pyspmv.ranking.schema import COL

ROOT = Path(__file__).resolve().parents[1]
MATRIX_DIRS = [ROOT.parent / "shared" / "matrices", ROOT.parents[1] / "shared" / "matrices"]
#: Index arrays no kernel reads (csrc/registry.c's unread bits, as the portable tables give them).
UNREAD = {"dia": (1,), "bsr": (2,)}


def _reference(M: pyspmv.Matrix, cfg_ids: list[str], vb: int, max_fill: float) -> np.ndarray:
    """(bytes_moved, padding_ratio) of each configuration from its format's size query (spmv_fmt_size)."""
    out = np.empty((len(cfg_ids), 2))
    for j, cid in enumerate(cfg_ids):
        c = pyspmv.config(cid)
        p0, p1 = c.format_params
        try:
            _, nidx, nval = _core.fmt_size(format_code(c.format), p0, p1, max_fill, M.nrows, M.ncols, M.indptr,
                                           M.indices)
        except _core.NotApplicableError:
            out[j] = np.nan
            continue
        idx = 4 * sum(n for k, n in enumerate(nidx) if k not in UNREAD.get(c.format, ()))
        slots = sum(nval)
        out[j] = (float(idx + vb * (slots + M.nrows + M.ncols)), slots / M.nnz if M.nnz else 1.0)
    return out


def _check(M: pyspmv.Matrix) -> None:
    for device in ("cuda", "cpu"):
        for dtype in ("float64", "float32"):
            p = _prepared(default_model(device), dtype)
            vb = VALUE_BYTES[dtype]
            rows = _core.core_rows(p.capsule, M.nrows, M.ncols, M.indptr, M.indices, vb)
            R = rows.reshape(len(p.ids), -1)
            got = R[:, [COL["bytes_moved"], COL["padding_ratio"]]]
            want = _reference(M, list(p.ids), vb, float(_core.MAX_FILL_DEFAULT))
            np.testing.assert_array_equal(got, want, err_msg=f"{device} {dtype}")
            feats = np.array(list(pyspmv.features(M).values()))
            np.testing.assert_array_equal(R[:, :len(feats)], np.broadcast_to(feats, (len(R), len(feats))))


@settings(max_examples=60, deadline=None)
@given(csr_matrices())
def test_one_pass_sizes_equal_size_queries(A):
    _check(pyspmv.Matrix(A))


@pytest.mark.parametrize("shape", [(1, 1), (1, 50), (50, 1), (3, 200), (200, 3)])
def test_one_pass_sizes_edge_shapes(shape):
    rng = np.random.default_rng(sum(shape))
    A = sp.random_array(shape, density=0.3, format="csr", random_state=rng)
    A = sp.csr_matrix(A)
    A.data[::3] = 0.0                                     # explicit zeros stay entries
    _check(pyspmv.Matrix(A))


def test_one_pass_sizes_not_applicable():
    """A long row: ELL, SELL, BRO-ELL and DIA past max_fill give NaN exactly where the size query refuses."""
    n = 3000
    A = sp.lil_array((n, n))
    A[0, :] = 1.0
    A.setdiag(2.0)
    A[np.arange(n - 1), np.arange(1, n)] = 1.0
    M = pyspmv.Matrix(sp.csr_matrix(A))
    _check(M)
    p = _prepared(default_model("cuda"), "float64")
    R = _core.core_rows(p.capsule, M.nrows, M.ncols, M.indptr, M.indices, 8).reshape(len(p.ids), -1)
    assert np.isnan(R[:, COL["bytes_moved"]]).any()


def _real_matrices() -> list[Path]:
    for d in MATRIX_DIRS:
        if d.is_dir():
            return sorted(d.glob("*.mtx*"), key=lambda p: p.stat().st_size)
    return []


@pytest.mark.parametrize("path", _real_matrices() or [None], ids=lambda p: p.name.split(".")[0] if p else "absent")
def test_one_pass_sizes_real(path):
    if path is None:
        pytest.skip(f"none of {[str(d) for d in MATRIX_DIRS]} holds matrices")
    _check(pyspmv.load(path))


_THREADS_SCRIPT = """
import sys, numpy as np, scipy.sparse as sp, pyspmv
from pyspmv import _core
from pyspmv.ranking.rank import _prepared, default_model
rng = np.random.default_rng(5)
n = 120_000
lens = np.minimum(n, (rng.pareto(1.2, n) * 6).astype(np.int64))
rows = np.repeat(np.arange(n), lens)
cols = (rows + rng.integers(-300, 300, rows.size)) % n
A = sp.csr_matrix((np.ones(rows.size), (rows, cols)), shape=(n, n)); A.sum_duplicates(); A.sort_indices()
M = pyspmv.Matrix(A)
out = []
for dev in ("cuda", "cpu"):
    p = _prepared(default_model(dev), "float64")
    out.append(_core.core_rows(p.capsule, M.nrows, M.ncols, M.indptr, M.indices, 8))
np.save(sys.argv[1], np.concatenate(out))
"""


def _same_bits_on_1_and_2_threads(script: str, tmp_path: Path) -> None:
    res = []
    for t in (1, 2):
        f = tmp_path / f"rows{t}.npy"
        # cwd: not the checkout, whose pyspmv/ (no built core) would shadow an installed pyspmv
        subprocess.run([sys.executable, "-c", script, str(f)], check=True, cwd=tmp_path,
                       env={**os.environ, "OMP_NUM_THREADS": str(t)})
        res.append(np.load(f))
    np.testing.assert_array_equal(res[0], res[1])


def test_one_pass_same_bits_any_thread_count(tmp_path):
    """Above the pass's threading size, 1 and 2 OpenMP threads give the same bits."""
    _same_bits_on_1_and_2_threads(_THREADS_SCRIPT, tmp_path)


_SMALL_THREADS_SCRIPT = """
import sys, numpy as np, scipy.sparse as sp, pyspmv
from pyspmv import _core
from pyspmv.ranking.rank import _prepared, default_model
rng = np.random.default_rng(7)
T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(60, 60))
heavy = sp.random(3000, 3000, density=0.0, format="lil")
heavy[:256, :] = sp.random(256, 3000, density=0.05, random_state=1)  # every entry in the first block
mats = [sp.kronsum(T, T, format="csr"), sp.random(300, 5000, density=0.01, random_state=2, format="csr"),
        heavy.tocsr(), sp.random(5000, 300, density=0.01, random_state=3, format="csr")]
out = []
for A in mats:
    A.sum_duplicates(); A.sort_indices()
    M = pyspmv.Matrix(A)
    for dev in ("cuda", "cpu"):
        p = _prepared(default_model(dev), "float64")
        out.append(_core.core_rows(p.capsule, M.nrows, M.ncols, M.indptr, M.indices, 8))
np.save(sys.argv[1], np.concatenate(out))
"""


def test_one_pass_same_bits_any_thread_count_small(tmp_path):
    """Matrices of 1e4 entries, past the pass's threading size: a short-wide one (2 row blocks), a
    tall-narrow one, and one whose entries all lie in its first block (the other thread gets no
    entries) give the same bits with 1 and 2 OpenMP threads."""
    _same_bits_on_1_and_2_threads(_SMALL_THREADS_SCRIPT, tmp_path)


def _laplacian(k: int) -> pyspmv.Matrix:
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(k, k))
    A = sp.kronsum(T, T, format="csr")
    A.sort_indices()
    return pyspmv.Matrix(A)


def test_estimate_small_matrix_is_exact():
    """A sample of half the rows or more is the exact path, bit for bit."""
    M = _laplacian(60)
    p = _prepared(default_model("cuda"), "float64")
    args = (p.capsule, M.nrows, M.ncols, M.indptr, M.indices, 8)
    np.testing.assert_array_equal(_core.core_rows(*args), _core.core_rows(*args, 16384))


def test_estimate_stencil_close_to_exact():
    """On a stencil every sampled block looks like the whole: exact shape columns, sizes within 6 % (scaled by entries,
    while DIA's and ELL's storage goes with rows)."""
    M = _laplacian(400)
    p = _prepared(default_model("cuda"), "float64")
    args = (p.capsule, M.nrows, M.ncols, M.indptr, M.indices, 8)
    ex = _core.core_rows(*args).reshape(len(p.ids), -1)
    es = _core.core_rows(*args, 4096).reshape(len(p.ids), -1)
    for c in ("nrows", "ncols", "nnz", "density", "nnz_mean", "gpu_strips_rows", "gpu_strips_nnz", "ndiag"):
        np.testing.assert_array_equal(es[:, COL[c]], ex[:, COL[c]], err_msg=c)
    ok = ~np.isnan(ex[:, COL["bytes_moved"]])
    np.testing.assert_array_equal(ok, ~np.isnan(es[:, COL["bytes_moved"]]))
    np.testing.assert_allclose(es[ok, COL["bytes_moved"]], ex[ok, COL["bytes_moved"]], rtol=0.06)
    exact = [c for c, _ in pyspmv.rank(M, estimate=False)[:5]]
    assert pyspmv.rank(M, estimate=True).best in exact      # near-ties (block sizes) may swap


def test_estimate_asks_the_matrix_itself_whether_the_order_applies():
    """A sample of a matrix's rows is never square: CSR's locality order (order=1, square matrices only) is
    applicable in the estimate where it is in the exact rows, and not where the matrix is rectangular."""
    p = _prepared(default_model(target="h200"), "float64")
    order = np.array(["/order=1/" in i for i in p.ids])
    assert order.any()
    rng = np.random.default_rng(1)
    rows = np.repeat(np.arange(160_000), 6)
    wide = sp.csr_matrix((np.ones(rows.size), (rows, rng.integers(0, 150_000, rows.size))), shape=(160_000, 150_000))
    for M in (_laplacian(400), pyspmv.Matrix(wide)):
        args = (p.capsule, M.nrows, M.ncols, M.indptr, M.indices, 8)
        ex = _core.core_rows(*args).reshape(len(p.ids), -1)[:, COL["bytes_moved"]]
        es = _core.core_rows(*args, 4096).reshape(len(p.ids), -1)[:, COL["bytes_moved"]]
        np.testing.assert_array_equal(np.isnan(ex), np.isnan(es))
        assert np.isnan(ex[order]).all() == (M.nrows != M.ncols)


def test_estimate_refuses_bad_sampled_rows():
    M = _laplacian(400)
    p = _prepared(default_model("cuda"), "float64")
    ix = M.indices.copy()
    nblk, k = -(-M.nrows // 256), 4096 // 256
    r = nblk // (2 * k) * 256 + 1                         # in the first sampled block (mid-stratum)
    ix[M.indptr[r] + 1] = M.ncols + 5
    with pytest.raises(ValueError, match="column index"):
        _core.core_rows(p.capsule, M.nrows, M.ncols, M.indptr, ix, 8, 4096)
    ip = M.indptr.copy()
    ip[r + 1] = ip[r] - 1
    with pytest.raises(ValueError, match="indptr"):
        _core.core_rows(p.capsule, M.nrows, M.ncols, ip, M.indices, 8, 4096)


def test_rank_estimate_parameter():
    M = _laplacian(20)
    with pytest.raises(ValueError, match="'estimate' parameter of rank"):
        pyspmv.rank(M, estimate="yes")
    assert pyspmv.rank(M, estimate=True) == pyspmv.rank(M, estimate=False)   # small: the exact path
