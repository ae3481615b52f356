"""``rank(verify=k)``: the first k configurations of a ranking timed on the device, as :func:`pyspmv.benchmark`
times them, and re-ordered by measurement; with ``n_calls``, the rule that weighs measuring against its expected
gain first (:func:`weigh_verify`), and ``verify="auto"``, which chooses k by that rule (:func:`choose_k`)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import math
import time
from typing import Any, Protocol

import numpy as np

from .. import _core
from ..devices import arrays, gpu
from ..devices.benchmark import _DtypeRun, benchmark
from ..devices.run import prepare, prepare_on_device, require_device
from ..matrices.configs import Config, config
from ..matrices.formats import FormatMatrix, convert
from ..matrices.matrix import Matrix
from .precision import tie_tol_at
from .result import Measured, Ranking

# rank(verify=k) times each configuration as pyspmv.benchmark() does (its noise checks included), with fewer runs
# than its defaults so that verifying costs tens of products rather than hundreds. Untuned; they are also what
# rank(verify=k, n_calls=...) counts as the cost of measuring (verify_runs).
#: Untimed runs rank(verify=k) makes of each configuration before timing it, at most.
VERIFY_WARMUP = 3
#: Timed runs rank(verify=k) makes of each configuration, at most; their median orders them.
VERIFY_REPEATS = 30
#: Seconds of timed runs per configuration in rank(verify=k): timing stops once they are spent.
VERIFY_BUDGET_S = 0.1
#: The median of |e| for a normal e is this many standard deviations: rank(verify=k, n_calls=...) reads the
#: model's median error on the ratio to the pick (Precision.tie_tol) as a log-normal error of that median.
_MEDIAN_ABS_NORMAL = 0.6744897501960817
#: The most configurations ``rank(verify="auto")`` times.
AUTO_MAX = 10
#: The most configurations of one kernel (:attr:`Config.kernel_id`: its thread mappings and format parameters
#: apart) among those ``rank(verify="auto")`` times: past them it takes the next kernel's. At scale the model errs
#: in the kernel more than in its parameters: a large matrix whose first ten were ten SELL configurations had
#: cuSPARSE's SELL fastest, 22 % ahead. Replayed held out on the H200 data (benchmarks/verify_auto.py, n_calls=
#: 10000), a cap of 3 against none: at 1e6+ entries (156 matrix/type pairs) 92.3 % within 5 % either way, beyond
#: 20 % 0.6 against 1.3 %, verifying 20 % cheaper; below 1e6 entries, 3 of 769 pairs fewer within 5 %, none more
#: beyond 20 %.
AUTO_PER_KERNEL = 3
#: Untimed runs ``rank(verify="auto")`` makes of each configuration, at most: fewer than verify=k's, since it
#: measures only where products are long enough to pay, and there the GPU's run-to-run spread is a few per cent
#: (the median q75/q25 of the H200 datasets' configurations at 1.1e6-1.4e7 entries: 1.015-1.027).
AUTO_WARMUP = 2
#: Timed runs ``rank(verify="auto")`` makes of each configuration, at most (within :data:`VERIFY_BUDGET_S`).
AUTO_REPEATS = 8
#: ``rank(verify="auto")`` on the GPU counts a candidate's conversion there as this many ms plus
#: :data:`DEVICE_CONVERT_PRODUCTS` of its products: the device conversions measured on the H200 took 0.06-0.65 ms,
#: at most 21.6 products, for 2e5-1.5e6 entries (benchmarks/results/convert_gpu.md), launch-bound below 1e6.
DEVICE_CONVERT_MS = 0.2
#: Products of a candidate that ``rank(verify="auto")`` adds to :data:`DEVICE_CONVERT_MS` for its conversion on
#: the GPU.
DEVICE_CONVERT_PRODUCTS = 10.0


class _Fits(Protocol):
    """What :func:`verify_first` reads of a model prepared for ranking (:class:`pyspmv.ranking.rank._Ranked`): its
    configurations' formats and its conversion-cost fit (``a + b * nnz`` ms per configuration; None: none)."""

    formats: list[str]
    convert: tuple[np.ndarray, np.ndarray] | None


