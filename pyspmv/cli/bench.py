"""``pyspmv bench``: time SpMV with every configuration of a device."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import sys
import warnings

from ..devices.benchmark import NoisyTimingWarning, benchmark
from ..devices.machine import device_name
from .common import device_of_configs, matrix_of


def run(args: argparse.Namespace) -> int:
    A = matrix_of(args)
    device = device_of_configs(args.config, args.device, "cpu")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", NoisyTimingWarning)
        df = benchmark(A, args.config or None, device=device, dtype=args.dtype, repeats=args.repeats,
                       budget_s=args.budget, progress=not args.quiet)
    for w in caught:          # one line each, on stderr, however the caller filters warnings
        if issubclass(w.category, NoisyTimingWarning):
            print(f"pyspmv: warning: {w.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if args.out:
        df.to_csv(args.out, index=False)
    ok = df[df.status == "ok"].sort_values("median_ms")
    where = device_name(df.attrs["device_info"]) or device
    print(f"# {A!r} on {where} ({args.dtype}); fastest first")
    cols = ["config", "median_ms", "q25_ms", "q75_ms", "repeats", "convert_ms"]
    print(ok[cols].to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    rest = df[df.status != "ok"]
    for _, r in rest.iterrows():
        print(f"{r.config}: {r.status}: {r.note}")
    return 0
