"""Canonical CSR matrices: construction from scipy.sparse and input checks (files: pyspmv.matrices.mmio)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import base64
import io
from html import escape
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np

from .. import _core
from .._params import Interval, validate

if TYPE_CHECKING:                       # imported where a Matrix is made: `import pyspmv` stays fast
    import numpy.typing as npt
    import scipy.sparse as sp

#: What a :class:`Matrix` is made from, for type checkers: a scipy.sparse matrix or array (any format), or a
#: 2-D array-like. (A string: scipy.sparse is not imported with pyspmv.)
SparseLike: TypeAlias = "sp.sparray | sp.spmatrix | npt.ArrayLike"
#: A NumPy array of one of the value types, float32 or float64 (a product's result).
FloatArray: TypeAlias = "npt.NDArray[np.float32 | np.float64]"

INT32_MAX = int(np.iinfo(np.int32).max)
#: Rows a Matrix may have: indptr's nrows + 1 entries must be countable in int32.
MAX_ROWS = INT32_MAX - 1
#: The value types, by name: bytes per value (the core's entry points for them end in _f32 and _f64).
VALUE_BYTES = {"float32": 4, "float64": 8}
#: Bytes per index: the core's indices (indptr, column indices) are int32 everywhere.
INDEX_BYTES = 4
DTYPES = tuple(VALUE_BYTES)
VALUE_DTYPES = tuple(np.dtype(d) for d in DTYPES)


def value_dtype(dtype: Any, name: str = "dtype") -> np.dtype:
    """Return ``dtype`` as float32 or float64, or raise naming ``name``."""
    try:
        dt = np.dtype(dtype)
    except TypeError as exc:
        raise TypeError(f"The '{name}' parameter must be 'float32' or 'float64'. Got {dtype!r} instead.") from exc
    if dt not in VALUE_DTYPES:
        raise TypeError(f"The '{name}' parameter must be 'float32' or 'float64'. Got {dt} instead.")
    return dt


def float32_overflow(values: np.ndarray, dtype: Any = np.float32, what: str = "The matrix") -> str | None:
    """Why ``values`` cannot become ``dtype`` (a finite value past its range, which would turn into
    inf), or None. ``what`` starts the message."""
    dt = np.dtype(dtype)
    if values.size == 0 or values.dtype == dt or not np.issubdtype(values.dtype, np.number):
        return None
    if np.issubdtype(values.dtype, np.floating):      # inf and NaN stay what they are: only finite values count
        big = np.max(np.abs(values), where=np.isfinite(values), initial=0)
    else:
        big = np.abs(values).max(initial=0)
    limit = np.finfo(dt).max
    if big > limit:
        wider = "; use dtype='float64'" if dt == np.float32 else ""
        return f"{what} holds |value| = {float(big):.3g}, past the {dt} limit {float(limit):.3g}{wider}."
    return None


def real_values(values: np.ndarray, name: str) -> None:
    """Raise TypeError naming ``name`` unless ``values`` holds real numbers (float, int or bool)."""
    if np.iscomplexobj(values):
        raise TypeError(f"The '{name}' parameter holds complex values; pyspmv handles real matrices only "
                        "(float32 or float64).")
    if values.dtype.kind not in "fiub":
        raise TypeError(f"The '{name}' parameter must hold real numbers (float, int or bool). Got dtype "
                        f"{values.dtype} instead.")


class Matrix:
    """A sparse matrix in canonical CSR form, the input of every pyspmv function.

    Canonical means int32 ``indptr`` and ``indices``, column indices sorted within each row,
    duplicate entries summed (in float64, then cast to ``dtype``) and explicit zeros kept: they are part of
    the pattern that formats store and that features describe.

    Parameters
    ----------
    data : scipy.sparse matrix or array (any format), Matrix, or 2-D array-like
        scipy input is untrusted: its index arrays (``indptr`` and ``indices``, COO's ``row`` and
        ``col``, ...) are checked before scipy or the C core reads them. Dense input is converted
        with its zeros dropped; DIA input loses its stored zeros, as scipy's conversion does.
    dtype : {'float32', 'float64'}, optional
        Value type. Default: float32 stays float32, everything else (float64, float16, integers,
        bool) becomes float64.
    name : str, optional
        Label carried into benchmark tables.
    group : str, optional
        Matrix family (a collection's group), carried into benchmark tables.

    Raises
    ------
    ValueError
        An empty shape (no rows or no columns), not 2-D, a dimension or entry count past int32, an
        index array of the wrong length, a column (or row) index outside the matrix, a decreasing
        ``indptr`` (the message names the row and the limit), a finite value past ``dtype``'s range, or
        finite duplicate entries whose sum in float64 is past it (it would be inf; the message names
        the entry).
    TypeError
        Complex or non-numeric (object, string) values, or non-integer index arrays.

    Notes
    -----
    NaN and inf values are stored as given (scipy does the same): features never read values, and
    products propagate them as scipy's do; only the formats that multiply padding zeros by ``x``
    refuse a non-finite ``x`` (see :func:`pyspmv.spmv`). To refuse rather than canonicalise
    unsorted or duplicate indices, use :meth:`Matrix.from_csr_arrays`. ``A @ x`` is
    ``pyspmv.spmv(A, x)`` with the default CPU configuration.
    """

    def __init__(self, data: Matrix | SparseLike, *, dtype: npt.DTypeLike | None = None, name: str | None = None,
                 group: str | None = None):
        import scipy.sparse as sp
        if isinstance(data, Matrix):
            name = name if name is not None else data.name
            group = group if group is not None else data.group
            data = data.to_scipy()
        if sp.issparse(data):
            given = data.dtype
            copied = _canonical_copy(data, dtype)
            if copied is not None:  # the common large input, checked and copied in one threaded pass
                self._indptr, self._indices, self._data = (_frozen(a) for a in copied)
                self._shape = (int(data.shape[0]), int(data.shape[1]))
                self.name = name
                self.group = group
                return
            data = _checked_csr(data)
        else:
            arr = np.asarray(data)
            if arr.ndim != 2:
                raise ValueError(f"Matrix() needs a 2-D array or a scipy.sparse matrix; got an array of shape {arr.shape}.")
            real_values(arr, "data")
            given = arr.dtype
            data = sp.csr_array(arr)
        _check_shape(data.shape, data.nnz)
        dt = value_dtype(dtype if dtype is not None else np.float32 if given == np.float32 else np.float64)
        # Duplicates are summed in float64, whatever the input's type (int8 100 + 100 is 200, not
        # -56; float32 3e38 + 3e38 is past float32, not a silent inf), and the range is checked on
        # the sums.
        if data.dtype.kind == "f" and data.has_canonical_format:
            # Sorted, without duplicates (scipy checks it in C): nothing left to sum, so no float64 copy; values
            # no wider than the result cannot pass its range (COO's duplicates were summed into float64 before:
            # those are checked). Own copies of the index arrays (for scipy input they are the caller's).
            why = None if data.dtype.itemsize <= dt.itemsize else float32_overflow(data.data, dt)
            if why:
                raise ValueError(why)
            A = sp.csr_array((data.data.astype(dt), data.indices.copy(), data.indptr.copy()), shape=data.shape)
        else:
            A = sp.csr_array(data, dtype=np.float64, copy=True)
            given_nnz = A.nnz
            A.sum_duplicates()  # sorts indices too
            if A.nnz < given_nnz:
                B = sp.csr_array(data, dtype=np.float64)
                _check_duplicate_sums(A, lambda v: _summed_csr(B.indptr, B.indices, v, B.shape), B.data)
            why = float32_overflow(A.data, dt)
        if why:
            raise ValueError(why)
        if dt != A.dtype:
            A = sp.csr_array((A.data.astype(dt), A.indices, A.indptr), shape=A.shape)
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
        import scipy.sparse as sp
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
        import scipy.sparse as sp
        return sp.csr_array((self._data.copy(), self._indices.copy(), self._indptr.copy()), shape=self._shape)

    def __eq__(self, other: object) -> bool:
        """Exact equality of shape, pattern (explicit zeros included), values and dtype."""
        if not isinstance(other, Matrix):
            return NotImplemented
        return (self.shape == other.shape and self.dtype == other.dtype
                and np.array_equal(self.indptr, other.indptr) and np.array_equal(self.indices, other.indices)
                and np.array_equal(self.data, other.data, equal_nan=True))

    __hash__ = None  # type: ignore[assignment]

    def __matmul__(self, x: npt.ArrayLike) -> FloatArray:
        """``A @ x``: :func:`pyspmv.spmv` with its default configuration (``cpu/csr/rows``), in ``A``'s value
        type; ``x`` must be 1-D with ``ncols`` entries."""
        # The product belongs to the layer above (pyspmv.devices.spmv: the configuration, the conversion, the
        # check of x), which builds on this module; it is looked up at the call, as pyspmv's lazy names are,
        # so that this module imports nothing above it. `import pyspmv` has loaded it already.
        import importlib
        product: FloatArray = importlib.import_module("pyspmv.devices.spmv").spmv(self, x)
        return product

    def __repr__(self) -> str:
        label = f" {self.name!r}" if self.name else ""
        return f"<pyspmv.Matrix{label} {self.nrows}x{self.ncols}, {self.nnz} stored, {self.dtype}>"

    #: Entries :meth:`density` reads at most; past it, an evenly strided sample stands for the rest.
    DENSITY_SAMPLE = 1 << 21

    def density(self, bins: int = 64) -> np.ndarray:
        """Stored entries per cell of a grid of at most ``bins`` x ``bins`` cells over the matrix (the
        sparsity picture of :func:`pyspmv.plot.spy` and of the notebook display).

        Cells keep the matrix's aspect ratio (a dimension below ``bins`` gets one cell per row or
        column). Costs O(min(nnz, DENSITY_SAMPLE) log nrows): a matrix with more entries is drawn from an
        evenly strided sample of them, its counts scaled back by the stride.
        """
        validate("Matrix.density()", {"bins": Interval("int", 1, 4096, "both")}, locals())
        big = max(self.nrows, self.ncols)
        br = max(1, min(self.nrows, round(bins * self.nrows / big)))
        bc = max(1, min(self.ncols, round(bins * self.ncols / big)))
        step = max(1, -(-self.nnz // self.DENSITY_SAMPLE))
        pos = np.arange(0, self.nnz, step, dtype=np.int64)
        rows = np.searchsorted(self._indptr, pos, side="right") - 1
        r = rows.astype(np.int64) * br // self.nrows
        c = self._indices[pos].astype(np.int64) * bc // self.ncols
        return np.bincount(r * bc + c, minlength=br * bc).reshape(br, bc).astype(np.float64) * step

    def _repr_html_(self) -> str:
        """Shape, entries, value type and a small sparsity picture, for Jupyter."""
        title = f" <b>{escape(self.name)}</b>" if self.name else ""
        group = f", group {escape(self.group)}" if self.group else ""
        per_row = self.nnz / self.nrows
        text = (f"<div><b>pyspmv.Matrix</b>{title}{group}<br>{self.nrows:,} &times; {self.ncols:,}, "
                f"{self.nnz:,} stored entries ({per_row:.3g} per row, density {self.nnz / (self.nrows * self.ncols):.3g}), "
                f"{self.dtype}</div>")
        return (f"<div style='display:flex;gap:1em;align-items:center'>{_sparsity_picture(self.density(48))}"
                f"{text}</div>")


def _sparsity_picture(grid: np.ndarray, px: int = 144) -> str:
    """HTML for a density grid: an inline PNG when matplotlib is installed, else an SVG of the occupied
    cells (darker: more entries)."""
    r, c = grid.shape
    scale = px / max(r, c)
    w, h = max(1, round(c * scale)), max(1, round(r * scale))
    shade = np.log1p(grid) / np.log1p(grid.max()) if grid.max() > 0 else grid
    try:
        from matplotlib.image import imsave
    except ImportError:
        cells = "".join(f"<rect x='{j}' y='{i}' width='1' height='1' fill-opacity='{0.25 + 0.75 * shade[i, j]:.2f}'/>"
                        for i, j in zip(*np.nonzero(grid), strict=True))
        return (f"<svg width='{w}' height='{h}' viewBox='0 0 {c} {r}' preserveAspectRatio='none' "
                f"style='border:1px solid #999' shape-rendering='crispEdges'>"
                f"<g fill='#1f3b73'>{cells}</g></svg>")
    buf = io.BytesIO()
    k = max(1, px // max(r, c))
    imsave(buf, np.kron(shade, np.ones((k, k))), cmap="Blues", vmin=0.0, vmax=1.0, format="png",
           metadata={"Software": None})
    data = base64.b64encode(buf.getvalue()).decode("ascii")
    return (f"<img src='data:image/png;base64,{escape(data)}' width='{w}' height='{h}' "
            f"style='border:1px solid #999;image-rendering:pixelated' alt='sparsity pattern'/>")


def _check_duplicate_sums(summed: Any, resum: Any, values: np.ndarray) -> None:
    """Refuse an entry of ``summed`` (a CSR whose duplicates were summed in float64 from ``values``)
    that overflowed to inf from finite duplicates, as a single finite value past float64 is refused
    (``1e400`` in a file); a duplicate that is inf or nan itself sums as scipy sums it. ``resum(v)``
    sums other values ``v`` over the same pattern, giving the same order."""
    over = np.isinf(summed.data)
    if not over.any():
        return
    over &= resum((~np.isfinite(values)).astype(np.float64)).data == 0
    if not over.any():
        return
    k = int(np.flatnonzero(over)[0])
    i, j = int(np.searchsorted(summed.indptr, k, side="right")) - 1, int(summed.indices[k])
    n = int(resum(np.ones_like(values)).data[k])
    raise ValueError(f"The matrix holds {n} duplicate entries at row {i}, column {j} (0-based), each finite, whose "
                     f"float64 sum overflows to {summed.data[k]} (past the float64 limit "
                     f"{np.finfo(np.float64).max:.3g}), as a single value past it would. Sum them in a wider type "
                     "and scale the matrix, or give inf where inf is meant.")


def _canonical_copy(S: Any, dtype: npt.DTypeLike | None) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """Copies of a canonical CSR's arrays (int32 indices, float32 or float64 values in the type
    Matrix() keeps), checked and copied in one pass on the core's threads; None where ``S`` is not
    such a CSR (another format or index type, unsorted or duplicate indices, an index out of range,
    a shape past the limits): Matrix()'s general path then sums, checks and names what is wrong."""
    arrays = (getattr(S, "indptr", None), getattr(S, "indices", None), getattr(S, "data", None))
    if S.format != "csr" or S.ndim != 2 or not all(isinstance(a, np.ndarray) and a.ndim == 1 for a in arrays):
        return None
    indptr, indices, values = arrays
    if (indptr.dtype != np.int32 or indices.dtype != np.int32 or values.dtype not in (np.float32, np.float64)
            or not all(a.flags.c_contiguous and a.dtype.isnative for a in arrays)):
        return None
    try:
        _check_shape(S.shape, indices.size)
    except ValueError:
        return None
    dt = value_dtype(dtype if dtype is not None else values.dtype)
    if values.dtype.itemsize > dt.itemsize and float32_overflow(values, dt):
        return None
    try:
        return _core.csr_copy(int(S.shape[0]), int(S.shape[1]), indptr, indices, values, dt.num)
    except ValueError:
        return None


