"""A reusable product: :class:`Operator` chooses a configuration once, converts once, multiplies many times."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import math
import os
import threading
from typing import TYPE_CHECKING, Any, Literal, TypeVar, overload

import numpy as np

from . import _core
from ._core import NotApplicableError
from ._operator_checks import diagnose, needs_out, scalars
from ._params import InstanceOf, OneOf, validate
from .devices import arrays, gpu
from .devices.arrays import DeviceArrayT, SparseOnDevice, Stream
from .devices.run import PADDING_TIMES_X, prepare, prepare_on_device
from .matrices.configs import Config, config
from .matrices.formats import FormatMatrix
from .matrices.matrix import Matrix
from .matrices.mmio import as_matrix
from .ranking.portable import ModelLike
from .ranking.rank import Ranking, rank, rank_uploaded
from .ranking.verify import upload_csr

if TYPE_CHECKING:                  # scipy and CuPy are imported where a LinearOperator is made
    from collections.abc import Iterable

    import cupyx.scipy.sparse.linalg
    import numpy.typing as npt
    import scipy.sparse.linalg

    from .matrices.mmio import MatrixLike

#: A NumPy vector of a value type in, one of the same type out (:meth:`Operator.matvec`).
_F = TypeVar("_F", np.float32, np.float64)

#: What _Side.seen holds before a CuPy vector was seen: (x, its address, out, its address, current stream, the
#: maker of a new result of x's kind (:func:`arrays.result_maker`)).
_NOT_SEEN: tuple[Any, ...] = (None, 0, None, 0, None, None)


class _Side:
    """One converted matrix (A, or its transpose) and what multiplies by it: the core's State and
    kernel variant on the CPU, a :class:`gpu.Plan` and the lock that serialises its products on the GPU
    (a plan's x and y buffers are its own: one product at a time)."""

    __slots__ = ("F", "dtype", "finite_x", "format", "live", "local", "lock", "nrows", "plan", "seen", "state",
                 "variant", "xshape")

    def __init__(self, F: FormatMatrix | gpu.DeviceMatrix, c: Config, plan: gpu.Plan | None = None):
        self.F: FormatMatrix | gpu.DeviceMatrix | None = F
        self.dtype, self.format = F.dtype, F.format
        # a matrix that lives on the GPU (a DeviceMatrix) has no host copy, no State
        self.state = F.state if isinstance(F, FormatMatrix) else None
        self.variant = c.variant
        self.xshape = (F.shape[1],)
        self.nrows = F.shape[0]
        self.finite_x = F.format in PADDING_TIMES_X
        self.plan = plan if plan is not None else gpu.Plan(F, c) if c.device == "cuda" else None
        self.live = True
        self.seen: tuple[Any, ...] = _NOT_SEEN   # the last CuPy x and out, their addresses, CuPy's stream query,
        # a new result's maker
        self.lock = threading.Lock()
        self.local = threading.local()        # each thread's work vector for beta != 0

    def close(self) -> None:
        with self.lock:                       # waits for a GPU product in flight
            if self.plan is not None:
                self.plan.close()
            self.plan = self.state = self.F = None
            self.seen = _NOT_SEEN
            self.live = False


#: Operator()'s parameters checked at its door (config: :func:`_config_arg`).
_PARAMS = {"device": OneOf(("cpu", "cuda", None), "or"), "rmatvec": InstanceOf((bool, np.bool_), "True or False")}
_CONFIG = InstanceOf((Config, str), "a Config or a configuration id", by_type=True)


class Operator:
    """``A`` converted once for one configuration, for many products: ``op @ x``, ``op.matvec(x, out=...,
    alpha=..., beta=...)``.

    The configuration is ``config`` when given, else the first of :func:`pyspmv.rank`'s ranking (with
    ``model``, ``n_calls``, ``deterministic`` and ``verify``) that can serve ``A``: with ``verify=k`` the
    fastest of the model's first k as measured on the device. The operator keeps its own
    conversion: later changes to the matrix it was made from do not reach it.

    Parameters
    ----------
    A : Matrix, scipy.sparse matrix, path of a Matrix Market file, or FormatMatrix
        A FormatMatrix needs ``config`` of its format and parameters.
    device : {'cpu', 'cuda'}, optional
        Default: ``config``'s device, else ``'cpu'``.
    config : Config or str, optional
        The configuration (:func:`pyspmv.configs`); default: the ranked pick.
    dtype : {'float32', 'float64'}, optional
        Arithmetic type; default ``A``'s value type.
    n_calls, deterministic, model, verify
        :func:`pyspmv.rank`'s, for the ranked pick (not with ``config``). ``verify=k`` times the model's
        first k configurations on the device (on the GPU converted there) and runs the fastest measured;
        with ``n_calls`` only where the expected gain pays for the measuring (:attr:`ranking` says what was
        done: :attr:`pyspmv.Ranking.verified`, its notes). On the GPU ``verify`` defaults to ``'auto'``:
        with ``n_calls``, as many of the first ten as pay for their measuring over ``n_calls`` products
        (none without ``n_calls``); ``verify=0`` keeps the model's pick unmeasured.
    rmatvec : bool, default False
        Also convert ``A.T`` with the same configuration, so that :meth:`rmatvec` is offered (twice the
        memory; a transposed product without it would convert per call, which this class exists to avoid).

    Attributes
    ----------
    config : Config
    device : str
    dtype : numpy.dtype
    shape : tuple of int
    nbytes : int
        Bytes of the converted matrix (and of its transpose with ``rmatvec=True``) on the CPU; on the
        GPU, the device bytes the plans hold (matrix arrays, x, y, workspace).
    ranking : Ranking or None
        The ranking the configuration was picked from; None when ``config`` was given.

    Notes
    -----
    Vectors are 1-D; a 2-D ``x`` of shape (ncols, k) is a block of k vectors (one product per column; on the
    GPU a CuPy array or PyTorch tensor). A contiguous ``x`` of the operator's dtype is used as it is. Casting
    rule: an ``x`` of another float type is cast (copied) only where no precision is lost (float16 and float32
    to a float64 operator, float16 to float32; NumPy's "safe" casting, which also swaps a byte order), and so is
    a strided one; float64 to a float32 operator, integers, booleans and complex numbers are refused, with the
    ``astype`` that works. ``out`` is never cast: it is written in place, so it must be of the operator's dtype
    (and, for a vector, contiguous). :meth:`aslinearoperator` casts for the solvers. On the GPU (``device='cuda'``) vectors that live there
    (CuPy, PyTorch, JAX, Numba: ``__cuda_array_interface__`` or ``__dlpack__``) are used in place, on the
    caller's stream, and the result is a vector of the same kind; NumPy vectors are uploaded and the result
    downloaded on every product. A host matrix for the GPU is uploaded once as CSR and converted there (CSR in a
    locality order is made on the host and uploaded). A matrix that lives on the GPU (a ``cupyx.scipy.sparse`` matrix, a PyTorch
    sparse tensor) is read in place as CSR and converted on the GPU for the configuration's format, never
    through the host; its ranked pick is computed from its structure read to the host once, or, from
    :data:`pyspmv.ranking.rank.DEVICE_ESTIMATE_MIN_NNZ` entries, from a sample of its rows alone (as
    ``rank(estimate=True)`` ranks; :mod:`pyspmv.ranking.sampled`), and so is a host matrix's for the GPU. Products on one
    operator may run from several threads at once (the CPU product releases the GIL from 50,000 entries up;
    GPU products take turns); after :meth:`close` a product is an error.

    Raises
    ------
    pyspmv.NotApplicableError
        ``config`` cannot serve ``A`` (or ``A.T``, with ``rmatvec=True``), or no ranked configuration can.
    pyspmv.DeviceUnavailableError
        ``device='cuda'`` where no GPU is usable.
    ValueError, TypeError
        A bad argument; the message names it.
    """

    def __init__(self, A: MatrixLike | FormatMatrix | SparseOnDevice, device: str | None = None, *,
                 config: Config | str | None = None, dtype: npt.DTypeLike | None = None, n_calls: int | None = None,
                 deterministic: bool = False, model: ModelLike | str | os.PathLike[str] | None = None,
                 rmatvec: bool = False, verify: int | Literal["auto"] | None = None) -> None:
        self._fwd = self._adj = None
        validate("Operator()", _PARAMS, locals())
        self.ranking: Ranking | None = None
        F: FormatMatrix | gpu.DeviceMatrix
        if arrays.is_device_matrix(A):
            if rmatvec:
                raise ValueError("'rmatvec': the transpose of a matrix that lives on the GPU is not converted "
                                 "yet; build a second Operator from A.T (CuPy: A.T.tocsr()).")
            c, F, plan = self._on_device(A, device, config, dtype, n_calls, deterministic, model, verify)
        else:
            plan = None
        self._host: Matrix | None = None     # the host matrix of a GPU operator converted on the GPU
        if plan is None and config is not None:
            _config_or_rank(n_calls, deterministic, model, verify)
            c = _config_arg(config)
            if device is not None and c.device != device:
                raise ValueError(f"The 'config' parameter of Operator() names {c.id!r}, which runs on {c.device}, "
                                 f"not on device {device!r}.")
            if c.device == "cuda" and not isinstance(A, FormatMatrix):
                self._host = as_matrix(A)
                c, F, plan = _first_on_device(upload_csr(self._host, dtype), [c], self._host, True)
            else:
                c, F = prepare(A, c, dtype)
        elif plan is None:
            if isinstance(A, FormatMatrix):
                raise ValueError("Operator() of a FormatMatrix needs 'config' (its format's configuration); "
                                 "pass the Matrix to have one picked.")
            if device == "cuda":
                c, F, plan = self._pick_on_device(A, dtype, n_calls, deterministic, model, verify)
            else:
                c, F = self._pick(A, device or "cpu", dtype, n_calls, deterministic, model, verify)
        self.config: Config = c
        self.device: str = c.device
        self.dtype: np.dtype = F.dtype
        self.shape: tuple[int, int] = F.shape
        self._fwd = _Side(F, c, plan)
        if rmatvec:
            T = (F.to_csr() if isinstance(F, FormatMatrix) else self._host).to_scipy().T
            try:
                _, FT = prepare(T, c, F.dtype)
            except NotApplicableError as exc:
                raise NotApplicableError(f"'rmatvec': configuration {c.id!r} cannot serve A.T: {exc}") from None
            self._adj = _Side(FT, c)

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled as the matrix (CSR, exactly as converted) and the configuration: unpickling converts again
        (and uploads, for a ``cuda`` operator, which then needs a usable GPU there); the ranking comes along.
        A closed operator, and one of a matrix that lives on the GPU (no host copy to pickle), refuse."""
        side = self._fwd
        if side is None or not side.live:
            raise TypeError("This Operator has been closed; a closed operator cannot be pickled.")
        if self._host is not None:
            return (_unpickle, (self._host, self.config.id, self.dtype.name, self._adj is not None, self.ranking))
        if not isinstance(side.F, FormatMatrix):
            raise TypeError("An Operator of a matrix that lives on the GPU cannot be pickled: pyspmv holds no host "
                            "copy of it. Pickle the matrix (CuPy: A.get()) and the configuration (op.config.id), "
                            "and build the Operator again from them.")
        return (_unpickle, (side.F.to_csr(), self.config.id, self.dtype.name, self._adj is not None, self.ranking))

    def _pick(self, A: Any, device: str, dtype: Any, n_calls: Any, deterministic: Any, model: Any,
              verify: Any) -> tuple[Config, FormatMatrix]:
        """The first configuration of the ranking that converts, and its conversion."""
        M = as_matrix(A)
        r = rank(M, model=model, device=device, dtype=dtype, n_calls=n_calls, deterministic=deterministic,
                 verify=verify)
        self.ranking = r
        why = []
        for cid, ms in r:
            if not np.isfinite(ms):      # the ranking puts those that cannot serve A last, at inf
                break
            try:
                return prepare(M, cid, r.dtype)
            except NotApplicableError as exc:       # the size query said yes, the conversion no
                why.append(f"{cid}: {exc}")
        raise NotApplicableError(f"no ranked {device} configuration can serve this matrix"
                                 + (f" ({'; '.join(why[:3])})" if why else ""))

    def _on_device(self, A: Any, device: str | None, cfg: Any, dtype: Any, n_calls: Any, deterministic: Any,
                   model: Any, verify: Any) -> tuple[Config, gpu.DeviceMatrix, gpu.Plan]:
        """A matrix that lives on the GPU (CuPy, PyTorch), read in place as CSR and converted on the device for
        the configuration given, or for the first of the ranking that can serve it (made from the structure read
        to the host once, or from its sampled rows alone at scale: :func:`pyspmv.rank`'s ``estimate``; with
        ``verify``, timed converted on the device)."""
        if device == "cpu":
            raise ValueError("The 'A' parameter lives on the GPU; Operator(device='cpu') needs it on the host "
                             "(CuPy: A.get()), or use device='cuda'.")
        D = arrays.device_csr(A, dtype)
        if cfg is not None:
            _config_or_rank(n_calls, deterministic, model, verify)
            candidates = [_config_arg(cfg)]
            if candidates[0].device != "cuda":
                raise ValueError(f"The 'config' parameter of Operator() names {candidates[0].id!r}, which runs on "
                                 f"{candidates[0].device}; 'A' lives on the GPU.")
        else:
            r = rank(D, model=model, device="cuda", dtype=D.dtype, n_calls=n_calls, deterministic=deterministic,
                     verify=_gpu_verify(verify))
            self.ranking = r
            candidates = (config(cid) for cid, ms in r if math.isfinite(ms))    # parsed as they are tried
        return _first_on_device(gpu.DeviceMatrix.wrap_csr(D), candidates, None, cfg is not None)

    def _pick_on_device(self, A: Any, dtype: Any, n_calls: Any, deterministic: Any, model: Any,
                        verify: Any) -> tuple[Config, gpu.DeviceMatrix | FormatMatrix, gpu.Plan]:
        """A host matrix on the GPU: uploaded once as CSR, ranked (``verify``, default ``'auto'``, timing its
        candidates converted from that CSR on the GPU), the first ranked configuration that can serve it
        converted there."""
        M = self._host = as_matrix(A)
        DM = upload_csr(M, dtype)
        r = rank_uploaded(M, DM, model=model, device="cuda", dtype=DM.dtype, n_calls=n_calls,
                          deterministic=deterministic, verify=_gpu_verify(verify))
        self.ranking = r
        return _first_on_device(DM, (config(cid) for cid, ms in r if math.isfinite(ms)), M, False)

    # ---- products ----

    @overload
    def matvec(self, x: npt.NDArray[_F], out: npt.NDArray[_F] | None = None, alpha: float = 1.0,
               beta: float = 0.0, stream: None = None) -> npt.NDArray[_F]: ...

    @overload
    def matvec(self, x: DeviceArrayT, out: DeviceArrayT | None = None, alpha: float = 1.0, beta: float = 0.0,
               stream: Stream | None = None) -> DeviceArrayT: ...

    def matvec(self, x: Any, out: Any = None, alpha: float = 1.0, beta: float = 0.0,
               stream: Stream | None = None) -> Any:
        """``y = alpha * A @ x + beta * y``, in ``out`` when given (and returned), else in a new array.

        Parameters
        ----------
        x : ndarray of shape (ncols,) or (ncols, k), or a GPU vector or block
            Not overlapping ``out``; of the operator's dtype, or cast by the rule of the class's Notes. A 2-D
            ``x`` is a block of k vectors: one product per column. On a ``cuda`` operator, a vector
            that lives on the GPU (CuPy, PyTorch, JAX, Numba: anything with ``__cuda_array_interface__``
            or ``__dlpack__``) is used in place; a NumPy vector is uploaded (and the result downloaded).
        out : ndarray of shape (nrows,) or (nrows, k), or a GPU vector or block, optional
            Written in place: the operator's dtype, writeable, on the same side as ``x`` (a vector contiguous;
            a block's columns are written one at a time; a new block is column-major).
            Needed when ``beta != 0``. Without it a GPU ``x`` gets a new vector of its own kind (a CuPy
            array for CuPy, a tensor for PyTorch, the array API's ``empty`` otherwise).
        alpha, beta : float
            As in BLAS: with ``beta == 0`` ``out`` is not read (NaN there does not propagate); with
            ``alpha == 0`` the product is not computed.
        stream : int, cupy.cuda.Stream or torch.cuda.Stream, optional
            GPU vectors only: the CUDA stream the product is queued on. Default: the current stream of
            ``x``'s library (CuPy, PyTorch), else the legacy default stream. The product is asynchronous
            on it, like the library's own kernels.

        Returns
        -------
        ndarray of shape (nrows,) or (nrows, k), or a GPU vector or block
            ``out`` when given.
        """
        side = self._fwd
        seen = side.seen if side is not None else _NOT_SEEN
        if x is seen[0] and out is seen[2] and out is not None and stream is None and type(alpha) is float \
                and type(beta) is float:
            # a solver's loop: the CuPy x and out of the last product again, on CuPy's current stream
            with side.lock:
                plan = side.plan
                if plan is not None:
                    plan._plan.mv_dev(seen[1], seen[3], alpha, beta, seen[4]().ptr)
                    return out
        return _apply(side, x, out, alpha, beta, "matvec", stream)

    @overload
    def rmatvec(self, x: npt.NDArray[_F], out: npt.NDArray[_F] | None = None, alpha: float = 1.0,
                beta: float = 0.0, stream: None = None) -> npt.NDArray[_F]: ...

    @overload
    def rmatvec(self, x: DeviceArrayT, out: DeviceArrayT | None = None, alpha: float = 1.0, beta: float = 0.0,
                stream: Stream | None = None) -> DeviceArrayT: ...

    def rmatvec(self, x: Any, out: Any = None, alpha: float = 1.0, beta: float = 0.0,
                stream: Stream | None = None) -> Any:
        """``y = alpha * A.T @ x + beta * y``, as :meth:`matvec`; needs ``Operator(..., rmatvec=True)``."""
        side = self._adj
        if side is None:
            if self._fwd is None:
                raise ValueError("This Operator has been closed.")
            raise ValueError("rmatvec() needs the transpose converted: build the Operator with rmatvec=True.")
        return _apply(side, x, out, alpha, beta, "rmatvec", stream)

    @overload
    def __matmul__(self, x: npt.NDArray[_F]) -> npt.NDArray[_F]: ...

    @overload
    def __matmul__(self, x: DeviceArrayT) -> DeviceArrayT: ...

    def __matmul__(self, x: Any) -> Any:
        """``A @ x``: :meth:`matvec` of ``x`` into a new vector of its kind (NumPy in, NumPy out)."""
        side = self._fwd
        seen = side.seen if side is not None else _NOT_SEEN
        if x is seen[0] and seen[5] is not None:
            # the CuPy x of the last product again (its address known): only the result is new
            with side.lock:
                plan = side.plan
                if plan is not None:
                    s = seen[4]().ptr
                    made = seen[5].take(s)
                    if made is not None:
                        plan._plan.mv_dev(seen[1], made[1], 1.0, 0.0, s)
                        return made[0]
        return _apply(side, x, None, 1.0, 0.0, "matvec", None)

    def matmat(self, X: Any, out: Any = None, alpha: float = 1.0, beta: float = 0.0, stream: Any = None) -> Any:
        """``Y = alpha * A @ X + beta * Y`` for a block ``X`` of k vectors, shape (ncols, k): :meth:`matvec`, which
        takes blocks too (as ``op @ X`` does), under scipy's name. One product per column with the operator's
        kernel; ``out`` (nrows, k) is written column by column, a new result is column-major."""
        return self.matvec(X, out=out, alpha=alpha, beta=beta, stream=stream)

    @property
    def T(self) -> Operator:  # noqa: N802 (scipy's and NumPy's name)
        """The transpose as an operator: its products are this one's :meth:`rmatvec` and the other way round,
        sharing the conversions (``Operator(..., rmatvec=True)`` made both; closing either closes both)."""
        if self._adj is None:
            if self._fwd is None:
                raise ValueError("This Operator has been closed.")
            raise ValueError("op.T needs the transpose converted: build the Operator with rmatvec=True.")
        t = object.__new__(Operator)
        t.__dict__.update(self.__dict__)
        t._fwd, t._adj, t.shape = self._adj, self._fwd, (self.shape[1], self.shape[0])
        return t

    # ---- adapters, attributes, lifetime ----

    @overload
    def aslinearoperator(
            self, library: Literal["scipy"] = "scipy") -> scipy.sparse.linalg.LinearOperator[np.float32 | np.float64]:
        ...

    @overload
    def aslinearoperator(self, library: Literal["cupy"]) -> cupyx.scipy.sparse.linalg.LinearOperator: ...

    def aslinearoperator(self, library: str = "scipy") -> Any:
        """A ``LinearOperator`` over this operator, for the solvers of scipy (``library='scipy'``) or of CuPy
        (``'cupy'``: ``cupyx.scipy.sparse.linalg.LinearOperator`` on GPU vectors, for a ``cuda`` operator;
        CuPy must be installed).

        scipy's: vectors of shape (n,) or (n, 1) and any real dtype are cast to the operator's (scipy's own
        ``aslinearoperator(op)`` works too, through :meth:`matvec`, for 1-D vectors of the operator's dtype).
        CuPy's: CuPy vectors of shape (n,) or (n, 1), cast on the GPU where their dtype differs."""
        if library == "cupy":
            if self.device != "cuda":
                raise ValueError("aslinearoperator(library='cupy') needs a cuda operator (Operator(..., "
                                 "device='cuda')); this one runs on the CPU.")
            return arrays.cupy_linear_operator(self.shape, self.dtype, self.matvec,
                                               self.rmatvec if self._adj is not None else None)
        validate("aslinearoperator()", {"library": OneOf(("scipy", "cupy"), "or")}, locals())
        from scipy.sparse.linalg import LinearOperator

        def cast(v: np.ndarray, n: int, name: str) -> np.ndarray:
            v = np.asarray(v)
            if v.ndim == 2 and v.shape[1] == 1:
                v = v[:, 0]
            if v.shape != (n,):
                raise ValueError(f"'{name}' has shape {v.shape}; the operator takes ({n},) or ({n}, 1).")
            return np.ascontiguousarray(v, dtype=self.dtype)

        def mv(v: np.ndarray) -> np.ndarray:
            return self.matvec(cast(v, self.shape[1], "x"))

        def rmv(v: np.ndarray) -> np.ndarray:
            return self.rmatvec(cast(v, self.shape[0], "x"))

        def mm(V: np.ndarray) -> np.ndarray:
            return self.matvec(np.asarray(V, dtype=self.dtype))

        def rmm(V: np.ndarray) -> np.ndarray:
            return self.rmatvec(np.asarray(V, dtype=self.dtype))

        adj = self._adj is not None
        return LinearOperator(self.shape, matvec=mv, rmatvec=rmv if adj else None, matmat=mm,
                              rmatmat=rmm if adj else None, dtype=self.dtype)

    @property
    def nbytes(self) -> int:
        sides = [s for s in (self._fwd, self._adj) if s is not None]
        if self.device == "cuda":
            return sum(s.plan.nbytes for s in sides if s.plan is not None)
        return sum(s.F.nbytes for s in sides if s.F is not None)

    @property
    def closed(self) -> bool:
        return self._fwd is None or not self._fwd.live

    def close(self) -> None:
        """Free the conversion (and the GPU memory) now; later products raise ValueError. Products in
        flight finish first."""
        for s in (self._fwd, self._adj):
            if s is not None:
                s.close()

    def __enter__(self) -> Operator:  # noqa: PYI034 (typing.Self needs Python 3.11; pyspmv runs on 3.10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        if getattr(self, "_fwd", None) is None:
            return "<pyspmv.Operator (not made)>"
        how = "given" if self.ranking is None else "ranked first"
        t = ", with A.T" if self._adj is not None else ""
        state = "closed" if self.closed else f"{self.nbytes} bytes"
        return (f"<pyspmv.Operator {self.shape[0]}x{self.shape[1]} {self.dtype} on {self.device}: "
                f"{self.config.id} ({how}){t}, {state}>")


def _gpu_verify(verify: Any) -> Any:
    """A GPU operator's ``verify``: ``'auto'`` where not given."""
    return "auto" if verify is None else verify


def _first_on_device(DM: gpu.DeviceMatrix, candidates: Iterable[Config], M: Matrix | None,
                     given: bool) -> tuple[Config, gpu.DeviceMatrix | FormatMatrix, gpu.Plan]:
    """The first of ``candidates`` that can serve the CSR matrix ``DM`` on the GPU: converted there, a layout the
    device does not make (CSR in a locality order) converted from ``M``, the host copy, where there is one; with
    its plan (whose setup says whether the configuration can serve the matrix). ``given``: one configuration the
    caller named."""
    why = []
    for c in candidates:
        try:
            try:
                c, F = prepare_on_device(DM, c)
            except NotApplicableError:
                if M is None or c.format != "csr":
                    raise
                c, F = prepare(M, c, DM.dtype)          # made on the host alone; the plan uploads it
            return c, F, gpu.Plan(F, c)
        except NotApplicableError as exc:
            why.append(f"{c.id}: {exc}")
    if given:
        raise NotApplicableError(f"Operator(): {why[0]}")
    raise NotApplicableError("no ranked cuda configuration can serve this matrix on the device"
                             + (f" ({'; '.join(why[:3])})" if why else ""))


def _unpickle(M: Matrix, cid: str, dtype: str, rmatvec: bool, ranking: Ranking | None) -> Operator:
    """An Operator of ``M`` for configuration ``cid`` (:meth:`Operator.__reduce__`'s)."""
    op = Operator(M, config=cid, dtype=dtype, rmatvec=rmatvec)
    op.ranking = ranking
    return op


def _config_or_rank(n_calls: Any, deterministic: Any, model: Any, verify: Any) -> None:
    """Refuse rank()'s arguments beside a given configuration."""
    if n_calls is not None or deterministic or model is not None or verify is not None:
        raise ValueError("Operator() takes 'config', or 'n_calls', 'deterministic' and 'model' to pick one by rank() "
                         "(and 'verify' to time its first), not both.")


def _config_arg(cfg: Any) -> Config:
    validate("Operator()", {"config": _CONFIG}, {"config": cfg})
    return config(cfg)


def _apply(side: _Side, x: Any, out: Any, alpha: Any, beta: Any, what: str, stream: Any) -> Any:
    """``alpha * A @ x + beta * out`` of ``side`` into ``out`` (or a new array).

    The core checks x and y itself (type, dtype, length, contiguity, overlap) and the product costs nothing
    else; only when it refuses them does :func:`pyspmv._operator_checks.diagnose` work out which argument is wrong and say so."""
    state = side.state
    y = out
    if side.plan is not None and not isinstance(x, np.ndarray) and arrays.is_device_array(x):
        return _device_product(side, x, out, alpha, beta, what, stream)
    if stream is not None:
        raise ValueError(f"The 'stream' parameter of {what}() applies to vectors that live on the GPU; 'x' is "
                         f"a {type(x).__name__}.")
    try:
        if out is None:
            needs_out(beta, what)
            y = np.empty(side.nrows, dtype=side.dtype)
        if side.finite_x and _core.finite_check(x) is not None:
            raise ValueError("non-finite x")
        if side.plan is not None:
            if out is not None and not isinstance(out, np.ndarray) and arrays.is_device_array(out):
                raise TypeError(f"The 'out' parameter of {what}() lives on the GPU while 'x' is a NumPy array; "
                                "pass both on the GPU, or both as NumPy arrays.")
            _gpu_product(side, x, y, alpha, beta)
        elif alpha == 1.0 and beta == 0.0:
            _core.mv(state, side.variant, x, y)      # the State was checked when made
        else:
            work = None
            if alpha != 0.0 and beta != 0.0:          # A x goes beside y, kept per thread
                work = getattr(side.local, "work", None)
                if work is None:
                    work = side.local.work = np.empty(side.nrows, dtype=side.dtype)
            _core.mv_scaled(state, side.variant, alpha, x, beta, y, work)
    except (TypeError, ValueError, OverflowError):     # OverflowError: an int alpha or beta past float64
        if isinstance(x, np.ndarray) and x.ndim == 2 and side.live:
            return _apply_block(side, x, out, alpha, beta, what)
        xc = _safe_cast(side, x)
        if xc is not None:
            return _apply(side, xc, out, alpha, beta, what, stream)
        diagnose(side, x, out, alpha, beta, what)
        raise
    return y


def _safe_cast(side: _Side, x: Any) -> Any:
    """``x`` as the vector the product takes, where the rule allows (:class:`Operator`'s Notes): a 1-D NumPy
    array of the right length and a float type that casts to the operator's without loss, copied contiguous
    in the operator's dtype; None where it does not apply (the error then says what is wrong)."""
    if not isinstance(x, np.ndarray) or x.shape != side.xshape or x.dtype.kind != "f":
        return None
    if not np.can_cast(x.dtype, side.dtype, "safe") or (x.dtype == side.dtype and x.flags.c_contiguous):
        return None
    return np.ascontiguousarray(x, dtype=side.dtype)


def _apply_block(side: _Side, X: np.ndarray, out: Any, alpha: Any, beta: Any, what: str) -> np.ndarray:
    """``alpha * A @ X + beta * out`` for a block ``X`` of vectors (n x k): one product per column with the
    operator's kernel (a column copied where it is not contiguous or not of the operator's dtype, as a
    vector is), into ``out`` or a new column-major array."""
    m, n = side.nrows, side.xshape[0]
    where = f"The 'x' parameter of {what}()"
    if X.shape[0] != n:
        raise ValueError(f"{where} has shape {X.shape}; a vector has {n} entries and a block of vectors {n} rows.")
    k = X.shape[1]
    if out is None:
        needs_out(beta, what)
        Y = np.empty((m, k), dtype=side.dtype, order="F")
    else:
        o = f"The 'out' parameter of {what}()"
        if not isinstance(out, np.ndarray) or out.shape != (m, k):
            got = out.shape if isinstance(out, np.ndarray) else type(out).__name__
            raise ValueError(f"{o} must be a NumPy array of shape ({m}, {k}) for a block x of {k} vectors. Got "
                             f"{got} instead.")
        if out.dtype != side.dtype:
            raise TypeError(f"{o} has dtype {out.dtype.str!r}; the product writes {side.dtype} in place: pass an "
                            f"array of dtype {side.dtype} (np.empty(({m}, {k}), dtype=np.{side.dtype}, order='F')).")
        if not out.flags.writeable:
            raise ValueError(f"{o} is read-only; pass a writeable array.")
        if np.may_share_memory(X, out):
            raise ValueError(f"{o} overlaps 'x'; the product would read what it writes. Pass another array.")
        Y = out
    for j in range(k):
        col = Y[:, j]
        y = col if col.flags.c_contiguous else np.ascontiguousarray(col)     # holds out's column for beta
        _apply(side, X[:, j], y, alpha, beta, what, None)
        if y is not col:
            col[...] = y
    return Y


def _device_product(side: _Side, x: Any, out: Any, alpha: Any, beta: Any, what: str, stream: Any) -> Any:
    """The product on vectors that live on the GPU, in place: their addresses read through the CUDA array
    interface or DLPack, checked against the plan (dtype, length, stride; the device by the core), the
    product queued on the caller's stream, ``out`` (or a new vector of ``x``'s kind) returned.

    Reading a vector costs microseconds (the producer builds its interface dict or capsule each time), as
    much as a small product: the last CuPy ``x`` and ``out`` are remembered with their addresses (a CuPy
    array's address and shape never change), so that a solver's loop over the same vectors reads them once."""
    if type(alpha) is not float or type(beta) is not float:
        scalars(alpha, beta, what)
        alpha, beta = float(alpha), float(beta)
    if getattr(x, "ndim", 1) == 2:
        return _device_block(side, x, out, alpha, beta, what, stream)
    where = what + "()"
    s = arrays.stream_handle(x, stream, where)
    seen = side.seen
    if x is seen[0]:
        xa = seen[1]
    else:
        try:
            xa = arrays.device_vector(x, "x", side.xshape[0], side.dtype, where, s).address
        except (TypeError, ValueError):
            dt = arrays.dtype_of(x)
            if dt is None or dt.kind != "f" or not np.can_cast(dt, side.dtype, "safe") or (
                    dt == side.dtype and arrays.is_contiguous(x)):
                raise
            # the rule of Operator's Notes: a wider or strided x copied, by x's own library
            return _device_product(side, arrays.cast_vector(x, side.dtype), out, alpha, beta, what, stream)
        if arrays.fixed_address(x):
            side.seen = seen = (x, xa, seen[2], seen[3], arrays.current_stream(x),
                                arrays.result_maker(x, side.nrows, side.dtype, seen[5]))
    y = None
    if out is None:
        needs_out(beta, what)
        if x is not seen[0] or seen[5] is None or (stream is not None and s != seen[4]().ptr):
            y, ya = arrays.new_vector(x, side.nrows, side.dtype, where, s)
    elif out is seen[2]:
        y, ya = out, seen[3]
    elif isinstance(out, np.ndarray):
        raise TypeError(f"The 'out' parameter of {what}() is a NumPy array while 'x' lives on the GPU; pass a GPU "
                        "vector (or both as NumPy arrays).")
    else:
        y = out
        ya = arrays.device_vector(y, "out", side.nrows, side.dtype, where, s, writable=True).address
        if arrays.fixed_address(y):
            side.seen = (seen[0], seen[1], y, ya, arrays.current_stream(y), seen[5])
    with side.lock:                   # a plan's workspace serves one product at a time
        if side.plan is None:
            raise ValueError("This Operator has been closed.")
        if y is None:                 # a result of the maker, taken under the lock (one thread per result)
            made = seen[5].take(s)
            y, ya = made if made is not None else arrays.new_vector(x, side.nrows, side.dtype, where, s)
        side.plan._plan.mv_dev(xa, ya, alpha, beta, s)
    return y


def _device_block(side: _Side, X: Any, out: Any, alpha: float, beta: float, what: str, stream: Any) -> Any:
    """A block of GPU vectors (CuPy, PyTorch; n x k): one product per column on the caller's stream, into
    ``out`` or a new column-major array of ``X``'s library (a column copied where it is not contiguous)."""
    m, n = side.nrows, side.xshape[0]
    if tuple(X.shape)[0] != n:
        raise ValueError(f"The 'x' parameter of {what}() has shape {tuple(X.shape)}; a block of vectors must have "
                         f"{n} rows.")
    k = int(X.shape[1])
    if out is None:
        needs_out(beta, what)
        Y = arrays.empty_block_like(X, m, k, side.dtype)
    elif tuple(getattr(out, "shape", ())) != (m, k):
        raise ValueError(f"The 'out' parameter of {what}() must have shape ({m}, {k}) for a block x of {k} "
                         f"vectors. Got {tuple(getattr(out, 'shape', ()))} instead.")
    else:
        Y = out
    for j in range(k):
        xj, _ = arrays.column(X, j)
        yj, view = arrays.column(Y, j)
        _device_product(side, xj, yj, alpha, beta, what, stream)
        if not view:
            Y[:, j] = yj
    return Y


def _gpu_product(side: _Side, x: np.ndarray, y: np.ndarray, alpha: Any, beta: Any) -> None:
    """The GPU plan's product (x up, y down), alpha and beta applied on the host."""
    plain = alpha == 1.0 and beta == 0.0
    t = y if plain or beta == 0.0 else np.empty_like(y)
    with side.lock:                              # the plan's device x and y serve one product at a time
        if side.plan is None:
            raise ValueError("This Operator has been closed.")
        if plain or alpha != 0.0:
            side.plan.mv(x, out=t)
    if plain:
        return
    if alpha == 0.0:
        y[...] = 0.0 if beta == 0.0 else y * beta
    elif beta == 0.0:
        np.multiply(y, alpha, out=y)
    else:
        np.multiply(y, beta, out=y)
        y += alpha * t
