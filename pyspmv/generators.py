"""Test and example matrices made here, so that nothing depends on downloaded collections."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import scipy.sparse as sp

from .matrix import Matrix

GENERATORS = ("poisson2d", "poisson3d", "random", "powerlaw", "banded")


def poisson2d(n: int) -> Matrix:
    """5-point Laplacian on an n-by-n grid: n**2 rows, about 5 entries each."""
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    I = sp.identity(n)
    return Matrix(sp.kron(I, T) + sp.kron(T, I), name=f"poisson2d_{n}", group="generated")


def poisson3d(n: int) -> Matrix:
    """7-point Laplacian on an n**3 grid."""
    T = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(n, n))
    I = sp.identity(n)
    A = sp.kron(sp.kron(I, I), T) + sp.kron(sp.kron(I, T), I) + sp.kron(sp.kron(T, I), I)
    return Matrix(A, name=f"poisson3d_{n}", group="generated")


def random(nrows: int, ncols: int | None = None, density: float = 0.01, seed: int = 0) -> Matrix:
    """Uniformly random pattern with standard-normal values."""
    rng = np.random.default_rng(seed)
    A = sp.random(nrows, ncols or nrows, density=density, format="csr", random_state=rng,
                  data_rvs=rng.standard_normal)
    return Matrix(A, name=f"random_{nrows}_{ncols or nrows}_{density:g}", group="generated")


def powerlaw(n: int, mean_row: float = 8.0, alpha: float = 2.0, seed: int = 0) -> Matrix:
    """Row lengths drawn from a Pareto law (a few very long rows), columns uniform."""
    rng = np.random.default_rng(seed)
    lengths = np.minimum(n, np.maximum(1, (rng.pareto(alpha, n) + 1) * mean_row / 2)).astype(np.int64)
    rows = np.repeat(np.arange(n), lengths)
    cols = rng.integers(0, n, rows.size)
    A = sp.csr_array((rng.standard_normal(rows.size), (rows, cols)), shape=(n, n))
    return Matrix(A, name=f"powerlaw_{n}", group="generated")


def banded(n: int, lower: int = 2, upper: int = 2, seed: int = 0) -> Matrix:
    """Full band of width lower + upper + 1 with random values."""
    rng = np.random.default_rng(seed)
    offsets = list(range(-lower, upper + 1))
    A = sp.diags([rng.standard_normal(n - abs(k)) for k in offsets], offsets, shape=(n, n))
    return Matrix(A, name=f"banded_{n}_{lower}_{upper}", group="generated")


def generate(kind: str, size: int, seed: int = 0) -> Matrix:
    """A generated matrix by name: ``poisson2d`` (size = grid side), ``poisson3d``, ``random``,
    ``powerlaw``, ``banded`` (size = rows)."""
    if kind == "poisson2d":
        return poisson2d(size)
    if kind == "poisson3d":
        return poisson3d(size)
    if kind == "random":
        return random(size, density=min(1.0, 10.0 / size), seed=seed)
    if kind == "powerlaw":
        return powerlaw(size, seed=seed)
    if kind == "banded":
        return banded(size, seed=seed)
    raise ValueError(f"Unknown generator {kind!r}; choose one of {', '.join(GENERATORS)}.")
