"""Measured datasets as model inputs: ``load(name_or_path)`` and ``design_rows`` (the one definition of X)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from .._params import OneOf, validate
from ..matrices.configs import PARAM_COLUMNS, Config, config_frame
from ..matrices.features import CONFIG_FEATURE_NAMES, CONFIG_LABELS, FEATURE_NAMES, X_COLUMNS
from ..matrices.matrix import VALUE_BYTES as _BYTES
from .collect import FEATURE_COLUMNS, TIMING_COLUMNS, read_table

#: PARAM_COLUMNS (re-exported): configuration parameter columns of X, in order, p_<name> for each
#: parameter an id may carry, as the C core's design row names them.
#: X_COLUMNS (re-exported): every column of X, in order (schema.md).
#: The value types by name: X's value_bytes (a float column).
VALUE_BYTES = {d: float(b) for d, b in _BYTES.items()}


@dataclass
class Dataset:
    """A measured dataset, one row of ``X`` per (matrix, [dtype,] configuration) that ran (status ok).

    Attributes
    ----------
    X : pandas.DataFrame
        The 33 matrix features, ``config, library, format, kernel``, the configuration parameters
        ``p_tpv, p_bs, p_c, p_sigma, p_h, p_bits, p_b`` (NaN where absent), ``value_bytes`` and
        ``bytes_moved, padding_ratio, launches``; a RangeIndex.
    y, q25, q75 : pandas.Series
        Median, first and third quartile runtime (ms) of each row of X.
    groups : pandas.Series
        The matrix of each row of X (name ``matrix``).
    table, features : pandas.DataFrame
        The full timings table (every status) and the features table.
    metadata : dict
    """

    X: pd.DataFrame
    y: pd.Series
    groups: pd.Series
    q25: pd.Series
    q75: pd.Series
    table: pd.DataFrame
    features: pd.DataFrame
    metadata: dict[str, Any] = field(default_factory=dict)

    def __repr__(self) -> str:
        return (f"Dataset({self.groups.nunique()} matrices, {len(self.X)} ok rows of {len(self.table)}, "
                f"device={self.metadata.get('device_info', {}).get('device', '?')})")


    def _repr_html_(self) -> str:
        """Device, value types, matrices, configurations, rows and the head of X, for Jupyter."""
        info = self.metadata.get("device_info", {})
        device = info.get("gpu_name") or info.get("processor") or info.get("device", "?")
        dtypes = ", ".join(sorted({"float32" if b == 4.0 else "float64" for b in self.X["value_bytes"].unique()}))
        rows = [("device", escape(str(device))), ("dtype", dtypes or "none"),
                ("matrices", f"{self.groups.nunique():,}"), ("configurations", f"{self.X['config'].nunique():,}"),
                ("rows (status ok)", f"{len(self.X):,} of {len(self.table):,}")]
        body = "".join(f"<tr><th style='text-align:left'>{k}</th><td style='text-align:left'>{v}</td></tr>"
                       for k, v in rows)
        head = pd.concat([self.groups, self.X[["config", "nrows", "nnz"]], self.y], axis=1).head()
        return f"<div><b>pyspmv Dataset</b><table>{body}</table>{head.to_html()}</div>"


def _config_frame(ids: Iterable[str]) -> pd.DataFrame:
    """Configuration columns of X for each id, in the order given: the core parses each distinct id
    once (:func:`pyspmv.matrices.configs.config_frame`); the ``config`` column keeps the id as the table spells it."""
    ids = list(ids)
    uniq = list(dict.fromkeys(ids))
    try:
        frame = config_frame(uniq)
    except ValueError as exc:
        raise ValueError(f"A dataset's configuration is unknown to this pyspmv: {exc}") from None
    frame["config"] = uniq
    return frame.set_index("config", drop=False).loc[ids].reset_index(drop=True)


def _assemble(feats: pd.DataFrame, cfg: pd.DataFrame, value_bytes: np.ndarray, cf: pd.DataFrame) -> pd.DataFrame:
    """X from aligned parts: feature rows, configuration columns, value bytes, configuration features."""
    X = pd.concat([feats.reset_index(drop=True)[list(FEATURE_NAMES)].astype(np.float64),
                   cfg.reset_index(drop=True),
                   pd.DataFrame({"value_bytes": np.asarray(value_bytes, dtype=np.float64)}),
                   cf.reset_index(drop=True)[list(CONFIG_FEATURE_NAMES)].astype(np.float64)], axis=1)
    for c in CONFIG_LABELS:
        X[c] = X[c].astype(str)
    for c in PARAM_COLUMNS:
        X[c] = X[c].astype(np.float64)
    return X[list(X_COLUMNS)]


def design_rows(features: Mapping[str, float], cfgs: Iterable[Config | str], config_feats: pd.DataFrame,
                value_bytes: float) -> pd.DataFrame:
    """Rows of X for one matrix and each configuration, exactly as :func:`load` builds them.

    Parameters
    ----------
    features : dict
        ``pyspmv.features(A)``.
    cfgs : iterable of Config or str
    config_feats : pandas.DataFrame
        ``pyspmv.config_features(A, cfgs, dtype=...)`` (indexed by configuration id, or with a
        ``config`` column).
    value_bytes : float
        4.0 (float32) or 8.0 (float64).

    Returns
    -------
    pandas.DataFrame
        One row per configuration, the columns of ``Dataset.X`` in order, a RangeIndex.
    """
    missing = [k for k in FEATURE_NAMES if k not in features]
    if missing:
        raise ValueError(f"The 'features' parameter of design_rows() lacks {missing[:5]}; give pyspmv.features(A).")
    validate("design_rows()", {"value_bytes": OneOf(tuple(VALUE_BYTES.values()), "or")}, locals())
    ids = [c.id if isinstance(c, Config) else str(c) for c in cfgs]
    cf = config_feats.set_index("config") if "config" in config_feats.columns else config_feats
    absent = [c for c in ids if c not in cf.index]
    if absent:
        raise ValueError(f"The 'config_feats' parameter of design_rows() has no row for {absent[:3]}.")
    feats = pd.DataFrame([{k: float(features[k]) for k in FEATURE_NAMES}] * len(ids))
    return _assemble(feats, _config_frame(ids), np.full(len(ids), float(value_bytes)), cf.loc[ids])


def _roots() -> list[Path]:
    """Where shipped datasets live: installed beside the package, or the source tree's datasets/."""
    pkg = Path(__file__).resolve().parents[1]
    return [p for p in (pkg / "_datasets", pkg.parent / "datasets") if p.is_dir()]


