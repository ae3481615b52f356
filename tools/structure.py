"""tools/structure.py: the structure check of ARCHITECTURE.md, run by CI (`python tools/structure.py check`).

It reads the code, never runs it, and needs only Python and a C compiler:

* ``imports``: the Python package's import graph between files (every ``import`` statement, at module level,
  under ``if TYPE_CHECKING:`` or inside a function), its circles, and the imports made inside functions,
  which are allowed only for the optional dependencies of :data:`OPTIONAL`.
* ``c``: the C core's graph between files, from the symbols each compiled file defines and uses (``nm``):
  a function of ``b.c`` called from ``a.c`` is an arrow ``a.c -> b.c``. Its circles.
* ``sizes``: no source file of the library over :data:`MAX_FILE_LINES` lines, no function over
  :data:`MAX_FUNCTION_LINES` (Python functions by ``ast``; C and CUDA functions by :func:`c_functions`, a
  brace matcher over the top-level code), but those :data:`LONG_FUNCTIONS` lists with their reason.
* ``touches NAME...``: the files of the library (``csrc/``, ``kernels/``, ``pyspmv/``) whose name or code
  (comments and docstrings left out) names ``NAME``: what adding one more unit of that kind touches, counted
  on one that exists.
* ``units``: each row of ARCHITECTURE.md's "Which files to touch" against the code: the files naming one
  existing unit of each kind (:data:`UNITS`), what the registry's lists (``csrc/formats.def``,
  ``kernels.def``, ``models.def``, ``features.def``) declare against the files that must serve each entry,
  and the files that must name no unit (:data:`GENERIC`).
* ``check``: all of them.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import argparse
import ast
import functools
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
#: name it, the test files that come with it (ARCHITECTURE.md's "Which files to touch" counts both), and the files
#: that name it only because they use that very unit on purpose (a literature model's formats or features), with
#: the reason. The newest format (the last line of csrc/formats.def) is checked as a storage format too.
UNITS = {
    "a storage format": (("jad",), 5, ("tests/test_jad.py",), {
        "pyspmv/models/analytic.py": "Wang's model is defined over CSR, ELL and JAD"}),
    "a matrix feature": (("nnz_sd",), 2, (), {
        "pyspmv/models/_common.py": "Lehnert's feature set names its features",
        "pyspmv/models/analytic.py": "Wang's relations read the row-length statistics"}),
    "a model kind": (("formula",), 3, ("tests/test_export.py",), {}),
    "an estimator": (("BoostedModel", "boosted"), 3, (), {
        "pyspmv/cli/parser.py": "`pyspmv train` defaults to it",
        "pyspmv/evaluate.py": "evaluate.train defaults to it"}),
}

#: Library files that must name no unit of a kind: what a new unit would otherwise touch beside its own files.
GENERIC = {
    "csrc/pass.c": ("a storage format", ("the one pass runs the formats' parts (spmv_pass_part, declared in each "
                                         "format's own file) without naming one")),
}

#: Files that name CUDA kernels because they model those very kernels, with the reason.
KERNEL_CONSUMERS = {"pyspmv/models/analytic.py": "Wang's model names the CSR kernels it models"}
#: Every matrix arrives as CSR: naming it is no format's part (GENERIC files may).
INPUT_FORMAT = "csr"

#: The rows of ARCHITECTURE.md's "Which files to touch" table, as its first column spells them.
TABLE_ROWS = ("a storage format", "a CUDA kernel of an existing format", "a CPU kernel of an existing format",
              "a configuration parameter name", "a matrix feature", "a model kind", "an estimator")

#: Limits of the library's sources (ARCHITECTURE.md's conventions): lines of a file, lines of a function (from
#: its ``def`` or name to its last line or closing brace).
MAX_FILE_LINES = 700
MAX_FUNCTION_LINES = 120
SOURCE_SUFFIXES = (".py", ".c", ".h", ".cu", ".cuh")
#: Functions allowed past MAX_FUNCTION_LINES, as "file:function" (Python: qualified, ``Class.method``) -> why.
LONG_FUNCTIONS: dict[str, str] = {}


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


# ---- sizes ---------------------------------------------------------------------------------------------

def _blank_c(text: str) -> str:
    """C or CUDA text with comments, string and character literals and preprocessor lines (with their
    continuations) turned to spaces, newlines kept: what is left is braces, parentheses and words at their
    places. Raw C++ strings are not recognised (the library has none)."""
    out = list(text)
    i, n, line_start = 0, len(text), True
    while i < n:
        ch = text[i]
        if line_start and ch == "#":                    # a directive: to the end of the line, continued by '\'
            while i < n and not (text[i] == "\n" and text[i - 1] != "\\"):
                if text[i] != "\n":
                    out[i] = " "
                i += 1
            continue
        if ch == "\n":
            line_start = True
            i += 1
            continue
        if not ch.isspace():
            line_start = False
        if text.startswith("//", i):
            end = text.find("\n", i)
            end = n if end < 0 else end
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
        elif ch in "\"'":
            end = i + 1
            while end < n and text[end] != ch and text[end] != "\n":
                end += 2 if text[end] == "\\" else 1
            end = min(end + 1, n)
        else:
            i += 1
            continue
        for k in range(i, end):
            if out[k] != "\n":
                out[k] = " "
        i = end
    return "".join(out)


def _match(code: str, i: int, open_: str, close: str) -> int:
    """Index of the bracket closing the one at code[i]."""
    depth = 0
    for k in range(i, len(code)):
        if code[k] == open_:
            depth += 1
        elif code[k] == close:
            depth -= 1
            if depth == 0:
                return k
    return len(code) - 1


def _function_name(header: str) -> str | None:
    """The name a header (the code between the previous top-level ``;``/``}`` and a ``{``) declares, when it
    declares a function: its parameter list is its last top-level parenthesised group, followed by nothing
    but qualifier words (``const``, ``noexcept``), and no ``=`` stands outside parentheses. A name written by a
    macro (``SPMV_NAME(jad_fill)``) is kept whole."""
    depth, flat = 0, []
    for ch in header:
        depth += ch == "("
        flat.append(ch if depth == 0 or ch in "()" else " ")
        depth -= ch == ")"
    flat_s = "".join(flat)
    if "=" in flat_s or ")" not in flat_s or not re.fullmatch(r"[\w\s]*", flat_s[flat_s.rindex(")") + 1:]):
        return None
    close = flat_s.rindex(")")
    opening = flat_s.rindex("(", 0, close)
    before = header[:opening].rstrip()
    if before.endswith(")"):                                 # a macro writes the name
        start = before.rindex("(")
        word = re.search(r"(\w+)\s*$", before[:start])
        return f"{word.group(1)}({before[start + 1:-1].strip()})" if word else None
    word = re.search(r"(\w+)$", before)
    keywords = {"if", "for", "while", "switch", "return", "sizeof", "defined"}
    return word.group(1) if word and word.group(1) not in keywords else None


def c_functions(text: str) -> list[tuple[str, int, int]]:
    """(name, first line, last line) of each function defined at the top level of C or CUDA text: comments,
    literals and directives blanked (:func:`_blank_c`), then a brace at the top level opens a function when the
    code before it (:func:`_function_name`) declares one; its body runs to the matching brace. ``extern "C"``
    and namespace blocks are looked into, as top level; structs, unions, enums and initialisers are not
    functions. The first line is the name's."""
    code = _blank_c(text)
    found, i, start, depth = [], 0, 0, 0
    while i < len(code):
        ch = code[i]
        if ch == ";":
            start = i + 1
        elif ch == "}" and depth > 0:                       # the end of an extern "C" or namespace block
            depth -= 1
            start = i + 1
        elif ch == "{":
            header = code[start:i]
            if re.search(r"(\bextern\s*|\bnamespace\s+\w*\s*|\bnamespace\s*)$", header):
                depth += 1
                start = i + 1
            else:
                end = _match(code, i, "{", "}")
                name = _function_name(header)
                if name is not None:
                    at = start + header.rindex(name.split("(")[0])
                    found.append((name, code.count("\n", 0, at) + 1, code.count("\n", 0, end) + 1))
                i, start = end, end + 1
        i += 1
    return found


