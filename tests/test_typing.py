"""The public API type-checks as a user's script sees it (issue 51): README.md's python blocks, GPU blocks
included (checking them needs no GPU), are checked with ``mypy --strict``, which must report nothing; and the
names that ``import pyspmv`` imports on first use, ``op @ x``, ``benchmark()`` and ``Ranking.to_frame()``
have their precise types, not ``object`` or ``Any``.

pyspmv is checked as installed: mypy reads its annotations (``py.typed``) and reports nothing of its own
code, as for any package in site-packages; an editable install (the code in this checkout) is handed to
mypy by path, with its own modules silenced alike. CuPy ships no type information: it is read as ``Any``.
Skipped where mypy is not installed (the ``test`` extra installs it, with pandas-stubs and scipy-stubs)."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import importlib.metadata
import os
import re
import site
import subprocess
import sys
import sysconfig
from pathlib import Path

import pytest
from pages import README, blocks

import pyspmv

pytest.importorskip("mypy")

#: mypy's settings beside --strict: CuPy untyped, pyspmv's own code silenced as an installed package's is.
CONFIG = """\
[mypy]
[mypy-cupy.*,cupyx.*]
ignore_missing_imports = True
[mypy-pyspmv.*]
follow_imports = silent
"""

#: Expressions of a user's script and the type mypy must reveal for each (a regular expression).
REVEALED = {
    "pyspmv.load": r"def \(path: .*\) -> pyspmv\.matrices\.matrix\.Matrix",
    "pyspmv.generate": r"def \(kind: .*\) -> pyspmv\.matrices\.matrix\.Matrix",
    "pyspmv.load_model": r"def \(path: .*\) -> pyspmv\.ranking\.rankmodel\.RankModel",
    "op": r"pyspmv\.operator\.Operator",
    "op @ np.ones(A.ncols)": r"numpy\.ndarray\[.*, numpy\.dtype\[numpy\.float64\]\]",
    "op @ np.ones(A.ncols, dtype=np.float32)": r"numpy\.ndarray\[.*, numpy\.dtype\[numpy\.float(32|ing\[.*32Bit\])\]\]",
    "op.matvec(np.ones(A.ncols), out=np.empty(A.nrows))": r"numpy\.ndarray\[.*, numpy\.dtype\[numpy\.float64\]\]",
    "op @ OnDevice()": r"user\.OnDevice",
    "op.matvec(OnDevice(), out=OnDevice(), stream=0)": r"user\.OnDevice",
    "op.ranking": r"pyspmv\.ranking\.result\.Ranking \| None",      # the module that defines it
    "pyspmv.rank(A)[0]": r"tuple\[(builtins\.)?str, (builtins\.)?float\]",
}
#: Revealed only with pandas-stubs installed (pandas ships no annotations of its own: Any without them).
FRAMES = {"pyspmv.rank(A).to_frame()": r"pandas\.core\.frame\.DataFrame",
          "pyspmv.benchmark(A)": r"pandas\.core\.frame\.DataFrame"}

USER = """\
from collections.abc import Mapping

import numpy as np

import pyspmv


class OnDevice:
    \"\"\"A vector of some GPU library, as pyspmv sees it: the CUDA array interface.\"\"\"

    @property
    def __cuda_array_interface__(self) -> Mapping[str, object]:
        return {}


A = pyspmv.generate("poisson2d", 10)
op = pyspmv.Operator(A)
"""


def _search_path() -> dict[str, str]:
    """The environment that lets mypy find this pyspmv: nothing more where it is installed in site-packages
    (mypy reads those itself), its checkout's root on MYPYPATH for an editable install (an import hook that
    mypy does not run)."""
    root = Path(pyspmv.__file__).resolve().parents[1]
    installed = {Path(p).resolve() for p in (*site.getsitepackages(), site.getusersitepackages(),
                                             sysconfig.get_path("purelib"), sysconfig.get_path("platlib"))}
    env = {k: v for k, v in os.environ.items() if k != "MYPYPATH"}
    if root not in installed:
        env["MYPYPATH"] = str(root)
    return env


def _has_pandas_stubs() -> bool:
    try:
        importlib.metadata.distribution("pandas-stubs")
    except importlib.metadata.PackageNotFoundError:
        return False
    return True


@pytest.fixture(scope="module")
def checked(tmp_path_factory) -> dict[str, list[str]]:
    """mypy --strict's messages on README.md's python blocks (``readme.py``, each block on its own lines of
    the page, so that messages give the README's line numbers) and on the ``reveal_type`` calls of
    :data:`REVEALED` (``user.py``), by file: one run of mypy for both."""
    d = tmp_path_factory.mktemp("typing")
    code = blocks(README, "python")
    assert len(code) >= 3, "README.md lost its python blocks"
    lines: list[str] = []
    for start, text in code:
        lines += [""] * (start - 1 - len(lines)) + text.splitlines()
    (d / "readme.py").write_text("\n".join(lines) + "\n")
    reveals = {**REVEALED, **(FRAMES if _has_pandas_stubs() else {})}
    (d / "user.py").write_text(USER + "".join(f"reveal_type({e})\n" for e in reveals))
    (d / "mypy.ini").write_text(CONFIG)
    out = subprocess.run([sys.executable, "-m", "mypy", "--strict", "--config-file", "mypy.ini", "--cache-dir",
                          str(d / ".mypy_cache"), "--no-error-summary", "--no-pretty", "readme.py", "user.py"],
                         cwd=d, env=_search_path(), capture_output=True, text=True, timeout=600, check=False)
    assert out.returncode in (0, 1) and not out.stderr.strip(), f"mypy failed:\n{out.stdout}{out.stderr}"
    by_file: dict[str, list[str]] = {"readme.py": [], "user.py": []}
    for line in out.stdout.splitlines():
        name, _, rest = line.partition(":")
        by_file.setdefault(name, []).append(rest)
    by_file["reveals"] = list(reveals)
    return by_file


def test_readme_python_blocks_type_check(checked):
    """What mypy says of README.md's python blocks: nothing. Messages name README.md's lines."""
    assert checked["readme.py"] == [], "mypy --strict on README.md's python blocks:\n" + "\n".join(
        f"README.md:{m}" for m in checked["readme.py"])


def test_public_names_have_their_types(checked):
    """The lazily imported names are their functions and classes to a type checker, a product returns the
    caller's kind of array, tables are DataFrames: not ``object`` or ``Any``."""
    got = [m for m in checked["user.py"] if "Revealed type is" in m]
    errors = [m for m in checked["user.py"] if "error:" in m]
    assert not errors, errors
    assert len(got) == len(checked["reveals"]), checked["user.py"]
    for expr, message in zip(checked["reveals"], got, strict=True):
        revealed = message.partition('Revealed type is "')[2].rstrip('"')
        want = {**REVEALED, **FRAMES}[expr]
        assert re.fullmatch(want, revealed), f"{expr}: {revealed}, not {want}"
