"""Storage format conversion: ``convert(A, fmt)`` and the :class:`FormatMatrix` it returns."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from html import escape
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _core
from .._params import Interval, OneOf, validate
from .configs import FORMATS, format_param_defaults, format_param_names
from .matrix import INT32_MAX, Matrix, float32_overflow, value_dtype
from .mmio import as_matrix

if TYPE_CHECKING:
    import numpy.typing as npt

    from .mmio import MatrixLike

INT32_MIN = -INT32_MAX - 1


class FormatMatrix:
    """A matrix stored in one of pyspmv's formats, as the C core laid it out.

    Made by :func:`convert`; its arrays are read-only for good (their memory is a ``bytes`` object,
    so numpy refuses to make them writeable). ``to_csr()`` gives the original matrix back exactly.
    Layouts are documented at the top of ``csrc/<format>.c``.

    Its state is a ``pyspmv._core.State``: the C core's own object, checked once when it was made and
    immutable, which the products of :mod:`pyspmv._core` and :mod:`pyspmv.devices.gpu` take without checking
    it again. A state built elsewhere (a ``State`` of one's own arrays, or the tuple of its
    constructor's arguments: format code or name, nrows, ncols, nnz, params, scalars, index arrays,
    value arrays) is checked by the core when the ``State`` is made (array lengths against the shape,
    scalars and parameters; indices in range or padding; pointers monotone; permutations; padding
    slots zero); arrays of it that could be written to are copied first, so later changes to them do
    not reach this matrix. ``params`` labels the matrix (its configuration, what an Operator reports and
    records): None takes the state's own; given, it must name the same values (defaults filled in).

    Raises
    ------
    ValueError
        The state is inconsistent; the message names the array and the count or range it breaks. Or
        ``params`` contradicts the state's parameters.
    TypeError
        A value array of non-native byte order (``'>f8'``): the core would read other numbers; swap it first.

    Attributes
    ----------
    format : str
    shape : tuple of int
    nnz : int
        Stored entries of the CSR matrix it came from.
    params : dict
        Format parameters, defaults filled in (HYB ``k=-1``: the Bell–Garland width).
    scalars : tuple of int
        Derived sizes (ELL width, slice count, diagonal count, ...).
    index_arrays, value_arrays : tuple of ndarray
    """

    def __init__(self, state: _core.State | tuple[Any, ...], params: dict[str, int] | None = None,
                 name: str | None = None):
        if isinstance(state, tuple):
            if len(state) != 8:
                raise ValueError("The 'state' parameter of FormatMatrix() must be a pyspmv._core.State or the 8 "
                                 "arguments of its constructor (format, nrows, ncols, nnz, params, scalars, "
                                 f"index arrays, value arrays). Got a tuple of {len(state)} instead.")
            state = _core.State(*state)
        elif not isinstance(state, _core.State):
            raise TypeError("The 'state' parameter of FormatMatrix() must be a pyspmv._core.State (convert()'s). "
                            f"Got {type(state).__name__} instead.")
        self._state = state
        self.format: str = state.format_name
        params = _state_params(state, params)
        self.shape: tuple[int, int] = (state.nrows, state.ncols)
        self.nnz: int = state.nnz
        self.params = dict(params)
        self.scalars: tuple[int, ...] = state.scalars
        self.index_arrays: tuple[np.ndarray, ...] = state.index_arrays
        self.value_arrays: tuple[np.ndarray, ...] = state.value_arrays
        self.name = name

    @property
    def dtype(self) -> np.dtype:
        return self._state.dtype

    @property
    def state(self) -> _core.State:
        """The C core's state of this matrix (checked once, immutable): what the products of
        :mod:`pyspmv._core` and :mod:`pyspmv.devices.gpu` take without checking it again."""
        return self._state

    @property
    def nbytes(self) -> int:
        """Bytes the format stores: int32 index arrays plus value arrays."""
        return self._state.nbytes

    @property
    def padding_ratio(self) -> float:
        """Stored value slots per stored entry (1.0: no padding)."""
        slots = sum(a.size for a in self.value_arrays)
        return slots / self.nnz if self.nnz else 1.0

    def astype(self, dtype: npt.DTypeLike) -> FormatMatrix:
        """The same matrix with values of ``dtype``, sharing the (read-only) index arrays: one
        conversion serves both value types.

        Raises
        ------
        ValueError
            A value is past float32's range.
        """
        dt = value_dtype(dtype)
        if dt == self.dtype:
            return self
        state = _core.recast(self._state, dt == np.float64)
        return FormatMatrix(state, self.params, self.name)

    def to_csr(self) -> Matrix:
        """The CSR matrix this was converted from, exactly (pattern, explicit zeros, values)."""
        indptr, indices, values = _core.to_csr(self._state)
        return Matrix.from_csr_arrays(indptr, indices, values, self.shape, name=self.name)

    def __repr__(self) -> str:
        p = "".join(f", {k}={v}" for k, v in self.params.items())
        return (f"<pyspmv.FormatMatrix {self.format}{p} {self.shape[0]}x{self.shape[1]}, {self.nnz} stored, "
                f"{self.nbytes} bytes, {self.dtype}>")


    def _repr_html_(self) -> str:
        """Format, parameters, shape, bytes and padding, for Jupyter."""
        rows = [("format", self.format),
                ("params", ", ".join(f"{k}={v}" for k, v in self.params.items()) or "none"),
                ("shape", f"{self.shape[0]:,} &times; {self.shape[1]:,}"), ("stored entries", f"{self.nnz:,}"),
                ("dtype", str(self.dtype)), ("bytes", f"{self.nbytes:,}"),
                ("padding", f"{self.padding_ratio:.3f} value slots per entry")]
        name = f" {escape(self.name)}" if self.name else ""
        body = "".join(f"<tr><th style='text-align:left'>{k}</th><td style='text-align:left'>{v}</td></tr>"
                       for k, v in rows)
        return f"<div><b>pyspmv.FormatMatrix</b>{name}<table>{body}</table></div>"


def _state_params(state: _core.State, params: Any) -> dict[str, int]:
    """The format parameters ``state`` was laid out with, by name; ``params`` (a label the caller gives) must
    say the same, defaults filled in, or the matrix would be reported and recorded as a configuration other
    than the one it runs."""
    fmt = state.format_name
    names = format_param_names(fmt)
    own = dict(zip(names, state.params))
    if params is None:
        return own
    if not isinstance(params, dict):
        raise TypeError(f"The 'params' parameter of FormatMatrix() must be a dict of the '{fmt}' format's "
                        f"parameters or None. Got {type(params).__name__} instead.")
    given = {**format_param_defaults(fmt), **{str(k).lower(): v for k, v in params.items()}}
    if given != own:
        raise ValueError(f"The 'params' parameter of FormatMatrix() is {params!r}, but the state is laid out with "
                         f"{own or 'no parameters'} ('{fmt}'); pass params=None to take the state's own.")
    return own


def format_code(fmt: str) -> int:
    """Index of format ``fmt`` in the C core's list."""
    validate("convert()", {"fmt": OneOf(FORMATS, "names")}, locals())
    return FORMATS.index(fmt)


