"""pyspmv: which sparse matrix-vector kernel should this matrix use on this device?

Features, storage formats, timed SpMV kernels, measured datasets, and learned models of every
configuration's runtime, evaluated in C to rank the configurations for a matrix. See README.md.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from importlib.metadata import version as _dist_version

from . import _openmp, datasets  # noqa: F401 (_openmp first: OpenMP's wait policy, before the core loads it)
from ._core import DeviceUnavailableError, NotApplicableError
from .benchmark import BusyMachineWarning, NoisyTimingWarning, benchmark, device_info
from .calibrate import BusyMachineError, Calibration, calibrate
from .configs import FORMATS, Config, config, configs
from .datasets import collect
from .export import export_c, load_model, save_model
from .features import CONFIG_FEATURE_NAMES, FEATURE_NAMES, config_features, features
from .formats import FormatMatrix, convert
from .generators import generate
from .machine import OtherMachineWarning
from .matrix import Matrix
from .mmio import load
from .portable import RankModel, portable
from .rank import CalibratedModelWarning, Ranking, calibrated_model, default_model, rank
from .spmv import spmv

__version__ = _dist_version("pyspmv")  # pyproject.toml's: the version is written there only

__all__ = [
    "BusyMachineError", "BusyMachineWarning", "CONFIG_FEATURE_NAMES", "CalibratedModelWarning", "Calibration",
    "Config", "DeviceUnavailableError", "FEATURE_NAMES", "FORMATS", "FormatMatrix", "Matrix", "NoisyTimingWarning",
    "NotApplicableError", "OtherMachineWarning", "RankModel",
    "Ranking", "benchmark", "calibrate", "calibrated_model", "collect", "config", "config_features", "configs",
    "convert", "datasets", "default_model", "device_info", "export_c",
    "features", "generate", "load", "load_model", "portable", "rank", "save_model", "spmv",
]


def __getattr__(name: str) -> object:
    """``pyspmv.models``, ``pyspmv.evaluate`` and ``pyspmv.solvers`` load scikit-learn or threads, and
    ``pyspmv.plot`` matplotlib, so they are imported on first use."""
    if name in ("models", "evaluate", "solvers", "plot"):
        import importlib
        return importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
