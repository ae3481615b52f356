"""Matrix Market reading (:func:`load`): the header first, checked against int32 and the memory
available, then the body, parsed completely by the C core; and :func:`as_matrix`, how every function
takes its matrix argument (a path is loaded)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import bz2
import gzip
import os
import stat
import zlib
from typing import IO, TYPE_CHECKING, NamedTuple, TypeAlias

import numpy as np

from .. import _core
from .matrix import INDEX_BYTES, VALUE_BYTES, Matrix, _check_shape

if TYPE_CHECKING:
    import numpy.typing as npt

    from .matrix import SparseLike

#: What every function's matrix argument takes, for type checkers (:func:`as_matrix`): a Matrix, what
#: :class:`Matrix` is made from, or the path of a Matrix Market file.
MatrixLike: TypeAlias = "Matrix | SparseLike | str | os.PathLike[str]"


def load(path: str | os.PathLike[str], *, dtype: npt.DTypeLike | None = None) -> Matrix:
    """Read a Matrix Market file (``.mtx``, gzip- or bzip2-compressed or not) into a :class:`Matrix`.

    Symmetric and skew-symmetric files are expanded to their full pattern; pattern files get values
    1.0; integer files become float64 (converted before duplicates are summed). The file is
    untrusted: the header (banner and size line) is read and checked first (a UTF-8 byte-order
    mark before the banner is skipped), so that a file declaring a matrix too large for int32
    indices or for the memory available is refused before its body is read; the body is then parsed completely by the C core (``csrc/mmread.c``): every
    byte and every token of every line, or refused with the line number. Fortran's D exponent
    (``1D3``, ``2.5d-1``) is read as E on purpose, and a pattern file's line may carry one number after
    its indices (SuiteSparse's Pajek graphs list weights so): it is checked, then dropped.

    Parameters
    ----------
    path : str or path-like
    dtype : {'float32', 'float64'}, optional

    Raises
    ------
    FileNotFoundError
        No such file.
    IsADirectoryError
        ``path`` is a directory.
    ValueError
        ``path`` is not a regular file (a FIFO, a device); it is compressed otherwise than with gzip
        or bzip2 (xz, zstd, lz4), an archive (zip, 7-Zip, tar) or UTF-16 text (the message says which
        and how to get an ASCII ``.mtx``); or it is not valid Matrix Market: the message names the
        line and what is wrong (the banner, the size line, a control byte, a token that is not a
        whole number such as ``1,5`` or ``0x1p3``, an index outside the matrix, an extra token, more
        or fewer entries than declared, a finite number past float64 such as ``1e400``: write ``inf``
        where inf is meant; a value of more than 1100 characters: any finite double written out in
        full is shorter, so write it with an exponent). Also: an empty matrix or one past int32; more
        than :data:`MAX_HEADER_LINES` lines or :data:`MAX_HEADER_BYTES` bytes before the size line; a
        body longer than :func:`max_body_bytes`; a skew-symmetric file storing a diagonal entry; a
        symmetric, skew-symmetric or hermitian file storing entries on both sides of the diagonal
        (one triangle is stored, the other implied); finite duplicate entries whose sum is past
        float64 (the message names the entry).
    MemoryError
        Reading the declared matrix would need more memory than is available (the message gives
        both); see :func:`load_bytes`.
    TypeError
        Complex values.
    """
    path = os.fspath(path)
    _check_regular_file(path)
    try:
        with _open_binary(path) as f:
            h = _read_header(f, path)
            _check_declared(h, path)
            body = _read_body(f, h, path)
    except (OSError, EOFError, zlib.error) as exc:  # a broken gzip or bzip2 stream, a read error
        raise ValueError(f"pyspmv.load(): {path!r} is not a valid Matrix Market file, or cannot be read: {exc}") from None
    try:
        row, col, val = _core.mm_read(body, h.header_lines + 1, _MM_FORMAT[h.format], _MM_FIELD[h.field],
                                      h.nrows, h.ncols, h.entries)
    except ValueError as exc:
        raise ValueError(f"pyspmv.load(): {path!r} is not a valid Matrix Market file: {exc}.") from None
    del body
    if row is None or col is None:  # array: column-major, one triangle of a symmetric matrix
        row, col = _array_positions(h)
    if val is None:
        val = np.ones(row.size)
    if h.format == "array":  # a dense file's zeros are not entries
        keep = val != 0
        row, col, val = row[keep], col[keep], val[keep]
    row, col, val = _expand_symmetry(row, col, val, h, path)
    base = os.path.basename(path)
    for ext in (".gz", ".bz2", ".mtx"):
        base = base.removesuffix(ext)
    import scipy.sparse as sp  # `import pyspmv` imports this module (as_matrix): scipy waits for a load
    try:
        return Matrix(sp.coo_array((val, (row, col)), shape=(h.nrows, h.ncols)), dtype=dtype, name=base)
    except ValueError as exc:
        raise ValueError(f"pyspmv.load(): {path!r}: {exc}") from None


def as_matrix(A: MatrixLike, name: str = "A") -> Matrix:
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


def _check_regular_file(path: str) -> None:
    """Refuse what is not a regular file before opening it (opening a FIFO would block)."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"pyspmv.load(): no such file: {path!r}") from None
    except OSError as exc:
        raise ValueError(f"pyspmv.load(): {path!r} cannot be read: {exc.strerror}") from None
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(f"pyspmv.load(): {path!r} is a directory; give a Matrix Market file (.mtx, .mtx.gz).")
    if not stat.S_ISREG(mode):
        raise ValueError(f"pyspmv.load(): {path!r} is not a regular file (a FIFO, socket or device); give a Matrix "
                         "Market file (.mtx, .mtx.gz).")


def _array_positions(h: MMHeader) -> tuple[np.ndarray, np.ndarray]:
    """Row and column of each value of an array file, in its column-major order (the lower triangle
    only, diagonal included unless skew-symmetric, when the file is not general)."""
    if h.symmetry == "general":
        k = np.arange(h.entries, dtype=np.int64)
        return (k % h.nrows).astype(np.int32), (k // h.nrows).astype(np.int32)
    n, skip = h.nrows, 1 if h.symmetry == "skew-symmetric" else 0
    per_col = np.maximum(n - skip - np.arange(n, dtype=np.int64), 0)
    col = np.repeat(np.arange(n, dtype=np.int64), per_col)
    start = np.cumsum(per_col) - per_col  # first position of each column
    row = np.arange(col.size, dtype=np.int64) - start[col] + col + skip
    return row.astype(np.int32), col.astype(np.int32)


def _expand_symmetry(row: np.ndarray, col: np.ndarray, val: np.ndarray, h: MMHeader,
                     path: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The full pattern of a symmetric, skew-symmetric or hermitian file (general: as read).

    The file stores one triangle (the lower, by the format; the upper is accepted too); a file storing
    entries on both sides would have every off-diagonal entry doubled, so it is refused."""
    if h.symmetry == "general":
        return row, col, val
    if h.symmetry == "skew-symmetric":
        diag = np.flatnonzero(row == col)
        if diag.size:
            k = int(diag[0])
            raise ValueError(f"pyspmv.load(): {path!r} is skew-symmetric but stores the diagonal entry "
                             f"({row[k] + 1}, {col[k] + 1}) = {val[k]}; Matrix Market skew-symmetric files "
                             "store the strictly lower triangle only.")
    lower, upper = np.flatnonzero(row > col), np.flatnonzero(row < col)
    if lower.size and upper.size:
        a, b = int(lower[0]), int(upper[0])
        raise ValueError(f"pyspmv.load(): {path!r} is {h.symmetry} but stores entries on both sides of the diagonal, "
                         f"({row[a] + 1}, {col[a] + 1}) below and ({row[b] + 1}, {col[b] + 1}) above it; a "
                         f"{h.symmetry} file stores one triangle and implies the other (read as it is, every "
                         "off-diagonal entry would count twice). Declare it 'general' if it holds the whole matrix.")
    off = row != col
    sign = -1.0 if h.symmetry == "skew-symmetric" else 1.0
    return (np.concatenate([row, col[off]]), np.concatenate([col, row[off]]),
            np.concatenate([val, sign * val[off]]))


# -- Matrix Market header: read and checked before the body -------------------------------------

#: Header words of the NIST Matrix Market format that pyspmv reads ('double' is fast_matrix_market's
#: synonym of 'real').
MM_FORMATS = ("coordinate", "array")
MM_FIELDS = ("real", "double", "integer", "pattern")
MM_SYMMETRIES = ("general", "symmetric", "skew-symmetric", "hermitian")
_MM_FORMAT = {"coordinate": _core.MM_COORDINATE, "array": _core.MM_ARRAY}
_MM_FIELD = {"real": _core.MM_REAL, "double": _core.MM_REAL, "integer": _core.MM_INTEGER, "pattern": _core.MM_PATTERN}
_MAX_LINE = 1 << 16
#: Lines and bytes before the size line (banner and comments) that :func:`load` reads at most: real
#: headers hold a few dozen lines; a compressed file of endless comments is refused, not read for minutes.
MAX_HEADER_LINES = 100_000
MAX_HEADER_BYTES = 1 << 24


def max_body_bytes(entries: int) -> int:
    """Bytes of a body of ``entries`` entry lines that :func:`load` reads at most: 128 per entry (a
    line of two 10-digit indices and a 17-digit value takes about 50) and 1 MiB for comments."""
    return (1 << 20) + 128 * entries


class MMHeader(NamedTuple):
    """A Matrix Market file's banner and size line; ``header_lines`` counts lines up to the size
    line; ``entries`` is how many entry lines the body holds (one triangle of a symmetric file)."""

    format: str
    field: str
    symmetry: str
    nrows: int
    ncols: int
    nnz: int
    header_lines: int
    entries: int


#: Magic numbers of compressions and archives that :func:`load` does not read: what each is, and how to
#: get the ``.mtx`` out of it.
_UNREAD_MAGIC = ((b"\xfd7zXZ\x00", "xz-compressed", "xz -d"), (b"(\xb5/\xfd", "zstd-compressed", "zstd -d"),
                 (b"\x04\x22\x4d\x18", "lz4-compressed", "lz4 -d"), (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive", "7z x"),
                 (b"PK\x03\x04", "a zip archive", "unzip"))


def _compression(path: str) -> str:
    """'gzip', 'bzip2' or '' by the file's magic number; a compression or archive that :func:`load`
    does not read is refused saying which it is."""
    with open(path, "rb") as f:
        magic = f.read(8)
    for head, what, tool in _UNREAD_MAGIC:
        if magic.startswith(head):
            raise ValueError(f"pyspmv.load(): {path!r} is {what}; pyspmv reads Matrix Market files plain or "
                             f"gzip- or bzip2-compressed (.mtx, .mtx.gz, .mtx.bz2). Extract the .mtx first ({tool}).")
    return "gzip" if magic[:2] == b"\x1f\x8b" else "bzip2" if magic[:3] == b"BZh" else ""


def _banner_text(raw: bytes, bad: str) -> str:
    """The first line's bytes as text: a UTF-8 byte-order mark before it is skipped (editors on
    Windows write one); UTF-16 text, a tar archive and other bytes past ASCII are refused saying so."""
    raw = raw.removeprefix(b"\xef\xbb\xbf")
    if raw[:2] in (b"\xff\xfe", b"\xfe\xff") or raw[:4] in (b"%\x00%\x00", b"\x00%\x00%"):
        raise ValueError(f"{bad}: it is UTF-16 text; Matrix Market files are ASCII. Convert it first "
                         "(iconv -f UTF-16 -t ASCII).")
    if raw[257:262] == b"ustar":
        raise ValueError(f"{bad}: it is a tar archive (SuiteSparse's downloads are .tar.gz); extract the .mtx "
                         "from it first (tar xzf).")
    if not raw.isascii():
        k = next(k for k, b in enumerate(raw) if b >= 0x80)
        raise ValueError(f"{bad}: its first line holds the byte 0x{raw[k]:02x} at position {k}; Matrix Market "
                         "files are ASCII text starting '%%MatrixMarket matrix'.")
    return raw.decode("ascii")


def _open_binary(path: str) -> IO[bytes]:
    """``path`` opened for reading bytes, decompressed by its magic number whatever its name."""
    kind = _compression(path)
    if kind:
        return (gzip.open if kind == "gzip" else bz2.open)(path, "rb")  # type: ignore[return-value]
    return open(path, "rb")


def _read_header(f: IO[bytes], path: str) -> MMHeader:
    """Banner, comments and size line of the open file ``f``, which is left at the body's start."""
    bad = f"pyspmv.load(): {path!r} is not a valid Matrix Market file"
    try:
        banner = _banner_text(f.readline(_MAX_LINE), bad)
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
        if fmt == "array" and field == "pattern":
            raise ValueError(f"{bad}: an array file cannot have the field 'pattern' (it lists every value).")
        lineno, line, nbytes = 1, b"%", len(banner)
        while line.startswith(b"%") or not line.strip():
            line = f.readline(_MAX_LINE)
            lineno += 1
            nbytes += len(line)
            if not line:
                raise ValueError(f"{bad}: it ends before its size line.")
            if lineno > MAX_HEADER_LINES or nbytes > MAX_HEADER_BYTES:
                raise ValueError(f"{bad}: no size line within its first {MAX_HEADER_LINES} lines and "
                                 f"{MAX_HEADER_BYTES} bytes (pyspmv.matrices.mmio.MAX_HEADER_LINES, MAX_HEADER_BYTES); "
                                 "a Matrix Market header holds a few comment lines.")
    except (UnicodeDecodeError, EOFError) as exc:  # binary junk
        raise ValueError(f"{bad}: {exc}") from None
    sizes = line.split()
    want = 3 if fmt == "coordinate" else 2
    if len(sizes) != want or not all(w.isdigit() and w.isascii() for w in sizes):
        names = "nrows ncols nnz" if want == 3 else "nrows ncols"
        raise ValueError(f"{bad}: line {lineno}, the size line, must hold {want} non-negative integers "
                         f"({names}). Got {line[:80].decode('ascii', 'replace')!r} instead.")
    n = [int(w) for w in sizes]
    if want == 3:
        entries = nnz = n[2]
    else:
        nnz = n[0] * n[1]
        side = min(n[0], n[1])  # an array file of a square matrix lists one triangle unless general
        entries = (nnz if sym == "general" else side * (side - 1) // 2 if sym == "skew-symmetric"
                   else side * (side + 1) // 2)
    return MMHeader(fmt, field, sym, n[0], n[1], nnz, lineno, entries)


def _read_body(f: IO[bytes], h: MMHeader, path: str) -> bytes:
    """The rest of ``f``, refused past :func:`max_body_bytes` before more is read."""
    cap = max_body_bytes(h.entries)
    body = f.read(cap + 1)
    if len(body) > cap:
        raise ValueError(f"pyspmv.load(): {path!r} declares {h.entries} entries, but its body runs past "
                         f"{cap} bytes (pyspmv.matrices.mmio.max_body_bytes: 128 per entry and 1 MiB of comments).")
    return body


def load_bytes(nrows: int, nnz: int) -> int:
    """Peak bytes :func:`load` needs for a file of ``nrows`` rows and ``nnz`` entries (after
    symmetric expansion), an estimate: the parsed triplets (int32 row and column, float64 value,
    twice while a symmetric file is expanded), then scipy's CSR (int32 index and float64 value per
    entry, indptr of ``nrows + 1``, made twice)."""
    i, v = INDEX_BYTES, VALUE_BYTES["float64"]
    return nnz * (i + i + v) * 2 + nnz * (i + v) * 2 + (nrows + 1) * (8 + i)


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
    need = load_bytes(h.nrows, entries) + max_body_bytes(h.entries)
    avail = available_memory()
    if avail is not None and need > avail:
        raise MemoryError(f"pyspmv.load(): {path!r} declares {h.nrows}x{h.ncols} with {h.nnz} entries; reading it "
                          f"needs about {need / 1e9:.3g} GB, more than the {avail / 1e9:.3g} GB of memory available.")