def py_functions(text: str, filename: str = "<file>") -> list[tuple[str, int, int]]:
    """(qualified name, ``def`` line, last line) of every function and method, nested ones too."""
    found = []

    def visit(node: ast.AST, prefix: str) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                name = f"{prefix}{child.name}"
                if not isinstance(child, ast.ClassDef):
                    found.append((name, child.lineno, child.end_lineno or child.lineno))
                visit(child, name + ".")
            else:
                visit(child, prefix)

    visit(ast.parse(text, filename), "")
    return found


def check_sizes(root: Path = ROOT, long_functions: dict[str, str] | None = None) -> list[str]:
    """Library sources over MAX_FILE_LINES lines, functions over MAX_FUNCTION_LINES (but the exceptions), and
    exceptions that no longer name a long function."""
    allowed = LONG_FUNCTIONS if long_functions is None else long_functions
    problems, seen = [], set()
    for top in LIBRARY:
        for p in sorted((root / top).rglob("*")):
            if p.suffix not in SOURCE_SUFFIXES or not p.is_file():
                continue
            rel = str(p.relative_to(root))
            text = p.read_text(errors="replace")
            lines = text.count("\n") + (not text.endswith("\n") and bool(text))
            if lines > MAX_FILE_LINES:
                problems.append(f"{rel}: {lines} lines, past {MAX_FILE_LINES}")
            funcs = py_functions(text, rel) if p.suffix == ".py" else c_functions(text)
            for name, first, last in funcs:
                key, length = f"{rel}:{name}", last - first + 1
                if length <= MAX_FUNCTION_LINES:
                    continue
                seen.add(key)
                if key not in allowed:
                    problems.append(f"{key}: {length} lines (line {first}), past {MAX_FUNCTION_LINES}")
    problems += [f"{key}: listed in LONG_FUNCTIONS ({why}) but not past {MAX_FUNCTION_LINES} lines"
                 for key, why in sorted(allowed.items()) if key not in seen]
    return problems


