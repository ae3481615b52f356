"""How well the calibrated model picks on another machine than the shipped one's, against the shipped default.

Usage: python benchmarks/calibrate.py TRUTH --calibrated MODEL --machine TEXT --settings TEXT
       [--wall SECONDS] [--out benchmarks/results/calibrate.md]

TRUTH is a dataset folder that ``pyspmv collect`` measured on the other machine (every configuration of
real matrices); MODEL is what ``pyspmv calibrate`` saved there. For each (matrix, value type) of TRUTH,
each model picks the configuration it predicts fastest among those measured ``ok``; the pick's measured
time against the best's gives the share of picks within 5 % of the best (a pick whose [q25, q75]
overlaps the best's counts as the best, as pyspmv.evaluate does; and strictly, t_pick / t_best <= 1.05),
beyond 20 %, and the geometric mean t_pick / t_best. Writes the table as markdown and the per-matrix
picks beside it (``.csv``).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np
import pandas as pd
from _internal import fingerprint_of, ranking, unit_key
from _md import provenance

import pyspmv
from pyspmv import device_info

ROOT = Path(__file__).resolve().parents[1]
#: The CPU kernels run on several threads only above this much work (csrc/spmv_internal.h,
#: SPMV_OMP_MIN_WORK, a C constant the glue does not expose): below it a thread setting changes little.
PARALLEL_NNZ = 4_000


def picks(rm: pyspmv.RankModel, ds: pyspmv.datasets.Dataset) -> pd.DataFrame:
    """One row per (matrix, value type) of ``ds``: the model's pick and its slowdown (pyspmv.evaluate.ranking)."""
    unit = unit_key(ds.groups, ds.X["value_bytes"])
    per = ranking(rm.predict(ds.X), ds.y, unit, ds.X["config"], ds.q25, ds.q75)
    per["dtype"] = np.where(per["unit"].str.endswith("@4.0"), "float32", "float64")
    per["matrix"] = per["unit"].str.rsplit("@", n=1).str[0]
    per["nnz"] = per["matrix"].map(ds.features.set_index("matrix")["nnz"])
    return per


def repeat_picks(first: pyspmv.datasets.Dataset, second: pyspmv.datasets.Dataset) -> pd.DataFrame:
    """As :func:`picks`, the "model" being ``first``'s measured times: each (matrix, value type)'s fastest
    configuration in the first collection, scored by the second one's times (what the machine's own noise
    leaves of a perfect prediction)."""
    key = ["group", "value_bytes", "config"]
    a = pd.DataFrame({"group": first.groups.to_numpy(), "value_bytes": first.X["value_bytes"].to_numpy(),
                      "config": first.X["config"].to_numpy(), "t": first.y.to_numpy()})
    b = pd.DataFrame({"group": second.groups.to_numpy(), "value_bytes": second.X["value_bytes"].to_numpy(),
                      "config": second.X["config"].to_numpy()})
    score = b.merge(a, on=key, how="left")["t"].to_numpy()
    unit = unit_key(second.groups, second.X["value_bytes"])
    per = ranking(score, second.y, unit, second.X["config"], second.q25, second.q75)
    per["dtype"] = np.where(per["unit"].str.endswith("@4.0"), "float32", "float64")
    per["matrix"] = per["unit"].str.rsplit("@", n=1).str[0]
    per["nnz"] = per["matrix"].map(second.features.set_index("matrix")["nnz"])
    return per