def _summed_csr(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray, shape: tuple[int, int]) -> Any:
    import scipy.sparse as sp
    A = sp.csr_array((values, indices.copy(), indptr.copy()), shape=shape)
    A.sum_duplicates()
    return A


# -- scipy.sparse input: every index array checked before sparsetools or the C core reads it ------

def _checked_csr(S: Any) -> sp.csr_array:
    """scipy.sparse ``S`` (any format) as a CSR array whose index arrays have been checked (duplicates may
    remain; the caller sums them), of float64 values, or of S's own float32 or float64 values where S is not COO
    (those may be S's own arrays: the caller copies)."""
    import scipy.sparse as sp
    if S.ndim != 2:
        raise ValueError(f"The 'data' parameter of Matrix() must be 2-D. Got a {S.ndim}-D scipy.sparse array "
                         f"of shape {S.shape} instead.")
    nrows, ncols = (int(n) for n in S.shape)
    _check_shape((nrows, ncols), 0)
    fmt = S.format
    if fmt == "lil":  # scipy's flattening trusts that each row has as many values as column indices
        n = [np.fromiter(map(len, a), np.int64, len(a)) for a in (S.rows, S.data)]
        if n[0].shape != n[1].shape or not np.array_equal(*n):
            i = int(np.flatnonzero(n[0] != n[1])[0]) if n[0].shape == n[1].shape else 0
            raise ValueError(f"The 'data' parameter of Matrix(): lil row {i} has {n[0][i]} column indices but "
                             f"{n[1][i] if n[1].size > i else 0} values.")
    try:
        if fmt in ("lil", "dok"):  # Python-level conversions that copy indices without using them
            S = S.tocsr() if fmt == "lil" else S.tocoo()
        elif fmt == "dia":
            S = _dia_to_coo(S, nrows, ncols)
    except (TypeError, ValueError, OverflowError) as exc:
        raise ValueError(f"The 'data' parameter of Matrix(): its {fmt} structure cannot be read: {exc}") from None
    raw = np.asarray(S.data)
    real_values(raw, "data")
    if raw.dtype.kind == "f" and raw.dtype.itemsize > 8:  # only a long double can pass float64's range
        why = float32_overflow(raw, np.float64, "The 'data' parameter of Matrix()")
        if why:
            raise ValueError(why)
    # float64 before scipy sums anything: COO's tocsr sums duplicates in the values' own type. The compressed
    # formats' conversions only move values (Matrix() sums their duplicates in float64): float32 and float64
    # values stay as given, uncopied (Matrix() copies them once, into the type it keeps).
    keep = raw.dtype.kind == "f" and raw.dtype.itemsize <= 8 and S.format != "coo"
    values = raw if keep else raw.astype(np.float64)
    if S.format == "coo":
        row, col = (np.asarray(a) for a in (S.row, S.col))
        _check_coo(row, col, values, nrows, ncols)
        A = sp.coo_array((values, (row, col)), shape=(nrows, ncols)).tocsr()  # sums duplicates
        if A.nnz < values.size:
            _check_duplicate_sums(A, lambda v: sp.coo_array((v, (row, col)), shape=(nrows, ncols)).tocsr(), values)
        return A
    indptr, indices = (np.asarray(a) for a in (S.indptr, S.indices))
    if S.format == "csr":
        nnz = _check_compressed(indptr, indices, values, nrows, ncols, ("row", "column", "ncols"))
        return sp.csr_array((values[:nnz], indices[:nnz], indptr), shape=(nrows, ncols))
    if S.format == "csc":
        nnz = _check_compressed(indptr, indices, values, ncols, nrows, ("column", "row", "nrows"))
        return sp.csc_array((values[:nnz], indices[:nnz], indptr), shape=(nrows, ncols)).tocsr()
    if S.format == "bsr":
        R, C = S.blocksize
        if R < 1 or C < 1 or nrows % R or ncols % C:  # scipy's bsr_tocsr writes past its arrays then
            raise ValueError(f"The 'data' parameter of Matrix(): bsr shape {nrows}x{ncols} is not a multiple of its "
                             f"block size {R}x{C}.")
        if values.ndim != 3 or values.shape[1:] != (R, C):
            raise ValueError(f"The 'data' parameter of Matrix(): bsr data has shape {values.shape}; it must be "
                             f"(nnz_blocks, {R}, {C}).")
        nnz = _check_compressed(indptr, indices, values, nrows // R, ncols // C,
                                ("block row", "block column", "ncols/C"))
        return sp.bsr_array((values[:nnz], indices[:nnz], indptr), shape=(nrows, ncols)).tocsr()
    raise TypeError(f"The 'data' parameter of Matrix(): scipy.sparse format {S.format!r} is not supported.")