def available() -> list[str]:
    """Names of the shipped datasets (folders holding a timings.csv.gz)."""
    return sorted({p.name for r in _roots() for p in r.iterdir() if (p / "timings.csv.gz").is_file()})


def _resolve(name_or_path: str | os.PathLike[str]) -> Path:
    p = Path(name_or_path)
    if isinstance(name_or_path, str) and name_or_path and "/" not in name_or_path and os.sep not in name_or_path:
        for r in _roots():
            if (r / name_or_path / "timings.csv.gz").is_file():
                return r / name_or_path
    if isinstance(name_or_path, os.PathLike) or os.sep in str(name_or_path) or "/" in str(name_or_path) or p.is_dir():
        if not p.is_dir():
            raise FileNotFoundError(f"The 'name_or_path' parameter of load(): no folder {p}.")
        return p
    names = available()
    raise ValueError(f"The 'name_or_path' parameter of load() must be a shipped dataset ({', '.join(names) or 'none'}"
                     f" installed) or a folder. Got {name_or_path!r} instead.")


def load(name_or_path: str | os.PathLike[str], dtype: str | None = "float64") -> Dataset:
    """A measured dataset by name (``'h100'``, ``'cpu'``: shipped with pyspmv) or folder.

    Parameters
    ----------
    name_or_path : str or path
        A shipped dataset's name, or a folder holding ``timings.csv.gz`` and ``features.csv.gz``
        (as :func:`pyspmv.collect` writes).
    dtype : {'float32', 'float64'} or None
        Keep the rows of one value type; None keeps both (``value_bytes`` tells them apart).

    Raises
    ------
    ValueError
        An unknown name (the message lists the shipped ones) or dtype.
    FileNotFoundError
        The folder or one of its tables is missing.
    """
    validate("load()", {"dtype": OneOf((*VALUE_BYTES, None), "or")}, locals())
    root = _resolve(name_or_path)
    paths = {k: root / f"{k}.csv.gz" for k in ("timings", "features")}
    for k, p in paths.items():
        if not p.is_file():
            raise FileNotFoundError(f"Dataset {root} has no {p.name} ({k} table); collect it with pyspmv.collect().")
    table = read_table(paths["timings"])
    feats = read_table(paths["features"])
    for df, cols, what in ((table, TIMING_COLUMNS, "timings"), (feats, FEATURE_COLUMNS, "features")):
        absent = [c for c in cols if c not in df.columns]
        if absent:
            raise ValueError(f"{paths[what]} lacks columns {absent[:5]}: not a pyspmv dataset table.")
    table = table[TIMING_COLUMNS]
    feats = feats[FEATURE_COLUMNS]
    meta_path = root / "metadata.json"
    try:
        metadata = json.loads(meta_path.read_text(encoding="utf-8")) if meta_path.is_file() else {}
    except ValueError as exc:                          # JSONDecodeError, UnicodeDecodeError
        raise ValueError(f"{meta_path} could not be read ({type(exc).__name__}: {exc}): restore it, or write it anew "
                         "from the parts with pyspmv.datasets.consolidate() (a collection folder, or the calibration "
                         "folder of pyspmv calibrate), or delete it (the dataset then records no machine).") from exc
    ok = table[table["status"] == "ok"]
    if dtype is not None:
        ok = ok[ok["dtype"] == dtype]
    ok = ok[ok["matrix"].isin(feats["matrix"])].reset_index(drop=True)
    frows = feats.set_index("matrix").loc[ok["matrix"]]
    X = _assemble(frows, _config_frame(ok["config"]), ok["dtype"].map(VALUE_BYTES).to_numpy(), ok)
    return Dataset(X=X, y=ok["median_ms"].astype(np.float64).rename("median_ms"),
                   groups=ok["matrix"].astype(str).rename("matrix"),
                   q25=ok["q25_ms"].astype(np.float64).rename("q25_ms"),
                   q75=ok["q75_ms"].astype(np.float64).rename("q75_ms"),
                   table=table, features=feats, metadata=metadata)


