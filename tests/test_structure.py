"""The structure check (tools/structure.py, ARCHITECTURE.md): no import circle between the package's files, no
late import of pyspmv's own modules, no call circle between the C core's files, each unit named where the
table says; and the layers that must not reach up do not. CI also runs the script itself."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
import structure

pytestmark = pytest.mark.skipif(not (ROOT / "pyspmv" / "__init__.py").is_file(), reason="needs the source tree")


def test_the_package_has_no_import_circle_and_no_late_import_of_its_own():
    assert structure.check_imports(ROOT) == []


@pytest.mark.skipif(shutil.which("cc") is None or shutil.which("nm") is None, reason="needs cc and nm")
def test_the_c_core_has_no_call_circle():
    assert structure.check_c(ROOT) == []


def test_each_unit_is_named_where_the_table_says():
    assert structure.check_units(ROOT, verbose=False) == []


def test_the_low_layers_do_not_reach_up():
    graph, _ = structure.import_graph(ROOT)
    # below every layer: modules that import no file of the package (the version, the parameter validator)
    base = {"pyspmv._version", "pyspmv._params"}
    assert all(graph[b] == set() for b in base)
    assert graph["pyspmv.matrices.matrix"] <= base             # and the core (an extension, not a file)
    for name, deps in graph.items():
        layer = name.split(".")[1] if name.count(".") else ""
        if layer == "matrices":
            assert all(d.startswith("pyspmv.matrices") or d in base for d in deps), (name, deps)
    for part in ("schema", "spec", "rankmodel", "layout", "checks", "portable"):   # the portable form
        deps = graph[f"pyspmv.ranking.{part}"]
        assert not {d for d in deps if d.startswith("pyspmv.models")} | (deps & {
            "pyspmv.ranking.rank", "pyspmv.ranking.shipped", "pyspmv.ranking.modelfile", "pyspmv.ranking.export"}), part


def test_a_circle_and_a_late_import_are_found(tmp_path):
    pkg = tmp_path / "pyspmv"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "a.py").write_text("from . import b\n")
    (pkg / "b.py").write_text("def f():\n    from . import a\n")
    problems = structure.check_imports(tmp_path)
    assert any("inside a function" in p and "b.py:2" in p for p in problems)
    assert any("import circle of 2 modules" in p for p in problems)
    assert structure.circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
