"""DIA's kernel, A/B in one process on the matrices of the ``dia`` collection: the refresh's DIA rows ran slower
than the shipped ones (a median 0.78 of their speed), most on small matrices of many diagonals. Four builds of the
kernel, chosen at each launch by ``SPMV_PROBE_DIA`` in a probe build (``probe_tree.diff``; not kept): ``14`` one row
a thread, the diagonal loop unrolled 4 (before 49b2118); ``21`` two rows, not unrolled (49b2118); ``22`` two rows,
unrolled 2; ``24`` two rows, unrolled 4. Each matrix and type: every DIA configuration in every mode, modes
interleaved, each timing checked against scipy by :func:`pyspmv.benchmark`; cuSPARSE's CSR default beside them as
a control against the shipped rows.

On the H200, with the probe build installed and the ``prepare`` folder carried::

    python dia_ab.py run DIR OUT          # appends OUT/dia_ab.csv (resumable: a matrix written is skipped)

With the kept kernel (``kernels/dia.cu`` chooses one row a thread unrolled 4, or two rows where the diagonals are few
and the rows many), its ``dia`` collection (``refresh.py collect``) is the comparison on the same matrices, and::

    python dia_ab.py large OUT            # OUT/dia_large.csv: the kept kernel on the few-diagonal matrices of
                                          # 1e6-4e6 rows that 2026-12-02-dia-rows-per-thread measured

A second probe (``probe2_tree.diff``, on the kept kernel) adds mode ``14`` beside the kept one-row kernel, ``10``
(a scalar sum, an early return, a 32-bit row, as before 49b2118): ``python dia_ab.py run DIR OUT 10 14``, then
``python dia_ab.py forms dia_ab2.csv.gz`` appends the comparison to ``dia_ab.md``.

Then, anywhere: ``python dia_ab.py report dia_ab.csv.gz dia_large.csv.gz LABEL=TIMINGS ...`` writes ``dia_ab.md``
beside this script (each LABEL=TIMINGS: a ``dia`` collection's ``timings.csv.gz``).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from refresh import DATASETS, DEFAULT, pool  # noqa: E402  (this study's own module)

import pyspmv  # noqa: E402

MODES = ("14", "21", "22", "24")
CONTROL = "cusparse/csr/default"


def run(src: Path, out: Path, modes: tuple[str, ...] = MODES) -> None:
    plan, have = json.loads((src / "plan.json").read_text()), pool(src)
    dia = [pyspmv.config(c) for c in plan["dia"]["configs"]]
    control = [pyspmv.config(CONTROL)]
    path = out / "dia_ab.csv"
    done = set(pd.read_csv(path)["matrix"]) if path.exists() else set()
    for name in sorted(plan["dia"]["matrices"], key=lambda m: have[m].nnz):
        if name in done:
            continue
        M, rows = have[name].build(), []
        for dt in ("float32", "float64"):
            for mode in modes:
                os.environ["SPMV_PROBE_DIA"] = mode
                df = pyspmv.benchmark(M, dia, device="cuda", dtype=dt, repeats=100, budget_s=0.05, progress=False)
                df["mode"] = mode
                rows.append(df)
            df = pyspmv.benchmark(M, control, device="cuda", dtype=dt, repeats=100, budget_s=0.05, progress=False)
            df["mode"] = "control"
            rows.append(df)
        d = pd.concat(rows)
        d["matrix"], d["nrows"], d["nnz"] = name, M.nrows, M.nnz
        d.to_csv(path, mode="a", header=not path.exists(), index=False)
        best = d[d["mode"] != "control"].groupby(["dtype", "mode"]).median_ms.min().unstack("mode") * 1e3
        print(name, M.nnz, best.round(2).to_dict("index"), flush=True)


def large(out: Path) -> None:
    cfgs = [pyspmv.config(c) for c in ("pyspmv/dia/bs=128", "pyspmv/dia/bs=256", "pyspmv/dia/bs=512",
                                        "pyspmv/dia/bs=1024")]
    mats = {"poisson2d_1000": pyspmv.generate("poisson2d", 1000), "poisson2d_2000": pyspmv.generate("poisson2d", 2000),
            "poisson3d_100": pyspmv.generate("poisson3d", 100), "banded_1e6": pyspmv.generate("banded", 1_000_000)}
    rows = []
    for name, M in mats.items():
        for dt in ("float32", "float64"):
            df = pyspmv.benchmark(M, cfgs, device="cuda", dtype=dt, repeats=100, budget_s=0.2, progress=False)
            df["matrix"], df["nrows"], df["nnz"] = name, M.nrows, M.nnz
            rows.append(df)
            print(name, dt, f"best {df.median_ms.min() * 1e3:.2f} us", flush=True)
    pd.concat(rows).to_csv(out / "dia_large.csv", index=False)


def shipped_rows() -> tuple[pd.Series, pd.Series]:
    """The default's datasets' ok medians by (matrix, dtype, config), and each pair's best DIA median."""
    t = pd.concat([pd.read_csv(DATASETS / n / "timings.csv.gz") for n in DEFAULT])
    t = t[t.status == "ok"].set_index(["matrix", "dtype", "config"]).median_ms
    dia = t[t.index.get_level_values("config").str.startswith("pyspmv/dia/")]
    return t, dia.groupby(level=["matrix", "dtype"]).min()


