"""``pyspmv clib`` (``pyspmv config`` before 0.3, a deprecated alias until 0.4): how a C, C++ or CUDA program
builds against the C library installed inside the package (``pyspmv/lib``, ``pyspmv/include``; docs/c_api.md), as
``numpy.get_include()`` or ``pybind11 --cmakedir`` do for theirs."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import shlex
from importlib import resources
from pathlib import Path
from typing import Any

from .. import __version__
from .common import print_json

#: The installed files each folder is found by (a path inside the package).
FILES = {"spmv.h": ("include", "spmv.h"), "spmv_version.h": ("include", "spmv_version.h"),
         "spmv_cuda.h": ("include", "spmv_cuda.h"), "libspmv": ("lib", "libspmv.so"),
         "libspmv_cuda": ("lib", "libspmv_cuda.so"), "spmv.pc": ("lib", "pkgconfig", "spmv.pc"),
         "spmvConfig.cmake": ("lib", "cmake", "spmv", "spmvConfig.cmake")}


def installed(key: str) -> Path | None:
    """Where the installed file ``key`` of :data:`FILES` is, or None where this installation lacks it (no CUDA
    build; an editable install maps each file to the source or build folder it comes from)."""
    f = resources.files("pyspmv").joinpath(*FILES[key])
    return Path(str(f)) if f.is_file() else None


def relocatable(key: str) -> Path | None:
    """The folder of the pkg-config file or CMake package ``key``, where the package's files lie beside it as
    installed (its paths are relative to its own folder); None otherwise (an editable install)."""
    f = installed(key)
    if f is None:
        return None
    root = f.parents[len(FILES[key]) - 1]                     # pyspmv/ of the tree holding f
    return f.parent if (root / "include" / "spmv.h").is_file() and (root / "lib" / "libspmv.so").is_file() else None


def library() -> dict[str, Any]:
    """The C library of this installation: version, folders, flags (``pyspmv clib --json``)."""
    need = {k: installed(k) for k in ("spmv.h", "spmv_version.h", "libspmv")}
    missing = [k for k, v in need.items() if v is None]
    if missing:
        raise FileNotFoundError(f"this installation of pyspmv has no C library ({', '.join(missing)} missing): "
                                "reinstall it (pip install pyspmv) from a build of pyspmv 0.2 or later.")
    cuda_h, cuda_lib = installed("spmv_cuda.h"), installed("libspmv_cuda")
    headers = [need["spmv.h"], need["spmv_version.h"]] + ([cuda_h] if cuda_h else [])
    includes = list(dict.fromkeys(str(h.parent) for h in headers))    # one folder installed, more editable
    libdir = str(need["libspmv"].parent)
    cuda_libdir = str(cuda_lib.parent) if cuda_lib else None
    link = f"-L{shlex.quote(libdir)} -Wl,-rpath,{shlex.quote(libdir)}"
    cuda_link = (f"-L{shlex.quote(cuda_libdir)} -Wl,-rpath,{shlex.quote(cuda_libdir)} -lspmv_cuda "
                 if cuda_libdir else "")
    pc, cm = relocatable("spmv.pc"), relocatable("spmvConfig.cmake")
    return {"version": __version__, "includedir": includes[0], "includedirs": includes, "libdir": libdir,
            "cflags": " ".join(f"-I{shlex.quote(d)}" for d in includes), "libs": f"{link} -lspmv",
            "libs_cuda": f"{cuda_link}{link} -lspmv" if cuda_libdir else None, "cuda": cuda_libdir is not None,
            "pkgconfigdir": str(pc) if pc else None, "cmakedir": str(cm) if cm else None}


def run(args: argparse.Namespace) -> int:
    lib = library()
    if args.json:
        print_json(lib)
        return 0
    if args.cuda and not lib["cuda"]:
        raise FileNotFoundError("this installation of pyspmv was built without CUDA: it has no libspmv_cuda")
    flags = []
    if args.cflags:
        flags.append(lib["cflags"])
    if args.libs:
        flags.append(lib["libs_cuda"] if args.cuda else lib["libs"])
    if flags:
        print(" ".join(flags))
    for key in ("includedir", "libdir", "pkgconfigdir", "cmakedir"):
        if getattr(args, key):
            if lib[key] is None:
                raise FileNotFoundError(f"an editable install of pyspmv has no relocatable {key[:-3]} folder (its files "
                                        "stay in the source and build folders): use --cflags and --libs, or a regular "
                                        "install (pip install .)")
            print(lib[key])
    if not (flags or any(getattr(args, k) for k in ("includedir", "libdir", "pkgconfigdir", "cmakedir"))):
        width = max(map(len, lib)) + 1
        for k, v in lib.items():
            if k != "includedirs":
                print(f"{k + ':':<{width}} {'(none)' if v is None else v}")
    return 0
