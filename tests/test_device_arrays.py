"""Reading GPU arrays through their protocols (pyspmv.devices.arrays), checked without a GPU: fake producers of
the CUDA array interface, NumPy's DLPack (a CPU device, refused), and the errors that name the argument."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import contextlib

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
def test_a_page_locked_upload_is_the_same_matrix(monkeypatch):
    """A host matrix uploaded with its arrays page-locked (every size, here) multiplies as scipy does, and its
    arrays are unlocked afterwards (they lock again)."""
    import scipy.sparse as sp

    import pyspmv
    from pyspmv.devices import gpu
    from pyspmv.ranking import verify
    monkeypatch.setattr(verify, "PIN_MIN_BYTES", 0)
    real, locked = gpu.pinned, []

    @contextlib.contextmanager
    def seen(a):
        with real(a) as on:
            locked.append((a, on))
            yield on
    monkeypatch.setattr(gpu, "pinned", seen)
    A = sp.random(3000, 2000, density=0.01, format="csr", random_state=np.random.default_rng(5))
    M = pyspmv.Matrix(A)
    with pyspmv.Operator(M, "cuda", config="pyspmv/csr/vector/tpv=8/bs=256") as op:
        x = np.random.default_rng(6).uniform(-1, 1, 2000)
        ref = A @ x
        np.testing.assert_allclose(op @ x, ref, rtol=1e-12, atol=1e-12 * np.abs(ref).max())
    assert len(locked) == 3 and all(on for _, on in locked)
    for a, _ in locked:
        with real(a) as on:
            assert on is True
