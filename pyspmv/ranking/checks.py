"""The checks a spec, a table and a model pass before the C core reads them (load_model, export_c)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np

from .. import _core
from ..matrices.configs import DEVICES, FORMATS, config, configs
from ..matrices.features import H100
from ..matrices.matrix import DTYPES
from .rankmodel import RankModel, Table
from .schema import _F64, _I32, KIND_FIELDS, KINDS, spec_arrays, spec_fields, spec_scalars, sub_field, sub_kinds
from .spec import Spec


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
            if not ok or not (_finite(v) or (d.neg_inf and v == -np.inf)):
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


def _finite(v: Any) -> bool:
    """Whether the number ``v`` is finite in float64: an int past it (a model file's JSON may spell
    one out in 400 digits) is not, where np.isfinite raises TypeError."""
    try:
        return math.isfinite(float(v))
    except OverflowError:
        return False


def check_convert_fit(fit: Any, where: str) -> dict[str, list[float]]:
    """A conversion-cost fit: per format name, ``[a, b]`` (convert_ms = a + b * nnz), finite and >= 0."""
    if not isinstance(fit, dict):
        raise ValueError(f"The conversion-cost fit 'convert_ms' of {where} must be a dict of format -> [a, b]. "  # noqa: TRY004 (a model file's content: ValueError, as every corrupt model)
                         f"Got {type(fit).__name__} instead.")
    for fmt, ab in fit.items():
        if fmt not in FORMATS:
            raise ValueError(f"The conversion-cost fit 'convert_ms' of {where} names format {fmt!r}; known: {FORMATS}.")
        ok = isinstance(ab, list | tuple) and len(ab) == 2 and all(
            isinstance(v, float | int) and not isinstance(v, bool) and _finite(v) and v >= 0 for v in ab)
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
