"""What this installation is and uses (``pyspmv info``): version, build, GPU, threads, the models in use."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import hashlib
import os
import platform
import warnings
from pathlib import Path
from typing import Any

import numpy as np

from .. import __version__, _core
from ..devices import gpu as g
from ..devices.machine import HOME_ENV, _usable_cores, calibrated_path, home, measured_on, other_machine
from ..matrices.configs import DEVICES
from ..ranking.rank import CalibratedModelWarning, calibrated_model, default_model, precision_of
from ..ranking.targets import TARGETS, default_file, target_for, target_gpu

#: How much of a model file's SHA-256 names it (``pyspmv info``): enough to tell two files apart.
SHA_CHARS = 12


def gpu_arch() -> list[str]:
    """The architectures the CUDA kernels were compiled for, as the build recorded them (meson option
    ``gpu_arch``, chosen by ``kernels/gpu_arch.py``): ``90`` machine code for compute capability 9.0,
    ``compute_80`` PTX of 8.0, which the driver compiles for the GPU at first load; empty without CUDA."""
    return _core.GPU_ARCH.split()


def _cc(arch: str) -> str:
    """``'90'`` or ``'compute_90'`` -> ``'9.0'``; anything else as given."""
    digits = arch.removeprefix("compute_")
    return f"{digits[:-1]}.{digits[-1]}" if digits.isdigit() and len(digits) >= 2 else arch


def build() -> dict[str, Any]:
    """The build: whether the CUDA side was built, for which compute capabilities as machine code and as
    PTX (``ptx``: the driver compiles it at first load for a GPU of that capability or newer), OpenMP."""
    arch = gpu_arch()
    return {"cuda": bool(_core.HAVE_NVCC), "gpu_arch": arch,
            "compute_capabilities": [_cc(a) for a in arch if not a.startswith("compute_")],
            "ptx": [_cc(a) for a in arch if a.startswith("compute_")], "openmp": bool(_core.HAVE_OPENMP)}


def threads() -> dict[str, Any]:
    """The OpenMP threads the CPU kernels run on, and where the count comes from."""
    env = os.environ.get("OMP_NUM_THREADS")
    return {"omp_threads": _core.omp_threads(), "omp_num_threads": env or None, "usable_cores": _usable_cores()}


def gpu() -> dict[str, Any]:
    """The GPU the CUDA configurations would run on (device 0) and its driver, or why there is none
    (``usable`` False, ``reason`` from :class:`pyspmv.DeviceUnavailableError`)."""
    try:
        info = g.device_info()
    except _core.DeviceUnavailableError as exc:
        return {"usable": False, "reason": str(exc)}
    cc = info.get("compute_capability")
    cap = f"{cc[0]}.{cc[1]}" if isinstance(cc, list | tuple) and len(cc) == 2 else None
    b = build()
    # True: machine code for it; None: PTX the driver compiles for it at first load (or an entry this
    # version does not read, or nothing known); False: nothing of the build runs on it.
    jit = cap is not None and any(_version(p) <= _version(cap) for p in b["ptx"])
    fit = None if cap is None or not _read(b) else True if cap in b["compute_capabilities"] else None if jit else False
    return {"usable": True, "name": info.get("name"), "compute_capability": cap, "built_for_it": fit,
            "sm_count": info.get("sm_count"), "memory_bytes": info.get("global_mem_bytes"),
            "driver_cuda": info.get("driver_version"), "runtime_cuda": info.get("runtime_version"),
            "cusparse": info.get("cusparse_version")}


def _read(b: dict[str, Any]) -> bool:
    """Whether every entry of the build's architectures is one this version reads (machine code or PTX)."""
    return bool(b["gpu_arch"]) and all(_cc(a) != a for a in b["gpu_arch"])


def _version(cap: str) -> tuple[int, ...]:
    """``'9.0'`` -> ``(9, 0)``."""
    return tuple(int(x) for x in cap.split("."))


def _sha(path: Path) -> str | None:
    try:
        return hashlib.sha256(path.read_bytes()).hexdigest()[:SHA_CHARS]
    except OSError:
        return None


