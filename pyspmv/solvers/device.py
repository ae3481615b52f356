"""The GPU path of :mod:`pyspmv.solvers`: CG, BiCGSTAB and GMRES iterating on the device
(``kernels/krylov.cu`` through ``pyspmv._cuda.Krylov``), their products made by plans that the policy
chooses between chunks of iterations."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import concurrent.futures
import functools
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..devices import arrays, gpu
from ..matrices.configs import Config, config
from ..matrices.formats import convert
from ..matrices.matrix import Matrix
from .record import BREAKDOWN, BREAKDOWN_OMEGA, SolveRecord
from .setup import Problem
from .switching import Selection, after_selection, can_rank, select, selection_estimate_s, threadpools

#: ``pyspmv._cuda.Krylov``'s methods and states (``SPMV_KRYLOV_*`` of ``kernels/spmv_cuda.h``).
METHODS = {"cg": 0, "bicgstab": 1, "gmres": 2}
RUNNING, CONVERGED, BROKE, BROKE_OMEGA = 0, 1, 2, 3
#: While a selection runs, the solve comes back to Python about this often to see whether it landed:
#: each return drains the iterations queued ahead and idles the GPU for a Python call and the next
#: launch (some tens of microseconds), so 2 ms keeps that near 1-2 % while a landed pick waits at most
#: about 2 ms.
BOUNDARY_S = 2e-3
#: CG and BiCGSTAB iterations launched as one CUDA graph each (captured once per plan; a capture that
#: fails falls back to launching the kernels one by one, with the same result). False: always one by one.
USE_GRAPHS = True
#: The configuration a matrix preconditioner runs as.
PRECOND_CONFIG = "cusparse/csr/default"


@dataclass
class DevicePrepared:
    """A configuration and its plan on the GPU (``A`` converted and uploaded for it)."""

    config: Config
    plan: gpu.Plan


def prepare(M: Matrix, cfg: Config, dtype: np.dtype) -> DevicePrepared:
    """Convert ``M`` for ``cfg`` and upload it; raises what :func:`pyspmv.convert` and
    :class:`pyspmv.devices.gpu.Plan` raise."""
    F = convert(M, cfg.format, dtype=dtype, **cfg.format_kwargs)
    return DevicePrepared(cfg, gpu.Plan(F, cfg))


def select_device(M: Matrix, dtype: np.dtype, model: Any, n_calls: int, k: int, current: DevicePrepared,
                  cancel: threading.Event) -> Selection:
    """Rank ``M``'s CUDA configurations, convert the first ``k`` that can serve it and make their plans;
    a failure to upload one is noted and it is skipped. On the host's cores but two: one launches the
    GPU's iterations, one is left for the rest of the machine (the CPU's solves take one, since there the
    products need the others)."""
    with threadpools().select(user_api="openmp").limit(limits=max(1, (os.cpu_count() or 1) - 2)):
        sel = select(M, dtype, "cuda", model, n_calls, k, current, cancel)   # type: ignore[arg-type]
    cands: list[Any] = []
    for p in sel.candidates:
        if p is current:
            cands.append(p)
            continue
        if cancel.is_set():
            break
        t = time.perf_counter()
        try:
            cands.append(DevicePrepared(p.config, gpu.Plan(p.matrix, p.config)))
        except Exception as exc:  # noqa: BLE001 — any failure leaves the solve on its configuration
            sel.failures.append(f"uploading {p.config.id} failed ({type(exc).__name__}: {exc})")
        sel.convert_s += time.perf_counter() - t
    sel.candidates = cands
    sel.end = time.perf_counter()
    return sel


class Switcher:
    """The plan a GPU solve iterates with, chosen by its policy (as :class:`switching.Multiplier`
    on the CPU). The driver asks :meth:`chunk` how many iterations to run before the next boundary,
    calls :meth:`boundary` there while :attr:`active`, and reports each chunk to :meth:`ran`."""

    def __init__(self, K: Any, M: Matrix, dtype: np.dtype, policy: str, args: dict[str, Any],
                 record: SolveRecord, t0: float):
        self.K, self.record, self.t0 = K, record, t0
        self.active = False
        self.current: DevicePrepared
        self._M, self._dtype = M, dtype
        self._owned: list[DevicePrepared] = []
        self._future: concurrent.futures.Future[Selection] | None = None
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._cancel = threading.Event()
        self._probe_iters = args["probe_iters"]
        self._queue: list[DevicePrepared] = []
        self._probed: dict[str, DevicePrepared] = {}
        self._probe_t0 = 0.0
        self._select_args: tuple[Any, ...] | None = None
        self._select_at = 0.0
        start: Config = args["config"]
        if policy == "fixed":
            self._timed_prepare(start, 0)
        elif policy == "serial":
            try:
                sel = select_device(M, dtype, args["model"], args["n_calls"], 1, None, self._cancel)  # type: ignore
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
        elif not can_rank(policy, M.nnz, args["select_min_nnz"]):
            self._timed_prepare(start, 0)
            why = (f"{M.nnz} stored entries <= select_min_nnz={args['select_min_nnz']}: no ranking beside the "
                   "iterations")
            record.events.append((0, f"{why}; running {start.id}"))
        else:
            self._timed_prepare(start, 0)
            k = args["top_k"] if policy == "online" else 1
            self._select_args = (M, dtype, args["model"], args["n_calls"], k)
            self._select_at = time.perf_counter() + args["select_patience"] * selection_estimate_s(M.nnz)
            if args["select_patience"] == 0:
                self._start_selection(0)
            self.active = True

    @property
    def plan(self) -> Any:
        """The ``_cuda.Plan`` the next iterations run with."""
        return self.current.plan._plan

    # -- configurations ------------------------------------------------------------------------
    def _use(self, p: DevicePrepared, it: int) -> None:
        self.current = p
        self.record.switched(it, p.config.id)

    def _timed_prepare(self, cfg: Config, it: int) -> None:
        t = time.perf_counter()
        p = prepare(self._M, cfg, self._dtype)
        self._owned.append(p)
        self.record.convert_s += time.perf_counter() - t
        self._use(p, it)

    def _trial(self, p: DevicePrepared, it: int, instead: str) -> bool:
        """Whether a product of ``p`` on the solve's vectors succeeds; if not, say why and ``instead``. It
        also captures the iteration's graph for ``p``, so that a probe's first chunk times iterations only."""
        try:
            self.K.prepare(p.plan._plan)
        except Exception as exc:  # noqa: BLE001 — the switch's failure leaves the solve where it is
            why = f"switching to {p.config.id} failed ({type(exc).__name__}: {exc})"
            self.record.events.append((it, f"{why}; {instead}"))
            return False
        return True

    def _switch(self, p: DevicePrepared, it: int) -> bool:
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
        args, self._select_args = self._select_args, None
        assert args is not None
        if it > 0:
            self.record.events.append((it, "selection started (the solve has outlasted select_patience)"))
        self._pool = concurrent.futures.ThreadPoolExecutor(1, thread_name_prefix="pyspmv-solvers-select")
        self._future = self._pool.submit(select_device, *args, self.current, self._cancel)

    # -- boundaries ----------------------------------------------------------------------------
    def chunk(self, per_iteration_s: float | None) -> int | None:
        """Iterations to run before the next boundary (None: as many as the solve needs)."""
        if self._queue:
            return max(1, self._probe_iters)
        if not self.active:
            return None
        if per_iteration_s is None:
            return 8
        wait = BOUNDARY_S
        if self._select_args is not None:      # nothing to look at before the selection's start time
            wait = max(BOUNDARY_S, self._select_at - time.perf_counter())
        return max(1, min(1 << 20, int(wait / max(per_iteration_s, 1e-7))))

    def boundary(self, it: int) -> None:
        """Before iteration ``it``: start the selection when due, take one that landed."""
        if self._select_args is not None:
            if time.perf_counter() >= self._select_at:
                self._start_selection(it)
            return
        if self._future is not None:
            if not self._future.done():
                return
            fut, self._future = self._future, None
            try:
                self._land(fut.result(), it)
            except Exception as exc:  # noqa: BLE001 — the ranking thread's or the switch's failure
                self._queue = []
                self.record.events.append(
                    (it, f"ranking failed ({type(exc).__name__}: {exc}); staying on {self.current.config.id}"))
        self.active = self._future is not None or bool(self._queue)

    def _land(self, sel: Selection, it: int) -> None:
        self._note(sel, it)
        landed: list[DevicePrepared] = list(sel.candidates)   # type: ignore[arg-type]
        self._owned += [c for c in landed if c is not self.current]
        what, cands = after_selection(landed, self.current, self._probe_iters)
        if what == "keep":
            self.record.events.append((it, f"ranking keeps {self.current.config.id}"))
        elif what == "switch" and self._switch(cands[0], it):
            self.record.events.append((it, f"switched to {cands[0].config.id}"))
        elif what == "probe":
            self._queue = cands
            self._probe_t0 = time.perf_counter()
            self._next_probe(it)
            return
        if what != "none" and self._probe_iters == 0:
            self._release()

    def _next_probe(self, it: int) -> None:
        """Run the first queued candidate that takes a trial product; drop those that fail it."""
        while self._queue and not self._switch(self._queue[0], it):
            self._queue.pop(0)
        if not self._queue:
            self._finish_probe(it)

    def ran(self, it: int, iterations: int, seconds: float) -> None:
        """A chunk of ``iterations`` iterations ended at iteration ``it`` after ``seconds``."""
        if not self._queue or iterations <= 0:
            return
        p = self._queue.pop(0)
        self.record.probes[p.config.id] = seconds / iterations
        self._probed[p.config.id] = p
        if self._queue:
            self._next_probe(it)
        else:
            self._finish_probe(it)
        self.active = self._future is not None or bool(self._queue)

    def _finish_probe(self, it: int) -> None:
        rec = self.record
        if self._probed:
            best = min(self._probed, key=rec.probes.__getitem__)
            self._use(self._probed[best], it)  # tried when its probe began
            rec.events.append((it, f"probed {len(self._probed)} configurations; kept {best}"))
        rec.probe_s += time.perf_counter() - self._probe_t0
        self._probed = {}
        self._release()

    def _release(self) -> None:
        """Free the plans no longer in use (the solve's stream is idle between chunks)."""
        keep = [p for p in self._owned if p is self.current or any(p is q for q in self._queue)]
        if len(keep) < len(self._owned):
            self.K.set_graphs(USE_GRAPHS)    # a graph is bound to its plan's address: it goes first
        for p in self._owned:
            if all(p is not q for q in keep):
                p.plan.close()
        self._owned = keep

    def close(self, it: int, products: int) -> None:
        """At the end of the solve: note a selection still running or a probe cut short; free every plan."""
        rec = self.record
        if self._queue:
            rec.probe_s += time.perf_counter() - self._probe_t0
            rec.events.append((it, "the solve ended while probing"))
            self._queue = []
        if self._select_args is not None:
            self._select_args = None
            rec.events.append((it, "the solve ended before select_patience ran out; no selection"))
        wait = True
        if self._future is not None:
            if not self._future.done():
                # Not waited for (the CPU's solves wait, for their cores): the GPU's answer is ready, and
                # the host's cores are the selection's. Its conversions stop at the cancel; the plans it
                # made are freed on its thread when it returns.
                self._cancel.set()
                self._future.add_done_callback(_free_selection)
                why = "the solve ended while the selection ran; left to end on its thread, conversions cancelled"
                rec.events.append((it, why))
                wait = False
            elif self._future.exception() is not None:
                exc = self._future.exception()
                rec.events.append((it, f"ranking failed ({type(exc).__name__}: {exc})"))
            else:
                sel = self._future.result()
                self._note(sel, it)
                self._owned += [c for c in sel.candidates if c is not self.current]  # type: ignore[misc]
                rec.events.append((it, "the selection landed after the last iteration"))
            self._future = None
        if self._pool is not None:
            self._pool.shutdown(wait=wait)
            self._pool = None
        for p in self._owned:
            p.plan.close()
        self._owned = []
        self.active = False
        rec.products = products


def _free_selection(fut: concurrent.futures.Future[Selection]) -> None:
    """Free the plans of a selection that returned after its solve ended (the solve's own plan, if it is
    among them, was freed by the solve; freeing twice does nothing)."""
    if fut.exception() is None:
        for p in fut.result().candidates:
            p.plan.close()   # type: ignore[attr-defined]


def solve(fn: str, P: Problem, callback: Callable[..., Any] | None, *, restart: int = 1,
          callback_type: str | None = None) -> tuple[np.ndarray, int, SolveRecord]:
    """Run solver ``fn`` on the GPU for the checked problem ``P`` (``P.device == 'cuda'``)."""
    cuda = gpu.cuda()
    rec, n, dt = P.record, P.M.shape[0], P.dtype
    assert P.policy_args is not None
    gmres = fn == "gmres"
    K = cuda.Krylov(METHODS[fn], n, dt.itemsize, restart if gmres else 1)
    K.set_graphs(USE_GRAPHS)
    sw: Switcher | None = None
    pre_plan: DevicePrepared | None = None
    it = products = 0
    chunks: list[tuple[float, float, int, int]] = []     # (start, end, first iteration, last + 1)
    where = f"{fn}(device='cuda')"
    b_dev = not isinstance(P.b, np.ndarray)
    x_dev = not isinstance(P.x, np.ndarray)
    keep = []                                          # the caller's vectors' DLPack capsules, while used
    try:
        if b_dev:                       # read in place on its stream; the tolerance's scale measured there
            stream = arrays.stream_handle(P.b, None, where)
            bv = arrays.device_vector(P.b, "b", n, dt, where, stream)
            keep.append(bv)
            K.load(0, bv.address, stream)
            P.bnorm = K.norm_b()
            P.tol = max(P.policy_args["rtol"] * P.bnorm, P.policy_args["atol"])
        else:
            K.load(0, P.b)
        if x_dev:
            xs = arrays.stream_handle(P.x, None, where)
            xv = arrays.device_vector(P.x, "x0", n, dt, where, xs)
            keep.append(xv)
            K.load(1, xv.address, xs)
        else:
            K.load(1, P.x)
        # the answer (and callback's xk): of b's kind, a new vector (x0 is the caller's and stays as it was)
        if b_dev:
            out = arrays.empty_like(P.b, n, dt, where)
            ov = arrays.device_vector(out, "x", n, dt, where, stream, writable=True)
            keep.append(ov)
            read_x = functools.partial(K.read_x, ov.address, stream)
        else:
            out = P.x if not x_dev else np.empty(n, dt)
            read_x = functools.partial(K.read_x, out)
        pre = P.precond
        if pre is None:
            K.set_precond(None)
        elif pre.kind == "jacobi":
            K.set_precond(pre.inv_diag)
        elif pre.kind == "matrix":
            assert pre.matrix is not None
            pre_plan = prepare(pre.matrix, config(PRECOND_CONFIG), dt)
            K.set_precond(pre_plan.plan._plan)
        else:
            K.set_precond(pre.apply)
        sw = Switcher(K, P.M, dt, rec.policy, P.policy_args, rec, P.t0)
        t_iter = time.perf_counter()
        K.start(sw.plan, P.tol, not x_dev and not P.x.any())
        state, residual = K.status()[3], K.status()[4]
        cb_x = callback if callback is not None and (not gmres or callback_type == "x") else None
        cb_pr = callback if callback is not None and gmres and callback_type != "x" else None
        cycles = 0
        per_iter: float | None = None
        limit = P.maxiter * (restart if gmres else 1)     # inner iterations at most
        while state == RUNNING and it < limit:
            if sw.active:
                sw.boundary(it)
            want = sw.chunk(per_iter)
            if callback is not None:
                want = 1
            want = limit - it if want is None else min(want, limit - it)
            t = time.perf_counter()
            iters, products, cyc, state, residual, estimate = K.iterate(sw.plan, want, P.maxiter)
            t_end = time.perf_counter()
            ran = iters - it
            chunks.append((t, t_end, it, iters))
            if ran > 0:
                per_iter = (t_end - t) / ran
            sw.ran(iters, ran, t_end - t)
            it = iters
            if cb_pr is not None and ran > 0 and state != BROKE:
                cb_pr(estimate / P.bnorm if P.bnorm > 0 else estimate)
            if cb_x is not None and (cyc > cycles if gmres else ran > 0):
                read_x()
                cb_x(out)
            cycles = cyc
            if ran == 0 or (gmres and cycles >= P.maxiter):
                break
        t_done = time.perf_counter()
        read_x()
        products = K.status()[1]
    finally:
        K.close()                   # first: it waits for its queued work, which uses the plans
        if sw is not None:
            sw.close(it, products)
        if pre_plan is not None:
            pre_plan.plan.close()
    info = {CONVERGED: 0, BROKE: BREAKDOWN, BROKE_OMEGA: BREAKDOWN_OMEGA}.get(state, P.maxiter)
    rec.info, rec.iterations, rec.residual = int(info), int(it), float(residual)
    rec.iterate_s = t_done - t_iter
    rec.iteration_times = _iteration_times(chunks, it) - P.t0
    rec.wall_s = time.perf_counter() - P.t0
    del keep
    return out, rec.info, rec


def _iteration_times(chunks: list[tuple[float, float, int, int]], iterations: int) -> np.ndarray:
    """The start of each iteration, interpolated within the chunk that ran it (the host sees only
    the chunks' ends)."""
    out = np.empty(iterations)
    for t0, t1, first, end in chunks:
        if end > first:
            out[first:end] = t0 + (t1 - t0) * (np.arange(end - first) / (end - first))
    return out
