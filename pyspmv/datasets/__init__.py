"""Datasets: matrix generators, corpora, resumable collection of timing tables, and loading them for models."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from . import generators
from .collect import collect, consolidate
from .corpus import CorpusEntry, folder_corpus, standard_corpus, suitesparse
from .load import X_COLUMNS, Dataset, available, design_rows, load

__all__ = ["X_COLUMNS", "CorpusEntry", "Dataset", "available", "collect", "consolidate", "design_rows",
           "folder_corpus", "generators", "load", "standard_corpus", "suitesparse"]
