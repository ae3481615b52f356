"""README.md runs as written: its ```python blocks and the pyspmv commands of its ```sh blocks.

They run in a fresh folder holding ``m.mtx`` and ``m.mtx.gz`` (a small matrix), in README order.
A python block whose first line is ``# needs a GPU``, and a command whose comment says so, run only
where a GPU is usable (the ``gpu`` marker); a command whose comment says it takes minutes or hours is
skipped with that reason. Shell lines that are not pyspmv commands must be set-up or study scripts
(``NOT_RUN``), so that a new command in the README cannot go untested unnoticed.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import ast
import gzip
import re
import shlex
import warnings
from dataclasses import dataclass
from pathlib import Path

import pytest
import scipy.io
import scipy.sparse as sp

from pyspmv.cli import main

README = Path(__file__).resolve().parents[1] / "README.md"
GPU = "needs a GPU"
SLOW = re.compile(r"\btakes (minutes|hours)\b")
#: Shell commands the README shows but this test does not run: installing, the test suite, studies.
NOT_RUN = ("pip install", "pytest", "python benchmarks/")
#: Warnings that mean an example has gone stale; others (e.g. a busy machine's) are messages to the user.
STALE = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)


def _blocks(lang: str) -> list[tuple[int, str]]:
    """(line number of the block's first line, text) of every ```lang block."""
    text = README.read_text(encoding="utf-8")
    return [(text.count("\n", 0, m.start(1)) + 1, m.group(1))
            for m in re.finditer(rf"^```{lang}\n(.*?)^```", text, re.MULTILINE | re.DOTALL)]


@dataclass
class Command:
    line: int
    text: str            # as the README writes it, comment included
    argv: list[str]      # after 'pyspmv' / 'python -m pyspmv'


def _commands() -> tuple[list[Command], list[str]]:
    """pyspmv commands of the sh blocks, and the lines that are neither those nor NOT_RUN."""
    cmds, unknown = [], []
    for start, block in _blocks("sh"):
        for i, line in enumerate(block.splitlines()):
            for part in line.split(" && "):
                words = shlex.split(part, comments=True)
                if not words or part.strip().startswith(NOT_RUN):
                    continue
                if words[0] == "pyspmv":
                    cmds.append(Command(start + i, line, words[1:]))
                elif words[:3] == ["python", "-m", "pyspmv"]:
                    cmds.append(Command(start + i, line, words[3:]))
                else:
                    unknown.append(f"README.md:{start + i}: {part.strip()}")
    return cmds, unknown


def _params() -> list:
    out = []
    for c in _commands()[0]:
        comment = c.text.partition("#")[2]
        marks = [pytest.mark.gpu] if GPU in comment else []
        if SLOW.search(comment):
            marks.append(pytest.mark.skip(reason=f"README.md:{c.line} says it {SLOW.search(comment).group(0)}"))
        out.append(pytest.param(c, marks=marks, id=f"line{c.line}"))
    return out


def _with_matrices(d: Path) -> Path:
    """``d``, holding the README's ``m.mtx`` and ``m.mtx.gz``."""
    A = sp.random(300, 300, density=0.02, random_state=0, format="csr") + sp.eye(300)
    scipy.io.mmwrite(d / "m.mtx", A)
    with gzip.open(d / "m.mtx.gz", "wb") as f:            # mmwrite would add .mtx to a file name
        scipy.io.mmwrite(f, A)
    return d


def _run_python(gpu: bool) -> list[tuple[int, str, BaseException]]:
    """Every python block (GPU blocks only if ``gpu``), statement by statement in one namespace:
    (README line, statement, exception) of each statement that failed."""
    ns: dict = {"__name__": "__readme__"}
    failures = []
    for start, block in _blocks("python"):
        if block.lstrip().startswith(f"# {GPU}") and not gpu:
            continue
        tree = ast.parse(block, "README.md")
        sources = [ast.get_source_segment(block, stmt) or "" for stmt in tree.body]
        ast.increment_lineno(tree, start - 1)                 # tracebacks name README lines
        for stmt, src in zip(tree.body, sources, strict=True):
            try:
                exec(compile(ast.Module([stmt], []), "README.md", "exec"), ns)  # noqa: S102 (the README's own code)
            except Exception as exc:  # noqa: BLE001 (collected and reported by the tests)
                failures.append((stmt.lineno, src, exc))
    return failures


def _report(failures: list) -> str:
    return "\n".join(f"README.md:{ln}: {src.strip()}\n    {type(e).__name__}: {e}" for ln, src, e in failures)


@pytest.fixture(scope="module")
def python_failures(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        mp.chdir(_with_matrices(tmp_path_factory.mktemp("readme_python")))
        failures = _run_python(gpu=False)
    stale = [w for w in caught if issubclass(w.category, STALE)]
    return failures, stale


def test_python_examples_run(python_failures):
    failures, stale = python_failures
    assert not failures, _report(failures)
    assert not stale, [f"{w.filename}:{w.lineno}: {w.message}" for w in stale]


@pytest.mark.gpu
def test_python_examples_run_on_a_gpu(tmp_path, monkeypatch):
    monkeypatch.chdir(_with_matrices(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        failures = _run_python(gpu=True)
    assert not failures, _report(failures)


def test_every_shell_line_is_run_or_known():
    cmds, unknown = _commands()
    assert len(cmds) >= 10 and not unknown, unknown


@pytest.fixture(scope="module")
def shell_folder(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.chdir(_with_matrices(tmp_path_factory.mktemp("readme_sh")))
        yield


@pytest.mark.parametrize("cmd", _params())
def test_shell_command_runs(cmd, shell_folder, capsys):
    """In README order, in one folder: a later command may use what an earlier one wrote."""
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        status = main(cmd.argv)
    out, err = capsys.readouterr()
    assert status == 0, f"README.md:{cmd.line}: {cmd.text}\n{err}"
    assert out
