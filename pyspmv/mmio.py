"""Matrix Market reading: the header first, checked against int32 and the memory available, then scipy."""
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

from .matrix import Matrix, _check_shape


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
