"""``pyspmv train-default``: train a device's default ranking model from a measured dataset."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import shlex
import sys

from ..ranking.modelfile import save_model
from ..training import train_default as recipe  # by module: tests replace recipe.train


def run(args: argparse.Namespace) -> int:
    out = recipe.output_path(args.dataset, args.out, into_package=args.into_package)
    rm = recipe.train(args.dataset, args.model, args.seed, extra=args.extra or (), argv=args.argv,
               verbose=0 if args.quiet else 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_model(rm, out, compress=not args.into_package)   # the shipped defaults are read uncompressed
    n = {d: int((t.group >= 0).sum()) for d, t in rm.tables.items()}
    use = ("pyspmv rank and rank() use it from now on" if args.into_package
           else f"use it with `pyspmv rank --model {shlex.quote(str(out))}` or pyspmv.rank(A, model=...)")
    print(f"{out}: {rm.source} on {rm.meta['n_matrices']} matrices ({rm.meta['n_rows']} rows), device {rm.device}, "
          f"ranks {n}; {use}", file=sys.stderr)
    return 0
