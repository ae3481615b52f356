"""Canonical CSR matrices: construction from scipy.sparse, Matrix Market loading, input checks."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import bz2
import gzip
import math
import os
from typing import IO, Any, NamedTuple

import numpy as np
import scipy.io
import scipy.sparse as sp

from . import _core

INT32_MAX = int(np.iinfo(np.int32).max)
#: Rows a Matrix may have: indptr's nrows + 1 entries must be countable in int32.
MAX_ROWS = INT32_MAX - 1
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


def float32_overflow(values: np.ndarray, dtype: Any = np.float32, what: str = "The matrix") -> str | None:
    """Why ``values`` cannot become ``dtype`` (a finite value past its range, which would turn into
    inf), or None. ``what`` starts the message."""
    dt = np.dtype(dtype)
    if values.size == 0 or values.dtype == dt or not np.issubdtype(values.dtype, np.number):
        return None
    finite = np.abs(values[np.isfinite(values)]) if np.issubdtype(values.dtype, np.floating) else np.abs(values)
    big = finite.max(initial=0)
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
    duplicate entries summed (as ``scipy.sparse`` does) and explicit zeros kept: they are part of
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
        ``indptr`` (the message names the row and the limit), or a finite value past ``dtype``'s range.
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

    def __init__(self, data: Any, *, dtype: Any = None, name: str | None = None, group: str | None = None):
        if isinstance(data, Matrix):
            name = name if name is not None else data.name
            group = group if group is not None else data.group
            data = data.to_scipy()
        if sp.issparse(data):
            data = _checked_csr(data)
        else:
            arr = np.asarray(data)
            if arr.ndim != 2:
                raise ValueError(f"Matrix() needs a 2-D array or a scipy.sparse matrix; got an array of shape {arr.shape}.")
            real_values(arr, "data")
            data = sp.csr_array(arr)
        _check_shape(data.shape, data.nnz)
        if dtype is None:
            dtype = np.float32 if data.dtype == np.float32 else np.float64
        dt = value_dtype(dtype)
        why = float32_overflow(data.data, dt)
        if why:
            raise ValueError(why)
        with np.errstate(over="ignore"):  # checked just above
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

    def __matmul__(self, x: Any) -> np.ndarray:
        """``A @ x``: :func:`pyspmv.spmv` with its default configuration (``cpu/csr/rows``), in
        ``A``'s value type; ``x`` must be 1-D with ``ncols`` entries."""
        from .run import spmv
        return spmv(self, x)

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
        if isinstance(bins, bool) or not isinstance(bins, int | np.integer) or not 1 <= bins <= 4096:
            raise ValueError(f"The 'bins' parameter of Matrix.density() must be an int in [1, 4096]. Got {bins!r} instead.")
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
        from html import escape
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
    from html import escape
    r, c = grid.shape
    scale = px / max(r, c)
    w, h = max(1, round(c * scale)), max(1, round(r * scale))
    shade = np.log1p(grid) / np.log1p(grid.max()) if grid.max() > 0 else grid
    try:
        import base64
        import io

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


def as_matrix(A: Any, name: str = "A") -> Matrix:
    """``A`` if it is a Matrix, :func:`load` of it if it is a path (str or path-like), else
    ``Matrix(A)``; errors name the argument."""
    if isinstance(A, Matrix):
        return A
    if isinstance(A, (str, os.PathLike)):
        return load(A)
    try:
        return Matrix(A)
    except (TypeError, ValueError) as exc:
        raise type(exc)(f"'{name}': {exc}") from None


# -- scipy.sparse input: every index array checked before sparsetools or the C core reads it ------

def _checked_csr(S: Any) -> sp.csr_array:
    """scipy.sparse ``S`` (any format) as a CSR array whose index arrays have been checked."""
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
    real_values(np.asarray(S.data), "data")
    if S.format == "coo":
        row, col, values = (np.asarray(a) for a in (S.row, S.col, S.data))
        _check_coo(row, col, values, nrows, ncols)
        return sp.coo_array((values, (row, col)), shape=(nrows, ncols)).tocsr()
    indptr, indices, values = (np.asarray(a) for a in (S.indptr, S.indices, S.data))
    if S.format == "csr":
        nnz = _check_compressed(indptr, indices, values, nrows, ncols, ("row", "column", "ncols"))
        return sp.csr_array((values[:nnz], indices[:nnz], indptr), shape=(nrows, ncols))
    if S.format == "csc":
        nnz = _check_compressed(indptr, indices, values, ncols, nrows, ("column", "row", "nrows"))
        return sp.csc_array((values[:nnz], indices[:nnz], indptr), shape=(nrows, ncols)).tocsr()
    if S.format == "bsr":
        R, C = S.blocksize
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


