"""Argument checks shared by the solvers, and the number of products a solve is expected to take."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import math
import numbers
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import scipy.sparse as sp
from scipy.linalg import blas

from .. import _core
from .._core import DeviceUnavailableError
from .._params import Interval, OneOf, Satisfies, validate
from ..devices import arrays, gpu
from ..devices.machine import warn_other_machine
from ..matrices.configs import Config, config
from ..matrices.matrix import Matrix
from ..matrices.mmio import as_matrix
from ..ranking.rank import model_in_use
from ..ranking.rankmodel import RankModel
from ._policy import Policy
from .record import SolveRecord
from .switching import DEFAULT_CONFIG, POLICIES, SELECT_PATIENCE, Multiplier, can_rank

#: Devices a solve iterates on (``device=``).
DEVICES = ("cpu", "cuda")


def expected_iterations(n: int, rtol: float, dtype: np.dtype) -> int:
    """Iterations a Krylov solve of ``n`` unknowns is guessed to take, for ``rank(n_calls=...)``.

    CG's bound ``sqrt(kappa) / 2 * ln(2 / rtol)`` with the condition number of a 2-D Laplacian of
    ``n`` unknowns, ``kappa ~ 4 n / pi**2``: ``sqrt(n) / pi * ln(2 / rtol)`` (``rtol`` at least the
    dtype's epsilon). The caller caps it with ``maxiter``. A guess: it sets how much a conversion must
    repay, so only its order of magnitude matters.
    """
    r = max(float(rtol), float(np.finfo(dtype).eps))
    return max(1, math.ceil(math.sqrt(n) / math.pi * math.log(2.0 / r)))


@dataclass
class Problem:
    """A checked problem: matrix, right-hand side and start in one dtype, tolerance, BLAS, product."""

    M: Matrix
    b: Any              # ndarray; on the GPU also the caller's device vector (pyspmv.devices.arrays)
    x: Any              # the start (a copy) and the answer; on the GPU also the caller's device x0
    tol: float
    bnorm: float
    maxiter: int
    dtype: np.dtype
    op: Multiplier | None           # the CPU's products (None on the GPU)
    record: SolveRecord
    t0: float
    axpy: Callable[..., Any]
    dot: Callable[..., Any]
    nrm2: Callable[..., Any]
    scal: Callable[..., Any]
    gemv: Callable[..., Any]
    device: str = "cpu"
    precond: Precond | None = None
    #: what the policy needs: config, model, top_k, probe_iters, select_min_nnz, select_patience, n_calls
    #: (and rtol, atol: a GPU b's norm is measured on the device)
    policy_args: dict[str, Any] | None = None
    #: the CPU's policy, started at set-up (the GPU's starts inside the GPU solve)
    policy: Policy | None = None
    #: no x0 was given: the start is zero (``x`` holds zeros; the GPU solve sets its own x to zero, uploading nothing)
    x_zero: bool = False
    #: the working type's normal range (smallest normal, largest finite), for :meth:`sqnorm`
    normal: tuple[float, float] = field(init=False)

    def sqnorm(self, v: np.ndarray) -> float:
        """``v . v`` as a Python float (float64), also where it overflows or underflows the working type.

        BLAS's dot squares in the working type: float32 entries near 1e19 square past its range (inf) and
        near 1e-25 below it (0), which a residual test would read as "converged". The dot stays the fast path;
        outside the type's normal range the norm is taken by BLAS's nrm2, which scales, and squared in float64.
        """
        s = float(self.dot(v, v))
        if self.normal[0] < s < self.normal[1]:    # inf and nan fail the test too
            return s
        n = float(self.nrm2(v))
        return n * n

    def __post_init__(self) -> None:
        fi = np.finfo(self.dtype)
        self.normal = (float(fi.tiny), float(fi.max))

    def finish(self, info: int, iterations: int, residual: float, t_iter: float,
               times: list[float]) -> tuple[np.ndarray, int, SolveRecord]:
        """Close the product (selection thread included) and fill the record."""
        now = time.perf_counter()
        self.close(iterations)
        rec = self.record
        rec.info, rec.iterations, rec.residual = int(info), int(iterations), float(residual)
        rec.iterate_s = now - t_iter
        rec.iteration_times = np.asarray(times) - self.t0
        rec.wall_s = time.perf_counter() - self.t0
        return self.x, rec.info, rec

    def close(self, iterations: int) -> None:
        """Close the CPU's policy (selection thread included) after ``iterations`` iterations."""
        assert self.op is not None and self.policy is not None
        self.policy.close(iterations, self.op.products)


@dataclass
class Precond:
    """A checked preconditioner ``M`` (an approximation of ``A``'s inverse): ``kind`` 'jacobi'
    (``inv_diag``: 1 / diag(A)), 'matrix' (``matrix``, a pyspmv.Matrix: ``z = M @ r``) or 'callable'
    (``apply``: an ndarray of shape (n,) and the solve's dtype in and out, checked)."""

    kind: str
    inv_diag: np.ndarray | None = None
    matrix: Matrix | None = None
    apply: Callable[[np.ndarray], np.ndarray] | None = None

    def host(self) -> Callable[[np.ndarray], np.ndarray]:
        """``z = M r`` on host vectors (the CPU solvers')."""
        if self.kind == "jacobi":
            d = self.inv_diag
            return lambda r: d * r
        if self.kind == "matrix":
            Ms = self.matrix.to_scipy()
            return lambda r: np.asarray(Ms @ r)
        assert self.apply is not None
        return self.apply


def precond(M: Any, A: Matrix, dtype: np.dtype, fn: str) -> Precond | None:
    """Check the ``M`` parameter of solver ``fn``: None, 'jacobi', a square matrix of ``A``'s size
    (pyspmv.Matrix, scipy.sparse, 2-D ndarray), a ``LinearOperator`` (anything with ``matvec``) or a
    callable ``M(r)``."""
    n = A.shape[0]
    what = (f"The 'M' parameter of {fn}() must be None, 'jacobi', a matrix or LinearOperator of shape "
            f"({n}, {n}), or a callable")
    if M is None:
        return None
    if isinstance(M, str):
        if M.lower() != "jacobi":
            raise ValueError(f"{what}. Got {M!r} instead.")
        diag = A.to_scipy().diagonal().astype(np.float64)
        bad = np.flatnonzero(diag == 0)
        if bad.size:
            raise ValueError(f"The 'M' parameter of {fn}(): M='jacobi' needs a nonzero diagonal; A[{bad[0]}, "
                             f"{bad[0]}] is 0.")
        return Precond("jacobi", inv_diag=(1.0 / diag).astype(dtype))
    if isinstance(M, (np.ndarray, Matrix)) or sp.issparse(M):
        if getattr(M, "ndim", 2) != 2 or tuple(M.shape) != (n, n):
            raise ValueError(f"{what}. Got shape {tuple(M.shape)} instead.")
        Mm = as_matrix(M).astype(dtype)
        if not np.isfinite(Mm.data).all():
            raise ValueError(f"The 'M' parameter of {fn}() holds non-finite values.")
        return Precond("matrix", matrix=Mm)
    shape = getattr(M, "shape", None)
    matvec = getattr(M, "matvec", None)
    if callable(matvec):
        if shape is not None and tuple(shape) != (n, n):
            raise ValueError(f"{what}. Got a {type(M).__name__} of shape {tuple(shape)} instead.")
        f = matvec
    elif callable(M):
        f = M
    else:
        raise TypeError(f"{what}. Got {type(M).__name__} instead.")

    def apply(r: np.ndarray) -> np.ndarray:
        z = np.asarray(f(r))
        if z.ndim == 2 and z.shape[1] == 1:
            z = z[:, 0]
        if z.shape != (n,):
            raise ValueError(f"The 'M' parameter of {fn}(): M(r) must return shape ({n},). Got shape {z.shape} "
                             "instead.")
        return np.ascontiguousarray(z, dtype=dtype)
    return Precond("callable", apply=apply)


#: What a tolerance or a patience must be: first a real number (TypeError), then finite and >= 0.
_REAL = Satisfies(lambda v: isinstance(v, numbers.Real) and not isinstance(v, bool | np.bool_), "a real number >= 0",
                  error=TypeError)
_FINITE = Satisfies(lambda v: math.isfinite(v) and v >= 0, "a finite number >= 0")


def _real(value: Any, name: str, fn: str) -> float:
    """``value`` as a finite float >= 0, or an error naming ``name``."""
    validate(f"{fn}()", {name: _REAL}, {name: value})
    validate(f"{fn}()", {name: _FINITE}, {name: value})
    return float(value)


def positive_int(value: Any, name: str, fn: str, *, minimum: int = 1) -> int:
    """``value`` as an int >= ``minimum``, or an error naming ``name``."""
    validate(f"{fn}()", {name: Interval("int", minimum)}, {name: value})
    return int(value)


def _vector(v: Any, n: int, name: str, fn: str, dtype: np.dtype, copy: bool = True) -> np.ndarray:
    """``v`` checked as a vector of ``n`` reals, in ``dtype``: a copy where ``copy`` (the solver writes into ``x``),
    else the caller's array itself where it already is one (``b``, which the solvers only read)."""
    a = np.asarray(v)
    if a.ndim == 2 and a.shape[1] == 1:
        a = a[:, 0]
    if a.ndim != 1 or a.shape[0] != n:
        raise ValueError(f"The '{name}' parameter of {fn}() must have shape ({n},) to match A. Got shape "
                         f"{a.shape} instead.")
    if np.iscomplexobj(a) or not (np.issubdtype(a.dtype, np.number) or a.dtype == bool):
        raise TypeError(f"The '{name}' parameter of {fn}() must hold real numbers. Got dtype {a.dtype} instead.")
    out = np.array(a, dtype=dtype, order="C") if copy else np.ascontiguousarray(a, dtype=dtype)
    bad = _core.finite_check(out)
    if bad is not None:
        raise ValueError(f"The '{name}' parameter of {fn}() holds non-finite values (at index {bad}).")
    return out


def _device_dtype(v: Any, name: str, fn: str) -> np.dtype:
    """The value type of a GPU vector ``v`` (the ``name`` parameter of ``fn``): float32 or float64."""
    cai = getattr(v, "__cuda_array_interface__", None)
    try:
        dt = np.dtype(cai["typestr"]) if isinstance(cai, dict) else np.dtype(str(v.dtype).removeprefix("torch."))
    except (TypeError, AttributeError, KeyError):
        dt = None
    if dt not in (np.float32, np.float64):
        raise TypeError(f"The '{name}' parameter of {fn}() is a GPU vector of {dt}; on the GPU the solvers take "
                        "float32 or float64 vectors and do not cast them.")
    return np.dtype(dt)


#: The solvers' parameters checked first, before A and b are read.
_PARAMS = {"device": OneOf(DEVICES, "or"), "policy": OneOf(POLICIES, "names")}
_CALLBACK = Satisfies(lambda c: c is None or callable(c), "callable or None", error=TypeError)


def setup(fn: str, A: Any, b: Any, x0: Any, rtol: Any, atol: Any, maxiter: Any, callback: Any, policy: Any,
          cfg: Any, device: Any, model: Any, top_k: Any, probe_iters: Any, select_min_nnz: Any, select_patience: Any,
          dtype: Any,
          products_per_iteration: int, max_products: Callable[[int, int], int], precond_arg: Any = None) -> Problem:
    """Check every argument of solver ``fn``, build the record and start the policy.

    ``max_products(n, maxiter)`` is the most products the solve can take; the expected count
    passed to ``rank(n_calls=...)`` is :func:`expected_iterations` times ``products_per_iteration``,
    capped by it.
    """
    t0 = time.perf_counter()
    validate(f"{fn}()", _PARAMS, locals())
    on_gpu = {name: v is not None and arrays.is_device_array(v) for name, v in (("b", b), ("x0", x0))}
    if device == "cpu" and any(on_gpu.values()):
        name = "b" if on_gpu["b"] else "x0"
        raise TypeError(f"The '{name}' parameter of {fn}() is a GPU array; pass device='cuda' to solve on the GPU, "
                        "or a NumPy array.")
    if isinstance(A, (np.ndarray, Matrix)) or sp.issparse(A):
        M = as_matrix(A)
    else:
        raise TypeError(f"The 'A' parameter of {fn}() must be a pyspmv.Matrix, a scipy.sparse matrix or a 2-D "
                        f"array. Got {type(A).__name__} instead.")
    n, ncols = M.shape
    if n != ncols:
        raise ValueError(f"The 'A' parameter of {fn}() must be a square matrix. Got shape {M.shape} instead.")
    if _core.finite_check(M.data) is not None:     # on the core's threads: a solve's set-up is paid by every policy
        raise ValueError(f"The 'A' parameter of {fn}() holds non-finite values.")
    if dtype is None and on_gpu["b"]:
        dt = _device_dtype(b, "b", fn)          # a GPU b sets the type: it is read in place, not cast
    elif dtype is None:
        dt = np.result_type(M.dtype, np.asarray(b).dtype)
        dt = np.dtype(np.float32) if dt == np.float32 else np.dtype(np.float64)
    else:
        dt = np.dtype(dtype) if dtype in ("float32", "float64", np.float32, np.float64) else None
        if dt is None:
            raise TypeError(f"The 'dtype' parameter of {fn}() must be 'float32', 'float64' or None. Got {dtype!r} "
                            "instead.")
    M = M.astype(dt)
    bb = b if on_gpu["b"] else _vector(b, n, "b", fn, dt, copy=False)  # a GPU vector: checked by the GPU solve
    x = np.zeros(n, dt) if x0 is None else x0 if on_gpu["x0"] else _vector(x0, n, "x0", fn, dt)
    rt, at = _real(rtol, "rtol", fn), _real(atol, "atol", fn)
    maxit = 10 * n if maxiter is None else positive_int(maxiter, "maxiter", fn)
    validate(f"{fn}()", {"callback": _CALLBACK}, locals())
    k = positive_int(top_k, "top_k", fn)
    probes = positive_int(probe_iters, "probe_iters", fn, minimum=0)
    min_nnz = positive_int(select_min_nnz, "select_min_nnz", fn, minimum=0)
    patience = (SELECT_PATIENCE if device == "cpu" else 0.0) if select_patience is None else \
        _real(select_patience, "select_patience", fn)
    cid = DEFAULT_CONFIG[device] if cfg is None else cfg
    try:
        c: Config = config(cid)
    except (TypeError, ValueError) as exc:
        raise ValueError(f"The 'config' parameter of {fn}(): {exc}") from None
    if c.device != device:
        raise ValueError(f"The 'config' parameter of {fn}() must be a {device!r} configuration. Got {c.id!r} "
                         f"(device {c.device!r}) instead.")
    pre = precond(precond_arg, M, dt, fn)
    if device == "cuda":
        try:
            gpu.cuda()
        except DeviceUnavailableError as exc:
            raise DeviceUnavailableError(f"{fn}(device='cuda') needs a usable CUDA GPU: {exc}") from None
    axpy, dot, nrm2, scal, gemv = blas.get_blas_funcs(("axpy", "dot", "nrm2", "scal", "gemv"), dtype=dt)
    # nrm2 scales: b's norm is right wherever it fits the type, even where b . b does not (a GPU b: the GPU
    # solve measures it, in double).
    bnorm = math.nan if on_gpu["b"] else float(nrm2(bb))
    if not on_gpu["b"] and not math.isfinite(bnorm):
        raise ValueError(f"The 'b' parameter of {fn}() has a norm past the {dt} range; no residual can be judged "
                         "against it. Scale the problem down" + (" or solve in float64." if dt == np.float32 else "."))
    n_calls = None
    if can_rank(policy, M.nnz, min_nnz):     # a tiny solve under async pays nothing that fixed does not
        n_calls = min(expected_iterations(n, rt, dt) * products_per_iteration, max_products(n, maxit))
    if can_rank(policy, M.nnz, min_nnz) and (model is None or isinstance(model, RankModel)):
        # Said here, on the caller's thread, not by rank() inside the solve: under async and online that runs on
        # the helper thread, where no line of the caller's is on the stack; rank() then finds the model checked.
        warn_other_machine(model_in_use(device, dt.name) if model is None else model)
    record = SolveRecord(fn, policy, device, dt.name, n_calls=n_calls, start_time=t0)
    args = {"config": c, "model": model, "top_k": k, "probe_iters": probes, "select_min_nnz": min_nnz,
            "select_patience": patience, "n_calls": n_calls or 1, "rtol": rt, "atol": at,
            "products_per_iteration": products_per_iteration}
    if device == "cuda":        # the policy runs inside the GPU solve (pyspmv/solvers/device.py)
        return Problem(M, bb, x, max(rt * bnorm, at), bnorm, maxit, dt, None, record, t0, axpy, dot, nrm2, scal,
                       gemv, device, pre, args, x_zero=x0 is None)
    op = Multiplier(M, dt, device, model, n_calls or 1)
    pol = Policy(op, M.nnz, policy, args, record, t0)
    return Problem(M, bb, x, max(rt * bnorm, at), bnorm, maxit, dt, op, record, t0, axpy, dot, nrm2, scal, gemv,
                   device, pre, args, pol)
