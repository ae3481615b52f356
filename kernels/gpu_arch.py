#!/usr/bin/env python3
"""kernels/gpu_arch.py: whether the CUDA kernels are built and for which GPU architectures, from the meson
options cuda and gpu_arch.

Run by meson at configure time (meson.build), once nvcc is found.  Each VALUE is one of gpu_arch's entries:

* ``auto`` (the default, alone): machine code (SASS) for each GPU this machine has, as ``nvidia-smi`` reports
  their compute capabilities (``__nvcc_device_query`` beside nvcc where nvidia-smi cannot say), plus PTX of
  the highest. On a machine without a GPU: nothing with ``-Dcuda=auto`` (the default), and PTX of compute
  capability 8.0 alone (:data:`NO_GPU_PTX`) with ``-Dcuda=enabled``, which the driver compiles for the GPU it
  finds when the kernels first load.  Most of the CUDA build's time is nvcc reading CUB's headers, in each of
  the 9 files that use them (the 16 files as PTX of one architecture took 217 s of CPU on the 2-core dev VM,
  200 s of it in those 9; machine code adds little to that): a build without a GPU to use it is not made
  unasked.
* ``90``, ``80`` and ``90``, ...: machine code for each, plus PTX of the highest, which a newer GPU compiles
  when the kernels load; with or without a GPU here.
* ``compute_80``, ...: PTX of that architecture, no machine code.

Prints, on its first line, the architectures as the build records them for ``pyspmv info`` (``90``: machine
code for compute capability 9.0; ``compute_80``: PTX of 8.0), space-separated, or ``none`` where the kernels
are not built; then nvcc's arguments, one a line.  A GPU older than every architecture nvcc knows is left
out, saying so on stderr.

Usage: ``gpu_arch.py NVCC CUDA VALUE...`` (CUDA: the option cuda, ``auto`` or ``enabled``)
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

#: PTX of this one where no GPU is found: the A100's, the oldest the project's defaults were measured on
#: and built for; the driver compiles it for any GPU of compute capability 8.0 and newer.
NO_GPU_PTX = "80"
#: Seconds a query may take (nvidia-smi can hang on a wedged driver).
QUERY_TIMEOUT_S = 30

_SASS = re.compile(r"[1-9][0-9]{1,2}")
_PTX = re.compile(r"compute_([1-9][0-9]{1,2})")


def _run(argv: list[str]) -> str | None:
    """stdout of ``argv``, or None where it cannot run, fails or hangs."""
    try:
        p = subprocess.run(argv, capture_output=True, text=True, timeout=QUERY_TIMEOUT_S, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    return p.stdout if p.returncode == 0 else None


def gpus_found(nvcc: str) -> list[str]:
    """Compute capabilities of this machine's GPUs (``'90'`` for 9.0), each once, in order: nvidia-smi's, else
    those of ``__nvcc_device_query`` in nvcc's folder; empty where neither finds one."""
    smi = shutil.which("nvidia-smi")
    out = _run([smi, "--query-gpu=compute_cap", "--format=csv,noheader"]) if smi else None
    caps = re.findall(r"^\s*(\d+)\.(\d)\s*$", out or "", re.MULTILINE)
    found = [f"{major}{minor}" for major, minor in caps]
    if not found:
        query = Path(shutil.which(nvcc) or nvcc).parent / "__nvcc_device_query"
        found = re.findall(r"\b[1-9][0-9]{1,2}\b", _run([str(query)]) or "") if query.is_file() else []
    return list(dict.fromkeys(found))


def nvcc_sass(nvcc: str) -> list[str]:
    """The machine-code architectures nvcc can build (``--list-gpu-code``), or empty where it does not say."""
    return re.findall(r"\bsm_(\d+)\b", _run([nvcc, "--list-gpu-code"]) or "")


def _key(arch: str) -> int:
    return int(arch)


def choose(values: list[str], nvcc: str, cuda: str = "enabled") -> list[str]:
    """The architectures to build (``'90'``: machine code, ``'compute_80'``: PTX), from gpu_arch's values and
    the option cuda (``'auto'``: none where ``auto`` finds no GPU)."""
    values = [v.strip() for v in values if v.strip()]
    if values == ["auto"]:
        sass = gpus_found(nvcc)
        known = nvcc_sass(nvcc)
        if sass and known:
            newer = [a for a in sass if a not in known and _key(a) > max(map(_key, known))]
            older = [a for a in sass if a not in known and a not in newer]
            for a in older:
                print(f"gpu_arch auto: the GPU of compute capability {a[:-1]}.{a[-1]} is older than every "
                      f"architecture this nvcc builds ({', '.join(known)}): left out", file=sys.stderr)
            sass = [a for a in sass if a in known]
            if newer:      # a GPU newer than this nvcc: the newest PTX it writes, compiled by the driver
                return [*sass, f"compute_{max(known, key=_key)}"]
        if not sass:
            return [] if cuda == "auto" else [f"compute_{NO_GPU_PTX}"]
        return [*sass, f"compute_{max(sass, key=_key)}"]
    if "auto" in values:
        raise ValueError(f"gpu_arch: auto stands alone, not in a list ({','.join(values)})")
    bad = [v for v in values if not (_SASS.fullmatch(v) or _PTX.fullmatch(v))]
    if bad or not values:
        raise ValueError(f"gpu_arch: {', '.join(bad) or 'nothing'} is not auto, a compute capability such as 90 "
                         "(machine code) or compute_80 (PTX)")
    sass = list(dict.fromkeys(v for v in values if _SASS.fullmatch(v)))
    ptx = [v for v in values if _PTX.fullmatch(v)]
    if sass:
        ptx.append(f"compute_{max(sass, key=_key)}")
    return [*sass, *dict.fromkeys(ptx)]


def nvcc_args(archs: list[str]) -> list[str]:
    """nvcc's -gencode arguments for :func:`choose`'s architectures."""
    args = []
    for a in archs:
        m = _PTX.fullmatch(a)
        code = a if m else f"sm_{a}"
        args += ["-gencode", f"arch=compute_{m.group(1) if m else a},code={code}"]
    return args


def main(argv: list[str]) -> int:
    if len(argv) < 3 or argv[1] not in ("auto", "enabled"):
        print(__doc__.split("\n\n")[-1].strip(), file=sys.stderr)
        return 2
    try:
        archs = choose(argv[2:], argv[0], argv[1])
    except ValueError as exc:
        print(exc, file=sys.stderr)
        return 1
    print(" ".join(archs) or "none")
    print("\n".join(nvcc_args(archs)))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
