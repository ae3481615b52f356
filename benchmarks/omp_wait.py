"""How OpenMP's threads wait between products, and what it costs the CPU products of real matrices.

    python benchmarks/omp_wait.py ../shared/corpus --out benchmarks/results/omp_wait.md

Every CPU configuration (float64) of about 25 real matrices of FOLDER, their sizes spread evenly on a log
scale from 3,000 to 3e6 stored entries, timed by :func:`pyspmv.benchmark` (back-to-back products, as a
solver runs them) under each mode, each mode in a child process of its own (OpenMP reads its settings
once, when it is loaded):

- ``1 thread``: ``OMP_NUM_THREADS=1``, no team to wait for;
- ``default``: pyspmv's default, ``OMP_WAIT_POLICY=passive``: threads sleep at once;
- ``spin 0.1 ms``: ``GOMP_SPINCOUNT=10000``, a spin of about 0.1 ms, then sleep (libgomp);
- ``active``: ``OMP_WAIT_POLICY=active``, threads spin without end (a machine of one's own).

Below the build's thread threshold (``SPMV_OMP_MIN_WORK``, 250,000 stored slots; a build may set another)
every mode runs one thread, so the modes differ above it; ``results/omp_wait_4000.md`` was measured with
the threshold at 4,000.

The repetitions go round the modes, so that a change of the machine's other load hits every mode. The
report gives, per matrix, the fastest configuration's median time under each mode (the median over
repetitions) and its ratio to ``1 thread``.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
from _md import md_header, md_row, write_report

MODES = {"1 thread": {"OMP_NUM_THREADS": "1"}, "default": {}, "spin 0.1 ms": {"GOMP_SPINCOUNT": "10000"},
         "active": {"OMP_WAIT_POLICY": "active"}}
SIZES = (3e3, 3e6)
N_MATRICES = 28


def pick(folder: Path, count: int = N_MATRICES) -> list[Path]:
    """The real matrices whose stored entries lie nearest to ``count`` sizes spread on a log scale."""
    import scipy.io
    sized = []
    for f in sorted(folder.glob("*.mtx*")):
        try:
            sized.append((scipy.io.mminfo(f)[2], f))
        except (ValueError, OSError):
            continue
    chosen: list[Path] = []
    for target in np.geomspace(*SIZES, count):
        f = min(sized, key=lambda s: abs(np.log(s[0] / target)))[1]
        if f not in chosen:
            chosen.append(f)
    return chosen


def child(files: list[str]) -> None:
    """Every CPU configuration of each file under this process's OpenMP settings; JSON lines on stdout."""
    import warnings

    import scipy.io
    import scipy.sparse as sp

    import pyspmv
    warnings.simplefilter("ignore", pyspmv.NoisyTimingWarning)
    for f in files:
        A = sp.csr_matrix(scipy.io.mmread(f))
        df = pyspmv.benchmark(A, None, device="cpu", dtype="float64", repeats=100, budget_s=0.05, progress=False)
        ok = df[df["status"] == "ok"]
        for cfg, ms in zip(ok["config"], ok["median_ms"]):
            print(json.dumps({"matrix": Path(f).name.split(".")[0], "nnz": int(A.nnz), "config": cfg, "ms": ms}))


def run(files: list[Path], reps: int) -> list[dict]:
    rows = []
    for rep in range(reps):
        for mode, spec in MODES.items():
            env = {k: v for k, v in os.environ.items()
                   if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "GOMP_SPINCOUNT")}
            env.update(spec)
            out = subprocess.run([sys.executable, __file__, "--child", *map(str, files)], env=env,
                                 capture_output=True, text=True, check=True).stdout
            rows += [{**json.loads(line), "mode": mode, "rep": rep} for line in out.splitlines()]
            print(f"rep {rep + 1}/{reps} {mode}: load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    return rows


def report(rows: list[dict], out: Path, folder: Path) -> list[str]:
    import pandas as pd
    d = pd.DataFrame(rows)
    med = d.groupby(["matrix", "nnz", "config", "mode"])["ms"].median().unstack("mode")
    best = med.groupby(["matrix", "nnz"]).min().reset_index().sort_values("nnz")
    lines = [(f"{len(best)} real matrices of `{folder.name}`, every CPU configuration, float64, "
              f"pyspmv.benchmark (repeats 100, budget 0.05 s); {d['rep'].nunique()} repetitions going round the "
              "modes; each cell: the fastest configuration's time (ms, median over the repetitions), then its "
              "ratio to 1 thread."), ""]
    modes = [m for m in MODES if m != "1 thread"]
    lines += md_header(["matrix", "entries", "1 thread ms", *[f"{m} ms" for m in modes],
                        *[f"{m} / 1 thread" for m in modes]], "lr" + "r" * (1 + 2 * len(modes)))
    for _, r in best.iterrows():
        lines.append(md_row([r["matrix"], f"{r['nnz']:,}", f"{r['1 thread']:.4f}",
                             *[f"{r[m]:.4f}" for m in modes], *[f"{r[m] / r['1 thread']:.2f}" for m in modes]]))
    lines.append("")
    for lo, hi in ((0, 4e3), (4e3, 2.5e5), (2.5e5, np.inf)):
        band = best[(best["nnz"] >= lo) & (best["nnz"] < hi)]
        if len(band):
            said = ", ".join(f"{m} {np.exp(np.log(band[m] / band['1 thread']).mean()):.2f}x "
                             f"[{(band[m] / band['1 thread']).min():.2f}-{(band[m] / band['1 thread']).max():.2f}]"
                             for m in modes)
            lines.append(f"- {lo:,.0f} to {hi:,.0f} entries ({len(band)} matrices), geomean over 1 thread: {said}.")
    out.parent.mkdir(parents=True, exist_ok=True)
    write_report(out, "How OpenMP's threads wait, and what it costs", lines)
    d.to_csv(out.with_suffix(".csv"), index=False)
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folder", type=Path, nargs="?", help="a folder of real Matrix Market files")
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "omp_wait.md")
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--count", type=int, default=N_MATRICES, help="sizes to pick matrices at")
    ap.add_argument("--child", nargs="+", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child)
        return
    if a.folder is None:
        ap.error("give a folder of real Matrix Market files")
    print("\n".join(report(run(pick(a.folder, a.count), a.reps), a.out, a.folder)))


if __name__ == "__main__":
    main()
