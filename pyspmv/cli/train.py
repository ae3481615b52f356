"""``pyspmv train``: evaluate a model on held-out matrices of a dataset, then fit and save it."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from .. import datasets
from ..evaluate import column_for, evaluate, format_summary
from ..models import MODELS
from ..ranking.modelfile import save_model
from ..ranking.portable import portable
from .common import step
from .parser import MODEL_SUFFIX


def model_out(out: str) -> Path:
    """--out of `pyspmv train`: a save_model file; MODEL_SUFFIX is added to a name without a suffix."""
    path = Path(out)
    if path.suffix in (".pkl", ".pickle"):
        raise ValueError(f"--out {out!r}: pyspmv writes models as save_model files (NumPy .npz, no pickle); "
                         f"name it e.g. {str(path.with_suffix(MODEL_SUFFIX))!r}.")
    return path if path.suffix else path.with_suffix(MODEL_SUFFIX)


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
    print(f"# {args.model} on {args.dataset} ({args.dtype}), held-out matrices")
    print(format_summary(r.summary))
    if out is None:
        return 0
    with step(f"fitting {args.model} on all {n} matrices", args.quiet):
        est.fit(ds.X, ds.y, groups=ds.groups, convert_ms=conv)
    devices = sorted(set(ds.table["device"]))
    rm = portable(est, devices[0] if len(devices) == 1 else None)
    info = ds.metadata.get("device_info") or {}
    rm.meta.update({"dataset": str(args.dataset), "n_matrices": int(n), "n_rows": len(ds.X),
                    "device_info": info, "command": shlex.join(["pyspmv", *args.argv])})
    path = save_model(rm, out)
    print(f"# fitted on every matrix, saved to {path} (read it with pyspmv.load_model or --model)")
    return 0
