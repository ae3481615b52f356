"""Shared pieces of the runtime models: row keys, transforms, the fit's records (:class:`RankMixin`)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from .._params import Interval, validate
from ..matrices.configs import PARAM_COLUMNS
from ..matrices.features import CONFIG_NUMERIC, X_COLUMNS
from ..matrices.matrix import VALUE_BYTES
from ..ranking.layout import lookup_keys
from ._schema import (
    CONFIG_CATEGORICAL,
    OWN,
    FeatureTransform,
    Schema,
    check_groups,
    check_X,
    config_table,
    resolve_schema,
)

__all__ = ["CONFIG_CATEGORICAL", "CONFIG_NUMERIC", "OWN", "PARAM_COLUMNS", "X_COLUMNS", "FeatureTransform", "Schema",
           "check_X", "check_groups"]

#: Lehnert et al.'s Table 2 features, plus two of the per-configuration ones (``pyspmv.CONFIG_FEATURE_NAMES``).
LEHNERT_FEATURES: tuple[str, ...] = ("nnz", "nrows", "nnz_max", "nnz_mean", "nnz_sd", "ell_fill", "dia_fill", "ndiag")
CONFIG_FEATURES: tuple[str, ...] = ("bytes_moved", "padding_ratio")


def check_y(y: Any, n: int, who: str) -> np.ndarray:
    """Runtimes in ms as a float64 array of length ``n``, all finite and positive."""
    a = np.asarray(y, dtype=np.float64).ravel()
    if a.shape[0] != n:
        raise ValueError(f"The 'y' parameter of {who} must have one runtime per row of X ({n}). Got {a.shape[0]} instead.")
    if not np.all(np.isfinite(a)) or np.any(a <= 0):
        bad = a[~(np.isfinite(a) & (a > 0))][0]
        raise ValueError(f"The 'y' parameter of {who} must hold finite positive runtimes (ms). Got {bad!r} instead.")
    return a


def log_features(X: pd.DataFrame, names: tuple[str, ...] | list[str]) -> np.ndarray:
    """``log1p`` of non-negative columns (NaN to 0, values below 0 clipped to 0, inf to the float64 max),
    float64: pyspmv's per-configuration columns (bytes moved), whose transform is fixed."""
    return FeatureTransform(tuple(names), (False,) * len(names), (0.0,) * len(names)).apply(X)


def mapping_key(X: pd.DataFrame) -> np.ndarray:
    """Format, kernel and thread mapping of each row: ``library/format/kernel[/tpv=N]``."""
    lib = X["library"].astype(str).to_numpy()
    fmt = X["format"].astype(str).to_numpy()
    ker = X["kernel"].fillna("").astype(str).to_numpy()
    tpv = X["p_tpv"].to_numpy(dtype=np.float64)
    out = np.empty(len(X), dtype=object)
    for i in range(len(X)):
        k = f"{lib[i]}/{fmt[i]}"
        if ker[i]:
            k += f"/{ker[i]}"
        if np.isfinite(tpv[i]):
            k += f"/tpv={int(tpv[i])}"
        out[i] = k
    return out


def group_key(X: pd.DataFrame, by: str) -> np.ndarray:
    """Row groups for per-group models: ``"config"`` (one per id), ``"mapping"``, ``"format"`` (these two
    need pyspmv's library, format and kernel columns); each key ends in ``@f32`` or ``@f64`` (the value
    type), so the two precisions never share a fit."""
    if by in ("mapping", "format") and "format" not in X.columns:
        raise ValueError(f"Grouping rows by {by!r} needs pyspmv's library, format and kernel columns; a model on "
                         "your own schema groups by 'config'.")
    if by == "config":
        k = X["config"].astype(str).to_numpy(dtype=object)
    elif by == "mapping":
        k = mapping_key(X)
    elif by == "format":
        k = X["format"].astype(str).to_numpy(dtype=object)
    else:
        raise ValueError(f"The grouping must be one of 'config', 'mapping', 'format'. Got {by!r} instead.")
    return k + value_type_suffix(X["value_bytes"])


def group_index(keys: Any, known: np.ndarray, who: str, what: str = "configuration") -> np.ndarray:
    """Index of each row's key in the model's sorted ``known`` keys; a key the model was not trained on
    is an error naming it, ``who`` (the method) and ``what`` the keys are."""
    keys = np.asarray(keys)
    i = lookup_keys(keys, known)
    if (i < 0).any():
        raise ValueError(f"The 'X' parameter of {who} has {what} {keys[i < 0][0]!r} that the model was not trained "
                         f"on ({len(known)} known).")
    return i


