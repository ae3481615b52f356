"""Guo & Wang's and Wang, Gu & Li's benchmark-matrix models: instrumentation and relation fitting."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

import numpy as np
import pandas as pd
from sklearn.base import BaseEstimator, RegressorMixin
from sklearn.utils.validation import check_is_fitted

from .._params import OneOf, validate
from ..devices.benchmark import benchmark, device_info
from ..matrices import generators as gen
from ..matrices.configs import config as get_config
from ..matrices.features import H100, config_features
from ..matrices.matrix import DTYPES, VALUE_BYTES, Matrix
from ..ranking.layout import Layout, lookup_keys
from ..ranking.rankmodel import Table
from ..ranking.spec import Spec, head, inputs
from ._common import (
    OWN,
    PARAM_COLUMNS,
    RankMixin,
    check_verbose,
    check_X,
    check_y,
    group_key,
    progress,
    value_type_suffix,
)

#: The instruments' value type.
_DTYPE = OneOf(DTYPES, "or")
#: The columns these models read from X (they need no tier-2 feature).
INPUT_COLUMNS: tuple[str, ...] = ("nrows", "nnz", "nnz_mean", "nnz_mode", "nnz_max", "nnz_sd", "hyb_width",
                                  "config", "library", "format", "kernel", *PARAM_COLUMNS, "value_bytes",
                                  "padding_ratio")
#: The H100's properties (pyspmv.matrices.features.H100) with the most threads of a block, which Guo's CSR splits at.
_H100 = {"sm_count": H100["sm_count"], "max_threads_per_sm": H100["threads_per_sm"], "max_threads_per_block": 1024,
         "warp_size": H100["warp_size"]}
#: Device properties assumed for the CPU: a "strip" is what all cores do in one sweep of 256 rows each.
_CPU = {"sm_count": os.cpu_count() or 1, "max_threads_per_sm": 256, "max_threads_per_block": 64, "warp_size": 1}

Timer = Callable[[Matrix, list[Any], str], pd.DataFrame]

#: The matrix statistics the relations read (the C form's inputs, in order).
_FORMULA_INPUTS = ("nrows", "nnz", "nnz_mean", "nnz_mode", "nnz_max", "nnz_sd", "hyb_width", "padding_ratio")

#: Each family's terms per kind of relation, in coefficient order, as (a, b) or (a, b, gate, lo, hi): the
#: term is z[a] * z[b], counted where lo < z[gate] <= hi (csrc/model_formula.c), with z the statistics
#: and the strips of :meth:`_BenchmarkModel._inputs` (``s_rows1``: s_rows - 1; ``B``: the most threads
#: of a block) and None a factor 1. Guo's CSR is two segments split at B; ELL is f(w) + (s - 1) g(w);
#: HYB its ELL terms plus its COO strips.
TERMS: dict[str, dict[str, list[tuple[Any, ...]]]] = {
    "guo": {
        "csr": [("s_rows", None, "nnz_mode", -np.inf, "B"), ("s_rows", "nnz_mode", "nnz_mode", -np.inf, "B"),
                ("s_rows", None, "nnz_mode", "B", np.inf), ("s_rows", "nnz_mode", "nnz_mode", "B", np.inf)],
        "ell": [(None, None), ("nnz_max", None), ("s_rows1", None), ("s_rows1", "nnz_max")],
        "coo": [(None, None), ("s_nnz", None)],
        "hyb": [(None, None), ("hyb_width", None), ("s_rows1", None), ("s_rows1", "hyb_width"), ("s_coo", None)],
    },
    "wang": {
        "csr": [("s_rows", None), ("s_rows", "nnz_mean"), ("s_rows", "nnz_sd"), ("s_rows", "nnz_max")],
        "ell": [("s_rows", None), ("s_rows", "nnz_max")],
        "jad": [(None, None), ("s_nnz", None), ("nnz_max", None)],
    },
}


def _factor(d: dict[str, np.ndarray], name: str | None, r: np.ndarray) -> np.ndarray:
    return np.ones(len(r)) if name is None else d[name][r]


def _bound(d: dict[str, np.ndarray], v: Any, r: np.ndarray) -> Any:
    return d[v][r] if isinstance(v, str) else v


def device_props(device: str) -> dict[str, int]:
    """SM count, threads per SM, threads per block and warp size of ``device`` (``cpu``: _CPU)."""
    if device == "cpu":
        return dict(_CPU)
    info = device_info(device)
    return {k: int(info[f"gpu_{k}"]) for k in _H100}


def _default_timer(repeats: int) -> Timer:
    def timer(A: Matrix, cfgs: list[Any], dtype: str) -> pd.DataFrame:
        return benchmark(A, cfgs, device=cfgs[0].device, dtype=dtype, repeats=repeats, warmup=3, budget_s=0.5)
    return timer


class _BenchmarkModel(RankMixin, RegressorMixin, BaseEstimator):
    """Runtime = terms(matrix, strips) @ coefficients, one linear relation per configuration (and dtype),
    fitted by least squares on the relative error (each row divided by its measured time).

    Subclasses define which formats they model (:meth:`_kind`); the terms of each are :data:`TERMS`'.
    Rows of configurations outside the model's formats predict NaN (the evaluation ranks only finite
    predictions). They read pyspmv's own statistics and formats only: no user schema."""

    _MAX_TERMS = 6
    _family = ""     # the relations' family in the portable form: "guo" or "wang"

    def _portable_table(self, layout: Any) -> Any:
        """The portable form's table (:func:`pyspmv.ranking.portable.portable`)."""
        return _formula_table(self, layout)

    def _props(self) -> dict[str, int]:
        p = dict(_H100 if self.device_props is None else self.device_props)
        for k in _H100:
            if not isinstance(p.get(k), int | np.integer) or p[k] < 1:
                raise ValueError(f"The 'device_props' parameter of {type(self).__name__} must give positive ints "
                                 f"{sorted(_H100)}. Got {k}={p.get(k)!r} instead.")
        return p

    def _inputs(self, X: pd.DataFrame, props: dict[str, int]) -> dict[str, np.ndarray]:
        T = props["sm_count"] * props["max_threads_per_sm"]
        d = {c: X[c].to_numpy(dtype=np.float64) for c in _FORMULA_INPUTS}
        d["s_rows"] = np.maximum(1.0, np.ceil(d["nrows"] / T))
        d["s_nnz"] = np.maximum(1.0, np.ceil(d["nnz"] / T))
        coo = np.maximum(0.0, d["padding_ratio"] * d["nnz"] - d["nrows"] * d["hyb_width"])
        d["s_coo"] = np.ceil(coo / T)
        d["s_rows1"] = d["s_rows"] - 1
        d["B"] = np.full(len(X), float(props["max_threads_per_block"]))
        return d

    def _kind(self, fmt: str, kernel: str) -> str | None:
        raise NotImplementedError

    def _terms(self, kind: str, d: dict[str, np.ndarray], r: np.ndarray) -> np.ndarray:
        """The columns of ``kind``'s :data:`TERMS` for rows ``r`` of the inputs ``d``, as the C form computes
        them: ``z[a] * z[b]``, times whether ``lo < z[gate] <= hi``."""
        cols = []
        for a, b, *gated in TERMS[self._family][kind]:
            v = _factor(d, a, r) * _factor(d, b, r)
            if gated:
                gate, lo, hi = gated
                z = d[gate][r]
                v = v * ((z > _bound(d, lo, r)) & (z <= _bound(d, hi, r)))
            cols.append(v)
        return np.stack(cols, axis=1)

    def _kinds(self, X: pd.DataFrame) -> np.ndarray:
        f, k = X["format"].astype(str).to_numpy(), X["kernel"].fillna("").astype(str).to_numpy()
        return np.array([self._kind(a, b) or "" for a, b in zip(f, k, strict=True)], dtype=object)

    def _fit_rows(self, X: pd.DataFrame, ms: np.ndarray, props: dict[str, int] | None = None) -> None:
        props = self._props() if props is None else props
        d = self._inputs(X, props)
        kinds = self._kinds(X)
        gk = group_key(X, "config")
        keys = np.unique(gk[kinds != ""])
        self.groups_ = keys
        self.kinds_ = np.empty(len(keys), dtype=object)
        self.coef_ = np.zeros((len(keys), self._MAX_TERMS))
        for i, g in enumerate(progress(keys, desc=type(self).__name__, verbose=getattr(self, "verbose", 0))):
            r = np.flatnonzero(gk == g)
            self.kinds_[i] = kinds[r[0]]
            A = self._terms(self.kinds_[i], d, r)
            # relative least squares (rows scaled by 1/t): small matrices weigh as much as large ones
            self.coef_[i, :A.shape[1]] = np.linalg.lstsq(A / ms[r, None], np.ones(len(r)), rcond=None)[0]
        self.props_ = props

    def fit(self, X: pd.DataFrame, y: Any, groups: Any = None, convert_ms: Any = None) -> _BenchmarkModel:
        """Fit each configuration's relation from dataset rows (runtime ``y`` in ms); ``groups`` unused
        (accepted, and requested under scikit-learn's metadata routing, as every model's);
        ``convert_ms``: conversion time (ms) per row for the conversion-cost fit (:class:`RankMixin`)."""
        who = f"{type(self).__name__}.fit"
        check_verbose(self.verbose, who)
        X = check_X(X, who, OWN, INPUT_COLUMNS)
        self._fit_rows(X, check_y(y, len(X), who))
        self._fit_extras(X, convert_ms, who)
        self.n_features_in_ = X.shape[1]
        return self

    def predict(self, X: pd.DataFrame) -> np.ndarray:
        """Predicted runtime (ms) per row; NaN for configurations the model does not cover or never saw."""
        check_is_fitted(self, "coef_")
        X = check_X(X, f"{type(self).__name__}.predict", OWN, INPUT_COLUMNS)
        d = self._inputs(X, self.props_)
        gk = group_key(X, "config")
        out = np.full(len(X), np.nan)
        ug = np.unique(gk)
        for g, i in zip(ug, lookup_keys(ug, self.groups_), strict=True):
            if i < 0:
                continue
            r = np.flatnonzero(gk == g)
            A = self._terms(self.kinds_[i], d, r)
            out[r] = A @ self.coef_[i, :A.shape[1]]
        return np.where(np.isnan(out), out, np.maximum(out, 1e-9))

    def _time(self, mats: list[tuple[str, Matrix]], cfgs: dict[str, Any], dtype: str, timer: Timer) -> pd.DataFrame:
        """Time every benchmark matrix with its kind's configuration; rows in the X layout of INPUT_COLUMNS."""
        rows = []
        for kind, A in mats:
            c = cfgs[kind]
            t = timer(A, [c], dtype)
            ok = t[t["status"] == "ok"]
            if ok.empty:
                continue
            lengths = np.diff(A.indptr)
            vals, counts = np.unique(lengths, return_counts=True)
            pr = float(config_features(A, [c], dtype=dtype)["padding_ratio"].iloc[0])
            r = {"matrix": A.name, "nrows": float(A.nrows), "nnz": float(A.nnz), "nnz_mean": float(lengths.mean()),
                 "nnz_mode": float(vals[np.argmax(counts)]), "nnz_max": float(lengths.max()),
                 "nnz_sd": float(lengths.std()), "hyb_width": float(lengths.max()), "config": c.id,
                 "library": c.library, "format": c.format, "kernel": c.kernel or "",
                 **dict(zip(PARAM_COLUMNS, c.param_values, strict=True)),
                 "value_bytes": float(VALUE_BYTES[dtype]), "padding_ratio": pr,
                 "ms": float(ok["median_ms"].iloc[0])}
            rows.append(r)
        return pd.DataFrame(rows)


