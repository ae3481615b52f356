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


def test_no_source_file_or_function_past_the_limits():
    assert structure.check_sizes(ROOT) == []


def test_the_c_parser_finds_top_level_functions_and_their_ends():
    text = """// a { in a comment
#define BODY(x) do { x; } while (0)
#define LONG \\
    { not code }
static const int table[] = {1, 2, 3};
typedef struct { int a; } pair;
static int SPMV_NAME(fill)(const char *s, int n) {
    const char *t = "}{";  /* } */
    char c = '{';
    return n;
}
extern "C" {
int spmv_cuda_run(int k)
{
    if (k) { return 1; }
    return 0;
}
}
template <int BS> __global__ void row_kernel(const float *x) { (void)x; }
"""
    assert structure.c_functions(text) == [("SPMV_NAME(fill)", 7, 11), ("spmv_cuda_run", 13, 17),
                                           ("row_kernel", 19, 19)]
    py = "class A:\n    def f(self):\n        def g():\n            pass\n        return g\n"
    assert structure.py_functions(py) == [("A.f", 2, 5), ("A.f.g", 3, 4)]


def test_a_long_file_and_long_functions_fail_the_check(tmp_path):
    for top in structure.LIBRARY:
        (tmp_path / top).mkdir()
    body = "".join(f"    x{k} = {k}\n" for k in range(120))
    (tmp_path / "pyspmv" / "long.py").write_text(f"def short():\n    pass\n\n\ndef long():\n{body}")
    c_body = "".join(f"    y += {k}; /* {{ */\n" for k in range(119))
    (tmp_path / "csrc" / "long.c").write_text(f"static int fits(int y) {{\n{c_body[:-len(c_body) // 2]}    return y;\n}}\n"
                                              f"int too_long(int y) {{\n{c_body}    return y;\n}}\n")
    (tmp_path / "kernels" / "big.cuh").write_text("// filler\n" * 701)
    problems = structure.check_sizes(tmp_path, long_functions={})
    assert sorted(p.split(":")[0] + ":" + p.split(":")[1] for p in problems) == [
        "csrc/long.c:too_long", "kernels/big.cuh: 701 lines, past 700", "pyspmv/long.py:long"]
    assert any("too_long: 122 lines" in p for p in problems)
    allowed = {"csrc/long.c:too_long": "a reason", "pyspmv/long.py:long": "another", "csrc/long.c:gone": "stale"}
    problems = structure.check_sizes(tmp_path, long_functions=allowed)
    assert sorted(problems) == ["csrc/long.c:gone: listed in LONG_FUNCTIONS (stale) but not past 120 lines",
                                "kernels/big.cuh: 701 lines, past 700"]


def test_the_table_and_the_registry_are_checked(tmp_path):
    for top in ("csrc", "kernels"):
        shutil.copytree(ROOT / top, tmp_path / top, ignore=shutil.ignore_patterns("*.o", "__pycache__"))
    shutil.copytree(ROOT / "pyspmv", tmp_path / "pyspmv", ignore=shutil.ignore_patterns("data", "_datasets", "*.so",
                                                                                         "__pycache__"))
    (tmp_path / "tests").mkdir()
    for t in ("test_jad.py", "test_cidx.py", "test_export.py"):
        shutil.copy(ROOT / "tests" / t, tmp_path / "tests" / t)
    shutil.copy(ROOT / "ARCHITECTURE.md", tmp_path / "ARCHITECTURE.md")
    assert structure.check_units(tmp_path, verbose=False) == []
    arch = tmp_path / "ARCHITECTURE.md"
    arch.write_text(arch.read_text().replace("| a CPU kernel of an existing format | 2:",
                                             "| a CPU kernel of an existing format | 3:"))
    kdef = tmp_path / "csrc" / "kernels.def"
    kdef.write_text(kdef.read_text().replace('SPMV_CPU("cpu/jad", JAD, 0,', 'SPMV_CPU("cpu/jad", JAD, 1,'))
    pass_c = tmp_path / "csrc" / "pass.c"
    pass_c.write_text(pass_c.read_text() + "\nstatic int bsr_blocks_here(void) { return SPMV_FMT_BSR; }\n")
    (tmp_path / "tests" / "test_cidx.py").unlink()
    problems = structure.check_units(tmp_path, verbose=False)
    assert any("says a CPU kernel of an existing format touches 3 files; the code, 2" in p for p in problems)
    assert any("SPMV_CPU lines of JAD have variants [1], not 0 .. 0" in p for p in problems)
    assert any(p.startswith("csrc/pass.c names the formats bsr") for p in problems)
    assert any("tests/test_cidx.py is missing" in p for p in problems)
