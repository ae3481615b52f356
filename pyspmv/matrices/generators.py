"""Matrix generators: every family a study or a test needs, deterministic from a seed, vectorised,
so that nothing depends on downloaded collections.

:func:`generate` makes the small examples of the command line and the tests by kind and size;
the other functions are the families of the generated corpus (:mod:`pyspmv.datasets.corpus`).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import itertools
from typing import Any

import numpy as np
import scipy.sparse as sp

from .._params import Interval, OneOf, validate
from .features import H100
from .matrix import Matrix
from .mmio import as_matrix

STENCILS = {(2, 5), (2, 9), (3, 7), (3, 27)}


def _least(minimum: float) -> Interval:
    """A generator's size or count: a number >= ``minimum``."""
    return Interval("number", minimum)


def _matrix(rows: np.ndarray, cols: np.ndarray, shape: tuple[int, int], rng: np.random.Generator,
            name: str, group: str) -> Matrix:
    """A Matrix with standard-normal values (zeros replaced) on the pattern (rows, cols); duplicates merged."""
    vals = rng.standard_normal(rows.size)
    vals[vals == 0] = 1.0
    A = sp.coo_array((vals, (rows, cols)), shape=shape).tocsr()
    return Matrix(A, name=name, group=group)


def _distinct_columns(lengths: np.ndarray, ncols: int, rng: np.random.Generator,
                      window: np.ndarray | None = None, width: int | None = None) -> tuple[np.ndarray, np.ndarray]:
    """(rows, cols) where row i gets exactly ``lengths[i]`` distinct random columns.

    Columns are ``start + cumsum(gaps) mod span`` with gaps uniform in ``[1, span // len]``, so they
    never repeat within a row. By default span = ncols and start is random; with ``window``/``width``
    row i draws from ``[window[i], window[i] + width)`` (clipped to the matrix afterwards by the caller).
    """
    lengths = np.asarray(lengths, dtype=np.int64)
    n = lengths.size
    span = ncols if width is None else width
    lengths = np.clip(lengths, 0, span)
    nnz = int(lengths.sum())
    rows = np.repeat(np.arange(n, dtype=np.int64), lengths)
    maxgap = np.maximum(1, span // np.maximum(lengths, 1))
    gaps = (rng.random(nnz) * maxgap[rows]).astype(np.int64) + 1
    csum = np.cumsum(gaps)
    starts = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    base = np.repeat(np.concatenate(([0], csum))[starts], lengths)
    offs = csum - base - 1                                     # strictly increasing within a row, < span
    if window is None:
        shift = np.repeat(rng.integers(0, span, n), lengths)
        cols = (offs + shift) % span
    else:
        cols = np.repeat(np.asarray(window, dtype=np.int64), lengths) + offs
    return rows, cols


def guo(strips: int, nnz_per_row: int, *, mapping: str = "warp", sm_count: int = H100["sm_count"],
        threads_per_sm: int = H100["threads_per_sm"], warp_size: int = H100["warp_size"], seed: int = 0) -> Matrix:
    """Guo's benchmark matrix: ``strips`` full-GPU iterations of rows, ``nnz_per_row`` random columns each.

    A strip is the rows one full-GPU iteration covers: ``sm_count * threads_per_sm / warp_size`` rows
    with one warp per row (``mapping='warp'``), or ``sm_count * threads_per_sm`` with one thread per row
    (``mapping='thread'``). Square; every row holds exactly ``nnz_per_row`` distinct columns.
    """
    validate("guo()", {"strips": _least(1), "nnz_per_row": _least(1), "mapping": OneOf(("warp", "thread"), "or")},
             locals())
    strip = sm_count * threads_per_sm // (warp_size if mapping == "warp" else 1)
    n = int(strips) * strip
    rng = np.random.default_rng(seed)
    rows, cols = _distinct_columns(np.full(n, min(int(nnz_per_row), n)), n, rng)
    return _matrix(rows, cols, (n, n), rng, f"guo_{mapping}_s{strips}_k{nnz_per_row}_r{seed}", "guo")


def row_lengths(nrows: int, mean: float, spread: float, *, dist: str = "normal", ncols: int | None = None,
                seed: int = 0) -> Matrix:
    """Wang's matrices: row lengths normal (sd ``spread``) or uniform (``mean ± spread``), at least 1.

    Columns are distinct and uniformly random in each row; ``ncols`` defaults to ``nrows``.
    """
    validate("row_lengths()", {"nrows": _least(1), "mean": _least(1), "spread": _least(0),
                               "dist": OneOf(("normal", "uniform"), "or")}, locals())
    ncols = int(ncols or nrows)
    rng = np.random.default_rng(seed)
    if dist == "normal":
        raw = rng.normal(mean, spread, int(nrows))
    else:
        raw = rng.integers(round(mean - spread), round(mean + spread) + 1, int(nrows))
    lengths = np.clip(np.rint(raw), 1, ncols).astype(np.int64)
    rows, cols = _distinct_columns(lengths, ncols, rng)
    name = f"wang_{dist}_n{nrows}_m{mean:g}_s{spread:g}_r{seed}"
    return _matrix(rows, cols, (int(nrows), ncols), rng, name, f"wang_{dist}")


def _stencil_offsets(dim: int, points: int) -> list[tuple[int, ...]]:
    full = list(itertools.product((-1, 0, 1), repeat=dim))
    if points == 2 * dim + 1:                                   # 5 or 7 points: axis neighbours
        return [o for o in full if sum(map(abs, o)) <= 1]
    return full                                                 # 9 or 27 points: the whole box


def stencil(dim: int, points: int, n: int, *, seed: int = 0) -> Matrix:
    """The ``points``-point stencil on an ``n**dim`` grid (lexicographic order), random values.

    ``(dim, points)`` is one of (2, 5), (2, 9), (3, 7), (3, 27).
    """
    if (dim, points) not in STENCILS:
        raise ValueError(f"The (dim, points) parameters of stencil() must be one of {sorted(STENCILS)}. "
                         f"Got {(dim, points)!r} instead.")
    validate("stencil()", {"n": _least(1)}, locals())
    n = int(n)
    N = n ** dim
    coords = np.indices((n,) * dim, dtype=np.int32).reshape(dim, -1)       # coords[0] is the slowest axis
    idx = np.arange(N, dtype=np.int64)
    strides = [n ** (dim - 1 - a) for a in range(dim)]
    rows, cols = [], []
    for off in _stencil_offsets(dim, points):
        ok = np.ones(N, dtype=bool)
        for a, d in enumerate(off):
            if d:
                ok &= (coords[a] + d >= 0) & (coords[a] + d < n)
        r = idx[ok]
        rows.append(r)
        cols.append(r + sum(d * s for d, s in zip(off, strides)))
    del coords
    rng = np.random.default_rng(seed)
    return _matrix(np.concatenate(rows), np.concatenate(cols), (N, N), rng,
                   f"stencil{dim}d{points}_n{n}_r{seed}", f"stencil{dim}d")


def banded(n: int, bandwidth: int, nnz_per_row: int, *, seed: int = 0) -> Matrix:
    """Random entries within ``|i - j| <= bandwidth``: each row draws ``nnz_per_row`` distinct columns of its band
    (fewer at the edges, where the band is clipped), plus the diagonal."""
    validate("banded()", {"n": _least(1), "bandwidth": _least(0), "nnz_per_row": _least(1)}, locals())
    n, b = int(n), int(bandwidth)
    rng = np.random.default_rng(seed)
    width = 2 * b + 1
    rows, cols = _distinct_columns(np.full(n, min(int(nnz_per_row), width)), n, rng,
                                   window=np.arange(n) - b, width=width)
    keep = (cols >= 0) & (cols < n)
    diag = np.arange(n, dtype=np.int64)
    rows = np.concatenate((rows[keep], diag))
    cols = np.concatenate((cols[keep], diag))
    return _matrix(rows, cols, (n, n), rng, f"banded_n{n}_b{b}_k{nnz_per_row}_r{seed}", "banded")


def fem_blocks(n: int, block: int = 3, *, dim: int = 2, seed: int = 0) -> Matrix:
    """FEM-like block structure: a dense ``block x block`` block per edge of a mesh graph.

    The mesh is an ``n**dim`` grid triangulated (2-D: 7 neighbours incl. itself; 3-D: the 7-point
    neighbourhood plus the main diagonal of each cube, 9; that diagonal wraps at the grid's edge), its
    nodes numbered lexicographically.
    """
    validate("fem_blocks()", {"dim": OneOf((2, 3), "or"), "n": _least(2), "block": _least(1)}, locals())
    n, b = int(n), int(block)
    S = stencil(dim, 2 * dim + 1, n, seed=seed).to_scipy()
    N = n ** dim
    diag = (n ** dim - 1) // (n - 1)                            # (1, 1[, 1]) neighbour in lexicographic order
    extra = sp.diags_array([np.ones(N - diag), np.ones(N - diag)], offsets=[-diag, diag], shape=(N, N))
    G = (abs(S) + extra).tocsr()
    G.data[:] = 1.0
    rng = np.random.default_rng(seed)
    P = sp.kron(G, np.ones((b, b)), format="coo")
    return _matrix(P.row.astype(np.int64), P.col.astype(np.int64), P.shape, rng,
                   f"fem{dim}d_n{n}_b{b}_r{seed}", "fem_block")


def powerlaw(n: int, mean: float, alpha: float = 2.2, *, seed: int = 0) -> Matrix:
    """Chung-Lu graph: expected degrees ``w_i ~ i**(-1/(alpha-1))`` scaled to ``mean`` per row.

    About ``n * mean`` edges drawn with both ends chosen in proportion to ``w`` (duplicates merged, so
    slightly fewer stored entries); node ids shuffled so that long rows are not sorted first. Row
    lengths follow a power law with exponent ``alpha`` (a heavy tail of very long rows).
    """
    validate("powerlaw()", {"n": _least(2), "mean": _least(1), "alpha": Interval(None, 2, closed="neither")},
             locals())
    n = int(n)
    rng = np.random.default_rng(seed)
    w = np.arange(1, n + 1, dtype=np.float64) ** (-1.0 / (alpha - 1.0))
    cdf = np.cumsum(w)
    cdf /= cdf[-1]
    m = round(n * mean)
    perm = rng.permutation(n)
    # Sorted uniforms make the inverse-CDF lookups cache-friendly (20x faster); shuffling one end pairs them at random.
    rows = perm[np.minimum(np.searchsorted(cdf, np.sort(rng.random(m))), n - 1)]
    cols = perm[np.minimum(np.searchsorted(cdf, np.sort(rng.random(m))), n - 1)]
    rng.shuffle(cols)
    return _matrix(rows, cols, (n, n), rng, f"powerlaw_n{n}_m{mean:g}_a{alpha:g}_r{seed}", "powerlaw")


def circuit(n: int, *, short: float = 3.0, dense: int = 4, dense_len: int | None = None, seed: int = 0) -> Matrix:
    """Circuit-like: the diagonal, about ``short`` nearby entries per row, and ``dense`` dense rows AND columns.

    Each dense row and each dense column (power and ground nets) holds ``dense_len`` (default ``n // 4``)
    random entries; the short entries lie mostly near the diagonal (local wiring), some anywhere.
    """
    validate("circuit()", {"n": _least(8), "short": _least(0), "dense": _least(0)}, locals())
    n = int(n)
    dl = int(dense_len if dense_len is not None else n // 4)
    rng = np.random.default_rng(seed)
    lengths = rng.poisson(short, n)
    r = np.repeat(np.arange(n, dtype=np.int64), lengths)
    local = rng.random(r.size) < 0.8
    c = np.where(local, r + rng.integers(-20, 21, r.size), rng.integers(0, n, r.size))
    c = np.clip(c, 0, n - 1)
    hubs = rng.choice(n, size=int(dense), replace=False)
    hr, hc = _distinct_columns(np.full(int(dense), dl), n, rng)
    hub_nodes = hubs[hr]
    diag = np.arange(n, dtype=np.int64)
    rows = np.concatenate((diag, r, hub_nodes, hc))
    cols = np.concatenate((diag, c, hc, hub_nodes))
    return _matrix(rows, cols, (n, n), rng, f"circuit_n{n}_s{short:g}_d{dense}_l{dl}_r{seed}", "circuit")


def diagonal_heavy(n: int, ndiags: int, *, noise: float = 0.5, seed: int = 0) -> Matrix:
    """``ndiags`` full diagonals (the main one and random offsets within ``n // 8``) plus ``noise``
    random entries per row on average."""
    validate("diagonal_heavy()", {"n": _least(16), "ndiags": _least(1), "noise": _least(0)}, locals())
    n = int(n)
    rng = np.random.default_rng(seed)
    reach = max(1, n // 8)
    others = rng.choice(np.setdiff1d(np.arange(-reach, reach + 1), [0]), size=min(int(ndiags) - 1, 2 * reach),
                        replace=False)
    offsets = np.concatenate(([0], others)).astype(np.int64)
    rows, cols = [], []
    for k in offsets:
        r = np.arange(max(0, -k), min(n, n - k), dtype=np.int64)
        rows.append(r)
        cols.append(r + k)
    m = rng.poisson(noise * n)
    rows.append(rng.integers(0, n, m))
    cols.append(rng.integers(0, n, m))
    return _matrix(np.concatenate(rows), np.concatenate(cols), (n, n), rng,
                   f"diagheavy_n{n}_d{ndiags}_z{noise:g}_r{seed}", "diagonal_heavy")


def scaled(base: Any, factor: int, *, mode: str = "tile", density: float = 0.3, seed: int = 0,
           name: str | None = None) -> Matrix:
    """A real matrix scaled up ``factor`` times in each dimension.

    ``mode='tile'``: ``kron(P, A)``: copies of ``A`` placed on a random ``factor x factor`` block pattern
    ``P`` (its diagonal plus ``density`` of the rest), so ``A``'s own structure repeats at a larger scale.
    ``mode='kron'``: ``kron(A, P)``: every entry of ``A`` becomes a small sparse block ``P``.
    Values: ``A``'s values times standard-normal block values.
    """
    A = as_matrix(base, "base")
    validate("scaled()", {"factor": _least(1), "mode": OneOf(("tile", "kron"), "or")}, locals())
    k = int(factor)
    rng = np.random.default_rng(seed)
    mask = rng.random((k, k)) < density
    np.fill_diagonal(mask, True)
    vals = rng.standard_normal((k, k))
    vals[vals == 0] = 1.0
    P = sp.csr_array(np.where(mask, vals, 0.0))
    S = A.to_scipy()
    K = sp.kron(P, S, format="csr") if mode == "tile" else sp.kron(S, P, format="csr")
    label = name or A.name or "matrix"
    return Matrix(K, name=f"{label}_x{k}{mode}_r{seed}", group=f"scaled_{A.group or 'real'}")


# ---- the small examples of generate(): the command line's --generate KIND:SIZE and the tests ----

def poisson2d(n: int) -> Matrix:
    """The 5-point Laplacian on an n-by-n grid: n**2 rows, about 5 entries each.

    Parameters
    ----------
    n : int
        The grid's side.

    Returns
    -------
    Matrix
        Named ``poisson2d_<n>``, group ``generated``.
    """
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    I = sp.identity(n)
    return Matrix(sp.kron(I, T) + sp.kron(T, I), name=f"poisson2d_{n}", group="generated")


def poisson3d(n: int) -> Matrix:
    """The 7-point Laplacian on an n-by-n-by-n grid: n**3 rows, about 7 entries each.

    Parameters
    ----------
    n : int
        The grid's side.

    Returns
    -------
    Matrix
        Named ``poisson3d_<n>``, group ``generated``.
    """
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    I = sp.identity(n)
    A = sp.kron(sp.kron(I, I), T) + sp.kron(sp.kron(I, T), I) + sp.kron(sp.kron(T, I), I)
    return Matrix(A, name=f"poisson3d_{n}", group="generated")


def random(nrows: int, ncols: int | None = None, density: float = 0.01, seed: int = 0) -> Matrix:
    """A uniformly random pattern with standard-normal values.

    Parameters
    ----------
    nrows : int
        Rows.
    ncols : int, optional
        Columns; default ``nrows``.
    density : float, default 0.01
        The fraction of entries stored.
    seed : int, default 0
        Seed of the pattern and the values.

    Returns
    -------
    Matrix
        Named ``random_<nrows>_<ncols>_<density>``, group ``generated``.
    """
    rng = np.random.default_rng(seed)
    A = sp.random(nrows, ncols or nrows, density=density, format="csr", random_state=rng,
                  data_rvs=rng.standard_normal)
    return Matrix(A, name=f"random_{nrows}_{ncols or nrows}_{density:g}", group="generated")


def pareto_rows(n: int, mean_row: float = 8.0, alpha: float = 2.0, seed: int = 0) -> Matrix:
    """Row lengths drawn from a Pareto law (a few very long rows), columns uniform.

    :func:`pyspmv.generate`'s ``powerlaw`` kind (:func:`powerlaw` is the corpus's Chung-Lu graph).

    Parameters
    ----------
    n : int
        Rows and columns.
    mean_row : float, default 8.0
        Scale of the row lengths (each row holds 1 to ``n`` entries).
    alpha : float, default 2.0
        The Pareto law's shape: smaller, heavier tail.
    seed : int, default 0
        Seed of the lengths, columns and values.

    Returns
    -------
    Matrix
        Named ``powerlaw_<n>``, group ``generated``.
    """
    rng = np.random.default_rng(seed)
    lengths = np.minimum(n, np.maximum(1, (rng.pareto(alpha, n) + 1) * mean_row / 2)).astype(np.int64)
    rows = np.repeat(np.arange(n), lengths)
    cols = rng.integers(0, n, rows.size)
    A = sp.csr_array((rng.standard_normal(rows.size), (rows, cols)), shape=(n, n))
    return Matrix(A, name=f"powerlaw_{n}", group="generated")


def full_band(n: int, lower: int = 2, upper: int = 2, seed: int = 0) -> Matrix:
    """A full band of width ``lower + upper + 1`` with standard-normal values.

    :func:`pyspmv.generate`'s ``banded`` kind (:func:`banded` is the corpus's random entries within
    a band).

    Parameters
    ----------
    n : int
        Rows and columns.
    lower, upper : int, default 2
        Diagonals below and above the main one.
    seed : int, default 0
        Seed of the values.

    Returns
    -------
    Matrix
        Named ``banded_<n>_<lower>_<upper>``, group ``generated``.
    """
    rng = np.random.default_rng(seed)
    offsets = list(range(-lower, upper + 1))
    A = sp.diags([rng.standard_normal(n - abs(k)) for k in offsets], offsets, shape=(n, n))
    return Matrix(A, name=f"banded_{n}_{lower}_{upper}", group="generated")


#: generate()'s kinds: what makes a matrix of each from a size and a seed.
_KINDS: dict[str, Any] = {
    "poisson2d": lambda size, seed: poisson2d(size),
    "poisson3d": lambda size, seed: poisson3d(size),
    "random": lambda size, seed: random(size, density=min(1.0, 10.0 / size), seed=seed),
    "powerlaw": lambda size, seed: pareto_rows(size, seed=seed),
    "banded": lambda size, seed: full_band(size, seed=seed),
}
GENERATORS: tuple[str, ...] = tuple(_KINDS)


def generate(kind: str, size: int, seed: int = 0) -> Matrix:
    """A small generated matrix by kind: ``poisson2d`` (size = grid side), ``poisson3d``,
    ``random`` (about 10 entries per row), ``powerlaw`` (:func:`pareto_rows`), ``banded``
    (:func:`full_band`; size = rows)."""
    make = _KINDS.get(kind)
    if make is None:
        raise ValueError(f"Unknown generator {kind!r}; choose one of {', '.join(GENERATORS)}.")
    return make(size, seed)
