"""``pyspmv collect``: measure a dataset, resumably, on this machine or over a Dask cluster."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import json

from ..datasets import collect, folder_corpus, standard_corpus
from .common import device_of_configs


def run(args: argparse.Namespace) -> int:
    device = device_of_configs(args.config, args.device, "cpu")
    entries = []
    for c in args.corpus or ["standard"]:
        if c == "standard":
            entries += standard_corpus(max_nnz=args.max_nnz, min_nnz=args.min_nnz, seed=args.seed, real=args.real)
        else:
            entries += [e for e in folder_corpus(c) if args.min_nnz <= e.nnz <= args.max_nnz]
    entries.sort(key=lambda e: e.nnz)
    if args.limit is not None:
        entries = entries[:args.limit]
    client = None
    if args.scheduler:
        from dask.distributed import Client  # an optional dependency (pyspmv[dask])
        client = Client(args.scheduler)
    try:
        out = collect(entries, args.out, device=device, dtypes=args.dtypes, configs=args.config,
                      repeats=args.repeats, warmup=args.warmup, budget_s=args.budget, progress=not args.quiet,
                      client=client)
    finally:
        if client is not None:
            client.close()
    meta = json.loads((out / "metadata.json").read_text(encoding="utf-8"))
    print(f"# {out}: {meta['n_matrices']} matrices, {meta['n_rows']} rows, {meta['n_failed_matrices']} failed; "
          f"statuses {meta['status_counts']}")
    return 0
