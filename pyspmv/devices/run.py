"""What every product with one configuration starts with: the device check, the conversion (on the host, or on
the GPU for a matrix that lives there) and the checked ``x`` (for :func:`pyspmv.spmv`, :func:`pyspmv.benchmark`,
:class:`pyspmv.Operator`, ``rank(verify=k)`` and the solvers)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from typing import Any

import numpy as np

from .. import _core
from ..matrices.configs import FORMATS, Config, config
from ..matrices.formats import FormatMatrix, convert
from ..matrices.matrix import float32_overflow, value_dtype
from ..matrices.mmio import as_matrix
from . import gpu

#: Formats whose kernels multiply stored padding zeros by x: a non-finite x would turn 0 into NaN
#: (the fact each csrc/<format>.c keeps, spmv_format_finite_x).
PADDING_TIMES_X: tuple[str, ...] = tuple(n for n, f in zip(FORMATS, _core.format_facts()) if f["finite_x"])


def require_device(device: str) -> None:
    """Raise :class:`pyspmv.DeviceUnavailableError`, saying why, when ``device`` cannot run."""
    if device == "cuda":
        gpu.cuda()


def prepare(A: Any, cfg: Config | str, dtype: Any = None) -> tuple[Config, FormatMatrix]:
    """Parse ``cfg`` and convert ``A`` (Matrix, scipy.sparse or a matching FormatMatrix) for it."""
    c = config(cfg)
    require_device(c.device)
    if isinstance(A, FormatMatrix):
        if A.format != c.format or any(A.params.get(k) != v for k, v in c.format_kwargs.items()):
            raise ValueError(f"The FormatMatrix is {A!r}, which configuration {c.id!r} cannot run; pass the Matrix.")
        if dtype is not None and value_dtype(dtype) != A.dtype:
            raise ValueError(f"The FormatMatrix holds {A.dtype} values, not {np.dtype(dtype)}.")
        return c, A
    M = as_matrix(A)
    return c, convert(M, c.format, dtype=dtype if dtype is not None else M.dtype, **c.format_kwargs)


def prepare_on_device(DM: gpu.DeviceMatrix, cfg: Config | str) -> tuple[Config, gpu.DeviceMatrix]:
    """Parse ``cfg`` (a ``cuda`` configuration) and convert ``DM``, a CSR matrix that lives on the GPU, for it
    on the GPU (:func:`gpu.convert_on_device`; a CSR configuration reads ``DM`` itself): what :class:`pyspmv.Operator`
    of a CuPy or PyTorch matrix and ``rank(verify=k)`` of one convert with, never through the host."""
    c = config(cfg)
    if c.device != "cuda":
        raise ValueError(f"Configuration {c.id!r} runs on {c.device}; a matrix that lives on the GPU is converted "
                         "for cuda configurations.")
    # CSR in its own order is DM itself; any other layout (CSR in a locality order included) is converted
    return c, DM if c.format == "csr" and not any(c.format_params) else \
        gpu.convert_on_device(DM, c.format, **c.format_kwargs)


def check_x(x: Any, ncols: int, dtype: np.dtype, fmt: str) -> np.ndarray:
    """``x`` as a contiguous 1-D array of ``dtype`` with ``ncols`` entries, or a clear error.

    Refused: a finite value past ``dtype``'s range (it would become inf), and, for the formats of
    :data:`PADDING_TIMES_X`, a non-finite value. Elsewhere NaN and inf in ``x`` propagate into ``y``
    as in scipy's product.
    """
    xa = np.asarray(x)
    if xa.ndim != 1 or xa.shape[0] != ncols:
        raise ValueError(f"'x' has shape {xa.shape}; it must be 1-D with ncols = {ncols} entries.")
    if np.iscomplexobj(xa) or not (np.issubdtype(xa.dtype, np.number) or xa.dtype == bool):
        raise TypeError(f"'x' must hold real numbers. Got dtype {xa.dtype}.")
    why = float32_overflow(xa, dtype, what="'x'")
    if why:
        raise ValueError(why)
    xa = np.ascontiguousarray(xa, dtype=dtype)
    if fmt in PADDING_TIMES_X:
        bad = _core.finite_check(xa)
        if bad is not None:
            raise ValueError(f"x[{bad}] is {xa[bad]}: the {fmt} format multiplies its padding zeros by x, "
                             f"which would turn them into NaN. Use a finite x or another format.")
    return xa
