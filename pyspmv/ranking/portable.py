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
from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _core
from ..matrices.configs import DEVICES, FORMATS, Config, config, config_frame, configs
from ..matrices.features import DESIGN_COLUMNS, H100
from ..matrices.matrix import DTYPES, VALUE_BYTES
from ..matrices.mmio import as_matrix

if TYPE_CHECKING:                       # imported where a table is made: pandas costs 0.4 s to import
    import pandas as pd

#: Design-row columns as the C core lays them out: the features, then the configuration's numeric
#: columns in pyspmv.datasets' X order (its string columns left out); a model's own columns follow.
#: (csrc/design.c defines them.)
ROW_COLUMNS: tuple[str, ...] = DESIGN_COLUMNS
assert len(ROW_COLUMNS) == _core.NCOLS, "csrc/spmv.h's design row and its column names disagree"
COL = {name: i for i, name in enumerate(ROW_COLUMNS)}

TF = {"identity": 0, "log1p": 1, "log": 2, "log10": 3, "log2": 4, "exp": 5, "expm1": 6, "pow10": 7, "pow2": 8,
      "slog1p": 9}
#: spmv_knn.weighting (csrc/spmv.h: SPMV_KNN_UNIFORM, SPMV_KNN_SKLEARN, SPMV_KNN_FLOOR).
KNN_WEIGHTING = {"uniform": 0, "sklearn": 1, "floor": 2}
BIG = float(np.finfo(np.float64).max)
#: Format version of the portable form (save_model files, exported headers): 1, models on pyspmv's
#: features; 2 adds models on their own features (``RankModel.features``); 3 adds the head field
#: ``rank_bytes_pow`` (0 where a file lacks it). A file carries the lowest version that holds it, so that
#: an older pyspmv still reads the first kinds.
FORMAT_VERSION = 3


_I32, _F64, _U8 = np.dtype(np.int32), np.dtype(np.float64), np.dtype(np.uint8)
_DTYPES = {"int32": _I32, "float64": _F64, "uint8": _U8}
_Len = Callable[[dict[str, Any]], int]


@dataclass(frozen=True)
class Field:
    """One field of a model spec as the C core describes it (``spmv_model_field``: the head's table in
    ``csrc/model.c``, each kind's in ``csrc/model_<kind>.c``), read once through ``_core.model_fields``.

    ``type`` is ``'int'``, ``'real'`` (scalars), ``'int32'``, ``'float64'``, ``'uint8'`` (arrays) or
    ``'models'`` (sub-model specs: :attr:`Spec.subs`); an int lies in ``[lo, hi]``, a real is finite
    (or -inf with ``neg_inf``); an array holds :meth:`length` entries (None allowed when
    ``optional``); a ``derived`` int is the number of sub-models, not a spec key; a ``models`` field
    holds models of the kinds whose bit is set in ``hi``.
    """

    name: str
    type: str
    optional: bool
    neg_inf: bool
    derived: bool
    lo: int
    hi: int
    len: tuple[tuple[str, int], ...]
    add: int
    head: bool

    def length(self, f: dict[str, Any]) -> int:
        """Entries of this array for the scalar fields ``f``."""
        n = 1
        for name, plus in self.len:
            n *= f[name] + plus
        return n + self.add


def _fields(kind: int) -> tuple[str, tuple[Field, ...]] | None:
    got = _core.model_fields(kind)
    if got is None:
        return None
    name, fields = got
    return name, tuple(Field(**{**f, "len": tuple(f["len"]), "head": kind == -1}) for f in fields)


@cache
def _kinds() -> dict[str, tuple[int, tuple[Field, ...]]]:
    out, k = {}, 0
    while (got := _fields(k)) is not None:
        out[got[0]] = (k, got[1])
        k += 1
    return out


#: The fields every spec has (spmv_model's own), then each kind's by kind name, and the kinds' codes
#: (csrc/models.def; "constant", 0, is a cascade's one-class stage).
HEAD_FIELDS: tuple[Field, ...] = _fields(-1)[1]  # type: ignore[index]
KIND_FIELDS: dict[str, tuple[Field, ...]] = {name: f for name, (_, f) in _kinds().items()}
KINDS: dict[str, int] = {name: code for name, (code, _) in _kinds().items()}


def spec_fields(kind: str) -> tuple[Field, ...]:
    """Every field of a spec of ``kind``: the head's, then the kind's own."""
    return HEAD_FIELDS + KIND_FIELDS[kind]


