"""Test helpers that order a solve's threads: an event set when a patched function returns."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import threading
from typing import Any


def set_on_return(monkeypatch: Any, module: Any, name: str) -> threading.Event:
    """``module.name`` replaced by itself setting the returned event once it returns (or raises): the
    solvers' tests wait on it for the helper thread's selection."""
    done = threading.Event()
    real = getattr(module, name)

    def wrapped(*args: Any, **kwargs: Any) -> Any:
        try:
            return real(*args, **kwargs)
        finally:
            done.set()
    monkeypatch.setattr(module, name, wrapped)
    return done
