"""``pyspmv train``: evaluate a model on held-out matrices of a dataset, then fit and save it."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import math
import shlex
from pathlib import Path
from typing import Any

from .. import datasets
from ..evaluate import baseline_id, column_for, evaluate
from ..models import MODELS
from ..ranking.modelfile import save_model
from ..ranking.portable import portable
from .common import print_json, step
from .parser import MODEL_SUFFIX

#: The rows of the table `pyspmv train` prints: (what the summary calls it without its l2_/large_ prefix, the row's
#: name, how it is printed).
ROWS = (("n", "matrices", "{:.0f}"), ("top1", "top-1", "{:.1%}"), ("top3", "top-3", "{:.1%}"),
        ("within<5%", "within 5%", "{:.1%}"), ("within>20%", "beyond 20%", "{:.1%}"),
        ("geomean_ratio", "pick/best", "{:.3f}"))
#: What each row and line says, printed under the table.
LEGEND = ("top-1: the pick is the measured fastest; top-3: the fastest is among the first three; within 5%: the "
          "pick's measured time is at most 5% above the fastest's; beyond 20%: more than 20% above; pick/best: "
          "geometric mean of the pick's measured time over the fastest's (1.000: always the fastest); speedups: "
          "geometric means of the other choice's time over the pick's; prediction error: median |predicted - "
          "measured| / measured time.")


def model_out(out: str) -> Path:
    """--out of `pyspmv train`: a save_model file; MODEL_SUFFIX is added to a name without a suffix."""
    path = Path(out)
    if path.suffix in (".pkl", ".pickle"):
        raise ValueError(f"--out {out!r}: pyspmv writes models as save_model files (NumPy .npz, no pickle); "
                         f"name it e.g. {str(path.with_suffix(MODEL_SUFFIX))!r}.")
    return path if path.suffix else path.with_suffix(MODEL_SUFFIX)


def _fmt(fmt: str, v: Any) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else fmt.format(v)


def summary_lines(s: dict[str, Any], baseline: str | None) -> list[str]:
    """The held-out evaluation as `pyspmv train` prints it: a table of the metrics that matter, over all matrices
    (and apart for those whose CSR arrays fit the L2 cache and the larger ones, where both are there), the speedups,
    the costs in µs and products, and the legend; every metric of ``s`` is in --json."""
    cols = [("all", "")]
    if s.get("l2_n") and s.get("large_n"):
        cols += [("L2-sized", "l2_"), ("larger", "large_")]
    width = max(len(name) for _, name, _ in ROWS)
    lines = [f"{'':<{width}}  " + "  ".join(f"{c:>9}" for c, _ in cols)]
    for key, name, fmt in ROWS:
        lines.append(f"{name:<{width}}  " + "  ".join(f"{_fmt(fmt, s.get(p + key)):>9}" for _, p in cols))
    names = {"baseline": f"the baseline ({baseline})" if baseline else None, "ginkgo": "Ginkgo's rule",
             "cusp": "CUSP's rule", "best_single": f"the best single configuration ({s.get('best_single_config')})"}
    fast = [f"{names.get(k[11:]) or k[11:]} {v:.3f}x" for k, v in s.items()
            if k.startswith("speedup_vs_") and isinstance(v, float) and math.isfinite(v)]
    if fast:
        lines.append(f"# speedups of the pick over: {', '.join(fast)}")
    cost = (f"# cost: ranking a matrix {s['rank_ms'] * 1e3:.0f} µs (the time of {s['rank_spmv']:.3g} products of its "
            "fastest configuration)")
    if isinstance(s.get("convert_spmv"), float) and math.isfinite(s["convert_spmv"]):
        cost += f"; converting it to the pick's format, {s['convert_spmv']:.3g} of the pick's products"
    lines.append(cost)
    if isinstance(s.get("div_median"), float) and math.isfinite(s["div_median"]):
        lines.append(f"# prediction error: {s['div_median']:.1%} median, {s['div_mean']:.1%} mean")
    lines += [f"# {n}" for n in s.get("notes") or []]
    lines.append(f"# {LEGEND} Every metric: --json.")
    return lines


def run(args: argparse.Namespace) -> int:
    out = model_out(args.out) if args.out else None
    dtype = None if args.dtype == "both" else args.dtype
    with step(f"loading dataset {args.dataset} ({args.dtype})", args.quiet):
        ds = datasets.load(args.dataset, dtype=dtype)
    est = MODELS[args.model](verbose=0 if args.quiet else 1)
    conv = column_for(ds, "convert_ms")
    n = ds.groups.nunique()
    with step(f"evaluating {args.model} on held-out matrices ({args.test_size:.0%} of {n})", args.quiet):
        r = evaluate(est, ds.X, ds.y, ds.groups, q25=ds.q25, q75=ds.q75, test_size=args.test_size,
                     random_state=args.seed, convert_ms=conv)
    s = r.summary
    report: dict[str, Any] = {"model": args.model, "dataset": str(args.dataset), "dtype": args.dtype,
                              "test_size": args.test_size, "seed": args.seed, "held_out": s, "out": None}
    if not args.json:
        print(f"# {args.model} on {args.dataset} ({args.dtype}): {s['n_test_matrices']} held-out matrices "
              f"({s['n_test_units']} matrix and value type pairs), trained on {s['n_train_matrices']} in "
              f"{s['train_s']:.1f} s")
        for line in summary_lines(s, baseline_id(set(ds.X["config"].astype(str)))):
            print(line)
    if out is not None:
        with step(f"fitting {args.model} on all {n} matrices", args.quiet):
            est.fit(ds.X, ds.y, groups=ds.groups, convert_ms=conv)
        devices = sorted(set(ds.table["device"]))
        rm = portable(est, devices[0] if len(devices) == 1 else None)
        info = ds.metadata.get("device_info") or {}
        rm.meta.update({"dataset": str(args.dataset), "n_matrices": int(n), "n_rows": len(ds.X),
                        "device_info": info, "command": shlex.join(["pyspmv", *args.argv])})
        path = save_model(rm, out)
        report["out"] = str(path)
        if not args.json:
            print(f"# fitted on every matrix, saved to {path} (read it with pyspmv.load_model or --model)")
    if args.json:
        print_json(report)
    return 0
