"""Whether features of load balance and of x's footprint help the cuda recipe rank large matrices (issue 38).

Usage: python studies/2026-11-27-scale-features/scale_features.py --corpus ../shared/corpus --corpus ../shared/matrices
       [--folds 4] [--repeats 2] [--min-nnz 1e6] [--out studies/2026-11-27-scale-features]

The matrices of datasets/h100, h100_large and h100_scaled are built again (generated ones from the standard corpus,
real ones from the corpora, scaled ones by ``scaled_corpus`` of the first corpus; a matrix that cannot be found is
left out of the tests and of the training) and each gets the candidate features below, cached in
``features_cache.csv.gz`` (a re-run computes only what is missing). Tests: the matrices of at least ``--min-nnz``
entries, in grouped folds (twins and scaled copies with their base matrix, ``_common.recipe``); training: every
other matrix of the three datasets, small ones included. The cuda forest of train_default ranks the tests with
pyspmv's features alone and with each candidate added, then with all of them (``bytes_prior`` 0 in every variant:
a model on its own feature columns has no bytes moved to weigh; the variants differ in their features only).

Candidates, from the CSR structure alone (as the one pass could compute them; H100 sizes where a size is needed):

- ``block_nnz_cov``: coefficient of variation of the entries per block of 256 rows (load balance between thread
  blocks of a row-per-thread kernel);
- ``warp_fill``: stored slots of a row-length-padded warp of 32 rows over the entries, sum over warps of
  32 * longest row / nnz (load balance inside a warp, no sorting);
- ``top_rows_share``: share of the entries in the longest 1 % of rows;
- ``x_window_mb``: the distinct columns read by each window of 8,448 consecutive rows (a warp per row over the
  H100's 132 SMs x 64 warps) times 8 bytes, in MB, the windows' mean weighted by their entries (against L2's 50 MB);
- ``x_window_reuse``: entries per distinct column in those windows (the same weighting).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pandas as pd
from sklearn.model_selection import GroupKFold
from tqdm.auto import tqdm

from pyspmv import FEATURE_NAMES, datasets, device_info

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/_common.py
from _common import make_model, md_header, metrics, paired_diff, ranking, recipe

HERE = Path(__file__).resolve().parent
CANDIDATES = ("block_nnz_cov", "warp_fill", "top_rows_share", "x_window_mb", "x_window_reuse")
WINDOW = 132 * 64           # rows in flight with a warp per row on the H100
BLOCK, WARP = 256, 32
VARIANTS = {"pyspmv's features": []} | {f"+ {c}": [c] for c in CANDIDATES} | {"+ all five": list(CANDIDATES)}


def candidates(indptr: np.ndarray, indices: np.ndarray) -> dict[str, float]:
    """The candidate features of a CSR structure (see the module's docstring)."""
    n = len(indptr) - 1
    nnz = int(indptr[-1])
    lengths = np.diff(indptr).astype(np.int64)
    if nnz == 0 or n == 0:
        return dict.fromkeys(CANDIDATES, 0.0)
    per_block = np.add.reduceat(lengths, np.arange(0, n, BLOCK))
    cov = float(per_block.std() / per_block.mean()) if per_block.mean() > 0 else 0.0
    pad = (-n) % WARP
    warps = np.concatenate([lengths, np.zeros(pad, np.int64)]).reshape(-1, WARP)
    fill = float(WARP * warps.max(axis=1).sum() / nnz)
    k = max(1, n // 100)
    top = float(np.sort(lengths)[-k:].sum() / nnz)
    starts = np.arange(0, n, WINDOW)
    mb, reuse, weights = [], [], []
    for s in starts:
        a, b = int(indptr[s]), int(indptr[min(s + WINDOW, n)])
        if b == a:
            continue
        distinct = len(np.unique(indices[a:b]))
        mb.append(distinct * 8 / 1e6)
        reuse.append((b - a) / distinct)
        weights.append(b - a)
    w = np.asarray(weights, dtype=np.float64)
    return {"block_nnz_cov": cov, "warp_fill": fill, "top_rows_share": top,
            "x_window_mb": float(np.average(mb, weights=w)), "x_window_reuse": float(np.average(reuse, weights=w))}


#: The H100 datasets' scaled copies: ``scaled_corpus(first corpus, *args)``'s arguments.
SCALED = ((3e6, 1.6e7, 4, 0),)


def entries(corpora: list[str], scaled: tuple[tuple[float, float, int, int], ...] = SCALED
            ) -> dict[str, datasets.CorpusEntry]:
    """Every matrix the datasets may name, by name (``scaled``: ``(min_nnz, max_nnz, per_kind, seed)`` of each
    scaled collection of the first corpus)."""
    out = {e.name: e for e in datasets.standard_corpus()}
    for c in corpora:
        out.update({e.name: e for e in datasets.folder_corpus(c)})
    for lo, hi, per_kind, seed in scaled if corpora else ():
        out.update({e.name: e for e in datasets.scaled_corpus(corpora[0], lo, hi, per_kind=per_kind, seed=seed)})
    return out


def cached_features(names: list[str], corpora: list[str], cache: Path,
                    scaled: tuple[tuple[float, float, int, int], ...] = SCALED) -> pd.DataFrame:
    have = pd.read_csv(cache) if cache.is_file() else pd.DataFrame(columns=["matrix", *CANDIDATES])
    todo = [m for m in names if m not in set(have["matrix"])]
    known = entries(corpora, scaled) if todo else {}
    rows = []
    for m in tqdm(todo, desc="candidate features", unit="matrix"):
        e = known.get(m)
        if e is None:
            continue
        M = e.build()
        rows.append({"matrix": m, **candidates(M.indptr, M.indices)})
        if len(rows) % 20 == 0:               # nothing lost when interrupted
            have = pd.concat([have, pd.DataFrame(rows)], ignore_index=True)
            have.to_csv(cache, index=False, compression="gzip")
            rows = []
    if rows:
        have = pd.concat([have, pd.DataFrame(rows)], ignore_index=True)
        have.to_csv(cache, index=False, compression="gzip")
    return have


def arguments(doc: str, out: Path = HERE) -> argparse.Namespace:
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--corpus", action="append", default=[], help="a Matrix Market folder with MANIFEST.csv")
    ap.add_argument("--folds", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--min-nnz", type=float, default=1e6)
    ap.add_argument("--out", default=str(out))
    return ap.parse_args()


def main() -> None:
    args = arguments(__doc__)
    report(args, study(args, ("h100", "h100_large", "h100_scaled"), SCALED), "H100",
           "studies/2026-11-27-scale-features/scale_features.py")


def study(args: argparse.Namespace, names_of: tuple[str, ...],
          scaled: tuple[tuple[float, float, int, int], ...]) -> pd.DataFrame:
    """Every test pick of every variant over the datasets ``names_of`` (written to ``scale_features.csv.gz``)."""
    out = Path(args.out)
    names = sorted(set(datasets.combine(*names_of, dtype=None).groups.astype(str)))
    cand = cached_features(names, args.corpus, out / "features_cache.csv.gz", scaled).drop_duplicates("matrix")
    cand = cand.astype({c: np.float64 for c in CANDIDATES})
    rows = []
    for dtype in ("float64", "float32"):
        ds = datasets.combine(*names_of, dtype=dtype)
        mat = ds.groups.astype(str).to_numpy()
        keep = np.flatnonzero(np.isin(mat, cand["matrix"]))
        X = ds.X.iloc[keep].reset_index(drop=True).join(
            pd.DataFrame({"matrix": mat[keep]}).merge(cand, on="matrix", how="left")[list(CANDIDATES)])
        y, g = ds.y.iloc[keep].reset_index(drop=True), ds.groups.iloc[keep].reset_index(drop=True)
        mat, cfg = mat[keep], X["config"].astype(str).to_numpy()
        q25, q75 = ds.q25.to_numpy()[keep], ds.q75.to_numpy()[keep]
        rec = np.array([recipe(m, set(mat)) for m in mat])
        large = np.flatnonzero(X["nnz"].to_numpy() >= args.min_nnz)
        for r in range(args.repeats):
            for k, (_, b) in enumerate(GroupKFold(args.folds, shuffle=True, random_state=r).split(large,
                                                                                              groups=rec[large])):
                test = large[b]
                fit = np.flatnonzero(~np.isin(rec, np.unique(rec[test])))
                for name, extra in VARIANTS.items():
                    # 32 trees: the recipe's n_estimators="auto" when both studies ran (24 at 234 configurations since)
                    model = make_model("forest", r, "cuda").set_params(bytes_prior=0.0, n_estimators=32)
                    cols = list(X.columns) if not extra else ["config", "value_bytes", *FEATURE_NAMES, *extra]
                    if extra:
                        model.set_params(features=[*FEATURE_NAMES, *extra], params=[])
                    Xv = X[cols] if extra else X.drop(columns=list(CANDIDATES))
                    model.fit(Xv.iloc[fit], y.iloc[fit], g.iloc[fit])
                    per = ranking(model.rank_scores(Xv.iloc[test]), y.to_numpy()[test], mat[test], cfg[test],
                                  q25[test], q75[test])
                    per["variant"], per["dtype"], per["repeat"] = name, dtype, r
                    rows.append(per)
                print(f"{dtype} repeat {r} fold {k} done", flush=True)
    allp = pd.concat(rows, ignore_index=True).rename(columns={"unit": "matrix"})
    allp.to_csv(out / "scale_features.csv.gz", index=False, compression="gzip", float_format="%.6g")
    return allp


def report(args: argparse.Namespace, allp: pd.DataFrame, gpu: str, script: str) -> None:
    """``scale_features.md`` in ``--out``: each variant's picks against pyspmv's features alone."""
    out = Path(args.out)
    cpu = device_info("cpu")
    lines = ["# Features of load balance and of x's footprint for large matrices", "",
             (f"`python {script} {' '.join(sys.argv[1:])}`, fitted on the "
              f"{cpu['processor']} dev VM ({cpu['cpu_count']} cores) on {gpu} timings; the script's docstring says what "
              f"is trained on what. Tests: {len(np.unique(allp['matrix']))} matrices of at least {args.min_nnz:.0e} "
              "entries, in each value type. Cells: picks within 5 % of the measured best (ties within [q25, q75] "
              "count as the best) / beyond 20 % / geomean t_pick / t_best, over every test of every repeat. Paired: "
              "mean of log(t_pick / t_best), variant minus pyspmv's features, z over its standard error taken over "
              "matrices (negative: the variant picks faster configurations)."), "",
             *md_header(["variant", "float64", "paired", "float32", "paired"], "lllll")]
    for name in VARIANTS:
        cells = [name]
        for dtype in ("float64", "float32"):
            g = allp[allp["dtype"] == dtype]
            a, b = g[g["variant"] == "pyspmv's features"], g[g["variant"] == name]
            m = metrics(b)
            cells.append(f"{100 * m[0]:.1f} / {100 * m[1]:.1f} / {m[2]:.4f}")
            if name == "pyspmv's features":
                cells.append("")
                continue
            mean, se = paired_diff(b.set_index(["matrix", "repeat"])["ratio"], a.set_index(["matrix", "repeat"])["ratio"])
            cells.append(f"{mean:+.4f} (z {mean / se:+.1f})" if se > 0 else f"{mean:+.4f}")
        lines.append("| " + " | ".join(cells) + " |")
    (out / "scale_features.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
