"""``pyspmv bench``: time SpMV with every configuration of a device."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse

from ..devices.benchmark import benchmark
from ..devices.machine import device_name
from .common import device_of_configs, matrix_of

#: benchmark()'s columns of milliseconds and what the table calls them: microseconds, as every table pyspmv prints
#: (--out writes benchmark()'s own columns, median_ms and the others, as documented).
US_COLUMNS = {"median_ms": "median_us", "q25_ms": "q25_us", "q75_ms": "q75_us", "convert_ms": "convert_us"}


def run(args: argparse.Namespace) -> int:
    A = matrix_of(args)
    device = device_of_configs(args.config, args.device, "cpu")
    df = benchmark(A, args.config or None, device=device, dtype=args.dtype, repeats=args.repeats,
                   budget_s=args.budget, progress=not args.quiet, back_to_back=args.back_to_back)
    if args.out:
        df.to_csv(args.out, index=False)
    ok = df[df.status == "ok"].sort_values("median_ms")
    where = device_name(df.attrs["device_info"]) or device
    print(f"# {A!r} on {where} ({args.dtype}); fastest first; times in µs (median and quartiles of the timed runs, "
          "the conversion from CSR once)")
    table = ok[["config", *US_COLUMNS, "repeats"]].rename(columns=US_COLUMNS)
    for c in US_COLUMNS.values():
        table[c] = table[c] * 1e3
    table = table[["config", "median_us", "q25_us", "q75_us", "repeats", "convert_us"]]
    print(table.to_string(index=False, float_format=lambda v: f"{v:.3f}"))
    rest = df[df.status != "ok"]
    for _, r in rest.iterrows():
        print(f"{r.config}: {r.status}: {r.note}")
    return 0
