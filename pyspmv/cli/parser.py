"""The grammar of the ``pyspmv`` command: every command's arguments, their defaults and help (no command is
imported to build it, so that ``pyspmv --help`` stays quick)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
from collections.abc import Callable

from .. import __version__
from ..devices.machine import HOME_ENV
from ..matrices.configs import DEVICES, LIBRARIES
from ..matrices.generators import GENERATORS
from ..matrices.matrix import DTYPES
from ..ranking.rank import DEFAULT_PRECISION
from ..ranking.targets import TARGET_DEVICE, TARGETS
from ..training.defaults import BUDGET_S, BYTES_PRIOR, MAX_DRIFT, MAX_NNZ, MAX_SPREAD, TIME_LIMIT_S
from ..training.defaults import MODELS as DEFAULT_KINDS

#: What `pyspmv rank` prints unless --top says otherwise.
TOP_DEFAULT = 10
#: The suffix `pyspmv train --out` adds to a name that has none (a save_model file, NumPy .npz).
MODEL_SUFFIX = ".pyspmv"
#: Old command names that still run, with a note on stderr, and the commands they run: `pyspmv config` (0.2) is
#: `pyspmv clib` since 0.3 and goes in 0.4.
ALIASES = {"config": "clib"}


#: Adds one command to the parser: ``command(name, help)`` returns its sub-parser.
_Command = Callable[[str, str], argparse.ArgumentParser]


class _Help(argparse.ArgumentDefaultsHelpFormatter):
    """``--help`` shows each option's default, except where there is none to show (None, False)."""

    def _get_help_string(self, action: argparse.Action) -> str | None:
        if action.default is None or action.default is False:
            return action.help
        return super()._get_help_string(action)


def _positive(text: str, what: str = "a positive integer") -> int:
    try:
        n = int(text)
    except ValueError:
        n = 0
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be {what}. Got {text!r} instead.")
    return n


def top_arg(text: str) -> int | None:
    """--top's type: a positive integer, or 'all' (None: every row)."""
    return None if text == "all" else _positive(text, "a positive integer or 'all'")


def verify_arg(text: str) -> int:
    """--verify's type: a positive integer (how many of the first configurations to time)."""
    return _positive(text)


def libraries_arg(text: str) -> list[str]:
    """--library's type: one library name or a comma list of them (LIBRARIES)."""
    names = [n.strip() for n in text.split(",")]
    bad = [n for n in names if n not in LIBRARIES]
    if bad:
        raise argparse.ArgumentTypeError(f"must be one of {', '.join(LIBRARIES)}, or a comma list of them. "
                                         f"Got {text!r} instead.")
    return names


def add_matrix_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("file", nargs="?", help="Matrix Market file (.mtx or .mtx.gz)")
    p.add_argument("--generate", metavar="KIND:SIZE",
                   help=f"use a generated matrix instead of FILE; KIND is one of {', '.join(GENERATORS)}")


def _clib_args(p: argparse.ArgumentParser) -> None:
    """`pyspmv clib`'s options (pyspmv/cli/clib.py): the installed C library's flags and folders."""
    p.add_argument("--cflags", action="store_true", help="the compiler flags (-I...)")
    p.add_argument("--libs", action="store_true", help="the linker flags (-L... -Wl,-rpath,... -lspmv)")
    p.add_argument("--cuda", action="store_true", help="with --libs: libspmv_cuda too (spmv_cuda.h)")
    p.add_argument("--includedir", action="store_true", help="the folder of spmv.h")
    p.add_argument("--libdir", action="store_true", help="the folder of libspmv.so")
    p.add_argument("--pkgconfigdir", action="store_true", help="the folder of spmv.pc, for PKG_CONFIG_PATH")
    p.add_argument("--cmakedir", action="store_true",
                   help="the folder of spmvConfig.cmake, for spmv_DIR or CMAKE_PREFIX_PATH")
    p.add_argument("--json", action="store_true", help="print all of it as JSON")


