"""tools/structure.py: the structure check of ARCHITECTURE.md, run by CI (`python tools/structure.py check`).

It reads the code, never runs it, and needs only Python and a C compiler:

* ``imports``: the Python package's import graph between files (every ``import`` statement, at module level,
  under ``if TYPE_CHECKING:`` or inside a function), its circles, and the imports made inside functions,
  which are allowed only for the optional dependencies of :data:`OPTIONAL`.
* ``c``: the C core's graph between files, from the symbols each compiled file defines and uses (``nm``):
  a function of ``b.c`` called from ``a.c`` is an arrow ``a.c -> b.c``. Its circles.
* ``touches NAME...``: the files of the library (``csrc/``, ``kernels/``, ``pyspmv/``) whose name or code
  (comments and docstrings left out) names ``NAME``: what adding one more unit of that kind touches, counted
  on one that exists.
* ``check``: all three; each unit of :data:`UNITS` must be named in as many library files as
  ARCHITECTURE.md's "Which files to touch" says (its own test comes on top).
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import ast
import io
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = "pyspmv"
LIBRARY = ("csrc", "kernels", "pyspmv")
CODE_SUFFIXES = (".c", ".h", ".cu", ".cuh", ".def", ".py")

#: Top-level modules a function may import: the optional dependencies (pyproject.toml's extras and the GPU
#: array libraries), which must not be needed to import pyspmv ...
OPTIONAL = frozenset({"cupy", "cupyx", "torch", "jax", "numba", "matplotlib", "dask", "distributed",
                      "IPython", "nbformat", "nbclient", "psutil"})
#: ... and the heavy required ones that ``import pyspmv`` leaves for first use, because they cost more than the
#: rest of the import together (docs/results/cold_start.md). Nothing of pyspmv itself is imported late.
DEFERRED = frozenset({"pandas", "sklearn", "scipy", "tqdm", "importlib"})

#: One unit of each kind the project adds as a unit: the names that identify it in code, how many library files
#: name it (ARCHITECTURE.md's "Which files to touch", tests apart), and the files that name it only because
#: they use that very unit on purpose (a literature model's formats or features), with the reason.
UNITS = {
    "a storage format": (("jad",), 5, {
        "pyspmv/models/analytic.py": "Wang's model is defined over CSR, ELL and JAD"}),
    "a matrix feature": (("nnz_sd",), 2, {
        "pyspmv/models/_common.py": "Lehnert's feature set names its features",
        "pyspmv/models/analytic.py": "Wang's relations read the row-length statistics"}),
    "a model kind": (("formula",), 3, {}),
    "an estimator": (("BoostedModel", "boosted"), 3, {
        "pyspmv/cli/parser.py": "`pyspmv train` defaults to it",
        "pyspmv/evaluate.py": "evaluate.train defaults to it"}),
}


# ---- Python -------------------------------------------------------------------------------------------

def _modules(root: Path) -> dict[str, Path]:
    """Module name -> file, for every .py file of the package."""
    out = {}
    for p in sorted((root / PACKAGE).rglob("*.py")):
        parts = list(p.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = p
    return out


def _imports(path: Path, name: str, modules: dict[str, Path], root: Path) -> list[tuple[str, int, bool, str]]:
    """(target module, line, inside a function, first name imported) for each import of a package module."""
    tree = ast.parse(path.read_text(), str(path))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = []

    def visit(node: ast.AST, in_function: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inner = in_function or isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))
            if isinstance(child, ast.Import):
                for a in child.names:
                    found.append((a.name, child.lineno, in_function, a.name))
            elif isinstance(child, ast.ImportFrom):
                base = child.module or ""
                if child.level:
                    up = package.split(".")[: len(package.split(".")) - (child.level - 1)]
                    base = ".".join(up + ([base] if base else []))
                for a in child.names:
                    sub = f"{base}.{a.name}"
                    if sub not in modules and (root / Path(*base.split(".")) / f"{a.name}.pyi").exists():
                        continue                    # an extension module of the package (_core, _cuda)
                    found.append((sub if sub in modules else base, child.lineno, in_function, base))
            visit(child, inner)

    visit(tree, False)
    return found


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def strong(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                strong(w)
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

    sys.setrecursionlimit(10000)
    for v in sorted(graph):
        if v not in index:
            strong(v)
    return out


def import_graph(root: Path = ROOT) -> tuple[dict[str, set[str]], list[tuple[Path, int, str]]]:
    """The package's modules and the package modules each imports (every import counts), and the imports
    made inside functions: (file, line, what)."""
    modules = _modules(root)
    graph: dict[str, set[str]] = {m: set() for m in modules}
    late = []
    for name, path in modules.items():
        for target, line, in_function, first in _imports(path, name, modules, root):
            if target in modules and target != name:
                graph[name].add(target)
            if in_function:
                late.append((path, line, first))
    return graph, late


def check_imports(root: Path = ROOT) -> list[str]:
    """What breaks the Python rules: circles between files, imports inside functions of non-optional modules."""
    graph, late = import_graph(root)
    problems = [f"{path.relative_to(root)}:{line}: imports {first!r} inside a function (allowed only for the "
                f"optional and deferred dependencies: {', '.join(sorted(OPTIONAL | DEFERRED))})"
                for path, line, first in late if first.split(".")[0] not in OPTIONAL | DEFERRED]
    for comp in circles(graph):
        ties = [f"{a} -> {b}" for a in comp for b in sorted(graph[a]) if b in comp]
        problems.append(f"import circle of {len(comp)} modules: {'; '.join(ties)}")
    return problems


# ---- C --------------------------------------------------------------------------------------------------

def _symbols(obj: Path) -> tuple[set[str], set[str]]:
    """(functions defined, symbols used) of an object file. Only calls are arrows: a table of operations
    that a dispatcher names (``spmv_jad_ops`` in ``format.c``) is data handed down, as a vtable is."""
    out = subprocess.run(["nm", "-P", str(obj)], check=True, capture_output=True, text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        fields = line.split()
        if len(fields) >= 2:
            (used if fields[1] == "U" else defined if fields[1] == "T" else set()).add(fields[0])
    return defined, used


def check_c(root: Path = ROOT, cc: str | None = None) -> list[str]:
    """Circles between the C core's files, from what each compiled file defines and uses."""
    cc = cc or os.environ.get("CC", "cc")
    if shutil.which(cc) is None or shutil.which("nm") is None:
        return [f"the C check needs a C compiler ({cc}) and nm"]
    sources = sorted((root / "csrc").glob("*.c"))
    with tempfile.TemporaryDirectory() as tmp:
        syms = {}
        for src in sources:
            obj = Path(tmp) / (src.stem + ".o")
            subprocess.run([cc, "-std=c11", "-D_POSIX_C_SOURCE=200809L", "-fopenmp", "-I", str(root / "csrc"),
                            "-c", str(src), "-o", str(obj)], check=True)
            syms[src.name] = _symbols(obj)
    owner = {s: f for f, (defined, _) in syms.items() for s in defined}
    graph = {f: {owner[s] for s in used if s in owner and owner[s] != f} for f, (_, used) in syms.items()}
    problems = []
    for comp in circles(graph):
        ties = [f"{a} -> {b}" for a in comp for b in sorted(graph[a]) if b in comp]
        problems.append(f"C circle of {len(comp)} files: {'; '.join(ties)}")
    return problems


