"""CG, BiCGSTAB and restarted GMRES whose products run through pyspmv's kernels, chosen as they run."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import functools
import math
import threading
import time
from collections.abc import Callable
from typing import Any

import numpy as np
from scipy.linalg import solve_triangular

from .device import solve as solve_on_gpu
from .record import BREAKDOWN, BREAKDOWN_OMEGA, SolveRecord
from .setup import setup
from .switching import SELECT_MIN_NNZ, threadpools

_COMMON = """
    Parameters
    ----------
    A : pyspmv.Matrix, scipy.sparse matrix or 2-D array
        Square, real, finite.
    b : array_like of shape (n,) or (n, 1)
    x0 : array_like of shape (n,), optional
        Starting guess; default zeros.
    rtol, atol : float
        Stop once ``norm(b - A @ x) <= max(rtol * norm(b), atol)`` (scipy's test).
    maxiter : int, optional
        {maxiter}
    callback : callable, optional
        {callback}
    policy : {{'fixed', 'serial', 'async', 'online'}}, default 'async'
        How the SpMV configuration is chosen:

        - ``fixed``: run ``config`` throughout.
        - ``serial``: rank (:func:`pyspmv.rank`), convert to the first pick, then iterate.
        - ``async``: iterate with ``config`` while a helper thread ranks and converts; once the pick
          is ready (Gao et al.), time ``config`` and then the pick over ``probe_iters`` iterations each
          and keep the faster, so that a pick the model got wrong on this machine costs a few
          iterations, not the solve. On the GPU the ranking also offers the value-table variants
          (``vals``) the model does not rank, where the matrix's values fit a table
          (:mod:`pyspmv.ranking.tables`), and a probe drops a candidate clearly slower than
          ``config`` after a short first look.
        - ``online``: as ``async``, with the first ``top_k`` picks converted; once they are ready
          ``config`` and each of them runs ``probe_iters`` iterations with its products timed, and the
          fastest product (minimum over its iterations) is kept (Li & Suda's third step).

        ``n_calls`` of the ranking is :func:`pyspmv.solvers.expected_iterations` times the products
        per iteration, capped by ``maxiter`` (on the CPU; the GPU's ranks by the time a product and converts on
        the device, a cost its gate weighs over the iterations left). A ranking or conversion that fails (including
        ``MemoryError``) leaves the solve on its configuration and is recorded in ``record.events``.
    config : str or pyspmv.Config, optional
        Configuration run by ``fixed``, started with by ``async`` and ``online``, fallen back on by
        ``serial``; default ``'cpu/csr/rows'`` on the CPU, ``'cusparse/csr/default'`` on the GPU.
    device : {{'cpu', 'cuda'}}
        Where the solve iterates. ``'cuda'``: the iterations run on the GPU in pyspmv's CUDA code
        (kernels/krylov.cu), not from Python: ``A`` is converted and uploaded once per configuration,
        ``b`` and ``x0`` once; products (a plan of the configuration), dot products, norms and vector
        updates run on the device, in fused kernels, with the recurrence's scalars kept there, and CG
        and BiCGSTAB queue a few iterations ahead of the convergence test (one small read-back per
        iteration, waited for a few iterations later; the work queued past convergence does nothing
        that shows). Python acts only between chunks of iterations: to take a landed selection, to
        probe, to call ``callback`` (which makes chunks of one iteration and copies ``x`` to the host
        for each call). The policies are the CPU's: ``async`` and ``online`` rank on a helper thread
        while the GPU iterates (from sampled features at 1e6 stored entries and more,
        :data:`pyspmv.solvers.device.ESTIMATE_MIN_NNZ`), and convert on the GPU from the CSR copy of
        ``A`` uploaded once (no second upload); where the kernel offers it, CG's product makes the
        iteration's ``p . q`` in its own pass (kernels/dot.cuh). A pick is converted only where its predicted
        saving over the iterations the solve is expected to run still (projected from its residuals)
        exceeds twice the switch's estimated cost; else the solve stays, and ``record.events`` says
        why (Gao et al.'s switch, made one that pays). A configuration is switched to only after a
        trial product of it succeeded, else the solve stays on its current one (``record.events`` says
        why), and probes time whole iterations (``record.probes``: seconds per iteration); a probed
        pick replaces the start only where it measured more than 2 % faster. ``b`` and
        ``x0`` may be NumPy arrays (copied up once) or GPU vectors (CuPy, PyTorch, anything with
        ``__cuda_array_interface__`` or DLPack: read in place on their library's current stream,
        float32 or float64, not cast; a GPU ``b`` sets the default ``dtype`` and is not checked for
        non-finite values, which end the solve as a breakdown); ``x`` comes back of ``b``'s kind (a
        new GPU vector for a GPU ``b``; ``x0`` is left as it was), as does ``callback``'s ``xk``.
        ``A`` is a host matrix (converted and uploaded by the policy). Raises
        :class:`pyspmv.DeviceUnavailableError`, saying why, where no usable GPU is.
    model : optional
        Ranking model, as :func:`pyspmv.rank` takes it; default the device's embedded model.
    top_k, probe_iters : int
        ``online``: candidates probed; ``async`` and ``online``: iterations each candidate is timed
        over (``probe_iters=0``: take the ranking's first pick unmeasured).
    select_min_nnz : int, default 50,000
        ``async`` and ``online`` rank only matrices with more stored entries than this; smaller ones
        run ``config`` throughout (recorded in ``record.events``). Below 50,000 the core keeps the GIL
        in its calls, so a helper thread would take turns with the iterations instead of running
        beside them, and a short solve would pay for it. ``serial`` ranks at any size.
    select_patience : float, optional
        ``async`` and ``online`` start the selection only once the solve has iterated for this many
        times its estimated cost (:func:`pyspmv.solvers.switching.selection_estimate_s`: 50 us plus
        20 ns per stored entry); a solve that ends sooner runs ``config`` throughout (recorded in
        ``record.events``). Rent or buy: a short solve pays nothing for a choice it could not use,
        and a long one at most about 1/patience (5 %) of its time. 0 starts the selection at once.
        Default 20 on the CPU; 0 on the GPU, where the selection runs on the host's cores while the
        GPU iterates, costing the iterations next to nothing, so that waiting would buy nothing and
        a GPU solve, some hundred times shorter than the CPU's, would mostly end before it.
    dtype : {{'float32', 'float64'}}, optional
        Arithmetic type; default float32 when ``A`` and ``b`` are both float32, else float64.
    M : None, 'jacobi', matrix, LinearOperator or callable, optional
        Preconditioner, an approximation of ``A``'s inverse (scipy's meaning): ``'jacobi'`` (``1 /
        diag(A)``; a zero on the diagonal is an error), a matrix of ``A``'s shape (pyspmv.Matrix,
        scipy.sparse, 2-D array: ``M @ r``), or anything with ``matvec`` or callable as ``M(r)`` on a
        NumPy vector, returning shape ``(n,)``. On the GPU, Jacobi is fused into the vector kernels and
        a matrix runs as a ``cusparse/csr/default`` product on the device; a callable is called on a
        NumPy copy of the vector, whatever ``b``'s kind (a copy each way per application, the
        iterations waiting for it).

    Returns
    -------
    x : ndarray of shape (n,), or a GPU vector of ``b``'s kind
    info : int
        0 converged; > 0 {info}; < 0 breakdown (-10: a divisor of the recurrence vanished{omega}).
    record : SolveRecord
        Which configuration ran from which iteration, and where the time went.

    Raises
    ------
    ValueError, TypeError
        Bad arguments (shapes, a non-square ``A``, an unknown policy or configuration, a negative or
        non-finite tolerance, ...); the message names the argument.
    pyspmv.DeviceUnavailableError
        ``device='cuda'`` where no usable GPU is (the message says why).
    pyspmv.NotApplicableError
        ``config`` cannot serve ``A``.
