"""The ``pyspmv`` command (also ``python -m pyspmv``): info, configs, features, bench, collect, calibrate, train,
train-default, export, rank, clib. The grammar is :mod:`pyspmv.cli.parser`'s; each command runs in the module of its
name (``train-default``: ``train_default``), imported only when it runs. Warnings reach the user as one line each,
``pyspmv: warning: ...`` (``pyspmv: note: ...`` for a model measured on another machine), for every command."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import importlib
import os
import sys
import warnings
from collections.abc import Sequence
from typing import Any, TextIO

from ..devices.benchmark import NoisyTimingWarning
from ..devices.machine import OtherMachineWarning
from ..ranking.rank import CalibratedModelWarning
from .common import USER_ERRORS
from .parser import ALIASES, MODEL_SUFFIX, TOP_DEFAULT, build_parser

__all__ = ["EXIT_BROKEN_PIPE", "MODEL_SUFFIX", "SAID", "TOP_DEFAULT", "USER_ERRORS", "main", "say_warning"]

#: Exit status after the reader of stdout went away (128 + SIGPIPE, as a shell reports a killed writer).
EXIT_BROKEN_PIPE = 141
#: Warnings every command says each time they are issued, whatever Python's warning filters (an ignore in
#: PYTHONWARNINGS, say): what they say is about the result printed (noisy timings, a model measured on another
#: machine, a calibrated model that cannot be read).
SAID = (NoisyTimingWarning, OtherMachineWarning, CalibratedModelWarning)


def say_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int,
                file: TextIO | None = None, line: str | None = None) -> None:
    """``warnings.showwarning`` while a command runs: one line on stderr, ``pyspmv: warning: ...`` (``note`` for
    :class:`OtherMachineWarning`), without the file and line it was issued at; a warning not of pyspmv's own
    names its category."""
    kind = "note" if issubclass(category, OtherMachineWarning) else "warning"
    text = " ".join(str(message).split()) or category.__name__
    if not category.__module__.startswith("pyspmv."):
        text = f"{text} ({category.__name__})"
    print(f"pyspmv: {kind}: {text}", file=sys.stderr if file is None else file, flush=True)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pyspmv`` command (and of ``python -m pyspmv``); returns the exit status.

    Errors a user can act on (bad input, missing file, no GPU, out of memory) print one line
    ``pyspmv: error: ...`` and return 2; ``--debug`` shows the traceback instead. A reader of
    stdout that goes away early (``pyspmv rank ... | head``) ends the command quietly.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    args = build_parser().parse_args(argv)
    args.argv = argv
    try:
        with warnings.catch_warnings():      # the caller's filters and showwarning again afterwards
            for category in SAID:
                warnings.simplefilter("always", category)
            warnings.showwarning = say_warning
            return _run(args)
    except BrokenPipeError:
        # Python's advice (signal docs, "Note on SIGPIPE"): point stdout at devnull so that the
        # flush at exit does not fail again.
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
        except (OSError, ValueError, AttributeError):   # stdout replaced by something without a descriptor
            pass
        return EXIT_BROKEN_PIPE
    except KeyboardInterrupt:
        if args.debug:
            raise
        print("pyspmv: interrupted", file=sys.stderr)
        return 130
    except USER_ERRORS as exc:
        if args.debug:
            raise
        msg = " ".join(str(exc).split()) or type(exc).__name__
        print(f"pyspmv: error: {msg}", file=sys.stderr)
        return 2


def _run(args: Any) -> int:
    name = ALIASES.get(args.command, args.command)
    if name != args.command:
        print(f"pyspmv: warning: `pyspmv {args.command}` is deprecated and goes in pyspmv 0.4: it is now "
              f"`pyspmv {name}`, which ran.", file=sys.stderr, flush=True)
    command = importlib.import_module(f"{__name__}.{name.replace('-', '_')}")
    status = int(command.run(args))
    sys.stdout.flush()
    return status


if __name__ == "__main__":
    sys.exit(main())
