"""The columns a model reads: pyspmv's design table by default, or the user's own features and parameters.

Every estimator takes ``features=None`` and ``params=None``: None means pyspmv's (the 33
:data:`pyspmv.FEATURE_NAMES` and the seven ``p_*`` columns of :func:`pyspmv.datasets.load`'s X, with
its configuration columns). Naming either fits the model on the user's own table instead: X then
holds a ``config`` column (any id), the named feature and parameter columns, optionally
``value_bytes`` (4 or 8; without it every row is one value type, recorded as float64) and
``convert_ms``, and nothing else. A column that the model would not read is an error, never
ignored. What the fit found is recorded on the estimator: ``schema_`` (a :class:`Schema`),
``feature_tf_`` (a :class:`FeatureTransform`) and ``configs_`` (the configurations and their
parameter values), which :func:`pyspmv.export_c` and :func:`pyspmv.save_model` carry.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..matrices.configs import PARAM_COLUMNS
from ..matrices.features import CONFIG_LABELS, FEATURE_NAMES, X_COLUMNS
from ..matrices.matrix import VALUE_BYTES

#: The value sizes a ``value_bytes`` column may hold.
_SIZES = tuple(float(b) for b in VALUE_BYTES.values())

#: Categorical configuration columns of pyspmv's table (CONFIG_NUMERIC, the numeric ones, and X_COLUMNS,
#: every column a model on pyspmv's schema needs in X, come from pyspmv.matrices.features).
CONFIG_CATEGORICAL: tuple[str, ...] = CONFIG_LABELS
#: Columns X may hold besides the schema's: conversion time per row (:class:`RankMixin`'s fit).
OPTIONAL_COLUMNS: tuple[str, ...] = ("convert_ms",)
_BIG = float(np.finfo(np.float64).max)


@dataclass(frozen=True)
class Schema:
    """The columns of X a fitted model reads.

    ``features``: per-matrix statistics; ``params``: per-configuration numeric columns; ``own``: True
    for pyspmv's design table (then X also carries library, format, kernel, value_bytes, bytes_moved,
    padding_ratio and launches, and the C core computes every column from a CSR matrix)."""

    features: tuple[str, ...]
    params: tuple[str, ...]
    own: bool

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns X must hold."""
        if self.own:
            return X_COLUMNS
        return ("config", *self.features, *self.params)


OWN = Schema(FEATURE_NAMES, PARAM_COLUMNS, True)


def _names(v: Any, what: str, who: str) -> tuple[str, ...]:
    if isinstance(v, str) or not hasattr(v, "__iter__"):
        raise TypeError(f"The '{what}' parameter of {who} must be a list of column names or None. Got {v!r} instead.")
    names = tuple(v)
    bad = [n for n in names if not isinstance(n, str) or not n]
    if bad or len(set(names)) != len(names):
        got = repr(bad[0]) if bad else "a repeated name"
        raise ValueError(f"The '{what}' parameter of {who} must hold distinct non-empty column names. Got {got} instead.")
    return names


def resolve_schema(features: Any, params: Any, who: str, min_features: int = 1) -> Schema:
    """The schema an estimator's ``features`` and ``params`` parameters name (None: pyspmv's)."""
    if features is None and params is None:
        return OWN
    f = FEATURE_NAMES if features is None else _names(features, "features", who)
    p = PARAM_COLUMNS if params is None else _names(params, "params", who)
    if f == FEATURE_NAMES and p == PARAM_COLUMNS:
        return OWN
    if len(f) < min_features:
        raise ValueError(f"The 'features' parameter of {who} must name at least {min_features} column(s). Got {len(f)}.")
    clash = [c for c in (*f, *p) if c in ("config", "value_bytes", *OPTIONAL_COLUMNS)] + [c for c in f if c in p]
    if clash:
        raise ValueError(f"The 'features' and 'params' parameters of {who} must name distinct columns other than "
                         f"'config', 'value_bytes' and {OPTIONAL_COLUMNS}. Got {clash[0]!r} instead.")
    return Schema(f, p, False)


def check_X(X: Any, who: str, schema: Schema = OWN, columns: tuple[str, ...] | None = None) -> pd.DataFrame:
    """``X`` checked against ``schema``: a DataFrame with at least one row, every column the schema
    names (``columns``, when given, instead of pyspmv's full table), numeric features and parameters,
    and no column the model would not read. A user's table without ``value_bytes`` gets it (8.0)."""
    if not isinstance(X, pd.DataFrame):
        raise TypeError(f"The 'X' parameter of {who} must be a pandas DataFrame with the design columns of "
                        f"pyspmv.datasets (schema.md) or the columns of the model's 'features' and 'params'. "
                        f"Got {type(X).__name__} instead.")
    need = schema.columns if columns is None or not schema.own else columns
    missing = [c for c in need if c not in X.columns]
    if missing:
        raise ValueError(f"The 'X' parameter of {who} lacks {len(missing)} column(s) the model reads: "
                         f"{', '.join(map(repr, missing[:8]))}{' ...' if len(missing) > 8 else ''}.")
    allowed = set(X_COLUMNS if schema.own else (*schema.columns, "value_bytes")) | set(OPTIONAL_COLUMNS) | set(need)
    unused = [str(c) for c in X.columns if c not in allowed]
    if unused:
        hint = ("name them in the 'features' or 'params' parameter, or drop them" if not schema.own else
                "drop them, or fit on your own schema by naming the 'features' and 'params' parameters")
        raise ValueError(f"The 'X' parameter of {who} has {len(unused)} column(s) the model does not read: "
                         f"{', '.join(map(repr, unused[:8]))}{' ...' if len(unused) > 8 else ''}; {hint}.")
    if len(X) == 0:
        raise ValueError(f"The 'X' parameter of {who} must have at least 1 row. Got 0 rows instead.")
    if not schema.own:
        for c in (*schema.features, *schema.params):
            if not pd.api.types.is_numeric_dtype(X[c]) or pd.api.types.is_bool_dtype(X[c]):
                raise ValueError(f"The column {c!r} of the 'X' parameter of {who} must be numeric (NaN: missing). "
                                 f"Got dtype {X[c].dtype} instead.")
        if "value_bytes" not in X.columns:
            X = X.assign(value_bytes=8.0)
        else:
            vb = X["value_bytes"].to_numpy(dtype=np.float64)
            if not np.isin(vb, _SIZES).all():
                raise ValueError(f"The 'value_bytes' column of the 'X' parameter of {who} must hold 4 or 8. Got "
                                 f"{vb[~np.isin(vb, _SIZES)][0]!r} instead.")
    return X


