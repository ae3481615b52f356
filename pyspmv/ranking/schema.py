"""The portable form's schema, read from the C core: the design row's columns, each kind's spec fields."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

import numpy as np

from .. import _core
from ..matrices.features import DESIGN_COLUMNS

#: Design-row columns as the C core lays them out: the features, then the configuration's numeric
#: columns in pyspmv.datasets' X order (its string columns left out); a model's own columns follow.
#: (csrc/design.c defines them.)
ROW_COLUMNS: tuple[str, ...] = DESIGN_COLUMNS
assert len(ROW_COLUMNS) == _core.NCOLS, "csrc/spmv.h's design row and its column names disagree"
COL = {name: i for i, name in enumerate(ROW_COLUMNS)}

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
