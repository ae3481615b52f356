"""The ``pyspmv`` command: info, configs, features, bench, collect, calibrate, train, train-default, export, rank
(also ``python -m pyspmv``)."""
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
from .machine import HOME_ENV, device_name, measured_on
from .matrix import Matrix
from .mmio import load
from .rank import DEFAULT_PRECISION
from .train_default import BYTES_PRIOR
from .train_default import MODELS as DEFAULT_KINDS

#: What `pyspmv rank` prints unless --top says otherwise.
TOP_DEFAULT = 10
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
    where = device_name(df.attrs["device_info"]) or device
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
    from .train_default import output_path, train
    out = output_path(args.dataset, args.out, into_package=args.into_package)
    rm = train(args.dataset, args.model, args.seed, extra=args.extra or (), argv=args.argv,
               verbose=0 if args.quiet else 1)
    out.parent.mkdir(parents=True, exist_ok=True)
    save_model(rm, out)
    n = {d: int((t.group >= 0).sum()) for d, t in rm.tables.items()}
    use = ("pyspmv rank and rank() use it from now on" if args.into_package
           else f"use it with `pyspmv rank --model {shlex.quote(str(out))}` or pyspmv.rank(A, model=...)")
    print(f"{out}: {rm.source} on {rm.meta['n_matrices']} matrices ({rm.meta['n_rows']} rows), device {rm.device}, "
          f"ranks {n}; {use}", file=sys.stderr)
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


def _rank_model(args: argparse.Namespace) -> tuple[Any, str]:
    """The model `pyspmv rank` uses and how its title names it: --model, else the model rank() would
    use for --device and --dtype (calibrated for this machine, else the shipped default)."""
    from .export import load_model
    from .machine import calibrated_path
    from .rank import DEFAULT_FILES, calibrated_model, default_model
    if args.model:
        return load_model(args.model), args.model
    device = args.device or "cuda"
    rm = calibrated_model(device)
    if rm is not None and args.dtype in rm.tables:
        return rm, f"calibrated for this machine ({calibrated_path(device)})"
    return default_model(device), f"shipped default for {device} ({DEFAULT_FILES[device]})"


def _ranked_matrices(args: argparse.Namespace) -> Iterator[tuple[str, Matrix | Exception]]:
    """(what was asked for, its Matrix or the user error reading it), for each --generate, then each FILE."""
    for spec in args.generate or ():
        kind, _, size = spec.partition(":")
        if not size.isdigit() or int(size) < 1:
            raise ValueError(f"--generate takes KIND:SIZE with SIZE a positive integer (e.g. poisson2d:300). "
                             f"Got {spec!r} instead.")
        yield spec, generate(kind, int(size))
    for f in args.files:
        try:
            yield f, load(f)
        except USER_ERRORS as exc:
            if args.debug:
                raise
            yield f, exc


def _rank_table(r: Any, rows: list, score: str) -> list[str]:
    """The text table of `pyspmv rank`: a column header, one line per row."""
    from .rank import vs_pick
    unit = "predicted_us" if score == "predicted_ms" else "score"
    scale = 1e3 if score == "predicted_ms" else 1.0
    width = max([len(x.config) for x in rows] + [len("config")])
    lines = [f"{'rank':>4}  {'config':<{width}}  {unit:>12}  {'vs_pick':>7}  mark"]
    for x in rows:
        if x.mark == "n/a":
            value, gap = "n/a", "-"
        elif x.predicted is None:
            value, gap = "-", f">+{100 * (r.precision.max_gap - 1):.0f}%"
        else:
            value, gap = f"{x.predicted * scale:.3f}", vs_pick(x.vs_pick) or "-"
        lines.append(f"{x.rank:>4}  {x.config:<{width}}  {value:>12}  {gap:>7}  {x.mark}".rstrip())
    return lines


