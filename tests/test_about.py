"""pyspmv.cli.about (`pyspmv info`): the build, the GPU seen and whether the kernels were built for it."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import pytest

from pyspmv import _core
from pyspmv.cli import about
from pyspmv.devices import gpu

H100 = {"name": "NVIDIA H100 80GB HBM3", "compute_capability": (9, 0), "sm_count": 132,
        "global_mem_bytes": 85 * 2**30, "driver_version": "13.0", "runtime_version": "13.0",
        "cusparse_version": "12.6.3"}


@pytest.fixture
def built_for(monkeypatch):
    """Pretend a CUDA build for the given gpu_arch values, and a usable GPU described by ``info``."""
    def make(arch: str, info: dict) -> None:
        monkeypatch.setattr(_core, "HAVE_NVCC", 1)
        monkeypatch.setattr(_core, "GPU_ARCH", arch)
        monkeypatch.setattr(gpu, "device_info", lambda: dict(info))
    return make


def test_the_build_records_its_architectures():
    b = about.build()
    assert b["cuda"] == bool(_core.HAVE_NVCC) and b["openmp"] == bool(_core.HAVE_OPENMP)
    assert (b["gpu_arch"] != []) == bool(_core.HAVE_NVCC)
    assert all(a.removeprefix("compute_").isdigit() for a in b["gpu_arch"])   # kernels/gpu_arch.py's forms
    assert b["compute_capabilities"] == [f"{a[:-1]}.{a[-1]}" for a in b["gpu_arch"] if a.isdigit()]
    assert b["ptx"] == [f"{a[8:-1]}.{a[-1]}" for a in b["gpu_arch"] if a.startswith("compute_")]
    assert about.threads()["omp_threads"] == _core.omp_threads() >= 1


def test_a_gpu_the_kernels_were_built_for(built_for):
    built_for("80 90", H100)
    g = about.gpu()
    assert g["usable"] and g["compute_capability"] == "9.0" and g["built_for_it"] is True
    line = next(ln for ln in about.text(about.about()).splitlines() if ln.startswith("gpu: "))
    assert line.startswith("gpu: NVIDIA H100 80GB HBM3, compute capability 9.0 (built for it), 132 SMs, 85.0 GiB")
    assert "cuSPARSE 12.6.3" in line
    assert "build: CUDA kernels for compute capability 8.0, 9.0" in about.text(about.about())


def test_a_gpu_the_kernels_were_not_built_for_says_how_to_rebuild(built_for):
    built_for("90", {**H100, "name": "NVIDIA GeForce RTX 3090", "compute_capability": (8, 6)})
    assert about.gpu()["built_for_it"] is False
    assert "NOT among the built 9.0: rebuild with `pip install . -Csetup-args=-Dgpu_arch=86`" in about.text(about.about())
    built_for("90 90-virtual", {**H100, "compute_capability": (10, 0)})   # PTX may serve it: unknown
    assert about.gpu()["built_for_it"] is None


def test_a_build_of_ptx_alone_says_the_driver_compiles_it(built_for):
    """gpu_arch auto on a machine without a GPU: PTX of 8.0, which an H100 runs once compiled at first load, and
    which `pyspmv info` says how to replace with machine code; a GPU older than the PTX runs none of it."""
    built_for("compute_80", H100)
    assert about.build()["compute_capabilities"] == [] and about.build()["ptx"] == ["8.0"]
    assert about.gpu()["built_for_it"] is None
    text = about.text(about.about())
    assert "build: CUDA kernels as PTX of compute capability 8.0 (the driver compiles it for the GPU at first load)" \
        in text
    assert "compute capability 9.0 (PTX of 8.0 compiled for it at first load; machine code for it: `pip install . " \
        "-Csetup-args=-Dgpu_arch=90`)" in text
    built_for("compute_80", {**H100, "compute_capability": (7, 5)})
    assert about.gpu()["built_for_it"] is False
    assert "NOT among the built 8.0: rebuild with `pip install . -Csetup-args=-Dgpu_arch=75`" in about.text(about.about())
    built_for("90 compute_90", H100)
    assert about.gpu()["built_for_it"] is True
    assert "build: CUDA kernels for compute capability 9.0, PTX of 9.0;" in about.text(about.about())


def test_no_gpu_gives_the_reason(monkeypatch):
    def none() -> dict:
        raise _core.DeviceUnavailableError("no NVIDIA driver found (test)")
    monkeypatch.setattr(gpu, "device_info", none)
    assert about.gpu() == {"usable": False, "reason": "no NVIDIA driver found (test)"}
