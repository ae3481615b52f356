"""Timed SpMV runs of many configurations on one matrix: ``benchmark(A, configs)``."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
import platform
import time
from collections.abc import Iterable
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from . import _core
from .configs import Config, config
from .configs import configs as all_configs
from .matrix import as_matrix, value_dtype
from .run import check_x, prepare, require_device

COLUMNS = ["matrix", "group", "dtype", "device", "config", "median_ms", "q25_ms", "q75_ms", "min_ms",
           "repeats", "convert_ms", "status", "note"]


def device_info(device: str = "cpu") -> dict[str, Any]:
    """What a timing table must record about the machine it was measured on."""
    info: dict[str, Any] = {
        "device": device,
        "machine": platform.machine(),
        "processor": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS", ""),
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
    if device == "cuda":
        require_device(device)
    return info


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


def reference_check(A64: Any, x: np.ndarray, y: np.ndarray, dtype: np.dtype) -> float | None:
    """Worst error of ``y`` against float64 scipy, scaled per row by ``(|A| |x|)_i * len_i * eps``.

    Returns None when every row is within 4 units of that bound (the CSparse-style residual test
    with Ginkgo's "k times eps" tolerance), else the worst scaled error.
    """
    x64 = x.astype(np.float64)
    ref = A64 @ x64
    scale = abs(A64) @ np.abs(x64)
    rowlen = np.diff(A64.indptr).astype(np.float64) + 1.0
    eps = float(np.finfo(dtype).eps)
    bound = scale * rowlen * eps + np.finfo(np.float64).tiny
    err = np.abs(y.astype(np.float64) - ref)
    # Rows whose reference is inf or nan must match it exactly (same non-finite value).
    nonfinite = ~np.isfinite(ref)
    if np.any(nonfinite):
        same = np.isclose(y[nonfinite].astype(np.float64), ref[nonfinite], equal_nan=True)
        if not np.all(same):
            return float("inf")
        err[nonfinite] = 0.0
    worst = float(np.max(err / bound)) if err.size else 0.0
    return None if worst <= 4.0 else worst


def benchmark(A: Any, configs: Iterable[Config | str] | None = None, *, device: str = "cpu",
              dtype: Any = "float64", repeats: int = 200, warmup: int = 10, budget_s: float = 1.0,
              check: bool = True, seed: int = 0, progress: bool | None = None) -> pd.DataFrame:
    """Time SpMV with each configuration on ``A``.

    Each configuration's conversion (from CSR, library setup included) is timed once as
    ``convert_ms``; then, after ``warmup`` untimed runs, each of up to ``repeats`` runs is timed
    alone on a monotonic clock, stopping early once ``budget_s`` seconds have been spent.
    Before timing, the result is checked against scipy in float64.

    Parameters
    ----------
    A : Matrix or scipy.sparse matrix
    configs : iterable of Config or str, optional
        Default: every configuration of ``device``.
    device : {'cpu', 'cuda'}
    dtype : {'float32', 'float64'}
    repeats, warmup : int
    budget_s : float
        Time budget of the timed runs per configuration (at least one run is always made).
    check : bool
        Compare each configuration's result with scipy before timing it.
    seed : int
        Seed of the random ``x`` (uniform in [-1, 1), never all zero).
    progress : bool, optional
        Show a progress bar; default: when attached to a terminal.

    Returns
    -------
    pandas.DataFrame
        One row per configuration, columns ``matrix, group, dtype, device, config, median_ms,
        q25_ms, q75_ms, min_ms, repeats, convert_ms, status, note``. ``status`` is ``ok``,
        ``not_applicable`` (the format cannot hold ``A``; ``note`` says why) or ``wrong`` (the
        result failed the reference check; not timed). ``df.attrs['device_info']`` describes the
        machine.

    Raises
    ------
    pyspmv.DeviceUnavailableError
        ``device='cuda'`` without a usable GPU.
    """
    M = as_matrix(A)
    dt = value_dtype(dtype)
    if not isinstance(repeats, int) or repeats < 1:
        raise ValueError(f"The 'repeats' parameter of benchmark() must be an int >= 1. Got {repeats!r} instead.")
    if not isinstance(warmup, int) or warmup < 0:
        raise ValueError(f"The 'warmup' parameter of benchmark() must be an int >= 0. Got {warmup!r} instead.")
    info = device_info(device)
    cfgs = [config(c) for c in (all_configs(device) if configs is None else configs)]
    for c in cfgs:
        if c.device != device:
            raise ValueError(f"Configuration {c.id!r} runs on {c.device}, not on device={device!r}.")
    rng = np.random.default_rng(seed)
    x = rng.uniform(-1.0, 1.0, M.ncols).astype(dt)
    x[x == 0] = 0.5
    A64 = M.astype(np.float64).to_scipy() if check else None
    rows = []
    base = {"matrix": M.name or "", "group": M.group or "", "dtype": dt.name, "device": device}
    for c in tqdm(cfgs, desc=M.name or "benchmark", disable=progress is False if progress is not None else None,
                  leave=False):
        row = {**base, "config": c.id, "median_ms": np.nan, "q25_ms": np.nan, "q75_ms": np.nan,
               "min_ms": np.nan, "repeats": 0, "convert_ms": np.nan, "status": "ok", "note": ""}
        t0 = time.perf_counter()
        try:
            _, F = prepare(M, c, dt)
        except _core.NotApplicableError as exc:
            row.update(status="not_applicable", note=str(exc))
            rows.append(row)
            continue
        row["convert_ms"] = (time.perf_counter() - t0) * 1e3
        try:
            xa = check_x(x, M.ncols, dt, F.format)
        except ValueError as exc:
            row.update(status="not_applicable", note=str(exc))
            rows.append(row)
            continue
        y = np.zeros(M.nrows, dtype=dt)
        if check:
            _core.mv(F._state, c.variant, xa, y)
            worst = reference_check(A64, xa, y, dt)
            if worst is not None:
                row.update(status="wrong", note=f"result differs from scipy float64: worst error {worst:.3g}x the bound")
                rows.append(row)
                continue
        med, q25, q75, mn, runs = _core.bench(F._state, c.variant, xa, y, warmup, repeats, float(budget_s))
        row.update(median_ms=med, q25_ms=q25, q75_ms=q75, min_ms=mn, repeats=int(runs))
        rows.append(row)
    df = pd.DataFrame(rows, columns=COLUMNS)
    df.attrs["device_info"] = info
    return df
