"""CPU products on a machine where other work runs: quiet, then beside one competing busy process, under
OpenMP's passive wait policy (pyspmv's default) and libgomp's spinning, long or short.

    python benchmarks/busy_machine.py --out benchmarks/results/busy_machine.md

Each measurement runs in a child process of its own, because OpenMP reads its wait policy once, when it
is loaded: ``default`` imports pyspmv as a user does (pyspmv sets ``OMP_WAIT_POLICY=passive`` unless the
environment sets it); ``spin`` loads libgomp before pyspmv with ``OMP_WAIT_POLICY`` unset (libgomp's own
default, each waiting thread spinning about 3 ms; also what a process gets whose OpenMP another library
loaded first); ``spin 10k`` and ``spin 50k`` the same with ``GOMP_SPINCOUNT`` 10,000 and 50,000 (a short spin,
then sleep; ``spin 10k`` was the default measured in ``results/busy_machine_spin10k.md``); ``1 thread``
runs ``OMP_NUM_THREADS=1``, the product without a team. A child times each product quiet, then starts
``python -c "while True: pass"``, waits 0.5 s and times them again beside it. The repetitions go round
the modes, so that a change of the machine's other load hits every mode.

Two timings per product: ``bench`` is :func:`pyspmv.benchmark`'s median (back-to-back products in C,
``budget_s=0.2``), ``call`` the mean wall time of :func:`pyspmv.spmv` called in a loop for 0.3 s (what an
application sees, stalls included). The report gives, per mode and product, the median over repetitions
with the range, quiet and busy, and busy / quiet; the acceptance is busy within 3x of quiet. It records
the load average seen by each child: other work that ran meanwhile is in the quiet timings too.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import ctypes.util
import datetime
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from _md import md_header, md_row, write_report

MATRICES = [("poisson2d", 300), ("poisson2d", 100), ("poisson2d", 40)]
CONFIGS = ["cpu/csr/rows", "cpu/ell", "cpu/coo"]
MODES = {"default": {}, "spin": {"preload": "gomp"}, "spin 10k": {"preload": "gomp", "GOMP_SPINCOUNT": "10000"},
         "spin 50k": {"preload": "gomp", "GOMP_SPINCOUNT": "50000"}, "1 thread": {"OMP_NUM_THREADS": "1"}}
#: Acceptance: a product beside one competing busy process within this factor of its quiet time.
WITHIN = 3.0


def child(mode: str) -> None:
    """One repetition of ``mode``: every product quiet, then beside a busy process; JSON lines on stdout."""
    if MODES[mode].get("preload"):
        os.environ.pop("OMP_WAIT_POLICY", None)
        ctypes.CDLL(ctypes.util.find_library("gomp"), mode=ctypes.RTLD_GLOBAL)   # reads the unset policy now
    import warnings

    import pyspmv
    warnings.simplefilter("ignore", pyspmv.NoisyTimingWarning)   # timing a busy machine is the point here
    mats = [pyspmv.generate(kind, size) for kind, size in MATRICES]
    xs = [np.random.default_rng(0).uniform(-1, 1, A.ncols) for A in mats]
    forms = {(i, c): pyspmv.convert(A, pyspmv.config(c).format) for i, A in enumerate(mats) for c in CONFIGS}

    def measure(state: str) -> None:
        for i, A in enumerate(mats):
            df = pyspmv.benchmark(A, CONFIGS, repeats=1000, warmup=10, budget_s=0.2, check=False, progress=False)
            others = df.attrs["other_cpus"]
            for c, med in zip(df["config"], df["median_ms"]):
                n, t0 = 0, time.perf_counter()
                while time.perf_counter() - t0 < 0.3:
                    pyspmv.spmv(forms[i, c], xs[i], c)
                    n += 1
                call = (time.perf_counter() - t0) / n * 1e3
                print(json.dumps({"mode": mode, "state": state, "matrix": A.name, "nnz": A.nnz, "config": c,
                                  "bench_ms": float(med), "call_ms": call, "load1": os.getloadavg()[0],
                                  "other_cpus": others}), flush=True)
    measure("quiet")
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        measure("busy")
    finally:
        busy.kill()
        busy.wait()


def run(reps: int) -> list[dict[str, Any]]:
    rows = []
    for rep in range(reps):
        for mode, spec in MODES.items():
            env = {k: v for k, v in os.environ.items()
                   if k not in ("OMP_WAIT_POLICY", "OMP_NUM_THREADS", "GOMP_SPINCOUNT")}
            env.update({k: v for k, v in spec.items() if k.startswith(("OMP_", "GOMP_"))})
            out = subprocess.run([sys.executable, __file__, "--child", mode], env=env, capture_output=True,
                                 text=True, check=True).stdout
            rows += [{**json.loads(line), "rep": rep} for line in out.splitlines() if line.startswith("{")]
            print(f"rep {rep + 1}/{reps} {mode}: load {os.getloadavg()[0]:.2f}", file=sys.stderr)
    return rows


def _cpu() -> str:
    """The processor, as pyspmv's own tables name it."""
    import pyspmv
    return str(pyspmv.device_info("cpu")["processor"] or platform.processor())


