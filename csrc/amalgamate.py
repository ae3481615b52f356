#!/usr/bin/env python3
"""csrc/amalgamate.py: the C core as one translation unit, for the headers pyspmv.export_c writes.

Run by meson at build time (csrc/meson.build) over the core's one source list; the output is
installed as package data (pyspmv/_exported_core.h).  Each source's quoted includes are pasted in
place: a header once, a value-type template (``*_impl.h``) or an X-macro list (``*.def``) every time,
since those are meant to be read more than once.  Everything gets ``static`` linkage (csrc/spmv.h:
``SPMV_API``), so several exported headers can share a program with libspmv; no object is declared
before its definition (``SPMV_NO_DATA_DECLS``: the source list puts each table after what it points
to), as C++ requires.  The result compiles as C99 or later and as C++17 (g++, clang++, nvcc) with
``-Wall -Wextra -Werror``: the warnings that only the static copy of the core raises (functions a
header leaves unused, OpenMP without ``-fopenmp``, C++'s view of designated initialisers) are
silenced between its ends, and each ``#pragma omp`` goes inside ``#ifdef _OPENMP``, since g++
before 13 cannot silence an unknown pragma in C++ from a pragma.

Usage: ``amalgamate.py OUT DEPFILE SOURCE...`` (the sources in order, timing.c left out: it needs
POSIX clocks, which an exported header does without; mmread.c too, ranking reads no files; last
exported.h, the functions of an exported header as macros of its name).  DEPFILE names, for ninja,
every file read.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import re
import sys
from pathlib import Path

_INCLUDE = re.compile(r'\s*#\s*include\s+"([^"]+)"')
_OMP = re.compile(r"\s*#\s*pragma\s+omp\b")

PROLOGUE = """#ifndef PYSPMV_EXPORTED_CORE
#define PYSPMV_EXPORTED_CORE
/* The core's interface with internal linkage (csrc/spmv.h: SPMV_API); no POSIX timing, no file reading. */
#if defined(__GNUC__)
#define SPMV_API static __attribute__((unused))
#pragma GCC diagnostic push
/* the variables only OpenMP pragmas read, when built without -fopenmp; static helpers a header
 * leaves unused; C++'s warning for members a designated initialiser leaves out (C's zero them too) */
#pragma GCC diagnostic ignored "-Wunused-variable"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#else
#define SPMV_API static
#endif
#define SPMV_NO_DATA_DECLS
#define SPMV_NO_TIMING
#define SPMV_NO_FILES"""

EPILOGUE = """#if defined(__GNUC__)
#pragma GCC diagnostic pop
#endif
#endif /* PYSPMV_EXPORTED_CORE */"""


def amalgamate(sources: list[Path], read: set[Path] | None = None) -> str:
    """The sources, in order, with their quoted includes pasted in, between PROLOGUE and EPILOGUE.

    ``read``, when given, receives the path of every file read."""
    seen: set[Path] = set()
    read = set() if read is None else read

    def paste(path: Path) -> str:
        read.add(path)
        out = []
        for line in path.read_text().splitlines():
            if _OMP.match(line):
                out.append(f"#ifdef _OPENMP\n{line}\n#endif")
                continue
            m = _INCLUDE.match(line)
            if m is None:
                out.append(line)
                continue
            inc = (path.parent / m.group(1)).resolve()
            if not inc.is_file():
                raise SystemExit(f"{path}: included file {m.group(1)} not found beside it")
            if inc.name.endswith(("_impl.h", ".def")):
                out.append(paste(inc))
            elif inc not in seen:
                seen.add(inc)
                out.append(paste(inc))
        return "\n".join(out)

    parts = [PROLOGUE]
    for src in sources:
        src = src.resolve()
        if src not in seen:
            seen.add(src)
            parts.append(f"/* ==== csrc/{src.name} ==== */\n" + paste(src))
    parts.append(EPILOGUE)
    return "\n".join(parts) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) < 4:
        print(__doc__, file=sys.stderr)
        return 2
    read: set[Path] = set()
    Path(argv[1]).write_text(amalgamate([Path(a) for a in argv[3:]], read))
    deps = " ".join(str(p).replace(" ", "\\ ") for p in sorted(read))
    Path(argv[2]).write_text(f"{argv[1]}: {deps}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
