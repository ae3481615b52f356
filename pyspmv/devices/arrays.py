"""Arrays that live on the GPU, read in place: vectors of any library (the CUDA array interface, DLPack),
CSR matrices of CuPy and PyTorch, and new vectors of the caller's kind.

Nothing here imports CuPy, PyTorch or JAX: an array of theirs is read through the protocols it offers, and
its own library (already imported, since the caller made the array) is asked only for what the protocols do
not say (the current stream, an empty array of the same kind)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import sys
import weakref
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, Protocol, TypeAlias, TypeVar

import numpy as np

from .. import _core


class CudaArray(Protocol):
    """An array that offers the CUDA array interface (CuPy, PyTorch, Numba): what pyspmv reads a vector on
    the GPU through, first."""

    @property
    def __cuda_array_interface__(self) -> Mapping[str, object]: ...


class DLPackArray(Protocol):
    """An array that offers DLPack (CuPy, PyTorch, JAX, any array API library): ``__dlpack__`` and the device
    it lives on (a CUDA device, for pyspmv to read it)."""

    def __dlpack__(self, *, stream: int | None = None) -> object: ...

    def __dlpack_device__(self) -> tuple[object, int]: ...


#: A vector that may live on the GPU, for type checkers: read through one of its protocols, whatever its library.
DeviceArray: TypeAlias = CudaArray | DLPackArray
#: A device array in, the same kind out (:meth:`pyspmv.Operator.matvec`).
DeviceArrayT = TypeVar("DeviceArrayT", bound=DeviceArray)


class SparseOnDevice(Protocol):
    """A sparse matrix that may live on the GPU (a ``cupyx.scipy.sparse`` matrix, a PyTorch sparse tensor): what
    :func:`is_device_matrix` then reads; its libraries are open-ended, its shape is what they share."""

    @property
    def shape(self) -> tuple[int, ...]: ...


class _CupyStream(Protocol):
    @property
    def ptr(self) -> int: ...


class _TorchStream(Protocol):
    @property
    def cuda_stream(self) -> int: ...


class _NumbaStream(Protocol):
    @property
    def handle(self) -> int: ...


#: A CUDA stream as :func:`stream_handle` takes it: a handle (int), a ``cupy.cuda.Stream`` (``.ptr``), a
#: ``torch.cuda.Stream`` (``.cuda_stream``) or a Numba stream (``.handle``).
Stream: TypeAlias = int | _CupyStream | _TorchStream | _NumbaStream


#: DLPack device types (dlpack.h's DLDeviceType) that pyspmv can read: CUDA memory and CUDA managed memory.
DL_CUDA, DL_CUDA_HOST, DL_CUDA_MANAGED = 2, 3, 13
#: The CUDA runtime's special stream handles, which the CUDA array interface (v3) also uses.
LEGACY_STREAM, PER_THREAD_STREAM = 1, 2


def is_device_array(v: Any) -> bool:
    """Whether ``v`` offers itself as a GPU array: the CUDA array interface, or DLPack on a CUDA device."""
    if isinstance(v, np.ndarray):
        return False
    if hasattr(v, "__cuda_array_interface__"):
        return True
    dev = getattr(v, "__dlpack_device__", None)
    if dev is None:
        return False
    try:
        return int(dev()[0]) in (DL_CUDA, DL_CUDA_HOST, DL_CUDA_MANAGED)
    except (AttributeError, TypeError, ValueError, RuntimeError, BufferError):  # a query that fails: not readable
        return False


def _library(v: Any) -> str:
    """The top-level module of ``v``'s type ('cupy', 'torch', 'jax', 'numba', ...)."""
    return type(v).__module__.partition(".")[0]


def stream_handle(v: Any, stream: Stream | None, where: str) -> int:
    """The CUDA stream (an address) to run on: ``stream`` when given (an int, a CuPy ``Stream`` or a
    PyTorch ``cuda.Stream``), else the current stream of ``v``'s library (CuPy, PyTorch), else the stream
    ``v``'s CUDA array interface names, else the legacy default stream (0)."""
    if stream is not None:
        if isinstance(stream, (int, np.integer)) and not isinstance(stream, bool):
            if stream < 0:
                raise ValueError(f"The 'stream' parameter of {where} is {stream}; a stream handle is >= 0.")
            return int(stream)
        for attr in ("ptr", "cuda_stream", "handle"):       # CuPy, PyTorch, Numba
            h = getattr(stream, attr, None)
            if isinstance(h, (int, np.integer)) and not isinstance(h, bool):
                return int(h)
        raise TypeError(f"The 'stream' parameter of {where} must be a stream handle (int), a cupy.cuda.Stream "
                        f"or a torch.cuda.Stream. Got {type(stream).__name__} instead.")
    lib = _library(v)
    if lib == "cupy":
        return int(sys.modules["cupy"].cuda.get_current_stream().ptr)
    if lib == "torch":
        return int(sys.modules["torch"].cuda.current_stream(v.device).cuda_stream)
    cai = getattr(v, "__cuda_array_interface__", None)
    s = cai.get("stream") if isinstance(cai, dict) else None
    return int(s) if isinstance(s, int) and s > 0 else 0