def value_type_suffix(value_bytes: Any) -> np.ndarray:
    """The ``@f32`` / ``@f64`` ending of a configuration's key (:func:`group_key`) for each value size."""
    vb = np.asarray(value_bytes, dtype=np.float64)
    out = "@" + vb.astype(str)
    for b in VALUE_BYTES.values():                  # "@f32", "@f64"
        out = np.where(vb == b, f"@f{8 * b}", out)
    return out


def unit_key(groups: Any, value_bytes: Any) -> np.ndarray:
    """The (matrix, value type) unit of each row: a matrix measured in two value types is two units,
    for ranking and for its evaluation (:func:`pyspmv.evaluate.ranking`'s ``unit``).

    Parameters
    ----------
    groups : array-like
        The matrix of each row (a dataset's ``groups``).
    value_bytes : array-like
        The bytes of a value of each row (``X["value_bytes"]``: 4 or 8).

    Returns
    -------
    numpy.ndarray
        One string per row, ``"<matrix>@<value_bytes>"`` (``"west0479@8.0"``).
    """
    return (pd.Series(np.asarray(groups)).astype(str) + "@"
            + pd.Series(np.asarray(value_bytes, dtype=np.float64)).astype(str)).to_numpy()


def param_logs(X: pd.DataFrame, names: tuple[str, ...] = PARAM_COLUMNS) -> np.ndarray:
    """log2 of each configuration parameter, 0 where the configuration has none (NaN) or it is <= 0."""
    p = X.loc[:, list(names)].to_numpy(dtype=np.float64, copy=True)
    p[~np.isfinite(p) | (p <= 0)] = 1.0
    return np.log2(p)


def progress(iterable: Iterable[Any] | None = None, *, total: int | None = None, desc: str, verbose: Any = 0) -> Any:
    """A tqdm bar on stderr for a step of a fit, shown when ``verbose`` (an estimator's parameter) is >= 1."""
    return tqdm(iterable, total=total, desc=desc, disable=not verbose, file=sys.stderr, leave=False,
                dynamic_ncols=True)


#: An estimator's ``verbose``: scikit-learn's convention, an int >= 0 (or a bool).
VERBOSE = Interval("int", 0, bools=True)


def check_verbose(verbose: Any, who: str) -> None:
    """``verbose``: an int >= 0 (or a bool), scikit-learn's convention: 0 silent, >= 1 progress bars."""
    validate(who, {"verbose": VERBOSE}, locals())


def conversion_fit(formats: Any, nnz: Any, convert_ms: Any) -> dict[str, list[float]]:
    """Per format, least squares ``convert_ms = a + b * nnz`` over the rows with a finite time, a and
    b >= 0 (a falls back to the mean time with b = 0 where the slope would be negative or unknown)."""
    fmt = np.asarray(formats, dtype=object)
    x, y = np.asarray(nnz, dtype=np.float64), np.asarray(convert_ms, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y) & (y >= 0)
    out: dict[str, list[float]] = {}
    for f in sorted({str(v) for v in fmt[ok]}):
        r = ok & (fmt == f)
        xf, yf = x[r], y[r]
        a, b = float(yf.mean()), 0.0
        if len(xf) > 1 and np.ptp(xf) > 0:
            b1, a1 = np.polyfit(xf, yf, 1)
            if b1 >= 0:
                a, b = float(a1), float(b1)
        out[f] = [max(a, 0.0), b]
    return out


