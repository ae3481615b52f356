"""The configuration-switching policy of a solve, written once for both devices: start a selection
(ranking and conversion) beside the iterations, land it, probe its candidates, switch, and record it
all in the solve's :class:`SolveRecord`. What a device does for it (convert, select, try, time,
free) is the :class:`Device` interface: :class:`pyspmv.solvers.switching.Multiplier` on the CPU,
:class:`pyspmv.solvers.device.Plans` on the GPU."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import concurrent.futures
import math
import threading
import time
from collections.abc import Callable
from typing import Any, Protocol

from ..matrices.configs import Config
from .record import SolveRecord
from .switching import Selection, after_selection, can_rank, selection_estimate_s

#: A pick is converted and tried only where its predicted saving over the iterations the solve is expected to run
#: still exceeds this many times what the switch is expected to cost (:meth:`Device.switch_cost_s`): the saving is
#: a prediction (the model's error at scale is several per cent, studies/2026-11-29-h200-default), the cost is
#: paid for sure, and a solve that converges sooner than projected saves less.
SWITCH_MARGIN = 2.0
#: A probed candidate replaces the configuration that runs only where it measured faster by more than this
#: fraction (a chunk's timing noise), and the time it saves over the remaining iterations exceeds
#: ``SWITCH_MARGIN`` times the switch's cost beyond the conversion (already paid by then).
PROBE_NOISE = 0.02
#: Residuals seen at the ends of chunks before their trend projects the iterations left (fewer: the set-up's
#: prior, ``n_calls``).
TREND_POINTS = 3
#: Where chunks are timed (the GPU), a probed candidate first runs a short chunk (the device's ``first look``); one
#: that takes more than this many times the running configuration's last measured iteration there is dropped at
#: once instead of running a whole probe. The model's error on a matrix unlike its training data can be an order
#: of magnitude: on the H200 a 6.7e6-entry graph Laplacian's JAD (value table) took 0.90 ms an iteration against
#: cuSPARSE's 0.067, and its probe of 30 iterations cost the solve 27 ms of its 50. Loose, since a short chunk
#: carries the host's return at its end.
FIRST_LOOK_SLOWER = 1.5
#: Before its first look, a probed candidate other than the start runs one iteration (a glance), and is dropped
#: there where it took more than ``FIRST_LOOK_SLOWER`` times the running pace plus this many seconds, an allowance
#: for the return of a one-iteration chunk launched kernel by kernel, which the first look's length is there to
#: dilute (chosen, not measured: several times the tens of µs a chunk's return costs, ``FIRST_LOOK_S``). A first
#: look lasts as many iterations as the running configuration runs in its time; a candidate an order of magnitude
#: slower spent that many of its own (on the H200, CG on a 6.7e6-entry graph Laplacian: a JAD with a value table
#: at 20x cuSPARSE's iteration took 13 ms of a 57 ms solve there, where the fixed solve took 46 ms).
GLANCE_RETURN_S = 2e-4

#: What a selection asks before it converts its pick: None where switching is expected to pay, else why not
#: (:meth:`Policy.worth`). Arguments: the pick's and the running configuration's predicted ms per product.
Gate = Callable[[float, float], "str | None"]


class Device(Protocol):
    """What :class:`Policy` asks of the device a solve iterates on. A candidate (``p`` below) is what
    :meth:`prepare` and :meth:`select` make: anything with a ``config``."""

    def prepare(self, cfg: Config) -> Any:
        """``A`` converted (and uploaded) for ``cfg``; raises what conversion raises."""

    def select(self, k: int, current: Any, cancel: threading.Event, beside: bool, gate: Gate | None) -> Selection:
        """Rank and make the first ``k`` candidates; ``beside``: on the helper thread, beside the
        iterations (else before them, ``serial``); ``gate``: asked before converting, see :data:`Gate`."""

    def switch_cost_s(self, pick_ms: float) -> float | None:
        """What converting and switching to a pick predicted at ``pick_ms`` per product is expected to cost the
        solve, in seconds; None where the device does not estimate it (then every pick is tried)."""

    def return_cost_s(self) -> float | None:
        """What going back to a candidate made and tried before (its probe's end: one probed earlier measured
        faster than the last) is expected to cost the solve, in seconds; None where the device does not estimate it."""

    def trial(self, p: Any) -> None:
        """Raise where a product of ``p`` on the solve's vectors fails."""

    def use(self, p: Any) -> None:
        """The products from now on run ``p``."""

    def selecting(self, on: bool) -> None:
        """The helper thread starts (True), or its result was taken or the solve ends (False)."""

    def time_probe(self, on: bool) -> None:
        """Start timing the products of what runs now (True: a probe begins), or stop (False)."""

    def probe_time(self) -> float | None:
        """The time measured since :meth:`time_probe` started, or None where none was (the GPU's are
        reported by :meth:`Policy.ran`)."""

    def landed(self) -> None:
        """The selection beside the iterations has returned (called on whichever thread completes it)."""

    def release(self, ps: list[Any], solving: bool) -> None:
        """Free the candidates ``ps``: while the solve runs (``solving``) or after it ended."""

    def late(self, future: concurrent.futures.Future[Selection]) -> str | None:
        """The solve ended while the selection ``future`` runs (its conversions cancelled): wait for it
        and return what to add to the record's line, or None where it is left to end on its thread."""