def spec_scalars(kind: str) -> dict[str, type]:
    """The scalar fields of a spec of ``kind`` (the only scalar names a model file or header may carry)."""
    return {f.name: int if f.type == "int" else float for f in spec_fields(kind)
            if f.type in ("int", "real") and not f.derived}


def spec_arrays(kind: str) -> dict[str, tuple[np.dtype, _Len, bool]]:
    """The array fields of a spec of ``kind``: dtype, length from the scalars, optional."""
    return {f.name: (_DTYPES[f.type], f.length, f.optional) for f in spec_fields(kind) if f.type in _DTYPES}


def sub_field(kind: str) -> Field | None:
    """The field of ``kind`` that holds sub-models (a cascade's stages), or None."""
    return next((f for f in KIND_FIELDS[kind] if f.type == "models"), None)


def sub_kinds(kind: str) -> tuple[str, ...]:
    """The kinds a sub-model of ``kind`` may have (none where it holds no sub-models)."""
    f = sub_field(kind)
    return () if f is None else tuple(k for k, c in KINDS.items() if f.hi >> c & 1)


def native(a: Any) -> Any:
    """``a`` with a native byte order (a file may hold big-endian arrays); other values as they are."""
    if isinstance(a, np.ndarray) and not a.dtype.isnative:
        return a.astype(a.dtype.newbyteorder("="))
    return a


def check_spec(spec: Spec, where: str, *, kinds: tuple[str, ...] | None = None) -> None:
    """Refuse a spec whose field names, scalar types and ranges, or array dtypes and lengths are not
    those of its kind (of ``kinds``, when given); ``where`` names it in the message (e.g.
    ``"float64/spec"``). Values inside the arrays (indices, ranges) are ``spmv_model_check``'s, in C."""
    if spec.kind not in KINDS or (kinds is not None and spec.kind not in kinds):
        allowed = tuple(KINDS) if kinds is None else kinds
        raise ValueError(f"The model kind of {where} must be one of {allowed}. Got {spec.kind!r} instead.")
    scal, arrs = spec_scalars(spec.kind), spec_arrays(spec.kind)
    unknown = [k for k in spec.fields if k not in scal and k not in arrs]
    if unknown:
        raise ValueError(f"{where} has field {unknown[0]!r}, which a {spec.kind!r} model does not have; its fields: "
                         f"{', '.join([*scal, *arrs])}.")
    f = spec.fields
    for d in spec_fields(spec.kind):
        v = f.get(d.name)
        if d.type == "int" and not d.derived:
            ok = isinstance(v, int | np.integer) and not isinstance(v, bool | np.bool_)
            if not ok or not d.lo <= v <= d.hi:
                raise ValueError(f"The field {d.name!r} of {where} must be an int in [{d.lo}, {d.hi}]. Got {v!r} "
                                 "instead.")
        elif d.type == "real":
            ok = isinstance(v, float | int | np.floating | np.integer) and not isinstance(v, bool | np.bool_)
            if not ok or not (np.isfinite(v) or (d.neg_inf and v == -np.inf)):
                raise ValueError(f"The field {d.name!r} of {where} must be a finite float"
                                 f"{' or -inf' if d.neg_inf else ''}. Got {v!r} instead.")
    for k, (dt, length, optional) in arrs.items():
        a = f.get(k)
        if a is None and optional:
            continue
        n = length(f)
        if not isinstance(a, np.ndarray) or a.dtype != dt or a.ndim != 1 or a.shape[0] != n:
            got = (f"a {a.ndim}-D {a.dtype} array of shape {a.shape}" if isinstance(a, np.ndarray)
                   else type(a).__name__)
            raise ValueError(f"The array {k!r} of {where} must be 1-D {dt} of length {n}. Got {got} instead.")
    sub = sub_field(spec.kind)
    if sub is None:
        if spec.subs:
            raise ValueError(f"A {spec.kind!r} model has no sub-models; {where} has {len(spec.subs)}.")
        return
    count = next(d for d in KIND_FIELDS[spec.kind] if d.name == sub.len[0][0])
    if not count.lo <= len(spec.subs) <= count.hi:
        raise ValueError(f"A {spec.kind!r} model ({where}) needs {count.lo} to {count.hi} sub-models "
                         f"({sub.name}). Got {len(spec.subs)}.")
    for i, s in enumerate(spec.subs):
        check_spec(s, f"{where}/sub{i}", kinds=sub_kinds(spec.kind))