def _dia_to_coo(S: Any, nrows: int, ncols: int) -> sp.coo_array:
    """DIA to COO in NumPy (scipy's dia_tocsr is C++ that trusts ``offsets`` and ``data``'s shape);
    stored zeros are dropped, as scipy's conversion does."""
    import scipy.sparse as sp
    offsets, data = np.asarray(S.offsets), np.asarray(S.data)
    if offsets.ndim != 1 or offsets.dtype.kind not in "iu" or data.ndim != 2 or data.shape[0] != offsets.size:
        raise ValueError(f"dia offsets have shape {offsets.shape} ({offsets.dtype}) and data {data.shape}; "
                         "data must be (len(offsets), L) with integer offsets")
    real_values(data, "data")
    j = np.arange(data.shape[1], dtype=np.int64)
    rows = j[None, :] - offsets.astype(np.int64)[:, None]
    keep = (rows >= 0) & (rows < nrows) & (j[None, :] < ncols) & (data != 0)
    cols = np.broadcast_to(j, data.shape)
    return sp.coo_array((data[keep], (rows[keep], cols[keep])), shape=(nrows, ncols))


def _index_array(a: np.ndarray, what: str, length: int | None = None) -> None:
    if a.ndim != 1 or a.dtype.kind not in "iu":
        raise TypeError(f"The 'data' parameter of Matrix(): '{what}' must be a 1-D integer array. Got dtype "
                        f"{a.dtype}, shape {a.shape} instead.")
    if length is not None and a.size != length:
        raise ValueError(f"The 'data' parameter of Matrix(): '{what}' has length {a.size}; it must be {length}.")