def format_arguments(fmt: str, max_fill: Any, params: dict[str, Any], where: str
                     ) -> tuple[int, dict[str, int], list[int]]:
    """``fmt``'s code, its parameters with defaults (lower-case names) and the core's two parameter slots, after
    the checks every conversion makes (``where`` names the caller in the messages): a known format, ``max_fill``
    a number > 0, known parameter names, int32 values (the core checks each format's own range)."""
    code = format_code(fmt)
    validate(where, {"max_fill": Interval("number", 0, closed="neither")}, locals())
    names = format_param_names(fmt)
    given = {k.lower(): v for k, v in params.items()}
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise ValueError(f"{where} got unknown parameter(s) {unknown} for format '{fmt}'; it takes "
                         f"{list(names) if names else 'none'}.")
    full = {**format_param_defaults(fmt), **given}
    for k, v in full.items():
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
            raise TypeError(f"The '{k}' parameter of {where} must be an integer. Got {v!r} instead.")
        if not INT32_MIN <= v <= INT32_MAX:  # the core's parameters are int32; it names the real range
            raise ValueError(f"The '{k}' parameter of {where} must be an int32 in [{INT32_MIN}, {INT32_MAX}] "
                             f"(and in the '{fmt}' format's own range). Got {v} instead.")
    return code, {k: int(v) for k, v in full.items()}, [int(full[n]) for n in names] + [0, 0]


def convert(A: MatrixLike, fmt: str, *, dtype: npt.DTypeLike | None = None,
            max_fill: float = float(_core.MAX_FILL_DEFAULT), **params: int) -> FormatMatrix:
    """Convert ``A`` to storage format ``fmt``.

    Parameters
    ----------
    A : Matrix or scipy.sparse matrix
    fmt : {'csr', 'coo', 'ell', 'sell', 'bro_ell', 'hyb', 'dia', 'jad', 'bsr', 'cidx'}
    dtype : {'float32', 'float64'}, optional
        Value type of the result; default ``A``'s.
    max_fill : float, default 20
        Refuse when the format would store more than ``max_fill * max(nnz, nrows)`` slots.
    **params : int
        The format's parameters, case-insensitive: ``sell``: ``c``, ``sigma``; ``bro_ell``: ``h``
        (slice height), ``bits`` (0: adaptive per slice, else 8, 16 or 32); ``hyb``: ``k`` (ELL width,
        -1: Bell–Garland); ``bsr``: ``b`` (block size); ``cidx``: ``bits`` (8 or 16, the column offsets'
        width); ``csr``: ``order`` (1: reverse Cuthill–McKee); ``jad``: ``vals`` (8 or 16: each value an index of
        that many bits into a table of the matrix's distinct values, refused where there are more than 2**vals).

    Returns
    -------
    FormatMatrix

    Raises
    ------
    pyspmv.NotApplicableError
        The format cannot hold ``A`` within ``max_fill`` or int32 indexing; the message says why.
    ValueError
        An unknown format or parameter, or a parameter out of its range.
    """
    M = as_matrix(A)
    code, full, p = format_arguments(fmt, max_fill, params, "convert()")
    dt = value_dtype(dtype) if dtype is not None else M.dtype
    # The cast reports overflow itself, so the float32 range costs no extra pass over the values.
    try:
        with np.errstate(over="raise"):
            values = M.data if M.dtype == dt else M.data.astype(dt)
    except FloatingPointError:
        raise ValueError(float32_overflow(M.data)) from None
    state = _core.convert(code, p[0], p[1], float(max_fill), M.nrows, M.ncols, M.indptr, M.indices, values)
    return FormatMatrix(state, full, M.name)
