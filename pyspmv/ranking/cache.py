"""The shipped default models (:func:`default_model`), and the uncompressed copies of them that make a
process's first rank() fast.

The shipped models (``pyspmv/data/default_*.pyspmv``) are LZMA-compressed: reading one takes 0.2 to
0.4 s on the 2-core dev VM, most of a process's first :func:`pyspmv.rank`. :func:`load_shipped`
reads it once, writes its members uncompressed to ``$PYSPMV_HOME/cache/`` (:func:`cache_dir`) and
reads that copy afterwards (about 20 ms; benchmarks/results/cold_start.md).

A copy is trusted only where it matches: its name carries a digest of what the source's zip
directory declares of every member (name, CRC-32 and size of the uncompressed bytes, read without
decompressing anything), the copy's directory must declare the same members, stored, and zipfile
checks each member's bytes against its CRC-32 as it reads them. The copy is then read by
:func:`pyspmv.load_model` like any model file, every bound and check of it in force. A copy that is
missing, damaged or does not match is written again from the source; one that cannot be written (a
read-only home, a full disk) leaves the source read as before. Nothing here is ever fatal that
reading the source would not be: an error names the source. Delete the folder at any time.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
import zipfile
from functools import cache
from importlib import resources
from pathlib import Path

from ..devices.machine import home
from ..matrices.configs import DEVICES
from .modelfile import _array_limit, _check_declared, _Corrupt, load_model
from .portable import set_default_convert_fit
from .rankmodel import RankModel

#: File names of the shipped default models (pyspmv/data/), per device.
DEFAULT_FILES = {"cpu": "default_cpu.pyspmv", "cuda": "default_h100.pyspmv"}


@cache
def _default(device: str) -> RankModel:
    res = resources.files("pyspmv").joinpath("data", DEFAULT_FILES[device])
    if not res.is_file():
        raise FileNotFoundError(f"pyspmv ships no default model for device {device!r} ({DEFAULT_FILES[device]} is "
                                "missing); train one with `pyspmv train-default --into-package` or pass model=.")
    with resources.as_file(res) as path:
        rm = load_shipped(path)             # through an uncompressed copy in $PYSPMV_HOME/cache
    rm.origin = f"the shipped {device} default ({DEFAULT_FILES[device]})"
    return rm


def default_model(device: str = "cuda") -> RankModel:
    """The embedded default model of ``device``: ``'cuda'`` (trained on the H100 dataset) or ``'cpu'``.

    Trained from ``datasets/`` by ``pyspmv train-default --into-package`` and shipped in the package; read
    once per process, through an uncompressed copy that the first use writes to ``$PYSPMV_HOME/cache``
    (:mod:`pyspmv.ranking.cache`).
    :func:`rank` uses it unless ``pyspmv calibrate`` saved a model calibrated for this machine
    (:func:`calibrated_model`).
    """
    if device not in DEVICES:
        raise ValueError(f"The 'device' parameter of default_model() must be one of {DEVICES}. Got {device!r} "
                         "instead.")
    return _default(device)


def _default_convert_fit(device: str) -> dict[str, list[float]] | None:
    """The shipped default model's conversion-cost fit, for :func:`pyspmv.portable` of an estimator fitted
    without conversion times."""
    try:
        return default_model(device).meta.get("convert_ms")
    except (FileNotFoundError, ValueError):
        return None


set_default_convert_fit(_default_convert_fit)


#: Version of the copies' layout, part of their digest: a change makes older copies unused.
CACHE_VERSION = 1
#: Copies of one shipped file kept (other installations sharing the folder may ship other ones).
KEEP = 3


def cache_dir() -> Path:
    """The folder of the copies: ``$PYSPMV_HOME/cache`` (:func:`pyspmv.devices.machine.home`)."""
    return home() / "cache"


def _members(infos: list[zipfile.ZipInfo]) -> list[tuple[str, int, int]]:
    return [(i.filename, i.CRC, i.file_size) for i in infos]


def _copy_name(src: Path, members: list[tuple[str, int, int]]) -> str:
    text = json.dumps([CACHE_VERSION, members])
    return f"{src.stem}-{hashlib.sha256(text.encode()).hexdigest()[:20]}{src.suffix}"


def load_shipped(path: str | os.PathLike[str]) -> RankModel:
    """:func:`pyspmv.load_model` of a shipped model file, through its uncompressed copy (module docstring)."""
    src = Path(path)
    try:
        with zipfile.ZipFile(src) as zf:
            infos = zf.infolist()
    except (OSError, zipfile.BadZipFile, EOFError, ValueError):
        return load_model(src)                              # its error, naming the source
    if all(i.compress_type == zipfile.ZIP_STORED for i in infos):
        return load_model(src)                              # nothing to gain
    members = _members(infos)
    copy = cache_dir() / _copy_name(src, members)
    rm = _read_copy(copy, members)
    if rm is None and _write_copy(src, copy):
        rm = _read_copy(copy, members)
    return rm if rm is not None else load_model(src)


def _read_copy(copy: Path, members: list[tuple[str, int, int]]) -> RankModel | None:
    """The model of ``copy`` where it declares ``members``, stored, and reads as a model file; else None."""
    try:
        with zipfile.ZipFile(copy) as zf:
            infos = zf.infolist()
        if _members(infos) != members or any(i.compress_type != zipfile.ZIP_STORED for i in infos):
            return None
        return load_model(copy)
    except (OSError, ValueError, zipfile.BadZipFile, EOFError):
        return None


def _write_copy(src: Path, copy: Path) -> bool:
    """Write ``src``'s members to ``copy`` uncompressed, byte for byte, through a temporary file renamed
    into place; False where the source cannot be read (load_model says why) or the copy cannot be
    written. The sizes the source declares are checked against load_model's bounds first."""
    folder = copy.parent
    tmp = None
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, name = tempfile.mkstemp(prefix=f".{copy.name}.", suffix=".tmp", dir=folder)  # one per process and thread
        os.close(fd)
        tmp = Path(name)
        with zipfile.ZipFile(src) as zin:
            infos = zin.infolist()
            _check_declared(infos, *_array_limit())
            with zipfile.ZipFile(tmp, "w", compression=zipfile.ZIP_STORED) as zout:
                zout.comment = f"pyspmv {CACHE_VERSION}: uncompressed copy of {src.name}".encode()[:1024]
                for info in infos:
                    out = zipfile.ZipInfo(info.filename, date_time=info.date_time)
                    with zin.open(info) as fin, zout.open(out, "w", force_zip64=True) as fout:
                        shutil.copyfileobj(fin, fout, 1 << 20)   # zipfile checks the source's CRC-32 at the end
        os.replace(tmp, copy)
    except (OSError, _Corrupt, zipfile.BadZipFile, EOFError, ValueError):
        if tmp is not None:
            with contextlib.suppress(OSError):
                tmp.unlink()
        return False
    _prune(copy)
    return True


def _prune(copy: Path) -> None:
    """Remove all but the :data:`KEEP` newest copies of the same shipped file."""
    stem = copy.name.rsplit("-", 1)[0]
    with contextlib.suppress(OSError):
        others = [p for p in copy.parent.glob(f"{stem}-*{copy.suffix}") if p != copy]
        others.sort(key=lambda p: p.stat().st_mtime, reverse=True)
        for p in others[KEEP - 1:]:
            with contextlib.suppress(OSError):
                p.unlink()