# ---- what a unit touches -------------------------------------------------------------------------------

def _code_text(path: Path) -> str:
    """The file's code without comments (and, for Python, without docstrings)."""
    text = path.read_text(errors="replace")
    if path.suffix == ".py":
        out, prev = [], tokenize.INDENT
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            docstring = tok.type == tokenize.STRING and prev in (tokenize.INDENT, tokenize.DEDENT,
                                                                  tokenize.NEWLINE, tokenize.NL)
            if tok.type != tokenize.COMMENT and not docstring:
                out.append(tok.string)
            if tok.type not in (tokenize.COMMENT, tokenize.NL):
                prev = tok.type
        return " ".join(out)
    return re.sub(r"/\*.*?\*/|//[^\n]*", " ", text, flags=re.DOTALL)


def touches(names: tuple[str, ...] | str, root: Path = ROOT) -> list[str]:
    """Library files whose name or code (comments and docstrings left out) names one of ``names``: as a whole
    word or as a part of an identifier between underscores (``spmv_jad_ops``, ``SPMV_FMT_JAD``), any case."""
    names = (names,) if isinstance(names, str) else names
    words = [re.compile(rf"(?<![A-Za-z0-9]){re.escape(n)}(?![A-Za-z0-9])", re.IGNORECASE) for n in names]
    found = []
    for top in LIBRARY:
        for p in sorted((root / top).rglob("*")):
            if p.suffix in CODE_SUFFIXES and p.is_file():
                text = _code_text(p)
                if any(w.search(p.name) or w.search(text) for w in words):
                    found.append(str(p.relative_to(root)))
    return found


def check_units(root: Path = ROOT, verbose: bool = True) -> list[str]:
    """Each unit's count against UNITS: the files naming it, less the consumers UNITS lists."""
    problems = []
    for what, (names, expected, consumers) in UNITS.items():
        files = touches(names, root)
        own = [f for f in files if f not in consumers]
        if verbose:
            used = f" (and {len(files) - len(own)} that use it by name: {', '.join(sorted(set(files) - set(own)))})" \
                if len(own) < len(files) else ""
            print(f"{what} ({'/'.join(names)}): {len(own)} library files: {' '.join(own)}{used}")
        if len(own) != expected:
            problems.append(f"{what} ({'/'.join(names)}) is named in {len(own)} library files, not {expected}: "
                            f"{' '.join(own)}")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("what", choices=("check", "imports", "c", "touches"))
    ap.add_argument("names", nargs="*", help="for touches: the names to look for")
    args = ap.parse_args(argv)
    if args.what == "touches":
        for n in args.names:
            files = touches(n)
            print(f"{n}: {len(files)} library files: {' '.join(files)}")
        return 0
    problems = []
    if args.what in ("check", "imports"):
        problems += check_imports()
    if args.what in ("check", "c"):
        problems += check_c()
    if args.what == "check":
        problems += check_units()
    for p in problems:
        print(p)
    print(f"{len(problems)} problem(s)" if problems else "structure check: no problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
