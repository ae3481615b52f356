"""The per-product floor of issue 47's pairs: ``prepare`` writes the probe's input from the standing floor page's
CSV; ``report`` reads the probe's output (``bound.csv``) beside that page and writes ``results.md``.

The probe (``bound.cu``) times a kernel that only streams each pair's bytes, as the floor benchmark times a product
(each launch between its own events, queued behind a gate). Its fraction of the copy bandwidth at the CSR floor is
the most any configuration moving at least those bytes can reach on the benchmark's measure.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import gzip
import sys
from pathlib import Path

import numpy as np
import pandas as pd

HERE = Path(__file__).resolve().parent
PAGE = HERE.parents[1] / "benchmarks" / "results" / "kernels_floor_nvidia_h200.csv.gz"
TARGET_MEDIAN, TARGET_MIN = 0.8, 0.55


def pairs(page: Path = PAGE) -> pd.DataFrame:
    """One row per matrix and type of the page: rows, CSR floor, the fewest bytes a timed configuration moves and
    the best configuration's fraction of copy bandwidth at the floor (between its own events)."""
    df = pd.read_csv(page)
    ok = df[df.status == "ok"]
    g = ok.groupby(["matrix", "dtype"], sort=False)
    return pd.DataFrame({"nrows": g.nrows.first(), "floor_bytes": g.floor_bytes.first(),
                         "fewest": g.bytes_moved.min().clip(upper=g.floor_bytes.first()).astype(np.int64),
                         "eff_frac": g.eff_frac.max(), "eff_frac_b2b": g.eff_frac_b2b.max()}).reset_index()


def prepare(out: Path) -> None:
    p = pairs()
    out.write_text("".join(f"{r.matrix} {r.dtype} {r.nrows} {r.floor_bytes} {r.fewest}\n" for r in p.itertuples()))


def read_probe(path: Path) -> tuple[dict[str, float], pd.DataFrame]:
    lines = (gzip.open(path, "rt") if path.suffix == ".gz" else path.open()).read().splitlines()
    head = {k: float(v) for k, v in (ln.split(",") for ln in lines[:3])}
    rows = [ln.split(",") for ln in lines[4:]]
    df = pd.DataFrame(rows, columns=lines[3].split(","))
    for c in ("nrows", "floor_bytes", "bytes", "grid", "event_us", "b2b_us"):
        df[c] = pd.to_numeric(df[c])
    return head, df


def report(probe: Path, out: Path) -> None:
    head, df = read_probe(probe)
    copy = head["copy_gbs"] * 1e9
    best = df.groupby(["matrix", "dtype", "which"]).agg(event_us=("event_us", "min"), b2b_us=("b2b_us", "min"),
                                                        floor_bytes=("floor_bytes", "first"))
    fr = (best.floor_bytes / (best.event_us * 1e-6) / copy).unstack("which")
    fb = (best.floor_bytes / (best.b2b_us * 1e-6) / copy).unstack("which")
    p = pairs().set_index(["matrix", "dtype"])
    # the bound of a pair: the stream of the fewest bytes a configuration moves (the floor's where none moves less)
    p["stream_floor"] = fr["floor"]
    p["bound"] = fr["fewest"].fillna(fr["floor"]) if "fewest" in fr else fr["floor"]
    p["bound_b2b"] = fb["fewest"].fillna(fb["floor"]) if "fewest" in fb else fb["floor"]
    p["of_bound"] = p.eff_frac / p.bound
    p["floor_mb"] = p.floor_bytes / 1e6
    bands = pd.cut(p.floor_mb, [0, 20, 40, 60, np.inf], labels=["< 20 MB", "20-40 MB", "40-60 MB", "> 60 MB"])
    lines = [
        "# The per-product floor of issue 47's pairs on the H200\n",
        f"Copy bandwidth (1 GiB device to device, read + write, median of 20): {head['copy_gbs']:.0f} GB/s; an "
        f"empty launch timed as a product: {head['empty_us']:.2f} µs. A kernel that only streams the bytes "
        "(16-byte loads, no gathers), timed as `benchmarks/kernels_floor.py` times a product (its own events, "
        "queued behind a gate), the best of three grid shapes and two load kinds; its fraction of the copy "
        "bandwidth at the CSR floor. `bound`: streaming the fewest bytes any timed configuration of the pair "
        "moves; `stream_floor`: streaming the CSR floor itself; `best`: the page's best configuration "
        f"(`{PAGE.name}`).\n",
        f"- Pairs: {len(p)}. Bound: median {p.bound.median():.3f}, minimum {p.bound.min():.3f} (targets "
        f"{TARGET_MEDIAN} and {TARGET_MIN} for the best configuration).",
        f"- Pairs whose bound is below {TARGET_MIN}: {(p.bound < TARGET_MIN).sum()}; below {TARGET_MEDIAN}: "
        f"{(p.bound < TARGET_MEDIAN).sum()}.",
        f"- Streaming the CSR floor itself: median {p.stream_floor.median():.3f}, minimum "
        f"{p.stream_floor.min():.3f}; in runs of 16 back to back the bound's median is {p.bound_b2b.median():.3f}.",
        f"- The best configuration at a median {p.of_bound.median():.3f} of its pair's bound "
        f"(10th-90th percentile {p.of_bound.quantile(0.1):.3f}-{p.of_bound.quantile(0.9):.3f}).\n",
        "| CSR floor | pairs | bound, median | bound, min | below 0.55 | below 0.8 | best, median | best / bound |",
        "|---|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for band, g in p.groupby(bands, observed=True):
        lines.append(f"| {band} | {len(g)} | {g.bound.median():.3f} | {g.bound.min():.3f} | "
                     f"{(g.bound < TARGET_MIN).sum()} | {(g.bound < TARGET_MEDIAN).sum()} | "
                     f"{g.eff_frac.median():.3f} | {g.of_bound.median():.3f} |")
    low = p[p.bound < TARGET_MIN]
    share = head["empty_us"] * 1e-6 / (low.floor_bytes / (TARGET_MIN * copy))
    lines += ["", f"The pairs whose bound is below the minimum target (an empty launch takes {share.min():.2f}-"
              f"{share.max():.2f} of the time the target allows them):", "",
              "| matrix | dtype | CSR floor MB | fewest / floor | bound | bound, 16 back to back | best |",
              "|---|---|---:|---:|---:|---:|---:|"]
    for (m, dt), r in p[p.bound < TARGET_MIN].sort_values("bound").iterrows():
        lines.append(f"| {m} | {dt} | {r.floor_mb:.1f} | {r.fewest / r.floor_bytes:.3f} | {r.bound:.3f} | "
                     f"{r.bound_b2b:.3f} | {r.eff_frac:.3f} |")
    out.write_text("\n".join(lines) + "\n")
    p.round(4).to_csv(HERE / "bound_pairs.csv")


if __name__ == "__main__":
    if sys.argv[1:2] == ["prepare"]:
        prepare(Path(sys.argv[2]))
    else:
        report(Path(sys.argv[2]) if len(sys.argv) > 2 else HERE / "bound.csv", HERE / "results.md")