# ---- what a unit touches -------------------------------------------------------------------------------

def _code_text(path: Path) -> str:
    """The file's code without comments (and, for Python, without docstrings)."""
    stat = path.stat()
    return _code_text_of(path, stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=4096)
def _code_text_of(path: Path, mtime_ns: int, size: int) -> str:
    """_code_text, kept per version of the file: the unit checks ask for every file many times."""
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


def _declared(root: Path, deffile: str, macro: str) -> list[list[str]]:
    """The arguments of each ``MACRO(...)`` line of a registry list (``csrc/<deffile>``), comments left out,
    split at the top-level commas."""
    code = _blank_c((root / "csrc" / deffile).read_text())
    out = []
    for m in re.finditer(rf"^\s*{macro}\s*\(", code, re.MULTILINE):
        open_ = m.end() - 1
        body = code[open_ + 1:_match(code, open_, "(", ")")]
        args, depth, cur = [], 0, []
        for ch in body:
            depth += ch in "({"
            depth -= ch in ")}"
            if ch == "," and depth == 0:
                args.append("".join(cur).strip())
                cur = []
            else:
                cur.append(ch)
        args.append("".join(cur).strip())
        out.append(args)
    return out


def table_numbers(root: Path = ROOT) -> dict[str, int]:
    """ARCHITECTURE.md's "Which files to touch": each row's change and its number of files."""
    text = (root / "ARCHITECTURE.md").read_text()
    section = text.split("## Which files to touch", 1)[-1].split("\n## ", 1)[0]
    return {m.group(1).strip(): int(m.group(2))
            for m in re.finditer(r"^\|\s*([^|]+?)\s*\|\s*(\d+):", section, re.MULTILINE)}


