"""What a process pays before its first ranking: ``import pyspmv`` and the first ``rank()``, in fresh processes.

    python benchmarks/cold_start.py [--run LABEL=PYTHON[:PYTHONPATH] ...] [--repeats 15] [--machine "..."]
                                    [--out benchmarks/results/cold_start.md]

Each ``--run`` names an installation: the interpreter, and a folder put first on its ``PYTHONPATH`` (e.g. a
``pip install --target`` of another checkout), so that two versions are timed side by side, their processes
interleaved (a shared machine's load falls on both alike). Without ``--run``: this interpreter as it is (an
editable install checks its build on import, which the times then include). Per installation and repeat,
in fresh processes:

1. ``python -c pass`` and ``python -c "import pyspmv"``: wall time of the whole process, measured by this
   script (interpreter start-up included);
2. ``import pyspmv`` timed inside the process (``time.perf_counter`` around it), and which of pandas,
   scikit-learn, scipy.sparse, tqdm, matplotlib, threadpoolctl it loaded;
3. the first and second ``pyspmv.rank(A, device=D)`` of a process, for D = ``cuda`` (the default model) and
   ``cpu``, each in its own process, ``A`` a generated power-law matrix of 20,000 rows (made before the timed
   call: making it imports scipy.sparse). The rankings of every process of an installation must be equal, and
   equal across installations, before anything is reported.

``$PYSPMV_HOME`` is an empty temporary folder: one process per installation and device runs first, untimed
in the medians, and is reported as the first use ever (where pyspmv keeps a copy of the shipped model, this
is the process that writes it); the other processes of step 3 share that home. Each repeat also runs step 3's
process once more per installation and device in a fresh, empty ``$PYSPMV_HOME`` of its own (a new user's
first call, every time), and records what it wrote there. Medians, quartiles and extremes over ``--repeats``
processes; the 1-minute load average is sampled before each process.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import shlex
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _md import md_table, provenance

ROOT = Path(__file__).resolve().parents[1]
HEAVY = ("pandas", "sklearn", "scipy.sparse", "tqdm", "matplotlib", "threadpoolctl")
DEVICES = ("cuda", "cpu")

IMPORT_CHILD = f"""
import json, sys, time
t0 = time.perf_counter()
import pyspmv
t1 = time.perf_counter()
print(json.dumps({{"import_s": t1 - t0, "heavy": [m for m in {HEAVY!r} if m in sys.modules],
                  "file": pyspmv.__file__}}))
"""

RANK_CHILD = """
import hashlib, json, sys, time
import pyspmv
A = pyspmv.generate("powerlaw", 20000)
t0 = time.perf_counter()
r = pyspmv.rank(A, device=sys.argv[1])
t1 = time.perf_counter()
r2 = pyspmv.rank(A, device=sys.argv[1])
t2 = time.perf_counter()
assert list(r2) == list(r)
print(json.dumps({"first_ms": (t1 - t0) * 1e3, "second_ms": (t2 - t1) * 1e3, "best": r.best,
                  "ranking": hashlib.sha256(repr(list(r)).encode()).hexdigest()[:16]}))