#: The metadata key of a supplement (:func:`combine`): a collection of configurations measured, again or for the first
#: time, on matrices that other datasets hold.
SUPPLEMENT_KEY = "supplement"
#: How far a supplement's features of a matrix may lie from the dataset's that holds it (relative): the same matrix
#: measured twice gives the same features but for the last bits of sums taken in another order and of the CSV's text.
SUPPLEMENT_RTOL = 1e-9


def combine(first: str | os.PathLike[str], *more: str | os.PathLike[str], dtype: str | None = "float64") -> Dataset:
    """``first`` with the matrices each of ``more`` adds: every matrix comes from the first dataset that has it.

    For training on a shipped dataset and a collection measured since on the same device (the
    ``cuda`` default: ``h100`` and ``h100_large``). A dataset whose ``metadata.json`` holds
    ``"supplement": true`` (:data:`SUPPLEMENT_KEY`) is a supplement: a collection of some configurations on
    matrices that the datasets before it hold (new configurations, or ones measured again). Its rows join those
    matrices' rows, each replacing the row of the same matrix, value type and configuration, of whatever status;
    the matrices' features stay the first dataset's (a supplement's must agree with them within
    :data:`SUPPLEMENT_RTOL`, else it is an error), and a matrix no dataset before it holds is left out.
    ``metadata`` is the first's, with ``sources``: ``[name, matrices it gave]`` per dataset, in order (for a
    supplement, the matrices it gave rows to), and ``supplements``: the names of the supplements, where any.
    Arguments as :func:`load`.

    Raises
    ------
    ValueError
        A supplement's features of a matrix differ from the dataset's that holds it (the message names the
        matrix and the feature): it measured another matrix under the same name.
    """
    parts, seen, sources, supplements = [], set(), [], []
    for name in (first, *more):
        ds = load(name, dtype=dtype)
        if name is not first and ds.metadata.get(SUPPLEMENT_KEY):
            supplements.append((name, ds))
            continue
        new = set(ds.table["matrix"]) - seen  # a matrix is the first dataset's that measured it, failed or not
        sources.append([str(name), len(new & set(ds.groups))])
        parts.append((ds, ds.groups.isin(new).to_numpy(), ds.table["matrix"].isin(new).to_numpy(),
                      ds.features["matrix"].isin(new).to_numpy()))
        seen |= new

    def cat(field: str, rows: int) -> Any:
        return pd.concat([getattr(p[0], field)[p[rows]] for p in parts], ignore_index=True)

    out = Dataset(X=cat("X", 1), y=cat("y", 1), groups=cat("groups", 1), q25=cat("q25", 1), q75=cat("q75", 1),
                  table=cat("table", 2), features=cat("features", 3),
                  metadata={**parts[0][0].metadata, "sources": sources})
    for name, sup in supplements:
        out, gave = _supplement(out, sup, str(name))
        sources.append([str(name), gave])
    if supplements:
        out.metadata["supplements"] = [str(name) for name, _ in supplements]
    return out


