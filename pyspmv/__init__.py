"""pyspmv: which sparse matrix-vector kernel should this matrix use on this device?

Features, storage formats, timed SpMV kernels, measured datasets, and learned models of every
configuration's runtime, evaluated in C to rank the configurations for a matrix. See README.md.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from . import _openmp  # noqa: F401 (first: OpenMP's wait policy, before the core loads it)
from ._core import DeviceUnavailableError, NotApplicableError
from ._version import version as _version
from .benchmark import BusyMachineWarning, NoisyTimingWarning, benchmark, device_info
from .calibrate import BusyMachineError, Calibration, calibrate
from .configs import FORMATS, Config, config, configs
from .features import CONFIG_FEATURE_NAMES, FEATURE_NAMES, config_features, features
from .formats import FormatMatrix, convert
from .machine import OtherMachineWarning
from .matrix import Matrix
from .portable import RankModel, portable
from .rank import CalibratedModelWarning, Ranking, calibrated_model, default_model, rank
from .spmv import spmv

#: Names imported on first use (module ``__getattr__``), by the module that defines them: they load pandas,
#: scipy.sparse, scikit-learn, threads or matplotlib, which ``import pyspmv`` does not (on the 2-core VM
#: 0.47 s before, 0.15 s after, process start included: benchmarks/results/cold_start.md). The modules whose
#: names functions shadow (``benchmark``, ``calibrate``, ``features``, ``portable``, ``rank``, ``spmv``) are
#: imported above, without those libraries: importing one later would put the module where the function is.
_LAZY = {"collect": "datasets", "export_c": "export", "load_model": "modelfile", "save_model": "modelfile",
         "generate": "generators", "load": "mmio"}
_LAZY_MODULES = ("datasets", "evaluate", "models", "plot", "solvers")

__all__ = [
    "BusyMachineError", "BusyMachineWarning", "CONFIG_FEATURE_NAMES", "CalibratedModelWarning", "Calibration",
    "Config", "DeviceUnavailableError", "FEATURE_NAMES", "FORMATS", "FormatMatrix", "Matrix", "NoisyTimingWarning",
    "NotApplicableError", "OtherMachineWarning", "RankModel",
    "Ranking", "benchmark", "calibrate", "calibrated_model", "collect", "config", "config_features", "configs",
    "convert", "datasets", "default_model", "device_info", "export_c",
    "features", "generate", "load", "load_model", "portable", "rank", "save_model", "spmv",
]


def __getattr__(name: str) -> object:
    """``__version__``, the names of :data:`_LAZY` and the submodules ``datasets``, ``models``, ``evaluate``,
    ``solvers`` and ``plot``, imported on first use."""
    import importlib
    if name == "__version__":        # pyproject.toml's, the one place it is written (pyspmv._version)
        value = globals()["__version__"] = _version()
        return value
    if name in _LAZY_MODULES:
        return importlib.import_module(f"{__name__}.{name}")
    if name in _LAZY:
        value = getattr(importlib.import_module(f"{__name__}.{_LAZY[name]}"), name)
        globals()[name] = value                  # later lookups do not come here
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), "__version__", *_LAZY, *_LAZY_MODULES})