def _cmd_rank(args: argparse.Namespace) -> int:
    from .machine import OtherMachineWarning
    from .rank import CalibratedModelWarning, rank
    if not args.files and not args.generate:
        raise ValueError("give one or more Matrix Market FILEs, or --generate KIND:SIZE")
    calls = (f"conversion amortised over {args.n_calls} calls" if args.n_calls
             else "conversion not counted (--n-calls)")
    out: list[dict[str, Any]] = []
    status = 0
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", OtherMachineWarning)
        warnings.simplefilter("always", CalibratedModelWarning)
        rm, label = _rank_model(args)
        device = args.device or rm.device
        for what, A in _ranked_matrices(args):
            if isinstance(A, Exception):
                msg = " ".join(str(A).split()) or type(A).__name__
                print(f"pyspmv: error: {what}: {msg}", file=sys.stderr)
                out.append({"file": what, "error": msg})
                status = 2
                continue
            r = rank(A, rm, device=device, dtype=args.dtype, n_calls=args.n_calls, deterministic=args.deterministic)
            rows = r.rows(args.top)
            us = r.score == "predicted_ms"
            p = r.precision
            out.append({"file": None if what in (args.generate or ()) else what, "matrix": A.name, "nrows": A.nrows,
                        "ncols": A.ncols, "nnz": A.nnz, "device": r.device, "dtype": r.dtype, "model": label,
                        "measured_on": measured_on(rm), "n_calls": args.n_calls, "order": r.order,
                        "tie_tol": None if p is None else p.tie_tol,
                        "order_only_beyond": None if p is None else p.max_gap,
                        "precision_source": None if p is None else p.source, "configurations": len(r),
                        "ranking": [{"rank": x.rank, "config": x.config,
                                     "predicted_us" if us else "score":
                                         None if x.predicted is None else x.predicted * (1e3 if us else 1.0),
                                     "vs_pick": x.vs_pick, "mark": x.mark} for x in rows]})
            if args.json:
                continue
            if sum("matrix" in o for o in out) > 1:         # a blank line between tables
                print()
            print(f"# matrix {A.name} ({A.nrows} x {A.ncols}, {A.nnz} entries); model: {label}; measured on "
                  f"{measured_on(rm)}; dtype {args.dtype}; {calls}")
            print("\n".join(_rank_table(r, rows, r.score)))
            more = f"; --top all shows all {len(r)}" if len(rows) < len(r) else ""
            print(f"# {len(rows)} of {len(r)} configurations{more}")
            print(f"# order: {r.order}")
            for note in r.notes(rows):
                print(f"# {note}")
    for w in caught:
        if issubclass(w.category, OtherMachineWarning):
            print(f"pyspmv: note: {w.message}", file=sys.stderr)
        elif issubclass(w.category, CalibratedModelWarning):
            print(f"pyspmv: warning: {w.message}", file=sys.stderr)
        else:
            warnings.warn_explicit(w.message, w.category, w.filename, w.lineno)
    if args.json:
        _print_json(out)
    return status


def _cmd_info(args: argparse.Namespace) -> int:
    from .about import about, text
    a = about()
    if args.json:
        _print_json(a)
    else:
        print(text(a))
    return 0


def _cmd_configs(args: argparse.Namespace) -> int:
    from .configs import configs
    rows = [c for d in ([args.device] if args.device else DEVICES) for c in configs(d)]
    if args.json:
        _print_json([{"id": c.id, "device": c.device, "library": c.library, "format": c.format, "kernel": c.kernel,
                      "params": dict(c.params), "deterministic": c.deterministic, "launches": c.launches}
                     for c in rows])
        return 0
    head = ("id", "device", "library", "format", "kernel", "params", "deterministic")
    cells = [(c.id, c.device, c.library, c.format, c.kernel or "-",
              " ".join(f"{k}={v}" for k, v in c.params.items()) or "-", "yes" if c.deterministic else "no")
             for c in rows]
    widths = [max(len(x[i]) for x in [head, *cells]) for i in range(len(head))]
    for x in [head, *cells]:
        print("  ".join(v.ljust(w) for v, w in zip(x, widths, strict=True)).rstrip())
    counts = ", ".join(f"{sum(c.device == d for c in rows)} {d}" for d in dict.fromkeys(c.device for c in rows))
    print(f"# {len(rows)} configurations ({counts}); ids as pyspmv.config(), bench --config and rank take them")
    return 0