def _describe(rm: Any, path: Path, what: str) -> dict[str, Any]:
    """A model's provenance as ``pyspmv info`` shows it."""
    meta = rm.meta or {}
    cal = meta.get("calibration") or {}
    prec = precision_of(rm)
    return {"model": what, "path": str(path), "sha256": _sha(path), "kind": str(rm.source).split("(")[0],
            "dtypes": sorted(rm.tables), "measured_on": measured_on(rm),
            "dataset": meta.get("dataset"), "extra": [e[0] for e in meta.get("extra") or []] or None,
            "n_matrices": meta.get("n_matrices") if not cal else cal.get("matrices"),
            "dates": meta.get("dataset_dates") if not cal else [cal.get("date")],
            "command": meta.get("command"), "model_version": meta.get("model_version"),
            "calibration": {k: cal.get(k) for k in ("choice", "date", "matrices")} if cal else None,
            "tie_tol": None if prec is None else prec.tie_tol, "max_gap": None if prec is None else prec.max_gap,
            "other_machine": other_machine(rm)}


def models() -> dict[str, dict[str, Any]]:
    """Per device, the model :func:`pyspmv.rank` uses when given none: the calibrated one where
    ``pyspmv calibrate`` saved one that can be read (``calibrated_problem`` says why one cannot), else
    the shipped default of the target this machine uses (``target``, ``target_why``:
    :func:`pyspmv.ranking.targets.target_for`); ``shipped``: that default's path; ``targets``: every shipped
    default of the device (target, file, the GPU it was measured on)."""
    out = {}
    for device in DEVICES:
        choice = target_for(device)
        shipped = Path(str(default_file(choice.target)))
        cal_path = calibrated_path(device)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", CalibratedModelWarning)
            cal = calibrated_model(device)
        problem = next((str(w.message) for w in caught if issubclass(w.category, CalibratedModelWarning)), None)
        if cal is not None:
            entry = _describe(cal, cal_path, "calibrated for this machine")
            lacks = sorted(set(default_model(device).tables) - set(cal.tables))
            entry["shipped_for"] = lacks or None       # value types the calibration did not measure
        else:
            entry = _describe(default_model(device), shipped, "shipped default")
        entry["shipped"] = str(shipped)
        entry["target"], entry["target_why"] = choice.target, choice.why
        entry["targets"] = [{"target": t, "file": str(default_file(t)),
                             "measured_on": None if (tg := target_gpu(t)) is None else tg.name}
                            for t in TARGETS[device]]
        entry["calibrated_path"] = str(cal_path)
        entry["calibrated_problem"] = problem
        out[device] = entry
    return out


def about() -> dict[str, Any]:
    """Everything ``pyspmv info`` reports, as one JSON-ready dict: ``pyspmv`` (version, package folder),
    ``python``, ``numpy``, ``build`` (:func:`build`), ``threads`` (:func:`threads`), ``gpu``
    (:func:`gpu`), ``home`` (the folder ``calibrate`` and ``train-default`` write to, and what sets
    it) and ``models`` (:func:`models`)."""
    env = "PYSPMV_HOME" if os.environ.get(HOME_ENV) else "XDG_DATA_HOME" if os.environ.get("XDG_DATA_HOME") else None
    return {"pyspmv": {"version": __version__, "package": str(Path(__file__).resolve().parent.parent)},
            "python": platform.python_version(), "numpy": np.__version__, "build": build(), "threads": threads(),
            "gpu": gpu(), "home": {"path": str(home()), "set_by": env}, "models": models()}