class DeviceVector(NamedTuple):
    """A 1-D GPU array as pyspmv reads it: its address, and what keeps it alive (the array, or the
    DLPack capsule that describes it)."""

    address: int
    keep: Any


#: The typestrs a device vector of each dtype may have: little-endian (as the GPU stores it) or native ('=' on
#: the little-endian hosts CUDA runs on). A big-endian one ('>f8') would be read as other numbers: refused.
_TYPESTR = {np.dtype(np.float32): ("<f4", "=f4"), np.dtype(np.float64): ("<f8", "=f8")}


#: What the operator casts, as the messages say it: an x only where no precision is lost (CuPy's and PyTorch's,
#: by their own library), never an out, which is written in place.
_CASTS = {True: " and casts x only where no precision is lost (float16 and float32 to float64)",
          False: ", which it writes in place"}


def device_vector(v: Any, name: str, n: int, dtype: np.dtype, where: str, stream: int,
                  writable: bool = False) -> DeviceVector:
    """Read ``v`` (``name`` of ``where``) as a contiguous device vector of ``n`` entries of ``dtype``.

    The CUDA array interface first (it costs no capsule), DLPack (``__dlpack__(stream=)``) else. Raises
    TypeError or ValueError naming the argument for a wrong kind, dtype, length or stride, host memory, a
    read-only ``out``; the device it lives on is checked by the core (against the plan's)."""
    cai = getattr(v, "__cuda_array_interface__", None)
    label = f"The '{name}' parameter of {where}"
    kind = f"{type(v).__module__}.{type(v).__name__}"
    if cai is not None:
        shape, typestr, (address, readonly) = cai["shape"], cai["typestr"], cai["data"]
        strides = cai.get("strides")
        if cai.get("mask") is not None:
            raise ValueError(f"{label} ({kind}) has a mask; pyspmv reads unmasked vectors only.")
        itemsize = int(typestr[2:]) if typestr[2:].isdigit() else 0
        if len(shape) != 1 or shape[0] != n:
            raise ValueError(f"{label} ({kind}) has shape {tuple(shape)}; it must be 1-D with {n} entries.")
        if typestr not in _TYPESTR[dtype]:
            swapped = typestr[:1] == ">" and "<" + typestr[1:] in _TYPESTR[dtype]
            raise TypeError(f"{label} ({kind}) holds {typestr!r}"
                            + ("; its bytes are big-endian, which pyspmv does not swap in place" if swapped else
                               f"; this operator computes in {dtype}{_CASTS[name == 'x']}")
                            + f" (pass {name}.astype('{dtype}')).")
        if strides is not None and n > 1 and tuple(strides) != (itemsize,):
            raise ValueError(f"{label} ({kind}) has strides {tuple(strides)} bytes; pass a contiguous vector "
                             f"(stride {itemsize}).")
        if writable and readonly:
            raise ValueError(f"{label} ({kind}) is read-only; pass a writeable array.")
        return DeviceVector(int(address or 0), v)
    if not hasattr(v, "__dlpack__"):
        raise TypeError(f"{label} is a {kind}, neither NumPy nor a GPU array (__cuda_array_interface__, "
                        "__dlpack__).")
    dev_type, _dev_id = v.__dlpack_device__()
    if int(dev_type) not in (DL_CUDA, DL_CUDA_MANAGED):
        where_ = "pinned host memory" if int(dev_type) == DL_CUDA_HOST else f"DLPack device type {dev_type}"
        raise ValueError(f"{label} ({kind}) lives in {where_}, not on a CUDA device; pass a GPU array or a "
                         "NumPy array.")
    # DLPack's stream argument: 1 is the legacy default stream (0 is not allowed)
    capsule = v.__dlpack__(stream=stream if stream != 0 else LEGACY_STREAM)
    address, _type, _id, code, bits, lanes, shape, strides = _core.dlpack_info(capsule)
    if len(shape) != 1 or shape[0] != n:
        raise ValueError(f"{label} ({kind}) has shape {tuple(shape)}; it must be 1-D with {n} entries.")
    if (code, bits, lanes) != (2, dtype.itemsize * 8, 1):
        raise TypeError(f"{label} ({kind}) holds DLPack type (code {code}, {bits} bits, {lanes} lanes); this "
                        f"operator computes in {dtype}{_CASTS[name == 'x']} (pass {name}.astype('{dtype}')).")
    if strides is not None and n > 1 and tuple(strides) != (1,):
        raise ValueError(f"{label} ({kind}) has strides {tuple(strides)} entries; pass a contiguous vector.")
    return DeviceVector(int(address), (v, capsule))