def _info_command(command: _Command) -> None:
    p = command("info", "print what this installation is and uses: version, build, GPU, threads, models")
    p.description = (
        "Print the version; the build (whether the CUDA kernels were built, for which compute capabilities, "
        "OpenMP); the OpenMP threads of the CPU kernels; the GPU and driver seen, or why none is usable; the folder "
        f"calibrate and train-default write to (${HOME_ENV}); and per device the model rank() uses when given none: "
        "calibrated for this machine or the shipped default, its file and SHA-256, the machine its timings were "
        "measured on, its training data and command, and how far its ranking table's times can be read.")
    p.add_argument("--json", action="store_true", help="print JSON")


def _configs_command(command: _Command) -> None:
    p = command("configs", "list the configuration ids with their library, format, kernel and parameters")
    p.description = (
        "List the configuration ids with their device, library, format, kernel, parameters and whether every run "
        "gives the same bits; for cuSPARSE's, also the cusparseFormat_t and cusparseSpMVAlg_t each one passes to "
        "cuSPARSE (cusparse_format, cusparse_alg), as cusparse.h names them.")
    p.add_argument("--device", choices=DEVICES, help="only this device's (default: every device's)")
    p.add_argument("--json", action="store_true", help="print JSON: a list, an object per configuration")


def _features_command(command: _Command) -> None:
    p = command("features", "print every feature of a matrix")
    add_matrix_args(p)
    p.add_argument("--json", action="store_true", help="print JSON")


def _bench_command(command: _Command) -> None:
    p = command("bench", "time SpMV with every configuration of a device (or --config ...)")
    add_matrix_args(p)
    p.add_argument("--config", action="append", help="configuration id; repeatable (default: all of --device)")
    p.add_argument("--device", choices=DEVICES, help="default: the device of the --config ids, else cpu")
    p.add_argument("--dtype", default="float64", choices=DTYPES, help="value type")
    p.add_argument("--repeats", type=int, default=200, help="timed runs per configuration, at most")
    p.add_argument("--budget", type=float, default=1.0,
                   help="seconds of timed runs per configuration; fewer than --repeats runs once it is spent")
    p.add_argument("--back-to-back", type=int, default=1, metavar="K",
                   help="GPU: time runs of K products queued back to back, per product, as a solver runs them "
                        "(default 1: each product between its own events)")
    p.add_argument("--out", help="write the table as CSV")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _train_command(command: _Command) -> None:
    p = command("train", "evaluate a model on held-out matrices of a dataset, then fit and save it")
    p.add_argument("dataset", help=f"dataset name ({', '.join(TARGET_DEVICE)}) or folder")
    p.add_argument("--model", default="boosted", choices=DEFAULT_KINDS, help="model kind")
    p.add_argument("--dtype", default="float64", choices=[*DTYPES, "both"], help="value type(s)")
    p.add_argument("--test-size", type=float, default=0.25, help="fraction of matrices held out")
    p.add_argument("--seed", type=int, default=0, help="seed of the train/test split")
    p.add_argument("--out", help=f"fit on every matrix and save the model here (pyspmv.save_model's format; "
                                 f"{MODEL_SUFFIX} is added to a name without a suffix)")
    p.add_argument("--json", action="store_true",
                   help="print JSON instead: every metric of the held-out evaluation ('held_out') and the file saved")
    p.add_argument("--quiet", action="store_true", help="no step lines on stderr")