def check_groups(groups: Any, n: int, who: str) -> np.ndarray:
    """An integer id per row naming its matrix, from ``groups`` (required: rows are never matched to
    matrices by their features)."""
    if groups is None:
        hint = ("" if not who.endswith(".fit") else
                " In scikit-learn's cross_val_score or GridSearchCV, groups= reaches only the CV splitter unless "
                "metadata routing is on: sklearn.set_config(enable_metadata_routing=True), then "
                "cross_val_score(..., params={'groups': g}) or GridSearchCV(...).fit(X, y, groups=g) give it to "
                "fit too; without routing, pass both groups=g and params={'groups': g} (see pyspmv.models).")
        raise ValueError(f"The 'groups' parameter of {who} must name the matrix of each row of X (e.g. "
                         f"pyspmv.datasets.load(...).groups). Got None instead.{hint}")
    g = np.asarray(groups)
    if g.ndim != 1 or g.shape[0] != n:
        raise ValueError(f"The 'groups' parameter of {who} must name the matrix of each row of X ({n}). "
                         f"Got {g.shape[0] if g.ndim == 1 else f'shape {g.shape}'} instead.")
    return pd.factorize(pd.Series(g))[0]


@dataclass(frozen=True)
class FeatureTransform:
    """How matrix features become model inputs, chosen at fit per column and recorded.

    A missing value (NaN) becomes ``nan[k]`` (the training median of the column; 0 where it had no
    value), then a column with no negative training value is clamped to [0, float64 max] and
    ``log1p``-ed (pyspmv's non-negative statistics), a signed one (``signed[k]``) is clamped to
    [-max, max] and mapped by ``sign(x) * log1p(|x|)``, which keeps its sign. The C core's inputs
    reproduce it (``in_nan``, ``in_lo``, ``in_hi`` and the ``log1p``/``slog1p`` transforms)."""

    names: tuple[str, ...]
    signed: tuple[bool, ...]
    nan: tuple[float, ...]

    @classmethod
    def fit(cls, X: pd.DataFrame, names: tuple[str, ...] | list[str]) -> FeatureTransform:
        a = X.loc[:, list(names)].to_numpy(dtype=np.float64)
        signed, nan = [], []
        for k in range(a.shape[1]):
            v = a[:, k]
            fin = v[np.isfinite(v)]
            signed.append(bool((v[~np.isnan(v)] < 0).any()))
            nan.append(float(np.median(fin)) if fin.size else 0.0)
        return cls(tuple(names), tuple(signed), tuple(nan))

    def apply(self, X: pd.DataFrame) -> np.ndarray:
        """The transformed columns (float64, one per name)."""
        a = X.loc[:, list(self.names)].to_numpy(dtype=np.float64, copy=True)
        if a.size:
            miss = np.isnan(a)
            a[miss] = np.broadcast_to(np.asarray(self.nan, dtype=np.float64), a.shape)[miss]
        s = np.asarray(self.signed, dtype=bool)
        np.clip(a, np.where(s, -_BIG, 0.0), _BIG, out=a)
        return np.where(s, np.copysign(np.log1p(np.abs(a)), a), np.log1p(np.maximum(a, 0.0)))

    def subset(self, names: tuple[str, ...] | list[str]) -> FeatureTransform:
        i = [self.names.index(n) for n in names]
        return FeatureTransform(tuple(names), tuple(self.signed[k] for k in i), tuple(self.nan[k] for k in i))


def config_table(X: pd.DataFrame, schema: Schema, who: str) -> pd.DataFrame:
    """The configurations X measures, one row each (indexed by id, sorted): the schema's parameter
    columns (NaN: the configuration has none). A parameter must be one value per configuration."""
    cols = list(schema.params)
    ids = X["config"].astype(str)
    P = X.loc[:, cols].astype(np.float64).set_axis(ids.to_numpy())
    if cols:
        spread = P.fillna(np.inf).groupby(level=0).nunique() > 1
        if spread.to_numpy().any():
            c, p = next((r, col) for r in spread.index for col in cols if spread.loc[r, col])
            raise ValueError(f"The parameter column {p!r} of the 'X' parameter of {who} holds several values for "
                             f"configuration {c!r}; a parameter column describes the configuration (one value each).")
    first = P[~P.index.duplicated()].sort_index()
    first.index.name = "config"
    return first
