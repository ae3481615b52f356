"""The portable form of a model: plain arrays that the C core evaluates (``csrc/rank.c``).

A :class:`RankModel` is what :func:`pyspmv.rank`, :func:`pyspmv.export_c` and :func:`pyspmv.save_model`
work on: for each value type, the configurations it ranks (ids, in the C configuration table's
layout) and a :class:`Spec`, the ``spmv_model`` fields as NumPy arrays. :func:`portable` builds one
from a fitted :mod:`pyspmv.models` estimator by reading its fitted attributes; the evaluation itself is
the C core's, the same source an exported header carries.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import weakref
from collections.abc import Callable
from typing import Any, Protocol, TypeAlias

import numpy as np

from .._params import OneOf, validate
from ..matrices.configs import DEVICES, config, configs
from ..matrices.features import H100
from ..matrices.matrix import DTYPES
from .layout import Layout
from .rankmodel import RankModel


def guess_device(model: Any) -> str:
    """The device of the configurations the fitted model knows, as the core parses them: its ``configs_``
    ids, or its group keys (``groups_``, ``labels_``: a configuration id or a thread mapping, with the
    value type's ``@f32``/``@f64`` suffix); 'cpu' where any is a CPU configuration, else 'cuda'."""
    keys: list[Any] = list(getattr(getattr(model, "configs_", None), "index", ()))
    for v in (getattr(model, "groups_", None), getattr(model, "labels_", None)):
        if v is not None and len(v):
            keys += [str(k).rsplit("@", 1)[0] for a in v for k in np.ravel(np.asarray(a, dtype=object))]
    devices = set()
    for k in dict.fromkeys(str(k) for k in keys):
        try:
            devices.add(config(k).device)
        except ValueError:
            continue
    return "cpu" if "cpu" in devices else "cuda"


class FittedEstimator(Protocol):
    """A fitted estimator of :mod:`pyspmv.models`, as :func:`portable` reads it (for type checkers): it builds
    its own table for a layout of configurations."""

    def _portable_table(self, layout: Layout) -> object: ...


#: What the ``model`` parameters of :func:`portable`, :func:`pyspmv.export_c` and :func:`pyspmv.save_model`
#: take; :func:`pyspmv.rank` and :class:`pyspmv.Operator` also take the path of a saved model.
ModelLike: TypeAlias = RankModel | FittedEstimator


def portable(model: ModelLike, device: str | None = None, dtypes: tuple[str, ...] = DTYPES) -> RankModel:
    """The portable form of a fitted pyspmv.models estimator, ranking ``configs(device)`` (or, on the
    user's own schema, the configurations it was fitted on).

    Parameters
    ----------
    model : a fitted estimator of ``pyspmv.models.MODELS`` (it builds its own table,
        ``_portable_table(layout)``), or a RankModel (returned as is)
    device : {'cpu', 'cuda'}, optional
        Whose configurations to rank; default: the device of the configurations the model knows. A
        model fitted on the user's own schema ranks its own configurations from its own features
        (``RankModel.features``); its device must be None.
    dtypes : tuple of str
        Value types to make tables for; those without a single known configuration are left out.

    Its ``meta['convert_ms']`` (what :func:`pyspmv.rank`'s ``n_calls`` needs) is the estimator's own
    conversion-cost fit (``convert_ms_``, made when it was fitted with conversion times), else the
    shipped default model's of ``device``, recorded as ``meta['convert_ms_from']``. Value types the
    estimator was not trained on (``value_types_``) get no table. Its ``precision`` is what the estimator
    states for ``device`` (``_portable_precision``, by device: a ForestModel's is the default recipe's), else None.

    Raises
    ------
    TypeError
        For estimators with no portable form.
    """
    if isinstance(model, RankModel):
        return model
    # Converted once per fitted state: the fingerprint is the identity of every fitted attribute,
    # which a refit replaces.
    state = getattr(model, "__dict__", {})
    key = (device, tuple(dtypes), tuple((k, id(v)) for k, v in sorted(state.items()) if k.endswith("_")))
    try:
        hit = _CACHE.get(model)
    except TypeError:                                   # not weak-referenceable or unhashable
        hit = None
    if hit is not None and hit[0] == key:
        return hit[1]
    rm = _portable(model, device, dtypes)
    try:
        _CACHE[model] = (key, rm)
    except TypeError:
        pass
    return rm


_CACHE: weakref.WeakKeyDictionary[Any, tuple[Any, RankModel]] = weakref.WeakKeyDictionary()

#: The shipped default model's conversion-cost fit of a device, or None: what :func:`portable` records for
#: an estimator fitted without conversion times. The shipped models are read above this module
#: (:mod:`pyspmv.ranking.shipped`, through :mod:`pyspmv.ranking.modelfile`, which builds on it), so the reader is handed
#: down once, by :mod:`pyspmv.ranking.shipped` as it is imported (``import pyspmv`` imports it).
_default_convert_fit: Callable[[str], dict[str, list[float]] | None] | None = None


def set_default_convert_fit(fn: Callable[[str], dict[str, list[float]] | None]) -> None:
    """Set where :func:`portable` finds the shipped default model's conversion-cost fit of a device."""
    global _default_convert_fit
    _default_convert_fit = fn


def _portable(model: Any, device: str | None, dtypes: tuple[str, ...]) -> RankModel:
    build = getattr(model, "_portable_table", None)
    if not callable(build):
        raise TypeError(f"The 'model' parameter must be a fitted pyspmv.models estimator or a RankModel. Got "
                        f"{type(model).__name__} instead; exportable: the estimators of pyspmv.models.MODELS.")
    from sklearn.utils.validation import check_is_fitted
    check_is_fitted(model)
    schema = getattr(model, "schema_", None)
    own = schema is None or schema.own
    if not own and device is not None:
        raise ValueError(f"The 'device' parameter must be None for a model on your own schema: it ranks the "
                         f"configurations it was fitted on ({len(model.configs_)}), not pyspmv's. Got {device!r}.")
    if own:
        device = guess_device(model) if device is None else device
        validate(None, {"device": OneOf(DEVICES)}, locals())
        cfgs = configs(device)
    trained = getattr(model, "value_types_", None)          # None: fitted before pyspmv recorded them
    tables = {}
    for dtype in (d for d in dtypes if trained is None or d in trained):
        layout = Layout.pyspmv(cfgs, dtype) if own else Layout.own(model.configs_, schema.features, dtype)
        t = build(layout)
        if t is not None and (t.group >= 0).any():
            tables[dtype] = t
    if not tables:
        raise ValueError(f"The model ranks no configuration of device {device!r}: it was trained on another device's "
                         "configurations." if own else "The model ranks none of its configurations.")
    score = getattr(model, "_portable_score", "ms")
    src = f"{type(model).__name__}({', '.join(f'{k}={v!r}' for k, v in model.get_params().items())})"
    if not own:
        return RankModel(None, tables, source=src, score=score, features=schema.features)
    precision = (getattr(model, "_portable_precision", None) or {}).get(device)   # the estimator's own statement
    return RankModel(device, tables, source=src, gpu=dict(H100), score=score, meta=_convert_meta(model, device),
                     precision=precision)


def _convert_meta(model: Any, device: str) -> dict[str, Any]:
    """``meta['convert_ms']``: the estimator's own conversion-cost fit, else that of the shipped default
    model of ``device`` (``meta['convert_ms_from']`` says so), else none."""
    fit = getattr(model, "convert_ms_", None)
    if fit:
        return {"convert_ms": {k: list(v) for k, v in fit.items()}}
    fit = _default_convert_fit(device) if _default_convert_fit is not None else None
    return {"convert_ms": fit, "convert_ms_from": f"the default {device} model"} if fit else {}
