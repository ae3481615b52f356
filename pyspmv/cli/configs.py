"""``pyspmv configs``: the configuration ids with their library, format, kernel and parameters, and for
cuSPARSE's the format and algorithm enumerators they stand for."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse

from ..matrices.configs import DEVICES, configs
from .common import print_json


def run(args: argparse.Namespace) -> int:
    rows = [c for d in ([args.device] if args.device else DEVICES) for c in configs(d)]
    if args.json:
        print_json([{"id": c.id, "device": c.device, "library": c.library, "format": c.format, "kernel": c.kernel,
                      "params": dict(c.params), "deterministic": c.deterministic, "launches": c.launches,
                      "cusparse_format": c.cusparse_format, "cusparse_alg": c.cusparse_alg}
                     for c in rows])
        return 0
    # cuSPARSE's enumerators only where a cuSPARSE configuration is listed (not with --device cpu)
    enums = any(c.cusparse_alg for c in rows)
    head = ("id", "device", "library", "format", "kernel", "params", "deterministic",
            *(("cusparse_format", "cusparse_alg") if enums else ()))
    cells = [(c.id, c.device, c.library, c.format, c.kernel or "-",
              " ".join(f"{k}={v}" for k, v in c.params.items()) or "-", "yes" if c.deterministic else "no",
              *((c.cusparse_format or "-", c.cusparse_alg or "-") if enums else ()))
             for c in rows]
    widths = [max(len(x[i]) for x in [head, *cells]) for i in range(len(head))]
    for x in [head, *cells]:
        print("  ".join(v.ljust(w) for v, w in zip(x, widths, strict=True)).rstrip())
    counts = ", ".join(f"{sum(c.device == d for c in rows)} {d}" for d in dict.fromkeys(c.device for c in rows))
    print(f"# {len(rows)} configurations ({counts}); ids as pyspmv.config(), bench --config and rank take them")
    return 0