def _check_compressed(indptr: np.ndarray, indices: np.ndarray, values: np.ndarray, nmajor: int, nminor: int,
                      names: tuple[str, str, str]) -> int:
    """scipy's ``check_format(full_check=True)`` list, vectorised, with messages that name the row
    (``names``: major, minor, minor limit); returns nnz = ``indptr[-1]``."""
    major, minor, limit = names
    _index_array(indptr, "indptr", nmajor + 1)
    _index_array(indices, "indices")
    ip = indptr.astype(np.int64)
    if ip[0] != 0:
        raise ValueError(f"The 'data' parameter of Matrix(): indptr[0] is {ip[0]}; it must be 0.")
    down = np.flatnonzero(np.diff(ip) < 0)
    if down.size:
        k = int(down[0])
        raise ValueError(f"The 'data' parameter of Matrix(): indptr decreases at {major} {k}: indptr[{k + 1}] = "
                         f"{ip[k + 1]} after indptr[{k}] = {ip[k]}.")
    nnz = int(ip[-1])
    if values.ndim < 1 or nnz > indices.size or nnz > values.shape[0]:
        raise ValueError(f"The 'data' parameter of Matrix(): indptr[{nmajor}] = {nnz} but indices has length "
                         f"{indices.size} and data {values.shape[0] if values.ndim else 0}; they must hold at "
                         f"least indptr[{nmajor}] entries.")
    ix = indices[:nnz]
    bad = np.flatnonzero((ix < 0) | (ix >= nminor))
    if bad.size:
        k = int(bad[0])
        where = int(np.searchsorted(ip, k, side="right")) - 1
        raise ValueError(f"The 'data' parameter of Matrix(): {minor} index {ix[k]} in {major} {where} is outside "
                         f"[0, {limit} = {nminor}).")
    return nnz