def fixed_address(v: Any) -> bool:
    """Whether ``v``'s address, shape and type cannot change while it lives: CuPy arrays (a PyTorch tensor
    can be resized in place, a generic producer promises nothing)."""
    return _library(v) == "cupy"


def current_stream(v: Any) -> Any:
    """The function that gives the current stream of ``v``'s library (an object with ``.ptr``), for a CuPy
    array; None otherwise."""
    return sys.modules["cupy"].cuda.get_current_stream if _library(v) == "cupy" else None


def empty_like(v: Any, n: int, dtype: np.dtype, where: str) -> Any:
    """An empty vector of ``n`` entries of ``dtype``, of ``v``'s kind and on its device: CuPy and PyTorch by
    their own functions, others through the array API (``__array_namespace__``)."""
    lib = _library(v)
    if lib == "cupy":
        cp = sys.modules["cupy"]
        with cp.cuda.Device(v.device.id):
            return cp.empty(n, dtype=dtype)
    if lib == "torch":
        torch = sys.modules["torch"]
        return torch.empty(n, dtype=getattr(torch, dtype.name), device=v.device)
    ns = getattr(v, "__array_namespace__", None)
    if ns is not None:
        xp = ns()
        return xp.empty((n,), dtype=getattr(xp, dtype.name), device=getattr(v, "device", None))
    raise TypeError(f"{where}: cannot make a result of the kind of {type(v).__module__}.{type(v).__name__} (it "
                    "offers no array API namespace); pass 'out', a writeable GPU vector.")


def new_vector(v: Any, n: int, dtype: np.dtype, where: str, stream: int) -> tuple[Any, int]:
    """A new vector of ``n`` entries of ``dtype`` of ``v``'s kind on its device, and its address, for a product's
    result: CuPy's and PyTorch's from their own pools (CuPy's memory pool, PyTorch's caching allocator, each
    stream-aware: the memory is the current stream's), read without their interface dicts, since a vector just
    made is contiguous, of the type and length asked (reading the interface costs microseconds, as much as a
    small product); others through :func:`empty_like` and :func:`device_vector` (on ``stream``)."""
    lib = _library(v)
    if lib == "cupy":
        cp = sys.modules["cupy"]
        dev = v.device.id
        if dev == cp.cuda.runtime.getDevice():
            y = cp.empty(n, dtype=dtype)
        else:
            with cp.cuda.Device(dev):
                y = cp.empty(n, dtype=dtype)
        return y, int(y.data.ptr)
    if lib == "torch":
        torch = sys.modules["torch"]
        y = torch.empty(n, dtype=getattr(torch, dtype.name), device=v.device)
        return y, int(y.data_ptr())
    y = empty_like(v, n, dtype, where)
    return y, device_vector(y, "out", n, dtype, where, stream, writable=True).address


#: :class:`ResultMaker` hands a result out again only where it is at most this many bytes (131,072 float64
#: entries): where CuPy's allocation (``cupy.empty``: 2.3-3.8 µs on the H200's hosts) is a share of the product,
#: and the results it keeps (at most :data:`RESULT_RING`) cost little memory beside the matrix.
RESULT_REUSE_MAX_BYTES = 1 << 20

#: The results a :class:`ResultMaker` keeps: ``y = op @ x`` holds one while the next is made, an iteration
#: ``x = op @ x`` two (the operator remembers the last x), and one more is spare.
RESULT_RING = 4


_refcount = sys.getrefcount          # bound once: ResultMaker.take runs once a product
_weakrefs = weakref.getweakrefcount


