"""Shared fixtures: hypothesis profile, the ../shared matrices (skipped where absent), GPU tests skipped where no
GPU is usable."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import functools
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile("default", max_examples=40, deadline=None,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("ci", parent=settings.get_profile("default"), derandomize=True, database=None)
settings.load_profile("ci" if os.environ.get("CI") else "default")


@pytest.fixture(autouse=True, scope="session")
def _pyspmv_home(tmp_path_factory):
    """An empty PYSPMV_HOME: a calibrated model of the user running the tests must not change what
    rank() returns in them (subprocesses inherit it)."""
    old = os.environ.get("PYSPMV_HOME")
    os.environ["PYSPMV_HOME"] = str(tmp_path_factory.mktemp("pyspmv-home"))
    yield
    if old is None:
        os.environ.pop("PYSPMV_HOME", None)
    else:
        os.environ["PYSPMV_HOME"] = old


# PYSPMV_MATRICES points elsewhere, e.g. at a subset carried to the GPU machine.
SHARED = Path(os.environ.get("PYSPMV_MATRICES") or Path(__file__).resolve().parents[1].parent / "shared" / "matrices")


def shared_matrix_files() -> list[Path]:
    """The real matrices of ../shared/matrices, smallest first; empty where the folder is absent."""
    if not SHARED.is_dir():
        return []
    return sorted(SHARED.glob("*.mtx.gz"), key=lambda p: p.stat().st_size)


def shared_params() -> list:
    files = shared_matrix_files()
    if not files:
        return [pytest.param(None, marks=pytest.mark.skip(reason=f"{SHARED} is absent"), id="no-shared-matrices")]
    return [pytest.param(p, id=p.name.split(".")[0]) for p in files]


def bad_files() -> list[Path]:
    d = SHARED / "bad"
    return sorted(d.glob("*.mtx")) if d.is_dir() else []


#: The reason every GPU test is skipped with where no GPU is usable: one short reason raised here, so that pytest's
#: -ra summary says it once, on one line, however many GPU tests there are (`pyspmv info` says why at length).
GPU_SKIP = "no usable GPU (see pyspmv info)"


@functools.cache
def gpu_skip_reason() -> str | None:
    """Why GPU tests cannot run here, or None."""
    from pyspmv.devices import gpu

    return gpu.unavailable_reason()


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    if "gpu" in item.keywords and gpu_skip_reason() is not None:
        pytest.skip(GPU_SKIP)
