"""results.md from oracle.py's solves and the standing page of benchmarks/solvers_gpu.py.

    python report.py [PAGE]

PAGE: the page whose ``async`` runs the table sets beside the oracle (default ../../benchmarks/results/solvers_gpu.md).
Per problem, medians of the timed rounds:
- ``set-up``: the fixed cuSPARSE solve's wall time less its iterations (checks, upload, plan), which any policy pays;
- ``oracle``: fixed cuSPARSE over the fastest fixed solve end to end (its conversion on the GPU included);
- ``free conversion``: fixed cuSPARSE over its set-up plus its iterations at the fastest configuration's time an
  iteration: a policy that picked right before the first iteration and whose conversion cost nothing;
- ``an iteration``: fixed cuSPARSE's time an iteration over the fastest configuration's.
"""
# SPDX-License-Identifier: BSD-3-Clause
import re
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from oracle import FIXED

HERE = Path(__file__).resolve().parent


def page_ratios(page: Path) -> dict[str, float]:
    """``fixed / async`` of each row of the page's table."""
    out = {}
    for line in page.read_text().splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 13 and re.fullmatch(r"[\d.]+", cells[9]):
            out[cells[0]] = float(cells[9])
    return out


def main() -> None:
    page = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE.parents[1] / "benchmarks/results/solvers_gpu.md"
    asy = page_ratios(page)
    s = pd.read_csv(HERE / "solves.csv.gz")
    rows = []
    for m, g in s.groupby("matrix", sort=False):
        med = g.groupby("config")[["wall_s", "iterate_s", "iterations"]].median()
        f = med.loc[FIXED]
        setup = f.wall_s - f.iterate_s
        per = med.iterate_s / med.iterations
        best, fast = med.wall_s.idxmin(), per.idxmin()
        rows.append({"problem": m, "nnz": int(g.nnz.iloc[0]), "fixed s": f.wall_s, "set-up s": setup,
                     "iterations": int(f.iterations), "configurations": len(med), "fastest end to end": best,
                     "oracle": f.wall_s / med.wall_s[best],
                     "free conversion": f.wall_s / (setup + per.min() * f.iterations),
                     "fastest an iteration": fast, "an iteration": per[FIXED] / per.min(),
                     "page's async": asy.get(m, np.nan)})
    r = pd.DataFrame(rows)
    gm = {c: float(np.exp(np.log(r[c]).mean())) for c in ("oracle", "free conversion", "an iteration", "page's async")}
    lines = ["# The large band's oracle: fixed CG on each problem's fastest configurations (H200)", "",
             "Medians of 3 timed rounds (one untimed first); float64, rtol 1e-8, maxiter 3000; the ratios are fixed "
             "cuSPARSE's time over the other (see report.py for each column). `page's async`: the standing "
             f"page ({page.name}, 5 rounds, another host and tree).", ""]
    fmt = {"fixed s": "{:.4f}", "set-up s": "{:.4f}", "oracle": "{:.3f}x", "free conversion": "{:.3f}x",
           "an iteration": "{:.3f}x", "page's async": "{:.2f}x", "nnz": "{:,}"}
    lines.append("| " + " | ".join(r.columns) + " |")
    lines.append("| " + " | ".join("---" if c in ("problem", "fastest end to end", "fastest an iteration") else "---:"
                                   for c in r.columns) + " |")
    for _, row in r.iterrows():
        cells = [fmt[c].format(row[c]) if c in fmt else (f"`{row[c]}`" if "fastest" in c else str(row[c]))
                 for c in r.columns]
        lines.append("| " + " | ".join(cells) + " |")
    lines += ["", "Geometric means over the 13 problems: " + ", ".join(f"{k} {v:.3f}x" for k, v in gm.items()) + "."]
    (HERE / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-1:]))


if __name__ == "__main__":
    main()
