"""``rank(verify=k)``: the first k configurations of a ranking timed on the device, as :func:`pyspmv.benchmark`
times them, and re-ordered by measurement; with ``n_calls``, the rule that weighs measuring against its expected
gain first (:func:`weigh_verify`)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import math
import time
from typing import Any, Protocol

import numpy as np

from .. import _core
from ..devices import arrays, gpu
from ..devices.benchmark import _DtypeRun, benchmark
from ..devices.run import prepare_on_device, require_device
from ..matrices.configs import config
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


class _Fits(Protocol):
    """What :func:`verify_first` reads of a model prepared for ranking (:class:`pyspmv.ranking.rank._Ranked`): its
    configurations' formats and its conversion-cost fit (``a + b * nnz`` ms per configuration; None: none)."""

    formats: list[str]
    convert: tuple[np.ndarray, np.ndarray] | None


def _normal_cdf(z: float) -> float:
    return 0.5 * math.erfc(-z / math.sqrt(2.0))


def verify_runs(t_ms: float) -> float:
    """The products ``rank(verify=k)`` makes of a configuration whose product takes ``t_ms``: the warm-up and
    timed runs :func:`pyspmv.benchmark` makes with :data:`VERIFY_WARMUP`, :data:`VERIFY_REPEATS` and
    :data:`VERIFY_BUDGET_S` (as many as fit in the budget, at least one of each)."""
    fit = max(1.0, VERIFY_BUDGET_S * 1e3 / t_ms)
    return min(float(VERIFY_WARMUP), fit) + min(float(VERIFY_REPEATS), fit)


def weigh_verify(t: list[float], conv: list[float], n_calls: int, tie_tol: float) -> tuple[float, float]:
    """``(cost, gain)`` in ms of timing the candidates whose predicted product times are ``t`` (``t[0]`` the
    pick's) and predicted conversions ``conv``, for ``n_calls`` products: the rule of ``rank(verify=k,
    n_calls=...)`` (its docstring). The cost is every candidate's conversion and :func:`verify_runs`
    products; the gain ``n_calls`` times the expected saving per product of each other candidate over the
    pick, summed, its measured time being its prediction times a log-normal factor whose median error is
    ``tie_tol`` (``E[(K - X)+]`` of a log-normal ``X``, Black's formula)."""
    s = max(tie_tol, 1e-12) / _MEDIAN_ABS_NORMAL
    cost = sum(c + verify_runs(ti) * ti for ti, c in zip(t, conv))
    v1 = t[0] + conv[0] / n_calls
    per_call = 0.0
    for ti, c in zip(t[1:], conv[1:]):
        K = v1 - c / n_calls                   # what the candidate must beat, its conversion counted
        if K <= 0.0:
            continue
        d = math.log(K / ti) / s
        per_call += K * _normal_cdf(d) - ti * math.exp(0.5 * s * s) * _normal_cdf(d - s)
    return cost, n_calls * max(per_call, 0.0)


def verify_first(r: Ranking, k: int, M: Any, on_gpu: arrays.DeviceCSR | None, p: _Fits, n_calls: int | None) -> None:
    """rank(verify=k): time the first k usable configurations of ``r`` (unless n_calls says it does not pay) and
    re-order them in place by measurement; set ``verified``, ``verify_note`` and ``verify_weighed``."""
    r.verified = ()
    require_device(r.device)              # whether or not n_calls has it measure: the same answer every time
    n = 0
    while n < len(r) and n < k and math.isfinite(r[n][1]):     # inf (cannot serve A) only last
        n += 1
    asked = f"verify={k}" + (f" with n_calls={n_calls}" if n_calls is not None else "")
    fewer = f" (only {n} can serve the matrix)" if n < k else ""
    if n == 0:
        r.verify_note = f"{asked}: nothing measured: no configuration of the ranking can serve the matrix."
        return
    weighed = ""
    if n_calls is not None:
        why = _unweighable(r)
        if why:
            weighed = f"; measured without weighing its cost: {why}"
        else:
            t, conv = _predicted_parts(r, p, n, M.nnz, n_calls)
            cost, gain = weigh_verify(t, conv, n_calls, r.precision.tie_tol)
            r.verify_weighed = (cost / t[0], gain / t[0])
            runs = sum(verify_runs(x) for x in t)
            nums = (f"measuring was estimated to cost {cost / t[0]:.3g} products of the pick's predicted time "
                    f"({n} conversion{'s' if n > 1 else ''} and {runs:.0f} timed products), against an expected gain "
                    f"of {gain / t[0]:.3g} over {n_calls} product{'s' if n_calls > 1 else ''} (the model's measured "
                    f"error on the ratio to the pick: {r.precision.tie_tol:.1%})")
            if gain <= cost:
                r.verify_note = f"{asked}: nothing measured{fewer}: {nums}: it does not pay; the model's order stands."
                return
            weighed = f"; {nums}"
    rows = _measure(M, on_gpu, [c for c, _ in r[:n]], r.device, r.dtype)

    def key(m: Measured) -> float:
        conv = m.convert_ms / n_calls if n_calls is not None and math.isfinite(m.convert_ms) else 0.0
        return m.median_ms + conv

    ok = sorted((m for m in rows if m.status == "ok" and math.isfinite(m.median_ms)), key=key)   # stable
    bad = [m for m in rows if not (m.status == "ok" and math.isfinite(m.median_ms))]
    predicted = dict(r[:n])
    model_rank = {c: i for i, (c, _) in enumerate(r[:n], 1)}
    r[:n] = [(m.config, predicted[m.config]) for m in ok + bad]
    r.verified = tuple(ok + bad)
    where = (" converted on the GPU" if on_gpu is not None and r.device == "cuda" else
             " converted on the host and uploaded" if r.device == "cuda" else "")
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
    r.verify_note = (f"{asked}: the model's first {n} configurations{fewer} timed on {r.device}{where}, "
                     f"re-ordered by {by}: {said}{failed}{weighed}.")


