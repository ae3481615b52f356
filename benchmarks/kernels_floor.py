"""Large matrices against the memory floor: how close the best configuration comes to the GPU's copy
bandwidth, and whether our own kernels beat cuSPARSE where the structure is irregular.

Usage: python benchmarks/kernels_floor.py [--corpus DIR] [--scaled DIR] [--real DIR] [--prior TABLE ...]
                                          [--top 8] [--no-families] [--generated] [--out benchmarks/results]
                                          [--dtypes float32 float64] [--repeats 100] [--budget 0.2] [--limit N]
                                          [--back-to-back 16]
       python benchmarks/kernels_floor.py --replot benchmarks/results/kernels_floor_<gpu>.csv.gz   (no GPU)

Matrices, every one of 1e6 entries or more in the H200 datasets, rebuilt as each was made:

- ``--corpus DIR``: ``h200_scaled_seed1``, ``pyspmv.datasets.scaled_corpus(DIR, 3e6, 1.6e7, per_kind=3,
  seed=1)``;
- ``--scaled DIR``: ``h200_scaled``, ``scaled_corpus(DIR, 1e6, 5e6, per_kind=4, seed=2)`` and ``seed=3``;
- ``--real DIR``: ``h200``'s real matrices of 1e6 entries or more;

``DIR`` is a folder of real matrices with a ``MANIFEST.csv`` (``../shared/corpus``) holding the datasets' base
matrices. Each recipe reads a view of it that holds only the bases of the dataset's matrices, and keeps the
matrices the dataset holds: ``scaled_corpus`` keeps a kind's lowest-ranked files, so a file the dataset's folder
lacked could take a place, and ``h200_scaled`` was made from the corpus files under 400 kB.
- ``--generated``: a 2-D stencil of 4.5e7 entries, a power-law matrix of 1e6 rows and a banded one.

Each matrix and value type is timed in one run together with the copy bandwidth, on these configurations:

- every cuSPARSE configuration;
- the ``--top`` fastest of our own configurations for that matrix and type in the ``--prior`` tables
  (collections and earlier runs of this benchmark on the same matrices and GPU) and, unless ``--no-families``,
  the fastest of each family (kernel, and kernel in a locality order) there; all of them where there is
  no prior;
- the new axes (:data:`NEW_AXES`) as variants of those: each CSR vector or adaptive configuration timed also with
  its values as an 8- and a 16-bit table (``pyspmv.ranking.tables.variants``), same thread mapping, where the values
  fit; and each adaptive one, tables included, also with 4 entries a thread (``ept=4``).
  The prior only chooses what to time again: every number here is from this run.

Writes ``kernels_floor_<gpu>.csv.gz`` (one row per matrix, type and configuration, appended matrix by
matrix, so that an interrupted run resumes where it stopped) and ``kernels_floor_<gpu>.md``:

- ``floor_bytes``: what a CSR product must move (int32 row pointers and indices, values, x read once,
  y written once); ``eff_frac = floor_bytes / median / copy``: the fraction of the copy bandwidth
  (bytes read + written, measured in the same run) at the CSR floor, each product timed between its own events;
- ``eff_frac_b2b``: the same for the :data:`B2B_TOP` fastest timed again in runs of ``--back-to-back`` products
  between two events (``pyspmv.benchmark(back_to_back=...)``), as a solver's iterations run them;
- ``bytes_ratio = bytes_moved / floor_bytes``: what the configuration's format moves against CSR;
- ``irregular``: the coefficient of variation of the row lengths is above 1;
- the targets over every pair, over the pairs whose CSR floor passes the L2 cache (:data:`L2_BYTES`), and
  without the new families (what the pairs reach without them);
- ``kernels_floor_<gpu>.png``: each pair's best configuration and the same-size copy against the floor's size.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import atexit
import csv
import re
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd
from _internal import base_matrix, gpu, read_table, table_variants
from _md import gpu_software, provenance
from _md import md_frame as markdown
from tqdm.auto import tqdm

import pyspmv
from pyspmv.datasets import folder_corpus, scaled_corpus

#: The parameters this benchmark exists to judge, at the values it times beside each candidate's own (the other
#: value of each is the candidate's): CSR's value tables and csr/adaptive's entries a thread. Earlier rounds'
#: (``csr/merge``, ``csr/wide``, the locality order, JAD's value tables) come from the prior now.
NEW_AXES: dict[str, tuple[int, ...]] = {"vals": (8, 16), "ept": (4,)}
#: How the page names them.
NEW_LABEL = "CSR's value tables (vals=8|16) and csr/adaptive's ept=4"
#: Targets of the issue, checked in the summary.
TARGET_MEDIAN, TARGET_MIN, TARGET_IRREGULAR, TARGET_BYTES = 0.80, 0.55, 1.25, 0.8
#: The H200's L2 cache: a pair whose CSR floor is smaller can be served from it between runs (DESIGN.md reports
#: those apart).
L2_BYTES = 60e6
#: Products a run queues back to back where the fastest configurations are timed again as a solver's iterations
#: run them (``pyspmv.benchmark(back_to_back=...)``: without the events around each product), and how many.
BACK_TO_BACK, B2B_TOP = 16, 3
#: Base matrices of the scaled datasets, and the real ones, as the datasets were made from them.
SCALED_SEED1 = dict(min_nnz=3e6, max_nnz=1.6e7, per_kind=3, seeds=(1,), dataset="h200_scaled_seed1")
SCALED_H200 = dict(min_nnz=1e6, max_nnz=5e6, per_kind=4, seeds=(2, 3), dataset="h200_scaled")


def generated() -> list[pyspmv.Matrix]:
    """The large generated cases: a 2-D 5-point stencil of 4.5e7 entries, a power-law matrix of 1e6
    rows, a banded matrix of 2e7 entries."""
    return [pyspmv.generate("poisson2d", 3000), pyspmv.generate("powerlaw", 1_000_000, seed=1),
            pyspmv.generate("banded", 4_000_000)]


def floor_bytes(M: pyspmv.Matrix, itemsize: int) -> int:
    return 4 * (M.nrows + 1) + (4 + itemsize) * M.nnz + itemsize * (M.nrows + M.ncols)


def row_cv(M: pyspmv.Matrix) -> float:
    lens = np.diff(M.indptr).astype(np.float64)
    return float(lens.std() / lens.mean()) if lens.size and lens.mean() > 0 else 0.0


def family(cid: str) -> str:
    """The kernel, with ``+order`` where the matrix is in a locality order (``order=1``), ``+vals`` where its
    values are a table (``vals=8`` or ``16``) and ``+ept4`` where csr/adaptive streams 4 entries a thread."""
    c = pyspmv.config(cid)
    kw = c.format_kwargs
    return (c.kernel_id + ("+order" if kw.get("order") else "") + ("+vals" if kw.get("vals") else "")
            + (f"+ept{c.params['ept']}" if "ept" in c.params else ""))


def is_new(cid: str) -> bool:
    """Whether ``cid`` is a CSR configuration that sets a parameter of :data:`NEW_AXES` to a value it judges (JAD's
    value tables, an earlier round's, are not)."""
    c = pyspmv.config(cid)
    return c.format == "csr" and any(c.params.get(a) in vs for a, vs in NEW_AXES.items())


def base_id(cid: str) -> str:
    """``cid`` without the :data:`NEW_AXES` it sets: the configuration it is a variant of."""
    c = pyspmv.config(cid)
    kept = [f"{k}={v}" for k, v in c.params.items() if v not in NEW_AXES.get(k, ())]
    return pyspmv.config("/".join([c.kernel_id, *kept])).id


def new_variants(c: pyspmv.Config) -> list[pyspmv.Config]:
    """``c`` along :data:`NEW_AXES`: its value tables (where its kernel reads one), then each of those and ``c``
    itself with csr/adaptive's ``ept=4``; only the registry's configurations."""
    out = list(table_variants(c, NEW_AXES["vals"]))
    for v in [c, *out]:
        if "ept" not in v.params:
            try:
                out.append(pyspmv.config(f"{v.id}/ept={NEW_AXES['ept'][0]}"))
            except ValueError:                  # a kernel without the parameter
                pass
    return out


def bases_view(folder: Path, names: set[str]) -> Path:
    """A temporary folder of links to ``folder``'s matrices ``names`` and their MANIFEST rows."""
    view = Path(tempfile.mkdtemp(prefix="kernels_floor_"))
    atexit.register(shutil.rmtree, view, True)
    with open(folder / "MANIFEST.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    with open(view / "MANIFEST.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(r for r in rows if r["name"] in names)
    for n in names:
        for ext in (".mtx.gz", ".mtx"):
            if (folder / f"{n}{ext}").exists():
                (view / f"{n}{ext}").symlink_to((folder / f"{n}{ext}").resolve())
    return view


def sources(args: argparse.Namespace) -> list:
    """The matrices the arguments name (the module's docstring), as corpus entries or matrices."""
    out: list = []
    for folder, r in ((args.corpus, SCALED_SEED1), (args.scaled, SCALED_H200)):
        if folder:
            keep = set(pyspmv.datasets.load(r["dataset"]).features.matrix)
            view = bases_view(folder, {base_matrix(m) for m in keep})
            for seed in r["seeds"]:
                out += [e for e in scaled_corpus(view, r["min_nnz"], r["max_nnz"], per_kind=r["per_kind"],
                                                 seed=seed) if e.name in keep]
    if args.real:
        f = pyspmv.datasets.load("h200").features
        keep = set(f[f.nnz >= 1e6].matrix)
        out += [e for e in folder_corpus(args.real) if e.name in keep]
    if args.generated:
        out += generated()
    return out


def candidates(name: str, dtype: str, prior: pd.DataFrame | None, top: int,
               families: bool = True) -> list[pyspmv.Config]:
    """What to time for one matrix and type (the module's docstring says why)."""
    every = pyspmv.configs("cuda")
    keep = [c for c in every if c.library == "cusparse"]
    others = [c for c in every if c.library == "pyspmv" and not is_new(c.id)]
    if prior is not None:
        p = prior[(prior.matrix == name) & (prior.dtype == dtype) & (prior.status == "ok")]
        p = p[p.config.str.startswith("pyspmv/")]
        if len(p):
            best = set(p.nsmallest(top, "median_ms").config)
            if families:
                best |= set(p.loc[p.groupby(p.config.map(family)).median_ms.idxmin(), "config"])
            # a prior whose fastest are all variants of the new axes (an earlier run of this benchmark) names their
            # bases, which bring the variants back below
            best = {base_id(b) for b in best}
            others = [c for c in others if c.id in best]
    new = [v for c in others for v in new_variants(c)]
    return list(dict.fromkeys(keep + others + new))  # a prior's JAD table is also a variant of its JAD


def measure(M: pyspmv.Matrix, dtype: str, cfgs: list[pyspmv.Config], copy_gbs: float, repeats: int,
            budget_s: float, back_to_back: int = BACK_TO_BACK) -> pd.DataFrame:
    """``cfgs`` timed on ``M`` in ``dtype``, beside a copy of the pair's own CSR-floor bytes (``copy_same_gbs``,
    :func:`same_size_copy_gbs`), which says what the floor is at this size, where a product's fixed latency
    weighs as much as its bytes; the :data:`B2B_TOP` fastest also in runs of ``back_to_back`` products
    (``median_b2b_ms``, ``eff_frac_b2b``; NaN for the others, and for all with ``back_to_back`` 1)."""
    df = pyspmv.benchmark(M, cfgs, device="cuda", dtype=dtype, repeats=repeats, budget_s=budget_s,
                          progress=False)
    df["median_b2b_ms"] = np.nan
    top = df[df.status == "ok"].nsmallest(B2B_TOP, "median_ms").index
    if back_to_back > 1 and len(top):
        b2b = pyspmv.benchmark(M, list(df.config[top]), device="cuda", dtype=dtype, repeats=repeats,
                               budget_s=budget_s, progress=False, check=False, back_to_back=back_to_back)
        df.loc[top, "median_b2b_ms"] = b2b.median_ms.to_numpy()
    cf = pyspmv.config_features(M, cfgs, dtype=dtype)
    df["nrows"], df["nnz"], df["row_cv"] = M.nrows, M.nnz, row_cv(M)
    df["floor_bytes"] = floor_bytes(M, np.dtype(dtype).itemsize)
    df["bytes_moved"] = df.config.map(cf.bytes_moved)
    df["bytes_ratio"] = df.bytes_moved / df.floor_bytes
    df["eff_frac"] = df.floor_bytes / (df.median_ms * 1e6) / copy_gbs
    df["eff_frac_b2b"] = df.floor_bytes / (df.median_b2b_ms * 1e6) / copy_gbs
    df["copy_gbs"] = copy_gbs
    df["copy_same_gbs"] = same_size_copy_gbs(int(df.floor_bytes.iloc[0]))
    return df


def same_size_copy_gbs(floor: int, runs: int = 100) -> float:
    """GB/s (read + write) of device-to-device copies of ``floor / 2`` bytes, ``runs`` of them queued back to back
    between two events, as the products are timed (in batches, not one launch between two events each); NaN
    without CuPy, which launches them."""
    try:
        import cupy as cp
    except ImportError:
        return float("nan")
    n = max(floor // 2, 1)
    a, b = cp.ones(n, cp.uint8), cp.empty(n, cp.uint8)
    for _ in range(5):
        b.data.copy_from_device_async(a.data, n)
    e0, e1 = cp.cuda.Event(), cp.cuda.Event()
    e0.record()
    for _ in range(runs):
        b.data.copy_from_device_async(a.data, n)
    e1.record()
    e1.synchronize()
    return 2 * n * runs / (cp.cuda.get_elapsed_time(e0, e1) * 1e6)


def summary(df: pd.DataFrame) -> pd.DataFrame:
    """One row per matrix and type: the best configuration, the best own against the best cuSPARSE."""
    rows = []
    for (name, dtype), g in df[df.status == "ok"].groupby(["matrix", "dtype"], sort=False):
        g = g.sort_values("median_ms")
        own, cus = g[g.config.str.startswith("pyspmv/")], g[g.config.str.startswith("cusparse/")]
        if own.empty or cus.empty:
            continue
        b, o, c = g.iloc[0], own.iloc[0], cus.iloc[0]
        rows.append({
            "matrix": name, "dtype": dtype, "nnz": int(b.nnz), "row_cv": b.row_cv, "best": b.config,
            "best_us": b.median_ms * 1e3, "eff_frac": b.eff_frac, "best_bytes_ratio": b.bytes_ratio,
            "best_own": o.config, "best_cusparse": c.config, "own_vs_cusparse": c.median_ms / o.median_ms,
            "min_bytes_ratio": g.bytes_ratio.min(), "floor_mb": b.floor_bytes / 1e6,
            # a copy of the same bytes: its time over the best's (NaN in runs made before it was measured)
            "same_copy_frac": b.floor_bytes / (b.get("copy_same_gbs", np.nan) * 1e6) / b.median_ms,
            # the fastest in runs back to back (NaN in runs made before they were timed so)
            "eff_frac_b2b": g.eff_frac_b2b.max() if "eff_frac_b2b" in g else np.nan,
        })
    return pd.DataFrame(rows)


def without_new(df: pd.DataFrame) -> pd.DataFrame:
    """``df`` less the rows of :data:`NEW_AXES`' variants: what the pairs reach without them."""
    return df[~df.config.map(is_new)]


def against_base(df: pd.DataFrame) -> pd.Series:
    """Per pair where a variant of :data:`NEW_AXES` ran: the best time of the configurations they are variants of
    (:func:`base_id`) over the variants' best."""
    ok = df[df.status == "ok"]
    new = ok.config.map(is_new)
    bases = set(ok.config[new].map(base_id))
    best_new = ok[new].groupby(["matrix", "dtype"]).median_ms.min()
    best_base = ok[ok.config.isin(bases)].groupby(["matrix", "dtype"]).median_ms.min()
    return (best_base / best_new).dropna().rename("gain")


def gains_line(df: pd.DataFrame) -> str:
    """:func:`against_base` in a line: each type's median and range over the pairs."""
    g = against_base(df)
    if g.empty:
        return "- The new axes' variants against the configurations they vary: no pair ran both.\n"
    parts = [f"{dt} {v.median():.3f}x over {len(v)} pairs ({v.min():.3f}-{v.max():.3f}x)"
             for dt, v in g.groupby(level="dtype")]
    return ("- The best of the new axes' variants against the best of the configurations they vary, per pair where "
            "both ran, median: " + "; ".join(parts) + ".\n")


def targets(s: pd.DataFrame, label: str = "") -> str:
    """The issue's targets, read off the summary (``label``: which pairs, in the first line)."""
    if s.empty:
        return f"- {label}: no pair.\n"
    irr = s[s.row_cv > 1]
    geo = float(np.exp(np.log(irr.own_vs_cusparse).mean())) if len(irr) else float("nan")
    wins = s.best.map(family).value_counts()
    small = int((s.min_bytes_ratio < TARGET_BYTES).sum())
    return "\n".join([
        f"- {label}Best configuration, fraction of copy bandwidth at the CSR floor over {len(s)} matrix/type pairs: "
        f"median {s.eff_frac.median():.3f} (target {TARGET_MEDIAN}), minimum {s.eff_frac.min():.3f} "
        f"(target {TARGET_MIN}); float32 median {s[s.dtype == 'float32'].eff_frac.median():.3f}, float64 "
        f"{s[s.dtype == 'float64'].eff_frac.median():.3f}.",
        f"- Irregular pairs (row-length CV > 1): {len(irr)}; best own against best cuSPARSE, geometric mean "
        f"{geo:.3f}x (target {TARGET_IRREGULAR}x), range {irr.own_vs_cusparse.min():.3f}-"
        f"{irr.own_vs_cusparse.max():.3f}x." if len(irr) else "- No irregular pair.",
        f"- A configuration moving < {TARGET_BYTES} of CSR's bytes: {small} of {len(s)} pairs (target: half).",
        f"- A copy of each pair's own CSR-floor bytes (cudaMemcpy, back to back as the products) takes a median "
        f"{s.same_copy_frac.median():.3f} of the best configuration's time (minimum {s.same_copy_frac.min():.3f}).",
        *([f"- The {B2B_TOP} fastest timed again in runs of {BACK_TO_BACK} back to back (no events around each "
           f"product), the best's fraction of copy bandwidth at the CSR floor: median "
           f"{s.eff_frac_b2b.median():.3f}, minimum {s.eff_frac_b2b.min():.3f} ({s.eff_frac_b2b.notna().sum()} "
           "pairs)."] if s.eff_frac_b2b.notna().any() else []),
        "- Wins by family: " + ", ".join(f"{k} {v} ({v / len(s):.0%})" for k, v in wins.items()) + ".",
    ]) + "\n"


def plot(full: pd.DataFrame, path: Path) -> None:
    """The best configuration of each pair against its CSR floor's size, beside a copy of the same bytes (where
    the run measured one), both as fractions of the large copies' bandwidth, with the targets and the L2."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    s = summary(full)
    g = full.groupby(["matrix", "dtype"], sort=False)
    copy = (g.copy_same_gbs.first() / g.copy_gbs.first()).rename("same") if "copy_same_gbs" in full else None
    fig, ax = plt.subplots(figsize=(8, 4.8))
    if copy is not None:
        c = s.join(copy, on=["matrix", "dtype"])
        ax.scatter(c.floor_mb, c["same"], marker="x", s=18, color="0.6", label="a copy of the same bytes")
    new = s.best.map(is_new)
    own = s.best.str.startswith("pyspmv/") & ~new
    for mask, colour, label in ((own, "#1d3557", "best: our other kernels"), (~own & ~new, "#e63946", "best: cuSPARSE"),
                                (new, "#2a9d8f", f"best: {NEW_LABEL}")):
        ax.scatter(s.floor_mb[mask], s.eff_frac[mask], s=16, color=colour, label=label)
    for y, what in ((TARGET_MEDIAN, "median target"), (TARGET_MIN, "minimum target")):
        ax.axhline(y, ls="--", lw=0.8, color="0.3")
        ax.annotate(what, (s.floor_mb.min(), y), xytext=(2, 2), textcoords="offset points", fontsize=8)
    ax.axvline(L2_BYTES / 1e6, ls=":", lw=0.8, color="0.3")
    ax.annotate("L2", (L2_BYTES / 1e6, ax.get_ylim()[1]), xytext=(3, -12), textcoords="offset points", fontsize=8)
    ax.set(xscale="log", xlabel="CSR floor, MB (bytes a CSR product must move)",
           ylabel="fraction of the large copies' bandwidth", title="Each matrix/type pair at the memory floor")
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def figures(full: pd.DataFrame) -> str:
    """The page's lines of figures: the targets over every pair, past the L2 and without the new axes."""
    s = summary(full)
    big = s[s.floor_mb > L2_BYTES / 1e6]
    return (targets(s) + gains_line(full) + targets(big, f"CSR floor past the L2 ({L2_BYTES / 1e6:.0f} MB), ")
            + targets(summary(without_new(full)), f"Without {NEW_LABEL}: "))


def body(full: pd.DataFrame, md: Path) -> str:
    """The page from its figures on: the lines, the figure, the table of pairs."""
    return f"{figures(full)}\n![each pair at the memory floor]({md.stem}.png)\n\n{markdown(summary(full))}"


def rewrite(csv: Path) -> None:
    """Redraw the figure of a run's CSV and recompute its page's figures and table (no GPU): the page's paragraphs
    before its first figure stay as the run wrote them."""
    full = pd.read_csv(csv)
    md = csv.with_name(csv.name.replace(".csv.gz", ".md"))
    head = md.read_text(encoding="utf-8").split("\n- Best configuration", 1)[0]
    md.write_text(head + "\n" + body(full, md), encoding="utf-8")
    plot(full, md.with_suffix(".png"))


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", type=Path, help="folder of the real matrices h200_scaled_seed1 scales")
    ap.add_argument("--scaled", type=Path, help="folder of only the real matrices h200_scaled scales")
    ap.add_argument("--real", type=Path, help="folder of the real matrices (h200's of 1e6+ entries)")
    ap.add_argument("--prior", type=Path, nargs="*", default=[],
                    help="timings of the same matrices: collections' timings.csv.gz, earlier runs' CSV")
    ap.add_argument("--top", type=int, default=8)
    ap.add_argument("--no-families", dest="families", action="store_false",
                    help="from the prior, only the --top fastest (not also each other family's fastest)")
    ap.add_argument("--generated", action="store_true", help="add the large generated matrices")
    ap.add_argument("--out", type=Path, default=Path("benchmarks/results"))
    ap.add_argument("--dtypes", nargs="+", default=["float32", "float64"])
    ap.add_argument("--repeats", type=int, default=100)
    ap.add_argument("--budget", type=float, default=0.2, help="seconds of timed runs per configuration")
    ap.add_argument("--limit", type=int, help="at most this many matrices")
    ap.add_argument("--back-to-back", type=int, default=BACK_TO_BACK,
                    help=f"products a run queues when the {B2B_TOP} fastest are timed again (1: not timed again)")
    ap.add_argument("--replot", type=Path, help="only redraw the figure of this run's CSV and recompute its page's "
                    "figures and table beside it, its opening paragraphs kept (no GPU needed)")
    args = ap.parse_args(argv)
    if args.replot:
        rewrite(args.replot)
        return

    info = gpu.device_info()
    tag = re.sub(r"[^a-z0-9]+", "_", info["name"].lower()).strip("_")
    args.out.mkdir(parents=True, exist_ok=True)
    csv, md = args.out / f"kernels_floor_{tag}.csv.gz", args.out / f"kernels_floor_{tag}.md"
    prior = pd.concat([read_table(p)[["matrix", "dtype", "config", "status", "median_ms"]]
                       for p in args.prior]) if args.prior else None
    done = set()
    if csv.exists():
        old = pd.read_csv(csv)
        done = set(old.matrix + "/" + old.dtype)
    todo_sources = sources(args)
    todo_sources = todo_sources[:args.limit] if args.limit else todo_sources
    t0 = time.perf_counter()
    for src in tqdm(todo_sources, desc="matrices"):
        name = src.name
        todo = [d for d in args.dtypes if f"{name}/{d}" not in done]
        if not todo:
            continue
        M = src if isinstance(src, pyspmv.Matrix) else src.build()
        copy_gbs = gpu.copy_bandwidth(1 << 30, repeats=20)  # per matrix: the same run, the card as it is now
        for dtype in todo:
            df = measure(M, dtype, candidates(name, dtype, prior, args.top, args.families), copy_gbs, args.repeats,
                         args.budget, args.back_to_back)
            df.to_csv(csv, mode="a", header=not csv.exists(), index=False, float_format="%.6g")
    full = pd.read_csv(csv)
    s = summary(full)
    with open(md, "w", encoding="utf-8") as f:
        f.write(f"# Large matrices against the memory floor on {info['name']}\n\n{provenance('cuda')}\n\n")
        f.write(f"{gpu_software(info)}; copy bandwidth {full.copy_gbs.median():.0f} GB/s (median over "
                f"the matrices, each measured beside its own timings; read + write); median of up to "
                f"{args.repeats} event-timed runs per configuration (fewer where {args.budget} s ran out). "
                f"Configurations timed: every cuSPARSE one, and our own configurations (in a locality order, "
                f"order=1, the time includes gathering x and scattering y) "
                + (f"that were among the {args.top} fastest for the pair in the prior tables"
                   + (", or the fastest of their family there" if args.families else "")
                   if prior is not None else "(all of them)")
                + f"; and the variants of each of those along {NEW_LABEL}.\n\n")
        f.write(body(full, md))
    plot(full, md.with_suffix(".png"))
    print(figures(full))
    print(s.to_string(index=False, float_format=lambda v: f"{v:.3g}"))
    print(f"{len(full)} rows in {csv}; {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
