"""The selection that a solve's policy (:mod:`pyspmv.solvers._policy`) runs before or beside the
iterations, ranking and converting (Gao et al.: predict beside the iterations; Li & Suda: profile the
top picks), and the CPU's products that it switches between (:class:`Multiplier`)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import concurrent.futures
import functools
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from .. import _core
from ..matrices.configs import Config, config
from ..matrices.formats import FormatMatrix, convert
from ..matrices.matrix import Matrix
from ..ranking.rank import rank
from ..ranking.tables import with_value_tables

#: Selection policies, see :func:`pyspmv.solvers.cg`.
POLICIES = ("fixed", "serial", "async", "online")
#: The configuration ``fixed`` runs and ``async``/``online`` start with, per device.
DEFAULT_CONFIG = {"cpu": "cpu/csr/rows", "cuda": "cusparse/csr/default"}
#: Default ``select_min_nnz``: the core keeps the GIL in calls on fewer stored entries than this
#: (``_core.NOGIL_MIN_WORK``), so below it a helper thread could only take turns with the
#: iterations, not run beside them.
SELECT_MIN_NNZ: int = _core.NOGIL_MIN_WORK
#: Default ``select_patience``: ``async`` and ``online`` start selecting once the solve has iterated
#: this many times the selection's estimated cost (:func:`selection_estimate_s`).  The rent-or-buy
#: rule: a solve that ends before then pays nothing, and one that ends just after the selection
#: lands (or that waits for it at its end) has paid at most about 1 / patience of its time for it (the
#: iterations lose one core while it runs).  20: at most about 5 %, the issue's bound for ``async``
#: against ``fixed``; with 10, a 51k-entry CG solve on the dev VM that ended while its selection ran
#: lost 12 %.
SELECT_PATIENCE: float = 20.0


def can_rank(policy: str, nnz: int, select_min_nnz: int) -> bool:
    """Whether ``policy`` may rank a matrix of ``nnz`` stored entries: ``serial`` always; ``async``
    and ``online`` above ``select_min_nnz`` (at or below it the core keeps the GIL, so a helper
    thread could only take turns with the iterations); ``fixed`` never."""
    return policy == "serial" or (policy != "fixed" and nnz > select_min_nnz)


def after_selection(cands: list[Any], current: Any, probe_iters: int) -> tuple[str, list[Any]]:
    """What a solve does with the candidates a selection landed, ``current`` running now (both devices'
    drivers): ``("none", [])`` for no candidate; with ``probe_iters == 0`` the ranking is trusted,
    ``("switch", [pick])`` or ``("keep", [])`` when the pick runs already; else ``("probe", queue)``, ``current``
    and the candidates to time in turn (in the ranking's order where ``current`` is among them), or ``("keep", [])``
    when ``current`` is all there is. ``current`` first: the probe ends on a candidate, which is kept where it measured
    fastest at no further switch (probed last, the start was gone back to before the verdict, and a candidate that
    measured faster by less than a switch repays was left: on the H200 such solves lost 1-3 % to the probe alone).

    async probes its one pick against what runs now, online its top k too: a model measured on another
    machine (or a busy one) can be wrong, and a switch must not make the solve slower."""
    if not cands:
        return "none", []
    if probe_iters == 0:
        return ("keep", []) if cands[0] is current else ("switch", [cands[0]])
    queue = cands if any(c is current for c in cands) else [current, *cands]
    return ("keep", []) if len(queue) == 1 else ("probe", queue)


@functools.cache
def threadpools() -> ThreadpoolController:
    """The BLAS and OpenMP libraries loaded in this process (finding them takes about 1 ms, so once)."""
    return ThreadpoolController()


def _one_core_less() -> Any:
    """Limit this thread's OpenMP products to one thread fewer than they use now, for as long as the
    selection thread runs beside them (on one thread: :func:`_select_on_one_thread`); returns the
    limiter (``restore_original_limits()``) or None.

    OpenMP's thread count is a per-thread setting, so the selection thread is not affected.  Without
    this, on a machine of n cores the products' n threads and the selection thread share n cores, and
    a product waits at its barrier for a thread that was descheduled: iterations stall while ranking
    runs instead of going on beside it."""
    omp = threadpools().select(user_api="openmp")
    n = max((int(i["num_threads"]) for i in omp.info()), default=1)
    return omp.limit(limits=n - 1) if n > 1 else None


def _select_on_one_thread(*args: Any) -> Selection:
    """:func:`select` with this (helper) thread's OpenMP regions on one thread: the core's feature
    pass and conversions would otherwise start a team of every core's threads of their own beside the
    products' (measured on the 16-core Xeon host of the H100 machine: a 226k-entry CSR product took
    33 us alone, 242 us beside a ranking thread, 366 us beside it with the products one thread fewer)."""
    with threadpools().select(user_api="openmp").limit(limits=1):
        return select(*args)


def selection_estimate_s(nnz: int) -> float:
    """What ranking and one conversion are guessed to cost on ``nnz`` stored entries, in seconds:
    50 us plus 20 ns per entry, about twice what ``pyspmv.rank`` alone costs from 1e5 entries on the
    2-core dev VM (5-11 ns per entry, benchmarks/results/rank_cost.md), the rest for the conversion.
    Only its order of magnitude matters: it sets when a selection starts, not whether it is right."""
    return 50e-6 + 20e-9 * float(nnz)


@dataclass
class Prepared:
    """A configuration and ``A`` converted for it: what one product needs."""

    config: Config
    matrix: FormatMatrix


@dataclass
class Selection:
    """What ranking and conversion hand back (from the helper thread under async and online)."""

    ranking: list[tuple[str, float]]
    candidates: list[Prepared] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)
    rank_s: float = 0.0
    convert_s: float = 0.0
    start: float = 0.0
    end: float = 0.0
    #: why nothing was converted although the ranking picks another configuration (the policy's gate), or None
    held: str | None = None


def prepare(M: Matrix, cfg: Config, dtype: np.dtype) -> Prepared:
    """Convert ``M`` for ``cfg``; raises what :func:`pyspmv.convert` raises."""
    return Prepared(cfg, convert(M, cfg.format, dtype=dtype, **cfg.format_kwargs))


def select(M: Matrix, dtype: np.dtype, device: str, model: Any, n_calls: int | None, k: int, current: Any | None,
           cancel: threading.Event | None = None, gate: Callable[[float, float], str | None] | None = None,
           make: Callable[[Config], Any] | None = None, estimate: bool | None = None,
           tables: bool = False, tol: float = 0.0) -> Selection:
    """Rank the configurations of ``device`` for ``M`` (``rank(n_calls=n_calls)``: None ranks by the time a product)
    and convert the first ``k`` that can serve it.

    A ranking failure raises; a conversion failure (not applicable, out of memory, anything) is
    noted in ``failures`` and that candidate skipped. ``current`` is reused, not converted again.
    Stops converting once ``cancel`` is set. ``gate(pick_ms, current_ms)``, asked before the first conversion where
    the ranking's first differs from ``current``, returns why converting would not pay (then nothing is, said in
    ``held``) or None. ``make(cfg)`` makes a candidate (default :func:`prepare` on the host); ``estimate`` as
    :func:`pyspmv.rank`'s. ``tables``: the value-table variants the model does not rank join the ranking at their
    predicted times (:func:`pyspmv.ranking.tables.with_value_tables`); one whose conversion is refused (the values
    do not fit its table) takes no place among the ``k``, and the gate is asked again for the next; one whose base
    (the same configuration without a table) is not predicted faster than ``current`` by more than ``tol`` (the
    model's relative error) is passed over: a table speeds up a layout the model puts ahead, it does not mend one
    (on the H200 a graph Laplacian whose JAD the model put within its error of cuSPARSE's ran JAD with a table at
    20x cuSPARSE's time).
    """
    start = time.perf_counter()
    ranked = rank(M, model=model, device=device, dtype=dtype.name, n_calls=n_calls, estimate=estimate)
    finite = [(c, float(ms)) for c, ms in ranked if np.isfinite(ms)]
    riders: dict[str, tuple[str, float]] = {}
    if tables:
        finite, riders = with_value_tables(M, finite, dtype.name)
    sel = Selection(finite[:max(k, 5)], start=start)
    sel.rank_s = time.perf_counter() - start
    now = None if current is None else next((ms for c, ms in finite if c == current.config.id), None)
    gated = gate is None or current is None or now is None or (bool(finite) and finite[0][0] == current.config.id)
    for cid, ms in finite:
        if len(sel.candidates) >= k or (cancel is not None and cancel.is_set()):
            break
        if current is not None and cid == current.config.id:
            sel.candidates.append(current)
            continue
        if cid in riders and now is not None and riders[cid][0] != current.config.id and \
                riders[cid][1] * (1.0 + tol) >= now:
            continue        # a table speeds up a layout the model puts ahead; it does not mend one
        if not gated:
            assert gate is not None and now is not None
            sel.held = gate(ms, now)
            if sel.held is not None:
                if cid != finite[0][0]:     # the first passed over (a table whose base this is, or refused)
                    sel.held = f"{cid}, next in the ranking: {sel.held}"
                break
        t = time.perf_counter()
        try:
            sel.candidates.append(make(config(cid)) if make is not None else prepare(M, config(cid), dtype))
            gated = True
        except Exception as exc:  # noqa: BLE001 — any failure leaves the solve on its configuration
            if cid in riders and isinstance(exc, _core.NotApplicableError):
                sel.failures.append(f"{cid} does not apply ({exc})")
            else:
                sel.failures.append(f"converting to {cid} failed ({type(exc).__name__}: {exc})")
                gated = True
                k -= 1                      # its place stays empty, as the model ranked it
        sel.convert_s += time.perf_counter() - t
    sel.end = time.perf_counter()
    return sel


class Multiplier:
    """``y = A @ x`` for one CPU solve: the CPU's side of :class:`pyspmv.solvers._policy.Device`, whose
    :class:`~pyspmv.solvers._policy.Policy` chooses the configuration. The solver calls :meth:`mv` for
    products; the configuration changes only at the policy's boundaries between iterations, so an
    iteration's products all use one. A probe times each product (the fastest is its time).
    """

    def __init__(self, M: Matrix, dtype: np.dtype, device: str, model: Any, n_calls: int):
        self.products = 0
        self._M, self._dtype, self._device, self._model, self._n_calls = M, dtype, device, model, n_calls
        self._times: list[float] = []
        self._omp: Any = None
        self._state: Any = None
        self._kernel = 0

    # -- products ----------------------------------------------------------------------------
    def mv(self, x: np.ndarray, y: np.ndarray) -> None:
        """``y = A @ x`` with the current configuration (the core releases the GIL in long calls, and
        skips the state check: a State is checked once, when made)."""
        _core.mv(self._state, self._kernel, x, y)
        self.products += 1

    def _timed_mv(self, x: np.ndarray, y: np.ndarray) -> None:
        t = time.perf_counter()
        _core.mv(self._state, self._kernel, x, y)
        self._times.append(time.perf_counter() - t)
        self.products += 1

    # -- the policy's device -----------------------------------------------------------------
    def prepare(self, cfg: Config) -> Prepared:
        """``A`` converted for ``cfg``."""
        return prepare(self._M, cfg, self._dtype)

    def select(self, k: int, current: Prepared | None, cancel: threading.Event, beside: bool,
               gate: Callable[[float, float], str | None] | None) -> Selection:
        """:func:`select`; beside the iterations on one OpenMP thread, with ``current`` reused and ``cancel``.
        ``gate`` is not asked: the CPU's switch cost is not estimated (:meth:`switch_cost_s`)."""
        if beside:
            return _select_on_one_thread(self._M, self._dtype, self._device, self._model, self._n_calls, k,
                                         current, cancel)
        return select(self._M, self._dtype, self._device, self._model, self._n_calls, k, None)

    def switch_cost_s(self, pick_ms: float) -> float | None:
        """None: a host conversion's cost is not estimated here; every pick the ranking lands is probed."""
        return None

    def return_cost_s(self) -> float | None:
        """None: not estimated; a probed candidate measured faster than the last is gone back to."""
        return None

    def trial(self, p: Prepared) -> None:
        """Nothing: a converted matrix serves any vector of its size."""

    def use(self, p: Prepared) -> None:
        """The products from now on run ``p``."""
        self._state, self._kernel = p.matrix.state, p.config.variant

    def selecting(self, on: bool) -> None:
        """While the helper thread runs, the products run on one core fewer (:func:`_one_core_less`)."""
        if on:
            self._omp = _one_core_less()
        elif self._omp is not None:
            self._omp.restore_original_limits()
            self._omp = None

    def time_probe(self, on: bool) -> None:
        """Time each product from now on (True), or stop (False)."""
        if on:
            self._times = []
            self.mv = self._timed_mv  # type: ignore[method-assign]
        else:
            self.__dict__.pop("mv", None)   # back to the untimed method

    def probe_time(self) -> float | None:
        """The fastest product since the probe began, None before the first."""
        return min(self._times) if self._times else None

    def landed(self) -> None:
        """Nothing: the CPU's solve looks at every boundary between iterations."""

    def release(self, ps: list[Prepared], solving: bool) -> None:
        """Nothing: a converted matrix goes with its last reference."""

    def late(self, future: concurrent.futures.Future[Selection]) -> str:
        """Wait for a selection still running at the end of the solve.

        Waited for, not left running: once the products have their cores back, a helper still ranking
        would oversubscribe them, and every OpenMP region after the return (the caller's own too) would
        wait at its barrier for a descheduled thread.  The ranking cannot be interrupted; the
        conversions stop at the cancel."""
        t = time.perf_counter()
        concurrent.futures.wait([future])
        return f" (waited {1e3 * (time.perf_counter() - t):.3f} ms for it, conversions cancelled)"
