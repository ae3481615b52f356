"""Small design tables (schema.md's X, y, groups) for the model and evaluation tests."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import types
import warnings
from functools import cache

import numpy as np
import pandas as pd

import pyspmv
from pyspmv.models._common import PARAM_COLUMNS


def config_columns(cfgs: list[pyspmv.Config], dtype: str = "float64") -> pd.DataFrame:
    """The configuration columns of X for ``cfgs``."""
    rows = []
    for c in cfgs:
        r = {"config": c.id, "library": c.library, "format": c.format, "kernel": c.kernel or ""}
        for p in PARAM_COLUMNS:
            r[p] = float(c.params[p[2:]]) if p[2:] in c.params else np.nan
        r["value_bytes"] = 4.0 if dtype == "float32" else 8.0
        rows.append(r)
    return pd.DataFrame(rows)


def frame(matrices: list, cfgs: list[pyspmv.Config], times: np.ndarray | None = None,
          dtype: str = "float64") -> types.SimpleNamespace:
    """A Dataset-like namespace: measured (times None) or given times[matrix, config] in ms."""
    parts = []
    cc = config_columns(cfgs, dtype)
    for i, A in enumerate(matrices):
        f = pyspmv.features(A)
        cf = pyspmv.config_features(A, cfgs, dtype=dtype)
        X = cc.copy()
        for k in reversed(pyspmv.FEATURE_NAMES):
            X.insert(0, k, f[k])
        for k in ("bytes_moved", "padding_ratio", "launches"):
            X[k] = cf[k].to_numpy(dtype=float)
        X.insert(0, "matrix", A.name)
        if times is None:
            with warnings.catch_warnings():  # timings on a busy machine are good enough for model tests
                warnings.simplefilter("ignore", pyspmv.NoisyTimingWarning)
                b = pyspmv.benchmark(A, cfgs, dtype=dtype, repeats=5, warmup=1, budget_s=0.005)
            X["median_ms"], X["q25"], X["q75"] = b.median_ms.to_numpy(), b.q25_ms.to_numpy(), b.q75_ms.to_numpy()
            X = X[(b.status == "ok").to_numpy()]
        else:
            X["median_ms"] = times[i]
            X["q25"], X["q75"] = times[i] * 0.99, times[i] * 1.01
        parts.append(X)
    T = pd.concat(parts, ignore_index=True)
    return types.SimpleNamespace(X=T.drop(columns=["matrix", "median_ms", "q25", "q75"]),
                                 y=T["median_ms"].rename("median_ms"), groups=T["matrix"].rename("matrix"),
                                 q25=T["q25"], q75=T["q75"])


@cache
def small_matrices() -> tuple:
    """Twelve small generated matrices of different structure."""
    ms = []
    for n in (8, 12, 16, 20):
        ms.append(pyspmv.generate("poisson2d", n))
    for n, s in ((150, 0), (300, 1), (500, 2)):
        ms.append(pyspmv.generate("random", n, seed=s))
        ms.append(pyspmv.generate("powerlaw", n, seed=s))
    ms += [pyspmv.generate("banded", 400), pyspmv.generate("poisson3d", 6)]
    return tuple(ms)


@cache
def cpu_frame() -> types.SimpleNamespace:
    """Measured CPU timings of the small matrices over a handful of CPU configurations."""
    ids = ["cpu/csr/rows", "cpu/csr/nnz", "cpu/coo", "cpu/ell", "cpu/sell/c=8/sigma=64", "cpu/hyb", "cpu/jad"]
    return frame(list(small_matrices()), [pyspmv.config(i) for i in ids])


def planted_frame(seed: int = 0) -> types.SimpleNamespace:
    """GPU configurations, times planted as exp(b0 + 0.9 log1p(nnz) + 0.2 log1p(nnz_max)) per config."""
    rng = np.random.default_rng(seed)
    ids = ["pyspmv/csr/scalar/bs=128", "pyspmv/csr/vector/tpv=8/bs=256", "cusparse/csr/default", "pyspmv/ell/bs=256",
           "pyspmv/coo/bs=256", "pyspmv/sell/c=32/sigma=256/bs=256"]
    cfgs = [pyspmv.config(i) for i in ids]
    ms = list(small_matrices())
    times = np.empty((len(ms), len(cfgs)))
    for i, A in enumerate(ms):
        f = pyspmv.features(A)
        for j in range(len(cfgs)):
            times[i, j] = np.exp(-6 + 0.1 * j + 0.9 * np.log1p(f["nnz"]) + 0.2 * j * np.log1p(f["nnz_max"]))
    del rng
    return frame(ms, cfgs, times=times)
