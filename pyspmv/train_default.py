"""Train the default ranking model of a device from a measured dataset (``pyspmv train-default``).

``pyspmv train-default --dataset h100`` writes ``pyspmv/data/default_h100.pyspmv`` (the ``cuda``
default), ``--dataset cpu`` writes ``pyspmv/data/default_cpu.pyspmv``; ``--dataset PATH`` trains
from any folder :func:`pyspmv.collect` wrote. Reproducible: the models are seeded, so the same
dataset and options give the same model; the file records the dataset, its size and dates, and the
command.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

#: The model kinds' short names, defined here without importing scikit-learn so that the command line
#: lists them cheaply; ``pyspmv.models.MODELS`` maps the same names to their classes (a test checks).
MODELS = ("forest", "boosted", "linear", "knn", "svm", "cascade", "guo", "wang")


#: ForestModel's ``bytes_prior`` in the default of each device (none: 0): kept for cuda by the rule fixed
#: before benchmarks/pick_rules.py's cross-validation inside h100's training matrices
#: (benchmarks/results/pick_rules_h100.md); on datasets/cpu no value was kept (pick_rules_cpu.md).
BYTES_PRIOR = {"cuda": 0.05}


def make_model(kind: str, seed: int = 0, device: str | None = None) -> Any:
    """An unfitted estimator of ``kind`` with the defaults the shipped models use; ``device``: that
    device's default (:data:`BYTES_PRIOR`), None: the estimator's own defaults."""
    from .models import MODELS as CLASSES
    if kind not in CLASSES:
        raise ValueError(f"The 'model' parameter must be one of {MODELS}. Got {kind!r} instead.")
    est = CLASSES[kind]()
    if "bytes_prior" in est.get_params() and device in BYTES_PRIOR:
        est.set_params(bytes_prior=BYTES_PRIOR[device])
    return est.set_params(random_state=seed) if "random_state" in est.get_params() else est


def train(dataset: str, kind: str = "forest", seed: int = 0, *, extra: Sequence[str] = (),
          argv: Sequence[str] | None = None, verbose: int = 1) -> Any:
    """Fit ``kind`` on ``dataset`` (both value types) and return its portable form with the
    conversion-cost fit (from the dataset's ``convert_ms``) and provenance in ``meta``; ``verbose``
    >= 1 shows the fit's progress on stderr. ``extra``: further datasets of the same device whose
    matrices join the training, those ``dataset`` (or an earlier extra) already has left out."""
    from . import datasets
    from .evaluate import column_for
    from .portable import portable
    ds = datasets.combine(dataset, *extra, dtype=None)
    devices = sorted(set(ds.table["device"]))
    if len(devices) != 1:
        raise ValueError(f"Datasets {[dataset, *extra]} mix devices {devices}; train one device at a time.")
    model = make_model(kind, seed, devices[0]).set_params(verbose=verbose)
    model.fit(ds.X, ds.y, ds.groups, convert_ms=column_for(ds, "convert_ms"))
    if not model.convert_ms_:
        raise ValueError(f"Dataset {dataset!r} has no finite convert_ms; the default model needs its conversion costs.")
    rm = portable(model, devices[0])
    md = ds.metadata
    cmd = ["train-default", "--dataset", str(dataset), *[a for e in extra for a in ("--extra", str(e))],
           "--model", kind, "--seed", str(seed)]
    rm.meta.update({"dataset": str(dataset), "n_matrices": int(ds.groups.nunique()), "n_rows": len(ds.X),
                    "dataset_dates": [md.get("first_started"), md.get("updated")], "seed": seed,
                    "device_info": md.get("device_info") or {},
                    "command": shlex.join(["pyspmv", *(argv if argv is not None else cmd)])})
    if extra:
        rm.meta["extra"] = md["sources"][1:]  # [dataset, matrices it added]
    return rm