class ResultMaker:
    """New CuPy vectors of ``n`` entries of ``dtype`` on one device, for the results of ``op @ x``: what
    :func:`new_vector` makes, with its lookups done once (a result per product on a small matrix, where each
    microsecond is a fifth of the kernel).

    A result of at most :data:`RESULT_REUSE_MAX_BYTES` is kept (the last :data:`RESULT_RING`) and handed out
    again once nothing outside the maker can reach it: no reference to the array, to its MemoryPointer or to
    that pointer's memory beyond those it had when it was made (a view, a DLPack capsule, a tensor over it, an
    array or a pointer made from ``y.data`` each hold one), no weak reference, its shape as made (CuPy's
    ``y.shape = ...`` reshapes in place; its size cannot change, so one dimension is that shape), and the same
    current stream as then. That is what CuPy's pool does with the memory of a dropped array (the next
    allocation on the stream it was made on gets it, in that stream's order), without the allocation. Callers
    hold the operator's lock around :meth:`take` and the product that writes the result, so that no other
    thread takes the same one."""

    __slots__ = ("_alloc", "_array", "_current", "_dev", "_dtype", "_keep", "_nbytes", "_next", "_ring", "_shape")

    def __init__(self, cp: Any, dev: int, n: int, dtype: np.dtype):
        self._alloc, self._array, self._current = cp.cuda.alloc, cp.ndarray, cp.cuda.runtime.getDevice
        self._dev, self._nbytes, self._shape, self._dtype = dev, n * dtype.itemsize, (n,), dtype
        self._keep = self._nbytes <= RESULT_REUSE_MAX_BYTES
        # each kept result: [array, its MemoryPointer, that pointer's memory, address, stream, and the reference
        # counts of the first three as made]
        self._ring: list[list[Any]] = []
        self._next = 0                        # where the next look starts, and the slot a new result replaces

    @property
    def device(self) -> int:
        """The device the results live on."""
        return self._dev

    def take(self, stream: int) -> tuple[Any, int] | None:
        """A result and its address for a product queued on ``stream``, the current stream's handle: a kept one
        nothing else reaches, made on that stream, else a new one from CuPy's memory pool on it (as
        ``cupy.empty``). None where the current device is not the vectors' (the caller then takes
        :func:`new_vector`)."""
        if self._current() != self._dev:
            return None
        ring = self._ring
        n = len(ring)
        i = self._next
        for _ in range(n):
            slot = ring[i]
            i = i + 1 if i + 1 < n else 0
            # counted as when it was made: no name here holds the array, its pointer or its memory
            if slot[4] == stream and _refcount(slot[0]) == slot[5] and _refcount(slot[1]) == slot[6] \
                    and _refcount(slot[2]) == slot[7] and _weakrefs(slot[0]) == 0 and slot[0].ndim == 1:
                self._next = i
                return slot[0], slot[3]
        return self._made(stream)

    def _made(self, stream: int) -> tuple[Any, int]:
        mp = self._alloc(self._nbytes)
        a = self._array(self._shape, self._dtype, mp)
        if not self._keep:
            return a, mp.ptr
        slot = [a, mp, mp.mem, mp.ptr, stream, 0, 0, 0]
        del a, mp
        slot[5], slot[6], slot[7] = _refcount(slot[0]), _refcount(slot[1]), _refcount(slot[2])
        ring = self._ring
        if len(ring) < RESULT_RING:
            ring.append(slot)
        else:                                 # every kept one is held: the next look's place
            ring[self._next] = slot
            self._next = self._next + 1 if self._next + 1 < len(ring) else 0
        return slot[0], slot[3]


def result_maker(v: Any, n: int, dtype: np.dtype, kept: ResultMaker | None = None) -> ResultMaker | None:
    """The :class:`ResultMaker` of new results like ``v`` (a CuPy array: on its device): ``kept``, the maker of the
    earlier results, where it makes them on that device (the results it keeps outlive any one x), else a new one;
    None for other kinds and for ``n == 0``."""
    if _library(v) != "cupy" or n <= 0:
        return None
    dev = v.device.id
    return kept if kept is not None and kept.device == dev else ResultMaker(sys.modules["cupy"], dev, n, dtype)


