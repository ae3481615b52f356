"""Reading GPU arrays through their protocols (pyspmv.devices.arrays), checked without a GPU: fake producers of
the CUDA array interface, NumPy's DLPack (a CPU device, refused), and the errors that name the argument."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations


import weakref
from types import SimpleNamespace

import numpy as np
import pytest

import pyspmv
from pyspmv import _core
from pyspmv.devices import arrays


class FakeCAI:
    """An object offering the CUDA array interface, as CuPy, PyTorch or Numba do (never dereferenced here)."""

    def __init__(self, n, typestr="<f8", strides=None, readonly=False, address=0x7F0000000000, **extra):
        self.__cuda_array_interface__ = {"shape": (n,), "typestr": typestr, "data": (address, readonly),
                                         "strides": strides, "version": 3, **extra}


def read(v, n=10, dtype=np.float64, writable=False):
    return arrays.device_vector(v, "x", n, np.dtype(dtype), "matvec()", 0, writable)


def test_cuda_array_interface_read():
    v = FakeCAI(10)
    d = read(v)
    assert d.address == 0x7F0000000000 and d.keep is v
    assert read(FakeCAI(10, "<f4"), dtype=np.float32).address == 0x7F0000000000
    assert read(FakeCAI(10, "=f8")).address == 0x7F0000000000           # native order, spelled so
    assert read(FakeCAI(10, strides=(8,))).address == 0x7F0000000000      # explicit contiguous strides
    assert read(FakeCAI(1, strides=(80,)), n=1).address                    # one entry: any stride
    assert arrays.is_device_array(v) and not arrays.is_device_array(np.ones(3))


@pytest.mark.parametrize("v, err, match", [
    (FakeCAI(9), ValueError, "'x'.*shape \\(9,\\).*10 entries"),
    (FakeCAI(10, "<f4"), TypeError, "'x'.*'<f4'.*float64"),
    (FakeCAI(10, "<i8"), TypeError, "'x'.*'<i8'"),
    (FakeCAI(10, ">f8"), TypeError, "'x'.*'>f8'.*big-endian"),     # issue 45 (1): was read as '<f8'
    (FakeCAI(10, "|f8"), TypeError, "'x'.*'|f8'"),
    (FakeCAI(10, strides=(16,)), ValueError, "'x'.*strides \\(16,\\)"),
    (FakeCAI(10, mask=object()), ValueError, "'x'.*mask"),
    (object(), TypeError, "'x'.*neither NumPy nor a GPU array"),
])
def test_cuda_array_interface_refused(v, err, match):
    with pytest.raises(err, match=match):
        read(v)


def test_read_only_out_refused():
    with pytest.raises(ValueError, match="read-only"):
        read(FakeCAI(10, readonly=True), writable=True)
    read(FakeCAI(10, readonly=True))                 # x may be read-only


def test_dlpack_info_reads_numpy_capsules():
    a = np.arange(12.0)
    addr, dev_type, dev_id, code, bits, lanes, shape, strides = _core.dlpack_info(a[2:].__dlpack__())
    assert addr == a.ctypes.data + 16 and (dev_type, dev_id) == (1, 0)
    assert (code, bits, lanes) == (2, 64, 1) and shape == (10,)
    assert strides in (None, (1,))
    f = np.zeros((3, 4), dtype=np.float32)[:, ::2]
    _, _, _, code, bits, _, shape, strides = _core.dlpack_info(f.__dlpack__())
    assert (code, bits, shape, strides) == (2, 32, (3, 2), (4, 2))
    with pytest.raises(TypeError, match="capsule"):
        _core.dlpack_info(object())


def test_dlpack_on_the_cpu_is_not_a_device_vector():
    class HostDLPack:                                 # DLPack on the CPU: not a GPU array
        def __init__(self):
            self.a = np.ones(10)

        def __dlpack__(self, stream=None):
            return self.a.__dlpack__()

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()

    h = HostDLPack()
    assert not arrays.is_device_array(h)
    with pytest.raises(ValueError, match="not on a CUDA device"):
        read(h)


def test_stream_argument():
    assert arrays.stream_handle(FakeCAI(3), None, "f()") == 0
    assert arrays.stream_handle(FakeCAI(3, stream=2), None, "f()") == 2     # the per-thread default stream
    assert arrays.stream_handle(FakeCAI(3), 1234, "f()") == 1234

    class CupyLikeStream:
        ptr = 77

    class TorchLikeStream:
        cuda_stream = 88

    assert arrays.stream_handle(FakeCAI(3), CupyLikeStream(), "f()") == 77
    assert arrays.stream_handle(FakeCAI(3), TorchLikeStream(), "f()") == 88
    with pytest.raises(TypeError, match="'stream'"):
        arrays.stream_handle(FakeCAI(3), "fast", "f()")
    with pytest.raises(ValueError, match="'stream'"):
        arrays.stream_handle(FakeCAI(3), -1, "f()")


def test_empty_like_needs_a_namespace_or_out():
    with pytest.raises(TypeError, match="pass 'out'"):
        arrays.empty_like(FakeCAI(3), 3, np.dtype(np.float64), "matvec()")


def test_new_vector_of_a_kind_without_a_namespace_asks_for_out():
    with pytest.raises(TypeError, match="pass 'out'"):
        arrays.new_vector(FakeCAI(3), 3, np.dtype(np.float64), "matvec()", 0)


@pytest.mark.gpu
@pytest.mark.parametrize("lib", ["cupy", "torch"])
def test_new_vector_is_the_callers_kind_on_its_device(lib):
    """op @ x's result: of x's library, on x's device, contiguous, of the type and length asked, and the address
    returned is the one its interface gives (read without it)."""
    mod = pytest.importorskip(lib)
    x = mod.ones(5, dtype=mod.float32) if lib == "cupy" else mod.ones(5, dtype=mod.float32, device="cuda")
    y, ya = arrays.new_vector(x, 7, np.dtype(np.float64), "matvec()", 0)
    assert type(y) is type(x) and tuple(y.shape) == (7,) and str(y.dtype).endswith("float64")
    assert ya == arrays.device_vector(y, "out", 7, np.dtype(np.float64), "t()", 0, writable=True).address
    assert str(y.device) == str(x.device)
    make = arrays.result_maker(x, 7, np.dtype(np.float64))
    if lib == "torch":
        assert make is None                         # a tensor's result: new_vector's path
        return
    s = mod.cuda.get_current_stream().ptr
    made = make.take(s)
    assert made is not None and type(made[0]) is type(x) and made[0].shape == (7,) and made[0].dtype == np.float64
    assert made[1] == arrays.device_vector(made[0], "out", 7, np.dtype(np.float64), "t()", 0, writable=True).address
    assert made[0].device == x.device and made[0].flags.c_contiguous
    assert make.take(s)[1] != made[1]              # a new vector while the last is held
    assert arrays.result_maker(x, 0, np.dtype(np.float64)) is None


def test_result_maker_is_for_cupy_alone():
    """Anything but a CuPy array (NumPy, a foreign interface) has no short path for a new result."""
    assert arrays.result_maker(np.ones(3), 3, np.dtype(np.float64)) is None
    assert arrays.result_maker(FakeCAI(3), 3, np.dtype(np.float64)) is None


class FakeMemory:
    """CuPy's memory object, as a kept result's pointer holds it."""


class FakePointer:
    """CuPy's MemoryPointer: an address and the memory behind it (``y.data + 0`` makes another over the same)."""

    def __init__(self, ptr, mem=None):
        self.ptr, self.mem = ptr, mem if mem is not None else FakeMemory()


