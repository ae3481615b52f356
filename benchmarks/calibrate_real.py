"""Three calibrations judged against the shipped model on real matrices the calibration never saw (issue 39).

Usage: python benchmarks/calibrate_real.py WORK --corpus FOLDER [--corpus FOLDER ...] [--machine TEXT]
       [--calibrations 3] [--budget 0.05] [--max-nnz 3e6] [--time-limit S] [--out benchmarks/results/calibrate_real.md]

In WORK (resumed when run again: each step skips what it finds done):

1. ``truthA``: ``pyspmv collect`` of every matrix of the corpora (folders with MANIFEST.csv) that calibration
   does not measure (the real matrices shipped with pyspmv are left out), every CPU configuration, both value types;
2. ``cal1`` ... ``calN``: ``pyspmv.calibrate('cpu')`` from scratch with its defaults (each its own measurements
   folder and model file; its wall time recorded);
3. ``truthB``: the same collection again, after the calibrations: the truth timed twice, minutes apart.

Each model picks, for each (matrix, value type), the configuration it predicts fastest; the pick's measured
time against the best's, in truthA and in truthB, gives the share within 5 % of the best (a pick whose
[q25, q75] overlaps the best's counts as the best, as pyspmv.evaluate does), beyond 20 %, and the geometric
mean t_pick/t_best. The truth's own spread: truthA's fastest configuration timed by truthB. A calibration
passes when, in both truths, it is at least as good as the shipped model on every measure, and reaches the
issue's targets (85 % within 5 %, at most 3 % beyond 20 %, geomean at most 1.03).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _md import machine, md_header, md_row, provenance
from calibrate import picks, repeat_picks

import pyspmv
from pyspmv.datasets.corpus import REAL_FOLDER, folder_corpus
from pyspmv.training.defaults import TIME_LIMIT_S

ROOT = Path(__file__).resolve().parents[1]
TARGET = {"within<5%": 0.85, "within>20%": 0.03, "geomean": 1.03}


def metrics(per: pd.DataFrame) -> dict[str, float]:
    return {"picks": len(per), "within<5%": float((per["slowdown"] < 0.05).mean()),
            "within>20%": float((per["slowdown"] > 0.20).mean()),
            "geomean": float(np.exp(np.mean(np.log(per["ratio"]))))}


def truth(folder: Path, entries: list, budget: float) -> pyspmv.datasets.Dataset:
    if not (folder / "metadata.json").is_file() or len(list((folder / "parts").glob("*.csv.gz"))) < len(entries):
        pyspmv.datasets.collect(entries, folder, device="cpu", dtypes=("float32", "float64"), budget_s=budget,
                                progress=True)
    return pyspmv.datasets.load(folder, dtype=None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("work", help="folder of the truths, calibrations and models (resumed)")
    ap.add_argument("--corpus", action="append", required=True, help="a Matrix Market folder with MANIFEST.csv")
    ap.add_argument("--machine", help="the machine, in words (default: processor and cores)")
    ap.add_argument("--calibrations", type=int, default=3)
    ap.add_argument("--budget", type=float, default=0.05, help="the truth's timing budget per configuration (s)")
    ap.add_argument("--max-nnz", type=float, default=3e6)
    ap.add_argument("--time-limit", type=float, default=TIME_LIMIT_S, help="each calibration's (s; its default)")
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "calibrate_real.md"))
    args = ap.parse_args()
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    seen = {e.name for e in folder_corpus(REAL_FOLDER)}
    entries, names = [], set()
    for c in args.corpus:
        for e in folder_corpus(c):
            if e.name not in seen and e.name not in names and e.nnz <= args.max_nnz:
                entries.append(e)
                names.add(e.name)
    log = work / "log.json"
    record = json.loads(log.read_text()) if log.is_file() else {}
    A = truth(work / "truthA", entries, args.budget)
    record.setdefault("truthA_done", time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))
    for i in range(1, args.calibrations + 1):
        model = work / f"cal{i}.pyspmv"
        if not model.is_file():
            t0 = time.monotonic()
            c = pyspmv.calibrate("cpu", folder=work / f"cal{i}", out=model, restart=True, time_limit_s=args.time_limit)
            record[f"cal{i}"] = {"wall_s": round(time.monotonic() - t0, 1), "choice": c.choice,
                                 "matrices": len(c.matrices), "decision": c.judged.get("decision")}
            log.write_text(json.dumps(record, indent=1))
    B = truth(work / "truthB", entries, args.budget)
    record.setdefault("truthB_done", time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime()))
    log.write_text(json.dumps(record, indent=1))

    shipped = pyspmv.default_model("cpu")
    models = {"shipped default": shipped} | {f"calibration {i}": pyspmv.load_model(work / f"cal{i}.pyspmv")
                                             for i in range(1, args.calibrations + 1)}
    rows, per_all = [], []
    for tname, ds in (("truthA", A), ("truthB", B)):
        for mname, rm in models.items():
            p = picks(rm, ds)
            per_all.append(p.assign(model=mname, truth=tname))
            for dt in ("all", "float32", "float64"):
                rows.append({"truth": tname, "model": mname, "dtype": dt,
                             **metrics(p if dt == "all" else p[p["dtype"] == dt])})
    again = repeat_picks(A, B)
    spread = metrics(again)
    table = pd.DataFrame(rows)
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    pd.concat(per_all, ignore_index=True).to_csv(out.with_suffix(".csv"), index=False, float_format="%.6g")

    def verdict(i: int) -> tuple[bool, bool]:
        ok_ship, ok_target = True, True
        for tname in ("truthA", "truthB"):
            t = table[(table["truth"] == tname) & (table["dtype"] == "all")].set_index("model")
            c, s = t.loc[f"calibration {i}"], t.loc["shipped default"]
            ok_ship &= bool(c["within<5%"] >= s["within<5%"] and c["within>20%"] <= s["within>20%"]
                            and c["geomean"] <= s["geomean"])
            ok_target &= bool(c["within<5%"] >= TARGET["within<5%"] and c["within>20%"] <= TARGET["within>20%"]
                              and c["geomean"] <= TARGET["geomean"])
        return ok_ship, ok_target

    lines = ["# Calibration judged on real matrices it never saw", "", provenance(host=args.machine or machine()), "",
             (f"Truth: `pyspmv collect` of {A.groups.nunique()} real matrices of {', '.join(Path(c).name for c in args.corpus)} "
              f"(up to {args.max_nnz:.0e} entries; the {len(seen)} real matrices shipped for calibration left out), every "
              f"CPU configuration, both value types, --budget {args.budget}: truthA before the calibrations "
              f"({record.get('truthA_done')}), truthB after them ({record.get('truthB_done')}). The shipped default "
              f"was trained on datasets/cpu (an AMD EPYC 2-core VM, 2026-11-23), which holds these matrices."),
             "",
             (f"The truth's own spread: truthA's fastest configuration timed by truthB is within 5 % of truthB's best for "
              f"{spread['within<5%']:.1%} of {spread['picks']} picks, beyond 20 % for {spread['within>20%']:.1%}, "
              f"geomean {spread['geomean']:.3f}: no model can be judged finer than that."),
             "", *md_header(["truth", "model", "value types", "picks", "within 5 %", "beyond 20 %", "geomean t_pick/t_best"],
                            "lllrrrr")]
    for r in rows:
        lines.append(md_row([r["truth"], r["model"], r["dtype"], r["picks"], f"{100 * r['within<5%']:.1f} %",
                             f"{100 * r['within>20%']:.1f} %", f"{r['geomean']:.3f}"]))
    lines += ["", *md_header(["calibration", "wall s", "matrices measured", "choice", "decision",
                              "as good as shipped on every measure (A and B)", "targets met (A and B)"], "lrrllll")]
    for i in range(1, args.calibrations + 1):
        r = record.get(f"cal{i}", {})
        ship, tgt = verdict(i)
        lines.append(md_row([i, r.get("wall_s"), r.get("matrices"), f"`{r.get('choice')}`", r.get("decision"),
                             "yes" if ship else "no", "yes" if tgt else "no"]))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