def _normal_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def _runs(auto: bool) -> tuple[int, int]:
    """Untimed and timed runs per configuration, at most: verify='auto''s or verify=k's."""
    return (AUTO_WARMUP, AUTO_REPEATS) if auto else (VERIFY_WARMUP, VERIFY_REPEATS)


def device_convert_ms(t_ms: float) -> float:
    """What ``rank(verify="auto")`` counts for converting on the GPU a configuration whose product takes ``t_ms``:
    :data:`DEVICE_CONVERT_MS` plus :data:`DEVICE_CONVERT_PRODUCTS` products."""
    return DEVICE_CONVERT_MS + DEVICE_CONVERT_PRODUCTS * t_ms


def verify_runs(t_ms: float, auto: bool = False) -> float:
    """The products ``rank(verify=k)`` makes of a configuration whose product takes ``t_ms``: the warm-up and
    timed runs :func:`pyspmv.benchmark` makes with :data:`VERIFY_WARMUP`, :data:`VERIFY_REPEATS` and
    :data:`VERIFY_BUDGET_S` (as many as fit in the budget, at least one of each); ``auto``: with
    :data:`AUTO_WARMUP` and :data:`AUTO_REPEATS`."""
    fit = max(1.0, VERIFY_BUDGET_S * 1e3 / t_ms)
    warm, reps = _runs(auto)
    return min(float(warm), fit) + min(float(reps), fit)


def choose_k(t: list[float], conv: list[float], n_calls: int, tie_tol: float) -> tuple[int, float, float]:
    """``rank(verify="auto")``'s rule: ``(k, cost, gain)`` for the k in 2..len(t) (at most :data:`AUTO_MAX`) whose
    expected gain over its cost (:func:`weigh_verify`, runs at the ``auto`` settings) is largest, or ``(0, cost,
    gain)`` of the best k where none pays: timing more candidates is worth it while the next one's expected
    saving exceeds its conversion and runs, so k grows with the margin the model's error leaves."""
    best = (0, math.inf, 0.0)
    margin = -math.inf
    for k in range(2, min(len(t), AUTO_MAX) + 1):
        cost, gain = weigh_verify(t[:k], conv[:k], n_calls, tie_tol, auto=True)
        if gain - cost > margin:
            margin, best = gain - cost, (k, cost, gain)
    return best if margin > 0 else (0, best[1], best[2])


def weigh_verify(t: list[float], conv: list[float], n_calls: int, tie_tol: float,
                 auto: bool = False) -> tuple[float, float]:
    """``(cost, gain)`` in ms of timing the candidates whose predicted product times are ``t`` (``t[0]`` the
    pick's) and predicted conversions ``conv``, for ``n_calls`` products: the rule of ``rank(verify=k,
    n_calls=...)`` (its docstring). The cost is every candidate's conversion and :func:`verify_runs`
    products; the gain ``n_calls`` times the expected saving per product of each other candidate over the
    pick, summed, its measured time being its prediction times a log-normal factor whose median error is
    ``tie_tol`` (``E[(K - X)+]`` of a log-normal ``X``, Black's formula)."""
    s = max(tie_tol, 1e-12) / _MEDIAN_ABS_NORMAL
    cost = sum(c + verify_runs(ti, auto) * ti for ti, c in zip(t, conv))
    v1 = t[0] + conv[0] / n_calls
    per_call = 0.0
    for ti, c in zip(t[1:], conv[1:]):
        K = v1 - c / n_calls                   # what the candidate must beat, its conversion counted
        if K <= 0.0:
            continue
        d = math.log(K / ti) / s
        per_call += K * _normal_cdf(d) - ti * math.exp(0.5 * s * s) * _normal_cdf(d - s)
    return cost, n_calls * max(per_call, 0.0)


def auto_candidates(ids: list[str], most: int | None = None) -> list[int]:
    """The positions in ``ids`` (a ranking's usable configurations, best first) of those ``rank(verify="auto")``
    may time, best first: at most ``most`` (default :data:`AUTO_MAX`), and at most :data:`AUTO_PER_KERNEL` of any
    one kernel."""
    most = AUTO_MAX if most is None else most
    seen: dict[str, int] = {}
    out: list[int] = []
    for i, cid in enumerate(ids):
        if len(out) >= most:
            break
        kernel = config(cid).kernel_id
        seen[kernel] = seen.get(kernel, 0) + 1
        if seen[kernel] <= AUTO_PER_KERNEL:
            out.append(i)
    return out


