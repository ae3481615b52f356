"""Datasets: matrix generators, corpora, resumable collection of timing tables, and loading them for models."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from . import generators
from .corpus import CorpusEntry, folder_corpus, standard_corpus, suitesparse

__all__ = ["CorpusEntry", "folder_corpus", "generators", "standard_corpus", "suitesparse"]
