"""The rows an estimator builds its table on (:class:`Layout`), and the helpers that place its inputs and groups."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _core
from ..matrices.configs import Config, config_frame
from ..matrices.matrix import VALUE_BYTES
from .rankmodel import Table
from .schema import COL
from .spec import BIG, Spec, inputs

if TYPE_CHECKING:                       # imported where a table is made: pandas costs 0.4 s to import
    import pandas as pd


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
