"""What the commands share: the matrix argument, JSON output, step lines, the errors reported as one line."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

from .._core import DeviceUnavailableError
from ..devices.benchmark import BusyMachineError
from ..matrices.configs import config
from ..matrices.generators import generate
from ..matrices.matrix import Matrix
from ..matrices.mmio import load

#: Exceptions reported as one line (and exit status 2) unless --debug asks for the traceback.
USER_ERRORS = (ValueError, TypeError, OSError, MemoryError, DeviceUnavailableError, BusyMachineError)


def jsonable(v: Any) -> Any:
    """``v`` with every non-finite float (inf, nan) replaced by None, so that the JSON is valid."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [jsonable(x) for x in v]
    return v


def print_json(v: Any) -> None:
    print(json.dumps(jsonable(v), indent=1, allow_nan=False))


def generated(spec: str) -> Matrix:
    """The matrix of a ``--generate KIND:SIZE`` argument."""
    kind, _, size = spec.partition(":")
    if not size.isdigit() or int(size) < 1:
        raise ValueError(f"--generate takes KIND:SIZE with SIZE a positive integer (e.g. poisson2d:300). "
                         f"Got {spec!r} instead.")
    return generate(kind, int(size))


def matrix_of(args: argparse.Namespace) -> Matrix:
    """The one matrix of a command's FILE or ``--generate`` argument."""
    if args.generate:
        return generated(args.generate)
    if not args.file:
        raise ValueError("give a Matrix Market FILE or --generate KIND:SIZE")
    return load(args.file)


def device_of_configs(ids: Sequence[str] | None, given: str | None, default: str) -> str:
    """--device, else the one device of the --config ids, else ``default``."""
    if given is not None:
        return given
    devices = sorted({config(c).device for c in ids or ()})
    if len(devices) > 1:
        raise ValueError(f"--config ids of several devices ({', '.join(devices)}); give ids of one device.")
    return devices[0] if devices else default


@contextmanager
def step(what: str, quiet: bool) -> Iterator[None]:
    """A line on stderr before a long step and its duration after it."""
    t0 = time.perf_counter()
    if not quiet:
        print(f"pyspmv: {what} ...", file=sys.stderr, flush=True)
    yield
    if not quiet:
        print(f"pyspmv: {what}: done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)