class Policy:
    """The configuration a solve runs, chosen by its policy (``fixed``, ``serial``, ``async``,
    ``online``). The solver calls :meth:`boundary` between iterations while :attr:`active` (the only
    place the configuration changes), reports timed chunks of iterations to :meth:`ran` where the device
    times chunks, and calls :meth:`close` at the end.

    ``args``: the solve's ``config`` (the start), ``top_k``, ``probe_iters``, ``select_min_nnz`` and
    ``select_patience``; where given, ``n_calls`` (the products the set-up expects), ``products_per_iteration``,
    ``limit`` (iterations at most) and ``tol`` (the residual norm that ends it): what :meth:`worth` weighs a
    switch by.
    """

    def __init__(self, dev: Device, nnz: int, policy: str, args: dict[str, Any], record: SolveRecord, t0: float):
        self.dev, self.record, self.t0 = dev, record, t0
        self.active = False
        self.current: Any = None
        self._owned: list[Any] = []
        self._future: concurrent.futures.Future[Selection] | None = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._cancel = threading.Event()
        self.probe_iters: int = args["probe_iters"]
        self._queue: list[Any] = []
        self._probed: dict[str, Any] = {}
        self._probe_t0 = 0.0
        self._probe_it = 0
        self._select_k: int | None = None      # a selection waiting for its start time
        self._select_at = 0.0
        self._args = args
        self._it = 0                            # the last iteration reported by ran()
        self._looking = False                   # the probed candidate's first chunk is the next one
        self._glancing = False                  # ... and one iteration of it before that (GLANCE_RETURN_S)
        self._probe_start = ""                  # the configuration a probe began on (not glanced at)
        self._iteration_s: float | None = None  # the last chunk's seconds an iteration outside a probe
        self._trend: list[tuple[int, float]] = []  # (iteration, residual) at the ends of chunks
        start: Config = args["config"]
        if policy == "fixed":
            self._timed_prepare(start, 0)
        elif policy == "serial":
            try:
                sel = dev.select(1, None, self._cancel, False, self.worth)
            except Exception as exc:  # noqa: BLE001
                record.events.append((0, f"ranking failed ({type(exc).__name__}: {exc}); running {start.id}"))
                self._timed_prepare(start, 0)
            else:
                self._note(sel, 0)
                self._owned += sel.candidates
                if sel.candidates and self._trial(sel.candidates[0], 0, f"running {start.id}"):
                    self._use(sel.candidates[0], 0)
                else:
                    self._timed_prepare(start, 0)
        elif not can_rank(policy, nnz, args["select_min_nnz"]):
            self._timed_prepare(start, 0)
            why = f"{nnz} stored entries <= select_min_nnz={args['select_min_nnz']}: no ranking beside the iterations"
            record.events.append((0, f"{why}; running {start.id}"))
        else:
            self._timed_prepare(start, 0)
            self._select_k = args["top_k"] if policy == "online" else 1
            self._select_at = time.perf_counter() + args["select_patience"] * selection_estimate_s(nnz)
            if args["select_patience"] == 0:
                self._start_selection(0)
            self.active = True

    @property
    def probing(self) -> bool:
        """Whether candidates are being timed."""
        return bool(self._queue)

    @property
    def first_look(self) -> float | None:
        """While the next chunk is a probed candidate's first, short look (:data:`FIRST_LOOK_SLOWER`): the seconds
        an iteration took outside the probe, which sizes it; else None (also where no chunk outside a probe was
        timed: then the first chunk is the whole probe)."""
        return self._pace if self._queue and self._looking and not self._glancing else None

    @property
    def glance(self) -> float | None:
        """While the next chunk is a probed candidate's glance, one iteration before its first look
        (:data:`GLANCE_RETURN_S`): the seconds an iteration took outside the probe; else None."""
        return self._pace if self._queue and self._glancing else None

    @property
    def _pace(self) -> float | None:
        """The running configuration's seconds an iteration that a candidate's glance and first look are held
        against: the start's own probe, once it was timed (a probe times the start first, with nothing beside it),
        else the last chunk outside the probe, which the selection beside it slowed (on the H200, CG on a 1.6e7-entry
        graph Laplacian, ``snap_ca-HepTh_x38kron_r4_lap`` of benchmarks/solvers_gpu.py: 130 µs an iteration there,
        89 µs in the start's probe). None where no chunk outside the probe was timed: then no glance or look."""
        if self._iteration_s is None:
            return None
        return self.record.probes.get(self._probe_start, self._iteration_s)

    @property
    def awaiting(self) -> bool:
        """Whether a selection runs beside the iterations, or has returned and waits for the next boundary
        (the device hears :meth:`Device.landed` when it returns)."""
        return self._future is not None

    @property
    def selection_at(self) -> float | None:
        """When a selection that waits for its start time starts (``time.perf_counter()``); None: none waits."""
        return self._select_at if self._select_k is not None else None

    # -- configurations ------------------------------------------------------------------------
    def _use(self, p: Any, it: int) -> None:
        self.current = p
        self.dev.use(p)
        self.record.switched(it, p.config.id)

    def _timed_prepare(self, cfg: Config, it: int) -> None:
        t = time.perf_counter()
        p = self.dev.prepare(cfg)
        self._owned.append(p)
        self.record.convert_s += time.perf_counter() - t
        self._use(p, it)

    def _trial(self, p: Any, it: int, instead: str) -> bool:
        """Whether a product of ``p`` on the solve's vectors succeeds; if not, say why and ``instead``."""
        try:
            self.dev.trial(p)
        except Exception as exc:  # noqa: BLE001 — the switch's failure leaves the solve where it is
            why = f"switching to {p.config.id} failed ({type(exc).__name__}: {exc})"
            self.record.events.append((it, f"{why}; {instead}"))
            return False
        return True

    def _switch(self, p: Any, it: int) -> bool:
        """Run on ``p`` from iteration ``it`` if a trial product of it succeeds; else say why and stay."""
        if p is self.current:
            return True
        if not self._trial(p, it, f"staying on {self.current.config.id}"):
            return False
        self._use(p, it)
        return True

    def _note(self, sel: Selection, it: int) -> None:
        rec = self.record
        rec.ranking = sel.ranking
        rec.rank_s += sel.rank_s
        rec.convert_s += sel.convert_s
        rec.rank_window = (sel.start - self.t0, sel.end - self.t0)
        rec.events.extend((it, f) for f in sel.failures)

    def _start_selection(self, it: int) -> None:
        """Rank and convert on a helper thread from iteration ``it`` on."""
        k, self._select_k = self._select_k, None
        assert k is not None
        if it > 0:
            self.record.events.append((it, "selection started (the solve has outlasted select_patience)"))
        self.dev.selecting(True)
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pyspmv-solvers-select")
        self._future = self._pool.submit(self.dev.select, k, self.current, self._cancel, True, self.worth)
        self._future.add_done_callback(self._returned)

    def _returned(self, fut: concurrent.futures.Future[Selection]) -> None:
        """The selection returned (on its thread): wake the iterations only where it has something for them to
        do. A selection that holds or keeps the running configuration lands at the solve's next boundary, or
        its end: on the GPU each wake drains the queued iterations until the host queues more, a loss that a
        solve which does not switch cannot repay."""
        if fut.cancelled() or fut.exception() is not None or self._acts(fut.result()):
            self.dev.landed()

    def _acts(self, sel: Selection) -> bool:
        """Whether landing ``sel`` switches or probes (else it holds or keeps what runs)."""
        return sel.held is None and after_selection(list(sel.candidates), self.current, self.probe_iters)[0] in \
            ("switch", "probe")

    def _say_kept(self, sel: Selection, it: int) -> None:
        """Record why ``sel`` leaves the solve on its configuration: held by the gate, or ranked first."""
        if sel.held is not None:
            self.record.events.append((it, f"ranking picks {sel.ranking[0][0]}; staying on "
                                           f"{self.current.config.id}: {sel.held}"))
        elif sel.candidates and after_selection(list(sel.candidates), self.current, self.probe_iters)[0] == "keep":
            self.record.events.append((it, f"ranking keeps {self.current.config.id}"))

    # -- boundaries ----------------------------------------------------------------------------
    def boundary(self, it: int) -> None:
        """Between iterations ``it - 1`` and ``it``: start the selection when due, take one that landed,
        advance probing. Any failure here is recorded and leaves the solve on its current configuration."""
        if self._select_k is not None:
            if time.perf_counter() >= self._select_at:
                self._start_selection(it)
            return
        if self._future is not None:
            if not self._future.done():
                return
            fut, self._future = self._future, None
            self.dev.selecting(False)
            try:
                self._land(fut.result(), it)
            except Exception as exc:  # noqa: BLE001 — the ranking thread's or the switch's failure
                self._queue = []
                self.record.events.append(
                    (it, f"ranking failed ({type(exc).__name__}: {exc}); staying on {self.current.config.id}"))
        if self._queue and it - self._probe_it >= self.probe_iters:
            seconds = self.dev.probe_time()
            if seconds is not None:
                self._measured(it, seconds)
        self.active = self._future is not None or bool(self._queue)

    def _land(self, sel: Selection, it: int) -> None:
        self._note(sel, it)
        self._say_kept(sel, it)
        landed = list(sel.candidates)
        self._owned += [c for c in landed if c is not self.current]
        what, cands = after_selection(landed, self.current, self.probe_iters)
        if what == "switch" and self._switch(cands[0], it):
            self.record.events.append((it, f"switched to {cands[0].config.id}"))
        elif what == "probe":
            self._queue = cands
            self._probe_start = self.current.config.id
            self._probe_t0 = time.perf_counter()
            self._next_probe(it)
            return
        if what != "none" and self.probe_iters == 0:
            self._release()

    def _next_probe(self, it: int) -> None:
        """Run the first queued candidate that takes a trial product, timed; drop those that fail it."""
        while self._queue and not self._switch(self._queue[0], it):
            self._queue.pop(0)
        if not self._queue:
            self._finish_probe(it)
            return
        self._probe_it = it
        self._looking = True
        self._glancing = self._queue[0].config.id != self._probe_start
        self.dev.time_probe(True)

    def ran(self, it: int, iterations: int, seconds: float, residual: float | None = None) -> None:
        """A chunk of ``iterations`` iterations ended at iteration ``it`` after ``seconds`` with the residual norm
        ``residual`` (the GPU's probes time whole chunks; the residuals project the iterations left)."""
        self._it = it
        if residual is not None and math.isfinite(residual) and residual > 0 and iterations > 0:
            self._trend.append((it, residual))
        if iterations <= 0:
            return
        if not self._queue:
            self._iteration_s = seconds / iterations
            return
        ref = self._pace
        if self._glancing and ref is not None:
            self._glancing = False
            if seconds <= iterations * FIRST_LOOK_SLOWER * ref + GLANCE_RETURN_S:
                return                              # on to the first look
            self._looking = False
            why = (f"{self._queue[0].config.id} took {seconds / iterations / ref:.2f}x an iteration's time at a glance "
                   f"({iterations} iteration in {seconds * 1e3:.3g} ms); not probed further")
            self.record.events.append((it, why))
        if self._looking and ref is not None:       # without a pace to compare with, the first chunk is the probe
            self._looking = False
            if seconds / iterations <= FIRST_LOOK_SLOWER * ref:
                return                              # not clearly slower: on to a whole probe
            self.record.events.append((it, f"{self._queue[0].config.id} took {seconds / iterations / ref:.2f}x an "
                                           "iteration's time at its first look; not probed further"))
        self._measured(it, seconds / iterations)
        self.active = self._future is not None or bool(self._queue)

    def _measured(self, it: int, seconds: float) -> None:
        """The probed candidate took ``seconds``: on to the next one, or keep the fastest."""
        p = self._queue.pop(0)
        self.record.probes[p.config.id] = seconds
        self._probed[p.config.id] = p
        if self._queue:
            self._next_probe(it)
        else:
            self._finish_probe(it)

    def _finish_probe(self, it: int) -> None:
        self.dev.time_probe(False)
        rec = self.record
        if self._probed:
            best = min(self._probed, key=rec.probes.__getitem__)
            why = self._not_worth_keeping(best, it)
            if why is not None:
                best = self.current.config.id
            self._use(self._probed[best], it)  # tried when its probe began
            rec.events.append((it, f"probed {len(self._probed)} configurations; kept {best}" +
                               (f" ({why})" if why else "")))
        rec.probe_s += time.perf_counter() - self._probe_t0
        self._probed = {}
        self._release()

    def _not_worth_keeping(self, best: str, it: int) -> str | None:
        """Why the probe's fastest, ``best``, should not replace the configuration running now (probed too),
        or None: it must measure faster beyond :data:`PROBE_NOISE`, and save more than ``SWITCH_MARGIN`` times
        what going back to it costs (:meth:`Device.return_cost_s`) over the iterations left."""
        cur = self.current.config.id
        t = self.record.probes
        if best == cur or cur not in t or cur not in self._probed:
            return None
        if t[best] > (1.0 - PROBE_NOISE) * t[cur]:
            return f"{best} measured {t[best] / t[cur]:.3f}x {cur}'s time, within the {PROBE_NOISE:.0%} noise"
        back = self.dev.return_cost_s()
        left = self.remaining(it)
        if back is not None and left * (t[cur] - t[best]) <= SWITCH_MARGIN * back:
            return (f"{best} would save {left * (t[cur] - t[best]):.3g} s over about {left:.0f} iterations left, "
                    f"not {SWITCH_MARGIN:g}x going back's {back:.3g} s")
        return None

    # -- whether a switch pays -----------------------------------------------------------------
    def remaining(self, it: int) -> float:
        """Iterations the solve is expected to run from ``it``: the set-up's prior (``n_calls`` over the products
        per iteration) and, where :data:`TREND_POINTS` chunks reported a residual, the projection of their
        geometric trend, whichever is smaller (CG's early residuals fall slower than its later ones, so the
        projection alone overstates what is left: on the H200 a 1.8e5-entry solve projected 2,800 iterations at
        its 190th and ended at its 694th); once the solve has outrun its prior, the projection alone; never past
        ``limit``."""
        a = self._args
        left = float(a.get("limit", math.inf)) - it
        prior = a.get("n_calls", 0) / max(1, a.get("products_per_iteration", 1)) - it
        tol = a.get("tol", 0.0)
        pts = self._trend
        if len(pts) >= TREND_POINTS and tol > 0 and pts[-1][0] > pts[0][0]:
            (i0, r0), (i1, r1) = pts[0], pts[-1]
            rate = math.log(r1 / r0) / (i1 - i0)
            if rate < 0:
                left = min(left, math.log(tol / r1) / rate)
            return max(0.0, min(left, prior) if prior > 0 else left)
        return max(0.0, min(left, prior))

    def worth(self, pick_ms: float, current_ms: float) -> str | None:
        """:data:`Gate`: None where a pick predicted at ``pick_ms`` per product (``current_ms`` for what runs now)
        saves more than :data:`SWITCH_MARGIN` times the device's switch cost over the iterations left; else why
        not, for the record."""
        cost = self.dev.switch_cost_s(pick_ms)
        if cost is None or not (math.isfinite(pick_ms) and math.isfinite(current_ms)):
            return None
        it = self._it
        left = self.remaining(it)
        gain = left * self._args.get("products_per_iteration", 1) * (current_ms - pick_ms) / 1e3
        if gain > SWITCH_MARGIN * cost:
            return None
        return (f"the pick would save {gain:.3g} s (predicted {pick_ms:.4g} against {current_ms:.4g} ms a product) "
                f"over about {left:.0f} iterations left, not {SWITCH_MARGIN:g}x the switch's {cost:.3g} s")

    def _release(self) -> None:
        """Free the candidates no longer in use."""
        keep = [p for p in self._owned if p is self.current or any(p is q for q in self._queue)]
        dropped = [p for p in self._owned if all(p is not q for q in keep)]
        if dropped:
            self.dev.release(dropped, True)
        self._owned = keep

    def close(self, it: int, products: int) -> None:
        """At the end of the solve: note a probe cut short and a selection that landed too late or still
        runs; free every candidate."""
        rec = self.record
        if self._queue:
            seconds = self.dev.probe_time()
            if seconds is not None:
                rec.probes[self._queue[0].config.id] = seconds
            rec.probe_s += time.perf_counter() - self._probe_t0
            rec.events.append((it, "the solve ended while probing"))
            self._queue = []
            self.dev.time_probe(False)
        if self._select_k is not None:
            self._select_k = None
            rec.events.append((it, "the solve ended before select_patience ran out; no selection"))
        wait = True
        if self._future is not None:
            waited: str | None = ""
            if not self._future.done():
                self._cancel.set()
                waited = self.dev.late(self._future)
            if waited is None:
                why = "the solve ended while the selection ran; left to end on its thread, conversions cancelled"
                rec.events.append((it, why))
                wait = False
            elif (exc := self._future.exception()) is not None:
                rec.events.append((it, f"ranking failed ({type(exc).__name__}: {exc}){waited}"))
            else:
                sel = self._future.result()
                self._note(sel, it)
                self._owned += [c for c in sel.candidates if c is not self.current]
                if waited or self._acts(sel):
                    rec.events.append((it, f"the selection landed after the last iteration{waited}"))
                else:    # it returned while the iterations ran, with nothing for them to do (not woken)
                    self._say_kept(sel, it)
            self._future = None
        self.dev.selecting(False)
        if self._pool is not None:
            self._pool.shutdown(wait=wait)
            self._pool = None
        self.dev.release(self._owned, False)
        self._owned = []
        self.active = False
        rec.products = products
