"""One collection measured on one GPU and on two (a Dask worker per GPU): wall time, identical rows, timings.

    python benchmarks/collect_two_gpus.py --bases DIR --work /tmp/c2 --out results/collect_two_gpus.md
    (needs two GPUs and dask[distributed]; results/collect_two_gpus.md)

The corpus: the 32 smallest real matrices of ``--bases`` (a Matrix Market folder with MANIFEST.csv) and 8 of
the standard generated corpus from 1e6 to 1e7 entries (spread over that range by size), every configuration, both
value types, ``repeats=100, budget_s=0.05`` (as the H200 datasets). Each run is a fresh process, timed around it:

1. ``single``: ``pyspmv.collect(corpus)`` with ``CUDA_VISIBLE_DEVICES=0``, no Dask (what one GPU does);
2. ``two``: ``pyspmv.collect(corpus, client=Client(scheduler))`` with a scheduler and one single-threaded worker
   per GPU (``CUDA_VISIBLE_DEVICES=i dask worker ... --nworkers 1 --nthreads 1``, as the README says), started
   before the timed runs;
3. ``again``: run 2 repeated on its folder, which must measure nothing;
4. ``killed``: run 2 on a new folder, killed (SIGKILL) after ``--kill-after`` seconds, then resumed to the end.

Checks: rows of runs 1, 2 and 4 identical in count and keys; per-configuration timings of runs 1 and 2 (ok in
both) as a median ratio and its spread; run 3 wrote no part; each worker's GPU in run 2's metadata.

Subcommands ``single``, ``cluster`` run one collection (what the orchestrator starts).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _md import md_table, write_report

import pyspmv
from pyspmv import datasets

KW = {"repeats": 100, "budget_s": 0.05, "progress": False}
KEY = ["matrix", "dtype", "device", "config"]


def corpus(a: argparse.Namespace) -> list[datasets.CorpusEntry]:
    """The ``--small`` smallest real matrices of ``--bases`` and ``--big`` generated ones from 1e6 to 1e7 entries,
    spread by size."""
    small = sorted(datasets.folder_corpus(a.bases), key=lambda e: e.nnz)[:a.small]
    big = sorted((e for e in datasets.standard_corpus() if 1e6 <= e.nnz <= 1e7), key=lambda e: e.nnz)
    pick = sorted({int(i) for i in np.linspace(0, len(big) - 1, a.big)}) if a.big else []
    return small + [big[i] for i in pick]


def run(cmd: list[str], env: dict[str, str] | None = None, kill_after: float | None = None) -> float:
    """Seconds of the subprocess ``cmd`` (killed with SIGKILL after ``kill_after`` s when given)."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, env={**os.environ, **(env or {})})
    try:
        p.wait(timeout=kill_after)
    except subprocess.TimeoutExpired:
        p.send_signal(signal.SIGKILL)
        p.wait()
    else:
        if p.returncode != 0 and kill_after is None:
            raise SystemExit(f"{' '.join(cmd)} failed with status {p.returncode}")
    return time.perf_counter() - t0


def table(out: Path) -> pd.DataFrame:
    return pd.read_csv(out / "timings.csv.gz", keep_default_na=False, na_values={"median_ms": [""]})


def parts_state(out: Path) -> dict[str, float]:
    return {p.name: p.stat().st_mtime for p in (out / "parts").glob("*.csv.gz")}