def _predicted_parts(r: Ranking, p: _Fits, n: int, nnz: int, n_calls: int) -> tuple[list[float], list[float]]:
    """The predicted product times and conversion times (ms) of the first ``n`` configurations of ``r``, ranked
    with ``n_calls``: each conversion by the model's fit, as rank() added it (no fit: 0), the product time
    what remains of the prediction."""
    fits = {f: (a, b) for f, a, b in zip(p.formats, *p.convert)}
    conv = []
    for c, _ in r[:n]:
        a, b = fits.get(config(c).format, (math.nan, math.nan))
        ms = a + b * nnz
        conv.append(float(ms) if math.isfinite(ms) else 0.0)
    return [max(v - c / n_calls, 1e-12) for (_, v), c in zip(r[:n], conv)], conv


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


def _measure(M: Any, on_gpu: arrays.DeviceCSR | None, ids: list[str], device: str, dtype: str) -> list[Measured]:
    """The configurations ``ids`` timed on ``device`` by pyspmv.benchmark's machinery: on the GPU, a matrix that
    lives there converted there; any other converted on the host (and uploaded, on the GPU)."""
    if on_gpu is not None and device == "cuda":
        recs = _time_on_device(M, on_gpu, ids, dtype)
        cols = [[x[f] for x in recs] for f in _MEASURED_COLUMNS]
    else:
        df = benchmark(M, ids, device=device, dtype=dtype, repeats=VERIFY_REPEATS, warmup=VERIFY_WARMUP,
                       budget_s=VERIFY_BUDGET_S, check=False, progress=False)
        cols = [df[f].tolist() for f in _MEASURED_COLUMNS]        # a third of to_dict()'s time
    return [Measured(c, float(m), float(q25), float(q75), float(cv), str(st), str(nt))
            for c, m, q25, q75, cv, st, nt in zip(*cols)]


#: The columns of a benchmark() row that make a Measured, in its order.
_MEASURED_COLUMNS = ("config", "median_ms", "q25_ms", "q75_ms", "convert_ms", "status", "note")


def _time_on_device(M: Any, D: arrays.DeviceCSR, ids: list[str], dtype: str) -> list[dict[str, Any]]:
    """benchmark()'s rows of ``ids`` for a CSR matrix that lives on the GPU: converted there as an Operator of it
    converts (``prepare_on_device``; once per format and format parameters, as benchmark() converts, kept until
    its last configuration is timed), timed by benchmark()'s own runner; ``M`` is its host copy."""
    dt = np.dtype(dtype)
    if D.dtype != dt:
        D = arrays.device_csr(D.owner, dt)
    DM = gpu.DeviceMatrix.wrap_csr(D)
    run = _DtypeRun(M, dt, "cuda", 0, None)
    cfgs = [config(c) for c in ids]
    keys = [(c.format, tuple(sorted(c.format_kwargs.items()))) for c in cfgs]
    last = {key: i for i, key in enumerate(keys)}
    held: dict[Any, tuple[Any, float]] = {}
    rows = []
    for i, (c, key) in enumerate(zip(cfgs, keys)):
        if key not in held:
            t0 = time.perf_counter()
            try:
                F: Any = prepare_on_device(DM, c)[1]
            except (_core.NotApplicableError, MemoryError) as exc:     # MemoryError: the GPU's, for this format
                F = exc
            held[key] = (F, (time.perf_counter() - t0) * 1e3)
        F, ms = held[key]
        row = run.one(c, F, None if isinstance(F, Exception) else F, ms, VERIFY_WARMUP, VERIFY_REPEATS,
                      VERIFY_BUDGET_S, False)
        if isinstance(F, MemoryError):
            row.update(status="error", note=f"MemoryError: {F}")
        rows.append(row)
        if last[key] == i:
            del held[key]
    return rows