"""


def _doc(maxiter: str, callback: str, info: str, omega: str = "") -> Callable[[Any], Any]:
    """A solver's shared docstring, and its run on one BLAS thread.

    The vector operations go through BLAS; OpenBLAS's threads spin after each call and take the cores
    the core's OpenMP products need: measured on the 2-core dev VM, 200 CG iterations on a 226k-entry
    matrix took 1.74 s with OpenBLAS's 2 threads and 0.039 s with one. Vectors gain nothing from BLAS
    threads, so each solve limits them to one and restores them after."""
    def deco(f: Any) -> Any:
        f.__doc__ += _COMMON.format(maxiter=maxiter, callback=callback, info=info, omega=omega)

        @functools.wraps(f)
        def solve(*args: Any, **kw: Any) -> Any:
            with _ONE_BLAS_THREAD:
                return f(*args, **kw)
        return solve
    return deco


class _OneBlasThread:
    """BLAS on one thread while any solve runs; its thread counts restored when the last one ends.

    OpenBLAS's thread count is one setting for the whole process, while a limiter of threadpoolctl
    restores what it saw on entry: a solve starting while another runs sees 1 and restored it after
    the other had restored the count, leaving OpenBLAS on one thread for the rest of the process. So
    the solves running are counted under a lock: the first to start sets the count, the last to end
    restores it. threadpoolctl 3.6 on lets only the thread that last changed OpenBLAS's count change
    it again while that thread lives (others do nothing, silently); each change here hands that
    control back, so that the last solve to end, in whatever thread, can restore the count."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running = 0
        self._saved: list[tuple[Any, int]] = []

    def __enter__(self) -> None:
        with self._lock:
            if self._running == 0:
                libs = threadpools().select(user_api="blas").lib_controllers
                self._saved = [(lib, lib.get_num_threads()) for lib in libs]
                _set_threads([(lib, 1) for lib, _ in self._saved])
            self._running += 1

    def __exit__(self, *exc: object) -> None:
        with self._lock:
            self._running -= 1
            if self._running == 0:
                _set_threads(self._saved)
                self._saved = []


