"""The ``pyspmv`` command: features, bench, collect, calibrate, train, train-default, export, rank (also
``python -m pyspmv``)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import json
import math
import os
import shlex
import sys
import time
import warnings
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import __version__, _core
from .benchmark import benchmark
from .calibrate import BUDGET_S, DRIFT_NOTE, MAX_DRIFT, MAX_NNZ, MAX_SPREAD, TIME_LIMIT_S, BusyMachineError
from .configs import DEVICES, config
from .features import features
from .generators import GENERATORS, generate
from .machine import HOME_ENV
from .matrix import Matrix
from .mmio import load
from .train_default import MODELS as DEFAULT_KINDS

#: What `pyspmv rank` prints unless --top says otherwise.
TOP_DEFAULT = 10
#: The shipped datasets whose default models `pyspmv train-default` writes into the package.
DEFAULT_DATASETS = ("h100", "cpu")
#: The suffix `pyspmv train --out` adds to a name that has none (a save_model file, NumPy .npz).
MODEL_SUFFIX = ".pyspmv"
#: Exit status after the reader of stdout went away (128 + SIGPIPE, as a shell reports a killed writer).
EXIT_BROKEN_PIPE = 141
#: Exceptions reported as one line (and exit status 2) unless --debug asks for the traceback.
USER_ERRORS = (ValueError, TypeError, OSError, MemoryError, _core.DeviceUnavailableError, BusyMachineError)


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` shows each option's default, except where there is none to show (None, False)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


def _top(text: str) -> int | None:
    """--top's type: a positive integer, or 'all' (None: every row)."""
    if text == "all":
        return None
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer or 'all'. Got {text!r} instead.")
    return n


def _jsonable(v: Any) -> Any:
    """``v`` with every non-finite float (inf, nan) replaced by None, so that the JSON is valid."""
    if isinstance(v, float):
        return v if math.isfinite(v) else None
    if isinstance(v, dict):
        return {k: _jsonable(x) for k, x in v.items()}
    if isinstance(v, list | tuple):
        return [_jsonable(x) for x in v]
    return v


def _print_json(v: Any) -> None:
    print(json.dumps(_jsonable(v), indent=1, allow_nan=False))


def _device_name(info: dict[str, Any]) -> str | None:
    """The machine a ``device_info`` dict describes: the GPU's name, else the processor and its cores."""
    if info.get("gpu_name"):
        return str(info["gpu_name"])
    if info.get("processor"):
        cores = info.get("cpu_count")
        return f"{info['processor']} ({cores} cores)" if cores else str(info["processor"])
    return None


def _measured_on(rm: Any) -> str:
    """The machine whose timings a RankModel was trained on, from its ``meta['device_info']``."""
    name = _device_name(rm.meta.get("device_info") or {})
    return name or f"an unrecorded {rm.device} device"


def _matrix(args: argparse.Namespace) -> Matrix:
    if args.generate:
        kind, _, size = args.generate.partition(":")
        if not size.isdigit() or int(size) < 1:
            raise ValueError(f"--generate takes KIND:SIZE with SIZE a positive integer (e.g. poisson2d:300). "
                             f"Got {args.generate!r} instead.")
        return generate(kind, int(size))
    if not args.file:
        raise ValueError("give a Matrix Market FILE or --generate KIND:SIZE")
    return load(args.file)


def _device_of_configs(ids: Sequence[str] | None, given: str | None, default: str) -> str:
    """--device, else the one device of the --config ids, else ``default``."""
    if given is not None:
        return given
    devices = sorted({config(c).device for c in ids or ()})
    if len(devices) > 1:
        raise ValueError(f"--config ids of several devices ({', '.join(devices)}); give ids of one device.")
    return devices[0] if devices else default


@contextmanager
def _step(what: str, quiet: bool) -> Iterator[None]:
    """A line on stderr before a long step and its duration after it."""
    t0 = time.perf_counter()
    if not quiet:
        print(f"pyspmv: {what} ...", file=sys.stderr, flush=True)
    yield
    if not quiet:
        print(f"pyspmv: {what}: done in {time.perf_counter() - t0:.1f} s", file=sys.stderr, flush=True)


def _add_matrix_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?", help="Matrix Market file (.mtx or .mtx.gz)")
    p.add_argument("--generate", metavar="KIND:SIZE",
                   help=f"use a generated matrix instead of FILE; KIND is one of {', '.join(GENERATORS)}")


