"""How far apart two H200 measurements of the same matrices are, and what that leaves a model to reach.

Usage:
    python studies/2026-12-01-h200-repeatability/repeatability.py --runs b=DIR c=DIR ...   # store the runs once
    python studies/2026-12-01-h200-repeatability/repeatability.py                          # the tables

Runs are ``pyspmv.collect`` folders of the repeated matrices (the study's README says how they were measured); their
ok medians are stored in ``runs.csv.gz`` beside this file. Run ``a`` is the shipped dataset's own measurement of the
same matrices (``datasets/h200_scaled_seed5`` for the scaled ones, ``datasets/h200`` for the small real ones). Every
comparison is per (matrix, value type) unit over the configurations both runs timed.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
from itertools import permutations
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
RUNS = HERE / "runs.csv.gz"
#: The shipped dataset each set of matrices comes from (run ``a``).
SHIPPED = {"seed5": "h200_scaled_seed5", "small": "h200"}
#: The device call each run came from (a pair from one call ran back to back on one machine).
CALL = {"b": "b", "c": "c", "c2": "c", "d": "d", "d2": "d"}
KEY = ["matrix", "dtype", "config"]


def store(specs: list[str]) -> None:
    """Write ``runs.csv.gz`` from ``label=folder`` pairs (the folder's name, ``seed5`` or ``small``, is its set)."""
    parts = []
    for spec in specs:
        label, folder = spec.split("=", 1)
        t = pd.read_csv(Path(folder) / "timings.csv.gz")
        t = t[t["status"] == "ok"][KEY + ["median_ms"]].assign(run=label, set=Path(folder).name.split("_")[0])
        parts.append(t)
    pd.concat(parts).to_csv(RUNS, index=False, float_format="%.6g", compression="gzip")


def load() -> pd.DataFrame:
    """Every run's medians, one column per run, indexed by set and KEY; run ``a`` from the shipped datasets."""
    runs = pd.read_csv(RUNS)
    frames = []
    for s, ds in SHIPPED.items():
        mine = runs[runs["set"] == s]
        a = pd.read_csv(ROOT / "datasets" / ds / "timings.csv.gz")
        a = a[(a["status"] == "ok") & a["matrix"].isin(mine["matrix"])][KEY + ["median_ms"]].assign(run="a", set=s)
        frames.append(pd.concat([a, mine]))
    return pd.concat(frames).pivot_table(index=["set"] + KEY, columns="run", values="median_ms")


def _score(pick_from: pd.Series, on: pd.Series) -> np.ndarray:
    """Per unit: the time on ``on`` of the configuration fastest on ``pick_from``, over ``on``'s fastest."""
    j = pd.concat([pick_from, on], axis=1, keys=["x", "y"]).dropna()
    g = j.groupby(level=["matrix", "dtype"])
    return (j["y"].loc[g["x"].idxmin()].to_numpy() / g["y"].min().to_numpy())


def _quality(r: np.ndarray) -> dict[str, float]:
    return {"units": len(r), "within 5 %": np.mean(r <= 1.05), "beyond 20 %": np.mean(r > 1.2),
            "geomean": float(np.exp(np.log(r).mean()))}


def tables(T: pd.DataFrame, picks: pd.DataFrame) -> str:
    out = []
    agree, ceiling, model = [], [], []
    for s, S in T.groupby(level="set"):
        S = S.droplevel("set")
        runs = [c for c in S.columns if S[c].notna().any()]
        for x, y in permutations(runs, 2):
            kind = ("shipped dataset against today" if "a" in (x, y) else
                    "one call, back to back" if CALL[x] == CALL[y] else "two device calls, today's code")
            if x < y:
                j = S[[x, y]].dropna()
                d = np.abs(np.log(j[y] / j[x]))
                agree.append({"set": s, "runs": f"{x}, {y}", "how": kind, "pairs": len(j),
                              "median gap": f"{np.expm1(np.median(d)):.2%}", "within 5 %": f"{np.mean(d <= np.log(1.05)):.1%}",
                              "90th pct gap": f"{np.expm1(np.quantile(d, 0.9)):.1%}",
                              "y / x (geomean)": f"{np.exp(np.log(j[y] / j[x]).mean()):.4f}"})
            ceiling.append({"set": s, "picked on": x, "scored on": y, "how": kind, **_quality(_score(S[x], S[y]))})
        for y in runs:
            rest = [r for r in runs if r != y]
            mean = np.exp(np.log(S[rest]).mean(axis=1, skipna=False))
            ceiling.append({"set": s, "picked on": "mean of " + ", ".join(rest), "scored on": y, "how": "the others' mean",
                            **_quality(_score(mean, S[y]))})
            units = S[y].dropna().rename("median_ms").reset_index()
            p = picks.merge(units, left_on=["matrix", "dtype", "pick"], right_on=KEY)
            best = units.groupby(["matrix", "dtype"])["median_ms"].min().rename("best")
            p = p.join(best, on=["matrix", "dtype"])
            model.append({"set": s, "scored on": y, **_quality((p["median_ms"] / p["best"]).to_numpy())})
    fmt = {"within 5 %": "{:.1%}", "beyond 20 %": "{:.1%}", "geomean": "{:.4f}"}
    for title, rows in (("Two runs' medians of the same configuration", agree),
                        ("The fastest of one run, timed in another (a model that knew the first run exactly)", ceiling),
                        ("The H200 default's held-out picks (`benchmarks/results/default_quality_h200.csv`), timed in each run",
                         model)):
        df = pd.DataFrame(rows)
        for c, f in fmt.items():
            if c in df and df[c].dtype.kind == "f":
                df[c] = df[c].map(f.format)
        out += [f"## {title}", "", df.to_markdown(index=False), ""]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", nargs="*", help="label=collect folder, stored into runs.csv.gz")
    ap.add_argument("--out", type=Path, default=HERE / "repeatability.md")
    a = ap.parse_args()
    if a.runs:
        store(a.runs)
    picks = pd.read_csv(ROOT / "benchmarks/results/default_quality_h200.csv")[["matrix", "dtype", "pick"]]
    a.out.write_text("# H200 timings measured again: agreement, ceiling, the default's picks\n\n"
                     "Sets: `seed5`, 32 of `datasets/h200_scaled_seed5`'s 41 matrices (1.0e6-8.0e6 entries); `small`, the 53 "
                     "real matrices of `../shared/matrices` (in `datasets/h200`). Runs: `a` the shipped dataset's; `b`, `c`, `d` "
                     "three device calls of 2026-12-01 (the machine given back between them); `c2` the small set again right "
                     "after `c` in the same call; `d` and `d2` the seed5 set's first 29 and 28 matrices twice in one call. Within 5 %, beyond 20 %, geomean: of the picked configuration's time over "
                     "the fastest's, per (matrix, value type).\n\n" + tables(load(), picks), encoding="utf-8")
    print(a.out.read_text(encoding="utf-8"))


if __name__ == "__main__":
    main()
