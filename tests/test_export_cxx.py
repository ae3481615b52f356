"""Exported headers as C99, C++17 and CUDA: the shipped cpu default and a small trained model compile warning-free
with cc (-std=c99 -pedantic), g++ and clang++ (-std=c++17), each with -Wall -Wextra -Werror, and under nvcc; the
programs rank matrices exactly as pyspmv.rank does (order, and times to 1e-9). A compiler that is absent is skipped.

The solver's files include the headers plainly; one file of their own defines NAME_IMPLEMENTATION (the header's
opening comment), as a solver would build them."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import os
import shutil
import subprocess
from functools import cache
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pyspmv
from pyspmv import models
from pyspmv.datasets import design_rows

TOL = 1e-9
CC = shutil.which("cc") or shutil.which("gcc")
CXX = {"g++": shutil.which("g++"), "clang++": shutil.which("clang++")}
NVCC = shutil.which("nvcc")
#: The compilers' environment: CI preloads AddressSanitizer into the Python suite's processes, and nvcc's
#: front end crashes under it (a compiler is not what the suite checks).
TOOL_ENV = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
WARN = ["-Wall", "-Wextra", "-Werror"]


@cache
def small_model() -> pyspmv.RankModel:
    """A boosted model fitted on planted runtimes of a few matrices (no timing: it only needs something to learn)."""
    rng = np.random.default_rng(3)
    cfgs = pyspmv.configs("cpu")
    Xs, ys, gs = [], [], []
    for k, n in (("poisson2d", 8), ("random", 150), ("powerlaw", 220), ("banded", 200)):
        A = pyspmv.generate(k, n, seed=1) if k in ("random", "powerlaw") else pyspmv.generate(k, n)
        X = design_rows(pyspmv.features(A), cfgs, pyspmv.config_features(A, cfgs, dtype="float64"), 8.0)
        X = X[np.isfinite(X["bytes_moved"].to_numpy())]
        Xs.append(X)
        ys.append(1e-6 * X["bytes_moved"].to_numpy() * rng.lognormal(0, 0.3, len(X)))
        gs += [A.name] * len(X)
    m = models.BoostedModel(n_estimators=6, max_depth=2).fit(pd.concat(Xs, ignore_index=True), np.concatenate(ys),
                                                              np.array(gs))
    return pyspmv.portable(m, "cpu")


SOLVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "cpu_default.h"
#include "small.h"

typedef int (*rank_fn)(int32_t, int32_t, const int32_t *, const int32_t *, int *, double *);

static int run(const char *name, int n, const char *const *ids, rank_fn rank, int32_t nr, int32_t nc,
               const int32_t *ip, const int32_t *ix) {
    int *order = (int *)malloc(sizeof(int) * (size_t)n);
    double *ms = (double *)malloc(sizeof(double) * (size_t)n);
    int rc = rank(nr, nc, ip, ix, order, ms);
    for (int j = 0; rc == 0 && j < n; j++) printf("%s %s %.17g\n", name, ids[order[j]], ms[order[j]]);
    free(order);
    free(ms);
    return rc;
}

int main(int argc, char **argv) {
    FILE *f = argc > 1 ? fopen(argv[1], "r") : NULL;
    int32_t nr, nc, nnz;
    if (f == NULL || fscanf(f, "%d %d %d", &nr, &nc, &nnz) != 3) return 2;
    int32_t *ip = (int32_t *)malloc(sizeof(int32_t) * (size_t)(nr + 1));
    int32_t *ix = (int32_t *)malloc(sizeof(int32_t) * (size_t)(nnz + 1));
    for (int32_t i = 0; i <= nr; i++)
        if (fscanf(f, "%d", &ip[i]) != 1) return 2;
    for (int32_t i = 0; i < nnz; i++)
        if (fscanf(f, "%d", &ix[i]) != 1) return 2;
    fclose(f);
    int rc = run("cpu_default", cpu_default_NCONFIGS, cpu_default_config_ids, cpu_default_rank, nr, nc, ip, ix);
    if (rc == 0) rc = run("small", small_NCONFIGS, small_config_ids, small_rank, nr, nc, ip, ix);
    free(ip);
    free(ix);
    return rc;
}
"""

IMPLEMENTATION = """#define cpu_default_IMPLEMENTATION
#include "cpu_default.h"
#define small_IMPLEMENTATION
#include "small.h"
"""


@pytest.fixture(scope="module")
def headers(tmp_path_factory) -> Path:
    d = tmp_path_factory.mktemp("cxx")
    pyspmv.export_c(pyspmv.default_model("cpu"), d / "cpu_default.h", dtype="float64")
    pyspmv.export_c(small_model(), d / "small.h", dtype="float64")
    return d


