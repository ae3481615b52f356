"""The GPU path of :mod:`pyspmv.solvers`: CG, BiCGSTAB and GMRES iterating on the device
(``kernels/krylov.cu`` through ``pyspmv._cuda.Krylov``), their products made by plans that the policy
chooses between chunks of iterations."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import concurrent.futures
import functools
import math
import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from ..devices import arrays, gpu
from .._core import NotApplicableError
from ..devices.run import prepare_on_device
from ..matrices.configs import Config, config
from ..matrices.formats import convert
from ..matrices.matrix import Matrix
from ..ranking.precision import size_tol
from ..ranking.rank import DEVICE_ESTIMATE_MIN_NNZ
from ..ranking.verify import device_convert_ms, upload_csr
from ._policy import Gate, Policy
from .record import BREAKDOWN, BREAKDOWN_OMEGA, SolveRecord
from .setup import Problem
from .switching import Selection, select, threadpools

#: ``pyspmv._cuda.Krylov``'s methods and states (``SPMV_KRYLOV_*`` of ``kernels/spmv_cuda.h``).
METHODS = {"cg": 0, "bicgstab": 1, "gmres": 2}
RUNNING, CONVERGED, BROKE, BROKE_OMEGA = 0, 1, 2, 3
#: While a selection waits for its start time (``select_patience``), the solve comes back to Python at least this
#: often to start it; while one runs, its return wakes the iterations (:meth:`Plans.landed`) instead.
BOUNDARY_S = 2e-3
#: CG and BiCGSTAB iterations launched four to a CUDA graph (captured once per plan; a capture that
#: fails falls back to launching the kernels one by one, with the same result). False: always one by one.
USE_GRAPHS = True
#: CG's and BiCGSTAB's vectors kept in the GPU's L2 between their kernels (a persisting access-policy window
#: over them, ``kernels/krylov_l2.cu``): the matrix streams past them instead of evicting them. False: the
#: device's default replacement. Either way the same kernels compute the same values.
USE_L2 = True
#: The configuration a matrix preconditioner runs as.
PRECOND_CONFIG = "cusparse/csr/default"
#: A GPU solve's selection ranks from sampled features (``rank(estimate=True)``) where a GPU Operator does
#: (:data:`pyspmv.ranking.rank.DEVICE_ESTIMATE_MIN_NNZ`): the exact pass costs the host about 7-10 ns an entry
#: (0.14-0.21 s for 2e7 on the dev VM, 0.2 s on the H200's host), during which the solve iterates on its start,
#: while the sample costs about 2 ms; a wrong pick is caught by the probe against the start that follows, which
#: keeps the faster.
ESTIMATE_MIN_NNZ = DEVICE_ESTIMATE_MIN_NNZ
#: A probe times at least this long a chunk of iterations (more than ``probe_iters`` where those are shorter): the
#: host's return at each end of a chunk blurs a chunk of a few iterations (on the H200, probes of 3 iterations of a
#: 5e6-entry CG, 0.2 ms each, kept the slower configuration in one round of three).
PROBE_MIN_S = 2e-3
#: A probed candidate's first look (:data:`pyspmv.solvers._policy.FIRST_LOOK_SLOWER`) lasts at least this long at
#: the running configuration's pace (and ``probe_iters`` iterations): long enough that the host's return at its end
#: (tens of µs) does not make a candidate as fast as the start look 1.5x slower.
FIRST_LOOK_S = 5e-4
#: What a switch costs beyond the conversion, in seconds: the boundaries that drain the iterations queued ahead,
#: the trial products and the iteration's graphs captured for the pick, for the start again when the probe times
#: it, and for the one kept. Measured on the H200 (a run of benchmarks/solvers_gpu.py, 2026-11-29): a 1.8e5-entry
#: CG solve that converted its pick, probed it and went back to its start lost 2.1 ms against the fixed solve.
SWITCH_FIXED_S = 3e-3
#: What going back to a plan made and tried before costs a solve, in seconds: a trial product and the iteration's
#: graph captured again at a boundary the probe's end has anyway. Measured on the H200 (CG, chunks of 40 iterations
#: with and without the plan made ready first, 15 rounds each way; studies/2026-12-01-gpu-solve-selection): 0.09-0.14
#: ms a return on 2-D Poisson 1000^2, 0.20-0.21 ms on a 2e7-entry graph Laplacian (medians), 0.37 ms the largest;
#: before, the probe's end charged SWITCH_FIXED_S, and a solve kept a candidate that measured 4.7 % slower than its
#: start.
RETURN_S = 4e-4


@dataclass
class DevicePrepared:
    """A configuration and its plan on the GPU (``A`` converted and uploaded for it; the plan holds the matrix it
    reads)."""

    config: Config
    plan: gpu.Plan


def prepare(M: Matrix, cfg: Config, dtype: np.dtype, csr: gpu.DeviceMatrix | None = None) -> DevicePrepared:
    """``M`` converted for ``cfg`` and on the GPU: from ``csr`` (``M`` uploaded once as CSR of ``dtype``)
    on the device, with no trip through the host, where given; else (and for CSR in a locality order, a layout
    the device does not make) on the host and uploaded. Raises what :func:`pyspmv.convert` and
    :class:`pyspmv.devices.gpu.Plan` raise."""
    if csr is not None:
        try:
            c, D = prepare_on_device(csr, cfg)
            return DevicePrepared(c, gpu.Plan(D, c))
        except NotApplicableError:
            if cfg.format != "csr":
                raise
    F = convert(M, cfg.format, dtype=dtype, **cfg.format_kwargs)
    return DevicePrepared(cfg, gpu.Plan(F, cfg))


def select_device(M: Matrix, dtype: np.dtype, model: Any, k: int, current: DevicePrepared | None,
                  cancel: threading.Event, gate: Gate | None = None,
                  csr: gpu.DeviceMatrix | None = None, tables: bool = False, tol: float = 0.0) -> Selection:
    """Rank ``M``'s CUDA configurations by their predicted time a product (from sampled features at
    :data:`ESTIMATE_MIN_NNZ` entries and above; with ``tables``, where a probe times the candidates before one is
    kept, also the value-table variants the model does not rank, :func:`pyspmv.ranking.tables.with_value_tables`)
    and make the plans of the first ``k`` that can serve it, converted on the GPU from ``csr`` where given
    (:func:`prepare`); a failure to make one is noted and it is skipped; ``gate`` and ``tol`` as :func:`select`'s.
    On the host's cores but two: one launches the GPU's iterations, one is left for the rest of the machine (the
    CPU's solves take one, since there the products need the others).

    Per product, not ``rank(n_calls=...)``: that adds the model's conversion cost, a conversion on the host and an
    upload, where the solve converts from its CSR copy on the GPU (``gate`` weighs that, :meth:`Plans.switch_cost_s`),
    and it charges the running configuration its own conversion, which is paid. On the H200 the H200 default put
    ``cusparse/csr/default`` at 0.157 ms a call over a graph Laplacian's expected 1,086 products and JAD at 0.114,
    where it predicted 0.024 and 0.039 ms a product and JAD measured 26x cuSPARSE's time; the gate let JAD's
    value-table variant through and the solve lost the conversion and a glance (benchmarks/solvers_gpu.py's
    ``polblogs_x26kron_r4_lap``)."""
    with threadpools().select(user_api="openmp").limit(limits=max(1, (os.cpu_count() or 1) - 2)):
        sel = select(M, dtype, "cuda", model, None, k, current, cancel, gate,
                     functools.partial(prepare, M, dtype=dtype, csr=csr), M.nnz >= ESTIMATE_MIN_NNZ, tables, tol)
    return sel


class Plans:
    """The plans a GPU solve iterates with: the GPU's side of :class:`pyspmv.solvers._policy.Device`, whose
    :class:`~pyspmv.solvers._policy.Policy` chooses between them (as :class:`switching.Multiplier` on the
    CPU). ``K`` is the solve's ``_cuda.Krylov``; a probe times whole chunks of iterations, reported by the
    driver to :meth:`Policy.ran`."""

    def __init__(self, K: Any, M: Matrix, dtype: np.dtype, args: dict[str, Any]):
        self.K = K
        self.current: DevicePrepared
        self._M, self._dtype, self._model = M, dtype, args["model"]
        self._probe_iters: int = args["probe_iters"]
        self._csr: gpu.DeviceMatrix | None = None
        #: K's wake word (``Krylov.set_wake``): set when a selection beside the iterations returns, so that the
        #: solve runs one long chunk meanwhile instead of coming back every 2 ms to look (each return idles the GPU
        #: until this thread has the GIL again from the selection's thread; on the H200 async solves that did not
        #: switch lost up to 6 % that way); the solve resets it
        self.wake = np.zeros(1, np.int32)
        K.set_wake(self.wake.ctypes.data)
        #: Set when the iterations run (inside ``K.iterate``, the GIL released), or the solve ends: a selection beside
        #: them waits for it before its first Python line, so that its thread does not take the GIL from the solve's
        #: set-up (CPython hands it over after its 5 ms switch interval). On the H200, async solves that held their
        #: configuration spent about 2 ms more outside their iterations than without a selection before this and
        #: the quieter landing (``Policy._returned``), 1.4 and 0.2 ms after (rounds varying by several ms).
        self.iterating = threading.Event()

    @property
    def plan(self) -> Any:
        """The ``_cuda.Plan`` the next iterations run with."""
        return self.current.plan._plan

    @property
    def csr(self) -> gpu.DeviceMatrix:
        """``M`` uploaded once as CSR (by the first :meth:`prepare`, the start's, on the solve's thread): the
        start's plan reads it, and every candidate is converted from it on the GPU."""
        if self._csr is None:
            self._csr = upload_csr(self._M, self._dtype)
        return self._csr

    def prepare(self, cfg: Config) -> DevicePrepared:
        """``A`` converted for ``cfg`` on the GPU, from the CSR copy there."""
        return prepare(self._M, cfg, self._dtype, self.csr)

    def select(self, k: int, current: DevicePrepared | None, cancel: threading.Event, beside: bool,
               gate: Gate | None) -> Selection:
        """:func:`select_device`, before the iterations or beside them alike (beside them, where a probe follows, with
        the value-table variants, which only a probe may choose); ``gate`` is asked with the pick's
        predicted time raised by the model's measured error at this size (:func:`pyspmv.ranking.precision.size_tol`):
        a predicted gain within it is no gain to pay a conversion for; a value-table variant is considered only where
        its base is predicted ahead of what runs by more than that error."""
        if beside:
            self.iterating.wait()
            if cancel.is_set():                  # the solve ended before it iterated
                return Selection([])
        err = size_tol("cuda", self._M.nnz)
        honest = None if gate is None else (lambda pick_ms, now_ms: gate(pick_ms * (1.0 + err), now_ms))
        return select_device(self._M, self._dtype, self._model, k, current, cancel, honest, self.csr,
                             tables=beside and self._probe_iters > 0, tol=err)

    def switch_cost_s(self, pick_ms: float) -> float:
        """Converting on the GPU (:func:`pyspmv.ranking.verify.device_convert_ms`: a fixed part and some products'
        worth of passes over the matrix) and :data:`SWITCH_FIXED_S`."""
        return (device_convert_ms(pick_ms) if pick_ms > 0 else 0.0) / 1e3 + SWITCH_FIXED_S

    def return_cost_s(self) -> float:
        """:data:`RETURN_S`."""
        return RETURN_S

    def trial(self, p: DevicePrepared) -> None:
        """A product of ``p`` on the solve's vectors; it also captures the iteration's graph for ``p``, so
        that a probe's first chunk times iterations only."""
        self.K.prepare(p.plan._plan)

    def use(self, p: DevicePrepared) -> None:
        """The next iterations run ``p`` (tried before)."""
        self.current = p

    def landed(self) -> None:
        """Wake the iterations (their C loop returns before its next iteration)."""
        self.wake[0] = 1

    def selecting(self, on: bool) -> None:
        """The selection runs on the host's cores, the iterations on the GPU; once it is over (``on`` False), a
        selection still waiting for the iterations (:attr:`iterating`) waits no more."""
        if not on:
            self.iterating.set()

    def time_probe(self, on: bool) -> None:
        """Nothing: the driver times whole chunks of iterations."""

    def probe_time(self) -> float | None:
        """None: the driver reports chunks to :meth:`Policy.ran`."""
        return None

    def release(self, ps: list[DevicePrepared], solving: bool) -> None:
        """Free the plans ``ps``: while ``solving``, between chunks (the solve's stream is idle then), its
        graphs first; after the solve's ``Krylov`` is closed, the plans only."""
        if solving and ps:
            self.K.set_graphs(USE_GRAPHS)    # a graph is bound to its plan's address: it goes first
        for p in ps:
            p.plan.close()

    def late(self, future: concurrent.futures.Future[Selection]) -> None:
        """Not waited for (the CPU's solves wait, for their cores): the GPU's answer is ready, and the host's
        cores are the selection's. Its conversions stop at the cancel; the plans it made are freed on its
        thread when it returns."""
        future.add_done_callback(_free_selection)


def chunk(sw: Policy, per_iteration_s: float | None) -> int | None:
    """Iterations to run before the next boundary of ``sw`` (None: as many as the solve needs); a probe's chunk
    lasts at least :data:`PROBE_MIN_S`, after a glance of one iteration and a first look of :data:`FIRST_LOOK_S` at
    the pace before it (:data:`pyspmv.solvers._policy.GLANCE_RETURN_S`)."""
    if sw.probing:
        if sw.glance is not None:
            return 1
        look = sw.first_look
        if look is not None:
            return max(1, sw.probe_iters, min(1 << 20, math.ceil(FIRST_LOOK_S / max(look, 1e-7))))
        least = 1 if per_iteration_s is None else math.ceil(PROBE_MIN_S / max(per_iteration_s, 1e-7))
        return max(1, sw.probe_iters, min(1 << 20, least))
    if not sw.active or sw.awaiting:       # a selection that returns wakes the iterations (Plans.landed)
        return None
    if per_iteration_s is None:
        return 8
    wait = BOUNDARY_S
    at = sw.selection_at
    if at is not None:                     # nothing to look at before the selection's start time
        wait = max(BOUNDARY_S, at - time.perf_counter())
    return max(1, min(1 << 20, int(wait / max(per_iteration_s, 1e-7))))


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
    K.set_l2(USE_L2)
    sw: Policy | None = None
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
        elif not P.x_zero:              # a zero start is set on the device by K.start: nothing to upload or scan
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
        limit = P.maxiter * (restart if gmres else 1)     # inner iterations at most
        plans = Plans(K, P.M, dt, P.policy_args)
        sw = Policy(plans, P.M.nnz, rec.policy, {**P.policy_args, "limit": limit, "tol": P.tol}, rec, P.t0)
        t_iter = time.perf_counter()
        K.start(plans.plan, P.tol, P.x_zero or (not x_dev and not P.x.any()))
        state, residual = K.status()[3], K.status()[4]
        cb_x = callback if callback is not None and (not gmres or callback_type == "x") else None
        cb_pr = callback if callback is not None and gmres and callback_type != "x" else None
        cycles = 0
        per_iter: float | None = None
        while state == RUNNING and it < limit:
            if sw.active:
                sw.boundary(it)
            want = chunk(sw, per_iter)
            if callback is not None:
                want = 1
            want = limit - it if want is None else min(want, limit - it)
            t = time.perf_counter()
            plans.iterating.set()
            iters, products, cyc, state, residual, estimate = K.iterate(plans.plan, want, P.maxiter)
            t_end = time.perf_counter()
            woken, plans.wake[0] = bool(plans.wake[0]), 0
            ran = iters - it
            chunks.append((t, t_end, it, iters))
            if ran > 0:
                per_iter = (t_end - t) / ran
            sw.ran(iters, ran, t_end - t, residual)
            it = iters
            if cb_pr is not None and ran > 0 and state != BROKE:
                cb_pr(estimate / P.bnorm if P.bnorm > 0 else estimate)
            if cb_x is not None and (cyc > cycles if gmres else ran > 0):
                read_x()
                cb_x(out)
            cycles = cyc
            if (ran == 0 and not woken) or (gmres and cycles >= P.maxiter):
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
