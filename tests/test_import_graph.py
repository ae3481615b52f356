"""The package's import graph, read from the sources (module-level and function-level imports alike): no
circle between files, and the low modules that must not reach up (matrix.py, portable.py) do not."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import ast
from pathlib import Path

import pyspmv

ROOT = Path(pyspmv.__file__).resolve().parent
EXTENSIONS = ("_core", "_cuda")


def modules() -> dict[str, Path]:
    out = {}
    for path in ROOT.rglob("*.py"):
        parts = ("pyspmv", *path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        out[".".join(parts)] = path
    return out


def graph() -> dict[str, set[str]]:
    """Module -> the package's modules it imports (``from . import x`` counts as an import of ``x`` where ``x``
    is a module, of the package itself where it is a name defined there)."""
    mods = modules()
    known = set(mods) | {f"pyspmv.{e}" for e in EXTENSIONS}

    def owner(name: str) -> str | None:
        while name and name not in known:
            name = name.rpartition(".")[0]
        return name or None

    edges: dict[str, set[str]] = {}
    for mod, path in mods.items():
        package = mod if path.name == "__init__.py" else mod.rpartition(".")[0]
        found: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                found.update(filter(None, (owner(a.name) for a in node.names)))
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                    base = ".".join(up) + (f".{node.module}" if node.module else "")
                subs = [f"{base}.{a.name}" for a in node.names]
                found.update(s for s in subs if s in known)
                if not all(s in known for s in subs):
                    found.update(filter(None, [owner(base)]))
        edges[mod] = found - {mod}
    return edges


def cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def test_no_import_circle_between_files():
    assert cycles(graph()) == []


def test_matrix_imports_nothing_above_it():
    assert graph()["pyspmv.matrices.matrix"] <= {"pyspmv._core"}


def test_portable_imports_no_estimator_and_not_rank():
    up = {m for m in graph()["pyspmv.portable"] if m.startswith("pyspmv.models") or m in (
        "pyspmv.rank", "pyspmv.ranking.cache", "pyspmv.ranking.modelfile", "pyspmv.ranking.export")}
    assert up == set()


def test_a_circle_is_found():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
