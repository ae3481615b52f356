"""The GPU side: is a CUDA device usable, what is it, and plans that run configurations on it.

The CUDA kernels and cuSPARSE live in the extension module ``pyspmv._cuda``, imported on first GPU
use, so that ``import pyspmv`` works on machines without nvcc, a driver or a GPU.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import ctypes
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from types import ModuleType
from typing import Any

import numpy as np

from .._core import HAVE_NVCC, MAX_FILL_DEFAULT, DeviceUnavailableError, State
from ..matrices.configs import Config
from ..matrices.formats import FormatMatrix, format_arguments
from .arrays import DeviceCSR, address


@lru_cache(maxsize=1)
def _load() -> ModuleType | str:
    """The _cuda module, or the reason it cannot be used."""
    if not HAVE_NVCC:
        return ("pyspmv was built without CUDA (at build time nvcc was not found, or the machine had no GPU, or "
                "-Dcuda=disabled); reinstall with the CUDA toolkit's nvcc on PATH to use GPU configurations, on a "
                "machine without a GPU with `pip install . -Csetup-args=-Dcuda=enabled` (or -Dgpu_arch=90 for "
                "machine code of compute capability 9.0)")
    try:
        from .. import _cuda
    except ImportError as exc:
        return f"pyspmv's CUDA module cannot be loaded ({exc}); is the CUDA toolkit's library folder installed?"
    return _cuda


def cuda() -> Any:
    """The ``_cuda`` module with at least one usable device, else :class:`DeviceUnavailableError`."""
    mod = _load()
    if isinstance(mod, str):
        raise DeviceUnavailableError(mod)
    try:
        mod.device_count()
    except DeviceUnavailableError as exc:
        raise DeviceUnavailableError(explain(str(exc))) from None
    return mod


#: The NVIDIA driver's library, which the CUDA runtime loads at run time.
DRIVER_LIBRARY = "nvcuda.dll" if sys.platform == "win32" else "libcuda.so.1"


def driver_missing() -> str | None:
    """Why the NVIDIA driver's library cannot be loaded, or None when it can. (The toolkit's
    ``stubs/libcuda.so``, which ``ctypes.util.find_library`` may report, is no driver.)"""
    try:
        ctypes.CDLL(DRIVER_LIBRARY)
    except OSError as exc:
        return str(exc)
    return None


def explain(reason: str) -> str:
    """The CUDA runtime's ``reason`` a device is unusable, said in words a user can act on."""
    missing = driver_missing()
    if missing is not None:
        return (f"no NVIDIA driver found ({DRIVER_LIBRARY} cannot be loaded: {missing}); GPU configurations need "
                f"an NVIDIA GPU and its driver; use device='cpu' here. [CUDA: {reason}]")
    if "cudaErrorInsufficientDriver" in reason:
        return (f"the NVIDIA driver is older than the CUDA runtime pyspmv was built with; update the driver "
                f"(nvidia-smi shows its version). [CUDA: {reason}]")
    if "cudaErrorNoDevice" in reason:
        return (f"the NVIDIA driver is installed but finds no CUDA GPU; check nvidia-smi and "
                f"CUDA_VISIBLE_DEVICES. [CUDA: {reason}]")
    return reason


def available() -> bool:
    """Whether GPU configurations can run here."""
    try:
        cuda()
    except DeviceUnavailableError:
        return False
    return True


def unavailable_reason() -> str | None:
    """Why GPU configurations cannot run here, or None when they can."""
    try:
        cuda()
    except DeviceUnavailableError as exc:
        return str(exc)
    return None


def device_info() -> dict[str, Any]:
    """The GPU's properties, as datasets and results record them.

    Returns
    -------
    dict
        Name, SM count, clocks, memory, driver, CUDA runtime and cuSPARSE versions of device 0.

    Raises
    ------
    DeviceUnavailableError
        No GPU module or no GPU here.
    """
    info = dict(cuda().info())
    for key in ("driver_version", "runtime_version"):
        v = info[key]
        info[key] = f"{v // 1000}.{v % 1000 // 10}"
    v = info["cusparse_version"]
    info["cusparse_version"] = f"{v // 1000}.{v % 1000 // 100}.{v % 100}"
    return info


def copy_bandwidth(nbytes: int = 1 << 30, repeats: int = 20) -> float:
    """The measured device-to-device copy bandwidth of the GPU.

    Parameters
    ----------
    nbytes : int, default 1 << 30
        Bytes copied per copy.
    repeats : int, default 20
        Copies timed.

    Returns
    -------
    float
        GB/s, bytes read plus bytes written.

    Raises
    ------
    DeviceUnavailableError
        No GPU module or no GPU here.
    """
    return float(cuda().copy_bandwidth(int(nbytes), int(repeats)))


