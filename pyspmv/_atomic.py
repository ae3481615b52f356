"""Atomic file writes: every file pyspmv writes for others to read (datasets, models, headers) goes through here."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any


def write_atomically(path: str | os.PathLike[str], write: Callable[[str], Any], suffix: str = "") -> None:
    """``write(tmp)`` to a temporary file in ``path``'s folder, flushed to the disk, then renamed to
    ``path``: a reader sees the old file or the whole new one, and a machine that stops just after
    the rename finds the file whole (a rename can reach the disk before the data). The temporary
    file (``.tmp-*`` + ``suffix``, which a writer that needs the name's ending for its format gives) is
    removed when anything fails (a full disk, Ctrl-C). The file is left readable by all (0644)."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=".tmp-", suffix=suffix, dir=folder)
    os.close(fd)
    try:
        write(tmp)
        with open(tmp, "rb") as fh:
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
