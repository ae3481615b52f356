"""Measure again the H200 rows that went stale, as supplements of the default's datasets (issue 48).

Three collections, each a supplement (``datasets.combine`` replaces the rows it measured):

- ``dia``: DIA's 5 configurations on every matrix of the default's data where DIA applied, since 49b2118 (two rows a
  thread) was to make DIA 1.1-1.3x faster than its rows say. It ran slower instead, and ``dia_ab.py`` found why; with
  the kept kernel it is the check that the shipped DIA rows still hold (not shipped);
- ``sell6``: SELL's 45 configurations on the matrices of ``h200_scaled_seed6`` that ``h200_sell`` did not reach
  (``datasets/h200_sell_seed6``);
- ``fill1``: the 39 configurations of the default's 234 that ``h200_scaled_seed1`` lacks, on its 32 matrices (it was
  measured at a68b392; ``datasets/h200_fill_seed1``).

On the dev VM (``../shared`` does not travel; the files the matrices need are copied, gzipped as they are)::

    python refresh.py prepare DIR ../shared/matrices ../shared/corpus

On the H200, DIR carried::

    python refresh.py collect DIR OUT dia sell6 fill1     # resumable: a cut run picks up where it stopped
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import csv
import json
import re
import shutil
import sys
from pathlib import Path

import pandas as pd

import pyspmv
from pyspmv.datasets import collect, folder_corpus, scaled_corpus, standard_corpus

DATASETS = Path(__file__).resolve().parents[2] / "datasets"
SCALED = re.compile(r"^(?P<base>.+)_x\d+(?:tile|kron)_r(?P<seed>\d+)$")
#: The default's datasets (pyspmv.ranking.targets.training_data("h200") before this study).
DEFAULT = ("h200", "h200_scaled_seed1", "h200_scaled", "h200_scaled_seed4", "h200_generated", "h200_scaled_seed5",
           "h200_scaled_seed6")
#: scaled_corpus's draw (size range) by seed, as datasets/README.md gives each scaled dataset's.
DRAWS = {1: (3e6, 1.6e7), 2: (1e6, 5e6), 3: (1e6, 5e6), 4: (1e6, 8e6), 5: (1e6, 8e6), 6: (1e6, 8e6)}
STANDARD_MAX = 3e6


def timings(name: str) -> pd.DataFrame:
    return pd.read_csv(DATASETS / name / "timings.csv.gz", usecols=["matrix", "config", "status"])


def plan() -> dict[str, dict[str, list[str]]]:
    """Each collection's matrices and configurations."""
    t = {n: timings(n) for n in DEFAULT}
    ranked = sorted(set(t["h200"]["config"]))                      # the 234 configurations the default ranks
    dia = [c for c in ranked if c.startswith("pyspmv/dia/")]
    sell = [c for c in ranked if c.startswith("pyspmv/sell/")]
    dia_ok = [m for n in DEFAULT for m in t[n][t[n]["config"].isin(dia) & (t[n]["status"] == "ok")]["matrix"]]
    have_sell = set(timings("h200_sell")["matrix"])
    f6 = pd.read_csv(DATASETS / "h200_scaled_seed6" / "features.csv.gz").sort_values("nnz")
    seed1 = t["h200_scaled_seed1"]
    return {"dia": {"configs": dia, "matrices": sorted(set(dia_ok))},
            "sell6": {"configs": sell, "matrices": [m for m in f6["matrix"] if m not in have_sell]},
            "fill1": {"configs": sorted(set(ranked) - set(seed1["config"])),
                      "matrices": list(pd.read_csv(DATASETS / "h200_scaled_seed1" / "features.csv.gz")
                                       .sort_values("nnz")["matrix"])}}


def prepare(out: Path, shared: list[Path]) -> None:
    """out/plan.json, and out/real, out/bases: the Matrix Market files (and MANIFEST rows) the plan's real and
    scaled matrices are made from; the generated ones are made on the device."""
    p = plan()
    std = {e.name for e in standard_corpus(max_nnz=STANDARD_MAX)}
    found: dict[str, dict[str, tuple[Path, dict[str, str]]]] = {"real": {}, "bases": {}}
    for folder in shared:       # a real matrix from the first folder that has it, a base from the last (the corpus)
        for r in csv.DictReader(open(folder / "MANIFEST.csv")):
            found["real"].setdefault(r["name"], (folder, r))
            found["bases"][r["name"]] = (folder, r)
    want: dict[str, set[str]] = {"real": set(), "bases": set()}
    for job in p.values():
        for m in job["matrices"]:
            s = SCALED.match(m)
            if m in std:
                continue
            if s:
                want["bases"].add(s["base"])
            elif m in found["real"]:
                want["real"].add(m)
            else:
                raise SystemExit(f"{m}: neither generated, scaled nor in {', '.join(map(str, shared))}")
    for sub, names in want.items():
        (out / sub).mkdir(parents=True, exist_ok=True)
        rows = []
        for n in sorted(names):
            folder, r = found[sub][n]
            shutil.copyfile(folder / f"{n}.mtx.gz", out / sub / f"{n}.mtx.gz")
            rows.append(r)
        with open(out / sub / "MANIFEST.csv", "w", newline="") as f:
            w = csv.DictWriter(f, fieldnames=list(dict.fromkeys(k for r in rows for k in r)), restval="")
            w.writeheader()
            w.writerows(rows)
    (out / "plan.json").write_text(json.dumps(p, indent=1))
    print({k: len(v["matrices"]) for k, v in p.items()}, {k: len(v) for k, v in want.items()})


def pool(src: Path) -> dict[str, pyspmv.datasets.CorpusEntry]:
    entries = {e.name: e for e in standard_corpus(max_nnz=STANDARD_MAX)}
    entries.update({e.name: e for e in folder_corpus(src / "real")})
    for seed, (lo, hi) in DRAWS.items():                             # only the bases travel: the names filter
        entries.update({e.name: e for e in scaled_corpus(src / "bases", lo, hi, per_kind=10_000, seed=seed)})
    return entries


def measure(src: Path, out: Path, jobs: list[str]) -> None:
    p, have = json.loads((src / "plan.json").read_text()), pool(src)
    every = {c.id: c for c in pyspmv.configs("cuda")}
    for job in jobs:
        entries = [have[m] for m in p[job]["matrices"]]             # a name it cannot make is an error
        cfgs = [every[c] for c in p[job]["configs"]]
        print(job, len(entries), "matrices,", len(cfgs), "configurations", flush=True)
        collect(entries, out / job, device="cuda", configs=cfgs, repeats=100, budget_s=0.05, progress=False)
        meta = json.loads((out / job / "metadata.json").read_text())
        meta["supplement"] = True
        (out / job / "metadata.json").write_text(json.dumps(meta, indent=1))


if __name__ == "__main__":
    cmd, rest = sys.argv[1], sys.argv[2:]
    if cmd == "prepare":
        prepare(Path(rest[0]), [Path(r) for r in rest[1:]])
    elif cmd == "collect":
        measure(Path(rest[0]), Path(rest[1]), rest[2:])
    else:
        raise SystemExit(__doc__)