@contextmanager
def pinned(x: np.ndarray) -> Iterator[bool]:
    """``x`` (a contiguous host array) page-locked while the block runs, so that its uploads (one per plan timed
    with it, by :func:`pyspmv.benchmark` on the GPU) run at the host link's speed, not through the driver's staging
    of pageable memory: on the H200's host, when verification still timed a host x, an Operator's build from CuPy
    with ``verify="auto"`` (ten plans timed) took 31.9 ms pinned against 37.4 ms pageable at 1e7 entries, 23.8
    against 29.2 ms at 5e6, 15.0 against 16.3 ms at 1e6 (medians of 6, one run), pinning and unpinning x 0.25-0.56
    ms of it. Yields whether it is pinned: a buffer the driver will not lock
    (already locked, say) is used as it is, since pinning only makes copies faster."""
    try:
        cuda().pin(x)
    except (RuntimeError, MemoryError):     # DeviceUnavailableError too: then nothing is uploaded anyway
        yield False
        return
    try:
        yield True
    finally:
        cuda().unpin(x)


class DeviceMatrix:
    """A converted matrix uploaded to the GPU once, for the plans of every thread mapping of its
    format (they share its arrays, x and y: use them one at a time).

    Parameters
    ----------
    F : FormatMatrix

    Attributes
    ----------
    nbytes : int
        Device bytes held: matrix arrays, x and y.
    upload_ms : float
        The upload's time in ms.
    """

    def __init__(self, F: FormatMatrix):
        self._matrix = cuda().Matrix(F.state)
        self.format = F.format
        self.shape = F.shape
        self.dtype = F.dtype

    @classmethod
    def wrap_csr(cls, A: DeviceCSR) -> DeviceMatrix:
        """A CSR matrix that already lives on the GPU (:func:`pyspmv.devices.arrays.device_csr`), read in
        place: no copy; checked on the device first (row pointers, column range)."""
        self = cls.__new__(cls)
        self._matrix = cuda().wrap_csr(A.shape[0], A.shape[1], A.nnz, address(A.indptr), address(A.indices),
                                       address(A.data), A.dtype.itemsize, A)
        self.format, self.shape, self.dtype = "csr", A.shape, A.dtype
        return self

    @classmethod
    def upload_csr(cls, M: Any) -> DeviceMatrix:
        """``M`` (a host :class:`pyspmv.Matrix`) uploaded as CSR of its own value type straight from its arrays,
        with no converted copy on the host first (for 2e7 entries that copy costs the host about 0.3 s, most of
        it fresh pages being zeroed); checked before the upload as a converted matrix is."""
        self = cls.__new__(cls)
        self._matrix = cuda().upload_csr(M.shape[0], M.shape[1], M.indptr, M.indices, M.data)
        self.format, self.shape, self.dtype = "csr", tuple(M.shape), np.dtype(M.dtype)
        return self

    @property
    def nbytes(self) -> int:
        return int(self._matrix.nbytes)

    @property
    def upload_ms(self) -> float:
        return float(self._matrix.upload_ms)