def check_gpu(gpu: Any, where: str) -> dict[str, int]:
    """GPU properties (Guo's strips): positive ints ``sm_count``, ``threads_per_sm``, ``warp_size``."""
    if not isinstance(gpu, dict) or set(gpu) != set(H100):
        raise ValueError(f"The GPU properties of {where} must be a dict of {sorted(H100)}. Got {gpu!r} instead.")
    for k, v in gpu.items():
        if not isinstance(v, int | np.integer) or isinstance(v, bool | np.bool_) or not 1 <= v <= 1 << 20:
            raise ValueError(f"The GPU property {k!r} of {where} must be an int in [1, {1 << 20}]. Got {v!r} instead.")
    return {k: int(v) for k, v in gpu.items()}


def check_convert_fit(fit: Any, where: str) -> dict[str, list[float]]:
    """A conversion-cost fit: per format name, ``[a, b]`` (convert_ms = a + b * nnz), finite and >= 0."""
    if not isinstance(fit, dict):
        raise ValueError(f"The conversion-cost fit 'convert_ms' of {where} must be a dict of format -> [a, b]. "  # noqa: TRY004 (a model file's content: ValueError, as every corrupt model)
                         f"Got {type(fit).__name__} instead.")
    for fmt, ab in fit.items():
        if fmt not in FORMATS:
            raise ValueError(f"The conversion-cost fit 'convert_ms' of {where} names format {fmt!r}; known: {FORMATS}.")
        ok = isinstance(ab, list | tuple) and len(ab) == 2 and all(
            isinstance(v, float | int) and not isinstance(v, bool) and np.isfinite(v) and v >= 0 for v in ab)
        if not ok:
            raise ValueError(f"The conversion-cost fit 'convert_ms' of {where} must give format {fmt!r} two finite "
                             f"numbers >= 0 (ms, ms per nonzero). Got {ab!r} instead.")
    return {str(k): [float(v) for v in ab] for k, ab in fit.items()}


#: Longest configuration id or feature name a model carries (they reach C only as escaped string literals).
MAX_NAME = 256


def check_names(names: Any, what: str, where: str) -> list[str]:
    """A non-empty list of distinct non-empty strings of at most :data:`MAX_NAME` characters, no NUL."""
    if not isinstance(names, list) or not names:
        raise ValueError(f"The {what} of {where} must be a non-empty list. Got {names!r:.80} instead.")
    for v in names:
        if not isinstance(v, str) or not 0 < len(v) <= MAX_NAME or "\0" in v:
            raise ValueError(f"The {what} of {where} must be strings of 1 to {MAX_NAME} characters without NUL. "
                             f"Got {v!r:.80} instead.")
    seen: set[str] = set()
    for v in names:                    # O(n): a file's 40,000 ids took names.count() 22 s
        if v in seen:
            raise ValueError(f"{where} lists {what.removesuffix('s')} {v!r:.80} twice.")
        seen.add(v)
    return names


def check_table(t: Table, device: str | None, where: str, features: tuple[str, ...] | None = None) -> None:
    """Configuration ids (known, of ``device``, distinct; a model on its own ``features``: any
    distinct names), group and extra against the spec."""
    ids = t.config_ids
    check_names(ids, "configuration ids", where)
    if features is None:
        known = _device_ids(str(device))
        for cid in ids:
            try:
                c = config(cid)
            except ValueError as exc:
                raise ValueError(f"{where} ranks configuration {cid!r}, unknown to this pyspmv: {exc} The model's "
                                 "configuration list does not match; retrain it.") from None
            if c.device != device:
                raise ValueError(f"{where} is for device {device!r} but ranks {cid!r} of device {c.device!r}.")
            if cid not in known:
                raise ValueError(f"{where} ranks configuration {cid!r}, which is not one of pyspmv.configs({device!r}) "
                                 "(a parameter outside the grid, or not spelt as the registry does). Retrain the model.")
    check_spec(t.spec, f"{where}/spec")
    base = _core.NCOLS if features is None else len(features)
    n, ng, nextra = len(ids), t.spec.fields["ngroups"], t.spec.fields["ncols"] - base
    if nextra < 0:
        raise ValueError(f"The field 'ncols' of {where}/spec must be at least {base} (the "
                         f"{'design row' if features is None else 'feature vector'}). Got {t.spec.fields['ncols']}.")
    g = t.group
    if not isinstance(g, np.ndarray) or g.dtype != _I32 or g.shape != (n,):
        raise ValueError(f"The array 'group' of {where} must be 1-D int32 of length {n} (one per configuration id). "
                         f"Got {getattr(g, 'dtype', type(g).__name__)} of shape {getattr(g, 'shape', '?')} instead.")
    if n and (g.min() < -1 or g.max() >= ng):
        raise ValueError(f"The array 'group' of {where} must hold -1 (not ranked) or a group in [0, {ng}). Got "
                         f"{int(g.min() if g.min() < -1 else g.max())} instead.")
    if not (g >= 0).any():
        raise ValueError(f"{where} ranks no configuration: its array 'group' is -1 for all {n} configuration ids, so "
                         "it has no sub-model for any of them. Retrain or re-export the model.")
    e = t.extra
    if not isinstance(e, np.ndarray) or e.dtype != _F64 or e.shape != (n, nextra):
        raise ValueError(f"The array 'extra' of {where} must be 2-D float64 of shape ({n}, {nextra}) (configurations "
                         f"x the spec's columns past the design row). Got {getattr(e, 'dtype', type(e).__name__)} of "
                         f"shape {getattr(e, 'shape', '?')} instead.")


