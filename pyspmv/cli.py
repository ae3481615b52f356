"""The ``pyspmv`` command: ``pyspmv features FILE``, ``pyspmv bench FILE``."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence

from . import _core
from .benchmark import benchmark
from .features import features
from .generators import GENERATORS, generate
from .matrix import Matrix, load


def _matrix(args: argparse.Namespace) -> Matrix:
    if args.generate:
        kind, _, size = args.generate.partition(":")
        if not size.isdigit() or int(size) < 1:
            raise ValueError(f"--generate takes KIND:SIZE with SIZE a positive integer (e.g. poisson2d:300). Got {args.generate!r}.")
        return generate(kind, int(size))
    if not args.file:
        raise ValueError("give a Matrix Market FILE or --generate KIND:SIZE")
    return load(args.file)


def _add_matrix_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?", help="Matrix Market file (.mtx or .mtx.gz)")
    p.add_argument("--generate", metavar="KIND:SIZE",
                   help=f"use a generated matrix instead of FILE; KIND is one of {', '.join(GENERATORS)}")


def _cmd_features(args: argparse.Namespace) -> int:
    A = _matrix(args)
    f = features(A)
    if args.json:
        print(json.dumps({"matrix": A.name, **f}, indent=1))
    else:
        print(f"# {A!r}")
        width = max(len(k) for k in f)
        for k, v in f.items():
            print(f"{k:<{width}}  {v:.6g}")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    A = _matrix(args)
    cfgs = args.config or None
    df = benchmark(A, cfgs, device=args.device, dtype=args.dtype, repeats=args.repeats,
                   budget_s=args.budget, progress=not args.quiet)
    if args.out:
        df.to_csv(args.out, index=False)
    ok = df[df.status == "ok"].sort_values("median_ms")
    info = df.attrs["device_info"]
    where = info.get("gpu_name") or info["processor"]
    print(f"# {A!r} on {where} ({args.dtype}); fastest first")
    cols = ["config", "median_ms", "q25_ms", "q75_ms", "repeats", "convert_ms"]
    print(ok[cols].to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    rest = df[df.status != "ok"]
    for _, r in rest.iterrows():
        print(f"{r.config}: {r.status}: {r.note}")
    return 0


def _cmd_train(args: argparse.Namespace) -> int:
    from .evaluate import format_summary, train
    r = train(args.dataset, args.model, dtype=None if args.dtype == "both" else args.dtype, out=args.out,
              test_size=args.test_size, random_state=args.seed)
    print(f"# {args.model} on {args.dataset} ({args.dtype}), held-out matrices")
    print(format_summary(r.summary))
    if args.out:
        print(f"# fitted on every matrix, saved to {args.out}")
    return 0


def _cmd_collect(args: argparse.Namespace) -> int:
    from .datasets import collect, folder_corpus, standard_corpus
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
        from dask.distributed import Client
        client = Client(args.scheduler)
    try:
        out = collect(entries, args.out, device=args.device, dtypes=args.dtypes, configs=args.config,
                      repeats=args.repeats, warmup=args.warmup, budget_s=args.budget, progress=not args.quiet,
                      client=client)
    finally:
        if client is not None:
            client.close()
    meta = json.loads((out / "metadata.json").read_text(encoding="utf-8"))
    print(f"# {out}: {meta['n_matrices']} matrices, {meta['n_rows']} rows, {meta['n_failed_matrices']} failed; "
          f"statuses {meta['status_counts']}")
    return 0


def _cmd_rank(args: argparse.Namespace) -> int:
    from .export import read_model
    from .rank import rank
    A = _matrix(args)
    model = read_model(args.model) if args.model else None
    r = rank(A, model, device=args.device, dtype=args.dtype, n_calls=args.n_calls, deterministic=args.deterministic)
    if args.json:
        print(json.dumps([{"config": c, "predicted_ms": ms} for c, ms in r[:args.top]], indent=1))
        return 0
    src = args.model or f"default {args.device} model"
    print(f"# {A!r}, {args.dtype}, {src}; fastest predicted first" +
          (f"; conversion amortised over {args.n_calls} calls" if args.n_calls else ""))
    width = max((len(c) for c, _ in r[:args.top]), default=6)
    for c, ms in r[:args.top]:
        print(f"{c:<{width}}  {ms:.6g}")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from .export import export_c, read_model, save_model
    from .rank import default_model
    model = default_model(args.default) if args.default else read_model(args.model)
    if args.out.endswith(".h"):
        path = export_c(model, args.out, name=args.name, dtype=args.dtype, device=args.device)
    else:
        path = save_model(model, args.out, device=args.device)
    print(f"# wrote {path}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pyspmv`` command; returns the exit status."""
    parser = argparse.ArgumentParser(prog="pyspmv", description="Sparse matrix-vector kernels: features, benchmarks.")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("features", help="print every feature of a matrix")
    _add_matrix_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_features)
    p = sub.add_parser("bench", help="time SpMV with every configuration (or --config ...)")
    _add_matrix_args(p)
    p.add_argument("--config", action="append", help="configuration id; repeatable (default: all of --device)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    p.add_argument("--repeats", type=int, default=200)
    p.add_argument("--budget", type=float, default=1.0, help="seconds of timed runs per configuration")
    p.add_argument("--out", help="write the table as CSV")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_bench)
    p = sub.add_parser("train", help="evaluate a model on held-out matrices of a dataset, then fit and save it")
    p.add_argument("dataset", help="dataset name (h100, cpu) or folder")
    p.add_argument("--model", default="boosted", choices=["linear", "boosted", "knn", "guo", "wang", "svm", "cascade"])
    p.add_argument("--dtype", default="float64", choices=["float32", "float64", "both"])
    p.add_argument("--test-size", type=float, default=0.25, help="fraction of matrices held out")
    p.add_argument("--seed", type=int, default=0, help="seed of the train/test split")
    p.add_argument("--out", help="pickle the model fitted on every matrix here")
    p.set_defaults(func=_cmd_train)
    p = sub.add_parser("collect", help="measure a dataset (features, every configuration x dtype), resumably")
    p.add_argument("--corpus", action="append", metavar="standard|FOLDER",
                   help="the generated standard corpus or a Matrix Market folder with MANIFEST.csv; repeatable "
                        "(default: standard)")
    p.add_argument("--real", metavar="FOLDER", help="add scaled-up versions of this folder's matrices to standard")
    p.add_argument("--max-nnz", type=float, default=1e8, help="skip matrices with more stored entries")
    p.add_argument("--min-nnz", type=float, default=0, help="skip matrices with fewer stored entries")
    p.add_argument("--limit", type=int, help="only the N smallest matrices")
    p.add_argument("--seed", type=int, default=0, help="seed of the standard corpus")
    p.add_argument("--out", required=True, help="dataset folder (resumes what is there)")
    p.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    p.add_argument("--dtypes", nargs="+", default=["float32", "float64"], choices=["float32", "float64"])
    p.add_argument("--config", action="append", help="configuration id; repeatable (default: all of --device)")
    p.add_argument("--repeats", type=int, default=200)
    p.add_argument("--warmup", type=int, default=10)
    p.add_argument("--budget", type=float, default=0.25, help="seconds of timed runs per configuration")
    p.add_argument("--scheduler", metavar="ADDRESS", help="spread matrices over this Dask scheduler's workers")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_collect)
    p = sub.add_parser("rank", help="rank every configuration for a matrix by a model's predicted time")
    _add_matrix_args(p)
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    p.add_argument("--dtype", default="float64", choices=["float32", "float64"])
    p.add_argument("--model", help="model file (save_model's, or a .pkl from 'pyspmv train --out'); default: the "
                   "shipped default of --device")
    p.add_argument("--n-calls", type=int, help="amortise each configuration's conversion over N SpMV calls")
    p.add_argument("--deterministic", action="store_true", help="only run-to-run deterministic configurations")
    p.add_argument("--top", type=int, default=None, help="print only the N fastest")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_rank)
    p = sub.add_parser("export", help="export a model as a C99 header (OUT.h) or a model file")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--model", help="model file (save_model's, or a .pkl from 'pyspmv train --out')")
    g.add_argument("--default", choices=["cuda", "cpu"], help="the shipped default model of this device")
    p.add_argument("--out", required=True, help="NAME.h: a C99 header; anything else: a save_model file")
    p.add_argument("--name", help="C prefix of the header's symbols (default: the file name)")
    p.add_argument("--dtype", default="float64", choices=["float32", "float64"], help="value type of the header")
    p.add_argument("--device", choices=["cuda", "cpu"], help="for estimators: whose configurations")
    p.set_defaults(func=_cmd_export)
    args = parser.parse_args(argv)
    try:
        return int(args.func(args))
    except (ValueError, TypeError, OSError, MemoryError, _core.DeviceUnavailableError) as exc:
        print(f"pyspmv {args.command}: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
