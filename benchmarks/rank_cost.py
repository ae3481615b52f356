"""What ranking costs with the shipped defaults, and after how many products a pick pays for itself.

    python benchmarks/rank_cost.py [--corpus ../shared/corpus] [--machine "..."] [--out benchmarks/results/rank_cost.md]

1. ``pyspmv.rank(A)`` from Python with the default ``cuda`` and ``cpu`` models, exact and (from 1e5
   entries) estimated (``estimate=True``), on generated matrices (2-D Laplacians, uniform random) of 1e3
   to 1e7 entries and real matrices of ``--corpus`` of every decade present: median µs, and the same in
   single-thread ``cpu/csr/rows`` products of that matrix (:func:`pyspmv.benchmark`'s median with one OpenMP
   thread, through threadpoolctl; ``rank()`` keeps the core's threads).
2. The C evaluation alone: ``spmv_rank_rows`` (every configuration predicted, then sorted) on the design
   rows of one matrix, timed in C through an exported header (``benchmarks/_timing.py``'s driver).
3. The floor of an exact pass, from 1e5 entries: ``benchmarks/pass_floor.c`` (compiled here with ``cc -O3
   -fopenmp``, the core's threads) reads every index once, and besides marks every occupied diagonal (the
   least work that gives one of the 33 features, ``ndiag``, exactly); both against the same single-thread
   product and the exact ``rank()`` of part 1.
4. Break-even on the matrices held out of ``datasets/h100`` and ``datasets/cpu`` (25 %, split by matrix,
   seed 0; the default model kind fitted on the other 75 %), per matrix and value type:
   (rank time + conversion time of the pick beyond the baseline's) / (t baseline - t pick), the baseline
   being cuSPARSE CSR default on the H100 and ``cpu/csr/rows`` on the CPU. Times from the datasets
   (``convert_ms`` includes the GPU upload); rank time interpolated in log-log from part 1's exact
   measurements at the matrix's entry count. Where the pick is not faster than the baseline it never
   pays (counted apart); the median is over all held-out units, never-paying ones as infinite.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import importlib
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
from _internal import column_for, make_model, split_by_matrix
from _md import md_header, write_report
from _timing import c_times, laplacian, product_us, reps_for, timed, uniform

import pyspmv
from pyspmv import datasets

ROOT = Path(__file__).resolve().parents[1]
RANK = importlib.import_module("pyspmv.ranking.rank")  # the module; pyspmv.rank is the function
default_model = pyspmv.default_model
BASELINE = {"h100": "cusparse/csr/default", "cpu": "cpu/csr/rows"}


def generated() -> list[pyspmv.Matrix]:
    return [laplacian(k) for k in (14, 45, 142, 447, 1414)] + [uniform(n, 10) for n in (100, 1000, 10_000, 100_000,
                                                                                        1_000_000)]


def real(corpus: Path) -> list[pyspmv.Matrix]:
    """One matrix of the corpus nearest each decade from 1e3, and its largest."""
    if not corpus.is_dir():
        return []
    entries = datasets.folder_corpus(corpus)
    picks = {min(entries, key=lambda e: abs(np.log10(max(e.nnz, 1)) - d)).name for d in (3, 4, 5, 6)}
    picks.add(entries[-1].name)
    out = []
    for e in entries:
        if e.name in picks:
            M = e.build()
            M.name = e.name
            out.append(M)
    return out


def cost_table(mats: list[tuple[str, pyspmv.Matrix]]) -> tuple[list[str], pd.DataFrame]:
    lines = md_header(["matrix", "kind", "nnz", "1-thread CSR product µs", "rank() cuda µs (default mode)", "products",
                       "estimate=True µs", "products", "rank() cpu µs", "products"], "llrrrrrrrr")
    rows = []
    for kind, M in mats:
        reps = reps_for(M.nnz)
        p = product_us(M, reps)
        cu = timed(lambda M=M: pyspmv.rank(M, device="cuda"), reps)
        est = timed(lambda M=M: pyspmv.rank(M, device="cuda", estimate=True), reps) if M.nnz >= 1e5 else np.nan
        cp = timed(lambda M=M: pyspmv.rank(M, device="cpu"), reps)
        rows.append({"matrix": M.name, "kind": kind, "nnz": M.nnz, "product_us": p, "rank_cuda_us": cu,
                     "rank_est_us": est, "rank_cpu_us": cp})
        e = "–" if np.isnan(est) else f"{est:.3g} | {est / p:.2f}"
        lines.append(f"| {M.name} | {kind} | {M.nnz:,} | {p:.3g} | {cu:.3g} | {cu / p:.2f} | "
                     f"{e if e != '–' else '– | –'} | {cp:.3g} | {cp / p:.2f} |")
        print(lines[-1], flush=True)
    return lines, pd.DataFrame(rows)


def model_eval_table(mats: list[tuple[str, pyspmv.Matrix]]) -> list[str]:
    lines = md_header(["device", "model", "matrix", "nnz", "C model µs (evaluate + sort)", "C rank µs (header, whole)"],
                      "lllrrr")
    with tempfile.TemporaryDirectory() as tmp:
        for device in ("cuda", "cpu"):
            rm = default_model(device)
            for _kind, M in (mats[0], min(mats, key=lambda km: abs(km[1].nnz - 1e5))):
                rank_us, _rows_us, model_us, _ = c_times(rm, M, Path(tmp), 2000)
                lines.append(f"| {device} | {rm.source.split('(')[0]} | {M.name} | {M.nnz:,} | {model_us:.3g} | {rank_us:.3g} |")
                print(lines[-1], flush=True)
    return lines


def floor_table(cost: pd.DataFrame, mats: list[tuple[str, pyspmv.Matrix]]) -> list[str]:
    """Part 3: pass_floor.c's two loops on the matrices of 1e5 entries and more, against part 1's times (``cc``
    compiles it, as it compiles part 2's driver)."""
    lines = md_header(["matrix", "nnz", "threads", "1-thread CSR product µs", "read indices µs", "GB/s", "products",
                       "diagonal marks µs", "products", "exact rank() µs / marks"], "lrrrrrrrrr")
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "pass_floor"
        subprocess.run(["cc", "-O3", "-fopenmp", "-std=c11", str(ROOT / "benchmarks" / "pass_floor.c"), "-o", str(exe)],
                       check=True)
        for (_kind, M), row in zip(mats, cost.itertuples(), strict=True):
            if M.nnz < 1e5:
                continue
            path = Path(tmp) / "csr.bin"
            with open(path, "wb") as f:
                f.write(np.array([M.nrows, M.ncols, M.nnz], dtype=np.int64).tobytes())
                f.write(np.ascontiguousarray(M.indptr, dtype=np.int32).tobytes())
                f.write(np.ascontiguousarray(M.indices, dtype=np.int32).tobytes())
            out = subprocess.run([str(exe), str(path), str(reps_for(M.nnz))], check=True, capture_output=True,
                                 text=True).stdout.split()
            read_us, marks_us, nt = float(out[0]), float(out[1]), int(out[2])
            p = row.product_us
            gbs = 4 * (M.nrows + 1 + M.nnz) / read_us / 1e3
            lines.append(f"| {M.name} | {M.nnz:,} | {nt} | {p:.3g} | {read_us:.3g} | {gbs:.3g} | {read_us / p:.2f} | "
                         f"{marks_us:.3g} | {marks_us / p:.2f} | {row.rank_cuda_us / marks_us:.1f} |")
            print(lines[-1], flush=True)
    return lines


def break_even(name: str, cost: pd.DataFrame) -> tuple[list[str], pd.DataFrame]:
    ds = datasets.load(name, dtype=None)
    feats = ds.features.set_index("matrix")
    col = "rank_cuda_us" if name == "h100" else "rank_cpu_us"
    c = cost.sort_values("nnz")
    lx, ly = np.log(c["nnz"].to_numpy(float)), np.log(c[col].to_numpy(float))
    tr, te = split_by_matrix(ds.groups, 0.25, 0)
    device = "cuda" if name == "h100" else "cpu"
    source = default_model(device).source
    kind = source.split("(")[0].removesuffix("Model").lower()  # the default's kind, e.g. ForestModel(...)
    model = make_model(kind, device=device)
    model.fit(ds.X.iloc[tr], ds.y[tr], groups=np.asarray(ds.groups)[tr],
              convert_ms=np.asarray(column_for(ds, "convert_ms"))[tr])
    Xte = ds.X.iloc[te].reset_index(drop=True)
    sc = np.asarray(model.rank_scores(Xte), dtype=float)
    t = ds.table.set_index(["matrix", "dtype", "config"])
    out = []
    te_df = pd.DataFrame({"matrix": np.asarray(ds.groups)[te], "vb": Xte["value_bytes"].to_numpy(),
                          "config": Xte["config"].astype(str).to_numpy(), "s": np.where(np.isfinite(sc), sc, np.inf)})
    for (m, vb), d in te_df.groupby(["matrix", "vb"]):
        dtype = "float64" if vb == 8 else "float32"
        pick = d["config"].to_numpy()[int(np.argmin(d["s"].to_numpy()))]
        try:
            b, p = t.loc[(m, dtype, BASELINE[name])], t.loc[(m, dtype, pick)]
        except KeyError:
            continue
        nnz = float(feats.loc[m, "nnz"]) if "nnz" in feats.columns else np.nan
        rank_ms = float(np.exp(np.interp(np.log(nnz), lx, ly))) / 1e3
        conv = max(0.0, float(p["convert_ms"]) - float(b["convert_ms"])) if pick != BASELINE[name] else 0.0
        gain = float(b["median_ms"]) - float(p["median_ms"])
        be = (rank_ms + conv) / gain if gain > 0 else np.inf
        out.append({"matrix": m, "dtype": dtype, "nnz": nnz, "pick": pick, "rank_ms": rank_ms, "extra_convert_ms": conv,
                    "gain_ms": gain, "break_even": be})
    df = pd.DataFrame(out)
    pays = df[np.isfinite(df["break_even"])]
    line = (f"| {name} | {source.split('(')[0]} vs `{BASELINE[name]}` | {len(df)} | {len(pays)} | "
            f"{np.median(df['break_even']):.3g} | {np.median(pays['break_even']) if len(pays) else np.nan:.3g} | "
            f"{(df['break_even'] <= 100).mean() * 100:.0f} % | {np.median(df['rank_ms']) * 1e3:.3g} | "
            f"{np.median(pays['extra_convert_ms']) if len(pays) else np.nan:.3g} |")
    print(line, flush=True)
    return [line], df


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--corpus", type=Path, default=ROOT.parent / "shared" / "corpus")
    ap.add_argument("--machine", default=None, help="the machine in words (default: processor, cores, versions)")
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "rank_cost.md")
    a = ap.parse_args()
    mats = [("generated", M) for M in generated()] + [("real", M) for M in real(a.corpus)]
    mats.sort(key=lambda km: km[1].nnz)
    cost_lines, cost = cost_table(mats)
    eval_lines = model_eval_table(mats)
    floor_lines = floor_table(cost, mats)
    be_lines, frames = [], []
    for name in ("h100", "cpu"):
        lines, df = break_even(name, cost)
        be_lines += lines
        frames.append(df.assign(dataset=name))
    pd.concat(frames).to_csv(a.out.with_suffix(".csv"), index=False)
    text = [
        (f"With the shipped default models (cuda: {default_model('cuda').source.split('(')[0]}, cpu: {default_model('cpu').source.split('(')[0]}); "
        "medians of repeated calls."), "",
        "## rank() from Python, against one single-thread CSR product of the same matrix", "",
        ("Targets (issue 12): at most 1 product from 1e5 to 1e7 entries, at most 25 µs below 1e4 entries, at most 0.1 "
        "product at 1e7 entries estimated. `rank()`'s default mode estimates the features from a sample of at most "
        f"{RANK.ESTIMATE_ROWS} rows and {RANK.ESTIMATE_NNZ} entries from {RANK.ESTIMATE_MIN_NNZ:.0e} entries "
        "(`pyspmv.ranking.rank.ESTIMATE_MIN_NNZ`, `ESTIMATE_ROWS`, `ESTIMATE_NNZ`) and is exact below."), "", *cost_lines, "",
        "## The model alone, in C", "",
        "Target: at most 5 µs to evaluate and sort the 135 H100 configurations with the default model.", "", *eval_lines,
        "",
        "## The floor of an exact pass", "",
        ("What any exact pass over the indices costs at least, on the same threads as `rank()`: every index read "
        "once (bytes: 4 per entry and per row, over the time: the bandwidth it reached), and besides one byte set "
        "per entry for its diagonal, then the per-thread marks merged and counted (the least work that gives one of "
        "the 33 features, `ndiag`, exactly; `benchmarks/pass_floor.c`). The exact design rows do this and, per "
        "entry, gaps, runs, segments of x, BSR tiles and band moments. Products: single-thread `cpu/csr/rows` "
        "products of the same matrix, from the first table."), "", *floor_lines, "",
        "## Break-even on held-out matrices", "",
        ("Products after which ranking plus the extra conversion are paid back by the pick's gain over the baseline "
        "(held-out 25 % of each dataset, split by matrix, seed 0; both value types). Target: median at most 100 on "
        "datasets/h100."), "",
        *md_header(["dataset", "model vs baseline", "held-out units", "pick faster than baseline",
                    "median break-even (all)", "median (paying ones)", "≤ 100 products", "median rank µs",
                    "median extra conversion ms"], "llrrrrrrr"), *be_lines]
    write_report(a.out, "What ranking costs, and when a pick pays for itself", text, host=a.machine)


if __name__ == "__main__":
    main()
