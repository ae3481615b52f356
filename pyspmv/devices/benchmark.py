"""Timed SpMV runs of many configurations on one matrix: ``benchmark(A, configs)``."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
import platform
import time
import warnings
from collections.abc import Iterable
from contextlib import ExitStack
from typing import TYPE_CHECKING, Any

import numpy as np

from .. import _core
from .._params import Interval, OneOf, validate
from ..matrices.configs import DEVICES, Config, config
from ..matrices.configs import configs as all_configs
from ..matrices.formats import FormatMatrix, convert
from ..matrices.matrix import Matrix, float32_overflow, value_dtype
from ..matrices.mmio import as_matrix
from . import gpu
from .machine import OtherWork, cpu_model, cpu_threads
from .run import require_device

if TYPE_CHECKING:                       # imported where a table is made: pandas costs 0.4 s to import
    import numpy.typing as npt
    import pandas as pd

    from ..matrices.mmio import MatrixLike

#: A configuration's timings count as disturbed (another process had the cores) when q75 exceeds
#: NOISE_RATIO times q25 and q25 by more than NOISE_FLOOR_MS (below that, timer jitter on a
#: microsecond product, not a busy machine): it is then timed once more, and a NoisyTimingWarning
#: names it if the spread stays.
NOISE_RATIO = 2.0
NOISE_FLOOR_MS = 0.02
#: CPU timings count as taken on a busy machine when other processes kept, on average over the
#: benchmark() call, more than this many CPUs busy beyond those its OpenMP threads leave free
#: (:class:`pyspmv.devices.machine.OtherWork`). A product whose threads wait for one another slows down
#: evenly beside other work, so its spread can stay narrow (issue 33: 12.0 ms instead of 0.04 ms,
#: q75/q25 near 1): only the machine's own counters show it.
BUSY_CPUS = 0.5


class NoisyTimingWarning(UserWarning):
    """:func:`pyspmv.benchmark` timed configurations whose spread says the machine was busy."""


class BusyMachineError(RuntimeError):
    """:func:`pyspmv.calibrate` saved no model: matrices timed again moved by more than ``max_drift``."""


class BusyMachineWarning(NoisyTimingWarning):
    """:func:`pyspmv.benchmark` timed CPU products while other processes used the CPUs they need."""


COLUMNS = ["matrix", "group", "dtype", "device", "config", "median_ms", "q25_ms", "q75_ms", "min_ms",
           "repeats", "convert_ms", "upload_ms", "status", "note"]


def device_info(device: str = "cpu") -> dict[str, Any]:
    """What a timing table must record about the machine it was measured on."""
    info: dict[str, Any] = {
        "device": device,
        "machine": platform.machine(),
        "processor": cpu_model(),
        "cpu_count": os.cpu_count(),
        "omp_num_threads": os.environ.get("OMP_NUM_THREADS", ""),
        "omp_wait_policy": os.environ.get("OMP_WAIT_POLICY", ""),
        "gomp_spincount": os.environ.get("GOMP_SPINCOUNT", ""),
        "python": platform.python_version(),
        "numpy": np.__version__,
    }
    if device == "cuda":
        require_device(device)
        info.update({f"gpu_{k}": v for k, v in gpu.device_info().items()})
    return info


class _Reference:
    """The float64 scipy product ``A64 @ x`` and its per-row error bound, computed once and shared by
    every configuration of a :func:`benchmark` call (on 1e8 entries the product costs a second)."""

    def __init__(self, A64: Any, x: np.ndarray, dtype: np.dtype):
        x64 = x.astype(np.float64)
        self.ref = A64 @ x64
        rowlen = np.diff(A64.indptr).astype(np.float64) + 1.0
        eps = float(np.finfo(dtype).eps)
        self.bound = (abs(A64) @ np.abs(x64)) * rowlen * eps + np.finfo(np.float64).tiny
        self.nonfinite = ~np.isfinite(self.ref)

    def worst(self, y: np.ndarray) -> float | None:
        """None when every row of ``y`` is within 4 bounds of the reference, else the worst ratio."""
        err = np.abs(y.astype(np.float64) - self.ref)
        # Rows whose reference is inf or nan must match it exactly (same non-finite value).
        if np.any(self.nonfinite):
            same = np.isclose(y[self.nonfinite].astype(np.float64), self.ref[self.nonfinite], equal_nan=True)
            if not np.all(same):
                return float("inf")
            err[self.nonfinite] = 0.0
        worst = float(np.max(err / self.bound)) if err.size else 0.0
        return None if worst <= 4.0 else worst


class _Runner:
    """Checked and timed products of one configuration on one converted matrix, CPU or GPU."""

    def __init__(self, F: FormatMatrix, c: Config, on: Any = None):
        self.F, self.c = F, c
        self.plan = gpu.Plan(on if on is not None else F, c) if c.device == "cuda" else None
        self.upload_ms = float("nan")
        if self.plan is not None:  # what this configuration alone would pay: upload + setup
            self.upload_ms = self.plan.setup_ms + (on.upload_ms if on is not None else 0.0)

    def mv(self, x: np.ndarray) -> np.ndarray:
        if self.plan is not None:
            return self.plan.mv(x)
        y = np.empty(self.F.shape[0], dtype=self.F.dtype)
        _core.mv(self.F.state, self.c.variant, x, y)
        return y

    def bench(self, x: np.ndarray | None, warmup: int, repeats: int, budget_s: float,
              back_to_back: int = 1) -> tuple[float, ...]:
        if self.plan is not None:     # x None: made on the device (a GPU timing that needs no host x)
            return self.plan.bench(x, warmup=warmup, repeats=repeats, budget_s=budget_s, result=False,
                                   back_to_back=back_to_back)[:5]
        if x is None:
            raise ValueError("a CPU timing needs its x")
        y = np.empty(self.F.shape[0], dtype=self.F.dtype)
        return _core.bench(self.F.state, self.c.variant, x, y, warmup, repeats, budget_s)

    def close(self) -> None:
        if self.plan is not None:
            self.plan.close()


def _format_key(c: Config) -> tuple[str, tuple[tuple[str, int], ...]]:
    return c.format, tuple(sorted(c.format_kwargs.items()))


def noisy(q25: float, q75: float) -> bool:
    """Whether quartiles ``q25``, ``q75`` (ms) are spread as a busy machine spreads them."""
    return bool(q75 > NOISE_RATIO * q25 and q75 - q25 > NOISE_FLOOR_MS)


def _spread(t: tuple[float, ...]) -> float:
    """q75/q25 of a (median, q25, q75, ...) timing."""
    return t[2] / t[1] if t[1] > 0 else float("inf")


def benchmark(A: MatrixLike, configs: Iterable[Config | str] | None = None, *, device: str | None = None,
              dtype: npt.DTypeLike | list[npt.DTypeLike] | tuple[npt.DTypeLike, ...] = "float64", repeats: int = 200,
              warmup: int = 10, budget_s: float = 1.0, check: bool = True, seed: int = 0,
              progress: bool | None = None, back_to_back: int = 1) -> pd.DataFrame:
    """Time SpMV with each configuration on ``A``.

    ``A`` is converted once per format and format parameters (configurations that differ only in
    their thread mapping share it), timed as ``convert_ms``. On the GPU, the converted matrix is
    uploaded once per format and shared by its thread mappings; each configuration's ``upload_ms``
    is that upload plus its own kernel or cuSPARSE setup (what using it alone costs), added to
    ``convert_ms``; then operands stay on the device and each timed product runs between two CUDA
    events. On the CPU,
    each product is timed on a monotonic clock. ``warmup`` untimed runs come first (fewer for a
    product slower than ``budget_s / warmup``: as many as fit in ``budget_s`` at the first one's
    time, at least one; none after a checked run that alone took ``budget_s``), then up to
    ``repeats`` timed ones, stopping early once ``budget_s`` seconds have been spent. Before timing,
    the result (of a run whose output was poisoned with NaN first, on the GPU) is checked against
    scipy in float64.

    A configuration whose quartiles are spread as on a busy machine (:func:`noisy`: q75 > 2 q25
    and more than 0.02 ms apart) is timed once more, keeping the tighter of the two; if still
    spread, its ``note`` says so and a :class:`pyspmv.NoisyTimingWarning` names it at the end. On
    the CPU, the call also counts the CPU time other processes took meanwhile on the CPUs it may
    use (Linux): past :data:`BUSY_CPUS` beyond what its OpenMP threads leave free, a
    :class:`pyspmv.BusyMachineWarning` says so, however narrow the spreads.

    Parameters
    ----------
    A : Matrix, scipy.sparse matrix, or path of a Matrix Market file
    configs : iterable of Config or str, optional
        Default: every configuration of ``device``.
    device : {'cpu', 'cuda'}, optional
        Default: the device of ``configs`` (they must share one), else ``'cpu'``.
    dtype : {'float32', 'float64'} or sequence of them
        Value type(s). With several, each format is converted once and its values cast for the
        others (each row's ``convert_ms`` is that conversion's time), and the rows come per dtype
        in the order given.
    repeats, warmup : int
        Timed runs wanted (at most; see ``budget_s``) and untimed runs before them (at most).
    budget_s : float, default 1.0
        Seconds of timed runs per configuration (warm-up excluded, though it bounds the warm-up as
        above): timing stops once they are
        spent, even short of ``repeats`` (at least one run is always made); ``repeats`` then says
        how many ran and ``note`` that the budget cut them. Raise it to get every repeat of slow
        products.
    check : bool
        Compare each configuration's result with scipy before timing it.
    seed : int
        Seed of the random ``x`` (uniform in [-1, 1), never all zero).
    progress : bool, optional
        Show a progress bar; default: when attached to a terminal.
    back_to_back : int, default 1
        GPU only: the products each timing queues back to back between its two events, reported as the run's
        time over their number. 1 times each product between its own events; more time what a product costs
        among others on a stream, as a solver's iterations run it: the events around each product add about
        2 microseconds on the H200 to a matrix that fits its L2 (``docs/results/gpu.md``). ``repeats`` then
        counts runs. At most :data:`MAX_BACK_TO_BACK`.

    Returns
    -------
    pandas.DataFrame
        One row per configuration, in the order given, columns ``matrix, group, dtype, device,
        config, median_ms, q25_ms, q75_ms, min_ms, repeats, convert_ms, upload_ms, status, note``.
        ``repeats`` is the runs made. ``status`` is ``ok`` (``note`` then says whether ``budget_s``
        cut the runs and whether the timings stayed noisy), ``not_applicable`` (the format or thread
        mapping cannot serve ``A``; ``note`` says why), ``wrong`` (the result failed the reference check; not timed) or
        ``error`` (the run failed, e.g. GPU out of memory; ``note`` says how).
        ``df.attrs['device_info']`` describes the machine (and the GPU, its driver, CUDA and cuSPARSE);
        ``df.attrs['other_cpus']`` is the CPUs' worth of other processes' work meanwhile (None: not
        measured, on the GPU, off Linux or in under 0.2 s).

    Raises
    ------
    pyspmv.DeviceUnavailableError
        ``device='cuda'`` without a usable GPU.

    Warns
    -----
    pyspmv.NoisyTimingWarning
        Configurations still noisy after timing them again: close other work, set
        ``OMP_NUM_THREADS`` to the cores you can have, or raise ``repeats`` and ``budget_s``.
    pyspmv.BusyMachineWarning
        (A NoisyTimingWarning.) Other processes used the CPUs the products needed while they were timed.
    """
    M = as_matrix(A)
    dts = _dtypes(dtype)
    validate("benchmark()", _COUNTS, locals())
    device, cfgs = _device_configs(device, configs)
    if back_to_back != 1 and device != "cuda":
        raise ValueError(f"The 'back_to_back' parameter of benchmark() must be 1 on device={device!r}: only GPU "
                         f"products are timed in runs. Got {back_to_back!r} instead.")
    info = device_info(device)
    A64 = M.astype(np.float64).to_scipy() if check else None
    others = OtherWork() if device == "cpu" else None
    runs: dict[np.dtype, _DtypeRun] = {}
    rows: dict[tuple[int, int], dict[str, Any]] = {}
    for d, dt in enumerate(dts):
        run = _DtypeRun(M, dt, device, seed, A64)
        if run.too_big:  # past float32's range: no configuration can serve it in float32
            for i, c in enumerate(cfgs):
                rows[d, i] = {**run.base, "config": c.id, "median_ms": np.nan, "q25_ms": np.nan, "q75_ms": np.nan,
                              "min_ms": np.nan, "repeats": 0, "convert_ms": np.nan, "upload_ms": np.nan,
                              "status": "not_applicable", "note": run.too_big}
        else:
            runs[dt] = run
    from tqdm.auto import tqdm
    bar = tqdm(total=len(cfgs) * len(dts), desc=M.name or "benchmark", leave=False,
               disable=progress is False if progress is not None else None)
    with bar, ExitStack() as pins:
        for run in runs.values() if device == "cuda" else ():
            pins.enter_context(gpu.pinned(run.x))       # uploaded once for each plan timed
        _time_by_format(M, cfgs, dts, runs, rows, bar, device, (warmup, repeats, budget_s, check, back_to_back))
    ordered = [rows[d, i] for d in range(len(dts)) for i in range(len(cfgs))]
    import pandas as pd
    df = pd.DataFrame(ordered, columns=COLUMNS)
    df.attrs["device_info"] = info
    df.attrs["other_cpus"] = None if others is None else others.cpus()
    _warn_busy(df, others, M.name)
    _warn_noisy(ordered, len(dts) > 1, M.name)
    return df


#: benchmark()'s counts of runs.
#: The most products benchmark(back_to_back=...) queues in one timed run (the core's SPMV_CUDA_MAX_RUN).
MAX_BACK_TO_BACK = 1024
_COUNTS = {"repeats": Interval("int", 1), "warmup": Interval("int", 0),
           "back_to_back": Interval("int", 1, MAX_BACK_TO_BACK, closed="both")}


def _device_configs(device: str | None, configs: Iterable[Any] | None) -> tuple[str, list[Config]]:
    """benchmark()'s device (None: the one that ``configs`` run on, or the CPU) and its configurations
    (None: all of the device's), each checked to run there."""
    given = None if configs is None else [config(c) for c in configs]
    if device is None:
        devices = sorted({c.device for c in given or ()})
        if len(devices) > 1:
            raise ValueError(f"benchmark() times one device per call; the configurations run on {devices}. Pass "
                             "device= and that device's configurations.")
        device = devices[0] if devices else "cpu"
    validate("benchmark()", {"device": OneOf(DEVICES)}, {"device": device})
    cfgs = all_configs(device) if given is None else given
    for c in cfgs:
        if c.device != device:
            raise ValueError(f"Configuration {c.id!r} runs on {c.device}, not on device={device!r}.")
    return device, cfgs


def _time_by_format(M: Matrix, cfgs: list[Config], dts: list[np.dtype], runs: dict[np.dtype, _DtypeRun],
                    rows: dict[tuple[int, int], dict[str, Any]], bar: Any, device: str,
                    timing: tuple[int, int, float, bool, int]) -> None:
    """Fill ``rows[dtype index, configuration index]`` for the value types in ``runs``.

    One conversion per format key at a time (large matrices cannot keep every format in memory), cast
    for the other value type rather than converted again; on the GPU, one upload per format key and
    value type, shared by the thread mappings. ``timing``: warmup, repeats, budget_s, check, back_to_back."""
    groups: dict[tuple[str, tuple[tuple[str, int], ...]], list[int]] = {}
    for i, c in enumerate(cfgs):
        groups.setdefault(_format_key(c), []).append(i)
    for (fmt, params), members in groups.items():
        F: FormatMatrix | Exception | None = None
        convert_ms = 0.0
        for d, dt in enumerate(dts):
            if dt not in runs:
                bar.update(len(members))
                continue
            if F is None:  # in the widest type wanted, so that casting loses nothing
                t0 = time.perf_counter()
                try:
                    F = convert(M, fmt, dtype=max(runs), **dict(params))
                except _core.NotApplicableError as exc:
                    F = exc
                convert_ms = (time.perf_counter() - t0) * 1e3
            # convert_ms stays the conversion's for every type: what a user converting pays
            Fd = F if isinstance(F, Exception) else F.astype(dt)
            with _Upload(Fd, device) as on:
                for i in members:
                    rows[d, i] = runs[dt].one(cfgs[i], Fd, on, convert_ms, *timing)
                    bar.update()
            del Fd
        del F


def _warn_noisy(ordered: list[dict[str, Any]], many: bool, name: str | None) -> None:
    """:class:`NoisyTimingWarning` naming the configurations (with their dtype when ``many``) still noisy."""
    spread = [f"{r['config']} ({r['dtype']})" if many else r["config"] for r in ordered
              if r["status"] == "ok" and noisy(r["q25_ms"], r["q75_ms"])]
    if spread:
        names = ", ".join(spread[:5]) + (f" and {len(spread) - 5} more" if len(spread) > 5 else "")
        warnings.warn(f"benchmark() of {name or 'the matrix'}: {len(spread)} configuration(s) kept q75/q25 > "
                      f"{NOISE_RATIO:g} after a second timing, so the machine was busy and their median_ms is "
                      f"unreliable: {names}. Close other work, set OMP_NUM_THREADS to the cores you can have, or "
                      "raise repeats and budget_s.", NoisyTimingWarning, stacklevel=3)


def _warn_busy(df: pd.DataFrame, others: OtherWork | None, name: str | None) -> None:
    """:class:`BusyMachineWarning` when other work took more than :data:`BUSY_CPUS` of the CPUs that
    ``df``'s timed CPU products needed."""
    used, threads = df.attrs["other_cpus"], cpu_threads()
    if others is None or used is None or threads is None or not (df["status"] == "ok").any():
        return
    free = max(others.ncpus - threads, 0)
    if used > free + BUSY_CPUS:
        warnings.warn(f"benchmark() of {name or 'the matrix'}: other processes kept {used:.1f} of the {others.ncpus} "
                      f"CPUs this process may use busy while it timed, and its {threads} OpenMP threads need "
                      f"{min(threads, others.ncpus)} of them, so its CPU timings are slower than on a quiet machine, "
                      "however narrow their spread. Close other work, set OMP_NUM_THREADS to the CPUs that are free, "
                      "or time again when the machine is quiet.", BusyMachineWarning, stacklevel=3)


def _dtypes(dtype: Any) -> list[np.dtype]:
    """benchmark()'s ``dtype``: one value type or a sequence of distinct ones."""
    many = isinstance(dtype, (list, tuple))
    dts = [value_dtype(d, "dtype") for d in dtype] if many else [value_dtype(dtype)]
    if not dts or len(set(dts)) != len(dts):
        raise ValueError(f"The 'dtype' parameter of benchmark() must be float32, float64 or a sequence of distinct "
                         f"ones. Got {dtype!r} instead.")
    return dts


class _Upload:
    """The GPU copy of F shared by its format's configurations (None on the CPU, for a format that
    does not apply, or when the upload failed: each configuration then reports its own error)."""

    def __init__(self, F: FormatMatrix | Exception, device: str):
        self.on = None
        if device == "cuda" and not isinstance(F, Exception):
            try:
                self.on = gpu.DeviceMatrix(F)
            except _core.DeviceUnavailableError:
                raise
            except (MemoryError, RuntimeError, ValueError):
                self.on = None  # each plan then uploads by itself and reports what fails

    def __enter__(self) -> Any:
        return self.on

    def __exit__(self, *exc: object) -> None:
        self.on = None


class _DtypeRun:
    """What the configurations timed in one value type share: x, the reference, the row's fields."""

    def __init__(self, M: Any, dt: np.dtype, device: str, seed: int, A64: Any, host_x: bool = True):
        self.M, self.dt = M, dt
        self.x: np.ndarray | None = None
        self.base = {"matrix": M.name or "", "group": M.group or "", "dtype": dt.name, "device": device}
        self.ref: _Reference | None = None
        self.too_big: str | None = None
        if not host_x:          # GPU timings alone, unchecked: each plan makes its x on the device
            return
        rng = np.random.default_rng(seed)
        # copy=False: float64's x is the draw itself (a second copy took 2.2 of the 4.8 ms this line took for 1e6
        # columns on the dev VM); finite and within [-1, 1], so that _one need not check it for each configuration
        self.x = rng.uniform(-1.0, 1.0, M.ncols).astype(dt, copy=False)
        self.x[self.x == 0] = 0.5
        self.too_big = float32_overflow(M.data) if dt == np.float32 else None
        self.ref = _Reference(A64, self.x, dt) if A64 is not None and not self.too_big else None

    def one(self, c: Config, F: FormatMatrix | Exception, on: Any, convert_ms: float, warmup: int, repeats: int,
            budget_s: float, check: bool, back_to_back: int = 1) -> dict[str, Any]:
        return _one(c, F, on, convert_ms, self.x, self.ref, self.base, warmup, repeats, budget_s,
                    check, back_to_back)


def _one(c: Config, F: FormatMatrix | Exception, on: Any, convert_ms: float, x: np.ndarray | None,
         ref: _Reference | None,
         base: dict[str, Any], warmup: int, repeats: int, budget_s: float, check: bool,
         back_to_back: int = 1) -> dict[str, Any]:
    """One configuration's row of the benchmark table."""
    row = {**base, "config": c.id, "median_ms": np.nan, "q25_ms": np.nan, "q75_ms": np.nan,
           "min_ms": np.nan, "repeats": 0, "convert_ms": np.nan, "upload_ms": np.nan, "status": "ok",
           "note": ""}
    if isinstance(F, Exception):
        return {**row, "status": "not_applicable", "note": str(F)}
    try:
        runner = _Runner(F, c, on)
    except _core.NotApplicableError as exc:
        return {**row, "status": "not_applicable", "note": str(exc)}
    except (MemoryError, RuntimeError) as exc:
        if isinstance(exc, _core.DeviceUnavailableError):
            raise
        return {**row, "status": "error", "note": f"{type(exc).__name__}: {exc}"}
    try:
        row.update(convert_ms=convert_ms + (0.0 if np.isnan(runner.upload_ms) else runner.upload_ms),
                   upload_ms=runner.upload_ms)
        if check and ref is not None:
            t0 = time.perf_counter()
            out = runner.mv(x)
            if 0 < budget_s <= time.perf_counter() - t0:
                warmup = 0  # a product that alone spends the budget: the check run was its warm-up
            worst = ref.worst(out)
            if worst is not None:
                return {**row, "status": "wrong",
                        "note": f"result differs from scipy float64: worst error {worst:.3g}x the bound"}
        t = runner.bench(x, warmup, repeats, float(budget_s), back_to_back)
        notes = []
        if noisy(t[1], t[2]):  # once more; the tighter of the two is kept
            again = runner.bench(x, warmup, repeats, float(budget_s), back_to_back)
            notes.append(f"timed twice: q75/q25 was {_spread(t):.3g}")
            t = min(t, again, key=_spread)
            if noisy(t[1], t[2]):
                notes.append(f"noisy: q75/q25 = {_spread(t):.3g} > {NOISE_RATIO:g}, the machine was busy")
        med, q25, q75, mn, runs = t
        if runs < repeats:
            notes.append(f"budget_s = {budget_s:g} s cut the runs to {int(runs)} of {repeats}")
        row.update(median_ms=med, q25_ms=q25, q75_ms=q75, min_ms=mn, repeats=int(runs), note="; ".join(notes))
    except (MemoryError, RuntimeError) as exc:
        return {**row, "status": "error", "note": f"{type(exc).__name__}: {exc}"}
    finally:
        runner.close()
    return row