@cache
def _device_ids(device: str) -> frozenset[str]:
    return frozenset(c.id for c in configs(device))


def check_model(rm: RankModel, where: str = "the model") -> None:
    """Everything :func:`pyspmv.load_model` and :func:`pyspmv.export_c` require of a RankModel before the
    C core reads it: device, score, GPU properties, conversion-cost fit, and each table."""
    if rm.features is not None:
        check_names(rm.features, "feature names", where)
        if rm.device is not None or "convert_ms" in rm.meta:
            raise ValueError(f"{where} takes its own features: it has no pyspmv device ({rm.device!r}) and no "
                             "conversion-cost fit.")
        pows = [t.spec.fields.get("rank_bytes_pow", 0) for t in rm.tables.values()] if isinstance(rm.tables, dict) else []
        if any(p != 0 for p in pows):
            raise ValueError(f"{where} takes its own features, which give no bytes moved to rank by: its "
                             f"'rank_bytes_pow' must be 0. Got {next(p for p in pows if p != 0)!r} instead.")
    elif rm.device not in DEVICES:
        raise ValueError(f"The device of {where} must be one of {DEVICES}. Got {rm.device!r} instead.")
    if rm.score not in ("ms", "score"):
        raise ValueError(f"The score of {where} must be 'ms' or 'score'. Got {rm.score!r} instead.")
    check_gpu(rm.gpu, where)
    if "convert_ms" in rm.meta:
        check_convert_fit(rm.meta["convert_ms"], where)
    if not isinstance(rm.tables, dict) or not rm.tables:
        raise ValueError(f"{where} must have a table for at least one value type of {DTYPES}.")
    for dtype, t in rm.tables.items():
        if dtype not in DTYPES:
            raise ValueError(f"{where} has a table for value type {dtype!r}; known: {DTYPES}.")
        check_table(t, rm.device, f"{where} ({dtype})", rm.features)


@dataclass
class Spec:
    """One ``spmv_model``: ``kind`` and the C struct's fields by name (``trees.root``, ``knn.k`` ...).

    ``fields`` maps field names to int, float or NumPy arrays (int32, float64, uint8 for
    ``trees.missing_left``), as :func:`spec_fields` lists them; ``subs`` are the sub-models of a kind
    that has them (a cascade's stages, :func:`sub_field`).
    """

    kind: str
    fields: dict[str, Any]
    subs: list[Spec] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        """The dict ``_core.model_new`` parses (without the configuration table)."""
        d = {"kind": KINDS[self.kind], **self.fields}
        sub = sub_field(self.kind)
        if sub is not None:
            d[sub.name] = [s.to_dict() for s in self.subs]
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


def head(ngroups: int, ncols: int, ins: dict[str, Any], out_tf: str = "identity", out_lo: float = -np.inf,
         out_col: int = -1, rank_bytes_pow: float = 0.0) -> dict[str, Any]:
    """The fields every spec has; ``ncols``: the row length it reads (:attr:`Layout.ncols`);
    ``rank_bytes_pow``: rank by predicted ms times (bytes moved per byte of values) to this power
    (csrc/spmv.h, ``struct spmv_model``)."""
    return {"ngroups": int(ngroups), "ncols": int(ncols), **ins, "out_tf": TF[out_tf],
            "out_col": int(out_col), "out_lo": float(out_lo), "rank_bytes_pow": float(rank_bytes_pow)}