class FakeArray:
    """A CuPy array as ResultMaker makes one: shape, dtype and its pointer (weak references allowed, as CuPy's
    are)."""

    def __init__(self, shape, dtype, mp):
        self.shape, self.dtype, self.data = shape, np.dtype(dtype), mp

    @property
    def ndim(self):
        return len(self.shape)


def fake_maker(n=4, dtype=np.float64, device=0):
    """A ResultMaker over a stand-in of CuPy's allocator (addresses counting up), its current device settable."""
    at = {"device": device, "next": 0x1000}

    def alloc(nbytes):
        at["next"] += 0x1000
        return FakePointer(at["next"])
    cp = SimpleNamespace(ndarray=FakeArray, cuda=SimpleNamespace(
        alloc=alloc, runtime=SimpleNamespace(getDevice=lambda: at["device"])))
    return arrays.ResultMaker(cp, device, n, np.dtype(dtype)), at


def test_result_maker_hands_out_a_dropped_result_again():
    """A result nobody holds any more is handed out again on the same stream (the same array); one still held
    never is; ``y = op @ x`` (one held while the next is made) cycles between two."""
    make, _ = fake_maker()
    y, ya = make.take(7)
    assert ya == y.data.ptr and y.shape == (4,)
    yid, del_ptr = id(y), ya
    del y
    y2, y2a = make.take(7)
    assert id(y2) == yid and y2a == del_ptr                  # dropped: the same one
    y3, y3a = make.take(7)
    assert y3 is not y2 and y3a != y2a                      # y2 held: a new one
    seen = set()
    y = y3
    for _ in range(6):
        y, a = make.take(7)                                  # y's last value still held while the next is made
        seen.add(a)
    assert len(seen) == 2
    del y, y2, y3
    assert make.take(8)[1] not in seen | {del_ptr}           # another stream: never a kept one


@pytest.mark.parametrize("hold", ["array", "view", "pointer", "pointer_copy", "memory", "weakref", "shape"])
def test_result_maker_never_hands_out_a_result_still_reachable(hold):
    """Whatever still reaches a result, its array, pointer or memory (a view, ``y.data``, ``y.data + 0``, the
    memory, a weak reference), or a result reshaped in place: that result is not handed out again."""
    make, _ = fake_maker()
    y, ya = make.take(0)
    keep = {"array": lambda: y, "view": lambda: SimpleNamespace(base=y), "pointer": lambda: y.data,
            "pointer_copy": lambda: FakePointer(y.data.ptr, y.data.mem), "memory": lambda: y.data.mem,
            "weakref": lambda: weakref.ref(y), "shape": lambda: None}[hold]()
    if hold == "shape":
        y.shape = (2, 2)
    del y
    assert make.take(0)[1] != ya
    del keep


