"""README.md and the user guide (docs/guide/*.md) run as written: their ```python blocks and the
pyspmv commands of their ```sh blocks.

Each page runs on its own, in a fresh folder holding ``m.mtx`` and ``m.mtx.gz`` (a small matrix), in
page order: its python blocks in one namespace, its commands one after the other in one folder.
A python block whose first line is ``# needs a GPU``, and a command whose comment says so, run only
where a GPU is usable (the ``gpu`` marker); a command whose comment says it takes minutes or hours is
skipped with that reason. Shell lines that are not pyspmv commands must be set-up, documentation or
study commands (``NOT_RUN``), so that a new command in a page cannot go untested unnoticed.
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

import pandas as pd
import pytest
import scipy.io
import scipy.sparse as sp
from pages import GPU, README, ROOT, blocks, is_gpu

import pyspmv
from pyspmv.cli import TOP_DEFAULT, main
from pyspmv.datasets.corpus import base_matrix, standard_corpus
from pyspmv.datasets.load import _resolve
from pyspmv.ranking.targets import training_data

#: The pages whose blocks run: the README, then every page of the user guide.
PAGES = (README, *sorted((ROOT / "docs" / "guide").glob("*.md")))
SLOW = re.compile(r"\btakes (minutes|hours)\b")
#: Shell commands the pages show but this test does not run: installing, the test suite, the docs, studies.
NOT_RUN = ("pip install", "pytest", "sphinx-build", "python benchmarks/")
#: Warnings that mean an example has gone stale; others (e.g. a busy machine's) are messages to the user.
STALE = (DeprecationWarning, PendingDeprecationWarning, FutureWarning)


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


@dataclass
class Command:
    page: str            # e.g. 'README.md', 'docs/guide/ranking.md'
    line: int
    text: str            # as the page writes it, comment included
    argv: list[str]      # after 'pyspmv' / 'python -m pyspmv'


def _commands(pages: tuple[Path, ...] = PAGES) -> tuple[list[Command], list[str]]:
    """pyspmv commands of the pages' sh blocks, and the lines that are neither those nor NOT_RUN."""
    cmds, unknown = [], []
    for page in pages:
        for start, block in blocks(page, "sh"):
            for i, line in enumerate(block.splitlines()):
                for part in line.split(" && "):
                    words = shlex.split(part, comments=True)
                    if not words or part.strip().startswith(NOT_RUN):
                        continue
                    if words[0] == "pyspmv":
                        cmds.append(Command(_name(page), start + i, line, words[1:]))
                    elif words[:3] == ["python", "-m", "pyspmv"]:
                        cmds.append(Command(_name(page), start + i, line, words[3:]))
                    else:
                        unknown.append(f"{_name(page)}:{start + i}: {part.strip()}")
    return cmds, unknown


def _params() -> list:
    out = []
    for c in _commands()[0]:
        comment = c.text.partition("#")[2]
        marks = [pytest.mark.gpu] if GPU in comment else []
        if SLOW.search(comment):
            marks.append(pytest.mark.skip(reason=f"{c.page}:{c.line} says it {SLOW.search(comment).group(0)}"))
        out.append(pytest.param(c, marks=marks, id=f"{c.page}:line{c.line}"))
    return out


def _with_matrices(d: Path) -> Path:
    """``d``, holding the pages' ``m.mtx`` and ``m.mtx.gz``."""
    A = sp.random(300, 300, density=0.02, random_state=0, format="csr") + sp.eye(300)
    scipy.io.mmwrite(d / "m.mtx", A)
    with gzip.open(d / "m.mtx.gz", "wb") as f:            # mmwrite would add .mtx to a file name
        scipy.io.mmwrite(f, A)
    return d


def _run_python(page: Path, gpu: bool) -> list[tuple[int, str, BaseException]]:
    """Every python block of ``page`` (GPU blocks only if ``gpu``), statement by statement in one
    namespace: (line, statement, exception) of each statement that failed."""
    ns: dict = {"__name__": "__readme__"}
    failures = []
    for start, block in blocks(page, "python"):
        if is_gpu(block) and not gpu:
            continue
        tree = ast.parse(block, _name(page))
        sources = [ast.get_source_segment(block, stmt) or "" for stmt in tree.body]
        ast.increment_lineno(tree, start - 1)                 # tracebacks name the page's lines
        for stmt, src in zip(tree.body, sources, strict=True):
            try:
                exec(compile(ast.Module([stmt], []), _name(page), "exec"), ns)  # noqa: S102 (the page's own code)
            except Exception as exc:  # noqa: BLE001 (collected and reported by the tests)
                failures.append((stmt.lineno, src, exc))
    return failures


def _report(page: Path, failures: list) -> str:
    return "\n".join(f"{_name(page)}:{ln}: {src.strip()}\n    {type(e).__name__}: {e}" for ln, src, e in failures)


def _pages_with(gpu: bool) -> list:
    """The pages holding python blocks (with a GPU block, if ``gpu``), as pytest parameters."""
    return [pytest.param(p, id=_name(p)) for p in PAGES
            if any(is_gpu(b) or not gpu for _, b in blocks(p, "python"))]


@pytest.mark.parametrize("page", _pages_with(gpu=False))
def test_python_examples_run(page, tmp_path, monkeypatch):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        monkeypatch.chdir(_with_matrices(tmp_path))
        failures = _run_python(page, gpu=False)
    stale = [w for w in caught if issubclass(w.category, STALE)]
    assert not failures, _report(page, failures)
    assert not stale, [f"{w.filename}:{w.lineno}: {w.message}" for w in stale]


