"""A model in portable form (:class:`RankModel`): per value type a :class:`Table` the C core evaluates."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _core
from .._params import OneOf, validate
from ..matrices.configs import DEVICES
from ..matrices.features import H100
from ..matrices.matrix import VALUE_BYTES
from ..matrices.mmio import as_matrix
from .precision import Precision
from .schema import ROW_COLUMNS
from .spec import Spec

if TYPE_CHECKING:                       # imported where a table is made: pandas costs 0.4 s to import
    import pandas as pd


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
    precision : Precision or None, how far its predicted times can be read, as measured on held-out
        matrices: what :func:`pyspmv.rank` marks ties of the pick and order-only rows by. The estimator
        states it (a ForestModel: the default recipe's, :data:`pyspmv.ranking.precision.DEFAULT_PRECISION`
        of its device) and model files record it; None where the model's error was not measured.
    origin : str or None, where it came from, in words (the shipped default, a calibration, a model file);
        None for a model made in this process. Rankings name their model by it.
    """

    def __init__(self, device: str | None, tables: dict[str, Table], *, source: str = "",
                 gpu: dict[str, int] | None = None, score: str = "ms", meta: dict[str, Any] | None = None,
                 features: Any = None, precision: Precision | None = None):
        if features is None:
            validate("RankModel", {"device": OneOf(DEVICES)}, locals())
        self.device = device
        self.features = None if features is None else list(features)
        self.tables = tables
        self.source = source
        self.gpu = dict(H100 if gpu is None else gpu)
        self.score = score
        self.precision = precision
        self.meta = dict(meta or {})
        self.origin: str | None = None

    @property
    def label(self) -> str:
        """The model in words, as rankings name it: :attr:`origin`, else the estimator it came from."""
        return self.origin or f"a {self.source.split('(')[0] or 'model'} made in this process"

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
