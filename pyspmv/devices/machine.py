"""Which machine a model was measured on: fingerprints, the user's pyspmv folder, the other-machine notice."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import time
import warnings
from functools import lru_cache
from pathlib import Path
from typing import Any

from . import gpu

#: pyspmv's own files: a warning names the first line outside them, the user's.
_PACKAGE_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__))) + os.sep   # pyspmv/, above devices/

#: Environment variable naming the folder where ``pyspmv calibrate`` keeps its measurements and the
#: calibrated models that :func:`pyspmv.rank` uses; default :func:`home`'s XDG location.
HOME_ENV = "PYSPMV_HOME"
#: What a fingerprint compares, per device: a CPU's timings depend on the processor and on the
#: threads the kernels run on; a GPU's on the GPU.
FINGERPRINT_KEYS = {"cpu": ("processor", "threads"), "cuda": ("gpu_name",)}


class OtherMachineWarning(UserWarning):
    """The model :func:`pyspmv.rank` uses was measured on another machine than this one.

    Its timings (and so its ranking) may not hold here; ``pyspmv calibrate`` measures this machine
    and adapts the model to it. Issued once per model.
    """


def _home() -> str:
    env = os.environ
    return _home_of(env.get(HOME_ENV), env.get("XDG_DATA_HOME"), env.get("HOME"))


@lru_cache(maxsize=16)
def _home_of(given: str | None, xdg: str | None, user: str | None) -> str:
    # strings and a cache, not pathlib: rank() looks here on every call (Path.home() costs tens of us)
    if given:
        return os.path.expanduser(given)
    data = xdg or os.path.join(user or os.path.expanduser("~"), ".local", "share")
    return os.path.join(data, "pyspmv")


def home() -> Path:
    """The folder of this user's pyspmv files: ``$PYSPMV_HOME``, else ``$XDG_DATA_HOME/pyspmv``, else
    ``~/.local/share/pyspmv``. Only read here; ``calibrate`` writes its measurements and models there."""
    return Path(_home())


def calibrated_file(device: str) -> str:
    """Where ``pyspmv calibrate`` saves the calibrated model of ``device`` and :func:`pyspmv.rank`
    looks for it: ``home() / f"calibrated_{device}.pyspmv"``."""
    env = os.environ
    return _file_of(env.get(HOME_ENV), env.get("XDG_DATA_HOME"), env.get("HOME"), device)


@lru_cache(maxsize=16)
def _file_of(given: str | None, xdg: str | None, user: str | None, device: str) -> str:
    return os.path.join(_home_of(given, xdg, user), f"calibrated_{device}.pyspmv")


def calibrated_path(device: str) -> Path:
    """:func:`calibrated_file` as a path."""
    return Path(calibrated_file(device))


def _threads(omp: Any, cores: Any) -> int | None:
    """The OpenMP threads the CPU kernels use: OMP_NUM_THREADS's first number when set, else ``cores``."""
    head = str(omp or "").split(",")[0].strip()
    # ASCII digits, at most 9: str.isdigit() also passes '²', which int() refuses, and a 5000-digit
    # count is past int()'s limit (a model file's meta['device_info'] is untrusted)
    if head.isascii() and head.isdigit() and len(head) <= 9 and int(head) > 0:
        return int(head)
    return int(cores) if isinstance(cores, int) and cores > 0 else None


def _usable_cores() -> int | None:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):           # not on Linux
        return os.cpu_count()


def cpu_threads() -> int | None:
    """The OpenMP threads the CPU kernels run on here (:func:`fingerprint`'s ``threads``)."""
    return _threads(os.environ.get("OMP_NUM_THREADS"), _usable_cores())