def text(a: dict[str, Any]) -> str:
    """`pyspmv info`'s text of :func:`about`'s dict."""
    b, t, g, h = a["build"], a["threads"], a["gpu"], a["home"]
    caps, ptx = ", ".join(b["compute_capabilities"]), ", ".join(b["ptx"])
    cuda = (f"CUDA kernels for compute capability {caps}" + (f", PTX of {ptx}" if ptx else "") if caps
            else f"CUDA kernels as PTX of compute capability {ptx} (the driver compiles it for the GPU at first load)")
    lines = [f"pyspmv {a['pyspmv']['version']} ({a['pyspmv']['package']}); Python {a['python']}, NumPy {a['numpy']}",
             "build: " + (cuda if b["cuda"] else "without CUDA") + f"; {'with' if b['openmp'] else 'without'} OpenMP"]
    why = (f"OMP_NUM_THREADS={t['omp_num_threads']}" if t["omp_num_threads"]
           else f"OMP_NUM_THREADS unset; {t['usable_cores']} usable cores")
    lines.append(f"threads: {t['omp_threads']} for the CPU kernels ({why if b['openmp'] else 'built without OpenMP'})")
    if g["usable"]:
        gib = g["memory_bytes"] / 2**30 if g.get("memory_bytes") else None
        rebuild = f"`pip install . -Csetup-args=-Dgpu_arch={(g['compute_capability'] or '').replace('.', '')}`"
        fit = {True: "built for it", False: f"NOT among the built {caps or ptx}: rebuild with {rebuild}",
               None: f"PTX of {ptx} compiled for it at first load; machine code for it: {rebuild}" if ptx and _read(b)
               else f"built for {b['gpu_arch'] and ' '.join(b['gpu_arch']) or 'unknown'}"}
        lines.append(f"gpu: {g['name']}, compute capability {g['compute_capability']} ({fit[g['built_for_it']]}), "
                     f"{g['sm_count']} SMs" + (f", {gib:.1f} GiB" if gib else "")
                     + f"; driver for CUDA {g['driver_cuda']}, runtime CUDA {g['runtime_cuda']}, "
                       f"cuSPARSE {g['cusparse']}")
    else:
        lines.append(f"gpu: no usable GPU: {g['reason']}")
    lines.append(f"home: {h['path']} (" + (f"${h['set_by']}" if h["set_by"] else f"default; ${HOME_ENV} moves it")
                 + "): where calibrate and train-default write")
    for device, m in a["models"].items():
        lines.append(f"model {device}: {m['model']}, {m['kind']} ({', '.join(m['dtypes'])})")
        lines.append(f"    file: {m['path']} (sha256 {m['sha256']})")
        if len(m["targets"]) > 1:
            each = ", ".join(f"{t['target']} ({t['measured_on'] or 'GPU unrecorded'})" for t in m["targets"])
            lines.append(f"    shipped defaults: {each}; this machine would use {m['target']}: {m['target_why']}")
        if m.get("shipped_for"):
            lines.append(f"    {', '.join(m['shipped_for'])}: the shipped default ({m['shipped']}); the calibration "
                         "did not measure it")
        lines.append(f"    measured on: {m['measured_on']}")
        data = " + ".join([str(m["dataset"]), *(m["extra"] or [])]) if m["dataset"] else "unrecorded data"
        dates = "..".join(dict.fromkeys(str(d)[:10] for d in m["dates"] or [] if d))
        lines.append(f"    trained on: {data}, {m['n_matrices']} matrices" + (f", measured {dates}" if dates else ""))
        if m["calibration"]:
            c = m["calibration"]
            lines.append(f"    calibration: {c['choice']} on {c['matrices']} matrices, {c['date']}")
        lines.append(f"    command: {m['command'] or 'unrecorded'}")
        unrecorded = "unrecorded (the sha256 names the file)"
        if not m["model_version"] and m["model"] == "shipped default":
            unrecorded = f"unrecorded; shipped with pyspmv {a['pyspmv']['version']} (the sha256 names the file)"
        lines.append(f"    model version: {m['model_version'] or unrecorded}")
        if m["tie_tol"] is not None:
            lines.append(f"    ranking table: ties within {m['tie_tol']:.1%} of the pick, times up to "
                         f"{m['max_gap']:g}x the pick's, order only beyond")
        if m["model"] != "calibrated for this machine":
            lines.append(f"    calibrated: none at {m['calibrated_path']}"
                         + (f" that can be read: {m['calibrated_problem']}" if m["calibrated_problem"] else
                            f" (`pyspmv calibrate --device {device}` makes one)"))
        if m["other_machine"]:
            lines.append(f"    note: {m['other_machine']}")
    return "\n".join(lines)