def column(V: Any, j: int) -> tuple[Any, bool]:
    """Column ``j`` of a 2-D GPU array ``V`` (CuPy, PyTorch) as a contiguous vector of its library, and whether
    it is a view of ``V`` (a column-major ``V``) rather than a copy."""
    c = V[:, j]
    lib = _library(V)
    if lib == "cupy":
        if c.flags.c_contiguous:
            return c, True
        return sys.modules["cupy"].ascontiguousarray(c), False
    if lib == "torch":
        return (c, True) if c.is_contiguous() else (c.contiguous(), False)
    raise TypeError(f"A block of vectors on the GPU must be a CuPy array or a PyTorch tensor; got "
                    f"{type(V).__module__}.{type(V).__name__} (pass its columns one at a time).")


def empty_block_like(V: Any, m: int, k: int, dtype: np.dtype) -> Any:
    """An empty column-major ``m`` x ``k`` array of ``dtype``, of ``V``'s library and on its device (CuPy,
    PyTorch): each column a contiguous vector that a product writes in place."""
    lib = _library(V)
    if lib == "cupy":
        cp = sys.modules["cupy"]
        with cp.cuda.Device(V.device.id):
            return cp.empty((m, k), dtype=dtype, order="F")
    if lib == "torch":
        torch = sys.modules["torch"]
        return torch.empty((k, m), dtype=getattr(torch, dtype.name), device=V.device).T
    raise TypeError(f"A block of vectors on the GPU must be a CuPy array or a PyTorch tensor; got "
                    f"{type(V).__module__}.{type(V).__name__}.")


def is_contiguous(v: Any) -> bool:
    """Whether a CuPy or PyTorch vector is contiguous (True for other kinds: their interface says)."""
    flags = getattr(v, "flags", None)
    if flags is not None and hasattr(flags, "c_contiguous"):
        return bool(flags.c_contiguous)
    test = getattr(v, "is_contiguous", None)
    return bool(test()) if callable(test) else True


def cast_vector(v: Any, dtype: np.dtype) -> Any:
    """``v`` (CuPy, PyTorch) as a contiguous vector of ``dtype`` made by its own library, on its device."""
    lib = _library(v)
    if lib == "cupy":
        return sys.modules["cupy"].ascontiguousarray(v, dtype=dtype)
    if lib == "torch":
        torch = sys.modules["torch"]
        return v.to(getattr(torch, dtype.name)).contiguous()
    raise TypeError(f"pyspmv casts GPU vectors of CuPy and PyTorch only; pass a {dtype} vector.")


def dtype_of(v: Any) -> np.dtype | None:
    """The NumPy dtype of a GPU array (CuPy's, PyTorch's), or None where it has none NumPy knows."""
    dt = getattr(v, "dtype", None)
    try:
        return np.dtype(str(dt).removeprefix("torch.")) if dt is not None else None
    except TypeError:
        return None


class DeviceCSR(NamedTuple):
    """A CSR matrix that lives on the GPU, as pyspmv reads it in place: int32 row pointers and columns,
    values of one float type, and what owns them."""

    shape: tuple[int, int]
    nnz: int
    indptr: Any
    indices: Any
    data: Any
    dtype: np.dtype
    owner: Any

    def to_host(self) -> Any:
        """The same matrix as a scipy CSR matrix (a download: for ranking, until features are computed on
        the device)."""
        import scipy.sparse as sp

        def get(a: Any) -> np.ndarray:
            return a.get() if hasattr(a, "get") else a.cpu().numpy() if hasattr(a, "cpu") else np.asarray(a)
        return sp.csr_matrix((get(self.data), get(self.indices), get(self.indptr)), shape=self.shape)


def take(a: Any, idx: np.ndarray) -> np.ndarray:
    """``a[idx]`` on the host: the items of the GPU array ``a`` (CuPy, PyTorch) at the host indices ``idx``, gathered
    on the GPU by ``a``'s library and read back in one copy."""
    if isinstance(a, np.ndarray):           # a host array (the GPU's stand-ins in tests): indexed in place
        return a[idx]
    if _library(a) == "torch":
        torch = sys.modules["torch"]
        return a[torch.from_numpy(np.ascontiguousarray(idx, np.int64)).to(a.device)].cpu().numpy()
    cupy = sys.modules["cupy"]
    return a[cupy.asarray(idx)].get()


