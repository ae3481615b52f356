"""The product a solver iterates with, and the policies that choose its configuration before or
while the solver runs (Gao et al.: predict beside the iterations; Li & Suda: profile the top picks)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import concurrent.futures
import functools
import threading
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from threadpoolctl import ThreadpoolController

from .. import _core
from ..matrices.configs import Config, config
from ..matrices.formats import FormatMatrix, convert
from ..matrices.matrix import Matrix
from ..ranking.rank import rank
from .record import SolveRecord

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
    ``("switch", [pick])`` or ``("keep", [])`` when the pick runs already; else ``("probe", queue)``, the
    candidates and ``current`` to time in turn, or ``("keep", [])`` when ``current`` is all there is.

    async probes its one pick against what runs now, online its top k too: a model measured on another
    machine (or a busy one) can be wrong, and a switch must not make the solve slower."""
    if not cands:
        return "none", []
    if probe_iters == 0:
        return ("keep", []) if cands[0] is current else ("switch", [cands[0]])
    queue = cands if any(c is current for c in cands) else [*cands, current]
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


def prepare(M: Matrix, cfg: Config, dtype: np.dtype) -> Prepared:
    """Convert ``M`` for ``cfg``; raises what :func:`pyspmv.convert` raises."""
    return Prepared(cfg, convert(M, cfg.format, dtype=dtype, **cfg.format_kwargs))


def select(M: Matrix, dtype: np.dtype, device: str, model: Any, n_calls: int, k: int, current: Prepared | None,
           cancel: threading.Event | None = None) -> Selection:
    """Rank the configurations of ``device`` for ``M`` and convert the first ``k`` that can serve it.

    A ranking failure raises; a conversion failure (not applicable, out of memory, anything) is
    noted in ``failures`` and that candidate skipped. ``current`` is reused, not converted again.
    Stops converting once ``cancel`` is set.
    """
    start = time.perf_counter()
    ranked = rank(M, model=model, device=device, dtype=dtype.name, n_calls=n_calls)
    sel = Selection([(c, float(ms)) for c, ms in ranked if np.isfinite(ms)][:max(k, 5)], start=start)
    sel.rank_s = time.perf_counter() - start
    for cid, _ms in sel.ranking[:k]:
        if cancel is not None and cancel.is_set():
            break
        if current is not None and cid == current.config.id:
            sel.candidates.append(current)
            continue
        t = time.perf_counter()
        try:
            sel.candidates.append(prepare(M, config(cid), dtype))
        except Exception as exc:  # noqa: BLE001 — any failure leaves the solve on its configuration
            sel.failures.append(f"converting to {cid} failed ({type(exc).__name__}: {exc})")
        sel.convert_s += time.perf_counter() - t
    sel.end = time.perf_counter()
    return sel


