"""Matrix features computed by the C core (tiers 0 to 2: listed in csrc/features.def, defined in csrc/features.c)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING

from .. import _core
from .configs import PARAM_COLUMNS, Config, config
from .matrix import value_dtype
from .mmio import as_matrix

if TYPE_CHECKING:                       # imported where a table is made: pandas costs 0.4 s to import
    import numpy.typing as npt
    import pandas as pd

    from .mmio import MatrixLike

FEATURE_NAMES: tuple[str, ...] = tuple(_core.feature_names())
#: Every column of a design row, as the C core defines them (csrc/design.c, the one definition):
#: the features, the configuration's parameters ``p_*``, ``value_bytes``, then
#: :data:`CONFIG_FEATURE_NAMES`.
DESIGN_COLUMNS: tuple[str, ...] = tuple(_core.design_columns())
assert DESIGN_COLUMNS[:len(FEATURE_NAMES)] == FEATURE_NAMES, "the core's design row must start with its features"

#: Device properties of the NVIDIA H100 (SXM/HBM3) the default features assume: the core's
#: (spmv_gpu_props_h100, csrc/features.c).
H100: dict[str, int] = _core.gpu_props_h100()


def features(A: MatrixLike, *, gpu: dict[str, int] | None = None) -> dict[str, float]:
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


#: Per-configuration features: what one product must move, how much of it is padding,
#: and how many kernel launches it takes; the design row's last columns.
CONFIG_FEATURE_NAMES: tuple[str, ...] = DESIGN_COLUMNS[DESIGN_COLUMNS.index("value_bytes") + 1:]
#: The design row's numeric per-configuration columns after its parameters: ``value_bytes``, then
#: :data:`CONFIG_FEATURE_NAMES`.
CONFIG_NUMERIC: tuple[str, ...] = DESIGN_COLUMNS[len(FEATURE_NAMES) + len(PARAM_COLUMNS):]
#: A configuration's labels in a table of design rows (text, not numbers): its id, library, format, kernel.
CONFIG_LABELS: tuple[str, ...] = ("config", "library", "format", "kernel")
#: Every column of a table of design rows (a dataset's X, schema.md), in order: the design row with the
#: configuration's labels after the features. The one definition; datasets and models read it.
X_COLUMNS: tuple[str, ...] = (*FEATURE_NAMES, *CONFIG_LABELS, *PARAM_COLUMNS, *CONFIG_NUMERIC)


def config_features(A: MatrixLike, configs: Iterable[Config | str], *, dtype: npt.DTypeLike = "float64",
                    max_fill: float = float(_core.MAX_FILL_DEFAULT)) -> pd.DataFrame:
    """Per-configuration features of ``A``: bytes moved, padding ratio, launches.

    ``bytes_moved`` is the format's stored arrays that the kernel reads (padding included) plus
    ``x`` read once and ``y`` written once; ``padding_ratio`` is stored value slots per stored entry.
    Computed by the C core as the design rows are (``spmv_config_sizes``: one pass over ``A`` gives
    every format's size exactly as its size query would), without building any format's arrays.
    Kernel workspace (row blocks, carries) and cuSPARSE's buffer are not counted.

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
    cfgs = [config(c) for c in configs]
    bytes_moved, padding, notes = _core.config_sizes(tuple(c.id for c in cfgs), es, float(max_fill), M.nrows,
                                                     M.ncols, M.indptr, M.indices)
    cols = ["config", *CONFIG_FEATURE_NAMES, "status", "note"]
    import pandas as pd
    df = pd.DataFrame({"config": [c.id for c in cfgs], "bytes_moved": bytes_moved, "padding_ratio": padding,
                       "launches": [c.launches for c in cfgs],
                       "status": ["ok" if n is None else "not_applicable" for n in notes],
                       "note": ["" if n is None else n for n in notes]}, columns=cols)
    return df.set_index("config")