class Layout:
    """Where a model's inputs sit in the rows the C core evaluates, and the configurations it ranks.

    On pyspmv's schema (``features`` None) a row is the C core's design row (:data:`ROW_COLUMNS`),
    computed from a CSR matrix; on a user's schema it is the user's feature vector (``features``, in
    order). Either is followed by the model's own per-configuration columns (:meth:`add`). ``frame``
    holds the configurations' columns (:func:`config_frame`, or the user's parameters and value
    size); :meth:`col` finds a column, adding a per-configuration one from ``frame`` where the row
    does not hold it (a user's parameters), so that one builder serves both schemas.
    """

    def __init__(self, ids: list[str], frame: pd.DataFrame, dtype: str, features: tuple[str, ...] | None = None):
        self.ids = list(ids)
        self.frame = frame.reset_index(drop=True)
        self.dtype = dtype
        self.features = None if features is None else tuple(features)
        self.base = _core.NCOLS if features is None else len(features)
        self._extra: list[np.ndarray] = []
        self._named: dict[str, int] = {}

    @classmethod
    def pyspmv(cls, cfgs: list[Config], dtype: str) -> Layout:
        """pyspmv's design rows for registered configurations ``cfgs``."""
        return cls([c.id for c in cfgs], config_frame(cfgs, dtype), dtype)

    @classmethod
    def own(cls, configs: pd.DataFrame, features: tuple[str, ...], dtype: str) -> Layout:
        """A user's feature vector; ``configs``: the fitted model's configurations (index: ids, columns:
        its parameters), ranked in ``dtype``."""
        frame = configs.reset_index().assign(value_bytes=float(VALUE_BYTES[dtype]))
        frame["config"] = frame["config"].astype(str)
        return cls(list(frame["config"]), frame, dtype, features)

    def col(self, name: str) -> int:
        """Index of column ``name`` in the rows."""
        if self.features is None:
            return COL[name]
        if name in self.features:
            return self.features.index(name)
        if name not in self._named:
            self._named[name] = self.add(self.frame[name].to_numpy(dtype=np.float64))
        return self._named[name]

    def add(self, values: Any) -> int:
        """Append a per-configuration column (one value per configuration); its index in the rows."""
        v = np.asarray(values, dtype=np.float64).reshape(-1)
        if v.shape[0] != len(self.ids):
            raise ValueError(f"A per-configuration column needs {len(self.ids)} values. Got {v.shape[0]}.")
        self._extra.append(v)
        return self.base + len(self._extra) - 1

    @property
    def ncols(self) -> int:
        """The row length: the design row or feature vector plus the columns added so far."""
        return self.base + len(self._extra)

    def table(self, group: np.ndarray, spec: Spec) -> Table:
        """The :class:`Table` of these configurations."""
        extra = np.stack(self._extra, axis=1) if self._extra else np.zeros((len(self.ids), 0))
        return Table(list(self.ids), np.asarray(group, dtype=np.int32), np.ascontiguousarray(extra), spec)


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

    def feature_arrays(self, nfeatures: int) -> dict[str, Any]:
        """The C configuration table of a model on its own ``nfeatures`` features: groups and extra columns."""
        return {"cfg.n": len(self.config_ids), "cfg.nextra": int(self.extra.shape[1]), "cfg.nfeatures": int(nfeatures),
                "cfg.group": np.ascontiguousarray(self.group, dtype=np.int32),
                "cfg.extra": np.ascontiguousarray(self.extra, dtype=np.float64).reshape(-1)}

    def config_arrays(self, gpu: dict[str, int]) -> dict[str, Any]:
        """The C configurations (``cfg.*``: the ids, which the core parses into its table, groups and
        extra columns) and device properties."""
        return {
            "cfg.n": len(self.config_ids), "cfg.nextra": int(self.extra.shape[1]),
            "cfg.ids": tuple(self.config_ids),
            "cfg.group": np.ascontiguousarray(self.group, dtype=np.int32),
            "cfg.extra": np.ascontiguousarray(self.extra, dtype=np.float64).reshape(-1),
            "dev": np.array([gpu["sm_count"], gpu["threads_per_sm"], gpu["warp_size"]], np.int32),
        }


