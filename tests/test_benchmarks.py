"""The research record's structure, checked without running anything long: every standing measurement the
runner (benchmarks/run_all.py) lists exists and writes its table with a provenance line; every study folder
holds its script, its table and its finding, and imports no other study."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import ast
import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BENCH = ROOT / "benchmarks"
STUDIES = ROOT / "studies"
PROVENANCE = {"provenance", "write_report", "csv_provenance"}   # benchmarks/_md.py's writers of the line

pytestmark = pytest.mark.skipif(not (BENCH / "run_all.py").exists(), reason="no benchmarks/ (an installed package)")


def runner():
    spec = importlib.util.spec_from_file_location("run_all", BENCH / "run_all.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("run_all", mod)      # dataclasses look their module up while the class is made
    spec.loader.exec_module(sys.modules["run_all"])
    return sys.modules["run_all"]


def imported_names(tree: ast.Module) -> set[str]:
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names |= {a.asname or a.name for a in node.names}
    return names


def test_every_listed_benchmark_exists_and_writes_provenance():
    run_all = runner()
    assert len({b.name for b in run_all.BENCHMARKS}) == len(run_all.BENCHMARKS)
    for b in run_all.BENCHMARKS:
        path = BENCH / b.script
        assert path.is_file(), b.name
        text = path.read_text(encoding="utf-8")
        if path.suffix == ".sh":
            assert "benchmarks/_md.py" in text, f"{b.script} prints no provenance line"
            continue
        tree = ast.parse(text)
        assert any(isinstance(n, ast.FunctionDef) and n.name == "main" for n in tree.body), f"{b.script}: no main()"
        assert 'if __name__ == "__main__"' in text, b.script
        assert imported_names(tree) & PROVENANCE, f"{b.script} writes no provenance line (benchmarks/_md.py)"
        assert set(b.needs) <= {"cuda", "inputs", "corpus"}


def test_every_benchmark_script_is_listed():
    listed = {b.script for b in runner().BENCHMARKS}
    scripts = {p.name for p in BENCH.glob("*.py") if not p.name.startswith("_")} - {"run_all.py"}
    assert scripts | {"gpu_build.sh"} <= listed, "a script of benchmarks/ the runner does not rerun: a study?"


def test_runner_lists_without_running():
    out = subprocess.run([sys.executable, str(BENCH / "run_all.py"), "--list"], capture_output=True, text=True,
                         check=True, cwd=ROOT, timeout=120).stdout
    assert "rank_cost" in out and "python benchmarks/rank_cost.py" in out


def test_provenance_line():
    sys.path.insert(0, str(BENCH))
    try:
        import _md
    finally:
        sys.path.remove(str(BENCH))
    line = _md.provenance(argv=[str(BENCH / "x.py"), "--out", "t.md"])
    assert line.startswith("Provenance: `python benchmarks/x.py --out t.md`; machine: ")
    assert re.search(r"date: \d{4}-\d\d-\d\d \d\d:\d\d UTC; commit: \S+", line)


STUDY_DIRS = sorted(p for p in STUDIES.glob("*") if p.is_dir() and re.match(r"\d{4}-\d\d-\d\d-", p.name))


@pytest.mark.parametrize("study", STUDY_DIRS, ids=lambda p: p.name)
def test_study_folder(study):
    readme = (study / "README.md").read_text(encoding="utf-8")
    assert len(readme.strip().splitlines()) <= 14, "the finding is about ten lines"
    for word in ("Question", "Answer", "Machine", "Date", "Command"):
        assert f"**{word}" in readme, f"{study.name}/README.md lacks {word}"
    scripts = list(study.glob("*.py"))
    # A study whose script reached internals keeps it in the history only, named in its README.
    assert (scripts or "**Script:** `git show " in readme) and any(p.suffix in (".md", ".csv", ".gz") and p.name != "README.md" for p in study.iterdir())
    own = {p.stem for p in scripts}
    others = {p.stem for d in STUDY_DIRS if d != study for p in d.glob("*.py")} - own
    benchmarks = {p.stem for p in BENCH.glob("*.py") if not p.name.startswith("_")}
    for p in scripts:
        tree = ast.parse(p.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                top = node.module.split(".")[0]
                assert top not in others, f"{p.name} imports another study ({node.module})"
                assert top not in benchmarks, f"{p.name} imports a benchmark script ({node.module})"


RESEARCH = sorted([*BENCH.glob("*.py"), *STUDIES.glob("*.py"), *STUDIES.glob("*/*.py")])

#: The private names (after ``pyspmv``) that a research script may still reach, by script, each with its
#: reason. Only closed studies whose question needs the package's internals and that are kept as they ran
#: (their README says which commit they run against, and that they are not maintained) belong here.
PRIVATE_ALLOWED: dict[str, set[str]] = {}


def _private(dotted: str) -> bool:
    """``pyspmv._core``, ``pyspmv.models._common.x``, ``pyspmv.ranking.rank._prepared``: a part after
    ``pyspmv`` that starts with an underscore (dunders such as ``__version__`` are public)."""
    parts = dotted.split(".")
    return parts[0] == "pyspmv" and any(p.startswith("_") and not p.endswith("__") for p in parts[1:])


def _dotted(node: ast.AST) -> str | None:
    """``a.b.c`` for a chain of attributes on a name, else None."""
    parts = []
    while isinstance(node, ast.Attribute):
        parts.append(node.attr)
        node = node.value
    return ".".join([node.id, *reversed(parts)]) if isinstance(node, ast.Name) else None


def private_names(tree: ast.Module) -> set[str]:
    """Every private pyspmv name a script imports (``import``, ``from ... import``,
    ``importlib.import_module("pyspmv...")``) or reaches as an attribute of ``pyspmv``."""
    names: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names += [f"{node.module}.{a.name}" for a in node.names]
        elif isinstance(node, ast.Import):
            names += [a.name for a in node.names]
        elif (isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant)
              and isinstance(node.args[0].value, str)
              and (_dotted(node.func) or "").split(".")[-1] == "import_module"):
            names.append(node.args[0].value)
        elif isinstance(node, ast.Attribute):
            names.append(_dotted(node) or "")
    return {n for n in names if _private(n)}


def test_private_check_catches():
    tree = ast.parse("from pyspmv import _core\nimport pyspmv._core\nfrom pyspmv.models._common import g\n"
                     "from pyspmv.ranking.rank import _prepared, rank\nimport importlib\n"
                     "importlib.import_module('pyspmv._cuda')\nimport pyspmv\npyspmv._core.mv\npyspmv.__version__\n")
    assert private_names(tree) == {"pyspmv._core", "pyspmv.models._common.g", "pyspmv.ranking.rank._prepared",
                                   "pyspmv._cuda", "pyspmv._core.mv"}


@pytest.mark.parametrize("script", RESEARCH, ids=lambda p: str(p.relative_to(ROOT)))
def test_research_uses_public_api(script):
    """ARCHITECTURE.md's rule for benchmarks/ and studies/: the public API only (README.md, docs/api.rst)."""
    rel = script.relative_to(ROOT).as_posix()
    found = private_names(ast.parse(script.read_text(encoding="utf-8")))
    allowed = PRIVATE_ALLOWED.get(rel, set())
    assert found <= allowed, (f"{rel} reaches private pyspmv names {sorted(found - allowed)}: use the public API "
                              "(docs/api.rst) or, for a closed study that needs them, list them in PRIVATE_ALLOWED")
    assert allowed <= found, f"{rel}: PRIVATE_ALLOWED lists {sorted(allowed - found)}, which it no longer uses"
