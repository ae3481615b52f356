"""Which shipped default model ranks for this machine: the targets (the measured machines a default was trained
on), their files, and the choice of a GPU's target by the GPU present (:func:`target_for`).

A GPU's timings do not carry over to another GPU unchanged (the H100 default's picks were within 5 % of the best
for 91 % of small matrices on the H200, against 95 % on the H100 itself), so pyspmv ships a default per GPU it
measured and ranks with the one of the GPU present: by name where one was measured on it, else the nearest by
memory bandwidth and SM count, the two properties that set SpMV's time (it is bound by memory, and the kernels'
thread mappings by the SMs they fill). Without a GPU the newest shipped GPU is the guess, and rankings say which
GPU they are for.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import math
import threading
from importlib import resources
from typing import Any, NamedTuple

from ..devices import gpu
from ..devices.machine import OtherMachineWarning, warn_caller
from .modelfile import read_meta

#: The shipped default models per device, newest first; each target's model is ``pyspmv/data/default_<target>.pyspmv``,
#: trained by ``pyspmv train-default --dataset <target> --into-package`` on ``datasets/<target>``. Adding a GPU is
#: adding its name here (first, when it is the newest) and its dataset and model.
TARGETS: dict[str, tuple[str, ...]] = {"cuda": ("h200", "h100"), "cpu": ("cpu",)}
#: target -> the file of its shipped default (pyspmv/data/).
DEFAULT_FILES = {t: f"default_{t}.pyspmv" for names in TARGETS.values() for t in names}
#: target -> its device.
TARGET_DEVICE = {t: d for d, names in TARGETS.items() for t in names}


def default_file(target: str) -> Any:
    """The shipped default of ``target`` in the installed package (an importlib resource; it may not exist)."""
    return resources.files("pyspmv").joinpath("data", DEFAULT_FILES[target])


class Choice(NamedTuple):
    """The target a device's shipped default is chosen for (:func:`target_for`) and why, in words."""

    target: str
    why: str


class TargetGPU(NamedTuple):
    """The GPU a shipped GPU default was measured on, from its file's ``meta['device_info']``."""

    name: str
    sm_count: int
    #: Peak memory bandwidth (bytes/s) from the memory clock and bus width: twice the clock, as DDR and HBM move
    #: data on both edges. Compared between GPUs only, so the factor does not matter for the choice.
    bandwidth: float

    def describe(self) -> str:
        return f"{self.name}: {self.bandwidth / 1e12:.1f} TB/s, {self.sm_count} SMs"


#: device -> the choice made in this process (the GPU present does not change while a process runs).
_CHOICES: dict[str, Choice] = {}
#: target -> the GPU its shipped file records.
_GPUS: dict[str, TargetGPU | None] = {}
_LOCK = threading.Lock()


def check_target(target: Any, device: str | None, where: str) -> str:
    """``target``, checked: a shipped target, of ``device`` where given.

    Raises
    ------
    ValueError
        Naming ``target``, the known targets (of ``device``), what was given.
    """
    if not isinstance(target, str) or target not in TARGET_DEVICE:
        known = ", ".join(f"{t!r} ({d})" for t, d in TARGET_DEVICE.items())
        got = repr(target) if len(repr(target)) <= 64 else f"a {type(target).__name__} too long to print"
        raise ValueError(f"The 'target' parameter of {where} must be a shipped default's target: {known}. "
                         f"Got {got} instead.")
    if device is not None and TARGET_DEVICE[target] != device:
        raise ValueError(f"The 'target' parameter of {where} names {target!r}, a {TARGET_DEVICE[target]} target; "
                         f"device {device!r} has {', '.join(map(repr, TARGETS.get(device, ())))}.")
    return target


def _bandwidth(clock_khz: Any, bus_bits: Any) -> float | None:
    try:
        bw = 2.0 * float(clock_khz) * 1e3 * float(bus_bits) / 8.0
    except (TypeError, ValueError):
        return None
    return bw if math.isfinite(bw) and bw > 0 else None


def _shipped_meta(target: str) -> dict[str, Any] | None:
    """The ``meta`` of the shipped default of ``target`` (its file's header alone is read), or None where the file is
    missing."""
    res = default_file(target)
    if not res.is_file():
        return None
    with resources.as_file(res) as path:
        return read_meta(path)["meta"]