def _set_threads(counts: list[tuple[Any, int]]) -> None:
    """Set each threadpoolctl library controller's thread count, then release the control a
    threadpoolctl of 3.6 on gives this thread over OpenBLAS by doing so (see :class:`_OneBlasThread`)."""
    for lib, n in counts:
        if n is not None:
            lib.set_num_threads(n)
        release = getattr(type(lib), "clear_controlling_thread", None)
        if release is not None:
            release()


_ONE_BLAS_THREAD = _OneBlasThread()


@_doc("Iterations; default ``10 * n``.", "Called as ``callback(xk)`` after each iteration.",
      "iterations run without convergence")
def cg(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0, maxiter: int | None = None,
       callback: Callable[[np.ndarray], Any] | None = None, policy: str = "async", config: Any = None,
       device: str = "cpu", model: Any = None, top_k: int = 3, probe_iters: int = 3,
       select_min_nnz: int = SELECT_MIN_NNZ, select_patience: float | None = None,
       dtype: Any = None, M: Any = None) -> tuple[np.ndarray, int, SolveRecord]:
    """Solve ``A x = b`` for symmetric positive definite ``A`` by conjugate gradients (preconditioned
    with ``z = M r`` where ``M`` is given, which must then be symmetric positive definite too).
    """
    P = setup("cg", A, b, x0, rtol, atol, maxiter, callback, policy, config, device, model, top_k, probe_iters,
              select_min_nnz, select_patience, dtype, 1, lambda n, it: it + 1, M)
    if P.device == "cuda":
        return solve_on_gpu("cg", P, callback)
    x, op, pol, dot, axpy, scal = P.x, P.op, P.policy, P.dot, P.axpy, P.scal
    pre = P.precond.host() if P.precond is not None else None
    times: list[float] = []
    t_iter = time.perf_counter()
    try:
        r = P.b.copy()
        if x.any():
            q = np.empty_like(x)
            op.mv(x, q)
            axpy(q, r, a=-1.0)
        p, q = np.empty_like(x), np.empty_like(x)
        rho_prev, info, it = 1.0, P.maxiter, 0
        for it in range(P.maxiter):
            rho = rr = P.sqnorm(r)
            if math.sqrt(rr) <= P.tol:
                info = 0
                break
            times.append(time.perf_counter())
            if pol.active:
                pol.boundary(it)
            z = r
            if pre is not None:
                z = pre(r)
                rho = float(dot(r, z))
            if it == 0:
                p[:] = z
            else:
                scal(rho / rho_prev, p)
                axpy(z, p, a=1.0)
            op.mv(p, q)
            pq = float(dot(p, q))
            if pq == 0.0 or not math.isfinite(pq):
                info = BREAKDOWN
                break
            alpha = rho / pq
            axpy(p, x, a=alpha)
            axpy(q, r, a=-alpha)
            rho_prev = rho
            if callback is not None:
                callback(x)
        else:
            it = P.maxiter
            rr = P.sqnorm(r)
            info = 0 if math.sqrt(rr) <= P.tol else P.maxiter
    except BaseException:
        P.close(it)
        raise
    return P.finish(info, it, math.sqrt(rr), t_iter, times)


@_doc("Iterations; default ``10 * n``.", "Called as ``callback(xk)`` after each iteration.",
      "iterations run without convergence", ", -11: BiCGSTAB's omega vanished")