def verify_first(r: Ranking, k: int | str, M: Any, on_gpu: arrays.DeviceCSR | gpu.DeviceMatrix | None, p: _Fits,
                 n_calls: int | None) -> None:
    """rank(verify=k): time the first k usable configurations of ``r`` (unless n_calls says it does not pay) and
    re-order them in place by measurement; ``k='auto'``: as many as :func:`choose_k` says pay for ``n_calls``
    products (none without n_calls). Sets ``verified``, ``verify_note`` and ``verify_weighed``."""
    r.verified = ()
    require_device(r.device)              # whether or not n_calls has it measure: the same answer every time
    auto = k == "auto"
    most = AUTO_MAX if auto else int(k)
    usable = 0
    while usable < len(r) and math.isfinite(r[usable][1]):         # inf (cannot serve A) only last
        usable += 1
    cand = ([r[i] for i in auto_candidates([c for c, _ in r[:usable]])] if auto   # the candidates, best first
            else list(r[:min(usable, most)]))
    n = len(cand)
    asked = (f"verify={k!r}" if auto else f"verify={k}") + (f" with n_calls={n_calls}" if n_calls is not None else "")
    fewer = f" (only {n} can serve the matrix)" if n < most and not auto else ""
    if n == 0:
        r.verify_note = f"{asked}: nothing measured: no configuration of the ranking can serve the matrix."
        return
    if auto and n_calls is None:
        r.verify_note = (f"{asked}: nothing measured: without n_calls (how many products the matrix will serve) the "
                         "gain of measuring cannot be weighed against its cost; the model's order stands.")
        return
    on_device = r.device == "cuda"
    weighed = ""
    if n_calls is not None:
        why = _unweighable(r)
        if why and auto:
            r.verify_note = f"{asked}: nothing measured: {why}; the model's order stands."
            return
        if why:
            weighed = f"; measured without weighing its cost: {why}"
        else:
            if auto and n == 1:
                r.verify_note = (f"{asked}: nothing measured: only the pick can serve the matrix, nothing to compare "
                                 "it with; the model's order stands.")
                return
            tol = tie_tol_at(r.precision, r.device, M.nnz)
            t, conv = _predicted_parts(cand, p, M.nnz, n_calls, on_device)
            if auto:
                n, cost, gain = choose_k(t, conv, n_calls, tol)
                if n == 0:
                    r.verify_weighed = (cost / t[0], gain / t[0])
                    r.verify_note = (f"{asked}: nothing measured: timing the first 2 to {min(len(t), AUTO_MAX)} "
                                     "configurations was estimated to cost more than its expected gain over "
                                     f"{n_calls} products (the best: {cost / t[0]:.3g} against {gain / t[0]:.3g} "
                                     f"products of the pick's predicted time; the model's measured error on the ratio "
                                     f"to the pick at {M.nnz:,} entries: {tol:.1%}); the model's order stands.")
                    return
                t, conv = t[:n], conv[:n]
            else:
                cost, gain = weigh_verify(t, conv, n_calls, tol)
            r.verify_weighed = (cost / t[0], gain / t[0])
            runs = sum(verify_runs(x, auto) for x in t)
            where = "on the GPU" if on_device else ""
            nums = (f"measuring was estimated to cost {cost / t[0]:.3g} products of the pick's predicted time "
                    f"({n} conversion{'s' if n > 1 else ''}{' ' + where if where else ''} and {runs:.0f} timed "
                    f"products), against an expected gain of {gain / t[0]:.3g} over {n_calls} "
                    f"product{'s' if n_calls > 1 else ''} (the model's measured error on the ratio to the pick at "
                    f"{M.nnz:,} entries: {tol:.1%})")
            if gain <= cost:
                r.verify_note = f"{asked}: nothing measured{fewer}: {nums}: it does not pay; the model's order stands."
                return
            weighed = f"; {nums}" + (f"; k={n}, where the expected gain over the cost is largest" if auto else "")
    cand = cand[:n]
    rows = _measure(M, on_gpu, [c for c, _ in cand], r.device, r.dtype, auto)

    def key(m: Measured) -> float:
        conv = m.convert_ms / n_calls if n_calls is not None and math.isfinite(m.convert_ms) else 0.0
        return m.median_ms + conv

    ok = sorted((m for m in rows if m.status == "ok" and math.isfinite(m.median_ms)), key=key)   # stable
    bad = [m for m in rows if not (m.status == "ok" and math.isfinite(m.median_ms))]
    predicted = dict(cand)
    model_rank = {c: i for i, (c, _) in enumerate(r, 1)}
    r[:] = [(m.config, predicted[m.config]) for m in ok + bad] + [item for item in r if item[0] not in predicted]
    r.verified = tuple(ok + bad)
    where = " converted on the GPU" if r.device == "cuda" else ""
    by = "measured time plus measured conversion / n_calls" if n_calls is not None else "measured time"
    if ok:
        b = ok[0]
        said = f"{b.config} fastest at {b.median_ms * 1e3:.3f} µs, the model's {_ordinal(model_rank[b.config])}"
        pick = next((m for m in ok if model_rank[m.config] == 1), None)
        if pick is not None and pick is not b and b.median_ms > 0:
            said += f"; the model's pick measured {pick.median_ms / b.median_ms - 1:.1%} slower"
    else:
        said = "none could be timed"
    failed = "".join(f"; {m.config} not timed ({m.status}: {m.note})" for m in bad)
    capped = f" (at most {AUTO_PER_KERNEL} of one kernel)" if model_rank[cand[-1][0]] > n else ""
    r.verify_note = (f"{asked}: the model's first {n} configurations{capped}{fewer} timed on {r.device}{where}, "
                     f"re-ordered by {by}: {said}{failed}{weighed}.")


