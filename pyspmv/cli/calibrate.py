"""``pyspmv calibrate``: measure this machine and adapt the model to it."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse

from ..devices.machine import device_name
from ..training.calibrate import calibrate
from ..training.defaults import DRIFT_NOTE


def run(args: argparse.Namespace) -> int:
    c = calibrate(args.device, time_limit_s=args.time_limit, budget_s=args.budget, max_nnz=args.max_nnz,
                  dtypes=tuple(args.dtypes), seed=args.seed, max_spread=args.max_spread, max_drift=args.max_drift,
                  kind=args.kind, model=args.model, dataset=args.dataset, out=args.out, restart=args.restart,
                  progress=not args.quiet, folder=args.folder, measure=not args.no_measure)
    fp = c.model.meta["fingerprint"]
    print(f"# calibrated {args.device} on {device_name(c.model.meta['device_info']) or args.device}, "
          f"{fp.get('threads')} thread(s): {len(c.matrices)} matrices measured ({c.new} this run, measurements in "
          f"{c.folder}), {c.wall_s:.0f} s")
    if len(c.remeasured):
        worst = c.remeasured.sort_values("before", ascending=False).head(3)
        some = ", ".join(f"{r.matrix} {r.config} ({r.dtype}) {r.before:.2g}->{r.after:.2g}" for r in worst.itertuples())
        print(f"# re-measured {len(c.remeasured)} configuration(s) whose q75/q25 was above {args.max_spread:g} "
              f"(a busy machine): {some}{' ...' if len(c.remeasured) > 3 else ''}")
    else:
        print(f"# re-measured nothing: every q75/q25 was at most {args.max_spread:g}")
    rep = c.repeat
    if rep and rep.get("drift") is not None:
        print(f"# {rep['matrices']} matrices timed again after measuring: timings moved by a median "
              f"{rep['drift']:.1%}, and the first timing's fastest configurations, timed again, were "
              f"{rep['best_again']:.3f} from the best")
        if rep["drift"] > DRIFT_NOTE:
            print(f"# note: this machine's timings drift by more than {DRIFT_NOTE:.0%} within minutes; rankings "
                  "cannot be judged finer than that here (a quieter machine, or pinned threads, measure better)")
    elif not args.no_measure:
        why = "no time was left for it" if c.new else "this run measured nothing new"
        print(f"# nothing timed again after measuring: {why}")
    print("# cross-validated on the measured matrices (grouped by matrix): picks within 5 % of the best, "
          "beyond 20 %, geomean t_pick/t_best")
    for name, r in c.cv.iterrows():
        mark = "  <- chosen" if name == c.choice else ""
        print(f"{name:<16} {r['within<5%']:6.1%} {r['within>20%']:6.1%} {r['geomean_ratio']:7.3f}{mark}")
    for name in c.cv.attrs.get("skipped", []):
        print(f"{name:<16} skipped: its fitting would have ended past --time-limit")
    print(f"# saved {c.path} (pyspmv rank and pyspmv.rank() use it on this machine)")
    return 0