def _train_default_command(command: _Command) -> None:
    p = command("train-default", "train a device's default ranking model from a measured dataset")
    p.description = (
        "Train a device's default ranking model (a ForestModel, as the shipped ones) from a measured dataset. "
        f"Without --out it is written to ${HOME_ENV}/default_<dataset>.pyspmv ({', '.join(TARGET_DEVICE)}; a dataset folder "
        "needs --out), never into the installed package: an --out inside it is refused. --into-package "
        "overwrites the shipped default (pyspmv/data/) instead; it is for the repository's own retraining.")
    p.add_argument("--dataset", default=TARGETS["cuda"][0],
                   help=f"shipped dataset name ({', '.join(TARGET_DEVICE)}) or a dataset folder")
    p.add_argument("--extra", action="append", metavar="DATASET",
                   help="a further dataset of the same device whose new matrices join the training; repeatable")
    p.add_argument("--model", default="forest", choices=DEFAULT_KINDS, help="model kind")
    p.add_argument("--seed", type=int, default=0, help="seed of the model")
    p.add_argument("--out", help=f"model file (default: ${HOME_ENV}/default_<dataset>.pyspmv for {', '.join(TARGET_DEVICE)}); "
                                 "not inside the installed package")
    p.add_argument("--into-package", action="store_true",
                   help=f"write the shipped default of {', '.join(TARGET_DEVICE)} inside the package (pyspmv/data/), which rank() "
                        "then uses: for developers retraining the repository's models")
    p.add_argument("--quiet", action="store_true", help="no progress on stderr")


def _collect_command(command: _Command) -> None:
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
    p.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=DTYPES,
                   help="value types")
    p.add_argument("--config", action="append", help="configuration id; repeatable (default: all of --device)")
    p.add_argument("--repeats", type=int, default=200, help="timed runs per configuration, at most")
    p.add_argument("--warmup", type=int, default=10, help="untimed runs first")
    p.add_argument("--budget", type=float, default=0.25, help="seconds of timed runs per configuration")
    p.add_argument("--scheduler", metavar="ADDRESS", help="spread matrices over this Dask scheduler's workers")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _calibrate_command(command: _Command) -> None:
    p = command("calibrate", "measure this machine on a few generated matrices and adapt the model to it")
    p.add_argument("--device", default="cpu", choices=DEVICES, help="whose configurations")
    p.add_argument("--time-limit", type=float, default=TIME_LIMIT_S,
                   help="seconds in all, adapting the model included")
    p.add_argument("--budget", type=float, default=BUDGET_S, help="seconds of timed runs per configuration")
    p.add_argument("--max-nnz", type=float, default=MAX_NNZ, help="largest candidate matrix (stored entries)")
    p.add_argument("--dtypes", nargs="+", default=list(DTYPES), choices=DTYPES,
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
    p.add_argument("--matrices", metavar="DIR",
                   help="a folder of your own Matrix Market files (NAME.mtx, .mtx.gz), measured first beside the "
                        "generated ones and judged on first; a file that cannot be read is skipped, with its reason")
    p.add_argument("--only-matrices", action="store_true", help="measure only --matrices, no generated matrices")
    p.add_argument("--report", action="store_true",
                   help="measure nothing: print what the calibrated model of --device in use was judged on, and "
                        "the decision")
    p.add_argument("--quiet", action="store_true", help="no progress bar")


def _rank_command(command: _Command) -> None:
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
        "Models other than the default forest recipe get no tie or order-only marks: their error was not measured. "
        "--library cusparse ranks only what a program calling cuSPARSE itself can run (pyspmv configs shows the "
        "cusparseFormat_t and cusparseSpMVAlg_t of each); --library and --deterministic keep the order and "
        "predictions of the whole ranking, the pick is the first kept, and 'order only' still counts from the best "
        "of all the device's configurations, which a note names. --verify K times the first K configurations on "
        "the device (a GPU for cuda) and re-orders them by the measured time (measured_us), the rest after them; "
        "with --n-calls only where the expected gain over N products pays for the measuring (a note says what was "
        "done and why).")
    p.add_argument("files", nargs="*", metavar="FILE", help="Matrix Market files (.mtx or .mtx.gz)")
    p.add_argument("--generate", action="append", metavar="KIND:SIZE",
                   help=f"rank a generated matrix too (first); repeatable; KIND is one of {', '.join(GENERATORS)}")
    p.add_argument("--model", help="model file (pyspmv.save_model's, e.g. from 'pyspmv train --out'); default: "
                                   "the shipped default of --device")
    p.add_argument("--device", choices=DEVICES, help="default: the device of --model or --target, else cuda")
    p.add_argument("--target", choices=list(TARGET_DEVICE),
                   help=f"rank for this machine's shipped default ({', '.join(TARGETS['cuda'])}: GPUs; cpu); default: "
                        "the one of the GPU present (by name, else the nearest by memory bandwidth and SMs), without "
                        f"a GPU the newest ({TARGETS['cuda'][0]}); with --model, a check that it was measured there")
    p.add_argument("--dtype", default="float64", choices=DTYPES, help="value type")
    p.add_argument("--n-calls", type=int, help="amortise each configuration's conversion over N SpMV calls")
    p.add_argument("--deterministic", action="store_true", help="only run-to-run deterministic configurations")
    p.add_argument("--library", action="append", type=libraries_arg, metavar="NAME[,NAME...]",
                   help=f"only the configurations of these libraries ({', '.join(LIBRARIES)}; cpu is the cpu "
                        "device's only one); repeatable, or a comma list (default: every library)")
    p.add_argument("--verify", type=verify_arg, metavar="K",
                   help="time the first K configurations of each ranking on the device and re-order them by "
                        "measured time (rank(verify=K)); with --n-calls only where it pays")
    p.add_argument("--top", type=top_arg, default=TOP_DEFAULT, metavar="N|all",
                   help="print the first N of each ranking, or all")
    p.add_argument("--json", action="store_true",
                   help="print one JSON list, an object per matrix (its 'ranking': rank, config, predicted_us, "
                        "vs_pick, mark; predicted_us null where 'order only' or 'n/a'; 'libraries', "
                        "'deterministic' and 'best_of_all' say what --library and --deterministic left out; with "
                        "--verify, measured_us per row, null where not measured, and 'verify_note'); a FILE "
                        "that cannot be read is an object with 'error'")