class RankModel:
    """A model in portable form: per value type, a :class:`Table` the C core evaluates.

    Made by :func:`portable` from a fitted pyspmv.models estimator, or by :func:`pyspmv.load_model`.
    ``predict(X)`` evaluates rows of X in C; :func:`pyspmv.rank` ranks a matrix. A model fitted on
    the user's own schema (``features``) ranks the user's configurations from a feature vector:
    :meth:`rank_features`.

    Attributes
    ----------
    device : {'cpu', 'cuda'}, or None for a model on its own features
    features : tuple of str or None, the feature vector it takes (None: pyspmv's, computed by the C
        core from a CSR matrix)
    source : str, the estimator it came from (class and parameters)
    tables : dict, value type -> Table
    gpu : dict, the GPU properties its features use (Guo's strips)
    score : {'ms', 'score'}, whether its output is a runtime or a ranking score (classifiers)
    """

    def __init__(self, device: str | None, tables: dict[str, Table], *, source: str = "",
                 gpu: dict[str, int] | None = None, score: str = "ms", meta: dict[str, Any] | None = None,
                 features: Any = None):
        if features is None and device not in DEVICES:
            raise ValueError(f"The 'device' parameter of RankModel must be one of {DEVICES}. Got {device!r} instead.")
        self.device = device
        self.features = None if features is None else list(features)
        self.tables = tables
        self.source = source
        self.gpu = dict(H100 if gpu is None else gpu)
        self.score = score
        self.meta = dict(meta or {})

    def __repr__(self) -> str:
        n = {d: int((t.group >= 0).sum()) for d, t in self.tables.items()}
        on = f"device={self.device!r}" if self.features is None else f"features={len(self.features)}"
        return f"RankModel({self.source or '?'}, {on}, ranks={n})"

    def table(self, dtype: str) -> Table:
        """The table of value type ``dtype``; a ValueError names the ones the model has."""
        if dtype not in self.tables:
            raise ValueError(f"The 'dtype' parameter must be a value type the model was trained on: "
                             f"{sorted(self.tables)}. Got {dtype!r} instead; to rank {dtype}, fit the model on rows "
                             f"of {dtype} (pyspmv.datasets.load(..., dtype=None) holds both).")
        return self.tables[dtype]

    def capsule(self, dtype: str) -> Any:
        """The C model of value type ``dtype`` (built once, checked by spmv_model_check)."""
        t = self.table(dtype)
        if t._capsule is None:
            cfg = t.config_arrays(self.gpu) if self.features is None else t.feature_arrays(len(self.features))
            t._capsule = _core.model_new({**t.spec.to_dict(), **cfg})
        return t._capsule

    def rank_features(self, features: Any, dtype: str = "float64") -> pd.Series:
        """A model on its own features: every configuration's prediction for one feature vector
        (``features``: one value per name of :attr:`features`, in order, or a mapping name -> value;
        NaN: missing), fastest first (ties: the model's order), as the exported header's
        ``NAME_rank_features`` computes it. Configurations not ranked for ``dtype`` are left out."""
        if self.features is None:
            raise ValueError("The model takes pyspmv's features, computed from a matrix: use pyspmv.rank(A, model).")
        if isinstance(features, dict):
            missing = [f for f in self.features if f not in features]
            if missing or len(features) != len(self.features):
                extra = [f for f in features if f not in self.features]
                raise ValueError(f"The 'features' parameter of rank_features() must give exactly the model's features "
                                 f"{self.features}. Missing {missing[:4]}, unknown {extra[:4]}.")
            features = [features[f] for f in self.features]
        f = np.asarray(features, dtype=np.float64).ravel()
        if f.shape[0] != len(self.features):
            raise ValueError(f"The 'features' parameter of rank_features() must hold {len(self.features)} values "
                             f"({', '.join(self.features[:6])} ...). Got {f.shape[0]} instead.")
        t = self.table(dtype)
        R = np.hstack([np.broadcast_to(f, (len(t.config_ids), len(f))), t.extra])
        ms, _ = _core.model_predict(self.capsule(dtype), np.ascontiguousarray(R).reshape(-1), R.shape[1],
                                    np.ascontiguousarray(t.group, dtype=np.int32))
        keep = t.group >= 0
        ids = np.asarray(t.config_ids, dtype=object)[keep]
        ms = ms[keep]
        order = np.lexsort((np.arange(len(ms)), np.where(np.isnan(ms), np.inf, ms), np.isnan(ms)))
        name = "predicted_ms" if self.score == "ms" else "score"
        import pandas as pd
        return pd.Series(ms[order], index=pd.Index(ids[order], name="config"), name=name)

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """The C core's prediction (ms, or score) per row of pyspmv.datasets' X; NaN where not ranked."""
        out = np.full(len(X), np.nan)
        vb = (X["value_bytes"].to_numpy(np.float64) if "value_bytes" in X.columns else np.full(len(X), 8.0))
        for dtype, t in self.tables.items():
            rows = np.flatnonzero(vb == VALUE_BYTES[dtype])
            if rows.size == 0:
                continue
            idx = {c: j for j, c in enumerate(t.config_ids)}
            j = np.array([idx.get(c, -1) for c in X["config"].to_numpy()[rows]])
            ok = j >= 0
            R = X.iloc[rows].loc[:, list(ROW_COLUMNS if self.features is None else self.features)].to_numpy(np.float64)
            R = np.hstack([R, t.extra[np.maximum(j, 0)]])
            g = np.where(ok, t.group[np.maximum(j, 0)], -1).astype(np.int32)
            ms, _ = _core.model_predict(self.capsule(dtype), np.ascontiguousarray(R).reshape(-1), R.shape[1], g)
            out[rows] = np.where(g >= 0, ms, np.nan)
        return out

    def core_rows(self, A: Any, dtype: str) -> np.ndarray:
        """The rows the C core ranks ``A`` on, one per configuration of the ``dtype`` table: the design
        columns (``spmv_design_rows``), then the model's extra columns (n_configs x columns)."""
        if self.features is not None:
            raise ValueError("The model takes its own features, not a matrix's: it has no design rows.")
        M = as_matrix(A)
        t = self.table(dtype)
        flat = _core.core_rows(self.capsule(dtype), M.nrows, M.ncols, M.indptr, M.indices, VALUE_BYTES[dtype])
        return flat.reshape(len(t.config_ids), -1)