def _supplement(base: Dataset, sup: Dataset, name: str) -> tuple[Dataset, int]:
    """``base`` with the rows of supplement ``sup`` (:func:`combine`) joined, and how many matrices got rows."""
    held = set(base.features["matrix"])
    mats = sorted(set(sup.table["matrix"]) & held)
    fb = base.features.drop_duplicates("matrix").set_index("matrix").loc[mats, list(FEATURE_NAMES)].astype(np.float64)
    fs = sup.features.drop_duplicates("matrix").set_index("matrix").loc[mats, list(FEATURE_NAMES)].astype(np.float64)
    far = ~np.isclose(fs.to_numpy(), fb.to_numpy(), rtol=SUPPLEMENT_RTOL, atol=0.0, equal_nan=True)
    if far.any():
        i, j = np.argwhere(far)[0]
        raise ValueError(f"Supplement {name!r} measured matrix {mats[i]!r} with {FEATURE_NAMES[j]} = "
                         f"{fs.iat[i, j]!r}, where the dataset that holds it has {fb.iat[i, j]!r}: not the same "
                         "matrix. Collect the supplement on the matrices themselves (the same names, generators and "
                         "seeds), or leave it out.")
    if base.X.empty:
        return base, 0
    key = ["matrix", "dtype", "config"]
    tab = sup.table[sup.table["matrix"].isin(mats)]
    dtypes = pd.Series(base.X["value_bytes"].to_numpy()).map({b: d for d, b in VALUE_BYTES.items()})
    x_keys = pd.MultiIndex.from_arrays([base.groups.to_numpy(), dtypes.to_numpy(), base.X["config"].to_numpy()])
    keep_x = ~x_keys.isin(pd.MultiIndex.from_frame(tab[key]))
    keep_t = ~pd.MultiIndex.from_frame(base.table[key]).isin(pd.MultiIndex.from_frame(tab[key]))
    rows = np.flatnonzero(sup.groups.isin(mats).to_numpy())
    X = sup.X.iloc[rows].reset_index(drop=True)
    X[list(FEATURE_NAMES)] = fb.loc[sup.groups.iloc[rows]].to_numpy()  # the holder's features, bit for bit

    def join(a: Any, b: Any) -> Any:
        return pd.concat([a[keep_x].reset_index(drop=True), b.iloc[rows].reset_index(drop=True)], ignore_index=True)

    return Dataset(X=pd.concat([base.X[keep_x].reset_index(drop=True), X], ignore_index=True),
                   y=join(base.y, sup.y), groups=join(base.groups, sup.groups), q25=join(base.q25, sup.q25),
                   q75=join(base.q75, sup.q75),
                   table=pd.concat([base.table[keep_t], tab], ignore_index=True), features=base.features,
                   metadata=base.metadata), len(mats)