def target_gpu(target: str) -> TargetGPU | None:
    """The GPU the shipped default of ``target`` was measured on (its file's header alone is read), or None where
    the file is missing or records no GPU."""
    if target not in _GPUS:
        meta = _shipped_meta(target)
        found = None
        if meta is not None:
            info = meta.get("device_info") or {}
            bw = _bandwidth(info.get("gpu_mem_clock_khz"), info.get("gpu_mem_bus_bits"))
            if info.get("gpu_name") and bw is not None and int(info.get("gpu_sm_count") or 0) > 0:
                found = TargetGPU(str(info["gpu_name"]), int(info["gpu_sm_count"]), bw)
        _GPUS[target] = found
    return _GPUS[target]


def training_data(target: str) -> tuple[str, ...]:
    """The datasets the shipped default of ``target`` was trained on, as its file records them: the first, then
    each extra whose new matrices joined it (``pyspmv train-default --dataset FIRST --extra ...``). What judges the
    recipe (benchmarks/default_quality.py, verify_auto.py, break_even.py) reads the list here, so that a default
    retrained on more data is judged on that data.

    Raises
    ------
    ValueError
        ``target`` is not a shipped target, or its file records no dataset.
    FileNotFoundError
        The shipped file is missing.
    """
    check_target(target, None, "training_data()")
    meta = _shipped_meta(target)
    if meta is None:
        raise FileNotFoundError(f"The shipped default of {target!r} ({DEFAULT_FILES[target]}) is not installed.")
    if not meta.get("dataset"):
        raise ValueError(f"The shipped default of {target!r} records no training dataset.")
    return (str(meta["dataset"]), *(str(e[0]) for e in meta.get("extra") or []))


def nearest(name: str, sm_count: int, bandwidth: float, device: str = "cuda") -> Choice:
    """The target of ``device`` measured on the GPU named ``name``, else the nearest by memory bandwidth and SM
    count (the sum of the two ratios' absolute logarithms: twice the bandwidth is as far as twice the SMs)."""
    known = {t: g for t in TARGETS[device] if (g := target_gpu(t)) is not None}
    if not known:
        return Choice(TARGETS[device][0], "no shipped GPU default records its GPU: the newest")
    for t, g in known.items():
        if g.name == name:
            return Choice(t, f"measured on this machine's GPU, the {name}")

    def distance(g: TargetGPU) -> float:
        return abs(math.log(bandwidth / g.bandwidth)) + abs(math.log(sm_count / g.sm_count))

    t = min(known, key=lambda k: distance(known[k]))
    here = f"{name}: {bandwidth / 1e12:.1f} TB/s, {sm_count} SMs"
    return Choice(t, f"no shipped default was measured on this machine's GPU ({here}); the nearest by memory "
                     f"bandwidth and SM count is the {known[t].describe()}")


def target_for(device: str) -> Choice:
    """The target whose shipped default :func:`pyspmv.rank` uses for ``device`` when given no model or target.

    ``cpu``: its one target. ``cuda``: the GPU present chooses (:func:`nearest`), with an
    :class:`pyspmv.OtherMachineWarning` (once per process) where none was measured on it; without a usable GPU,
    the newest shipped GPU (``TARGETS['cuda'][0]``), and each ranking says which GPU it is for.
    """
    if device in _CHOICES:
        return _CHOICES[device]
    with _LOCK:
        if device not in _CHOICES:
            names = TARGETS[device]
            warn = False
            if device != "cuda":
                choice = Choice(names[0], f"the {device} default")
            elif (why := gpu.unavailable_reason()) is not None:
                choice = Choice(names[0], f"no usable GPU here ({why.split('; ')[0].split(' (')[0]}): the newest "
                                          "shipped GPU")
            else:
                info = gpu.device_info()
                bw = _bandwidth(info.get("mem_clock_khz"), info.get("mem_bus_bits"))
                sms = int(info.get("sm_count") or 0)
                if bw is None or sms <= 0:
                    choice = Choice(names[0], f"this machine's GPU ({info.get('name')}) reports no memory bandwidth "
                                              "or SM count: the newest shipped GPU")
                    warn = True
                else:
                    choice = nearest(str(info.get("name")), sms, bw, device)
                    warn = not choice.why.startswith("measured on")
            if warn:
                warn_caller(f"pyspmv ranks for the {choice.target} default: {choice.why}. Its ranking may not "
                            f"hold on this GPU: pass target= (--target) to choose another of "
                            f"{', '.join(TARGETS[device])}, or run `pyspmv calibrate --device cuda` to adapt a "
                            "model to this GPU.", OtherMachineWarning)
            _CHOICES[device] = choice
    return _CHOICES[device]