def orchestrate(a: argparse.Namespace) -> None:
    work = Path(a.work)
    work.mkdir(parents=True, exist_ok=True)
    me = [sys.executable, str(Path(__file__).resolve()), "--bases", str(Path(a.bases).resolve()), "--small",
          str(a.small), "--big", str(a.big), "--device", a.device]
    port = 8786
    procs = [subprocess.Popen(["dask", "scheduler", "--port", str(port), "--no-dashboard"],
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)]
    time.sleep(3)
    addr = f"tcp://127.0.0.1:{port}"
    share = str(max(1, (os.cpu_count() or 2) // 2))     # each worker its half of the host's cores (OpenMP)
    for i in range(2):
        procs.append(subprocess.Popen(["dask", "worker", addr, "--nworkers", "1", "--nthreads", "1", "--no-dashboard"],
                                      env={**os.environ, "CUDA_VISIBLE_DEVICES": str(i), "OMP_NUM_THREADS": share},
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    time.sleep(5)
    try:
        wall = {}
        wall["single"] = run([*me, "single", str(work / "single")], {"CUDA_VISIBLE_DEVICES": "0"})
        print(f"single: {wall['single']:.1f} s", flush=True)
        wall["two"] = run([*me, "cluster", str(work / "two"), addr])
        print(f"two: {wall['two']:.1f} s", flush=True)
        before = parts_state(work / "two")
        wall["again"] = run([*me, "cluster", str(work / "two"), addr])
        wrote = sum(1 for k, v in parts_state(work / "two").items() if before.get(k) != v)
        print(f"again: {wall['again']:.1f} s, parts written {wrote}", flush=True)
        wall["killed"] = run([*me, "cluster", str(work / "killed"), addr], kill_after=a.kill_after)
        done_at_kill = len([p for p in (work / "killed" / "parts").glob("*.csv.gz")
                            if not p.name.endswith(".features.csv.gz")])
        wall["resumed"] = run([*me, "cluster", str(work / "killed"), addr])
        print(f"killed after {wall['killed']:.1f} s with {done_at_kill} matrices done; resumed in "
              f"{wall['resumed']:.1f} s", flush=True)
    finally:
        for p in procs[::-1]:
            p.terminate()
    report(a, work, wall, wrote, done_at_kill)


def report(a: argparse.Namespace, work: Path, wall: dict[str, float], wrote: int, done_at_kill: int) -> None:
    t1, t2, tk = table(work / "single"), table(work / "two"), table(work / "killed")
    keys = [set(map(tuple, t[KEY].astype(str).to_numpy())) for t in (t1, t2, tk)]
    same = len(t1) == len(t2) == len(tk) and keys[0] == keys[1] == keys[2]
    m = t1.merge(t2, on=KEY, suffixes=("_1", "_2"))
    ok = m[(m["status_1"] == "ok") & (m["status_2"] == "ok")]
    ratio = ok["median_ms_2"] / ok["median_ms_1"]
    q = ratio.quantile([0.1, 0.25, 0.5, 0.75, 0.9]).to_numpy()
    meta2 = json.loads((work / "two" / "metadata.json").read_text())
    metak = json.loads((work / "killed" / "metadata.json").read_text())
    n = meta2["n_matrices"]
    speed = wall["single"] / wall["two"]
    workers = md_table(["host", "Dask worker", "CUDA_VISIBLE_DEVICES", "GPU", "matrices", "busy s", "busy / wall"],
                       [[w["host"], w["dask_worker"], w["cuda_visible_devices"], w["gpu_name"], w["matrices"],
                         f"{w.get('seconds', float('nan')):.1f}", f"{w.get('seconds', float('nan')) / wall['two']:.2f}"]
                        for w in meta2.get("workers", [])], "llllrrr")
    solo = json.loads((work / "single" / "metadata.json").read_text()).get("workers", [{}])[0]
    lines = [
        (f"Corpus: {n} matrices ({meta2['n_rows']:,} rows: every {a.device} configuration, float32 and float64), the "
         f"{a.small} smallest real matrices of the bases folder and {a.big} of the standard corpus from 1e6 to 1e7 "
         "entries; "
         "`repeats=100, budget_s=0.05`. Wall seconds of each run's process (Python start and import included)."), "",
        *md_table(["run", "wall s"], [["one GPU (no Dask)", f"{wall['single']:.1f}"],
                                       ["two GPUs (two Dask workers)", f"{wall['two']:.1f}"],
                                       ["two GPUs, again (resume: nothing to measure)", f"{wall['again']:.1f}"],
                                       [f"two GPUs, killed after {a.kill_after:.0f} s", f"{wall['killed']:.1f}"],
                                       ["two GPUs, resumed", f"{wall['resumed']:.1f}"]], "lr"), "",
        f"- Speed-up of two GPUs over one (wall, one GPU / two): **{speed:.2f}x** (target 1.7x).",
        f"- Rows: one GPU {len(t1):,}, two GPUs {len(t2):,}, killed and resumed {len(tk):,}; keys (matrix, dtype, "
        f"device, config) {'identical' if same else 'DIFFERENT'} across the three.",
        f"- Timings, two GPUs over one, per configuration ok in both ({len(ok):,}): median **{q[2]:.3f}** "
        f"(quartiles {q[1]:.3f}-{q[3]:.3f}, 10-90 % {q[0]:.3f}-{q[4]:.3f}; target median within 1 ± 0.03).",
        f"- The re-run wrote {wrote} part files (0 expected) in {wall['again']:.1f} s.",
        f"- Killed with {done_at_kill} of {n} matrices written; after the resume {metak['n_matrices']} matrices, "
        f"{metak['n_rows']:,} rows; the workers' counts add to {sum(w['matrices'] for w in metak.get('workers', []))} "
        "(a matrix in flight when killed is measured again by the resume, never twice in the table).", "",
        "Who measured the two-GPU run (its `metadata.json`'s `workers`; busy: the seconds its matrices took, "
        "against the run's wall time):", "", *workers, "",
        f"One GPU alone: busy {solo.get('seconds', float('nan')):.1f} s of {wall['single']:.1f} s wall. Each Dask "
        "worker ran with `OMP_NUM_THREADS` half the host's cores (conversions and features are threaded on the host).",
    ]
    write_report(a.out, "A collection on one GPU and on two", lines, device=a.device)
    print("\n".join(lines))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bases", required=True)
    ap.add_argument("--work", default="/tmp/collect_two_gpus")
    ap.add_argument("--kill-after", type=float, default=40.0)
    ap.add_argument("--small", type=int, default=32, help="real matrices of --bases, smallest first (default 32)")
    ap.add_argument("--big", type=int, default=8, help="generated matrices of 1e6-1e7 entries (default 8)")
    ap.add_argument("--device", default="cuda", help="cuda (default); cpu only to try the script out")
    ap.add_argument("--out", default="benchmarks/results/collect_two_gpus.md")
    ap.add_argument("mode", nargs="*", help="single OUT | cluster OUT ADDRESS (run by the orchestrator)")
    a = ap.parse_args()
    if not a.mode:
        orchestrate(a)
    elif a.mode[0] == "single":
        pyspmv.collect(corpus(a), a.mode[1], device=a.device, **KW)
    elif a.mode[0] == "cluster":
        from distributed import Client
        with Client(a.mode[2]) as client:
            pyspmv.collect(corpus(a), a.mode[1], device=a.device, client=client, **KW)
    else:
        raise SystemExit(f"unknown mode {a.mode[0]!r}")


if __name__ == "__main__":
    main()