def lookup_keys(keys: np.ndarray, known: np.ndarray) -> np.ndarray:
    """Index of each key in the sorted ``known`` keys, -1 where absent (the models' groups, a table's
    configurations); :func:`pyspmv.models._common.group_index` is the form that fails on an absent key."""
    known = np.asarray(known)
    i = np.minimum(np.searchsorted(known, keys), max(len(known) - 1, 0))
    return np.where(len(known) and (known[i] == keys), i, -1).astype(np.int32) if len(known) else \
        np.full(len(keys), -1, np.int32)


def feature_inputs(layout: Layout, tf: Any, **kw: Any) -> dict[str, np.ndarray]:
    """A fitted :class:`pyspmv.models.FeatureTransform` as inputs: NaN -> its value, clamped to
    [0, max] and log1p (or [-max, max] and slog1p where signed)."""
    signed = np.asarray(tf.signed, dtype=bool)
    return inputs([layout.col(n) for n in tf.names], ["slog1p" if s else "log1p" for s in signed],
                  nan=np.asarray(tf.nan, dtype=np.float64), lo=np.where(signed, -BIG, 0.0), hi=BIG, **kw)


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


def portable(model: Any, device: str | None = None, dtypes: tuple[str, ...] = DTYPES) -> RankModel:
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
    estimator was not trained on (``value_types_``) get no table.

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
#: (:mod:`pyspmv.ranking.cache`, through :mod:`pyspmv.ranking.modelfile`, which builds on it), so the reader is handed
#: down once, by :mod:`pyspmv.ranking.cache` as it is imported (``import pyspmv`` imports it).
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
        if device not in DEVICES:
            raise ValueError(f"The 'device' parameter must be one of {DEVICES}. Got {device!r} instead.")
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
    return RankModel(device, tables, source=src, gpu=dict(H100), score=score, meta=_convert_meta(model, device))


def _convert_meta(model: Any, device: str) -> dict[str, Any]:
    """``meta['convert_ms']``: the estimator's own conversion-cost fit, else that of the shipped default
    model of ``device`` (``meta['convert_ms_from']`` says so), else none."""
    fit = getattr(model, "convert_ms_", None)
    if fit:
        return {"convert_ms": {k: list(v) for k, v in fit.items()}}
    fit = _default_convert_fit(device) if _default_convert_fit is not None else None
    return {"convert_ms": fit, "convert_ms_from": f"the default {device} model"} if fit else {}
