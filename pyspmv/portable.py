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
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from . import _core
from .configs import DEVICES, Config, config, configs
from .features import _UNREAD_INDEX, FEATURE_NAMES, H100
from .formats import format_code
from .matrix import as_matrix

#: Design-row columns as the C core lays them out: the features, then the configuration's numeric
#: columns in pyspmv.datasets' X order (its string columns left out); a model's own columns follow.
PARAM_COLUMNS: tuple[str, ...] = ("p_tpv", "p_bs", "p_c", "p_sigma", "p_h", "p_bits", "p_b")
ROW_COLUMNS: tuple[str, ...] = (*FEATURE_NAMES, *PARAM_COLUMNS, "value_bytes", "bytes_moved", "padding_ratio",
                                "launches")
assert len(ROW_COLUMNS) == _core.NCOLS, "csrc/spmv.h's design row and ROW_COLUMNS disagree"
COL = {name: i for i, name in enumerate(ROW_COLUMNS)}

KINDS = {"linear": 1, "trees": 2, "knn": 3, "svm": 4, "formula": 5, "cascade": 6, "constant": 0}
TF = {"identity": 0, "log1p": 1, "log": 2, "log10": 3, "log2": 4, "exp": 5, "expm1": 6, "pow10": 7, "pow2": 8}
KNN_WEIGHTING = {"uniform": 0, "sklearn": 1, "floor": 2}
DTYPES = ("float32", "float64")
VALUE_BYTES = {"float32": 4, "float64": 8}
BIG = float(np.finfo(np.float64).max)
#: Format version of the portable form (save_model files, exported headers).
FORMAT_VERSION = 1


@dataclass
class Spec:
    """One ``spmv_model``: ``kind`` and the C struct's fields by name (``trees.root``, ``knn.k`` ...).

    ``fields`` maps field names to int, float or NumPy arrays (int32, float64, uint8 for
    ``trees.missing_left``); ``subs`` are a cascade's stages.
    """

    kind: str
    fields: dict[str, Any]
    subs: list[Spec] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The dict ``_core.model_new`` parses (without the configuration table)."""
        d = {"kind": KINDS[self.kind], **self.fields}
        if self.kind == "cascade":
            d["cascade.sub"] = [s.to_dict() for s in self.subs]
        return d


def inputs(cols: list[int], tf: str | list[str] = "identity", nan: Any = np.nan, lo: Any = -np.inf,
           hi: Any = np.inf, shift: Any = 0.0, div: Any = 1.0) -> dict[str, np.ndarray]:
    """Input fields of a spec: column, transform, NaN value, clamps, shift and divisor per input."""
    n = len(cols)

    def vec(v: Any) -> np.ndarray:
        return np.ascontiguousarray(np.broadcast_to(np.asarray(v, dtype=np.float64), (n,)))

    tfs = [tf] * n if isinstance(tf, str) else list(tf)
    return {"ninputs": n, "in_col": np.asarray(cols, dtype=np.int32), "in_tf": np.array([TF[t] for t in tfs], np.int32),
            "in_nan": vec(nan), "in_lo": vec(lo), "in_hi": vec(hi), "in_shift": vec(shift), "in_div": vec(div)}


def concat_inputs(*parts: dict[str, np.ndarray]) -> dict[str, Any]:
    """Inputs of several :func:`inputs` calls, in order."""
    out: dict[str, Any] = {"ninputs": sum(p["ninputs"] for p in parts)}
    for k in ("in_col", "in_tf", "in_nan", "in_lo", "in_hi", "in_shift", "in_div"):
        out[k] = np.ascontiguousarray(np.concatenate([p[k] for p in parts]))
    return out


def head(ngroups: int, nextra: int, ins: dict[str, Any], out_tf: str = "identity", out_lo: float = -np.inf,
         out_col: int = -1) -> dict[str, Any]:
    """The fields every spec has."""
    return {"ngroups": int(ngroups), "ncols": _core.NCOLS + int(nextra), **ins, "out_tf": TF[out_tf],
            "out_col": int(out_col), "out_lo": float(out_lo)}


def config_frame(cfgs: list[Config], dtype: str) -> pd.DataFrame:
    """The configuration columns of pyspmv.datasets' X for each configuration (schema.md)."""
    rows = []
    for c in cfgs:
        r: dict[str, Any] = {"config": c.id, "library": c.library, "format": c.format, "kernel": c.kernel or ""}
        r.update({p: float(c.params[p[2:]]) if p[2:] in c.params else np.nan for p in PARAM_COLUMNS})
        r["value_bytes"] = float(VALUE_BYTES[dtype])
        r["launches"] = float(c.launches)
        rows.append(r)
    return pd.DataFrame(rows)