def _predicted_parts(cand: list[tuple[str, float]], p: _Fits, nnz: int, n_calls: int,
                     on_device: bool = False) -> tuple[list[float], list[float]]:
    """The predicted product times and conversion times (ms) of the configurations ``cand`` (pairs of a ranking
    made with ``n_calls``): the product time what remains of the prediction once the model's conversion fit (as
    rank() added it; no fit: 0) is taken out; the conversion that fit, or, converted on the GPU (``on_device``),
    :func:`device_convert_ms`."""
    fits = {f: (a, b) for f, a, b in zip(p.formats, *p.convert)}
    host = []
    for c, _ in cand:
        a, b = fits.get(config(c).format, (math.nan, math.nan))
        ms = a + b * nnz
        host.append(float(ms) if math.isfinite(ms) else 0.0)
    t = [max(v - c / n_calls, 1e-12) for (_, v), c in zip(cand, host)]
    conv = [device_convert_ms(x) for x in t] if on_device else host
    return t, conv


def _unweighable(r: Ranking) -> str:
    """Why rank(verify=k, n_calls=...) cannot weigh the cost of measuring against its gain ('' where it can)."""
    if r.score != "predicted_ms":
        return "the model scores configurations instead of predicting their times"
    if r.precision is None:
        return "this model's error was not measured, so the expected gain is unknown"
    if not (math.isfinite(r[0][1]) and r[0][1] > 0):
        return "the pick's predicted time is not a positive number"
    return ""


def _ordinal(i: int) -> str:
    """'pick' for 1, else 2nd, 3rd, 4th, ..., 11th, 21st, ..."""
    if i == 1:
        return "pick"
    suffix = "th" if 10 <= i % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(i % 10, "th")
    return f"{i}{suffix}"


def _measure(M: Any, on_gpu: arrays.DeviceCSR | gpu.DeviceMatrix | None, ids: list[str], device: str, dtype: str,
             auto: bool = False) -> list[Measured]:
    """The configurations ``ids`` timed on ``device`` by pyspmv.benchmark's machinery (``auto``: with
    verify='auto''s fewer runs): on the GPU converted there (a host matrix uploaded once as CSR first), on the CPU
    converted on the host."""
    warm, reps = _runs(auto)
    if device == "cuda":
        recs = _time_on_device(M, on_gpu, ids, dtype, warm, reps)
        cols = [[x[f] for x in recs] for f in _MEASURED_COLUMNS]
    else:
        df = benchmark(M, ids, device=device, dtype=dtype, repeats=reps, warmup=warm,
                       budget_s=VERIFY_BUDGET_S, check=False, progress=False)
        cols = [df[f].tolist() for f in _MEASURED_COLUMNS]        # a third of to_dict()'s time
    return [Measured(c, float(m), float(q25), float(q75), float(cv), str(st), str(nt))
            for c, m, q25, q75, cv, st, nt in zip(*cols)]