def is_device_matrix(A: Any) -> bool:
    """Whether ``A`` is a sparse matrix that lives on the GPU: a CuPy sparse matrix or a PyTorch sparse
    tensor on a CUDA device."""
    lib = _library(A)
    if lib == "cupyx":
        return hasattr(A, "tocsr") and hasattr(A, "nnz")
    if lib == "torch":
        torch = sys.modules["torch"]
        return isinstance(A, torch.Tensor) and A.is_cuda and A.layout != torch.strided
    return False


def device_csr(A: Any, dtype: Any, name: str = "A") -> DeviceCSR:
    """``A`` (a CuPy sparse matrix, a PyTorch sparse tensor on the GPU) as a canonical CSR on the device, of
    ``dtype`` (default ``A``'s, float32 or float64). Arrays that already fit (CuPy's CSR with summed
    duplicates) are read in place; others (another format, int64 indices, another value type) are made on
    the device by ``A``'s library, never through the host."""
    lib = _library(A)
    if lib == "cupyx":
        B = A if A.format == "csr" else A.tocsr()
        if not B.has_canonical_format:
            B = B.copy()           # sum_duplicates works in place: not on the caller's matrix
            B.sum_duplicates()
        dt = np.dtype(dtype) if dtype is not None else np.dtype(B.dtype)
        _check_dtype(dt, name)
        data = B.data if B.data.dtype == dt else B.data.astype(dt)
        indptr, indices = B.indptr, B.indices
        if indptr.dtype != np.int32:
            indptr, indices = indptr.astype(np.int32), indices.astype(np.int32)
        return DeviceCSR(tuple(B.shape), int(B.nnz), indptr, indices, data, dt, B)
    if lib == "torch":
        torch = sys.modules["torch"]
        B = A if A.layout == torch.sparse_csr else A.coalesce().to_sparse_csr() if A.layout == torch.sparse_coo \
            else A.to_sparse_csr()
        vals = B.values()
        dt = np.dtype(dtype) if dtype is not None else np.dtype(str(vals.dtype).removeprefix("torch."))
        _check_dtype(dt, name)
        tdt = getattr(torch, dt.name)
        crow, col = B.crow_indices(), B.col_indices()
        crow = crow if crow.dtype == torch.int32 else crow.to(torch.int32)
        col = col if col.dtype == torch.int32 else col.to(torch.int32)
        vals = (vals if vals.dtype == tdt else vals.to(tdt)).contiguous()
        return DeviceCSR((int(B.shape[0]), int(B.shape[1])), int(vals.shape[0]), crow.contiguous(),
                         col.contiguous(), vals, dt, B)
    raise TypeError(f"The '{name}' parameter is a {type(A).__module__}.{type(A).__name__}, not a sparse matrix "
                    "that lives on the GPU (CuPy's cupyx.scipy.sparse, a PyTorch sparse tensor).")


def _check_dtype(dt: np.dtype, name: str) -> None:
    if dt not in _TYPESTR:
        raise TypeError(f"The '{name}' parameter holds {dt}; pyspmv computes in float32 or float64 (pass "
                        "dtype='float32' or 'float64').")


def address(a: Any) -> int:
    """The device address of a contiguous GPU array (CuPy, PyTorch, or any with the CUDA array interface)."""
    return int(a.__cuda_array_interface__["data"][0] or 0)


def cupy_linear_operator(shape: tuple[int, int], dtype: np.dtype, matvec: Callable[[Any], Any],
                         rmatvec: Callable[[Any], Any] | None) -> Any:
    """A ``cupyx.scipy.sparse.linalg.LinearOperator`` of ``shape`` over products on CuPy vectors (an Operator's
    ``aslinearoperator(library='cupy')``): vectors of shape (n,) or (n, 1), cast on the GPU to ``dtype`` where
    theirs differs."""
    try:
        import cupy as cp
        from cupyx.scipy.sparse.linalg import LinearOperator as CupyLinearOperator
    except ImportError as exc:
        raise ImportError(f"aslinearoperator(library='cupy') needs CuPy ({exc}); pip install cupy-cuda12x "
                          "(or the package for your CUDA).") from None

    def cast(v: Any, n: int) -> Any:
        v = v.reshape(n) if v.ndim == 2 and v.shape[1] == 1 else v
        return cp.ascontiguousarray(v, dtype=dtype)

    def rmv(v: Any) -> Any:
        return rmatvec(cast(v, shape[0]))     # type: ignore[misc]  (given where the adjoint is)

    return CupyLinearOperator(shape, matvec=lambda v: matvec(cast(v, shape[1])),
                              rmatvec=rmv if rmatvec is not None else None, dtype=dtype)