def _check_coo(row: np.ndarray, col: np.ndarray, values: np.ndarray, nrows: int, ncols: int) -> None:
    """COO ``row`` and ``col``: integer, one per value, inside the shape."""
    _index_array(row, "row", values.size)
    _index_array(col, "col", values.size)
    for what, a, n, limit in (("row", row, nrows, "nrows"), ("column", col, ncols, "ncols")):
        bad = np.flatnonzero((a < 0) | (a >= n))
        if bad.size:
            k = int(bad[0])
            raise ValueError(f"The 'data' parameter of Matrix(): entry {k} (row {row[k]}, column {col[k]}) has "
                             f"{what} index {a[k]}, outside [0, {limit} = {n}).")


def _check_shape(shape: tuple[int, ...], nnz: int) -> None:
    nrows, ncols = shape
    if nrows < 1 or ncols < 1:
        raise ValueError(f"The matrix is empty (shape {nrows}x{ncols}); pyspmv needs at least one row and one column.")
    if nrows > MAX_ROWS:
        raise ValueError(f"The matrix has {nrows} rows, past the limit {MAX_ROWS}: indptr's nrows + 1 entries are "
                         "counted in int32.")
    for what, n in (("columns", ncols), ("stored entries", nnz)):
        if n > INT32_MAX:
            raise ValueError(f"The matrix has {n} {what}, past the int32 limit {INT32_MAX} that pyspmv's indices use.")


def _frozen(a: np.ndarray) -> np.ndarray:
    a = np.ascontiguousarray(a)
    a.flags.writeable = False
    return a