class OtherWork:
    """How many CPUs' worth of other processes' work ran on the CPUs this process may use, from the
    object's creation to :meth:`cpus`: the busy time of those CPUs in ``/proc/stat`` (steal time
    included: on a virtual machine, the host's other guests) less this process's CPU time. Linux
    only; elsewhere, and over less than :data:`MIN_WINDOW_S`, unknown (None)."""

    #: ``/proc/stat`` counts in clock ticks (10 ms on most kernels): a shorter window would read as
    #: much of the ticks' rounding as of other work.
    MIN_WINDOW_S = 0.2

    def __init__(self) -> None:
        try:
            self.ncpus = len(os.sched_getaffinity(0))
            self._mine = os.sched_getaffinity(0)
        except (AttributeError, OSError):
            self.ncpus, self._mine = os.cpu_count() or 1, None
        self._start = self._now()

    def _now(self) -> tuple[float, float, float] | None:
        busy = _busy_seconds(self._mine)
        return None if busy is None else (time.monotonic(), busy, time.process_time())

    def cpus(self) -> float | None:
        """Other processes' average CPU use since creation, in CPUs (0.0 to :attr:`ncpus`), or None."""
        end = self._now()
        if self._start is None or end is None or end[0] - self._start[0] < self.MIN_WINDOW_S:
            return None
        wall, busy, own = (b - a for a, b in zip(self._start, end))
        return min(max((busy - own) / wall, 0.0), float(self.ncpus))


def _busy_seconds(cpus: set[int] | None) -> float | None:
    """Seconds the CPUs ``cpus`` (None: all) were busy since boot, from ``/proc/stat``; None where it
    cannot be read. Busy: user (guests included), nice, system, irq, softirq and steal time."""
    try:
        tick = os.sysconf("SC_CLK_TCK")
        total = 0
        with open("/proc/stat", encoding="ascii") as fh:
            for line in fh:
                f = line.split()
                if not f or not f[0].startswith("cpu") or f[0] == "cpu":
                    continue
                if cpus is None or int(f[0][3:]) in cpus:
                    v = [int(x) for x in f[1:9]]
                    total += v[0] + v[1] + v[2] + v[5] + v[6] + v[7]
        return total / tick
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def fingerprint_of(info: dict[str, Any]) -> dict[str, Any]:
    """The fingerprint of a machine: what tells whether timings were measured on the same one.

    Parameters
    ----------
    info : dict
        A :func:`pyspmv.device_info` dict (a dataset's or a model's ``meta['device_info']``), with
        ``device`` (default ``cpu``).

    Returns
    -------
    dict
        ``device``, ``processor``, ``threads`` (``omp_num_threads``, else the usable cores
        ``cpu_affinity``, else ``cpu_count``) and, for a GPU, ``gpu_name``. Unknown entries are None.
    """
    device = info.get("device", "cpu")
    fp: dict[str, Any] = {"device": device, "processor": info.get("processor") or None,
                          "threads": _threads(info.get("omp_num_threads"),
                                              info.get("cpu_affinity") or info.get("cpu_count"))}
    if device == "cuda":
        fp["gpu_name"] = info.get("gpu_name") or None
    return fp


def cpu_model() -> str:
    """The processor's model name (``/proc/cpuinfo``'s, else :func:`platform.processor`)."""
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor()


@lru_cache(maxsize=1)
def _processor() -> str | None:
    # read once: the processor does not change under a running process (rank() checks it)
    return cpu_model() or None


def fingerprint(device: str = "cpu") -> dict[str, Any]:
    """This machine's fingerprint for ``device``: what :func:`fingerprint_of` reads from a model,
    measured here. For ``'cuda'`` the GPU name is None where no GPU is usable."""
    fp: dict[str, Any] = {"device": device, "processor": _processor(), "threads": cpu_threads()}
    if device == "cuda":
        try:
            fp["gpu_name"] = gpu.device_info().get("name")
        except Exception:  # noqa: BLE001 (no CUDA build, no driver, no device: nothing to compare)
            fp["gpu_name"] = None
    return fp


def fingerprint_id(fp: dict[str, Any]) -> str:
    """A short stable name of a fingerprint (folder names of calibration measurements)."""
    text = json.dumps({k: fp.get(k) for k in ("device", *FINGERPRINT_KEYS[fp["device"]])}, sort_keys=True)
    return f"{fp['device']}-{hashlib.sha1(text.encode()).hexdigest()[:10]}"


def differences(model_fp: dict[str, Any], here: dict[str, Any]) -> list[str]:
    """What differs between a model's fingerprint and this machine's, as ``key: theirs here``;
    entries unknown on either side are not compared."""
    out = []
    for k in FINGERPRINT_KEYS.get(here.get("device", "cpu"), ()):
        a, b = model_fp.get(k), here.get(k)
        if a is not None and b is not None and a != b:
            out.append(f"{k} {a!r} there, {b!r} here")
    return out


