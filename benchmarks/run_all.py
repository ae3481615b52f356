"""Rerun the standing measurements: every table of ``benchmarks/results/`` that the documentation cites as
current, each by the command that made it, one after the other.

    python benchmarks/run_all.py --list                 # what it would run, with each one's command
    python benchmarks/run_all.py --only rank_cost       # one (or several: --only a --only b)
    python benchmarks/run_all.py --quick                # the cheap ones, small, into a temporary folder
    python benchmarks/run_all.py                        # all that this machine can run: hours; the tables
                                                        # in benchmarks/results/ are overwritten
    python benchmarks/run_all.py --only calibrate -- TRUTH --calibrated M --machine ... --settings ...

For people, not CI: the full run takes hours on a quiet machine, and a timing table is only worth committing
from one. Each script writes its table with a provenance line (command, machine, date, commit:
``benchmarks/_md.py``). Those that need a GPU (``cuda``) or inputs from another machine (``inputs``: give them
after ``--`` with ``--only``) are skipped unless named. Closed experiments are not here: they are in
``studies/``, each with its own command.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))  # imported by the tests too, from elsewhere
from _internal import training_data  # noqa: E402

ROOT = HERE.parent
SHARED = ROOT.parent / "shared"


@dataclass(frozen=True)
class Bench:
    """One standing measurement: its script in ``benchmarks/``, the arguments of the committed table's run, what
    it needs beyond this checkout, and the arguments of a small run into ``{out}`` (None: no quick run)."""

    name: str
    script: str
    what: str
    args: tuple[str, ...] = ()
    quick: tuple[str, ...] | None = None
    needs: tuple[str, ...] = ()   # "cuda", "inputs", "corpus"


#: The datasets the shipped H200 default was trained on (its model file records them): its held-out tables use them.
H200_DATA = training_data("h200")

BENCHMARKS: tuple[Bench, ...] = (
    Bench("features", "features.py", "features against one single-thread CSR product (results/features.csv)",
          quick=("--matrices", "{out}/none", "--budget", "0.02", "--out", "{out}/features.csv")),
    Bench("convert", "convert.py", "CSR to each format against scipy and one product (results/convert.csv)"),
    Bench("kernels", "kernels.py", "every GPU configuration against copy bandwidth and cuSPARSE (results/kernels_*)",
          ("--large", "--matrices", "{shared}/matrices"), ("--dtypes", "float64", "--repeats", "20", "--out", "{out}"),
          needs=("cuda",)),
    Bench("kernels_floor", "kernels_floor.py",
          "large matrices: the best configuration against the copy bandwidth at the CSR floor (results/kernels_floor_*)",
          ("--corpus", "{shared}/corpus", "--scaled", "{shared}/corpus", "--real", "{shared}/corpus", "--prior",
           "datasets/h200/timings.csv.gz", "datasets/h200_scaled/timings.csv.gz",
           "datasets/h200_scaled_seed1/timings.csv.gz", "benchmarks/results/kernels_floor_nvidia_h200_2026-11-29.csv.gz",
           "benchmarks/results/kernels_floor_nvidia_h200_2026-11-30-0751.csv.gz", "--no-families"),
          ("--real", "{shared}/corpus", "--limit", "1", "--dtypes", "float64", "--repeats", "20", "--out", "{out}"),
          needs=("cuda", "corpus")),
    Bench("dataset_overview", "dataset_overview.py", "which family wins by matrix size (results/dataset_*)",
          quick=("cpu", "--out", "{out}")),
    Bench("collect_speed", "collect_speed.py", "matrices per device minute of the collection",
          ("{shared}/corpus", "--out", "benchmarks/results/collect_speed.csv"),
          ("{shared}/corpus", "--limit", "2", "--device", "cpu", "--repeats", "20", "--out", "{out}/collect_speed.csv"),
          needs=("cuda", "corpus")),
    Bench("operator_gpu", "operator_gpu.py", "Operator on CuPy vectors against the kernel and CuPy's A @ x",
          ("--matrices", "{shared}/matrices"), ("--quick", "--out", "{out}/operator_gpu.md"), needs=("cuda",)),
    Bench("operator_build", "operator_build.py", "a GPU Operator's build in products of its pick: scipy with and "
          "without verify='auto', CuPy, beside CuPy's upload", ("--bases", "{shared}/matrices"),
          ("--quick", "--out", "{out}/operator_build.md"), needs=("cuda",)),
    Bench("operator_quality", "operator_quality.py", "a GPU Operator's pick on large real-structured matrices: exact "
          "or sampled ranking, with or without verify='auto', against the fastest timed in the same run",
          ("--bases", "{shared}/corpus"), ("--bases", "{shared}/corpus", "--limit", "1", "--out",
                                           "{out}/operator_quality.md"), needs=("cuda", "corpus")),
    Bench("collect_two_gpus", "collect_two_gpus.py", "one collection on one GPU and on two Dask workers (needs two "
          "GPUs and dask[distributed])", ("--bases", "{shared}/matrices"),
          ("--bases", "{shared}/matrices", "--small", "4", "--big", "0", "--kill-after", "5", "--work", "{out}/c2",
           "--out", "{out}/collect_two_gpus.md"), needs=("cuda",)),
    Bench("solvers_gpu", "solvers_gpu.py", "GPU solves: async against fixed cuSPARSE and CuPy's solvers",
          ("--matrices", "{shared}/corpus", "{shared}/matrices"),
          ("--matrices", "{shared}/matrices", "--limit", "2", "--repeats", "1", "--out", "{out}/solvers_gpu.md"),
          needs=("cuda",)),
    Bench("convert_gpu", "convert_gpu.py", "conversion on the GPU against the format's product and the host's",
          ("--matrices", "{shared}/matrices"), ("--min-nnz", "4e5", "--repeats", "2", "--out", "{out}/convert_gpu.md"),
          needs=("cuda",)),
    Bench("gpu_build", "gpu_build.sh", "GPU build (auto, PTX alone): time, module size, first load (docs/results/gpu.md)",
          needs=("cuda",)),
    Bench("rank_cost", "rank_cost.py", "rank() against one product, C evaluation, break-even (results/rank_cost.*)"),
    Bench("rank_table_h100", "rank_table.py", "how far the cuda default's predicted times can be read",
          ("h100", "--extra", "h100_large", "h100_scaled")),
    Bench("rank_table_h200", "rank_table.py", "how far the H200 default's predicted times can be read (its tie marks: "
          "precision.TARGET_PRECISION)", (H200_DATA[0], "--extra", *H200_DATA[1:])),
    Bench("rank_table_cpu", "rank_table.py", "how far the cpu default's predicted times can be read", ("cpu",)),
    Bench("default_quality_h100", "default_quality.py", "the cuda default kinds on held-out matrices",
          ("h100", "--models", "forest", "boosted", "--extra", "h100_large", "h100_scaled")),
    Bench("default_quality_cpu", "default_quality.py", "the cpu default kinds on held-out matrices",
          ("cpu", "--models", "forest", "boosted")),
    Bench("default_quality_h200", "default_quality.py", "the H200 default on every matrix held out once, by size band",
          (H200_DATA[0], "--extra", *H200_DATA[1:], "--cv", "5")),
    Bench("break_even_h200", "break_even.py", "the H200 default's held-out picks against cuSPARSE's CSR default, "
          "by size band (results/break_even_h200.*; reads default_quality_h200.csv)"),
    Bench("verify_auto_h200", "verify_auto.py", 'rank(verify="auto") replayed on held-out H200 matrices by size '
          "band, and the model's error by size it reads (results/verify_auto_h200.*)"),
    Bench("models", "models.py", "every model kind's held-out metrics (results/models_*)",
          ("datasets/h100", "datasets/cpu"),
          ("datasets/cpu", "--models", "linear", "--dtypes", "float64", "--out", "{out}")),
    Bench("calibrate", "calibrate.py", "pyspmv calibrate on another machine against its measured truth",
          needs=("inputs",)),
    Bench("calibrate_real", "calibrate_real.py", "three calibrations against the shipped default on real matrices "
          "they never saw, between two collections of them (results/calibrate_real.*)",
          ("benchmarks/results/calibrate_real_work", "--corpus", "{shared}/corpus", "--corpus", "{shared}/matrices"),
          ("{out}/calibrate_real_work", "--corpus", "{shared}/matrices", "--max-nnz", "3e3", "--calibrations", "1",
           "--time-limit", "20", "--budget", "0.002", "--out", "{out}/calibrate_real.md"), needs=("corpus",)),
    Bench("solvers", "solvers.py", "solver policies against a fixed cpu/csr/rows solve (results/solvers.*)",
          quick=("--limit", "2", "--repeats", "1", "--min-time", "0", "--max-products", "50", "--out",
                 "{out}/solvers"), needs=("corpus",)),
    Bench("solvers_long", "solvers.py", "the same, solves ten times longer (results/solvers_long.*)",
          ("--max-products", "5000", "--out", "benchmarks/results/solvers_long"), needs=("corpus",)),
    Bench("busy_machine", "busy_machine.py", "CPU products beside a busy process, per OpenMP wait policy",
          ("--reps", "5"), ("--reps", "1", "--out", "{out}/busy_machine.md")),
    Bench("omp_wait", "omp_wait.py", "the fastest CPU product of real matrices per OpenMP wait (results/omp_wait.*)",
          ("{shared}/corpus",), ("{shared}/matrices", "--count", "2", "--reps", "1", "--out", "{out}/omp_wait.md"),
          needs=("corpus",)),
    Bench("operator", "operator_product.py", "pyspmv.Operator's CPU product against the core's, spmv() and scipy",
          quick=("--repeats", "1", "--out", "{out}/operator.md")),
    Bench("cold_start", "cold_start.py", "import pyspmv and the first rank() of fresh processes",
          quick=("--repeats", "2", "--out", "{out}/cold_start.md")),
)


def by_name() -> dict[str, Bench]:
    return {b.name: b for b in BENCHMARKS}


def command(b: Bench, quick: bool, out: str, extra: list[str], *, shown: bool = False) -> list[str]:
    """The argv that reruns ``b`` from the repository root (``{out}`` and ``{shared}`` filled in; ``shown``: as
    the list prints it, ``python`` and ``../shared``)."""
    shared = "../shared" if shown else SHARED
    args = [a.format(out=out, shared=shared) for a in ((b.quick or ()) if quick else b.args)] + extra
    run = ["bash"] if b.script.endswith(".sh") else ["python" if shown else sys.executable]
    return [*run, str(Path("benchmarks") / b.script), *args]


def has_gpu() -> bool:
    import pyspmv

    try:
        pyspmv.device_info("cuda")
    except pyspmv.DeviceUnavailableError:
        return False
    return True


def skip_reason(b: Bench, named: bool, extra: list[str], quick: bool) -> str | None:
    if quick and b.quick is None:
        return "no quick run"
    if "inputs" in b.needs and not extra:
        return f"needs inputs from another machine: --only {b.name} -- ARGS"
    if "cuda" in b.needs and not (quick and b.name == "collect_speed") and not named and not has_gpu():
        return "needs a GPU"
    if "corpus" in b.needs and not (SHARED / "corpus").is_dir():
        return f"needs the corpus folder {SHARED / 'corpus'}"
    return None


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    extra = argv[argv.index("--") + 1:] if "--" in argv else []
    argv = argv[:argv.index("--")] if "--" in argv else argv
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--list", action="store_true", help="list the benchmarks and their commands, run nothing")
    ap.add_argument("--only", action="append", choices=[b.name for b in BENCHMARKS], metavar="NAME",
                    help="run this one (repeatable); default: all")
    ap.add_argument("--quick", action="store_true", help="small runs into a temporary folder (the cheap ones only)")
    ap.add_argument("--dry-run", action="store_true", help="print the commands, run nothing")
    a = ap.parse_args(argv)
    chosen = [by_name()[n] for n in a.only] if a.only else list(BENCHMARKS)
    if a.list:
        for b in chosen:
            need = f" [needs {', '.join(b.needs)}]" if b.needs else ""
            print(f"{b.name:<22}{b.what}{need}\n{'':<22}{shlex.join(command(b, a.quick, '{out}', extra, shown=True))}")
        return 0
    out = tempfile.mkdtemp(prefix="pyspmv-bench-") if a.quick else "benchmarks/results"
    failed = []
    for b in chosen:
        why = skip_reason(b, bool(a.only), extra, a.quick)
        cmd = command(b, a.quick, out, extra)
        if why:
            print(f"== {b.name}: skipped ({why})", flush=True)
            continue
        print(f"== {b.name}: {shlex.join(cmd)}", flush=True)
        if a.dry_run:
            continue
        t0 = time.perf_counter()
        rc = subprocess.run(cmd, cwd=ROOT, check=False).returncode
        print(f"== {b.name}: exit {rc} after {time.perf_counter() - t0:.0f} s", flush=True)
        if rc:
            failed.append(b.name)
    if a.quick:
        print(f"quick tables in {out}")
    if failed:
        print(f"failed: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
