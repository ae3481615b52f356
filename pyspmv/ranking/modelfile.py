"""Model files: :func:`save_model` writes a model in portable form to a versioned NumPy ``.npz``
archive, :func:`load_model` reads one back, checking it as untrusted input (no pickle, bounded sizes,
every field against the C core's schema, then the core's own check).

:mod:`pyspmv.ranking.shipped` reads the shipped defaults through it, one value type's table at a time
(``load_model(path, dtypes=...)``); they are stored uncompressed (``save_model(..., compress=False)``).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import contextlib
import io
import json
import math
import os
import stat
import struct
import zipfile
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from .._atomic import write_atomically
from .._version import version
from ..matrices.configs import DEVICES
from ..matrices.features import FEATURE_NAMES
from ..matrices.matrix import DTYPES
from .checks import check_model
from .portable import ModelLike, portable
from .precision import DEFAULT_PRECISION, Precision
from .rankmodel import RankModel, Table
from .schema import FORMAT_VERSION, KINDS, ROW_COLUMNS
from .spec import Spec

_MAGIC = "pyspmv-model"
#: Most bytes of arrays a model file may hold, decompressed: 14 times the shipped defaults' 18 MB as they were
#: trained (two value types of 9 MB; 9 MB with their leaf vectors once each), and a 256-tree ForestModel over
#: the H100's 135 configurations. Reading is
#: LZMA's decompression, about 120 MB/s on a 2-core VM: at most about 2 s. Before, 1 GiB let an 84 KB
#: file take 20 s and 1.7 GB to be read.
MAX_MODEL_BYTES = 1 << 28
#: Most bytes of ``header.json`` (configuration ids, scalars, provenance): the shipped defaults' are 4
#: and 13 KB; a model on its own features of 100,000 configurations named in 100 characters fits.
MAX_HEADER_BYTES = 1 << 24
_MAX_MEMBERS = 4096
#: Most bytes a model file may have on disk: its members never take more than they decompress to, bounded
#: above, plus the zip's own records. Checked before anything is read: a file past it is refused unread.
MAX_FILE_BYTES = MAX_MODEL_BYTES + MAX_HEADER_BYTES + (1 << 20)
try:                                    # lzma is optional in a CPython build
    import lzma  # noqa: F401
    _ZIP_COMPRESSION = zipfile.ZIP_LZMA
except ImportError:
    _ZIP_COMPRESSION = zipfile.ZIP_DEFLATED
_MAX_TEXT = 1 << 16


def _spec_meta(spec: Spec, key: str, arrays: dict[str, np.ndarray]) -> dict[str, Any]:
    scalars = {}
    for k, v in spec.fields.items():
        if k == "rank_bytes_pow" and v == 0:
            continue  # its default: the file stays readable by a pyspmv of format version 1 or 2
        if isinstance(v, np.ndarray):
            arrays[f"{key}/{k}"] = v
        else:
            scalars[k] = v.item() if isinstance(v, np.generic) else v
    return {"kind": spec.kind, "scalars": scalars,
            "subs": [_spec_meta(s, f"{key}/sub{i}", arrays) for i, s in enumerate(spec.subs)]}


def save_model(model: ModelLike, path: str | os.PathLike[str], *, device: str | None = None,
               compress: bool = True) -> Path:
    """Save ``model`` in portable form: the one model file format of pyspmv.

    The file is a NumPy ``.npz`` archive: ``header.json`` (format version, pyspmv version, device,
    the feature schema, each value type's configuration ids, scalar fields, the model's precision
    (:attr:`RankModel.precision`), the conversion-cost fit and provenance in ``meta``) and the arrays.
    Load it with :func:`load_model`; no pickle is involved.

    Parameters
    ----------
    model : fitted pyspmv.models estimator (any of ``pyspmv.models.MODELS``) or RankModel
    path : path of the file to write
    device : {'cpu', 'cuda'}, optional
        For estimators: whose configurations; default the model's.
    compress : bool, default True
        LZMA-compress the arrays: a smaller file (the shipped cpu default: 3.1 MB instead of 7.6), most of whose
        reading is decompressing (a tenth of a second and more). False stores them as they are, as the shipped
        defaults are, which the first ``rank()`` of a process reads (benchmarks/results/cold_start.md).

    Returns
    -------
    pathlib.Path

    Raises
    ------
    TypeError
        ``model`` is neither a pyspmv.models estimator nor a RankModel.
    sklearn.exceptions.NotFittedError
        The estimator is not fitted.
    ValueError
        The model fails :func:`pyspmv.ranking.checks.check_model` (a RankModel made by hand, say).
    """
    rm = portable(model, device)
    check_model(rm)
    arrays: dict[str, np.ndarray] = {}
    tables = {}
    for dtype, t in rm.tables.items():
        arrays[f"{dtype}/group"] = np.asarray(t.group, np.int32)
        arrays[f"{dtype}/extra"] = np.asarray(t.extra, np.float64)
        tables[dtype] = {"config_ids": list(t.config_ids), "spec": _spec_meta(t.spec, f"{dtype}/spec", arrays)}
    own = rm.features is not None                  # the model's own features: format version 2
    by_bytes = any(t.spec.fields.get("rank_bytes_pow", 0) != 0 for t in rm.tables.values())  # version 3
    header = {"format": _MAGIC, "version": 3 if by_bytes else 2 if own else 1, "pyspmv": version(),
              "device": rm.device,
              "source": rm.source, "score": rm.score, "gpu": rm.gpu, "meta": rm.meta,
              "precision": None if rm.precision is None else rm.precision._asdict(),
              "feature_names": list(rm.features if own else FEATURE_NAMES),
              "row_columns": [] if own else list(ROW_COLUMNS), "tables": tables}
    if own:
        header["features"] = list(rm.features)
    path = Path(path)
    buf = io.BytesIO()
    members = {"header.json": np.frombuffer(json.dumps(header).encode(), np.uint8), **arrays}
    # An .npz as np.savez writes it, but LZMA-compressed where Python has lzma: a forest's leaf values
    # compress to a third of deflate's (the shipped cpu default: 8.9 MB deflated, 3.1 MB).  np.load
    # and _read_npz read either.
    with zipfile.ZipFile(buf, "w", compression=_ZIP_COMPRESSION if compress else zipfile.ZIP_STORED) as zf:
        for key, arr in members.items():
            with zf.open(f"{key}.npy", "w", force_zip64=True) as fh:
                np.lib.format.write_array(fh, np.asanyarray(arr), allow_pickle=False)
    write_atomically(path, lambda tmp: Path(tmp).write_bytes(buf.getvalue()), path.suffix)   # never read half-written
    return path


class _Corrupt(ValueError):
    """A model file that cannot be read as one (its message names the member or key)."""


def _array_limit() -> tuple[int, str]:
    """Most bytes of arrays a model file may decompress to here, and what sets it."""
    limit, what = MAX_MODEL_BYTES, "pyspmv's limit MAX_MODEL_BYTES"
    try:
        avail = os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
        if avail < limit:
            limit, what = avail, "the memory available"
    except (ValueError, OSError, AttributeError):
        pass
    return limit, what


def _check_declared(infos: list[zipfile.ZipInfo], limit: int, what: str) -> None:
    """The members' sizes as the archive's directory declares them (zipfile stops a member there: it
    cannot expand past it), against :data:`MAX_HEADER_BYTES` for ``header.json`` and ``limit`` for the
    arrays, in all, before anything is decompressed."""
    if len(infos) > _MAX_MEMBERS:
        raise _Corrupt(f"it has {len(infos)} members; a model file has at most {_MAX_MEMBERS}")
    declared = 0
    for info in infos:
        if info.filename == "header.json.npy":
            if info.file_size > MAX_HEADER_BYTES + 4096:      # + the .npy header
                raise _Corrupt(f"member 'header.json' would decompress to {info.file_size} bytes; a model "
                               f"file's header holds at most {MAX_HEADER_BYTES} (MAX_HEADER_BYTES)")
            continue
        declared += info.file_size
        if declared > limit + 4096 * len(infos):
            raise _Corrupt(f"its arrays would decompress to {declared} bytes or more (member {info.filename!r} "
                           f"declares {info.file_size}), past {limit} bytes, {what}")


def native(a: Any) -> Any:
    """``a`` with a native byte order (a file may hold big-endian arrays); other values as they are."""
    if isinstance(a, np.ndarray) and not a.dtype.isnative:
        return a.astype(a.dtype.newbyteorder("="))
    return a


def _open_regular(path: Path) -> io.BufferedReader:
    """``path`` opened for reading where it is a regular file of at most :data:`MAX_FILE_BYTES`; else
    :class:`_Corrupt` saying what it is. Opened without blocking and then checked on the open file, so that
    a FIFO neither blocks nor slips in between a check and the open, and a device (``/dev/zero``) is never
    read."""
    fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))   # FileNotFoundError stands as it is
    try:
        st = os.fstat(fd)
        if stat.S_ISDIR(st.st_mode):
            raise _Corrupt("it is a directory; give the path of a model file (save_model's)")
        if not stat.S_ISREG(st.st_mode):
            raise _Corrupt("it is not a regular file (a FIFO, socket or device), and only a regular file is read "
                           "as a model")
        if st.st_size > MAX_FILE_BYTES:
            raise _Corrupt(f"it holds {st.st_size} bytes, past {MAX_FILE_BYTES} (MAX_FILE_BYTES), more than any "
                           "model file within the decompressed bounds can take")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def _read_npz(path: Path, keep: Any = None) -> dict[str, np.ndarray]:
    """Every array of an ``.npz`` file (with ``keep``, a collection of value types: ``header.json`` and the arrays
    under those value types' folders only), read without pickle. Before anything is decompressed, the
    sizes the archive declares (:func:`_check_declared`: :data:`MAX_HEADER_BYTES` for ``header.json``,
    :data:`MAX_MODEL_BYTES` and the memory available for the arrays); then each array's shape and
    dtype from its ``.npy`` header, before its data is read. The file itself first: a regular file of at most
    :data:`MAX_FILE_BYTES` (:func:`_open_regular`)."""
    limit, what = _array_limit()
    fh = _open_regular(path)
    try:
        zf = zipfile.ZipFile(fh)
    except MemoryError:
        fh.close()
        raise
    except Exception as exc:  # noqa: BLE001 (BadZipFile, OSError, struct.error, ...: all mean not a model)
        fh.close()
        raise _Corrupt(f"it is not a zip archive ({type(exc).__name__}: {exc})") from None
    with fh, zf:
        return _read_members(zf, limit, what, keep)


def _read_members(zf: zipfile.ZipFile, limit: int, what: str, keep: Any = None) -> dict[str, np.ndarray]:
    """Every member of ``zf`` as an array (``keep``: as :func:`_read_npz`), under the bounds of :func:`_read_npz`."""
    out: dict[str, np.ndarray] = {}
    total = 0
    infos = zf.infolist()
    _check_declared(infos, limit, what)
    for info in infos:
        name = info.filename
        if keep is not None and name != "header.json.npy" and name.split("/", 1)[0] not in keep:
            continue
        if not name.endswith(".npy") or name[:-4] in out:
            raise _Corrupt(f"member {name!r} is not a NumPy array of its own")
        key = name[:-4]
        try:
            with zf.open(info) as fh:
                version = np.lib.format.read_magic(fh)
                if version == (1, 0):
                    shape, fortran, dt = np.lib.format.read_array_header_1_0(fh)
                elif version == (2, 0):
                    shape, fortran, dt = np.lib.format.read_array_header_2_0(fh)
                else:
                    raise _Corrupt(f"array {key!r} has .npy version {version}; model files use 1.0 or 2.0")
                if dt.hasobject or dt.kind not in "biuf":
                    raise _Corrupt(f"array {key!r} has dtype {dt}; model files hold numbers only")
                head = fh.tell()
                nbytes = int(np.prod(shape, dtype=object)) * dt.itemsize
                if key == "header.json":
                    if nbytes > MAX_HEADER_BYTES:
                        raise _Corrupt(f"member 'header.json' holds {nbytes} bytes; a model file's header holds at "
                                       f"most {MAX_HEADER_BYTES} (MAX_HEADER_BYTES)")
                else:
                    total += nbytes
                if total > limit:
                    raise _Corrupt(f"array {key!r} of shape {shape} would take the arrays past {limit} bytes, "
                                   f"{what}")
            a = _read_stored(zf, info, head, shape, dt) if not fortran else None
            if a is None:
                with zf.open(info) as fh:
                    a = np.lib.format.read_array(fh, allow_pickle=False)
        except (_Corrupt, MemoryError):
            raise
        except Exception as exc:  # noqa: BLE001 (zlib.error, EOFError, OverflowError, ...: a corrupt member)
            raise _Corrupt(f"array {key!r} cannot be read ({type(exc).__name__}: {exc})") from None
        out[key] = np.ascontiguousarray(native(a))
    return out


def _read_stored(zf: zipfile.ZipFile, info: zipfile.ZipInfo, head: int, shape: tuple[int, ...],
                 dt: np.dtype) -> np.ndarray | None:
    """The array of a member stored uncompressed that holds its ``.npy`` header (``head`` bytes, already read
    through zipfile, which checked the member's local header) and its data, nothing more: read from the file
    straight into the array, and its CRC-32 checked, as zipfile checks it. None for any other member, which
    np.lib.format.read_array reads through zipfile (its chunks cost a copy and twice the fresh memory: the
    shipped defaults, stored, are read in about half the time this way)."""
    count = int(np.prod(shape, dtype=object))
    if info.compress_type != zipfile.ZIP_STORED or info.flag_bits & 0x1 or info.file_size != head + count * dt.itemsize:
        return None
    fp = zf.fp
    assert fp is not None
    fp.seek(info.header_offset)
    local = fp.read(zipfile.sizeFileHeader)
    if len(local) != zipfile.sizeFileHeader:
        return None
    name_len, extra_len = struct.unpack("<2H", local[26:30])
    fp.seek(info.header_offset + zipfile.sizeFileHeader + name_len + extra_len)
    prefix = fp.read(head)
    a = np.empty(count, dtype=dt)
    got = fp.readinto(memoryview(a).cast("B")) if a.nbytes else 0
    if len(prefix) != head or got != a.nbytes:
        raise _Corrupt(f"array {info.filename[:-4]!r} ends before its {a.nbytes} bytes of data")
    if zlib.crc32(a, zlib.crc32(prefix)) != info.CRC:
        raise _Corrupt(f"array {info.filename[:-4]!r} fails its CRC-32 (the file is damaged)")
    return a.reshape(shape)


def _want(cond: bool, what: str, expected: str, got: Any) -> None:
    if not cond:
        raise _Corrupt(f"{what} must be {expected}. Got {got!r} instead" if len(repr(got)) < 200 else
                       f"{what} must be {expected}. Got a {type(got).__name__} instead")


def _spec_load(meta: Any, key: str, arrays: dict[str, np.ndarray], used: set[str], depth: int = 0) -> Spec:
    _want(isinstance(meta, dict) and set(meta) == {"kind", "scalars", "subs"}, f"header entry {key!r}",
          "a dict of 'kind', 'scalars', 'subs'", meta)
    kind, scalars, subs = meta["kind"], meta["scalars"], meta["subs"]
    _want(isinstance(kind, str) and kind in KINDS, f"the model kind of {key!r}", f"one of {tuple(KINDS)}", kind)
    _want(isinstance(scalars, dict), f"the scalars of {key!r}", "a dict", scalars)
    _want(isinstance(subs, list) and (depth == 0 or not subs) and len(subs) <= 64, f"the stages of {key!r}",
          "a list of at most 64 (cascades only, one level)", subs)
    fields: dict[str, Any] = {"rank_bytes_pow": 0.0, **scalars}  # format versions 1 and 2 lack it: by ms alone
    prefix = key + "/"
    for k, a in arrays.items():
        if k.startswith(prefix) and "/" not in k[len(prefix):]:
            f = k[len(prefix):]
            if f in fields:
                raise _Corrupt(f"field {f!r} of {key!r} is both a scalar and an array")
            fields[f] = a
            used.add(k)
    return Spec(kind, fields, [_spec_load(s, f"{key}/sub{i}", arrays, used, depth + 1) for i, s in enumerate(subs)])


def _header(raw: np.ndarray | None, where: str) -> dict[str, Any]:
    """The member ``header.json`` read and its entries' types checked (not the tables' contents)."""
    _want(raw is not None and raw.dtype == np.uint8 and raw.ndim == 1, "the member 'header.json'",
          "1-D uint8 JSON text", None if raw is None else f"{raw.dtype} of shape {raw.shape}")
    assert raw is not None
    header = json.loads(bytes(raw).decode())
    _want(isinstance(header, dict) and header.get("format") == _MAGIC, "the header", f"a {_MAGIC!r} header",
          type(header).__name__)
    version = header.get("version")
    if not isinstance(version, int) or isinstance(version, bool) or version < 1:
        raise _Corrupt(f"its format version must be an int >= 1. Got {version!r} instead")
    if version > FORMAT_VERSION:
        raise _Refused(f"{where} has format version {version!r}; this pyspmv reads up to {FORMAT_VERSION}. "
                       "Upgrade pyspmv or re-export the model.")
    own = header.get("features")
    _want(own is None or isinstance(own, list), "the header's 'features'", "a list or absent", own)
    for k, typ in (("device", type(None) if own is not None else str), ("source", str), ("score", str),
                   ("gpu", dict), ("meta", dict), ("feature_names", list), ("row_columns", list),
                   ("tables", dict)):
        _want(isinstance(header.get(k), typ), f"the header's {k!r}", f"a {typ.__name__}", header.get(k))
    _want(len(header["source"]) <= _MAX_TEXT, "the header's 'source'", f"at most {_MAX_TEXT} characters",
          f"{len(header['source'])} characters")
    return header


def _precision(header: dict[str, Any]) -> Precision | None:
    """The model's :class:`Precision` as the header records it (null: its error was not measured)."""
    if "precision" not in header:
        # Files written before model files recorded the precision (pyspmv 0.3.0 and earlier, the shipped defaults
        # among them): the rule rank() read it by then, from the model's source. A runtime ForestModel has the
        # default recipe's precision of its device; any other model none.
        if header["score"] == "ms" and header["source"].startswith("ForestModel("):
            return DEFAULT_PRECISION.get(header["device"])
        return None
    p = header["precision"]
    if p is None:
        return None
    _want(isinstance(p, dict) and set(p) == set(Precision._fields), "the header's 'precision'",
          "null or a dict of 'tie_tol', 'max_gap' and 'source'", p)
    tie_tol, max_gap, source = _real(p["tie_tol"]), _real(p["max_gap"]), p["source"]
    _want(0.0 <= tie_tol < math.inf, "the precision's 'tie_tol'", "a finite number >= 0", p["tie_tol"])
    _want(1.0 <= max_gap < math.inf, "the precision's 'max_gap'", "a finite number >= 1", p["max_gap"])
    _want(isinstance(source, str) and len(source) <= _MAX_TEXT, "the precision's 'source'",
          f"a str of at most {_MAX_TEXT} characters", source)
    return Precision(tie_tol, max_gap, source)


def _real(v: Any) -> float:
    """A header value as a float: NaN where it is no JSON number (a bool, a str, ...) or an int past float64,
    which the checks then refuse."""
    if not isinstance(v, int | float) or isinstance(v, bool):
        return math.nan
    try:
        return float(v)
    except OverflowError:
        return math.nan


def load_model(path: str | os.PathLike[str], *, dtypes: Any = None) -> RankModel:
    """Load a model saved by :func:`save_model`.

    ``dtypes`` (a collection of value types, e.g. ``("float64",)``) reads only those tables: the arrays of the
    others are neither read nor checked, and the model ranks those value types alone. A value type the file
    has no table for is an error.

    Model files are untrusted: the file is read without pickle, every array's dtype (big-endian ones
    are byte-swapped), shape and length, every scalar's type and range, the GPU properties, the
    precision and the conversion-cost fit are checked against the model kind's schema before the C
    core reads them, and then the C core's own model check runs. A file written before model files
    recorded the precision (:attr:`RankModel.precision`) gets the one its model had then: the default
    recipe's for a runtime ForestModel, else None.

    What a file may cost is bounded, and a file past a bound is refused with its figure and the
    bound:

    - opening it: it must be a regular file (not a FIFO, socket or device, also behind a symlink) of at
      most :data:`MAX_FILE_BYTES`, checked on the open file before a byte is read;
    - reading it: its arrays decompress to at most :data:`MAX_MODEL_BYTES` (256 MiB, and no more
      than the memory available), ``header.json`` to at most :data:`MAX_HEADER_BYTES` (16 MiB), both
      checked on the sizes the archive declares before anything is decompressed; reading takes at
      most about 2 s and twice the arrays' bytes of memory on a 2-core VM;
    - ranking with it: evaluating the model for every configuration of one matrix takes at most
      ``SPMV_MODEL_MAX_STEPS`` = 2^28 steps (``pyspmv._core.MODEL_MAX_STEPS``), counted from the
      model's arrays as the C core evaluates them: per configuration, the inputs, then the longest
      root-to-leaf walk of each tree of its group (a forest: of every tree, plus trees x outputs
      additions), the points of the largest set searched x (inputs + 1 + log2 of its size), the
      support vectors x (inputs + 1), the derived inputs and terms, or the stages' own costs. The
      shipped defaults take 6.6e5 (cuda) and 1.8e5 (cpu); 2^28 takes 0.5 s to 5 s on a 2-core VM,
      and Ctrl-C stops it.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        Everything else, naming the key or field and what was expected: the path is not a regular file
        or is past :data:`MAX_FILE_BYTES`; the file is not a pyspmv model file or is corrupt; it was written by a newer format version; its feature schema or design-row
        columns differ from this pyspmv's; a configuration id it ranks is unknown here, belongs to
        another device or is not one of ``pyspmv.configs(device)``; a field has the wrong type, dtype
        or length; its arrays fail the C core's model check.
    """
    path = Path(path)
    where = f"Model file {str(path)!r}"
    try:
        keep = None if dtypes is None else {str(d) for d in ([dtypes] if isinstance(dtypes, str) else dtypes)}
        arrays = _read_npz(path, keep)
        header = _header(arrays.pop("header.json", None), where)
        own = header.get("features")                 # format 2: a model on its own features
        precision = _precision(header)
        used: set[str] = set()
        raw_tables = {}
        lacking = sorted(keep - set(header["tables"])) if keep is not None else []
        if lacking:
            raise _Refused(f"{where} has no table for value type {lacking[0][:64]!r}; it has "
                           f"{sorted(str(d)[:64] for d in header['tables'])}.")
        for d, m in header["tables"].items():
            if keep is not None and d not in keep:
                continue
            _want(isinstance(m, dict) and set(m) == {"config_ids", "spec"}, f"the header's table {d!r}",
                  "a dict of 'config_ids' and 'spec'", m)
            for k in ("group", "extra"):
                _want(f"{d}/{k}" in arrays, f"the array '{d}/{k}'", "present", None)
                used.add(f"{d}/{k}")
            raw_tables[d] = (m["config_ids"], arrays[f"{d}/group"], arrays[f"{d}/extra"],
                             _spec_load(m["spec"], f"{d}/spec", arrays, used))
        extra_keys = sorted(set(arrays) - used)
        if extra_keys:
            raise _Corrupt(f"array {extra_keys[0]!r} belongs to no field of the model")
    except _Refused:
        raise
    except FileNotFoundError:
        raise
    except _UNREADABLE as exc:
        hint = ""
        # Sniffed only in a regular file: opening a FIFO would block, and its content is not what was refused.
        with contextlib.suppress(OSError, _Corrupt), _open_regular(path) as fh:
            if fh.read(1) == b"\x80":
                hint = (" It looks like a pickle, which pyspmv never reads (reading one runs code); save the estimator "
                        "with pyspmv.save_model() instead.")
        raise ValueError(f"{str(path)!r} is not a pyspmv model file or is corrupt: {exc}.{hint}") from None
    if own is None and (header["feature_names"] != list(FEATURE_NAMES) or header["row_columns"] != list(ROW_COLUMNS)):
        theirs, ours = [str(f)[:64] for f in header["feature_names"]], list(FEATURE_NAMES)
        diff = [f for f in theirs if f not in ours] + [f for f in ours if f not in theirs]
        raise ValueError(f"{where} was made with another feature schema ({len(theirs)} features, "
                         f"{len(header['row_columns'])} design columns) than this pyspmv's ({len(ours)}, "
                         f"{len(ROW_COLUMNS)}); differing: {diff[:6] or 'the order'}. Retrain the model.")
    device = header["device"]
    if own is None and device not in DEVICES:
        raise ValueError(f"{where} names device {device[:64]!r}; known devices: {DEVICES}.")
    tables = {}
    for dtype, (ids, group, extra, spec) in raw_tables.items():
        if dtype not in DTYPES:
            raise ValueError(f"{where} has a table for value type {dtype[:64]!r}; known: {DTYPES}.")
        tables[dtype] = Table(ids, group, extra, spec)
    rm = RankModel(device, tables, source=header["source"], gpu=header["gpu"], score=header["score"],
                   meta=header["meta"], features=own, precision=precision)
    rm.origin = f"the model file {str(path)!r}"
    check_model(rm, where)
    for dtype in tables:
        try:
            rm.capsule(dtype)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{where} fails the model check for {dtype}: {exc}") from None
    return rm


def read_meta(path: str | os.PathLike[str]) -> dict[str, Any]:
    """A model file's ``device`` and ``meta`` (provenance: the measured machine, the dataset), from its
    ``header.json`` alone, under the bounds :func:`load_model` reads with; no table is read or checked.

    Raises
    ------
    FileNotFoundError
        No such file.
    ValueError
        The file is not a pyspmv model file or is corrupt (as :func:`load_model` says).
    """
    path = Path(path)
    try:
        header = _header(_read_npz(path, keep=()).pop("header.json", None), f"Model file {str(path)!r}")
    except _Refused:
        raise
    except FileNotFoundError:
        raise
    except _UNREADABLE as exc:
        raise ValueError(f"{str(path)!r} is not a pyspmv model file or is corrupt: {exc}.") from None
    return {"device": header["device"], "meta": header["meta"]}


class _Refused(ValueError):
    """A readable file that this version refuses (kept apart from corruption)."""


#: What reading a file that is not a model, or a damaged one, raises (each turned into one ValueError).
_UNREADABLE = (_Corrupt, OSError, ValueError, zipfile.BadZipFile, EOFError, UnicodeDecodeError, RecursionError)


def read_model(path: str | os.PathLike[str]) -> RankModel:
    """A model from a file, whatever its suffix: :func:`load_model`. Pickles are refused (reading one
    runs code): the ValueError says to save the estimator with :func:`save_model` instead."""
    return load_model(path)