def matrices() -> tuple[pyspmv.Matrix, ...]:
    return (pyspmv.generate("poisson2d", 12), pyspmv.generate("powerlaw", 300, seed=9))


def build(d: Path, compiler: list[str], ext: str, out: str) -> Path:
    """The solver and the implementation file compiled apart and linked, as a solver's build does."""
    (d / f"solver{ext}").write_text(SOLVER)
    (d / f"rankers{ext}").write_text(IMPLEMENTATION)
    objs = []
    for src in ("solver", "rankers"):
        obj = d / f"{src}_{out}.o"
        r = subprocess.run([*compiler, "-O1", "-c", "-o", str(obj), str(d / f"{src}{ext}")], capture_output=True,
                           text=True, check=False, cwd=d, env=TOOL_ENV)
        assert r.returncode == 0, (compiler, src, r.stderr[-3000:])
        objs.append(str(obj))
    exe = d / out
    r = subprocess.run([compiler[0], "-o", str(exe), *objs, "-lm"], capture_output=True, text=True, check=False,
                       env=TOOL_ENV)
    assert r.returncode == 0, r.stderr[-3000:]
    return exe


def check_ranks_as_python(d: Path, exe: Path) -> None:
    """The program's ranking of each matrix: pyspmv.rank's order, and its times to 1e-9 (inf where it cannot serve)."""
    for A in matrices():
        with open(d / "A.txt", "w") as f:
            f.write(f"{A.nrows} {A.ncols} {A.nnz}\n{' '.join(map(str, A.indptr.tolist()))}\n"
                    f"{' '.join(map(str, A.indices.tolist()))}\n")
        out = subprocess.run([str(exe), str(d / "A.txt")], capture_output=True, text=True, check=False)
        assert out.returncode == 0, out.stderr
        rows = [ln.split() for ln in out.stdout.splitlines()]
        for name, model in (("cpu_default", pyspmv.default_model("cpu")), ("small", small_model())):
            got = [(c, float(ms)) for n, c, ms in rows if n == name]
            want = pyspmv.rank(A, model, device="cpu", dtype="float64")
            assert [c for c, _ in got] == [c for c, _ in want], (name, A.name)
            a, b = np.array([ms for _, ms in got]), np.array([ms for _, ms in want])
            assert np.array_equal(np.isinf(a), np.isinf(b))
            ok = np.isfinite(b)
            assert np.all(np.abs(a[ok] - b[ok]) <= TOL * np.abs(b[ok])), (name, A.name)


def test_opening_comment_says_how_to_use_the_header(headers):
    """The first comment names the switch, the include and the call, before any C."""
    text = (headers / "small.h").read_text()
    comment = text[:text.index("*/")]
    for s in ("#define small_IMPLEMENTATION", '#include "small.h"', "small_rank(nrows, ncols, indptr, indices, order, ms)",
              "small_config_ids[order[0]]", "C++17", "nvcc", "-lm"):
        assert s in comment, s
    assert text.index("#if defined(small_IMPLEMENTATION)") > text.index("#endif /* small_H */")


@pytest.mark.skipif(CC is None, reason="no C compiler (cc or gcc) on PATH")
def test_headers_compile_as_c99_and_rank_as_python(headers):
    exe = build(headers, [CC, "-std=c99", "-pedantic", *WARN], ".c", "c99")
    check_ranks_as_python(headers, exe)


@pytest.mark.parametrize("cxx", list(CXX))
def test_headers_compile_as_cxx17_and_rank_as_python(headers, cxx):
    if CXX[cxx] is None:
        pytest.skip(f"no {cxx} on PATH")
    exe = build(headers, [CXX[cxx], "-std=c++17", *WARN], ".cpp", cxx.replace("+", "x"))
    check_ranks_as_python(headers, exe)


@pytest.mark.skipif(NVCC is None, reason="no nvcc on PATH")
def test_headers_compile_under_nvcc(headers):
    """Compiled only, with nvcc's own front end warning-free too: nothing in a header needs a GPU."""
    (headers / "rankers.cu").write_text(IMPLEMENTATION + "int first(const int32_t *ip, const int32_t *ix, int *o, double *ms) "
                                        "{\n    return small_rank(1, 1, ip, ix, o, ms) + cpu_default_rank(1, 1, ip, ix, o, ms);"
                                        "\n}\n")
    r = subprocess.run([NVCC, "-std=c++17", "-Xcompiler", "-Wall,-Wextra,-Werror", "-c", "-o",
                        str(headers / "rankers_cu.o"), str(headers / "rankers.cu")], capture_output=True, text=True,
                       check=False, cwd=headers, env=TOOL_ENV)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "warning" not in r.stderr, r.stderr[-3000:]