"""


def _env(pythonpath: str | None, home: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    env["PYSPMV_HOME"] = home
    env["PYTHONWARNINGS"] = "ignore"
    return env


def _run(python: str, env: dict[str, str], *args: str) -> tuple[float, dict]:
    """Wall seconds of one fresh process and the JSON it printed (``{}`` for ``pass``)."""
    t0 = time.perf_counter()
    out = subprocess.run([python, *args], env=env, capture_output=True, text=True, check=True, cwd=tempfile.gettempdir())
    wall = time.perf_counter() - t0
    lines = out.stdout.strip().splitlines()
    return wall, (json.loads(lines[-1]) if lines else {})


def _importtime(python: str, env: dict[str, str]) -> dict[str, float]:
    """Cumulative µs of pyspmv and of the libraries in :data:`HEAVY` and numpy, from one ``-X importtime``."""
    out = subprocess.run([python, "-X", "importtime", "-c", "import pyspmv"], env=env, capture_output=True, text=True,
                         check=True, cwd=tempfile.gettempdir())
    got = {}
    for line in out.stderr.splitlines():
        parts = line.split("|")
        if len(parts) == 3 and parts[1].strip().isdigit():
            name = parts[2].strip()
            if name in ("pyspmv", "numpy", *HEAVY):
                got[name] = max(got.get(name, 0.0), float(parts[1]))
    return got


def _written(folder: str) -> int:
    """Bytes of the files under ``folder``."""
    return sum(p.stat().st_size for p in Path(folder).rglob("*") if p.is_file())


def _stats(xs: list[float], scale: float = 1.0, fmt: str = "{:.0f}") -> list[str]:
    q = statistics.quantiles(xs, n=4) if len(xs) > 1 else [xs[0]] * 3
    def f(v: float) -> str:
        return fmt.format(v * scale)
    return [f(statistics.median(xs)), f"{f(q[0])}–{f(q[2])}", f"{f(min(xs))}–{f(max(xs))}"]


def _cpu() -> str:
    """The processor, as pyspmv's own tables name it (imported here: the parent's import is not measured)."""
    from pyspmv import device_info
    return str(device_info("cpu")["processor"] or platform.processor() or "?")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--run", action="append", default=[], metavar="LABEL=PYTHON[:PYTHONPATH]")
    ap.add_argument("--repeats", type=int, default=15)
    ap.add_argument("--machine", default=None, help="how the report names the machine")
    ap.add_argument("--note", default="", help="a sentence added to the report (e.g. what each installation is)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "cold_start.md"))
    args = ap.parse_args()
    if args.repeats < 2:
        ap.error("--repeats must be at least 2")
    runs = {}
    for spec in args.run or [f"this={sys.executable}"]:
        label, _, rest = spec.partition("=")
        python, _, path = rest.partition(":")
        runs[label] = (python, path or None)

    home = tempfile.mkdtemp(prefix="pyspmv-cold-")
    envs = {label: _env(path, home) for label, (_, path) in runs.items()}
    res: dict[str, dict[str, list]] = {label: {"pass": [], "wall": [], "import": [], "heavy": [], "file": [], "itime": [],
                                               **{f"{d}_{k}": [] for d in DEVICES for k in ("first", "second", "id", "fresh", "written")}}
                                       for label in runs}
    first_ever: dict[tuple[str, str], float] = {}
    loads: list[float] = []
    started = datetime.datetime.now(datetime.timezone.utc)
    for label, (python, _) in runs.items():              # untimed: the first use ever (a model copy written)
        for d in DEVICES:
            _, out = _run(python, envs[label], "-c", RANK_CHILD, d)
            first_ever[label, d] = out["first_ms"]
            res[label][f"{d}_id"].append(out["ranking"])
    for _ in range(args.repeats):
        for label, (python, _) in runs.items():
            r = res[label]
            loads.append(os.getloadavg()[0])
            r["pass"].append(_run(python, envs[label], "-c", "pass")[0])
            wall, out = _run(python, envs[label], "-c", IMPORT_CHILD)
            r["wall"].append(wall)
            r["import"].append(out["import_s"])
            r["heavy"].append(tuple(out["heavy"]))
            r["file"].append(out["file"])
            r["itime"].append(_importtime(python, envs[label]))
            for d in DEVICES:
                loads.append(os.getloadavg()[0])
                _, out = _run(python, envs[label], "-c", RANK_CHILD, d)
                r[f"{d}_first"].append(out["first_ms"])
                r[f"{d}_second"].append(out["second_ms"])
                r[f"{d}_id"].append(out["ranking"])
                fresh = tempfile.mkdtemp(prefix="pyspmv-fresh-")       # a new user's first call
                loads.append(os.getloadavg()[0])
                _, out = _run(python, {**envs[label], "PYSPMV_HOME": fresh}, "-c", RANK_CHILD, d)
                r[f"{d}_fresh"].append(out["first_ms"])
                r[f"{d}_written"].append(_written(fresh))
                r[f"{d}_id"].append(out["ranking"])
                shutil.rmtree(fresh)
    for d in DEVICES:                                   # one ranking per device, whatever the installation
        ids = {i for r in res.values() for i in r[f"{d}_id"]}
        if len(ids) != 1:
            raise SystemExit(f"The {d} rankings differ between processes or installations: {sorted(ids)}")

    stamp = started.strftime("%Y-%m-%d %H:%M UTC")
    cmd = "python benchmarks/cold_start.py " + shlex.join(sys.argv[1:])
    machine = args.machine or f"{_cpu()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    lines = ["# Cold start: `import pyspmv` and the first `rank()` of a process", "", provenance(host=machine), "",
             (f"`{cmd}` on {machine}, {stamp}; {args.repeats} fresh processes per installation and measurement, the "
              "installations interleaved. The machine was shared with other work while measuring (other sessions' "
              f"builds and tests): 1-minute load average {min(loads):.2f} to {max(loads):.2f}, median "
              f"{statistics.median(loads):.2f}, on {os.cpu_count()} CPUs."), ""]
    if args.note:
        lines += [args.note, ""]
    lines += [("Targets (issue 35): `import pyspmv` at most 0.2 s, the first `rank()` of a fresh process at most 50 ms "
               "with the default model; (issue 51) also in a fresh `$PYSPMV_HOME`, writing at most 5 MB there."), "",
              "## import pyspmv", "",
              ("Wall: the whole process `python -c \"import pyspmv\"` as the parent measures it (interpreter start-up "
               "included; `python -c pass` beside it); in-process: `time.perf_counter()` around the import. Median, "
               "quartiles, extremes, in ms."), ""]
    rows = []
    for label, r in res.items():
        heavy = sorted({m for h in r["heavy"] for m in h})
        rows.append([label, *_stats(r["wall"], 1e3), *_stats(r["import"], 1e3), *_stats(r["pass"], 1e3)[:1],
                     ", ".join(heavy) or "none"])
    lines += md_table(["installation", "wall median", "q25–q75", "min–max", "in-process median", "q25–q75", "min–max",
                       "`python -c pass`", "heavy libraries loaded"], rows, "lrrrrrrrl")
    lines += ["", ("Where the in-process time goes (`python -X importtime -c \"import pyspmv\"`, cumulative, median ms "
                   "over the repeats; a library absent was not imported):"), ""]
    names = ["pyspmv", "numpy", *HEAVY]
    lines += md_table(["installation", *names],
                      [[label, *(f"{statistics.median(t.get(n, 0.0) for t in r['itime']) / 1e3:.0f}"
                                 if any(n in t for t in r["itime"]) else "–" for n in names)]
                       for label, r in res.items()], "l" + "r" * len(names))
    lines += ["", "## The first rank() of a process", "",
              ("`pyspmv.rank(A, device=D)` with the shipped default model of D, `A` = `pyspmv.generate(\"powerlaw\", "
               "20000)` (149,239 entries), first and second call of a fresh process, in ms. *Fresh home*: each "
               "process with an empty `$PYSPMV_HOME` of its own, as a new user's first call (median, quartiles, "
               "extremes; *written*: what it left in that home, MB). *Shared home*: the processes sharing one home, "
               "where *first use ever* is the one that ran first on it, empty. Every process ranked alike "
               "(checked)."), ""]
    rows = []
    for label, r in res.items():
        for d in DEVICES:
            w = r[f"{d}_written"]
            rows.append([label, d, *_stats(r[f"{d}_fresh"], 1.0, "{:.1f}"),
                         f"{statistics.median(w) / 1e6:.1f}" if w else "–",
                         f"{first_ever[label, d]:.0f}", *_stats(r[f"{d}_first"], 1.0, "{:.1f}"),
                         _stats(r[f"{d}_second"], 1e3, "{:.0f}")[0]])
    lines += md_table(["installation", "device", "fresh home median", "q25–q75", "min–max", "written (MB)",
                       "shared home: first use ever", "first median", "q25–q75", "min–max",
                       "second call median (µs)"], rows, "llrrrrrrrrr")
    lines += ["", "Installations: " + "; ".join(f"{label} = `{runs[label][0]}`"
                                                + (f" with `PYTHONPATH={runs[label][1]}`" if runs[label][1] else "")
                                                + f" (pyspmv from `{Path(r['file'][0]).parent}`)"
                                                for label, r in res.items()) + ".", ""]
    Path(args.out).write_text("\n".join(lines))
    raw = Path(args.out).with_suffix(".json")
    raw.write_text(json.dumps({"command": cmd, "machine": machine, "started": stamp, "loads": loads,
                               "first_ever_ms": {f"{k[0]}/{k[1]}": v for k, v in first_ever.items()},
                               "runs": {k: {m: v for m, v in r.items() if m != "heavy"} for k, r in res.items()}},
                              indent=1))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
