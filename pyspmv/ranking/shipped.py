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
from .targets import DEFAULT_FILES, TARGET_DEVICE, check_target, default_file, target_for

#: target -> its shipped default, holding the tables read so far: one object per target and process, whose
#: tables are completed as value types are asked for (a model's warnings and prepared rankings go by the object).
_MODELS: dict[str, RankModel] = {}
#: The targets whose shipped default holds every table of its file.
_WHOLE: set[str] = set()
_LOCK = threading.RLock()


def _has(target: str, dtype: str | None) -> RankModel | None:
    rm = _MODELS.get(target)
    if rm is not None and (target in _WHOLE or (dtype is not None and dtype in rm.tables)):
        return rm
    return None


def _default(target: str, dtype: str | None = None) -> RankModel:
    """The shipped default of ``target`` holding at least the table of ``dtype`` (None: every table)."""
    rm = _has(target, dtype)
    if rm is not None:
        return rm
    with _LOCK:                                 # two threads' first rank(): one reads
        rm = _has(target, dtype)
        if rm is not None:
            return rm
        device, file = TARGET_DEVICE[target], DEFAULT_FILES[target]
        res = default_file(target)
        if not res.is_file():
            raise FileNotFoundError(f"pyspmv ships no default model for target {target!r} ({file} is missing); train "
                                    f"one with `pyspmv train-default --dataset {target} --into-package` or pass model=.")
        rm = _MODELS.get(target)
        with resources.as_file(res) as path:
            if dtype is not None:
                want = {dtype}
            else:                               # the value types of the file, from its directory, less those read
                with zipfile.ZipFile(path) as zf:
                    want = {n.split("/", 1)[0] for n in zf.namelist() if "/" in n} - set(rm.tables if rm else ())
            new = load_model(path, dtypes=want) if want else None
        if rm is None:
            assert new is not None
            new.origin = f"the shipped {device} default ({file})"
            _MODELS[target] = rm = new
        elif new is not None:
            tables = {**new.tables, **rm.tables}
            rm.tables = {d: tables[d] for d in sorted(tables, key=DTYPES.index)}   # load_model's: DTYPES only
        if dtype is None:
            _WHOLE.add(target)
        return rm


def default_model(device: str | None = None, target: str | None = None) -> RankModel:
    """The embedded default model of ``device`` (``'cuda'`` or ``'cpu'``), or of one GPU (``target``).

    Trained from ``datasets/`` by ``pyspmv train-default --into-package`` and shipped in the package; read
    once per process (:mod:`pyspmv.ranking.shipped`). :func:`rank` uses it unless ``pyspmv calibrate`` saved a
    model calibrated for this machine (:func:`calibrated_model`).

    Parameters
    ----------
    device : {'cuda', 'cpu'}, optional
        Default ``'cuda'``, or the device of ``target``.
    target : str, optional
        The measured machine the model was trained on: one of :data:`pyspmv.ranking.targets.TARGETS`
        (``'h200'``, ``'h100'`` for ``cuda``; ``'cpu'``). None: for ``cuda`` the GPU present chooses
        (:func:`pyspmv.ranking.targets.target_for`: by its name, else the nearest shipped GPU by memory
        bandwidth and SM count, with an :class:`pyspmv.OtherMachineWarning`); without a GPU, the newest.

    Raises
    ------
    ValueError
        An unknown ``device`` or ``target`` (the message lists the known ones), or a ``target`` of
        another device.
    """
    validate("default_model()", {"device": OneOf((*DEVICES, None), "or")}, locals())
    if target is not None:
        return _default(check_target(target, device, "default_model()"))
    return _default(target_for(device or "cuda").target)


def default_for(device: str, dtype: str, target: str | None = None) -> RankModel:
    """What :func:`rank` ranks ``dtype`` with of the shipped default of ``device`` (``target``: that one; None:
    :func:`pyspmv.ranking.targets.target_for`'s): the object :func:`default_model` returns, read as far as
    the table of ``dtype`` (a process's first rank() reads one of the file's two tables: half the reading; the
    same arrays, so the same ranking). The other tables are read when asked for (:func:`default_model` reads
    them all)."""
    if device not in DEVICES or dtype not in DTYPES:
        return default_model(device, target)
    return _default(target if target is not None else target_for(device).target, dtype)


def _default_convert_fit(device: str) -> dict[str, list[float]] | None:
    """The shipped default model's conversion-cost fit, for :func:`pyspmv.portable` of an estimator fitted
    without conversion times."""
    try:
        return default_model(device).meta.get("convert_ms")
    except (FileNotFoundError, ValueError):
        return None


set_default_convert_fit(_default_convert_fit)
