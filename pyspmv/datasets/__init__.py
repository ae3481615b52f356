"""Datasets: corpora, resumable collection of timing tables, and loading them for models."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import warnings
from typing import Any

from ..matrices import generators as _generators
from .collect import DamagedPartWarning, collect, consolidate
from .corpus import CorpusEntry, folder_corpus, real_corpus, scaled_corpus, standard_corpus, suitesparse
from .load import X_COLUMNS, Dataset, available, combine, design_rows, load

__all__ = ["X_COLUMNS", "CorpusEntry", "DamagedPartWarning", "Dataset", "available", "collect", "combine", "consolidate",
           "design_rows", "folder_corpus", "load", "real_corpus", "scaled_corpus", "standard_corpus", "suitesparse"]


def __getattr__(name: str) -> Any:
    """``pyspmv.datasets.generators``, the former home of :mod:`pyspmv.matrices.generators`, with a warning."""
    if name == "generators":
        warnings.warn("pyspmv.datasets.generators is now pyspmv.matrices.generators (one module for every generator); "
                      "the old name will be removed.", DeprecationWarning, stacklevel=2)
        return _generators
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