def _cmd_features(args: argparse.Namespace) -> int:
    A = _matrix(args)
    f = features(A)
    if args.json:
        _print_json({"matrix": A.name, **f})
    else:
        print(f"# {A!r}")
        width = max(len(k) for k in f)
        for k, v in f.items():
            print(f"{k:<{width}}  {v:.6g}")
    return 0


def _cmd_bench(args: argparse.Namespace) -> int:
    A = _matrix(args)
    device = _device_of_configs(args.config, args.device, "cpu")
    from .benchmark import NoisyTimingWarning
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
    where = _device_name(df.attrs["device_info"]) or device
    print(f"# {A!r} on {where} ({args.dtype}); fastest first")
    cols = ["config", "median_ms", "q25_ms", "q75_ms", "repeats", "convert_ms"]
    print(ok[cols].to_string(index=False, float_format=lambda v: f"{v:.4f}"))
    rest = df[df.status != "ok"]
    for _, r in rest.iterrows():
        print(f"{r.config}: {r.status}: {r.note}")
    return 0


def _model_out(out: str) -> Path:
    """--out of `pyspmv train`: a save_model file; MODEL_SUFFIX is added to a name without a suffix."""
    path = Path(out)
    if path.suffix in (".pkl", ".pickle"):
        raise ValueError(f"--out {out!r}: pyspmv writes models as save_model files (NumPy .npz, no pickle); "
                         f"name it e.g. {str(path.with_suffix(MODEL_SUFFIX))!r}.")
    return path if path.suffix else path.with_suffix(MODEL_SUFFIX)


def _cmd_train(args: argparse.Namespace) -> int:
    from . import datasets
    from .evaluate import column_for, evaluate, format_summary
    from .export import save_model
    from .models import MODELS
    from .portable import portable
    out = _model_out(args.out) if args.out else None
    dtype = None if args.dtype == "both" else args.dtype
    with _step(f"loading dataset {args.dataset} ({args.dtype})", args.quiet):
        ds = datasets.load(args.dataset, dtype=dtype)
    est = MODELS[args.model](verbose=0 if args.quiet else 1)
    conv = column_for(ds, "convert_ms")
    n = ds.groups.nunique()
    with _step(f"evaluating {args.model} on held-out matrices ({args.test_size:.0%} of {n})", args.quiet):
        r = evaluate(est, ds.X, ds.y, ds.groups, q25=ds.q25, q75=ds.q75, test_size=args.test_size,
                     random_state=args.seed, convert_ms=conv)
    print(f"# {args.model} on {args.dataset} ({args.dtype}), held-out matrices")
    print(format_summary(r.summary))
    if out is None:
        return 0
    with _step(f"fitting {args.model} on all {n} matrices", args.quiet):
        est.fit(ds.X, ds.y, groups=ds.groups, convert_ms=conv)
    devices = sorted(set(ds.table["device"]))
    rm = portable(est, devices[0] if len(devices) == 1 else None)
    info = ds.metadata.get("device_info") or {}
    rm.meta.update({"dataset": str(args.dataset), "n_matrices": int(n), "n_rows": len(ds.X),
                    "device_info": info, "command": shlex.join(["pyspmv", *args.argv])})
    path = save_model(rm, out)
    print(f"# fitted on every matrix, saved to {path} (read it with pyspmv.load_model or --model)")
    return 0