def _default_configs(device: str, kinds: dict[str, str]) -> dict[str, Any]:
    return {k: get_config(v) for k, v in kinds.items()}


class GuoModel(_BenchmarkModel):
    """Guo & Wang's model: runtimes from strips (rows or nonzeros one full-GPU iteration covers).

    Relations per configuration (s: row strips, s_nnz: nonzero strips, B: max threads per block):
    CSR ``T = s * f(mode)`` with f linear on each side of B (two segments); ELL ``T = f(w) + (s - 1) g(w)``
    with f, g linear in the width w (the longest row); COO ``T = a + b s_nnz``; HYB the ELL relation at the
    Bell-Garland width plus the COO one over the remaining entries' strips.

    ``fit(X, y)`` fits these from dataset rows; :meth:`instrument` generates Guo's benchmark matrices from
    the device's properties, times them and fits the CSR, ELL and COO relations, HYB being ELL + COO.

    Parameters
    ----------
    device_props : dict or None
        ``sm_count, max_threads_per_sm, max_threads_per_block, warp_size``; None: the H100's for
        :meth:`fit`, the measured device's for :meth:`instrument` (the CPU: cores x 256 rows per strip).
    verbose : int, default=0
        0: silent; >= 1: progress bars on stderr (scikit-learn's convention).

    Attributes
    ----------
    groups_ : ndarray of str (``config@f32|f64``); ``kinds_`` : ndarray of str (csr, ell, coo, hyb);
    ``coef_`` : ndarray (n_groups, 6), the relation coefficients; ``props_`` : dict, device properties used;
    ``instrument_`` : DataFrame, the timed benchmark matrices (after :meth:`instrument`).
    """

    _family = "guo"

    def __init__(self, device_props: dict[str, int] | None = None, verbose: int = 0):
        self.device_props = device_props
        self.verbose = verbose

    def _kind(self, fmt: str, kernel: str) -> str | None:
        return fmt if fmt in ("csr", "ell", "coo", "hyb") else None

    def instrument(self, device: str = "cuda", *, dtype: str = "float64", configs: dict[str, str] | None = None,
                   strips: tuple[int, ...] = (1, 2, 3), row_lengths: tuple[int, ...] | None = None,
                   max_nnz: int = 1 << 26, repeats: int = 50, timer: Timer | None = None) -> GuoModel:
        """Generate the benchmark matrices for ``device``, time them and fit CSR, ELL, COO (HYB = ELL + COO).

        CSR and ELL: :func:`pyspmv.matrices.generators.guo` matrices, ``s`` strips of rows (one thread per
        row), every row ``x`` entries with x on both sides of max threads per block; COO: ``s`` strips of
        nonzeros (8 per row). Matrices past ``max_nnz``
        entries are skipped. ``timer(A, [config], dtype)`` returns benchmark()'s table (default:
        :func:`pyspmv.benchmark` with ``repeats``). ``configs`` maps csr/ell/coo/hyb to configuration ids.
        """
        validate("GuoModel.instrument", {"dtype": _DTYPE}, locals())
        props = device_props(device) if self.device_props is None else self._props()
        gpu = device != "cpu"
        ids = {"csr": "pyspmv/csr/vector/tpv=32/bs=256", "ell": "pyspmv/ell/bs=256", "coo": "pyspmv/coo/bs=256",
               "hyb": "pyspmv/hyb/bs=256"} if gpu else {"csr": "cpu/csr/rows", "ell": "cpu/ell", "coo": "cpu/coo",
                                                        "hyb": "cpu/hyb"}
        cfgs = _default_configs(device, {**ids, **(configs or {})})
        R, B = props["sm_count"] * props["max_threads_per_sm"], props["max_threads_per_block"]
        xs = row_lengths or tuple(sorted({1, 2, 4, 8, max(1, B // 2), B, B + B // 2, 2 * B}))
        dev = {"sm_count": props["sm_count"], "threads_per_sm": props["max_threads_per_sm"]}
        mats: list[tuple[str, Matrix]] = []
        for s in strips:
            for x in xs:
                if s * R * x <= max_nnz and x <= s * R:
                    A = gen.guo(s, x, mapping="thread", **dev)
                    mats += [("csr", A), ("ell", A)]
        for s in range(1, 2 * max(strips) + 1):
            if s * R <= max_nnz and R % 8 == 0:     # s strips of nonzeros: s * R / 8 rows of 8
                mats.append(("coo", gen.guo(s, 8, mapping="warp", warp_size=8, **dev)))
        tab = self._time(mats, cfgs, dtype, timer or _default_timer(repeats))
        if tab.empty:
            raise RuntimeError(f"GuoModel.instrument: no benchmark matrix could be timed on {device!r}.")
        self._fit_rows(tab, tab["ms"].to_numpy(), props)
        self._fit_extras(tab, None, f"{type(self).__name__}.instrument")
        self._add_hyb(cfgs["hyb"], cfgs["ell"], cfgs["coo"], dtype)
        self.instrument_ = tab
        self.n_features_in_ = len(INPUT_COLUMNS)
        return self

    def _add_hyb(self, hyb: Any, ell: Any, coo: Any, dtype: str) -> None:
        """HYB's relation as the sum of the fitted ELL and COO relations."""
        suf = str(value_type_suffix(float(VALUE_BYTES[dtype])))
        ge, gc = ell.id + suf, coo.id + suf
        if ge not in self.groups_ or gc not in self.groups_:
            return
        ce = self.coef_[list(self.groups_).index(ge)]
        cc = self.coef_[list(self.groups_).index(gc)]
        row = np.zeros(self._MAX_TERMS)
        row[:4] = ce[:4]
        row[0] += cc[0]
        row[4] = cc[1]
        keys = np.append(self.groups_, hyb.id + suf)
        order = np.argsort(keys)
        self.groups_ = keys[order]
        self.kinds_ = np.append(self.kinds_, "hyb")[order]
        self.coef_ = np.vstack([self.coef_, row])[order]


class WangModel(_BenchmarkModel):
    """Wang, Gu & Li's model: runtimes from the distribution of row lengths, per kernel.

    Benchmark matrices have row lengths drawn from a normal or a uniform law around a mean; each kernel's
    runtime is fitted as linear in the row strips ``s`` scaled by the row-length statistics:
    CSR (scalar, vector and the others) ``T = s (a + b mean + c sd + d max)``; ELL ``T = s (a + b max)``;
    JAD ``T = a + b s_nnz + c max`` (one pass per jagged diagonal).

    Parameters and attributes as :class:`GuoModel`.
    """

    _family = "wang"

    def __init__(self, device_props: dict[str, int] | None = None, verbose: int = 0):
        self.device_props = device_props
        self.verbose = verbose

    def _kind(self, fmt: str, kernel: str) -> str | None:
        return fmt if fmt in ("csr", "ell", "jad") else None

    def instrument(self, device: str = "cuda", *, dtype: str = "float64", configs: dict[str, str] | None = None,
                   strips: tuple[int, ...] = (1, 2), means: tuple[int, ...] = (2, 4, 8, 16, 32, 64),
                   max_nnz: int = 1 << 26, repeats: int = 50, seed: int = 0,
                   timer: Timer | None = None) -> WangModel:
        """Time :func:`pyspmv.matrices.generators.row_lengths` matrices (``s`` strips of rows, row lengths
        normal with sd mean/4 or uniform in mean ± mean/2) with each kernel (CSR vector, CSR scalar, ELL,
        JAD) and fit the relations."""
        validate("WangModel.instrument", {"dtype": _DTYPE}, locals())
        props = device_props(device) if self.device_props is None else self._props()
        gpu = device != "cpu"
        ids = ({"csr_vector": "pyspmv/csr/vector/tpv=8/bs=256", "csr_scalar": "pyspmv/csr/scalar/bs=256",
                "ell": "pyspmv/ell/bs=256", "jad": "pyspmv/jad/bs=256"} if gpu else
               {"csr_vector": "cpu/csr/nnz", "csr_scalar": "cpu/csr/rows", "ell": "cpu/ell", "jad": "cpu/jad"})
        cfgs = _default_configs(device, {**ids, **(configs or {})})
        R = props["sm_count"] * props["max_threads_per_sm"]
        mats: list[tuple[str, Matrix]] = []
        for s in strips:
            for m in means:
                if s * R * m * 1.5 > max_nnz:
                    continue
                for law, spread in (("normal", m / 4), ("uniform", m / 2)):
                    A = gen.row_lengths(s * R, m, spread, dist=law, ncols=max(s * R, 2 * m), seed=seed)
                    mats += [(k, A) for k in cfgs]
        tab = self._time(mats, cfgs, dtype, timer or _default_timer(repeats))
        if tab.empty:
            raise RuntimeError(f"WangModel.instrument: no benchmark matrix could be timed on {device!r}.")
        self._fit_rows(tab, tab["ms"].to_numpy(), props)
        self._fit_extras(tab, None, f"{type(self).__name__}.instrument")
        self.instrument_ = tab
        self.n_features_in_ = len(INPUT_COLUMNS)
        return self


# ---- portable form ----------------------------------------------------------------------------

def _formula_table(model: Any, layout: Layout) -> Table | None:
    """GuoModel, WangModel: the raw statistics, strips derived as the models do (ceil(n / threads),
    at least 1; HYB's COO strips from the padding), one gated term per entry of :data:`TERMS`; the
    output floored at 1e-9 ms."""
    I = {n: i for i, n in enumerate(_FORMULA_INPUTS)}
    ins = inputs([layout.col(n) for n in _FORMULA_INPUTS])
    ni = len(_FORMULA_INPUTS)
    T = float(model.props_["sm_count"] * model.props_["max_threads_per_sm"])
    B = float(model.props_["max_threads_per_block"])
    # derived: s_rows, s_nnz, s_coo, s_rows - 1
    d = {"da": [I["nrows"], I["nnz"], I["padding_ratio"], I["nrows"]], "db": [-1, -1, I["nnz"], -1],
         "dc": [-1, -1, I["nrows"], -1], "dd": [-1, -1, I["hyb_width"], -1], "dceil": [1, 1, 1, 1],
         "dlo": [-np.inf, -np.inf, 0.0, -np.inf], "ddiv": [T] * 4, "dlo2": [1.0, 1.0, -np.inf, 1.0],
         "dadd": [0.0, 0.0, 0.0, -1.0]}
    # z: the statistics, then the derived inputs in d's order; None: no factor (-1)
    z = {**I, "s_rows": ni, "s_nnz": ni + 1, "s_coo": ni + 2, "s_rows1": ni + 3, None: -1}
    bound = {"B": B}
    fam = model._family
    ptr, cols = [0], {k: [] for k in ("a", "b", "gate", "coef", "lo", "hi")}
    for i, kind in enumerate(model.kinds_):
        terms = TERMS[fam][kind]
        for t, (a, b, *gated) in enumerate(terms):
            g, lo, hi = gated or (None, 0.0, 0.0)
            for k, v in zip(("a", "b", "gate", "coef", "lo", "hi"),
                            (z[a], z[b], z[g], model.coef_[i, t], bound.get(lo, lo), bound.get(hi, hi)), strict=True):
                cols[k].append(v)
        ptr.append(ptr[-1] + len(terms))
    group = lookup_keys(group_key(layout.frame, "config"), model.groups_)
    f: dict[str, Any] = {**head(len(model.groups_), layout.ncols, ins, "identity", out_lo=1e-9), "formula.nderived": 4,
                         "formula.nterms": ptr[-1], "formula.term_ptr": np.array(ptr, np.int32)}
    for k in ("da", "db", "dc", "dd", "dceil"):
        f[f"formula.{k}"] = np.array(d[k], np.int32)
    for k in ("dlo", "ddiv", "dlo2", "dadd"):
        f[f"formula.{k}"] = np.array(d[k], np.float64)
    for k in ("a", "b", "gate"):
        f[f"formula.{k}"] = np.array(cols[k], np.int32)
    for k in ("coef", "lo", "hi"):
        f[f"formula.{k}"] = np.array(cols[k], np.float64)
    return layout.table(group, Spec("formula", f))