@dataclass
class Table:
    """What a model ranks for one value type: configuration ids, each one's sub-model (group, -1:
    not ranked) and the model's own per-configuration columns, plus the spec."""

    config_ids: list[str]
    group: np.ndarray
    extra: np.ndarray
    spec: Spec
    _capsule: Any = field(default=None, repr=False, compare=False)

    def ranked(self) -> Table:
        """The configurations with a sub-model only (what exported headers and rank() list)."""
        keep = np.asarray(self.group) >= 0
        return Table([c for c, k in zip(self.config_ids, keep, strict=True) if k], self.group[keep],
                     self.extra[keep], self.spec)

    def config_arrays(self, gpu: dict[str, int]) -> dict[str, Any]:
        """The C configuration table (``cfg.*``) and device properties."""
        cfgs = [config(c) for c in self.config_ids]
        n = len(cfgs)
        fr = config_frame(cfgs, "float64")
        unread = [sum(1 << k for k in _UNREAD_INDEX.get(c.format, ())) for c in cfgs]
        return {
            "cfg.n": n, "cfg.nextra": int(self.extra.shape[1]),
            "cfg.format": np.array([format_code(c.format) for c in cfgs], np.int32),
            "cfg.param": np.array([c.format_params for c in cfgs], np.int32).reshape(-1),
            "cfg.unread": np.array(unread, np.int32),
            "cfg.p": np.ascontiguousarray(fr[list(PARAM_COLUMNS)].to_numpy(np.float64)).reshape(-1),
            "cfg.launches": fr["launches"].to_numpy(np.float64),
            "cfg.group": np.ascontiguousarray(self.group, dtype=np.int32),
            "cfg.extra": np.ascontiguousarray(self.extra, dtype=np.float64).reshape(-1),
            "dev": np.array([gpu["sm_count"], gpu["threads_per_sm"], gpu["warp_size"]], np.int32),
        }


class RankModel:
    """A model in portable form: per value type, a :class:`Table` the C core evaluates.

    Made by :func:`portable` from a fitted pyspmv.models estimator, or by :func:`pyspmv.load_model`.
    ``predict(X)`` evaluates rows of pyspmv.datasets' X in C; :func:`pyspmv.rank` ranks a matrix.

    Attributes
    ----------
    device : {'cpu', 'cuda'}
    source : str, the estimator it came from (class and parameters)
    tables : dict, value type -> Table
    gpu : dict, the GPU properties its features use (Guo's strips)
    score : {'ms', 'score'}, whether its output is a runtime or a ranking score (classifiers)
    """

    def __init__(self, device: str, tables: dict[str, Table], *, source: str = "", gpu: dict[str, int] | None = None,
                 score: str = "ms", meta: dict[str, Any] | None = None):
        if device not in DEVICES:
            raise ValueError(f"The 'device' parameter of RankModel must be one of {DEVICES}. Got {device!r} instead.")
        self.device = device
        self.tables = tables
        self.source = source
        self.gpu = dict(H100 if gpu is None else gpu)
        self.score = score
        self.meta = dict(meta or {})

    def __repr__(self) -> str:
        n = {d: int((t.group >= 0).sum()) for d, t in self.tables.items()}
        return f"RankModel({self.source or '?'}, device={self.device!r}, ranks={n})"

    def table(self, dtype: str) -> Table:
        """The table of value type ``dtype``; a ValueError names the ones the model has."""
        if dtype not in self.tables:
            raise ValueError(f"The 'dtype' parameter must be one the model was trained on: {sorted(self.tables)}. "
                             f"Got {dtype!r} instead.")
        return self.tables[dtype]

    def capsule(self, dtype: str) -> Any:
        """The C model of value type ``dtype`` (built once, checked by spmv_model_check)."""
        t = self.table(dtype)
        if t._capsule is None:
            t._capsule = _core.model_new({**t.spec.to_dict(), **t.config_arrays(self.gpu)})
        return t._capsule

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """The C core's prediction (ms, or score) per row of pyspmv.datasets' X; NaN where not ranked."""
        out = np.full(len(X), np.nan)
        vb = X["value_bytes"].to_numpy(np.float64)
        for dtype, t in self.tables.items():
            rows = np.flatnonzero(vb == VALUE_BYTES[dtype])
            if rows.size == 0:
                continue
            idx = {c: j for j, c in enumerate(t.config_ids)}
            j = np.array([idx.get(c, -1) for c in X["config"].to_numpy()[rows]])
            ok = j >= 0
            R = X.iloc[rows].loc[:, list(ROW_COLUMNS)].to_numpy(np.float64)
            R = np.hstack([R, t.extra[np.maximum(j, 0)]])
            g = np.where(ok, t.group[np.maximum(j, 0)], -1).astype(np.int32)
            ms, _ = _core.model_predict(self.capsule(dtype), np.ascontiguousarray(R).reshape(-1), R.shape[1], g)
            out[rows] = np.where(g >= 0, ms, np.nan)
        return out

    def design_rows(self, A: Any, dtype: str) -> np.ndarray:
        """The C core's design rows of matrix ``A`` under every configuration (n_configs x columns)."""
        M = as_matrix(A)
        t = self.table(dtype)
        flat = _core.design_rows(self.capsule(dtype), M.nrows, M.ncols, M.indptr, M.indices, VALUE_BYTES[dtype])
        return flat.reshape(len(t.config_ids), -1)