def bicgstab(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0, maxiter: int | None = None,
             callback: Callable[[np.ndarray], Any] | None = None, policy: str = "async", config: Any = None,
             device: str = "cpu", model: Any = None, top_k: int = 3, probe_iters: int = 3,
             select_min_nnz: int = SELECT_MIN_NNZ, select_patience: float | None = None,
             dtype: Any = None, M: Any = None) -> tuple[np.ndarray, int, SolveRecord]:
    """Solve ``A x = b`` for general square ``A`` by BiCGSTAB (two products per iteration; right
    preconditioned, as scipy's, where ``M`` is given).
    """
    P = setup("bicgstab", A, b, x0, rtol, atol, maxiter, callback, policy, config, device, model, top_k,
              probe_iters, select_min_nnz, select_patience, dtype, 2, lambda n, it: 2 * it + 1, M)
    if P.device == "cuda":
        return solve_on_gpu("bicgstab", P, callback)
    x, op, pol, dot, axpy, scal, nrm2 = P.x, P.op, P.policy, P.dot, P.axpy, P.scal, P.nrm2
    pre = P.precond.host() if P.precond is not None else None
    tiny = float(np.finfo(P.dtype).eps) ** 2   # scipy's breakdown thresholds
    times: list[float] = []
    t_iter = time.perf_counter()
    it = 0
    try:
        r = P.b.copy()
        v, t = np.empty_like(x), np.empty_like(x)
        if x.any():
            op.mv(x, v)
            axpy(v, r, a=-1.0)
        rhat, p = r.copy(), np.empty_like(x)
        rho_prev = alpha = omega = 1.0
        info = P.maxiter
        rnorm = float(nrm2(r))
        for it in range(P.maxiter):
            if rnorm <= P.tol:
                info = 0
                break
            times.append(time.perf_counter())
            if pol.active:
                pol.boundary(it)
            rho = float(dot(rhat, r))
            if abs(rho) < tiny or not math.isfinite(rho):
                info = BREAKDOWN
                break
            if it == 0:
                p[:] = r
            else:
                axpy(v, p, a=-omega)
                scal(rho / rho_prev * (alpha / omega), p)
                axpy(r, p, a=1.0)
            phat = p if pre is None else pre(p)
            op.mv(phat, v)
            rv = float(dot(rhat, v))
            if rv == 0.0 or not math.isfinite(rv):
                info = BREAKDOWN
                break
            alpha = rho / rv
            axpy(v, r, a=-alpha)                  # r holds s = r - alpha v from here
            rnorm = float(nrm2(r))
            if rnorm <= P.tol:
                axpy(phat, x, a=alpha)
                if callback is not None:
                    callback(x)
                info, it = 0, it + 1
                break
            shat = r if pre is None else pre(r)
            op.mv(shat, t)
            tt = float(dot(t, t))
            omega = float(dot(t, r)) / tt if tt > 0 else 0.0
            axpy(phat, x, a=alpha)
            axpy(shat, x, a=omega)
            axpy(t, r, a=-omega)
            rnorm = float(nrm2(r))
            rho_prev = rho
            if callback is not None:
                callback(x)
            if abs(omega) < tiny or not math.isfinite(omega):
                info, it = (0 if rnorm <= P.tol else BREAKDOWN_OMEGA), it + 1
                break
        else:
            it = P.maxiter
            info = 0 if rnorm <= P.tol else P.maxiter
    except BaseException:
        P.close(it)
        raise
    return P.finish(info, it, rnorm, t_iter, times)


@_doc("Restart cycles; default ``10 * n``.",
      "Called after each inner iteration with the relative residual estimate (``callback_type='pr_norm'``, "
      "the default) or after each restart with ``xk`` (``'x'``).",
      "restart cycles run without convergence")