def load(path: str | os.PathLike[str], *, dtype: Any = None) -> Matrix:
    """Read a Matrix Market file (``.mtx``, gzip- or bzip2-compressed or not) into a :class:`Matrix`.

    Symmetric and skew-symmetric files are expanded to their full pattern; pattern files get values
    1.0; integer files become float64. The header (banner and size line) is read and checked first,
    so that a file declaring a matrix too large for int32 indices or for the memory available is
    refused before scipy reads its body.

    Parameters
    ----------
    path : str or path-like
    dtype : {'float32', 'float64'}, optional

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        The file is not valid Matrix Market (the message says what is wrong: banner, size line, or
        what scipy's reader objected to), it declares an empty matrix or one past int32, a
        skew-symmetric file stores a diagonal entry, or a number written finite overflows float64
        (``1e400``; write ``inf`` where inf is meant). ``inf`` and ``nan`` written as such are kept.
    MemoryError
        Reading the declared matrix would need more memory than is available (the message gives
        both); see :func:`load_bytes`.
    TypeError
        Complex values.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise FileNotFoundError(f"pyspmv.load(): no such file: {path!r}")
    h = _read_header(path)
    _check_declared(h, path)
    try:
        if _compression(path) == _compression_by_name(path):  # scipy reads the file itself, in parallel
            M = scipy.io.mmread(path, spmatrix=False)  # sparse arrays; scipy 1.18 warns without this
        else:
            with _open_binary(path) as f:
                M = scipy.io.mmread(f, spmatrix=False)
    except Exception as exc:  # noqa: BLE001 — scipy raises ValueError, OverflowError, IndexError, ... for bad files
        raise ValueError(f"pyspmv.load(): {path!r} is not a valid Matrix Market file: {exc}") from None
    if sp.issparse(M):
        if h.symmetry == "skew-symmetric":
            diag = np.flatnonzero(M.row == M.col)
            if diag.size:
                k = int(diag[0])
                raise ValueError(f"pyspmv.load(): {path!r} is skew-symmetric but stores the diagonal entry "
                                 f"({M.row[k] + 1}, {M.col[k] + 1}) = {M.data[k]}; Matrix Market skew-symmetric files "
                                 "store the strictly lower triangle only.")
    else:
        M = sp.csr_array(np.atleast_2d(M))
    if np.iscomplexobj(M.data):
        raise TypeError(f"pyspmv.load(): {path!r} holds complex values; pyspmv handles real matrices only.")
    if h.field != "pattern" and np.isinf(M.data).any():
        bad = _overflowing_number(path, h.header_lines)
        if bad is not None:
            raise ValueError(f"pyspmv.load(): {path!r} line {bad[0]}: the value {bad[1]!r} is past the float64 limit "
                             f"{np.finfo(np.float64).max:.3g} and would become inf; write inf where inf is meant.")
    base = os.path.basename(path)
    for ext in (".gz", ".bz2", ".mtx"):
        base = base.removesuffix(ext)
    try:
        return Matrix(M, dtype=dtype, name=base)
    except ValueError as exc:
        raise ValueError(f"pyspmv.load(): {path!r}: {exc}") from None


# -- Matrix Market header: read and checked before scipy reads the body -----------------------------

#: Header words of the NIST Matrix Market format that pyspmv reads ('double' is fast_matrix_market's
#: synonym of 'real').
MM_FORMATS = ("coordinate", "array")
MM_FIELDS = ("real", "double", "integer", "pattern")
MM_SYMMETRIES = ("general", "symmetric", "skew-symmetric", "hermitian")
_MAX_LINE = 1 << 16


class MMHeader(NamedTuple):
    """A Matrix Market file's banner and size line; ``header_lines`` counts lines up to the size line."""

    format: str
    field: str
    symmetry: str
    nrows: int
    ncols: int
    nnz: int
    header_lines: int


def _compression(path: str) -> str:
    """'gzip', 'bzip2' or '' by the file's magic number."""
    with open(path, "rb") as f:
        magic = f.read(3)
    return "gzip" if magic[:2] == b"\x1f\x8b" else "bzip2" if magic == b"BZh" else ""


def _compression_by_name(path: str) -> str:
    """What scipy.io.mmread infers from the name: 'gzip', 'bzip2' or ''."""
    return "gzip" if path.endswith(".gz") else "bzip2" if path.endswith(".bz2") else ""