def report(csv: Path, large_csv: Path, kept: dict[str, Path]) -> None:
    d = pd.read_csv(csv)
    d = d[d.status == "ok"]
    shipped, dia_shipped = shipped_rows()
    best = d[d["mode"] != "control"].groupby(["matrix", "dtype", "nnz", "nrows", "mode"]).median_ms.min()
    best = best.unstack("mode").reset_index()
    ctl = d[d["mode"] == "control"].set_index(["matrix", "dtype", "config"]).median_ms
    both = ctl.index.intersection(shipped.index)
    lines = [f"# DIA's kernel, four builds, on the {best.matrix.nunique()} matrices of the refresh's `dia` job\n",
             f"Each matrix and type's best DIA configuration in each mode, as ratios of times (the table: geometric "
             f"means by rows); {len(d)} timings. Control: cuSPARSE's CSR "
             f"default here against the shipped rows, shipped/here median "
             f"{(shipped[both] / ctl[both]).median():.3f} ({len(both)} pairs).\n"]
    for mode in MODES[:1] + MODES[2:]:
        g = best["21"] / best[mode]
        lines.append(f"- mode {mode} against 21 (49b2118): median {g.median():.3f}x, {g.min():.3f}-{g.max():.3f}x, "
                     f"geometric mean {np.exp(np.log(g).mean()):.3f}x")
    best["rows"] = pd.cut(best.nrows, [0, 1e4, 1e5, 3e5, 1e6, 1e9])
    lines += ["", "| rows | pairs | 14/21 | 22/21 | 24/21 | best mode (count) |", "|---|---:|---:|---:|---:|---|"]
    for band, g in best.groupby("rows", observed=True):
        r = {m: np.exp(np.log(g["21"] / g[m]).mean()) for m in ("14", "22", "24")}
        top = g[list(MODES)].idxmin(axis=1).value_counts().to_dict()
        lines.append(f"| {band} | {len(g)} | {r['14']:.3f} | {r['22']:.3f} | {r['24']:.3f} | {top} |")
    probe = best.set_index(["matrix", "dtype"])[["14", "21"]]
    lines += ["", "Each later `dia` collection (a later device call, `refresh.py collect`), best DIA configuration "
              "against the shipped rows (measured with the one-row kernel before 49b2118) and this call's modes; "
              "ratios of times, > 1: the collection is faster; median (min-max) over the pairs:", "",
              "| collection | pairs | shipped / it | mode 21 / it | mode 14 / it | pairs beyond 5 % of shipped |",
              "|---|---:|---:|---:|---:|---:|"]
    for label, path in kept.items():
        k = pd.read_csv(path)
        k = k[k.status == "ok"].groupby(["matrix", "dtype"]).median_ms.min()
        r = {n: (v / k).dropna() for n, v in (("shipped", dia_shipped), ("21", probe["21"]), ("14", probe["14"]))}
        cells = " | ".join(f"{v.median():.3f} ({v.min():.3f}-{v.max():.3f})" for v in r.values())
        off = int((abs(np.log(r["shipped"])) > np.log(1.05)).sum())
        lines.append(f"| {label} | {len(r['shipped'])} | {cells} | {off} |")
    lines += ["", "The kept kernel on few-diagonal matrices of many rows (two rows a thread), best DIA configuration, "
              "µs:", "", "| matrix | dtype | rows | µs |", "|---|---|---:|---:|"]
    big = pd.read_csv(large_csv)
    for (name, dt, n), t in big[big.status == "ok"].groupby(["matrix", "dtype", "nrows"], sort=False).median_ms:
        lines.append(f"| {name} | {dt} | {n:,} | {t.min() * 1e3:.2f} |")
    (Path(__file__).resolve().parent / "dia_ab.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


def forms(csv: Path) -> None:
    d = pd.read_csv(csv)
    d = d[d.status == "ok"]
    b = d[d["mode"] != "control"].groupby(["matrix", "dtype", "mode"]).median_ms.min().unstack("mode")
    sh, dia = shipped_rows()
    ctl = d[d["mode"] == "control"].set_index(["matrix", "dtype", "config"]).median_ms
    both = ctl.index.intersection(sh.index)
    g, r = b["14"] / b["10"], (dia / b["10"]).dropna()
    lines = ["", f"The one-row kernel's two forms in one process (`probe2_tree.diff`, {len(b)} pairs): mode 10 (scalar "
             f"sum, early return, 32-bit row; kept) against 14 (the two-row loop with one row) median "
             f"{g.median():.3f}x "
             f"as fast, {g.min():.3f}-{g.max():.3f}x, geometric mean {np.exp(np.log(g).mean()):.3f}x. Shipped rows "
             f"against mode 10: median {r.median():.3f} ({r.min():.3f}-{r.max():.3f}); cuSPARSE's CSR default, shipped "
             f"against this call, {(sh[both] / ctl[both]).median():.3f}."]
    path = Path(__file__).resolve().parent / "dia_ab.md"
    path.write_text(path.read_text() + "\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    cmd, rest = sys.argv[1], sys.argv[2:]
    if cmd == "run":
        run(Path(rest[0]), Path(rest[1]), tuple(rest[2:]) or MODES)
    elif cmd == "large":
        large(Path(rest[0]))
    elif cmd == "forms":
        forms(Path(rest[0]))
    elif cmd == "report":
        report(Path(rest[0]), Path(rest[1]), {a.split("=", 1)[0]: Path(a.split("=", 1)[1]) for a in rest[2:]})
    else:
        raise SystemExit(__doc__)