class Plan:
    """One configuration bound to one converted matrix on the GPU.

    Uploads the format's arrays, sets the kernel (or cuSPARSE's handle, descriptors and buffer) up
    and allocates x and y once, so that every product after that is the launches alone. Use as a
    context manager, or call :meth:`close`, to free the device memory early.

    Parameters
    ----------
    F : FormatMatrix or DeviceMatrix
        Converted for ``cfg``'s format and parameters; a FormatMatrix is uploaded for this plan
        alone, a DeviceMatrix (uploaded once) is shared and must not be used by two plans at once.
    cfg : Config
        A ``cuda`` configuration.

    Attributes
    ----------
    nbytes : int
        Device bytes held: workspace or cuSPARSE buffer, plus matrix arrays, x and y when the plan
        uploaded them itself.
    setup_ms : float
        Kernel or library setup in ms, plus the upload when the plan made it.
    """

    def __init__(self, F: FormatMatrix | DeviceMatrix, cfg: Config):
        if cfg.device != "cuda":
            raise ValueError(f"Configuration {cfg.id!r} runs on {cfg.device}, not on the GPU.")
        src = F._matrix if isinstance(F, DeviceMatrix) else F.state
        self._plan = cuda().Plan(src, cfg.index, cfg.slots)     # the core's parse of its id, made once
        self.config = cfg
        self.shape = F.shape
        self.dtype = F.dtype

    @property
    def nbytes(self) -> int:
        return int(self._plan.nbytes)

    @property
    def setup_ms(self) -> float:
        return float(self._plan.setup_ms)

    def mv(self, x: np.ndarray, out: np.ndarray | None = None) -> np.ndarray:
        """``A @ x`` for a contiguous ``x`` of the plan's dtype, into ``out`` when given (contiguous, the
        plan's dtype); y is poisoned with NaN first."""
        y = np.empty(self.shape[0], dtype=self.dtype) if out is None else out
        self._plan.mv(x, y)
        return y

    def mv_dev(self, x: int, y: int, alpha: float = 1.0, beta: float = 0.0, stream: int = 0) -> None:
        """``y = alpha * A @ x + beta * y`` on device addresses (contiguous vectors of the plan's dtype on its
        device), queued on ``stream``: asynchronous, no host copy (``kernels/spmv_cuda.h``)."""
        self._plan.mv_dev(x, y, alpha, beta, stream)

    @property
    def device(self) -> int:
        """The CUDA device the plan's arrays live on."""
        return int(self._plan.device)

    def bench(self, x: np.ndarray | None, *, warmup: int = 10, repeats: int = 200, budget_s: float = 1.0,
              result: bool = True, back_to_back: int = 1) -> tuple[float, float, float, float, int, np.ndarray | None]:
        """Time products between CUDA events: (median, q25, q75, min) in ms, runs made, last y (None with
        ``result=False``: not downloaded). ``x`` None: x is made on the device (fixed values spread over (-1, 1),
        none 0), for a timing that needs no particular x: no host x and no upload (on the H200's host, drawing a
        host x of 9e6 entries took 59 ms and page-locking it 6 ms of an 86 ms verified Operator build).

        Products are queued in batches behind a gate kernel that holds the stream until the whole
        batch is queued, so each product's events time the GPU's work alone (see
        ``kernels/spmv_cuda.h``). ``back_to_back`` > 1: each timing is a run of that many products queued back to
        back between two events, its time over their number (``spmv_cuda_plan_bench_runs``)."""
        y = np.empty(self.shape[0], dtype=self.dtype) if result else None
        med, q25, q75, mn, runs = self._plan.bench(x, y, warmup, repeats, float(budget_s), back_to_back)
        return med, q25, q75, mn, int(runs), y

    def close(self) -> None:
        self._plan.close()

    def __enter__(self) -> Plan:  # noqa: PYI034 (typing.Self needs Python 3.11; pyspmv runs on 3.10)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


# ---- conversion on the device (kernels/convert.cu) ----


def _device_matrix(matrix: Any, fmt: str, params: dict[str, int], shape: tuple[int, int], dtype: Any
                   ) -> DeviceMatrix:
    """A DeviceMatrix over a ``_cuda.Matrix`` made on the device (no FormatMatrix behind it)."""
    D = DeviceMatrix.__new__(DeviceMatrix)
    D._matrix = matrix
    D.format = fmt
    D.shape = shape
    D.dtype = np.dtype(dtype)
    D.params = dict(params)
    return D


def convert_on_device(M: DeviceMatrix, fmt: str, *, max_fill: float = float(MAX_FILL_DEFAULT),
                      **params: int) -> DeviceMatrix:
    """Convert a CSR matrix on the GPU to format ``fmt`` on the GPU, with no trip to the host.

    The result holds exactly the arrays :func:`pyspmv.convert` gives for the same matrix and
    parameters, and is refused where that is (the same exceptions and messages).

    Parameters
    ----------
    M : DeviceMatrix
        A CSR matrix on the GPU (:meth:`DeviceMatrix.wrap_csr`, or a DeviceMatrix of a 'csr'
        FormatMatrix).
    fmt, max_fill, **params
        As :func:`pyspmv.convert`.

    Returns
    -------
    DeviceMatrix
        Owning its arrays; ``M`` may go first.

    Raises
    ------
    pyspmv.NotApplicableError
        The format cannot hold the matrix within ``max_fill`` or int32 indexing.
    ValueError
        An unknown format or parameter, a parameter out of its range, or unsorted or duplicate
        column indices in a row (sum duplicates first).
    TypeError
        ``M`` is not a DeviceMatrix.
    """
    _, full, (p0, p1, *_) = format_arguments(fmt, max_fill, params, "convert_on_device()")
    if not isinstance(M, DeviceMatrix):
        raise TypeError(f"convert_on_device() converts a DeviceMatrix holding a CSR matrix; got "
                        f"{type(M).__name__}.")
    m = M._matrix.convert(fmt, p0, p1, float(max_fill))
    return _device_matrix(m, fmt, full, M.shape, M.dtype)


def download(D: DeviceMatrix) -> FormatMatrix:
    """The matrix ``D`` holds, copied to the host as a FormatMatrix (checked as any state is)."""
    fmt, nrows, ncols, nnz, params, scalars, idx, val = D._matrix.arrays()
    state = State(fmt, nrows, ncols, nnz, params, scalars, idx, val)
    return FormatMatrix(state, dict(getattr(D, "params", {})))
