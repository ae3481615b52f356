"""pyspmv: which sparse matrix-vector kernel should this matrix use on this device?

Features, storage formats, timed SpMV kernels, measured datasets, and learned models of every
configuration's runtime, evaluated in C to rank the configurations for a matrix. See README.md.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from typing import TYPE_CHECKING

from . import _openmp  # noqa: F401 (first: OpenMP's wait policy, before the core loads it)
from ._core import DeviceUnavailableError, NotApplicableError
from ._version import version as _version
from .devices.benchmark import BusyMachineError, BusyMachineWarning, NoisyTimingWarning, benchmark, device_info
from .devices.machine import OtherMachineWarning
from .devices.spmv import spmv
from .matrices.configs import FORMATS, Config, config, configs
from .matrices.features import CONFIG_FEATURE_NAMES, FEATURE_NAMES, config_features, features
from .matrices.formats import FormatMatrix, convert
from .matrices.matrix import Matrix
from .ranking.shipped import default_model
from .ranking.portable import portable
from .ranking.rank import CalibratedModelWarning, Ranking, calibrated_model, rank
from .ranking.rankmodel import RankModel

if TYPE_CHECKING:           # what type checkers see of the names imported on first use (_LAZY, _LAZY_MODULES)
    from . import datasets
    from . import evaluate as evaluate
    from . import models as models
    from . import plot as plot
    from . import solvers as solvers
    from .datasets.collect import collect
    from .matrices.generators import generate
    from .matrices.mmio import load
    from .operator import Operator
    from .ranking.export import export_c
    from .ranking.modelfile import load_model, save_model
    from .training.calibrate import Calibration, calibrate

#: Names imported on first use (module ``__getattr__``), by the module that defines them: they load pandas,
#: scipy.sparse, scikit-learn, threads or matplotlib, which ``import pyspmv`` does not (on the 2-core VM
#: 0.47 s before, 0.15 s after, process start included: benchmarks/results/cold_start.md).
_LAZY = {"Calibration": "training.calibrate", "calibrate": "training.calibrate", "collect": "datasets",
         "export_c": "ranking.export", "load_model": "ranking.modelfile", "save_model": "ranking.modelfile",
         "generate": "matrices.generators", "load": "matrices.mmio", "Operator": "operator"}
_LAZY_MODULES = ("datasets", "evaluate", "models", "plot", "solvers")

__all__ = [
    "CONFIG_FEATURE_NAMES",
    "FEATURE_NAMES",
    "FORMATS",
    "BusyMachineError",
    "BusyMachineWarning",
    "CalibratedModelWarning",
    "Calibration",
    "Config",
    "DeviceUnavailableError",
    "FormatMatrix",
    "Matrix",
    "NoisyTimingWarning",
    "NotApplicableError",
    "Operator",
    "OtherMachineWarning",
    "RankModel",
    "Ranking",
    "benchmark",
    "calibrate",
    "calibrated_model",
    "collect",
    "config",
    "config_features",
    "configs",
    "convert",
    "datasets",
    "default_model",
    "device_info",
    "export_c",
    "features",
    "generate",
    "load",
    "load_model",
    "portable",
    "rank",
    "save_model",
    "spmv",
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