def _cmd_calibrate(args: argparse.Namespace) -> int:
    from .calibrate import calibrate
    c = calibrate(args.device, time_limit_s=args.time_limit, budget_s=args.budget, max_nnz=args.max_nnz,
                  dtypes=tuple(args.dtypes), seed=args.seed, max_spread=args.max_spread, max_drift=args.max_drift,
                  kind=args.kind, model=args.model, dataset=args.dataset, out=args.out, restart=args.restart,
                  progress=not args.quiet, folder=args.folder, measure=not args.no_measure)
    fp = c.model.meta["fingerprint"]
    print(f"# calibrated {args.device} on {device_name(c.model.meta['device_info']) or args.device}, "
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

    p = command("info", "print what this installation is and uses: version, build, GPU, threads, models")
    p.description = (
        "Print the version; the build (whether the CUDA kernels were built, for which compute capabilities, "
        "OpenMP); the OpenMP threads of the CPU kernels; the GPU and driver seen, or why none is usable; the folder "
        f"calibrate and train-default write to (${HOME_ENV}); and per device the model rank() uses when given none: "
        "calibrated for this machine or the shipped default, its file and SHA-256, the machine its timings were "
        "measured on, its training data and command, and how far its ranking table's times can be read.")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=_cmd_info)

    p = command("configs", "list the configuration ids with their library, format, kernel and parameters")
    p.add_argument("--device", choices=DEVICES, help="only this device's (default: every device's)")
    p.add_argument("--json", action="store_true", help="print JSON: a list, an object per configuration")
    p.set_defaults(func=_cmd_configs)

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

    p = command("train-default", "train a device's default ranking model from a measured dataset")
    p.description = (
        "Train a device's default ranking model (a ForestModel, as the shipped ones) from a measured dataset. "
        f"Without --out it is written to ${HOME_ENV}/default_<dataset>.pyspmv (h100 and cpu; a dataset folder "
        "needs --out), never into the installed package: an --out inside it is refused. --into-package "
        "overwrites the shipped default (pyspmv/data/) instead; it is for the repository's own retraining.")
    p.add_argument("--dataset", default="h100", help="shipped dataset name (h100, cpu) or a dataset folder")
    p.add_argument("--extra", action="append", metavar="DATASET",
                   help="a further dataset of the same device whose new matrices join the training; repeatable")
    p.add_argument("--model", default="forest", choices=DEFAULT_KINDS, help="model kind")
    p.add_argument("--seed", type=int, default=0, help="seed of the model")
    p.add_argument("--out", help=f"model file (default: ${HOME_ENV}/default_<dataset>.pyspmv for h100 and cpu); "
                                 "not inside the installed package")
    p.add_argument("--into-package", action="store_true",
                   help="write the shipped default of h100 or cpu inside the package (pyspmv/data/), which rank() "
                        "then uses: for developers retraining the repository's models")
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

    p = command("rank", "rank every configuration for each matrix by a model's predicted time")
    p.description = (
        "Rank every configuration for each matrix by a model's predicted time: one table per matrix (or, with "
        "--json, one JSON list holding an object per matrix). Times are microseconds in every output "
        "(predicted_us). The order is by predicted time; a model that weighs in the bytes moved (the cuda "
        f"default: rank_bytes_pow {BYTES_PRIOR['cuda']:g}) puts of two predictions a few per cent apart the one moving fewer bytes "
        "first, so neighbours may be out of time order ('order' in the output says which). Marks: 'pick' (ranked "
        "first); 'tie': predicted within the model's measured median error of the pick ("
        f"{DEFAULT_PRECISION['cuda'].tie_tol:.1%} for the cuda default's recipe, {DEFAULT_PRECISION['cpu'].tie_tol:.1%} "
        "for cpu's; benchmarks/results/rank_table_*.md), so the model cannot tell it from the pick; 'order only': "
        f"predicted beyond {DEFAULT_PRECISION['cuda'].max_gap:g}x (cuda) or {DEFAULT_PRECISION['cpu'].max_gap:g}x "
        "(cpu) the pick's time, where the default forest's times understate the measured gaps, so no time is "
        "printed (null in JSON); 'n/a': cannot serve the matrix. vs_pick is the predicted time over the pick's. "
        "Models other than the default forest recipe get no tie or order-only marks: their error was not measured.")
    p.add_argument("files", nargs="*", metavar="FILE", help="Matrix Market files (.mtx or .mtx.gz)")
    p.add_argument("--generate", action="append", metavar="KIND:SIZE",
                   help=f"rank a generated matrix too (first); repeatable; KIND is one of {', '.join(GENERATORS)}")
    p.add_argument("--model", help="model file (pyspmv.save_model's, e.g. from 'pyspmv train --out'); default: "
                                   "the shipped default of --device")
    p.add_argument("--device", choices=DEVICES, help="default: the device of --model, else cuda")
    p.add_argument("--dtype", default="float64", choices=["float32", "float64"], help="value type")
    p.add_argument("--n-calls", type=int, help="amortise each configuration's conversion over N SpMV calls")
    p.add_argument("--deterministic", action="store_true", help="only run-to-run deterministic configurations")
    p.add_argument("--top", type=_top, default=TOP_DEFAULT, metavar="N|all",
                   help="print the first N of each ranking, or all")
    p.add_argument("--json", action="store_true",
                   help="print one JSON list, an object per matrix (its 'ranking': rank, config, predicted_us, "
                        "vs_pick, mark; predicted_us null where 'order only' or 'n/a'); a FILE that cannot be read "
                        "is an object with 'error'")
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
