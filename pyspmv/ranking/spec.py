"""Model specs as the estimators fill them: :class:`Spec` (one ``spmv_model``), its inputs and head fields."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .schema import KINDS, sub_field

TF = {"identity": 0, "log1p": 1, "log": 2, "log10": 3, "log2": 4, "exp": 5, "expm1": 6, "pow10": 7, "pow2": 8,
      "slog1p": 9}
#: spmv_knn.weighting (csrc/spmv.h: SPMV_KNN_UNIFORM, SPMV_KNN_SKLEARN, SPMV_KNN_FLOOR).
KNN_WEIGHTING = {"uniform": 0, "sklearn": 1, "floor": 2}
BIG = float(np.finfo(np.float64).max)


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
