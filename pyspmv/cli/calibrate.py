"""``pyspmv calibrate``: measure this machine and adapt the model to it."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
from typing import Any

from ..datasets.collect import printable
from ..devices.machine import calibrated_path, device_name
from ..ranking.rank import calibrated_model
from ..training.calibrate import calibrate
from ..training.defaults import DRIFT_NOTE

_SETS = {"yours": "your matrices", "real": "real-structured matrices", "generated": "generated matrices",
         "all": "all measured matrices"}


def judged_lines(cal: dict[str, Any]) -> list[str]:
    """What a calibration was judged on and what it decided (``meta['calibration']``), as printed after
    calibrating and by ``--report``."""
    j = cal.get("judged")
    if not j:
        return [(f"# this calibrated model records no judgement (made by an older pyspmv); it chose "
                f"{cal.get('choice')!r}")]
    n = j["matrices"]
    given = f" of {j['yours_given']} given" if j.get("yours_given") else ""
    real = f", {n['real']} real-structured" if "real" in n else ""
    out = [(f"# judged on {_SETS[j['on']]}: {n['yours']} of yours{given}{real}, {n['generated']} generated; held-out "
           "picks (grouped by matrix) within 5 % of the best / beyond 20 % / geomean t_pick/t_best")]
    sets = [k for k in ("yours", "real", "generated") if n.get(k)] or ["all"]
    out.append(f"{'candidate':<16} " + "  ".join(f"{_SETS[k]:>27}" for k in sets))
    for name, row in j["table"].items():
        mark = "  <- chosen" if name == j["choice"] else ("  <- best, within the noise" if name == j["best"] else "")
        cells = []
        for k in sets:
            m = row.get(k)
            cells.append(f"{m['within<5%']:7.1%} {m['within>20%']:7.1%} {m['geomean_ratio']:7.3f}    " if m
                         else f"{'-':>27}")
        out.append(f"{name:<16} " + "  ".join(f"{c:>27}" for c in cells) + mark)
    nz = j["noise"]
    t = nz.get("timing") or {}
    spread = (f", {t['units']} matrix/value types whose configurations' rounds spread a median "
              f"{t['spread']:.3f} max/min" if t.get("spread") else "")
    out.append(f"# noise: geomean {nz['geomean_ratio']:.3f}, within 5 % {nz['within<5%']:.1%} (timing, "
               f"{t.get('from', '?')}{spread}: {t.get('geomean_ratio', 0):.3f} / {t.get('within<5%', 0):.1%}; resampling the "
               f"judged matrices, twice the sd: {2 * nz['bootstrap']['geomean_ratio']:.3f} / "
               f"{2 * nz['bootstrap']['within<5%']:.1%})")
    out.append(f"# margin of {j['best']} over the shipped model: geomean {j['margin']['geomean_ratio']:+.3f}, within 5 % "
               f"{j['margin']['within<5%']:+.1%}")
    out.append(f"# decision: {j['decision']}")
    return out


def skipped(bad: list[Any]) -> None:
    """Print the files of ``--matrices`` skipped and why, one line each; names from the file system escaped
    (:func:`~pyspmv.datasets.collect.printable`), so that no escape sequence in a file name reaches the terminal."""
    for f, why in bad:
        print(f"# skipped {printable(str(f))}: {printable(str(why))}")


def report(device: str) -> int:
    rm = calibrated_model(device)
    if rm is None:
        print(f"# no calibrated {device} model in use (none at {calibrated_path(device)}): pyspmv rank uses the shipped "
              "default")
        return 0
    cal = rm.meta.get("calibration") or {}
    fp = rm.meta.get("fingerprint") or {}
    print(f"# calibrated {device} model in use: {calibrated_path(device)}, made {cal.get('date', '?')} on "
          f"{device_name(rm.meta.get('device_info') or {}) or device}, {fp.get('threads')} thread(s), "
          f"{cal.get('matrices', '?')} matrices")
    for line in judged_lines(cal):
        print(line)
    skipped(cal.get("bad") or [])
    return 0


def run(args: argparse.Namespace) -> int:
    if args.report:
        return report(args.device)
    c = calibrate(args.device, time_limit_s=args.time_limit, budget_s=args.budget, max_nnz=args.max_nnz,
                  dtypes=tuple(args.dtypes), seed=args.seed, max_spread=args.max_spread, max_drift=args.max_drift,
                  kind=args.kind, model=args.model, dataset=args.dataset, out=args.out, restart=args.restart,
                  progress=not args.quiet, folder=args.folder, measure=not args.no_measure,
                  matrices=args.matrices, only_matrices=args.only_matrices)
    skipped(c.bad)
    fp = c.model.meta["fingerprint"]
    print(f"# calibrated {args.device} on {device_name(c.model.meta['device_info']) or args.device}, "
          f"{fp.get('threads')} thread(s): {len(c.matrices)} matrices measured ({c.new} this run, measurements in "
          f"{c.folder}), {c.wall_s:.0f} s")
    if len(c.remeasured):
        worst = c.remeasured.sort_values("before", ascending=False).head(3)
        some = ", ".join(f"{printable(r.matrix)} {r.config} ({r.dtype}) {r.before:.2g}->{r.after:.2g}"
                         for r in worst.itertuples())
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
    for line in judged_lines(c.meta):
        print(line)
    for name in c.cv.attrs.get("skipped", []):
        print(f"{name:<16} skipped: its fitting would have ended past --time-limit")
    print(f"# saved {c.path} (pyspmv rank and pyspmv.rank() use it on this machine)")
    return 0