def _lookup(keys: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Index of each key in the sorted ``known`` keys, -1 where absent."""
    known = np.asarray(known)
    i = np.minimum(np.searchsorted(known, keys), max(len(known) - 1, 0))
    return np.where(len(known) and (known[i] == keys), i, -1).astype(np.int32) if len(known) else \
        np.full(len(keys), -1, np.int32)


def _log_inputs(names: tuple[str, ...] | list[str], **kw: Any) -> dict[str, np.ndarray]:
    """pyspmv.models' ``log_features``: NaN -> 0, clamped to [0, float64 max], log1p."""
    return inputs([COL[n] for n in names], "log1p", nan=0.0, lo=0.0, hi=BIG, **kw)


def portable(model: Any, device: str | None = None, dtypes: tuple[str, ...] = DTYPES) -> RankModel:
    """The portable form of a fitted pyspmv.models estimator, ranking ``configs(device)``.

    Parameters
    ----------
    model : LinearModel, BoostedModel, KNNModel, GuoModel, WangModel, SVMModel or CascadeModel (fitted),
        or a RankModel (returned as is)
    device : {'cpu', 'cuda'}, optional
        Whose configurations to rank; default: the device of the configurations the model knows.
    dtypes : tuple of str
        Value types to make tables for; those without a single known configuration are left out.

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


def _portable(model: Any, device: str | None, dtypes: tuple[str, ...]) -> RankModel:
    from . import export_models
    build = export_models.BUILDERS.get(type(model).__name__)
    if build is None:
        raise TypeError(f"The 'model' parameter must be a fitted pyspmv.models estimator or a RankModel. Got "
                        f"{type(model).__name__} instead; exportable: {', '.join(sorted(export_models.BUILDERS))}.")
    if device is None:
        device = export_models.guess_device(model)
    if device not in DEVICES:
        raise ValueError(f"The 'device' parameter must be one of {DEVICES}. Got {device!r} instead.")
    cfgs = configs(device)
    tables = {}
    for dtype in dtypes:
        t = build(model, cfgs, dtype)
        if t is not None and (t.group >= 0).any():
            tables[dtype] = t
    if not tables:
        raise ValueError(f"The model ranks no configuration of device {device!r}: it was trained on another device's "
                         "configurations.")
    gpu = export_models.model_gpu(model)
    score = "score" if type(model).__name__ == "CascadeModel" else "ms"
    src = f"{type(model).__name__}({', '.join(f'{k}={v!r}' for k, v in model.get_params().items())})"
    return RankModel(device, tables, source=src, gpu=gpu, score=score)
