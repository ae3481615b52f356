#!/usr/bin/env python3
"""csrc/exports.py: the linker version script of a shared library, made from its public headers.

Run by meson at build time (csrc/meson.build, kernels/meson.build): every function the headers
declare (``spmv_...(``, outside comments and preprocessor lines) is exported under the version node
NODE (``SPMV_0.3``: the major and minor version, so that a program built against one version says so
when loaded with another); everything else of the library, the core's internal functions included,
stays local.  The headers are the one list of the library's interface: a function added there is
exported, nothing else is.

Usage: ``exports.py NODE OUT HEADER...``
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import re
import sys
from pathlib import Path

_COMMENT = re.compile(r"/\*.*?\*/|//[^\n]*", re.DOTALL)
_DIRECTIVE = re.compile(r"^[ \t]*#(?:[^\n]*\\\n)*[^\n]*", re.MULTILINE)
_FUNCTION = re.compile(r"\b(spmv_\w+)\s*\(")


def declared(text: str) -> list[str]:
    """The functions a header declares, in order, each once."""
    code = _DIRECTIVE.sub("", _COMMENT.sub(" ", text))
    return list(dict.fromkeys(_FUNCTION.findall(code)))


def main(argv: list[str]) -> int:
    node, out, *headers = argv
    names = [n for h in headers for n in declared(Path(h).read_text())]
    if not names:
        print(f"exports.py: no spmv_ function declared in {' '.join(headers)}", file=sys.stderr)
        return 1
    body = "".join(f"    {n};\n" for n in dict.fromkeys(names))
    Path(out).write_text(f"{node} {{\n  global:\n{body}  local:\n    *;\n}};\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