@pytest.mark.gpu
@pytest.mark.parametrize("page", _pages_with(gpu=True))
def test_python_examples_run_on_a_gpu(page, tmp_path, monkeypatch):
    monkeypatch.chdir(_with_matrices(tmp_path))
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        failures = _run_python(page, gpu=True)
    assert not failures, _report(page, failures)


def test_every_shell_line_is_run_or_known():
    cmds, unknown = _commands()
    assert not unknown, unknown
    assert len(_commands((README,))[0]) >= 8 and len(cmds) >= 20, "the pages lost their commands"


def test_ci_runs_the_readmes_set_up():
    """.ci/run runs the README's set-up commands as written (comments aside), in order: the install and the main
    job, then the tests, so that CI's clean clone is set up the way a newcomer's is."""
    ci = ROOT / ".ci" / "run"
    if not ci.is_file():
        pytest.skip("no .ci/run (an installed package)")
    setup = [shlex.split(ln, comments=True) for ln in blocks(README, "sh")[0][1].splitlines()]
    ran = []
    for ln in ci.read_text(encoding="utf-8").splitlines():
        try:
            ran.append(shlex.split(ln, comments=True))
        except ValueError:          # a line continued on the next (quotes or a backslash across lines)
            ran.append([])
    assert setup[0][:3] == ["pip", "install", ".[test]"] and setup[-1] == ["pytest"]
    where = [ran.index(words) if words in ran else -1 for words in setup]
    assert -1 not in where and where == sorted(where), (setup, where)


def test_the_guide_is_there():
    """The user guide's pages exist, so that this test cannot pass by finding none."""
    assert {p.name for p in PAGES} >= {"README.md", "ranking.md", "calibration.md", "models.md", "solvers.md"}


@pytest.fixture(scope="module")
def shell_folders(tmp_path_factory):
    """One folder per page, made on first use: a page's commands run in it one after the other."""
    folders: dict[str, Path] = {}

    def folder(page: str) -> Path:
        if page not in folders:
            folders[page] = _with_matrices(tmp_path_factory.mktemp("sh_" + Path(page).stem))
        return folders[page]
    return folder


@pytest.mark.parametrize("cmd", _params())
def test_shell_command_runs(cmd, shell_folders, monkeypatch, capsys):
    """In page order, in the page's folder: a later command may use what an earlier one wrote."""
    monkeypatch.chdir(shell_folders(cmd.page))
    with warnings.catch_warnings():
        warnings.simplefilter("default")
        status = main(cmd.argv)
    out, err = capsys.readouterr()
    assert status == 0, f"{cmd.page}:{cmd.line}: {cmd.text}\n{err}"
    assert out


def _readme_count(pattern: str) -> tuple[int, ...]:
    """The numbers ``pattern``'s groups capture in README.md (a failure where the sentence is gone)."""
    m = re.search(pattern, " ".join(README.read_text(encoding="utf-8").split()))
    assert m is not None, f"README.md no longer says {pattern!r}"
    return tuple(int(g.replace(",", "")) for g in m.groups())


def test_readme_counts_are_read_from_the_code():
    """Issue 51: every count the README gives is the code's or the shipped data's (it said 135 GPU configurations
    when configs('cuda') had 195)."""
    def matrices(name: str) -> pd.DataFrame:
        return pd.read_csv(_resolve(name) / "features.csv.gz")

    def timings(name: str) -> pd.DataFrame:
        return pd.read_csv(_resolve(name) / "timings.csv.gz", usecols=["matrix", "dtype", "config"])

    generated = {e.name for e in standard_corpus()}
    h200, t = matrices("h200"), timings("h200")
    n, configs, dtypes, real, more, scaled = _readme_count(
        r"datasets \((\d+) matrices × (\d+) configurations × (\d+) value types on an NVIDIA H200, (\d+) of them real, "
        r"(\d+) more generated ones, and (\d+) real ones scaled up")
    assert (n, configs, dtypes, real) == (len(h200), t.config.nunique(), t.dtype.nunique(),
                                          int((~h200.matrix.isin(generated)).sum()))
    extra = pd.concat([matrices(d) for d in training_data("h200")[1:]]).drop_duplicates("matrix").matrix
    assert (more, scaled) == (int(extra.isin(generated).sum()), int((~extra.isin(generated) & (extra.map(base_matrix) != extra)).sum()))
    gpu = pd.concat([matrices("h100"), matrices("h100_large")]).drop_duplicates("matrix")
    assert _readme_count(r"(\d+) matrices × (\d+) configurations on an NVIDIA H100") == (
        len(gpu), timings("h100").config.nunique())
    assert _readme_count(r"and (\d+) matrices on a CPU") == (len(matrices("cpu")),)
    A = pyspmv.generate("poisson2d", 5)
    assert _readme_count(r"# (\d+) features, tiers 0-2") == (len(pyspmv.features(A)),)
    assert _readme_count(r"# (\d+) CPU configurations read from the C registry") == (len(pyspmv.configs("cpu")),)
    ranked = len(pyspmv.default_model(target="h200").tables["float64"].ranked().config_ids)
    assert _readme_count(r"# (\d+) GPU configurations, (\d+) ranked by the H200 default") == (
        len(pyspmv.configs("cuda")), ranked)
    assert _readme_count(r"the H200's\): the top (\d+)") == (TOP_DEFAULT,)
