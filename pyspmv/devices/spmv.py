"""One SpMV product with one configuration: ``spmv(A, x, config)``."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .. import _core
from ..matrices.configs import Config
from ..matrices.formats import FormatMatrix
from . import gpu
from .run import check_x, prepare

if TYPE_CHECKING:
    import numpy.typing as npt

    from ..matrices.matrix import FloatArray
    from ..matrices.mmio import MatrixLike


def spmv(A: MatrixLike | FormatMatrix, x: npt.ArrayLike, config: Config | str = "cpu/csr/rows", *,
         dtype: npt.DTypeLike | None = None) -> FloatArray:
    """Compute ``y = A @ x`` with one configuration.

    Parameters
    ----------
    A : Matrix, scipy.sparse matrix, path of a Matrix Market file, or FormatMatrix
        A FormatMatrix must match the configuration's format and parameters.
    x : array-like of shape (ncols,)
        Real numbers. Finite values past the range of the arithmetic type are refused (float32:
        ``|x| > 3.4e38``). NaN and inf propagate into ``y`` as in scipy, except with DIA and BSR
        configurations, which multiply stored padding zeros by ``x`` and so refuse them.
    config : Config or str, default 'cpu/csr/rows'
        See :func:`pyspmv.configs`.
    dtype : {'float32', 'float64'}, optional
        Arithmetic type; default ``A``'s value type.

    Returns
    -------
    ndarray of shape (nrows,)

    Raises
    ------
    pyspmv.DeviceUnavailableError
        A GPU configuration on a machine or build without a usable GPU.
    pyspmv.NotApplicableError
        The configuration's format (or thread mapping) cannot serve ``A``.
    MemoryError
        The GPU has too little free memory; the message gives the sizes.
    ValueError, TypeError
        A bad ``x``, configuration id or parameter.
    """
    c, F = prepare(A, config, dtype)
    xa = check_x(x, F.shape[1], F.dtype, F.format)
    if c.device == "cuda":
        with gpu.Plan(F, c) as plan:
            return plan.mv(xa)
    y = np.empty(F.shape[0], dtype=F.dtype)
    _core.mv(F.state, c.variant, xa, y)  # F's state was checked when made: the core does not check it again
    return y