def report(rows: list[dict[str, Any]], out: Path, started: str, load: tuple[float, ...]) -> list[str]:
    import pandas as pd
    d = pd.DataFrame(rows)
    quiet, busy = d[d["state"] == "quiet"], d[d["state"] == "busy"]
    lines = [(f"Machine: {_cpu()}, {os.cpu_count()} logical CPUs, {platform.platform()}; started {started}, "
              f"`python {' '.join(sys.argv)}`."), "",
             (f"Load average (1, 5, 15 min) at the start: {load[0]:.2f}, {load[1]:.2f}, {load[2]:.2f}; seen by the "
             f"children: {d['load1'].min():.2f} to {d['load1'].max():.2f}. Other processes' work on the CPUs while "
             "benchmark() timed (df.attrs['other_cpus']), quiet: median "
             f"{quiet['other_cpus'].median():.2f} CPUs, up to {quiet['other_cpus'].max():.2f}; beside the competing "
             f"process: median {busy['other_cpus'].median():.2f}. This machine is shared with other sessions' work, "
             "so it is never fully quiet: 'quiet' means without the competing process started here, other work "
             "included (re-run on a quiet machine to see the quiet times alone)."), "",
             (f"{d['rep'].nunique()} repetitions per mode; each cell: the median over them [min-max], ms. bench: "
             "pyspmv.benchmark()'s median (back-to-back products in C); call: mean wall time of pyspmv.spmv() in a "
             "loop (stalls included). busy / quiet: of the medians; the acceptance is at most "
             f"{WITHIN:g} for pyspmv's default."), ""]
    lines += md_header(["mode", "matrix", "config", "bench quiet", "bench busy", "busy / quiet", "call quiet",
                        "call busy", "busy / quiet"], "lllrrrrrr")
    worst = {}
    for (mode, matrix, cfg), g in d.groupby(["mode", "matrix", "config"], sort=False):
        cells = [mode, matrix, cfg]
        for col in ("bench_ms", "call_ms"):
            q, b = (g.loc[g["state"] == s, col] for s in ("quiet", "busy"))
            ratio = b.median() / q.median()
            worst[mode] = max(worst.get(mode, 0.0), ratio)
            cells += [f"{q.median():.4f} [{q.min():.4f}-{q.max():.4f}]", f"{b.median():.4f} [{b.min():.4f}-{b.max():.4f}]",
                      f"{ratio:.2f}"]
        lines.append(md_row(cells))
    lines += ["", "Worst busy / quiet per mode: " + ", ".join(f"{m} {r:.2f}" for m, r in worst.items())
              + f" (acceptance: default at most {WITHIN:g}). The call timings include the Python around each "
              "product, which shares the CPUs with the other processes like any program (1 thread shows that "
              "share alone); the bench timings are the products."]
    g = d.groupby(["mode", "state", "matrix", "config"])["bench_ms"]
    med, low = g.median(), g.min()
    if {"default", "spin", "1 thread"} <= set(d["mode"]):
        one = med["1 thread", "quiet"]        # no team, so nothing to wait for: the product's own time here
        high = g.max()
        said = [f"{m} {r.median():.2f}x (from {r.min():.2f} to {r.max():.2f}; its slowest repetition up to "
                f"{w.max():.0f}x)" for m in ("default", "spin")
                for r, w in [(med[m, "busy"] / one, high[m, "busy"] / one)]]
        lines += ["", ("Beside the competing process, against the product on 1 thread without it (bench), over the "
                       f"products: {'; '.join(said)}.")]
        calm = low["spin", "quiet"] < 2 * one          # spin repetitions that no stall hit
        if calm.any():
            c = (med["default", "quiet"] / low["spin", "quiet"])[calm]
            lines += ["", (f"What waking the threads costs where nothing competes: default quiet over spin's fastest "
                           f"quiet repetition, on the {int(calm.sum())} products where that one was not stalled: "
                           f"median {c.median():.2f}x (from {c.min():.2f} to {c.max():.2f}).")]
    out.parent.mkdir(parents=True, exist_ok=True)
    write_report(out, "CPU products on a busy machine", lines)
    out.with_suffix(".csv").write_text(d.to_csv(index=False), encoding="utf-8")
    return lines


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=Path(__file__).parent / "results" / "busy_machine.md")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--child", choices=list(MODES), help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        child(a.child)
        return
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    load = os.getloadavg()
    print("\n".join(report(run(a.reps), a.out, started, load)))


if __name__ == "__main__":
    main()
