"""Canonical CSR matrices: construction from scipy.sparse, Matrix Market loading, input checks."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
from typing import Any

import numpy as np
import scipy.io
import scipy.sparse as sp

from . import _core

INT32_MAX = np.iinfo(np.int32).max
VALUE_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))


def value_dtype(dtype: Any, name: str = "dtype") -> np.dtype:
    """Return ``dtype`` as float32 or float64, or raise naming ``name``."""
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"The '{name}' parameter must be 'float32' or 'float64'. Got {dtype!r} instead.") from exc
    if dt not in VALUE_DTYPES:
        raise TypeError(f"The '{name}' parameter must be 'float32' or 'float64'. Got {dt} instead.")
    return dt


def float32_overflow(values: np.ndarray) -> str | None:
    """Why ``values`` cannot become float32 (a finite value past its range, which would turn into
    inf), or None."""
    if values.size == 0 or values.dtype == np.float32:
        return None
    finite = np.abs(values[np.isfinite(values)]) if np.issubdtype(values.dtype, np.floating) else np.abs(values)
    big = float(finite.max(initial=0))
    if big > float(np.finfo(np.float32).max):
        return (f"The matrix holds |value| = {big:.3g}, past the float32 limit {np.finfo(np.float32).max:.3g}; "
                f"use dtype='float64'.")
    return None


class Matrix:
    """A sparse matrix in canonical CSR form, the input of every pyspmv function.

    Canonical means int32 ``indptr`` and ``indices``, column indices sorted within each row,
    duplicate entries summed (as ``scipy.sparse`` does) and explicit zeros kept: they are part of
    the pattern that formats store and that features describe.

    Parameters
    ----------
    data : scipy.sparse matrix or array, Matrix, or 2-D array-like
        Any scipy.sparse format; dense input is converted with its zeros dropped.
    dtype : {'float32', 'float64'}, optional
        Value type. Default: float32 stays float32, everything else becomes float64.
    name : str, optional
        Label carried into benchmark tables.
    group : str, optional
        Matrix family (a collection's group), carried into benchmark tables.

    Raises
    ------
    ValueError
        An empty shape (no rows or no columns), or a dimension or entry count past int32.
    TypeError
        Complex or non-numeric values.

    Notes
    -----
    To refuse rather than canonicalise unsorted or duplicate indices, use
    :meth:`Matrix.from_csr_arrays`.
    """

    def __init__(self, data: Any, *, dtype: Any = None, name: str | None = None, group: str | None = None):
        if isinstance(data, Matrix):
            name = name if name is not None else data.name
            group = group if group is not None else data.group
            data = data.to_scipy()
        if not sp.issparse(data):
            arr = np.asarray(data)
            if arr.ndim != 2:
                raise ValueError(f"Matrix() needs a 2-D array or a scipy.sparse matrix; got an array of shape {arr.shape}.")
            data = sp.csr_array(arr)
        _check_shape(data.shape, data.nnz)
        if np.iscomplexobj(data.data):
            raise TypeError("Matrix() got complex values; pyspmv handles real matrices only (float32 or float64).")
        if dtype is None:
            dtype = np.float32 if data.dtype == np.float32 else np.float64
        dt = value_dtype(dtype)
        if dt == np.float32 and data.dtype != np.float32:
            why = float32_overflow(data.data)
            if why:
                raise ValueError(why)
        A = sp.csr_array(data, dtype=dt, copy=True)
        A.sum_duplicates()  # sorts indices too
        self._indptr = _frozen(A.indptr.astype(np.int32, copy=False))
        self._indices = _frozen(A.indices.astype(np.int32, copy=False))
        self._data = _frozen(np.ascontiguousarray(A.data))
        self._shape = (int(A.shape[0]), int(A.shape[1]))
        self.name = name
        self.group = group

    @classmethod
    def from_csr_arrays(cls, indptr: Any, indices: Any, data: Any, shape: tuple[int, int], *, name: str | None = None) -> Matrix:
        """Build a Matrix from raw CSR arrays, refusing (not repairing) non-canonical input.

        Raises
        ------
        ValueError
            Wrong lengths, ``indptr`` not starting at 0 or decreasing, a column index outside
            ``[0, ncols)``, or unsorted or duplicate column indices in a row; the message names the
            row and the value.
        """
        nrows, ncols = (int(s) for s in shape)
        indptr, indices = np.asarray(indptr), np.asarray(indices)
        data = np.asarray(data)
        _check_shape((nrows, ncols), indices.size)
        for arg, arr in (("indptr", indptr), ("indices", indices)):
            if arr.ndim != 1 or not np.issubdtype(arr.dtype, np.integer):
                raise TypeError(f"The '{arg}' parameter must be a 1-D integer array. Got dtype {arr.dtype}, shape {arr.shape}.")
            if arr.size and (arr.max() > INT32_MAX or arr.min() < np.iinfo(np.int32).min):
                raise ValueError(f"'{arg}' holds {arr.max()}, past the int32 limit {INT32_MAX}.")
        if data.ndim != 1 or data.size != indices.size:
            raise ValueError(f"'data' has shape {data.shape}; it must be 1-D with len(indices) = {indices.size} entries.")
        ip = np.ascontiguousarray(indptr, dtype=np.int32)
        ix = np.ascontiguousarray(indices, dtype=np.int32)
        try:
            _core.csr_check(nrows, ncols, ip, ix)
        except ValueError as exc:
            raise ValueError(f"Matrix.from_csr_arrays(): {exc}") from None
        return cls(sp.csr_array((data, ix, ip), shape=(nrows, ncols)), name=name)

    # -- properties ---------------------------------------------------------------------------
    @property
    def shape(self) -> tuple[int, int]:
        """(nrows, ncols)."""
        return self._shape

    @property
    def nrows(self) -> int:
        return self._shape[0]

    @property
    def ncols(self) -> int:
        return self._shape[1]

    @property
    def nnz(self) -> int:
        """Stored entries, explicit zeros included."""
        return int(self._indices.size)

    @property
    def indptr(self) -> np.ndarray:
        return self._indptr

    @property
    def indices(self) -> np.ndarray:
        return self._indices

    @property
    def data(self) -> np.ndarray:
        return self._data

    @property
    def dtype(self) -> np.dtype:
        return self._data.dtype

    def astype(self, dtype: Any) -> Matrix:
        """This matrix with values cast to ``dtype`` (float32 or float64); self when it matches."""
        dt = value_dtype(dtype)
        return self if dt == self.dtype else Matrix(self, dtype=dt)

    def to_scipy(self) -> sp.csr_array:
        """A scipy.sparse CSR array sharing nothing with this matrix."""
        return sp.csr_array((self._data.copy(), self._indices.copy(), self._indptr.copy()), shape=self._shape)

    def __eq__(self, other: object) -> bool:
        """Exact equality of shape, pattern (explicit zeros included), values and dtype."""
        if not isinstance(other, Matrix):
            return NotImplemented
        return (self.shape == other.shape and self.dtype == other.dtype
                and np.array_equal(self.indptr, other.indptr) and np.array_equal(self.indices, other.indices)
                and np.array_equal(self.data, other.data, equal_nan=True))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<pyspmv.Matrix{label} {self.nrows}x{self.ncols}, {self.nnz} stored, {self.dtype}>"


def as_matrix(A: Any, name: str = "A") -> Matrix:
    """``A`` if it is a Matrix, else ``Matrix(A)``; errors name the argument."""
    if isinstance(A, Matrix):
        return A
    try:
        return Matrix(A)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"'{name}': {exc}") from None


def load(path: str | os.PathLike[str], *, dtype: Any = None) -> Matrix:
    """Read a Matrix Market file (``.mtx`` or ``.mtx.gz``) into a :class:`Matrix`.

    Symmetric, skew-symmetric and Hermitian-free files are expanded to their full pattern;
    pattern files get values 1.0; integer files become float64.

    Parameters
    ----------
    path : str or path-like
    dtype : {'float32', 'float64'}, optional

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        The file is not valid Matrix Market (the message says what the reader objected to),
        or it describes an empty or too large matrix.
    TypeError
        Complex values.
    """
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError(f"pyspmv.load(): no such file: {path!r}")
    try:
        M = scipy.io.mmread(path, spmatrix=False)  # sparse arrays; scipy 1.18 warns without this
    except Exception as exc:  # noqa: BLE001 — scipy raises ValueError, OverflowError, IndexError, ... for bad files
        raise ValueError(f"pyspmv.load(): {path!r} is not a valid Matrix Market file: {exc}") from None
    if not sp.issparse(M):
        M = sp.csr_array(np.atleast_2d(M))
    if np.iscomplexobj(M.data):
        raise TypeError(f"pyspmv.load(): {path!r} holds complex values; pyspmv handles real matrices only.")
    base = os.path.basename(path)
    for ext in (".gz", ".mtx"):
        base = base.removesuffix(ext)
    try:
        return Matrix(M, dtype=dtype, name=base)
    except ValueError as exc:
        raise ValueError(f"pyspmv.load(): {path!r}: {exc}") from None


def _check_shape(shape: tuple[int, ...], nnz: int) -> None:
    nrows, ncols = shape
    if nrows < 1 or ncols < 1:
        raise ValueError(f"The matrix is empty (shape {nrows}x{ncols}); pyspmv needs at least one row and one column.")
    for what, n in (("rows", nrows), ("columns", ncols), ("stored entries", nnz)):
        if n > INT32_MAX:
            raise ValueError(f"The matrix has {n} {what}, past the int32 limit {INT32_MAX} that pyspmv's indices use.")


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a
