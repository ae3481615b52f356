"""``pyspmv features``: every feature of a matrix."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse

from ..matrices.features import features
from .common import matrix_of, print_json


def run(args: argparse.Namespace) -> int:
    A = matrix_of(args)
    f = features(A)
    if args.json:
        print_json({"matrix": A.name, **f})
    else:
        print(f"# {A!r}")
        width = max(len(k) for k in f)
        for k, v in f.items():
            print(f"{k:<{width}}  {v:.6g}")
    return 0
