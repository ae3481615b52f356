"""Matrix features computed by the C core (tiers 0 to 2 of DESIGN.md)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import pandas as pd

from . import _core
from .configs import Config, config
from .formats import format_code
from .matrix import as_matrix, value_dtype

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


#: Per-configuration features (DESIGN.md): what one product must move, how much of it is padding,
#: and how many kernel launches it takes.
CONFIG_FEATURE_NAMES: tuple[str, ...] = ("bytes_moved", "padding_ratio", "launches")

#: Index arrays no kernel reads: DIA's and BSR's presence bits exist for exact round trips only.
_UNREAD_INDEX = {"dia": (1,), "bsr": (2,)}


def config_features(A: Any, configs: Iterable[Config | str], *, dtype: Any = "float64",
                    max_fill: float = float(_core.MAX_FILL_DEFAULT)) -> pd.DataFrame:
    """Per-configuration features of ``A``: bytes moved, padding ratio, launches.

    ``bytes_moved`` is the format's stored arrays that the kernel reads (padding included) plus
    ``x`` read once and ``y`` written once; ``padding_ratio`` is stored value slots per stored entry.
    Computed from the format's size query alone, without building its arrays. Kernel workspace
    (row blocks, carries) and cuSPARSE's buffer are not counted.

    Parameters
    ----------
    A : Matrix or scipy.sparse matrix
    configs : iterable of Config or str
    dtype : {'float32', 'float64'}
    max_fill : float
        As :func:`pyspmv.convert`: formats padding past it are ``not_applicable``.

    Returns
    -------
    pandas.DataFrame
        Indexed by configuration id, columns ``bytes_moved, padding_ratio, launches, status, note``
        (``status``: ``ok`` or ``not_applicable``, with the reason in ``note``).
    """
    M = as_matrix(A)
    es = value_dtype(dtype).itemsize
    sizes: dict[tuple[str, tuple[int, int]], Any] = {}
    rows = []
    for c in (config(c) for c in configs):
        key = (c.format, c.format_params)
        if key not in sizes:
            p0, p1 = c.format_params
            try:
                sizes[key] = _core.fmt_size(format_code(c.format), p0, p1, float(max_fill), M.nrows, M.ncols,
                                            M.indptr, M.indices)
            except _core.NotApplicableError as exc:
                sizes[key] = exc
        s = sizes[key]
        row: dict[str, Any] = {"config": c.id, "launches": c.launches}
        if isinstance(s, Exception):
            row.update(bytes_moved=float("nan"), padding_ratio=float("nan"), status="not_applicable", note=str(s))
        else:
            _, nidx, nval = s
            unread = _UNREAD_INDEX.get(c.format, ())
            idx_bytes = 4 * sum(n for k, n in enumerate(nidx) if k not in unread)
            slots = sum(nval)
            row.update(bytes_moved=float(idx_bytes + es * (slots + M.nrows + M.ncols)),
                       padding_ratio=slots / M.nnz if M.nnz else 1.0, status="ok", note="")
        rows.append(row)
    cols = ["config", *CONFIG_FEATURE_NAMES, "status", "note"]
    return pd.DataFrame(rows, columns=cols).set_index("config")