def gmres(A: Any, b: Any, x0: Any = None, *, rtol: float = 1e-5, atol: float = 0.0, restart: int | None = None,
          maxiter: int | None = None, callback: Callable[[Any], Any] | None = None, callback_type: str | None = None,
          policy: str = "async", config: Any = None, device: str = "cpu", model: Any = None, top_k: int = 3,
          probe_iters: int = 3, select_min_nnz: int = SELECT_MIN_NNZ, select_patience: float | None = None,
          dtype: Any = None, M: Any = None) -> tuple[np.ndarray, int, SolveRecord]:
    """Solve ``A x = b`` for general square ``A`` by GMRES restarted every ``restart`` (default 20) inner
    iterations: classical Gram-Schmidt applied twice, Givens rotations, the true residual at each restart
    (right preconditioned where ``M`` is given: the residual tested is the true one).
    """
    if callback_type not in (None, "x", "pr_norm"):
        raise ValueError(f"The 'callback_type' parameter of gmres() must be 'x', 'pr_norm' or None. Got "
                         f"{callback_type!r} instead.")
    if restart is not None and (isinstance(restart, bool) or not isinstance(restart, int | np.integer)
                                or restart < 1):
        raise ValueError(f"The 'restart' parameter of gmres() must be an int >= 1 or None. Got {restart!r} instead.")
    m_req = 20 if restart is None else int(restart)
    P = setup("gmres", A, b, x0, rtol, atol, maxiter, callback, policy, config, device, model, top_k, probe_iters,
              select_min_nnz, select_patience, dtype, 1, lambda n, it: it * (min(m_req, n) + 1) + 1, M)
    if P.device == "cuda":
        return solve_on_gpu("gmres", P, callback, restart=min(m_req, P.x.shape[0]), callback_type=callback_type)
    x, op, pol, nrm2, scal, gemv = P.x, P.op, P.policy, P.nrm2, P.scal, P.gemv
    pre = P.precond.host() if P.precond is not None else None
    n = x.shape[0]
    m = min(m_req, n)
    cb_x = callback if callback_type == "x" else None
    cb_pr = callback if callback is not None and callback_type != "x" else None
    times: list[float] = []
    t_iter = time.perf_counter()
    inner = cycle = 0
    try:
        V = np.empty((n, m + 1), dtype=P.dtype, order="F")    # columns contiguous: products write into them
        R = np.zeros((m, m))
        r = np.empty_like(x)
        op.mv(x, r)
        np.subtract(P.b, r, out=r)
        beta = float(nrm2(r))
        info = P.maxiter
        for cycle in range(P.maxiter):
            if beta <= P.tol:
                info = 0
                break
            np.multiply(r, 1.0 / beta, out=V[:, 0])
            g = [beta] + [0.0] * m
            cs: list[float] = []
            sn: list[float] = []
            k, stop = m, False
            for j in range(m):
                times.append(time.perf_counter())
                if pol.active:
                    pol.boundary(inner)
                w = V[:, j + 1]
                op.mv(V[:, j] if pre is None else pre(V[:, j]), w)
                Vj = V[:, :j + 1]
                h = gemv(1.0, Vj, w, trans=1)
                gemv(-1.0, Vj, h, beta=1.0, y=w, overwrite_y=1)
                h2 = gemv(1.0, Vj, w, trans=1)               # second pass: orthogonal to rounding
                gemv(-1.0, Vj, h2, beta=1.0, y=w, overwrite_y=1)
                col = (h.astype(np.float64) + h2).tolist()
                hn = float(nrm2(w))
                if hn > 0:
                    scal(1.0 / hn, w)
                for i in range(j):
                    a, c = col[i], col[i + 1]
                    col[i], col[i + 1] = cs[i] * a + sn[i] * c, -sn[i] * a + cs[i] * c
                d = math.hypot(col[j], hn)
                inner += 1
                if d == 0.0 or not math.isfinite(d):
                    k, stop, info = j, True, BREAKDOWN
                    break
                cs.append(col[j] / d)
                sn.append(hn / d)
                col[j] = d
                R[:j + 1, j] = col[:j + 1]
                g[j + 1] = -sn[j] * g[j]
                g[j] = cs[j] * g[j]
                resid = abs(g[j + 1])
                if cb_pr is not None:
                    cb_pr(resid / P.bnorm if P.bnorm > 0 else resid)
                if resid <= P.tol or hn == 0.0:
                    k = j + 1
                    break
            if k > 0:
                y = solve_triangular(R[:k, :k], np.asarray(g[:k])).astype(P.dtype)
                if pre is None:
                    gemv(1.0, V[:, :k], y, beta=1.0, y=x, overwrite_y=1)
                else:
                    x += pre(gemv(1.0, V[:, :k], y))
            op.mv(x, r)
            np.subtract(P.b, r, out=r)
            beta = float(nrm2(r))
            if cb_x is not None:
                cb_x(x)
            if stop:
                cycle += 1
                info = 0 if beta <= P.tol else info
                break
        else:
            cycle = P.maxiter
            info = 0 if beta <= P.tol else P.maxiter
    except BaseException:
        P.close(inner)
        raise
    return P.finish(info, inner, beta, t_iter, times)
