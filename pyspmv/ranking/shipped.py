"""The shipped default models (:func:`default_model`), read once per process, one value type at a time.

The shipped models (``pyspmv/data/default_*.pyspmv``) are stored uncompressed, their forests' leaf vectors kept
once each (``tools/store_models.py``): a process's first :func:`pyspmv.rank` reads the one table it ranks with
(``load_model(path, dtypes=...)``), 4 to 5 MB, without decompressing anything and without writing anywhere
(benchmarks/results/cold_start.md). Before, they were LZMA-compressed and read through uncompressed copies
written to ``$PYSPMV_HOME/cache``, which nothing reads any more: that folder can be deleted.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import threading
import zipfile
from importlib import resources

from .._params import OneOf, validate
from ..matrices.configs import DEVICES
from ..matrices.matrix import DTYPES
from .modelfile import load_model
from .portable import set_default_convert_fit
from .rankmodel import RankModel

#: File names of the shipped default models (pyspmv/data/), per device.
DEFAULT_FILES = {"cpu": "default_cpu.pyspmv", "cuda": "default_h100.pyspmv"}

#: device -> its shipped default, holding the tables read so far: one object per device and process, whose
#: tables are completed as value types are asked for (a model's warnings and prepared rankings go by the object).
_MODELS: dict[str, RankModel] = {}
#: The devices whose shipped default holds every table of its file.
_WHOLE: set[str] = set()
_LOCK = threading.RLock()


def _has(device: str, dtype: str | None) -> RankModel | None:
    rm = _MODELS.get(device)
    if rm is not None and (device in _WHOLE or (dtype is not None and dtype in rm.tables)):
        return rm
    return None


def _default(device: str, dtype: str | None = None) -> RankModel:
    """The shipped default of ``device`` holding at least the table of ``dtype`` (None: every table)."""
    rm = _has(device, dtype)
    if rm is not None:
        return rm
    with _LOCK:                                 # two threads' first rank(): one reads
        rm = _has(device, dtype)
        if rm is not None:
            return rm
        res = resources.files("pyspmv").joinpath("data", DEFAULT_FILES[device])
        if not res.is_file():
            raise FileNotFoundError(f"pyspmv ships no default model for device {device!r} ({DEFAULT_FILES[device]} is "
                                    "missing); train one with `pyspmv train-default --into-package` or pass model=.")
        rm = _MODELS.get(device)
        with resources.as_file(res) as path:
            if dtype is not None:
                want = {dtype}
            else:                               # the value types of the file, from its directory, less those read
                with zipfile.ZipFile(path) as zf:
                    want = {n.split("/", 1)[0] for n in zf.namelist() if "/" in n} - set(rm.tables if rm else ())
            new = load_model(path, dtypes=want) if want else None
        if rm is None:
            assert new is not None
            new.origin = f"the shipped {device} default ({DEFAULT_FILES[device]})"
            _MODELS[device] = rm = new
        elif new is not None:
            tables = {**new.tables, **rm.tables}
            rm.tables = {d: tables[d] for d in sorted(tables, key=DTYPES.index)}   # load_model's: DTYPES only
        if dtype is None:
            _WHOLE.add(device)
        return rm


def default_model(device: str = "cuda") -> RankModel:
    """The embedded default model of ``device``: ``'cuda'`` (trained on the H100 dataset) or ``'cpu'``.

    Trained from ``datasets/`` by ``pyspmv train-default --into-package`` and shipped in the package; read
    once per process (:mod:`pyspmv.ranking.shipped`).
    :func:`rank` uses it unless ``pyspmv calibrate`` saved a model calibrated for this machine
    (:func:`calibrated_model`).
    """
    validate("default_model()", {"device": OneOf(DEVICES)}, locals())
    return _default(device)


def default_for(device: str, dtype: str) -> RankModel:
    """What :func:`rank` ranks ``dtype`` with of the shipped default of ``device``: the object
    :func:`default_model` returns, read as far as the table of ``dtype`` (a process's first rank() reads one of
    the file's two tables: half the reading; the same arrays, so the same ranking). The other tables are read
    when asked for (:func:`default_model` reads them all)."""
    if device not in DEVICES or dtype not in DTYPES:
        return default_model(device)
    return _default(device, dtype)


def _default_convert_fit(device: str) -> dict[str, list[float]] | None:
    """The shipped default model's conversion-cost fit, for :func:`pyspmv.portable` of an estimator fitted
    without conversion times."""
    try:
        return default_model(device).meta.get("convert_ms")
    except (FileNotFoundError, ValueError):
        return None


set_default_convert_fit(_default_convert_fit)