def device_name(info: dict[str, Any]) -> str | None:
    """The machine a :func:`pyspmv.device_info` dict describes: the GPU's name, else the processor and its
    cores; None where it names neither."""
    if info.get("gpu_name"):
        return str(info["gpu_name"])
    if info.get("processor"):
        cores = info.get("cpu_count")
        return f"{info['processor']} ({cores} cores)" if cores else str(info["processor"])
    return None


def measured_on(rm: Any) -> str:
    """The machine whose timings a RankModel was trained on, from its ``meta['device_info']``."""
    info = (getattr(rm, "meta", None) or {}).get("device_info")
    name = device_name(info) if isinstance(info, dict) else None        # a model file's meta is anything
    return name or f"an unrecorded {rm.device} device"


def model_fingerprint(rm: Any) -> dict[str, Any] | None:
    """The fingerprint a model carries: ``meta['fingerprint']`` (calibrated models), else the one of
    ``meta['device_info']`` (models trained on a dataset), else None."""
    meta = getattr(rm, "meta", None) or {}
    fp = meta.get("fingerprint")
    if isinstance(fp, dict):
        return fp
    info = meta.get("device_info")
    return fingerprint_of({"device": rm.device, **info}) if isinstance(info, dict) and info else None


def on_this_machine(device: str, there: str, model_fp: dict[str, Any] | None) -> str:
    """Whether this machine has the ``device`` a ranking is for, in one sentence (rankings print it): the
    model was measured on ``there`` (:func:`measured_on`), whose fingerprint is ``model_fp`` (or None)."""
    if device == "cuda":
        why = gpu.unavailable_reason()
        if why is not None:
            return (f"no usable GPU here ({why.split('; ')[0].split(' (')[0]}): the "
                    f"ranking is for the {there} the model was measured on; device='cpu' (--device cpu) ranks for "
                    "this machine's CPU")
        name = gpu.device_info().get("name")
        if model_fp is not None and model_fp.get("gpu_name") not in (None, name):
            return (f"this machine's GPU is the {name}, not the {there} the model was measured on: the ranking may "
                    "not hold here")
        return f"this machine's GPU, the {name}, is the one the model was measured on"
    diff = differences(model_fp, fingerprint(device)) if model_fp is not None else []
    if diff:
        return (f"this machine's processor differs from the one the model was measured on ({'; '.join(diff)}): "
                "`pyspmv calibrate` adapts the model to it")
    if model_fp is None:
        return "the machine the model was measured on is not recorded"
    return "this machine's processor and threads are the ones the model was measured on"


def other_machine(rm: Any) -> str | None:
    """A sentence saying how the machine ``rm`` was measured on differs from this one, pointing to
    ``pyspmv calibrate``; None when they match or either side is unknown."""
    fp = model_fingerprint(rm)
    if fp is None or rm.device not in FINGERPRINT_KEYS:
        return None
    diff = differences(fp, fingerprint(rm.device))
    if not diff:
        return None
    what = "calibrated" if (rm.meta or {}).get("calibration") else "measured"
    return (f"The {rm.device} model in use was {what} on another machine than this one ({'; '.join(diff)}), so its "
            f"ranking may not hold here. Run `pyspmv calibrate --device {rm.device}` (a few minutes) to measure "
            "this machine and adapt the model to it.")


def warn_other_machine(rm: Any) -> None:
    """Issue :class:`OtherMachineWarning` once per model object when :func:`other_machine` says so, against the
    line that called into pyspmv (however deep inside pyspmv this is called)."""
    if rm.__dict__.get("_machine_checked"):
        return
    rm.__dict__["_machine_checked"] = True
    msg = other_machine(rm)
    if msg:
        warn_caller(msg, OtherMachineWarning)


def warn_caller(msg: str, category: type[Warning]) -> None:
    """``warnings.warn`` against the line that called into pyspmv, however deep inside pyspmv this is."""
    level, f = 1, sys._getframe(0)           # level 1: this function, the one that calls warnings.warn
    while f is not None and f.f_code.co_filename.startswith(_PACKAGE_DIR):
        f, level = f.f_back, level + 1
    warnings.warn(msg, category, stacklevel=level)