def _unit_count(what: str, names: tuple[str, ...], library: int, tests: tuple[str, ...], consumers: dict[str, str],
                root: Path, verbose: bool) -> tuple[int, list[str]]:
    """(library files naming the unit less its consumers + its test files, problems)."""
    files = touches(names, root)
    own = [f for f in files if f not in consumers]
    missing = [t for t in tests if not (root / t).is_file()]
    if verbose:
        used = f" (and {len(files) - len(own)} that use it by name: {', '.join(sorted(set(files) - set(own)))})" \
            if len(own) < len(files) else ""
        print(f"{what} ({'/'.join(names)}): {len(own)} library files: {' '.join(own)}{used}; tests: {' '.join(tests)}")
    problems = [f"{what} ({'/'.join(names)}) is named in {len(own)} library files, not {library}: {' '.join(own)}"
                for _ in [0] if len(own) != library]
    problems += [f"{what} ({'/'.join(names)}): its test {t} is missing" for t in missing]
    return len(own) + len(tests), problems


def check_registry(root: Path = ROOT) -> tuple[dict[str, int], list[str]]:
    """What the registry's lists declare against the files that serve each entry, and the number of files each
    row of the table touches as the code stands. Returns ({row: files}, problems)."""
    problems, counted = [], {}
    formats = {code: name for code, name, *_ in _declared(root, "formats.def", "SPMV_FORMAT")}
    for code, name in formats.items():
        src = root / "csrc" / f"{name}.c"
        if not src.is_file() or not re.search(rf"\bspmv_{name}_ops\s*=", _blank_c(src.read_text())):
            problems.append(f"csrc/formats.def declares {code}; csrc/{name}.c defines no spmv_{name}_ops")
    # a CPU kernel: its SPMV_CPU line and the case in csrc/<f>_impl.h; csrc/format.c counts a format's variants
    # from its SPMV_CPU lines, which must therefore be 0 .. n-1
    variants: dict[str, set[int]] = {}
    for id_, code, variant, *_ in _declared(root, "kernels.def", "SPMV_CPU"):
        variants.setdefault(code, set()).add(int(variant))
    for code, seen in sorted(variants.items()):
        name = formats.get(code)
        if seen != set(range(len(seen))):
            problems.append(f"the SPMV_CPU lines of {code} have variants {sorted(seen)}, not 0 .. {len(seen) - 1}: "
                            "csrc/format.c takes the largest + 1 as the format's count")
        if name and not (root / "csrc" / f"{name}_impl.h").is_file():
            problems.append(f"{code} has CPU kernels but no csrc/{name}_impl.h")
    counted["a CPU kernel of an existing format"] = 2
    # a CUDA kernel: its SPMV_OWN line and kernels/<f>.cu (the kernel and its SPMV_CUDA_KERNEL line), named
    # nowhere else
    registered = {}
    for p in sorted((root / "kernels").glob("*.cu")):
        for sym in re.findall(r"^\s*SPMV_CUDA_KERNEL(?:_HOST_ROWS|_DOT)?\s*\(\s*(\w+)", _blank_c(p.read_text()), re.MULTILINE):
            registered.setdefault(sym, []).append(f"kernels/{p.name}")
    for sym, id_, code, *_ in _declared(root, "kernels.def", "SPMV_OWN"):
        where = [f"kernels/{formats.get(code)}.cu"]
        if registered.get(sym) != where:
            problems.append(f"SPMV_OWN({sym}, ...) of {code}: SPMV_CUDA_KERNEL({sym}, ...) is in "
                            f"{registered.get(sym, 'no file')}, not {where}")
            continue
        named = [f for f in touches(sym, root) if f not in KERNEL_CONSUMERS]
        if sym not in formats.values() and sorted(named) != sorted(["csrc/kernels.def", *where]):
            problems.append(f"the CUDA kernel {sym} is named in {' '.join(named)}, not only in csrc/kernels.def "
                            f"and {where[0]}")
    counted["a CUDA kernel of an existing format"] = 2
    # a parameter name: its line in kernels.def; the columns and the grammar come from it (spmv.h, config.c)
    for code, name in _declared(root, "kernels.def", "SPMV_PARAM") + \
            _declared(root, "kernels.def", "SPMV_PARAM_NO_COLUMN") + _declared(root, "kernels.def", "SPMV_PARAM_AXIS"):
        named = [f for f in touches(f"SPMV_COL_P_{code}", root) if f != "csrc/kernels.def"]
        if named:
            problems.append(f"the parameter {name}'s column SPMV_COL_P_{code} is named in {' '.join(named)}")
    counted["a configuration parameter name"] = 1
    # a feature: its line in features.def and its computation in features.c
    computed = _blank_c((root / "csrc" / "features.c").read_text())
    for code, name, *_ in _declared(root, "features.def", "SPMV_FEATURE"):
        if not re.search(rf"\bSPMV_FEATURE_{code}\b", computed):
            problems.append(f"csrc/features.def declares {name}; csrc/features.c never computes SPMV_FEATURE_{code}")
    # a model kind: csrc/model_<kind>.c with its operations
    for code, name, *_ in _declared(root, "models.def", "SPMV_MODEL"):
        src = root / "csrc" / f"model_{name}.c"
        if not src.is_file() or not re.search(rf"\bspmv_{name}_ops\s*=", _blank_c(src.read_text())):
            problems.append(f"csrc/models.def declares {code}; csrc/model_{name}.c defines no spmv_{name}_ops")
    return counted, problems