def _cmd_train_default(args: argparse.Namespace) -> int:
    from .export import save_model
    from .train_default import train
    if args.out is None and args.dataset not in DEFAULT_DATASETS:
        raise ValueError(f"--out is required for the dataset folder {args.dataset!r}; without it only "
                         f"{' and '.join(DEFAULT_DATASETS)} write the shipped defaults.")
    out = Path(args.out) if args.out else Path(__file__).resolve().parent / "data" / f"default_{args.dataset}.pyspmv"
    rm = train(args.dataset, args.model, args.seed, extra=args.extra or (), argv=args.argv,
               verbose=0 if args.quiet else 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_model(rm, out)
    n = {d: int((t.group >= 0).sum()) for d, t in rm.tables.items()}
    print(f"{out}: {rm.source} on {rm.meta['n_matrices']} matrices ({rm.meta['n_rows']} rows), device {rm.device}, "
          f"ranks {n}", file=sys.stderr)
    return 0


def _cmd_collect(args: argparse.Namespace) -> int:
    from .datasets import collect, folder_corpus, standard_corpus
    device = _device_of_configs(args.config, args.device, "cpu")
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


def _cmd_rank(args: argparse.Namespace) -> int:
    from .export import load_model
    from .machine import OtherMachineWarning, calibrated_path
    from .rank import DEFAULT_FILES, CalibratedModelWarning, calibrated_model, default_model, rank
    A = _matrix(args)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", OtherMachineWarning)
        warnings.simplefilter("always", CalibratedModelWarning)
        if args.model:
            rm, label = load_model(args.model), args.model
        else:
            device = args.device or "cuda"
            rm = calibrated_model(device)
            label = f"calibrated for this machine ({calibrated_path(device)})"
            if rm is None or args.dtype not in rm.tables:
                rm, label = default_model(device), f"shipped default for {device} ({DEFAULT_FILES[device]})"
        device = args.device or rm.device
        r = rank(A, rm, device=device, dtype=args.dtype, n_calls=args.n_calls, deterministic=args.deterministic)
    for w in caught:
        if issubclass(w.category, OtherMachineWarning):
            print(f"pyspmv: note: {w.message}", file=sys.stderr)
        elif issubclass(w.category, CalibratedModelWarning):
            print(f"pyspmv: warning: {w.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    shown = r if args.top is None else r[:args.top]
    unit = "predicted_us" if rm.score == "ms" else "score"
    scale = 1e3 if rm.score == "ms" else 1.0
    if args.json:
        _print_json([{"rank": i, "config": c, "predicted_ms" if rm.score == "ms" else "score": v}
                     for i, (c, v) in enumerate(shown, 1)])
        return 0
    calls = (f"conversion amortised over {args.n_calls} calls" if args.n_calls
             else "conversion not counted (--n-calls)")
    print(f"# matrix {A.name} ({A.nrows} x {A.ncols}, {A.nnz} entries); model: {label}; measured on "
          f"{_measured_on(rm)}; dtype {args.dtype}; {calls}")
    width = max([len(c) for c, _ in shown] + [len("config")])
    print(f"{'rank':>4}  {'config':<{width}}  {unit:>12}")
    for i, (c, v) in enumerate(shown, 1):
        print(f"{i:>4}  {c:<{width}}  {v * scale:>12.3f}" if math.isfinite(v) else
              f"{i:>4}  {c:<{width}}  {'n/a':>12}")
    more = f"; --top all shows all {len(r)}" if len(shown) < len(r) else ""
    print(f"# {len(shown)} of {len(r)} configurations, fastest predicted first{more}"
          + ("; n/a: cannot serve this matrix" if any(not math.isfinite(v) for _, v in shown) else ""))
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from .calibrate import calibrate
    c = calibrate(args.device, time_limit_s=args.time_limit, budget_s=args.budget, max_nnz=args.max_nnz,
                  dtypes=tuple(args.dtypes), seed=args.seed, max_spread=args.max_spread, max_drift=args.max_drift,
                  kind=args.kind, model=args.model, dataset=args.dataset, out=args.out, restart=args.restart,
                  progress=not args.quiet, folder=args.folder, measure=not args.no_measure)
    fp = c.model.meta["fingerprint"]
    print(f"# calibrated {args.device} on {_device_name(c.model.meta['device_info']) or args.device}, "
          f"{fp.get('threads')} thread(s): {len(c.matrices)} matrices measured ({c.new} this run, measurements in "
          f"{c.folder}), {c.wall_s:.0f} s")
    if len(c.remeasured):
        worst = c.remeasured.sort_values("before", ascending=False).head(3)
        some = ", ".join(f"{r.matrix} {r.config} ({r.dtype}) {r.before:.2g}->{r.after:.2g}" for r in worst.itertuples())
        print(f"# re-measured {len(c.remeasured)} configuration(s) whose q75/q25 was above {args.max_spread:g} "
              f"(a busy machine): {some}{' ...' if len(c.remeasured) > 3 else ''}")
    else:
        print(f"# re-measured nothing: every q75/q25 was at most {args.max_spread:g}")
    rep = c.repeat
    if rep and rep.get("drift") is not None:
        print(f"# {rep['matrices']} matrices timed again after measuring: timings moved by a median "
              f"{rep['drift']:.1%}, and the first timing's fastest configurations, timed again, were "
              f"{rep['best_again']:.3f} from the best")
        if rep["drift"] > DRIFT_NOTE:
            print(f"# note: this machine's timings drift by more than {DRIFT_NOTE:.0%} within minutes; rankings "
                  "cannot be judged finer than that here (a quieter machine, or pinned threads, measure better)")
    elif not args.no_measure:
        why = "no time was left for it" if c.new else "this run measured nothing new"
        print(f"# nothing timed again after measuring: {why}")
    print("# cross-validated on the measured matrices (grouped by matrix): picks within 5 % of the best, "
          "beyond 20 %, geomean t_pick/t_best")
    for name, r in c.cv.iterrows():
        mark = "  <- chosen" if name == c.choice else ""
        print(f"{name:<16} {r['within<5%']:6.1%} {r['within>20%']:6.1%} {r['geomean_ratio']:7.3f}{mark}")
    for name in c.cv.attrs.get("skipped", []):
        print(f"{name:<16} skipped: its fitting would have ended past --time-limit")
    print(f"# saved {c.path} (pyspmv rank and pyspmv.rank() use it on this machine)")
    return 0


def _cmd_export(args: argparse.Namespace) -> int:
    from .export import export_c, load_model, save_model
    from .rank import default_model
    model = default_model(args.default) if args.default else load_model(args.model)
    if args.out.endswith(".h"):
        path = export_c(model, args.out, name=args.name, dtype=args.dtype)
    else:
        path = save_model(model, args.out)
    print(f"# wrote {path}")
    return 0


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pyspmv", formatter_class=_Help,
                                     description="Which sparse matrix-vector configuration is fastest for this "
                                                 "matrix on this device? Features, timings, models, rankings.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".", formatter_class=_Help)

    p = command("features", "print every feature of a matrix")
    _add_matrix_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_features)

    p = command("bench", "time SpMV with every configuration of a device (or --config ...)")
    _add_matrix_args(p)
    p.add_argument("--config", action="append", help="configuration id; repeatable (default: all of --device)")
    p.add_argument("--device", choices=DEVICES, help="default: the device of the --config ids, else cpu")
    p.add_argument("--dtype", default="float64", choices=["float32", "float64"], help="value type")
    p.add_argument("--repeats", type=int, default=200, help="timed runs per configuration, at most")
    p.add_argument("--budget", type=float, default=1.0,
                   help="seconds of timed runs per configuration; fewer than --repeats runs once it is spent")
    p.add_argument("--out", help="write the table as CSV")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_bench)

    p = command("train", "evaluate a model on held-out matrices of a dataset, then fit and save it")
    p.add_argument("dataset", help="dataset name (h100, cpu) or folder")
    p.add_argument("--model", default="boosted", choices=DEFAULT_KINDS, help="model kind")
    p.add_argument("--dtype", default="float64", choices=["float32", "float64", "both"], help="value type(s)")
    p.add_argument("--test-size", type=float, default=0.25, help="fraction of matrices held out")
    p.add_argument("--seed", type=int, default=0, help="seed of the train/test split")
    p.add_argument("--out", help=f"fit on every matrix and save the model here (pyspmv.save_model's format; "
                                 f"{MODEL_SUFFIX} is added to a name without a suffix)")
    p.add_argument("--quiet", action="store_true", help="no step lines on stderr")
    p.set_defaults(func=_cmd_train)

    p = command("train-default", "train a device's default ranking model and write it into the package")
    p.add_argument("--dataset", default="h100", help="shipped dataset name (h100, cpu) or a dataset folder")
    p.add_argument("--extra", action="append", metavar="DATASET",
                   help="a further dataset of the same device whose new matrices join the training; repeatable")
    p.add_argument("--model", default="forest", choices=DEFAULT_KINDS, help="model kind")
    p.add_argument("--seed", type=int, default=0, help="seed of the model")
    p.add_argument("--out", help="model file (default: pyspmv/data/default_<dataset>.pyspmv for h100 and cpu)")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")
    p.set_defaults(func=_cmd_train_default)

    p = command("collect", "measure a dataset (features, every configuration x dtype), resumably")
    p.add_argument("--corpus", action="append", metavar="standard|FOLDER",
                   help="the generated standard corpus or a Matrix Market folder with MANIFEST.csv; repeatable "
                        "(default: standard)")
    p.add_argument("--real", metavar="FOLDER", help="add scaled-up versions of this folder's matrices to standard")
    p.add_argument("--max-nnz", type=float, default=1e8, help="skip matrices with more stored entries")
    p.add_argument("--min-nnz", type=float, default=0, help="skip matrices with fewer stored entries")
    p.add_argument("--limit", type=int, help="only the N smallest matrices")
    p.add_argument("--seed", type=int, default=0, help="seed of the standard corpus")
    p.add_argument("--out", required=True, help="dataset folder (resumes what is there)")
    p.add_argument("--device", choices=DEVICES, help="default: the device of the --config ids, else cpu")
    p.add_argument("--dtypes", nargs="+", default=["float32", "float64"], choices=["float32", "float64"],
                   help="value types")
    p.add_argument("--config", action="append", help="configuration id; repeatable (default: all of --device)")
    p.add_argument("--repeats", type=int, default=200, help="timed runs per configuration, at most")
    p.add_argument("--warmup", type=int, default=10, help="untimed runs first")
    p.add_argument("--budget", type=float, default=0.25, help="seconds of timed runs per configuration")
    p.add_argument("--scheduler", metavar="ADDRESS", help="spread matrices over this Dask scheduler's workers")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_collect)

    p = command("calibrate", "measure this machine on a few generated matrices and adapt the model to it")
    p.add_argument("--device", default="cpu", choices=DEVICES, help="whose configurations")
    p.add_argument("--time-limit", type=float, default=TIME_LIMIT_S,
                   help="seconds in all, adapting the model included")
    p.add_argument("--budget", type=float, default=BUDGET_S, help="seconds of timed runs per configuration")
    p.add_argument("--max-nnz", type=float, default=MAX_NNZ, help="largest candidate matrix (stored entries)")
    p.add_argument("--dtypes", nargs="+", default=["float32", "float64"], choices=["float32", "float64"],
                   help="value types")
    p.add_argument("--max-spread", type=float, default=MAX_SPREAD,
                   help="re-measure a configuration whose q75/q25 is above this")
    p.add_argument("--max-drift", type=float, default=MAX_DRIFT,
                   help="save no model when matrices timed again moved by a median of more than this (0.5: 50 %%; "
                        "a busy machine); inf accepts any")
    p.add_argument("--kind", default="forest", help="model kind of the retrained candidates")
    p.add_argument("--model", help="model file to adapt (default: the shipped default of --device)")
    p.add_argument("--dataset", help="dataset the model was trained on (default: the one it records)")
    p.add_argument("--seed", type=int, default=0, help="seed of the candidate matrices")
    p.add_argument("--out", help=f"where to save the calibrated model (default: ${HOME_ENV}/calibrated_DEVICE.pyspmv, "
                                 "where rank looks)")
    p.add_argument("--restart", action="store_true", help="discard earlier measurements of this machine first")
    p.add_argument("--folder", help=f"the measurements (default: ${HOME_ENV}/calibration/<this machine's fingerprint>)")
    p.add_argument("--no-measure", action="store_true",
                   help="measure nothing: adapt the model to the measurements already in --folder (after an upgrade)")
    p.add_argument("--quiet", action="store_true", help="no progress bar")
    p.set_defaults(func=_cmd_calibrate)

    p = command("rank", "rank every configuration for a matrix by a model's predicted time")
    _add_matrix_args(p)
    p.add_argument("--model", help="model file (pyspmv.save_model's, e.g. from 'pyspmv train --out'); default: "
                                   "the shipped default of --device")
    p.add_argument("--device", choices=DEVICES, help="default: the device of --model, else cuda")
    p.add_argument("--dtype", default="float64", choices=["float32", "float64"], help="value type")
    p.add_argument("--n-calls", type=int, help="amortise each configuration's conversion over N SpMV calls")
    p.add_argument("--deterministic", action="store_true", help="only run-to-run deterministic configurations")
    p.add_argument("--top", type=_top, default=TOP_DEFAULT, metavar="N|all",
                   help="print the N fastest predicted, or all")
    p.add_argument("--json", action="store_true", help="print JSON (times in ms; null where not applicable)")
    p.set_defaults(func=_cmd_rank)

    p = command("export", "export a model as a C99 header (OUT.h) or a model file")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--model", help="model file (pyspmv.save_model's, e.g. from 'pyspmv train --out')")
    g.add_argument("--default", choices=DEVICES, help="the shipped default model of this device")
    p.add_argument("--out", required=True, help="NAME.h: a C99 header; anything else: a save_model file")
    p.add_argument("--name", help="C prefix of the header's symbols (default: the file name)")
    p.add_argument("--dtype", default="float64", choices=["float32", "float64"], help="value type of the header")
    p.set_defaults(func=_cmd_export)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``pyspmv`` command (and of ``python -m pyspmv``); returns the exit status.

    Errors a user can act on (bad input, missing file, no GPU, out of memory) print one line
    ``pyspmv: error: ...`` and return 2; ``--debug`` shows the traceback instead. A reader of
    stdout that goes away early (``pyspmv rank ... | head``) ends the command quietly.
    """
    argv = list(sys.argv[1:] if argv is None else argv)
    args = _parser().parse_args(argv)
    args.argv = argv
    try:
        status = int(args.func(args))
        sys.stdout.flush()
        return status
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


if __name__ == "__main__":
    sys.exit(main())