#: The columns of a benchmark() row that make a Measured, in its order.
_MEASURED_COLUMNS = ("config", "median_ms", "q25_ms", "q75_ms", "convert_ms", "status", "note")


def upload_csr(M: Any, dtype: Any = None) -> gpu.DeviceMatrix:
    """``M`` (a host Matrix) uploaded to the GPU once as CSR of ``dtype`` (default its own), for conversion there:
    from its own arrays where the type is its own, else converted on the host first (large arrays go up through
    page-locked staging buffers either way: kernels/matrix.cu)."""
    if dtype is None or np.dtype(dtype) == M.dtype:
        return gpu.DeviceMatrix.upload_csr(M)
    return gpu.DeviceMatrix(convert(M, "csr", dtype=dtype))


def _time_on_device(M: Any, D: arrays.DeviceCSR | gpu.DeviceMatrix | None, ids: list[str], dtype: str,
                    warmup: int = VERIFY_WARMUP, repeats: int = VERIFY_REPEATS) -> list[dict[str, Any]]:
    """benchmark()'s rows of ``ids`` for a CSR matrix on the GPU (``D``; None: ``M`` uploaded as CSR once),
    converted there as an Operator converts (``prepare_on_device``; once per format and format parameters, as
    benchmark() converts, kept until its last configuration is timed; a layout the device does not make, CSR in
    a locality order, converted on the host), timed by benchmark()'s own runner; ``M`` is its host copy."""
    dt = np.dtype(dtype)
    if isinstance(D, gpu.DeviceMatrix) and D.dtype == dt:
        DM = D
    elif isinstance(D, arrays.DeviceCSR):
        DM = gpu.DeviceMatrix.wrap_csr(D if D.dtype == dt else arrays.device_csr(D.owner, dt))
    else:
        DM = upload_csr(M, dt)
    # no host x: each plan makes its own on the device (drawing a host x of 9e6 entries took 59 ms and page-locking
    # it 6 ms of an 86 ms verified Operator build on the H200's host, and each plan uploaded it again)
    run = _DtypeRun(M, dt, "cuda", 0, None, host_x=False)
    cfgs = [config(c) for c in ids]
    keys = [(c.format, tuple(sorted(c.format_kwargs.items()))) for c in cfgs]
    return _time_each(run, M, DM, cfgs, keys, dt, warmup, repeats)


def _time_each(run: _DtypeRun, M: Any, DM: gpu.DeviceMatrix, cfgs: list[Config], keys: list[Any], dt: np.dtype,
               warmup: int, repeats: int) -> list[dict[str, Any]]:
    """_time_on_device's rows: each of ``cfgs`` converted (once per ``keys``' format and parameters) and timed."""
    last = {key: i for i, key in enumerate(keys)}
    held: dict[Any, tuple[Any, float]] = {}
    rows = []
    for i, (c, key) in enumerate(zip(cfgs, keys)):
        if key not in held:
            t0 = time.perf_counter()
            try:
                F: Any = prepare_on_device(DM, c)[1]
            except _core.NotApplicableError as exc:
                F = exc
                if c.format == "csr" and isinstance(M, Matrix):     # a locality order: made on the host alone
                    try:
                        F = prepare(M, c, dt)[1]
                    except _core.NotApplicableError as exc2:
                        F = exc2
            except MemoryError as exc:                  # the GPU's, for this format
                F = exc
            held[key] = (F, (time.perf_counter() - t0) * 1e3)
        F, ms = held[key]
        on = None if isinstance(F, Exception | FormatMatrix) else F        # a host-made layout: the plan uploads it
        row = run.one(c, F, on, ms, warmup, repeats, VERIFY_BUDGET_S, False)
        if isinstance(F, MemoryError):
            row.update(status="error", note=f"MemoryError: {F}")
        rows.append(row)
        if last[key] == i:
            del held[key]
    return rows
