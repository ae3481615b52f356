"""``pyspmv rank``: every configuration ranked for each matrix by a model's predicted time."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Iterator
from typing import Any

from ..matrices.configs import LIBRARIES, device_libraries
from ..matrices.matrix import Matrix
from ..matrices.mmio import load
from ..ranking.modelfile import load_model
from ..ranking.rank import calibrated_model, rank, vs_pick
from ..ranking.shipped import default_for
from ..ranking.targets import TARGET_DEVICE, check_target
from .common import USER_ERRORS, generated, print_json


def rank_model(args: argparse.Namespace) -> Any:
    """The model `pyspmv rank` uses: --model, else --target's shipped default, else the model rank() would use
    for --device and --dtype (calibrated for this machine, else the shipped default of the GPU present). Its
    ``label`` names it in the tables."""
    if args.model:
        return load_model(args.model)
    if args.target:
        target = check_target(args.target, args.device, "pyspmv rank")
        return default_for(TARGET_DEVICE[target], args.dtype, target)
    device = args.device or "cuda"
    rm = calibrated_model(device)
    if rm is not None and args.dtype in rm.tables:
        return rm
    return default_for(device, args.dtype)


def ranked_matrices(args: argparse.Namespace) -> Iterator[tuple[str, Matrix | Exception]]:
    """(what was asked for, its Matrix or the user error reading it), for each --generate, then each FILE."""
    for spec in args.generate or ():
        yield spec, generated(spec)
    for f in args.files:
        try:
            yield f, load(f)
        except USER_ERRORS as exc:
            if args.debug:
                raise
            yield f, exc


def rank_table(r: Any, rows: list, score: str) -> list[str]:
    """The text table of `pyspmv rank`: a column header, one line per row (with a measured_us column where the
    ranking was verified, '-' where not measured)."""
    unit = "predicted_us" if score == "predicted_ms" else "score"
    scale = 1e3 if score == "predicted_ms" else 1.0
    width = max([len(x.config) for x in rows] + [len("config")])
    t = r.measured if r.verified is not None else None
    head = "" if t is None else f"  {'measured_us':>11}"
    lines = [f"{'rank':>4}  {'config':<{width}}  {unit:>12}  {'vs_pick':>7}{head}  mark"]
    for x in rows:
        if x.mark == "n/a":
            value, gap = "n/a", "-"
        elif x.predicted is None:
            value, gap = "-", f">+{100 * (r.order_only_beyond - 1):.0f}%"
        else:
            value, gap = f"{x.predicted * scale:.3f}", vs_pick(x.vs_pick) or "-"
        measured = "" if t is None else f"  {f'{t[x.config] * 1e3:.3f}' if x.config in t else '-':>11}"
        lines.append(f"{x.rank:>4}  {x.config:<{width}}  {value:>12}  {gap:>7}{measured}  {x.mark}".rstrip())
    return lines


def libraries_of(args: argparse.Namespace, device: str) -> tuple[str, ...] | None:
    """--library's names (each given once, in LIBRARIES' order), checked against the device; None: not given."""
    if not args.library:
        return None
    names = {n for group in args.library for n in group}
    have = device_libraries(device)
    if not names <= set(have):
        raise ValueError(f"--library {','.join(n for n in LIBRARIES if n in names)}: device {device} has "
                         f"configurations of {', '.join(have)} only")
    return tuple(n for n in LIBRARIES if n in names)


def run(args: argparse.Namespace) -> int:
    if not args.files and not args.generate:
        raise ValueError("give one or more Matrix Market FILEs, or --generate KIND:SIZE")
    calls = (f"conversion amortised over {args.n_calls} calls" if args.n_calls
             else "conversion not counted (--n-calls)")
    out: list[dict[str, Any]] = []
    status = 0
    rm = rank_model(args)
    device = args.device or rm.device           # --target's model is of its device (checked in rank_model)
    libraries = libraries_of(args, device)
    only = f"; libraries {', '.join(libraries)} only" if libraries else ""
    for what, A in ranked_matrices(args):
        if isinstance(A, Exception):
            msg = " ".join(str(A).split()) or type(A).__name__
            print(f"pyspmv: error: {what}: {msg}", file=sys.stderr)
            out.append({"file": what, "error": msg})
            status = 2
            continue
        r = rank(A, rm, device=device, dtype=args.dtype, n_calls=args.n_calls, deterministic=args.deterministic,
                 libraries=libraries, verify=args.verify, target=args.target)
        rows = r.rows(args.top)
        us = r.score == "predicted_ms"
        p, best = r.precision, r.best_of_all
        b = r.baseline
        out.append({"file": None if what in (args.generate or ()) else what, "matrix": A.name, "nrows": A.nrows,
                    "ncols": A.ncols, "nnz": A.nnz, "device": r.device, "dtype": r.dtype, "model": r.model,
                    "measured_on": r.measured_on, "here": r.here, "n_calls": args.n_calls, "order": r.order,
                    "baseline": None if b is None or not us else {
                        "config": b.config, "rank": b.rank, "predicted_us": b.predicted * 1e3
                        if math.isfinite(b.predicted) else None, "gain": b.gain, "gain_at_least": b.understated},
                    "tie_tol": None if p is None else p.tie_tol,
                    "order_only_beyond": None if p is None else p.max_gap if best is None else r.order_only_beyond,
                    "precision_source": None if p is None else p.source,
                    "libraries": None if r.libraries is None else list(r.libraries),
                    "deterministic": r.deterministic,
                    "best_of_all": None if best is None else {
                        "config": best[0], "predicted_us" if us else "score": best[1] * (1e3 if us else 1.0)},
                    "configurations": len(r),
                    "ranking": [{"rank": x.rank, "config": x.config,
                                 "predicted_us" if us else "score":
                                     None if x.predicted is None else x.predicted * (1e3 if us else 1.0),
                                 "vs_pick": x.vs_pick, "mark": x.mark} for x in rows]})
        if args.verify:
            t = r.measured
            out[-1].update(verify=args.verify, verify_note=r.verify_note, verify_weighed=r.verify_weighed)
            for e in out[-1]["ranking"]:
                e["measured_us"] = t[e["config"]] * 1e3 if e["config"] in t else None
        if args.json:
            continue
        if sum("matrix" in o for o in out) > 1:         # a blank line between tables
            print()
        title = A.name if what in (args.generate or ()) else f"{what} ({A.name})"    # two files may share a name
        print(f"# matrix {title}: {A.nrows} x {A.ncols}, {A.nnz} entries; dtype {args.dtype}; {calls}{only}")
        for line in r.purpose():
            print(f"# {line}")
        print("\n".join(rank_table(r, rows, r.score)))
        more = f"; --top all shows all {len(r)}" if len(rows) < len(r) else ""
        print(f"# {len(rows)} of {len(r)} configurations{more}")
        print(f"# order: {r.order}")
        for note in r.notes(rows):
            print(f"# {note}")
    if args.json:
        print_json(out)
    return status