class Multiplier:
    """``y = A @ x`` for one solve, with the configuration its policy chooses.

    The solver calls :meth:`mv` for products and, while :attr:`active`, :meth:`boundary` between
    iterations: the only place the configuration changes, so an iteration's products all use one.
    """

    def __init__(self, M: Matrix, dtype: np.dtype, policy: str, start: Config, device: str, model: Any,
                 n_calls: int, top_k: int, probe_iters: int, select_min_nnz: int, record: SolveRecord, t0: float,
                 select_patience: float = SELECT_PATIENCE):
        self.record, self.t0 = record, t0
        self.products = 0
        self.active = False
        self._M, self._dtype = M, dtype
        self._future: concurrent.futures.Future[Selection] | None = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._cancel = threading.Event()
        self._probe_iters = probe_iters
        self._queue: list[Prepared] = []
        self._times: list[float] = []
        self._probed: dict[str, Prepared] = {}
        self._probe_t0 = 0.0
        self._probe_it = 0
        self._omp: Any = None
        self._current: Prepared
        self._select_args: tuple[Any, ...] | None = None   # a selection waiting for its start time
        self._select_at = 0.0
        if policy == "fixed":
            self._timed_prepare(start, 0)
        elif policy == "serial":
            try:
                sel = select(M, dtype, device, model, n_calls, 1, None)
            except Exception as exc:  # noqa: BLE001
                record.events.append((0, f"ranking failed ({type(exc).__name__}: {exc}); running {start.id}"))
                self._timed_prepare(start, 0)
            else:
                self._note(sel, 0)
                if sel.candidates:
                    self._use(sel.candidates[0], 0)
                else:
                    self._timed_prepare(start, 0)
        elif not can_rank(policy, M.nnz, select_min_nnz):
            self._timed_prepare(start, 0)
            why = f"{M.nnz} stored entries <= select_min_nnz={select_min_nnz}: no ranking beside the iterations"
            record.events.append((0, f"{why}; running {start.id}"))
        else:
            self._timed_prepare(start, 0)
            k = top_k if policy == "online" else 1
            self._select_args = (M, dtype, device, model, n_calls, k)
            self._select_at = time.perf_counter() + select_patience * selection_estimate_s(M.nnz)
            if select_patience == 0:
                self._start_selection(0)
            self.active = True

    def _start_selection(self, it: int) -> None:
        """Rank and convert on a helper thread from iteration ``it`` on, the products one core fewer."""
        args, self._select_args = self._select_args, None
        assert args is not None
        if it > 0:
            self.record.events.append((it, "selection started (the solve has outlasted select_patience)"))
        self._omp = _one_core_less()
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pyspmv-solvers-select")
        self._future = self._pool.submit(_select_on_one_thread, *args, self._current, self._cancel)

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

    def _all_cores(self) -> None:
        """The products' OpenMP threads back to what they were before the selection thread started."""
        if self._omp is not None:
            self._omp.restore_original_limits()
            self._omp = None

    # -- switching ---------------------------------------------------------------------------
    def _use(self, p: Prepared, it: int) -> None:
        self._current = p
        self._state, self._kernel = p.matrix.state, p.config.variant
        self.record.switched(it, p.config.id)

    def _timed_prepare(self, cfg: Config, it: int) -> None:
        t = time.perf_counter()
        p = prepare(self._M, cfg, self._dtype)
        self.record.convert_s += time.perf_counter() - t
        self._use(p, it)

    def _note(self, sel: Selection, it: int) -> None:
        rec = self.record
        rec.ranking = sel.ranking
        rec.rank_s += sel.rank_s
        rec.convert_s += sel.convert_s
        rec.rank_window = (sel.start - self.t0, sel.end - self.t0)
        rec.events.extend((it, f) for f in sel.failures)

    def boundary(self, it: int) -> None:
        """Between iterations ``it - 1`` and ``it``: take a landed selection, advance probing.

        Any failure here is recorded and leaves the solve on its current configuration.
        """
        if self._select_args is not None:
            if time.perf_counter() < self._select_at:
                return
            self._start_selection(it)
            return
        if self._future is not None:
            if not self._future.done():
                return
            fut, self._future = self._future, None
            self._all_cores()
            try:
                self._land(fut.result(), it)
            except Exception as exc:  # noqa: BLE001 — the ranking thread's or the switch's failure
                self._queue = []
                self.record.events.append(
                    (it, f"ranking failed ({type(exc).__name__}: {exc}); staying on {self._current.config.id}"))
        if self._queue:
            self._probe(it)
        self.active = self._future is not None or bool(self._queue)

    def _land(self, sel: Selection, it: int) -> None:
        self._note(sel, it)
        what, cands = after_selection(list(sel.candidates), self._current, self._probe_iters)
        if what == "switch":
            self._use(cands[0], it)
            self.record.events.append((it, f"switched to {cands[0].config.id}"))
        elif what == "keep":
            self.record.events.append((it, f"ranking keeps {self._current.config.id}"))
        elif what == "probe":
            self._queue = cands
            self._probe_t0 = time.perf_counter()
            self._start_probe(it)

    def _start_probe(self, it: int) -> None:
        self._times = []
        self._probe_it = it
        self._use(self._queue[0], it)
        self.mv = self._timed_mv  # type: ignore[method-assign]

    def _probe(self, it: int) -> None:
        if it - self._probe_it < self._probe_iters or not self._times:
            return
        p = self._queue.pop(0)
        self.record.probes[p.config.id] = min(self._times)
        self._probed[p.config.id] = p
        if self._queue:
            self._start_probe(it)
            return
        self._finish_probe(it)

    def _finish_probe(self, it: int) -> None:
        del self.mv                      # back to the untimed method
        rec = self.record
        best = min(rec.probes, key=rec.probes.__getitem__)
        self._use(self._probed[best], it)
        self._probed = {}                # the other candidates' storage goes
        rec.probe_s += time.perf_counter() - self._probe_t0
        rec.events.append((it, f"probed {len(rec.probes)} configurations; kept {best}"))

    def close(self, it: int) -> None:
        """At the end of the solve: note a selection that landed too late or is still running."""
        if self._queue:
            if self._times:
                self.record.probes[self._queue[0].config.id] = min(self._times)
            self.record.probe_s += time.perf_counter() - self._probe_t0
            self.record.events.append((it, "the solve ended while probing"))
            self._queue = []
            self.__dict__.pop("mv", None)
        if self._select_args is not None:
            self._select_args = None
            self.record.events.append((it, "the solve ended before select_patience ran out; no selection"))
        if self._future is not None:
            waited = ""
            if not self._future.done():
                # Waited for, not left running: once the products have their cores back, a helper
                # still ranking would oversubscribe them, and every OpenMP region after the return
                # (the caller's own too) would wait at its barrier for a descheduled thread.  The
                # ranking cannot be interrupted; the conversions stop at the cancel.
                self._cancel.set()
                t = time.perf_counter()
                concurrent.futures.wait([self._future])
                waited = f" (waited {1e3 * (time.perf_counter() - t):.3f} ms for it, conversions cancelled)"
            exc = self._future.exception()
            if exc is None:
                self._note(self._future.result(), it)
                self.record.events.append((it, f"the selection landed after the last iteration{waited}"))
            else:
                self.record.events.append((it, f"ranking failed ({type(exc).__name__}: {exc}){waited}"))
            self._future = None
        self._all_cores()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
        self.active = False
        self.record.products = self.products