def _open_binary(path: str) -> IO[bytes]:
    """``path`` opened for reading bytes, decompressed by its magic number whatever its name."""
    kind = _compression(path)
    if kind:
        return (gzip.open if kind == "gzip" else bz2.open)(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def _read_header(path: str) -> MMHeader:
    bad = f"pyspmv.load(): {path!r} is not a valid Matrix Market file"
    try:
        with _open_binary(path) as f:
            banner = f.readline(_MAX_LINE).decode("ascii")
            words = banner.split()
            if len(words) != 5 or words[0] != "%%MatrixMarket" or words[1].lower() != "matrix":
                raise ValueError(f"{bad}: its first line must read '%%MatrixMarket matrix <format> <field> "
                                 f"<symmetry>'. Got {banner[:80]!r} instead.")
            fmt, field, sym = (w.lower() for w in words[2:])
            if field == "complex":
                raise TypeError(f"pyspmv.load(): {path!r} holds complex values; pyspmv handles real matrices only.")
            for what, word, allowed in (("format", fmt, MM_FORMATS), ("field", field, MM_FIELDS),
                                        ("symmetry", sym, MM_SYMMETRIES)):
                if word not in allowed:
                    raise ValueError(f"{bad}: the banner's {what} must be one of {', '.join(allowed)}. Got {word!r} "
                                     "instead.")
            lineno, line = 1, b"%"
            while line.startswith(b"%") or not line.strip():
                line = f.readline(_MAX_LINE)
                lineno += 1
                if not line:
                    raise ValueError(f"{bad}: it ends before its size line.")
    except (UnicodeDecodeError, OSError, EOFError) as exc:  # binary junk, a broken gzip stream
        raise ValueError(f"{bad}: {exc}") from None
    sizes = line.split()
    want = 3 if fmt == "coordinate" else 2
    if len(sizes) != want or not all(w.isdigit() and w.isascii() for w in sizes):
        names = "nrows ncols nnz" if want == 3 else "nrows ncols"
        raise ValueError(f"{bad}: line {lineno}, the size line, must hold {want} non-negative integers "
                         f"({names}). Got {line[:80].decode('ascii', 'replace')!r} instead.")
    n = [int(w) for w in sizes]
    nnz = n[2] if want == 3 else n[0] * n[1]
    return MMHeader(fmt, field, sym, n[0], n[1], nnz, lineno)


def load_bytes(nrows: int, nnz: int) -> int:
    """Peak bytes :func:`load` needs for a file of ``nrows`` rows and ``nnz`` entries (after
    symmetric expansion), an estimate: scipy's COO triplets (int64 row and column, float64 value),
    then CSR (int32 index and float64 value per entry, indptr of ``nrows + 1``, made twice)."""
    return nnz * (8 + 8 + 8) + nnz * (4 + 8) + (nrows + 1) * (8 + 4)


def available_memory() -> int | None:
    """Bytes of physical memory available now: psutil where installed, else the OS's count of free
    pages; None where neither says."""
    try:
        import psutil
        return int(psutil.virtual_memory().available)
    except ImportError:
        pass
    try:
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (AttributeError, ValueError, OSError):
        return None


def _check_declared(h: MMHeader, path: str) -> None:
    """The declared size against int32 and the memory available, before anything is allocated."""
    if h.symmetry != "general" and h.nrows != h.ncols:
        raise ValueError(f"pyspmv.load(): {path!r} is {h.symmetry} but declares {h.nrows}x{h.ncols}; a "
                         f"{h.symmetry} matrix must be square.")
    try:
        _check_shape((h.nrows, h.ncols), h.nnz)
    except ValueError as exc:
        raise ValueError(f"pyspmv.load(): {path!r} declares {h.nrows}x{h.ncols} with {h.nnz} entries: {exc}") from None
    entries = h.nnz * (1 if h.symmetry == "general" or h.format == "array" else 2)
    need = load_bytes(h.nrows, entries) + (h.nnz * 8 if h.format == "array" else 0)
    avail = available_memory()
    if avail is not None and need > avail:
        raise MemoryError(f"pyspmv.load(): {path!r} declares {h.nrows}x{h.ncols} with {h.nnz} entries; reading it "
                          f"needs about {need / 1e9:.3g} GB, more than the {avail / 1e9:.3g} GB of memory available.")


def _overflowing_number(path: str, skip: int) -> tuple[int, str] | None:
    """(line, text) of the first value past ``skip`` header lines that is written as a finite number
    but reads as inf, or None (every inf was written as such)."""
    with _open_binary(path) as f:
        for lineno, line in enumerate(f, 1):
            words = line.split()
            if lineno <= skip or not words or line.startswith(b"%"):
                continue
            text = words[-1].decode("ascii", "replace")
            try:
                inf = math.isinf(float(text))
            except ValueError:
                continue
            if inf and text.lstrip("+-").lower() not in ("inf", "infinity"):
                return lineno, text
    return None


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
