"""Matrix features computed by the C core (tiers 0 to 2 of DESIGN.md)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from typing import Any

from . import _core
from .matrix import as_matrix

FEATURE_NAMES: tuple[str, ...] = tuple(_core.feature_names())

#: Device properties of the NVIDIA H100 (SXM/HBM3) the default features assume.
H100 = {"sm_count": 132, "threads_per_sm": 2048, "warp_size": 32}


def features(A: Any, *, gpu: dict[str, int] | None = None) -> dict[str, float]:
    """Every matrix feature of ``A``, by name.

    Parameters
    ----------
    A : Matrix or scipy.sparse matrix
    gpu : dict, optional
        ``sm_count``, ``threads_per_sm`` and ``warp_size`` of the GPU that Guo's strip features
        (``gpu_strips_*``) describe; default the H100's.

    Returns
    -------
    dict of str to float
        In the order of :data:`FEATURE_NAMES`. Definitions: ``csrc/features.c``.
    """
    M = as_matrix(A)
    g = {**H100, **(gpu or {})}
    for k, v in g.items():
        if k not in H100 or not isinstance(v, int) or v < 1:
            raise ValueError(f"The 'gpu' parameter of features() takes positive integers {sorted(H100)}. Got {k}={v!r}.")
    out = _core.features(M.nrows, M.ncols, M.indptr, M.indices, g["sm_count"], g["threads_per_sm"], g["warp_size"])
    return dict(zip(FEATURE_NAMES, (float(v) for v in out)))