def test_result_maker_keeps_small_results_and_a_few():
    """Past RESULT_REUSE_MAX_BYTES nothing is kept (each result new, as cupy.empty); at most RESULT_RING are
    kept, the oldest look's place taken where all are held; None on another current device."""
    n_big = arrays.RESULT_REUSE_MAX_BYTES // 8 + 1
    make, at = fake_maker(n=n_big)
    a = make.take(0)[1]
    assert make.take(0)[1] != a                             # the first one dropped, yet not kept
    make, at = fake_maker()
    results = [make.take(0) for _ in range(arrays.RESULT_RING + 2)]      # each held
    held = [r[1] for r in results]
    assert len(set(held)) == arrays.RESULT_RING + 2
    del results
    again = {make.take(0)[1] for _ in range(arrays.RESULT_RING)}
    kept = set(held[arrays.RESULT_RING:]) | set(held[2:arrays.RESULT_RING])    # the two oldest replaced
    assert again == kept                                    # dropped ones come back, each of the ring once
    at["device"] = 1
    assert make.take(0) is None
    assert make.device == 0


def test_cpu_operator_refuses_device_vectors():
    A = pyspmv.generate("poisson2d", 5).to_scipy()
    op = pyspmv.Operator(A, config="cpu/csr/rows")
    with pytest.raises(TypeError, match="may live on a GPU.*device='cuda'"):
        op @ FakeCAI(A.shape[1])
    with pytest.raises(ValueError, match="'stream'.*GPU"):
        op.matvec(np.ones(A.shape[1]), stream=0)


def test_not_a_device_matrix():
    assert not arrays.is_device_matrix(np.ones((2, 2)))
    with pytest.raises(TypeError, match="not a sparse matrix that lives on the GPU"):
        arrays.device_csr(np.ones((2, 2)), None)


def test_pinned_without_a_gpu_uses_the_array_as_it_is():
    """gpu.pinned only speeds copies up: where no GPU (or no CUDA module) is usable it yields False and the array
    is untouched."""
    from pyspmv.devices import gpu
    if gpu.unavailable_reason() is None:
        pytest.skip("a GPU is usable here: tests/test_device_arrays.py::test_pinned_pins_once")
    x = np.arange(5.0)
    with gpu.pinned(x) as on:
        assert on is False
    np.testing.assert_array_equal(x, np.arange(5.0))


@pytest.mark.gpu
def test_pinned_pins_once():
    """A host array is page-locked inside the block and unlocked after it; locking it again inside (the driver
    refuses) yields False without an error, and the outer block still unlocks it once."""
    from pyspmv.devices import gpu
    x = np.random.default_rng(0).uniform(size=1 << 20)
    with gpu.pinned(x) as on:
        assert on is True
        with gpu.pinned(x) as again:
            assert again is False
    with gpu.pinned(x) as on:              # unlocked after the first block: it locks again
        assert on is True


@pytest.mark.gpu
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_staged_upload_is_the_same_matrix(dtype):
    """A host matrix whose arrays pass 32 MB goes up through the page-locked staging buffers, slice by slice
    (kernels/matrix.cu): the matrix on the GPU multiplies as scipy's (every entry of every slice, the last one
    short), and the host arrays are neither changed nor left page-locked (they lock again)."""
    import scipy.sparse as sp

    import pyspmv
    from pyspmv.devices import gpu
    n, per_row = 600_007, 15                          # 9e6 entries: 36 or 72 MB of values, 36 MB of columns
    rng = np.random.default_rng(8)
    cols = np.sort(rng.choice(n, size=(n, per_row)), axis=1)
    keep = np.ones_like(cols, dtype=bool)
    keep[:, 1:] = cols[:, 1:] != cols[:, :-1]
    indptr = np.concatenate(([0], np.cumsum(keep.sum(axis=1)))).astype(np.int32)
    A = sp.csr_matrix((rng.uniform(-1, 1, int(indptr[-1])).astype(dtype), cols[keep].astype(np.int32), indptr),
                      shape=(n, n))
    M = pyspmv.Matrix(A)
    before = [a.copy() for a in (M.indptr, M.indices, M.data)]
    with pyspmv.Operator(M, "cuda", config="pyspmv/csr/vector/tpv=8/bs=256") as op:
        x = rng.uniform(-1, 1, n).astype(dtype)
        ref = A.astype(np.float64) @ x.astype(np.float64)
        tol = 1e-4 if dtype == np.float32 else 1e-12
        np.testing.assert_allclose(op @ x, ref, rtol=tol, atol=tol * np.abs(ref).max())
    for a, b in zip((M.indptr, M.indices, M.data), before):
        np.testing.assert_array_equal(a, b)
        with gpu.pinned(a) as on:
            assert on is True
