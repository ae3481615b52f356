"""pyspmv's version, read from the installed package's metadata: pyproject.toml writes it, nothing else."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from functools import cache


@cache
def version() -> str:
    """The installed pyspmv's version (``importlib.metadata``: 30 ms, so read on first use)."""
    from importlib.metadata import version as _metadata_version
    return _metadata_version("pyspmv")
