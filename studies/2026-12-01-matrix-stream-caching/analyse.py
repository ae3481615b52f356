"""The tables of results.md from this folder's CSVs (no GPU): python analyse.py > results.md"""
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).parent
FLOOR_BINS = [0, 15, 25, 40, 60, 90, 200]          # CSR floor, MB (1e6 bytes)
WS_BINS = [0, 25, 40, 60, 90, 200]                 # matrix + CG's four vectors, MiB


def gmean(x: pd.Series) -> float:
    return float(np.exp(np.log(x).mean()))


def table(df: pd.DataFrame) -> str:
    df = df.copy()
    df.columns = [str(c) for c in df.columns]
    head = "| " + " | ".join([df.index.name or "", *df.columns]) + " |"
    rule = "| --- |" + " ---: |" * len(df.columns)
    body = ["| " + " | ".join([str(i), *("" if pd.isna(v) else f"{v:.0f}" if c == "count" else f"{v:.3f}"
                                         for c, v in zip(df.columns, row))]) + " |"
            for i, row in zip(df.index, df.to_numpy())]
    return "\n".join([head, rule, *body])


def products(name: str, modes: list[str]) -> str:
    d = pd.read_csv(HERE / name)
    d = d[d.status == "ok"]
    m = d.groupby(["matrix", "dtype", "config", "mode"]).median_ms.median().unstack()
    fb = d.groupby(["matrix", "dtype", "config"]).floor_bytes.first() / 1e6
    bins = pd.cut(fb, FLOOR_BINS)
    out = [f"`{name}`: {d.matrix.nunique()} matrices, both value types, {d['round'].nunique()} rounds (median of "
           "rounds); evict-first's time over the mode's, geometric mean per CSR floor (MB): above 1, the mode is "
           "faster."]
    for mode in modes:
        t = (m.evict / m[mode]).groupby([m.index.get_level_values("config"), bins]).agg(gmean).unstack()
        t.index.name = f"{mode} (pairs: {len(m)})"
        out += ["", table(t.dropna(axis=1, how="all"))]
    r = d[d["mode"] == "evict"].pivot_table(index=["matrix", "dtype", "config"], columns="round", values="median_ms")
    q = (r[1] / r[0]).quantile([0.1, 0.5, 0.9])
    out += ["", f"Noise: evict-first's second round over its first, 10th / 50th / 90th percentiles "
                f"{q.iloc[0]:.3f} / {q.iloc[1]:.3f} / {q.iloc[2]:.3f}."]
    return "\n".join(out)


def solves_cg() -> str:
    d = pd.read_csv(HERE / "solves_cg.csv.gz")
    fixed = d[d.config != "async"]
    m = fixed.groupby(["problem", "dtype", "config", "mode"]).us_it.median().unstack()
    first = fixed.groupby(["problem", "dtype", "config"]).first()
    ws = (first.matrix_bytes + first.vector_bytes) / 2**20
    ratio = m.keep / m.evict
    t = ratio.groupby(pd.cut(ws, WS_BINS)).agg(["count", "median", "min", "max"])
    t.index.name = "matrix + 4 vectors, MiB"
    spread = fixed.groupby(["problem", "dtype", "config", "mode"]).us_it.agg(lambda v: (v.max() - v.min()) / v.median())
    out = ["`solves_cg.csv.gz`: fixed CG, 300 iterations, 3 rounds a mode; kept matrix's µs an iteration over "
           "evict-first's (above 1: keeping is slower), by the iteration's working set:", "",
           table(t), "", f"Rounds' spread within a mode: median {spread.median():.3f}, largest {spread.max():.3f}. "
           f"Over all {len(ratio)}: median {ratio.median():.3f}.", ""]
    a = d[d.config == "async"]
    if len(a):
        s = a.groupby(["problem", "mode"]).wall_s.agg(["median", "min", "max"]).unstack("mode")
        out += ["`async` CG to rtol 1e-8, seconds end to end, median [min-max] of 3 rounds (the tree of 37cfa59: "
                "'rule' kept the matrix where it, x and y fit the L2):", "",
                "| problem | " + " | ".join(s.columns.levels[1]) + " |",
                "| --- |" + " ---: |" * len(s.columns.levels[1])]
        for p in s.index:
            out.append(f"| {p} | " + " | ".join(f"{s.loc[p, ('median', k)]:.4f} [{s.loc[p, ('min', k)]:.4f}-"
                                                   f"{s.loc[p, ('max', k)]:.4f}]" for k in s.columns.levels[1]) + " |")
    return "\n".join(out)


def solves_after() -> str:
    d = pd.read_csv(HERE / "solves_after.csv.gz")
    m = d.groupby(["method", "problem", "config", "mode"]).us_it.median().unstack()
    t = pd.DataFrame({"evict µs": m.evict, "keep / evict": m.keep / m.evict, "solver's own / evict": m.rule / m.evict})
    t.index = [" ".join(i) for i in t.index]
    t.index.name = "solver, problem, configuration (float64)"
    lines = table(t).splitlines()
    return "\n".join(["`solves_after.csv.gz` (tree 2eae73b, the solver sets its plans evict-first): fixed solves, "
                      "200 iterations, 3 rounds a mode:", "", *lines])


if __name__ == "__main__":
    print("# Matrix streams: kept in the L2 or evict-first (H200)\n")
    print("## Single products, 37cfa59's rule and keeping always against evict-first\n")
    print(products("products.csv.gz", ["rule", "keep"]))
    print("\n## Single products again, the rule against evict-first, default repeats (200), each between its events\n")
    print(products("products_rule.csv.gz", ["rule"]))
    print("\n## The same, 16 products back to back between two events\n")
    print(products("products_rule_b2b.csv.gz", ["rule"]))
    print("\n## CG solves, the matrix kept against evict-first\n")
    print(solves_cg())
    print("\n## After the change: the solver's own choice, keep and evict\n")
    print(solves_after())