def _export_command(command: _Command) -> None:
    p = command("export", "export a model as a C99 header (OUT.h) or a model file")
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--model", help="model file (pyspmv.save_model's, e.g. from 'pyspmv train --out')")
    g.add_argument("--default", choices=DEVICES, help="the shipped default model of this device")
    p.add_argument("--out", required=True, help="NAME.h: a C99 header; anything else: a save_model file")
    p.add_argument("--name", help="C prefix of the header's symbols (default: the file name)")
    p.add_argument("--dtype", default="float64", choices=DTYPES, help="value type of the header")


def _clib_command(command: _Command) -> None:
    p = command("clib", "print how a C, C++ or CUDA program builds against pyspmv's C library")
    p.description = (
        "Print how a C, C++ or CUDA program builds against the C library this installation holds (libspmv, "
        "libspmv_cuda where CUDA was built; docs/c_api.md): compiler and linker flags, as pkg-config prints them, or "
        "the folders of the headers, the libraries, the pkg-config files and the CMake package. Without options, "
        "all of it.")
    _clib_args(p)
    p = command("config", "deprecated: the old name of clib, which it runs (goes in pyspmv 0.4)")
    _clib_args(p)


#: The commands, in the order ``pyspmv --help`` lists them: one function each adds its arguments.
_COMMANDS = (_info_command, _configs_command, _features_command, _bench_command, _train_command, _train_default_command,
             _collect_command, _calibrate_command, _rank_command, _export_command, _clib_command)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pyspmv", formatter_class=_Help,
                                     description="Which sparse matrix-vector configuration is fastest for this "
                                                 "matrix on this device? Features, timings, models, rankings.")
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("--debug", action="store_true", help="show the traceback of an error")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def command(name: str, help: str) -> argparse.ArgumentParser:
        return sub.add_parser(name, help=help, description=help[0].upper() + help[1:] + ".", formatter_class=_Help)

    for add in _COMMANDS:
        add(command)
    return parser