def row(label: str, per: pd.DataFrame) -> str:
    within = float((per["slowdown"] < 0.05).mean())
    strict = float((per["ratio"] <= 1.05).mean())
    beyond = float((per["slowdown"] > 0.20).mean())
    geo = float(np.exp(np.mean(np.log(per["ratio"]))))
    return (f"| {label} | {len(per)} | {100 * within:.1f} % | {100 * strict:.1f} % | {100 * beyond:.1f} % | "
            f"{geo:.3f} |")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("truth", help="dataset folder measured on the other machine")
    ap.add_argument("--calibrated", required=True, help="the model `pyspmv calibrate` saved there")
    ap.add_argument("--machine", required=True, help="the machine, in words")
    ap.add_argument("--settings", required=True, help="its thread settings, in words")
    ap.add_argument("--wall", type=float, help="wall time of the `pyspmv calibrate` command that measured (s)")
    ap.add_argument("--again", help="a second `pyspmv collect` of TRUTH's matrices on the same machine (its repeatability)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "calibrate.md"))
    args = ap.parse_args()
    ds = pyspmv.datasets.load(args.truth, dtype=None)
    cal = pyspmv.load_model(args.calibrated)
    shipped = pyspmv.default_model(cal.device)
    c = cal.meta.get("calibration", {})
    there = fingerprint_of({"device": shipped.device, **shipped.meta.get("device_info", {})})
    meta = json.loads((Path(args.truth) / "metadata.json").read_text(encoding="utf-8"))
    per = {"calibrated": picks(cal, ds), "shipped default": picks(shipped, ds)}
    if args.again:
        ds2 = pyspmv.datasets.load(args.again, dtype=None)
        per.update({"calibrated, timed again": picks(cal, ds2), "shipped default, timed again": picks(shipped, ds2),
                    "the first truth's best, timed again": repeat_picks(ds, ds2)})
    both = pd.concat([p.assign(model=k) for k, p in per.items()], ignore_index=True)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    both.to_csv(out.with_suffix(".csv"), index=False, float_format="%.6g")
    cv = pd.DataFrame(c.get("cv", {})).T
    lines = [
        "# Calibration on another machine",
        "",
        provenance(host=f"{args.machine} ({args.settings})"),
        "",
        (f"Machine: {args.machine}; settings: {args.settings}. The shipped default ({shipped.source.split('(')[0]}) "
         f"was trained on datasets/{shipped.meta.get('dataset', '?')}, measured with {there['threads']} OpenMP threads "
         f"on {there['processor']}; the calibrated model's fingerprint: {cal.meta.get('fingerprint')}."),
        "",
        (f"Calibration (`pyspmv calibrate`, same settings): {c.get('matrices')} generated matrices measured with "
         f"--budget {c.get('budget_s')} up to {c.get('max_nnz', 0):.0e} entries, {c.get('remeasured')} configurations "
         f"re-measured for a q75/q25 spread, adaptation chosen: `{c.get('choice')}`; {c.get('wall_s')} s inside "
         f"calibrate()" + (f", {args.wall:.0f} s for the whole command." if args.wall else ".")
         if c.get("measured", True) else
         (f"Calibration: {c.get('matrices')} generated matrices measured there by `pyspmv calibrate` (same settings, "
          f"--budget {c.get('budget_s')} up to {c.get('max_nnz', 0):.0e} entries" +
          (f", {args.wall:.0f} s for the whole command" if args.wall else "") + "); the adaptation replayed on "
          f"those measurements by `pyspmv calibrate --no-measure --folder ...` on the "
          f"{device_info('cpu')['processor']} machine that wrote this table, with this tree's "
          f"shipped default: `{c.get('choice')}` chosen, {c.get('wall_s')} s.")),
        "",
        (f"Ground truth: `pyspmv collect` of {ds.groups.nunique()} real matrices under the same settings "
         f"(--budget {meta.get('collection', {}).get('budget_s')}), every CPU configuration, both value types: "
         f"{len(per['calibrated'])} (matrix, value type) picks per model."),
        "",
        ("| model | picks | within 5 % (ties in [q25, q75] count as best) | t_pick/t_best <= 1.05 | beyond 20 % | "
         "geomean t_pick/t_best |"),
        "| --- | ---: | ---: | ---: | ---: | ---: |",
    ]
    if args.again:
        lines[-3:-3] = ["", (f"Timed again: the same matrices collected a second time, the same way, right after "
                         f"calibrate ({Path(args.again).name}); its last row scores the first collection's fastest "
                         "configuration by the second's times, the floor this machine's own noise sets.")]
    for k, p in per.items():
        lines.append(row(k, p))
        for dt in ("float32", "float64"):
            lines.append(row(f"{k}, {dt}", p[p["dtype"] == dt]))
        lines.append(row(f"{k}, matrices of {PARALLEL_NNZ:,} entries or more", p[p["nnz"] >= PARALLEL_NNZ]))
    if not cv.empty:
        lines += ["", ("Cross-validation inside calibrate (GroupKFold by matrix over the measured matrices), "
                       "the basis of its choice:"), "", "| candidate | within 5 % | beyond 20 % | geomean |",
                  "| --- | ---: | ---: | ---: |"]
        lines += [f"| {k} | {100 * r['within<5%']:.1f} % | {100 * r['within>20%']:.1f} % | {r['geomean_ratio']:.3f} |"
                  for k, r in cv.iterrows()]
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
