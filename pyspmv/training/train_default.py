"""Train the default ranking model of a device from a measured dataset (``pyspmv train-default``).

``pyspmv train-default --dataset h200`` writes ``$PYSPMV_HOME/default_h200.pyspmv`` (the ``cuda``
recipe; ``h100`` likewise), ``--dataset cpu`` ``$PYSPMV_HOME/default_cpu.pyspmv``, ``--out FILE`` anywhere but
inside the installed package; ``--into-package`` replaces the shipped default of that target
(``pyspmv/data/default_<target>.pyspmv``, :data:`pyspmv.ranking.targets.DEFAULT_FILES`), as the repository's own
retraining does. ``--dataset PATH`` trains from any
folder :func:`pyspmv.collect` wrote. Reproducible: the models are seeded, so the same dataset and
options give the same model; the file records the dataset, its size and dates, and the command.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
import shlex
from collections.abc import Sequence
from datetime import date
from pathlib import Path
from typing import Any

from .. import datasets
from .._params import OneOf, validate
from .._version import version
from ..devices.machine import HOME_ENV, home
from ..evaluate import column_for
from ..models import MODELS as CLASSES
from ..ranking.portable import portable
from ..ranking.precision import TARGET_PRECISION
from ..ranking.targets import DEFAULT_FILES
from .defaults import BYTES_PRIOR, MODELS


def make_model(kind: str, seed: int = 0, device: str | None = None) -> Any:
    """An unfitted estimator with the settings the shipped default models are trained with.

    Parameters
    ----------
    kind : str
        A model kind: one of ``forest``, ``boosted``, ``linear``, ``knn``, ``svm``, ``cascade``,
        ``guo``, ``wang`` (:data:`pyspmv.models.MODELS`).
    seed : int, default 0
        The estimator's ``random_state``, where it has one.
    device : str, optional
        ``cpu`` or ``cuda``: that device's default (the forest's ``bytes_prior``, set for ``cuda``);
        None: the estimator's own defaults.

    Returns
    -------
    estimator
        A scikit-learn style estimator of ``kind``, not fitted.

    Raises
    ------
    ValueError
        ``kind`` is not a model kind.
    """
    validate(None, {"model": OneOf(MODELS)}, {"model": kind})
    est = CLASSES[kind]()
    if "bytes_prior" in est.get_params() and device in BYTES_PRIOR:
        est.set_params(bytes_prior=BYTES_PRIOR[device])
    return est.set_params(random_state=seed) if "random_state" in est.get_params() else est


def train(dataset: str, kind: str = "forest", seed: int = 0, *, extra: Sequence[str] = (),
          argv: Sequence[str] | None = None, verbose: int = 1) -> Any:
    """Train a default model as ``pyspmv train-default`` does.

    Fits :func:`make_model` of ``kind`` (with the dataset's device's defaults) on every row of
    ``dataset``, both value types, with the conversion costs of its ``convert_ms`` column.

    Parameters
    ----------
    dataset : str
        A dataset's name or folder (:func:`pyspmv.datasets.load`).
    kind : str, default "forest"
        The model kind (:func:`make_model`).
    seed : int, default 0
        The estimator's ``random_state``.
    extra : sequence of str, optional
        Further datasets of the same device whose matrices join the training; the matrices that
        ``dataset`` (or an earlier extra) already has are left out; a supplement's rows join them instead
        (:func:`pyspmv.datasets.combine`), and a forest then trains with ``unmeasured="skip"`` (recorded in
        ``meta["unmeasured"]``): a configuration the supplement measured on some matrices is not counted as slow on
        the others.
    argv : sequence of str, optional
        The command recorded in ``meta["command"]``; default the equivalent ``train-default`` line.
    verbose : int, default 1
        >= 1 shows the fit's progress on stderr.

    Returns
    -------
    RankModel
        The fitted model's portable form, with the conversion-cost fit and provenance (dataset,
        dates, device, command, version) in ``meta``.

    Raises
    ------
    ValueError
        The datasets mix devices, or ``dataset`` has no finite ``convert_ms``.
    """
    ds = datasets.combine(dataset, *extra, dtype=None)
    devices = sorted(set(ds.table["device"]))
    if len(devices) != 1:
        raise ValueError(f"Datasets {[dataset, *extra]} mix devices {devices}; train one device at a time.")
    model = make_model(kind, seed, devices[0]).set_params(verbose=verbose)
    # A supplement measured some configurations on some matrices: where it did not, they are unmeasured, not slow.
    skip = bool(ds.metadata.get("supplements")) and "unmeasured" in model.get_params()
    if skip:
        model.set_params(unmeasured="skip")
    model.fit(ds.X, ds.y, ds.groups, convert_ms=column_for(ds, "convert_ms"))
    if not model.convert_ms_:
        raise ValueError(f"Dataset {dataset!r} has no finite convert_ms; the default model needs its conversion costs.")
    rm = portable(model, devices[0])
    # A shipped target measured on its own data reads as that data says (its tie marks), not as the device's figure.
    rm.precision = TARGET_PRECISION.get(Path(str(dataset)).name, rm.precision)
    md = ds.metadata
    cmd = ["train-default", "--dataset", str(dataset), *[a for e in extra for a in ("--extra", str(e))],
           "--model", kind, "--seed", str(seed)]
    rm.meta.update({"dataset": str(dataset), "n_matrices": int(ds.groups.nunique()), "n_rows": len(ds.X),
                    "dataset_dates": [md.get("first_started"), md.get("updated")], "seed": seed,
                    "device_info": md.get("device_info") or {},
                    "command": shlex.join(["pyspmv", *(argv if argv is not None else cmd)]),
                    # The model's own version: the package that trained it and when (pyspmv info shows it).
                    "model_version": f"pyspmv {version()}, trained {date.today().isoformat()}"})
    if extra:
        rm.meta["extra"] = md["sources"][1:]  # [dataset, matrices it added]
    if skip:
        rm.meta["unmeasured"] = "skip"
    return rm


def package_dirs() -> list[Path]:
    """The folders of the installed package (its modules', and its data's where importlib puts them apart)."""
    from importlib import resources
    dirs = [Path(__file__).resolve().parent.parent]
    res = resources.files("pyspmv")
    if isinstance(res, Path):
        dirs.append(res.resolve())
    return dirs


def inside_package(path: str | os.PathLike[str]) -> Path | None:
    """The folder of the installed package that ``path`` lies in (symbolic links resolved), or None."""
    p = Path(path).expanduser().resolve()
    return next((d for d in package_dirs() if p == d or d in p.parents), None)


def output_path(dataset: str, out: str | os.PathLike[str] | None = None, *, into_package: bool = False) -> Path:
    """Where ``pyspmv train-default`` writes the model of ``dataset``.

    ``out`` where given; with ``into_package``, the shipped default's own file (``pyspmv/data/``, the
    datasets named as a shipped target only: h200, h100, cpu; the repository's retraining); else
    ``$PYSPMV_HOME/default_<dataset>.pyspmv`` (:func:`pyspmv.devices.machine.home`; a dataset folder needs
    ``out``). An ``out`` inside the installed package is refused without ``into_package``, so that no
    command overwrites the shipped models by accident.

    Raises
    ------
    ValueError
        ``out`` inside the package; ``out`` with ``into_package``; ``into_package`` or no ``out`` for a
        dataset folder.
    """
    shipped = DEFAULT_FILES                 # a shipped default's target is its dataset's name
    if into_package:
        if out is not None:
            raise ValueError("--into-package writes the shipped default's own file; give it or --out, not both.")
        if dataset not in shipped:
            raise ValueError(f"--into-package writes the shipped defaults only (--dataset {' or '.join(shipped)}). "
                             f"Got --dataset {dataset!r} instead; give --out for another dataset.")
        return package_dirs()[0] / "data" / shipped[dataset]
    if out is not None:
        inside = inside_package(out)
        if inside is not None:
            raise ValueError(f"--out {str(out)!r} is inside the installed pyspmv package ({inside}); train-default "
                             "writes there only with --into-package (the repository's own retraining of the shipped "
                             f"defaults). Write the model elsewhere (default: ${HOME_ENV}) and pass it with --model.")
        return Path(out)
    if dataset not in shipped:
        raise ValueError(f"--out is required for the dataset folder {dataset!r}; without it only "
                         f"{' and '.join(shipped)} write to ${HOME_ENV}/default_<dataset>.pyspmv.")
    return home() / f"default_{dataset}.pyspmv"
