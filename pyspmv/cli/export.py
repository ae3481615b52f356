"""``pyspmv export``: a model as a C/C++ header or a model file."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse

from ..ranking.export import export_c
from ..ranking.modelfile import load_model, save_model
from ..ranking.rank import default_model


def run(args: argparse.Namespace) -> int:
    model = default_model(args.default) if args.default else load_model(args.model)
    if args.out.endswith(".h"):
        path = export_c(model, args.out, name=args.name, dtype=args.dtype)
    else:
        path = save_model(model, args.out)
    print(f"# wrote {path}")
    return 0
