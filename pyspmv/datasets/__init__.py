"""Datasets: matrix generators, corpora, resumable collection of timing tables, and loading them for models."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from . import generators
from .collect import collect, consolidate
from .corpus import CorpusEntry, folder_corpus, standard_corpus, suitesparse

__all__ = ["CorpusEntry", "collect", "consolidate", "folder_corpus", "generators", "standard_corpus", "suitesparse"]