class RankMixin:
    """Ranking helpers shared by every model, and what every fit records besides its own model.

    ``rank_scores(X)`` returns one score per row, lower meaning faster (regressors: predicted ms);
    ``predict_best(X, groups)`` returns the configuration id with the lowest score per matrix.
    Every ``fit`` ends in :meth:`_fit_extras`: ``value_types_`` (the value types X held) and
    ``convert_ms_`` (per format, ``[a, b]`` of ``convert_ms = a + b * nnz``, from ``fit``'s
    ``convert_ms`` or X's ``convert_ms`` column; None without either), which :func:`pyspmv.rank`'s
    ``n_calls`` uses.

    Under scikit-learn's metadata routing ``fit`` requests ``groups`` by default (:mod:`pyspmv.models`):
    the matrices of the rows it trains on are what its training and a group splitter's folds need alike.
    """

    __metadata_request__fit = {"groups": True}  # noqa: RUF012 (scikit-learn reads the default requests here)

    def _fit_schema(self, X: Any, groups: Any, who: str, *, need_groups: bool = True, min_features: int = 1,
                    own_subset: bool = False) -> tuple[pd.DataFrame, np.ndarray | None]:
        """Resolve and record the schema (``schema_``, ``feature_tf_``, ``configs_``) from the estimator's
        ``features`` and ``params`` parameters, check ``X`` against it and ``groups`` (the matrix of each
        row; an integer id per row is returned, None when not ``need_groups`` and not given).
        ``own_subset``: ``features`` naming only pyspmv's features (and ``params`` None) picks among
        pyspmv's table rather than naming a schema."""
        features, params = getattr(self, "features", None), getattr(self, "params", None)
        if own_subset and params is None and features is not None and set(features) <= set(OWN.features):
            features = None
        schema = resolve_schema(features, params, who, min_features)
        X = check_X(X, who, schema)
        mids = check_groups(groups, len(X), who) if need_groups or groups is not None else None
        self.schema_ = schema
        self.feature_tf_ = FeatureTransform.fit(X, schema.features)
        self.configs_ = config_table(X, schema, who)
        return X, mids

    def _check(self, X: Any, who: str) -> pd.DataFrame:
        """``X`` checked against the fitted schema."""
        return check_X(X, who, getattr(self, "schema_", OWN))

    def _fit_extras(self, X: pd.DataFrame, convert_ms: Any, who: str) -> None:
        vb = X["value_bytes"].to_numpy(dtype=np.float64)
        self.value_types_ = [d for d, b in VALUE_BYTES.items() if (vb == b).any()]
        if convert_ms is None and "convert_ms" in X.columns:
            convert_ms = X["convert_ms"]
        self.convert_ms_ = None
        if convert_ms is not None:
            if not getattr(self, "schema_", OWN).own:
                raise ValueError(f"The 'convert_ms' parameter (or column) of {who} fits conversion costs per pyspmv "
                                 "format and nnz, which a model on your own schema does not have; leave it out.")
            c = np.asarray(convert_ms, dtype=np.float64).ravel()
            if c.shape[0] != len(X):
                raise ValueError(f"The 'convert_ms' parameter of {who} must have one conversion time (ms) per row of X "
                                 f"({len(X)}). Got {c.shape[0]} instead.")
            self.convert_ms_ = conversion_fit(X["format"].astype(str).to_numpy(), X["nnz"], c) or None

    def rank_scores(self, X: pd.DataFrame) -> np.ndarray:
        """Score per row of ``X``, lower is better; regressors return their predicted runtime (ms)."""
        return np.asarray(self.predict(X), dtype=np.float64)  # type: ignore[attr-defined]

    def predict_best(self, X: pd.DataFrame, groups: Any) -> pd.Series:
        """The best configuration per matrix: a Series indexed by matrix (``groups``, required: the matrix
        of each row); when X holds both value types, indexed by (matrix, value_bytes) pairs."""
        check_groups(groups, len(X) if hasattr(X, "__len__") else -1, f"{type(self).__name__}.predict_best")
        s = self.rank_scores(X)
        s = np.where(np.isfinite(s), s, np.inf)
        keys = np.asarray(groups)
        vb = (X["value_bytes"] if "value_bytes" in X.columns else pd.Series(8.0, index=X.index)).to_numpy(np.float64)
        df = pd.DataFrame({"m": keys, "vb": vb, "s": s, "config": X["config"].to_numpy()}).reset_index(drop=True)
        both = len(np.unique(vb)) > 1
        best = df.loc[df.groupby(["m", "vb"] if both else "m", sort=False)["s"].idxmin()]
        index = (pd.MultiIndex.from_arrays([best["m"].to_numpy(), best["vb"].to_numpy()], names=["matrix", "value_bytes"])
                 if both else pd.Index(best["m"].to_numpy()))
        return pd.Series(best["config"].to_numpy(), index=index, name="config")


def unique_rows(F: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The first row of each distinct row of ``F`` and each row's distinct-row index: rows with equal
    inputs share one evaluation (a prediction depends on the row's own inputs only, not on which
    matrix the row names)."""
    _, first, inv = np.unique(F, axis=0, return_index=True, return_inverse=True)
    return first, np.asarray(inv).ravel()
