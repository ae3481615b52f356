"""Rules that break the cuda default's near-ties: whether the predicted times the forest cannot tell apart are better
settled by the bytes each configuration moves, or by staying with cuSPARSE's CSR default. Cross-validation inside the
training matrices only, on the folds of studies/_common.py (first made for 2026-11-24-more-large).

Usage: python studies/2026-11-24-pick-rules/pick_rules.py [--dataset h100] [--extra h100_large] [--folds 4] [--repeats 5] [--first-repeat 0]
                                      [--out studies/2026-11-24-pick-rules]

The forest (train_default's recipe) is fitted once per fold; each rule re-ranks the same predictions:

- ``default``: the predicted times as they are;
- ``bytes^a``: each predicted time multiplied by the configuration's bytes moved per byte of the matrix's values
  (:func:`pyspmv.models.forest.bytes_per_value`, as ``ForestModel(bytes_prior=a)`` ranks) to the power ``a`` (a prior that,
  between two predictions a few per cent apart, favours the configuration that moves fewer bytes: a product of a
  large matrix is bandwidth-bound);
- ``fewest bytes within e``: among the configurations predicted at most ``e`` slower than the fastest, the one that
  moves the fewest bytes (the fastest of those on equal bytes);
- ``cuSPARSE default within e``: cuSPARSE CSR default (on the cpu: ``cpu/csr/rows``) when it is predicted at most
  ``e`` slower than the fastest (no conversion, the library's own choice).

Writes ``pick_rules_<dataset>.md`` (picks within 5 % of the best, ties in [q25, q75] counting as the best; beyond 20 %; geomean
t_pick / t_best; all tests and those of at least 3e6 entries; the paired difference against ``default``; and, for the
record only, the held-out split) and ``pick_rules_<dataset>.csv.gz`` (one row per test).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from pyspmv import datasets, device_info

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # studies/_common.py
from _common import (
    LARGE,
    bytes_per_value,
    make_model,
    md_header,
    metrics,
    paired_diff,
    pool_of,
    ranking,
    recipe,
    repeated_folds,
)

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
REFERENCES = ("cusparse/csr/default", "cpu/csr/rows")  # the library's own CSR product, by device
Rule = Callable[[np.ndarray, np.ndarray, np.ndarray, np.ndarray], np.ndarray]


def power(a: float) -> Rule:
    def rule(s: np.ndarray, nbytes: np.ndarray, cfg: np.ndarray, mat: np.ndarray) -> np.ndarray:
        return s * nbytes ** a
    return rule


def within(eps: float, prefer: Callable[[np.ndarray, np.ndarray], np.ndarray]) -> Rule:
    """Scores whose lowest, per matrix, is the preferred one (``prefer``: a sort key per row, lower preferred, over
    the rows within ``eps`` of the matrix's fastest prediction); the other rows keep their order."""
    def rule(s: np.ndarray, nbytes: np.ndarray, cfg: np.ndarray, mat: np.ndarray) -> np.ndarray:
        out = s.copy()
        fin = np.isfinite(s)
        lo = pd.Series(np.where(fin, s, np.inf)).groupby(mat).transform("min").to_numpy()
        near = fin & (s <= (1 + eps) * lo)
        key = np.where(near, prefer(nbytes, cfg), np.inf)
        pick = pd.DataFrame({"m": mat, "k": key, "s": s}).sort_values(["m", "k", "s"]).groupby("m").head(1).index
        pick = pick[np.isfinite(key[pick])]
        out[pick] = lo[pick] * (1 - 1e-9)
        return out
    return rule


def fewest_bytes(nbytes: np.ndarray, cfg: np.ndarray) -> np.ndarray:
    return nbytes


def reference(nbytes: np.ndarray, cfg: np.ndarray) -> np.ndarray:
    return np.where(np.isin(cfg, REFERENCES), 0.0, np.inf)


RULES: dict[str, Rule] = {
    "default": power(0.0),
    **{f"bytes^{a}": power(a) for a in (0.02, 0.05, 0.1, 0.2)},
    **{f"fewest bytes within {e:.0%}": within(e, fewest_bytes) for e in (0.01, 0.02, 0.05)},
    **{f"cuSPARSE default within {e:.0%}": within(e, reference) for e in (0.01, 0.02, 0.05)},
}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dataset", default="h100")
    ap.add_argument("--extra", nargs="*", default=["h100_large"], help="datasets whose matrices join the pool "
                    "(train-default's --extra)")
    ap.add_argument("--folds", type=int, default=4)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--first-repeat", type=int, default=0, help="seed of the first repeat (a pilot run's repeats "
                    "left out of the run that decides)")
    ap.add_argument("--out", default=str(HERE))
    args = ap.parse_args()
    rows = []
    t0 = time.perf_counter()
    for dtype in ("float64", "float32"):
        own = datasets.load(args.dataset, dtype=dtype)
        ds = datasets.combine(args.dataset, *args.extra, dtype=dtype)
        mat = ds.groups.astype(str).to_numpy()
        nnz_of = ds.features.set_index("matrix")["nnz"]
        rec = np.array([recipe(m, set(mat)) for m in mat])
        cfg = ds.X["config"].astype(str).to_numpy()
        nbytes = bytes_per_value(ds.X)  # per byte of values, as the default ranks: per matrix, the same order
        y, q25, q75 = ds.y.to_numpy(), ds.q25.to_numpy(), ds.q75.to_numpy()
        pool, held = pool_of(own, ds)
        splits = [(r, k, fit, test, "cv") for r, k, fit, test in repeated_folds(pool, rec, args.folds, args.repeats,
                                                                            args.first_repeat)]
        for r, k, fit, test, part in [*splits, (0, -1, pool, held, "held-out")]:
            model = make_model("forest", r).fit(ds.X.iloc[fit], ds.y.iloc[fit], ds.groups.iloc[fit])
            s = np.asarray(model.rank_scores(ds.X.iloc[test]), dtype=np.float64)
            for name, rule in RULES.items():
                per = ranking(rule(s, nbytes[test], cfg[test], mat[test]), y[test], mat[test], cfg[test], q25[test],
                              q75[test])
                per["nnz"] = per["unit"].map(nnz_of).to_numpy()
                per["rule"], per["dtype"], per["repeat"], per["part"] = name, dtype, r, part
                rows.append(per)
            if k in (args.folds - 1, -1):
                print(f"{dtype} {part} repeat {r} done at {time.perf_counter() - t0:.0f} s", flush=True)
    allp = pd.concat(rows, ignore_index=True).rename(columns={"unit": "matrix"})
    out = Path(args.out)
    dname = Path(args.dataset).name
    extra = " ".join(args.extra)
    allp.to_csv(out / f"pick_rules_{dname}.csv.gz", index=False, compression={"method": "gzip", "mtime": 0})
    cpu = device_info("cpu")
    lines = [f"# The default's near-ties on `{dname}`: pick rules under cross-validation", "",
             (f"`python studies/2026-11-24-pick-rules/pick_rules.py --dataset {args.dataset} --extra {extra} --folds {args.folds} --repeats {args.repeats} --first-repeat "
              f"{args.first_repeat}`, fitted on the "
              f"{cpu['processor']} dev VM ({cpu['cpu_count']} cores). Pool: the training side of `{dname}`'s split (by "
              f"matrix, seed 0){' and `' + extra + '`' if extra else ''}; grouped {args.folds}-fold over it, twins in one fold, "
              f"{args.repeats} repeats (seeds {args.first_repeat}-{args.first_repeat + args.repeats - 1}); one forest per fold, re-ranked by every rule (the script's docstring says "
              "what each is). Cells: picks within 5 % of the measured best (ties within [q25, q75] count as the "
              f"best) / beyond 20 % / geomean t_pick / t_best; large: tests of at least {LARGE:.0e} entries. Paired: "
              "mean of log(t_pick / t_best) minus the default's on the same tests, and that over its standard error "
              "taken over matrices (|z| < 2: within the cross-validation's noise). Held-out: the pool fitted whole, "
              f"ranking {dname}'s held-out 25 %; for the record, not for choosing."), "",
             *md_header(["rule", "float64 all", "float64 large", "float64 paired", "float32 all", "float32 large",
                         "float32 paired", "held-out float64", "held-out float32"], "lllllllll")]
    cv, ho = allp[allp["part"] == "cv"], allp[allp["part"] == "held-out"]
    # kept: in both value types no more large tests beyond 20 % than the default and a paired difference not
    # positive; fewer large tests beyond 20 % in at least one
    better, fewer = set(RULES) - {"default"}, set()
    for name in RULES:
        cells, tail = [], []
        for dtype in ("float64", "float32"):
            g = cv[(cv["dtype"] == dtype) & (cv["rule"] == name)]
            d0 = cv[(cv["dtype"] == dtype) & (cv["rule"] == "default")]
            for sub in (g, g[g["nnz"] >= LARGE]):
                w, b, gm = metrics(sub) if len(sub) else (np.nan, np.nan, np.nan)
                cells.append(f"{100 * w:.1f} / {100 * b:.2f} / {gm:.4f}" if len(sub) else "no tests")
            mean, se = paired_diff(g.set_index(["matrix", "repeat"])["ratio"],
                                   d0.set_index(["matrix", "repeat"])["ratio"])
            cells.append("–" if name == "default" else "the same picks" if se == 0 else
                         f"{mean:+.4f} (z {mean / se:+.1f})")
            tail_g, tail_0 = metrics(g[g["nnz"] >= LARGE])[1], metrics(d0[d0["nnz"] >= LARGE])[1]
            if name != "default" and (tail_g > tail_0 or mean > 0):
                better.discard(name)
            if tail_g < tail_0:
                fewer.add(name)
            w, b, gm = metrics(ho[(ho["dtype"] == dtype) & (ho["rule"] == name)])
            tail.append(f"{100 * w:.1f} / {100 * b:.2f} / {gm:.4f}")
        lines.append(f"| {name} | " + " | ".join(cells + tail) + " |")
    n = cv[cv["rule"] == "default"].groupby("dtype").size()
    lines += ["", (f"Tests per rule: float64 {n.get('float64', 0)}, float32 {n.get('float32', 0)} "
                   f"({args.repeats} repeats of every pool matrix); held-out: float64 "
                   f"{(ho[ho['rule'] == 'default']['dtype'] == 'float64').sum()}, float32 "
                   f"{(ho[ho['rule'] == 'default']['dtype'] == 'float32').sum()} matrices."),
              "", "Rule fixed before the run: a pick rule is kept when, in both value types, it has no more large tests "
              "beyond 20 % than the default and its paired difference is not positive, and in at least one value type "
              "fewer large tests beyond 20 %. Kept: "
              + (", ".join(f"`{v}`" for v in RULES if v in better & fewer) or "none") + "."]
    kept = [v for v in RULES if v in better & fewer]
    if kept:
        total = {v: sum(paired_diff(cv[(cv["dtype"] == d) & (cv["rule"] == v)].set_index(["matrix", "repeat"])["ratio"],
                                    cv[(cv["dtype"] == d) & (cv["rule"] == "default")].set_index(
                                        ["matrix", "repeat"])["ratio"])[0] for d in ("float64", "float32"))
                 for v in kept}
        lines[-1] += (" Of those, the one with the lowest sum of its two paired differences: "
                      f"`{min(kept, key=total.__getitem__)}`.")
    (out / f"pick_rules_{dname}.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