def check_units(root: Path = ROOT, verbose: bool = True) -> list[str]:
    """Each row of ARCHITECTURE.md's "Which files to touch" against the code: the units of UNITS (and the
    newest format) named in as many files as the row says, the registry's entries served by their files, and
    the GENERIC files naming no unit of their kind."""
    counted, problems = check_registry(root)
    newest = _declared(root, "formats.def", "SPMV_FORMAT")[-1][1]
    units = dict(UNITS)
    names, library, tests, consumers = UNITS["a storage format"]
    if newest not in names:
        units["the newest storage format"] = ((newest,), library, (f"tests/test_{newest}.py",), consumers)
    for what, (names, library, tests, consumers) in units.items():
        n, found = _unit_count(what, names, library, tests, consumers, root, verbose)
        problems += found
        row = what if what in TABLE_ROWS else "a storage format"
        if counted.setdefault(row, n) != n:
            problems.append(f"{what} ({'/'.join(names)}) touches {n} files, {row} {counted[row]}")
    formats = [name for _, name, *_ in _declared(root, "formats.def", "SPMV_FORMAT") if name != INPUT_FORMAT]
    for rel, (kind, why) in GENERIC.items():
        named = [n for n in formats if rel in touches(n, root)] if kind == "a storage format" else []
        if named:
            problems.append(f"{rel} names the formats {', '.join(named)}: {why}")
    table = table_numbers(root)
    for row in TABLE_ROWS:
        if row not in table:
            problems.append(f"ARCHITECTURE.md's \"Which files to touch\" has no row {row!r}")
        elif table[row] != counted.get(row):
            problems.append(f"ARCHITECTURE.md says {row} touches {table[row]} files; the code, {counted.get(row)}")
    problems += [f"ARCHITECTURE.md's \"Which files to touch\" row {row!r} is not checked" for row in table
                 if row not in TABLE_ROWS]
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("what", choices=("check", "imports", "c", "sizes", "units", "touches"))
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
    if args.what in ("check", "sizes"):
        problems += check_sizes()
    if args.what in ("check", "units"):
        problems += check_units()
    for p in problems:
        print(p)
    print(f"{len(problems)} problem(s)" if problems else "structure check: no problems")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
