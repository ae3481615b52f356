"""The C library for C and C++ programs (docs/c_api.md): libspmv installed inside the package with its headers, a
pkg-config file and a CMake package; the examples of examples/ built against it with pkg-config's flags, with
``pyspmv clib``'s and with CMake, run, and compared with pyspmv's own ranking and product.

Against a regular install (CI's ``pip install '.[test]'``) the installed package itself is the tree under test;
against an editable install, the library's files installed from its build folder into a temporary folder
(``meson install --tags clib --destdir``, what the wheel holds of them), and ``pyspmv clib``'s flags pointing
into the build. Skipped where neither is there (a copied package, as CI's sanitizer run uses) or where a
compiler, pkg-config or CMake is missing."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from functools import cache
from importlib import resources
from pathlib import Path

import numpy as np
import pytest
import scipy.io

import pyspmv
from pyspmv import _core

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
EXAMPLES = ROOT / "examples"
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
CXX = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
PKG_CONFIG = shutil.which("pkg-config") or shutil.which("pkgconf")
CMAKE = shutil.which("cmake")
NM = shutil.which("nm")
needs_cc = pytest.mark.skipif(CC is None or CXX is None, reason="no C and C++ compilers on PATH")
STRICT_C = ["-std=c99", "-O1", "-Wall", "-Wextra", "-Werror", "-pedantic"]
STRICT_CXX = ["-std=c++17", "-O1", "-Wall", "-Wextra", "-Werror", "-pedantic"]


def clib(*args: str, command: str = "clib") -> str:
    r = subprocess.run([sys.executable, "-m", "pyspmv", command, *args], capture_output=True, text=True, check=False,
                       cwd=HERE)      # not the source tree, whose pyspmv/ would shadow the installed package
    assert r.returncode == 0, r.stderr
    assert r.stderr == ("" if command == "clib" else
                        f"pyspmv: warning: `pyspmv {command}` is deprecated and goes in pyspmv 0.4: it is now "
                        "`pyspmv clib`, which ran.\n")
    return r.stdout.strip()


@pytest.fixture(scope="module")
def tree(tmp_path_factory) -> Path:
    """The installed ``pyspmv`` folder holding include/ and lib/ (see the module's docstring)."""
    pkg = resources.files("pyspmv")
    if isinstance(pkg, Path) and (pkg / "lib" / "libspmv.so").is_file():
        return pkg
    build = Path(_core.__file__).parent
    meson = shutil.which("meson", path=str(Path(sys.executable).parent)) or shutil.which("meson")
    if not (build / "meson-info").is_dir() or meson is None:
        pytest.skip("pyspmv's C library is not installed here (a copied package without lib/)")
    dest = tmp_path_factory.mktemp("destdir")
    r = subprocess.run([meson, "install", "-C", str(build), "--tags", "clib", "--destdir", str(dest), "--no-rebuild",
                        "--quiet"], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout + r.stderr
    (lib,) = dest.rglob("pyspmv/lib/libspmv.so")
    return lib.parents[1]


@cache
def model():
    """A small cpu forest (test_export's, fitted on planted times), so that the examples compile in a second."""
    from test_export import fitted
    return pyspmv.portable(fitted("forest"), "cpu")


@pytest.fixture(scope="module")
def ranker(tmp_path_factory) -> Path:
    """A folder with model.h (the small model, exported as ``--name model``) and ranker.o compiled from it."""
    if CC is None:
        pytest.skip("no C compiler on PATH")
    d = tmp_path_factory.mktemp("model")
    pyspmv.export_c(model(), d / "model.h", name="model", dtype="float64")
    subprocess.run([CC, *STRICT_C, "-I", str(d), "-c", str(EXAMPLES / "common" / "ranker.c"), "-o",
                    str(d / "ranker.o")], check=True)
    return d


@cache
def matrices(folder: str) -> list[tuple[Path | None, pyspmv.Matrix]]:
    """(file, matrix) pairs the examples run on: None is their built-in 40 x 40 Poisson matrix."""
    out: list[tuple[Path | None, pyspmv.Matrix]] = [(None, pyspmv.generate("poisson2d", 40))]
    for kind, n in (("powerlaw", 700), ("banded", 500)):
        A = pyspmv.generate(kind, n, seed=3)
        path = Path(folder) / f"{kind}.mtx"
        scipy.io.mmwrite(path, A.to_scipy())
        out.append((path, A))
    return out


def check_run(exe: Path, tmp_path: Path) -> None:
    """Run exe on each matrix, from a clean environment (no LD_LIBRARY_PATH: the rpath finds libspmv), and compare
    with pyspmv: the same pick as pyspmv.rank with the same model, converted to its format, the same product."""
    env = {k: v for k, v in os.environ.items() if k not in ("LD_LIBRARY_PATH", "PYTHONPATH")}
    for path, A in matrices(str(tmp_path)):
        r = subprocess.run([str(exe), *([str(path)] if path else [])], capture_output=True, text=True, env=env,
                           check=False, timeout=60)
        assert r.returncode == 0, (exe.name, r.stdout, r.stderr)
        out = dict(line.split(" ", 1) for line in r.stdout.splitlines())
        assert out["library"] == pyspmv.__version__
        assert out["matrix"] == f"{A.nrows} {A.ncols} {A.nnz}"
        ranking = pyspmv.rank(A, model(), device="cpu", dtype="float64")
        pick, ms = ranking[0]
        assert out["pick"] == pick, (exe.name, path)
        assert float(out["predicted_ms"]) == pytest.approx(ms, rel=1e-5)
        assert out["format"] == pyspmv.config(pick).format
        x = 1.0 + 0.25 * (np.arange(A.ncols) % 7)
        y = pyspmv.spmv(A, x, config=pick)
        assert float(out["ysum"]) == pytest.approx(float(np.sum(y)), rel=1e-12)
        assert float(out["max_rel_err"]) <= 1e-12


@pytest.mark.skipif(NM is None, reason="no nm on PATH")
def test_library_exports_exactly_the_header_functions_versioned(tree):
    """libspmv's dynamic symbols: the functions spmv.h and spmv_version.h declare, each versioned
    SPMV_<major>.<minor> of pyproject's version; nothing of the core's internals."""
    sys.path.insert(0, str(ROOT / "csrc"))
    try:
        from exports import declared
    finally:
        sys.path.pop(0)
    want = set(declared((tree / "include" / "spmv.h").read_text()))
    want |= set(declared((tree / "include" / "spmv_version.h").read_text()))
    assert "spmv_rank" in want and "spmv_version" in want
    node = "SPMV_" + ".".join(pyspmv.__version__.split(".")[:2])
    r = subprocess.run([NM, "-D", "--defined-only", str(tree / "lib" / "libspmv.so")], capture_output=True, text=True,
                       check=True)
    got = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] != "A":
            name, _, version = parts[2].partition("@@")
            got[name] = version
    assert set(got) == want
    assert set(got.values()) == {node}
    text = (tree / "include" / "spmv_version.h").read_text()
    assert f'#define SPMV_VERSION "{pyspmv.__version__}"' in text


def test_config_command(tree):
    """``pyspmv clib``: the flags and folders of this installation, its version pyproject's."""
    lib = json.loads(clib("--json"))
    assert lib["version"] == pyspmv.__version__
    assert (Path(lib["libdir"]) / "libspmv.so").is_file()
    assert any((Path(d) / "spmv.h").is_file() for d in lib["includedirs"])
    assert any((Path(d) / "spmv_version.h").is_file() for d in lib["includedirs"])
    assert clib("--cflags", "--libs") == f"{lib['cflags']} {lib['libs']}"
    assert clib("--cflags", "--libs", command="config") == f"{lib['cflags']} {lib['libs']}"   # deprecated, until 0.4
    regular = isinstance(resources.files("pyspmv"), Path)
    assert bool(lib["pkgconfigdir"]) == bool(lib["cmakedir"]) == regular
    if regular:                                           # relocatable files beside the library
        assert Path(lib["pkgconfigdir"]) == tree / "lib" / "pkgconfig"
        assert Path(lib["cmakedir"]) == tree / "lib" / "cmake" / "spmv"
        assert clib("--libdir") == str(tree / "lib")
    else:                                                 # editable: no relocatable tree to point at
        r = subprocess.run([sys.executable, "-m", "pyspmv", "clib", "--cmakedir"], cwd=HERE, capture_output=True, text=True,
                           check=False)
        assert r.returncode == 2 and "editable" in r.stderr


@needs_cc
@pytest.mark.skipif(PKG_CONFIG is None, reason="no pkg-config on PATH")
def test_examples_with_pkg_config_and_config_flags(tree, ranker, tmp_path):
    """examples/c/rank.c with pkg-config's flags for spmv.pc (relocated: its paths follow its folder) and
    examples/cpp/rank.cpp with ``pyspmv clib --cflags --libs``, both with warnings as errors; run, their pick
    and product pyspmv's."""
    env = dict(os.environ, PKG_CONFIG_PATH=str(tree / "lib" / "pkgconfig"))

    def pkg(*args: str) -> list[str]:
        r = subprocess.run([PKG_CONFIG, *args, "spmv"], capture_output=True, text=True, env=env, check=True)
        return r.stdout.split()

    assert pkg("--modversion") == [pyspmv.__version__]
    common = EXAMPLES / "common"
    exe_c = tmp_path / "rank_c"
    r = subprocess.run([CC, *STRICT_C, *pkg("--cflags"), "-I", str(common), "-o", str(exe_c), str(EXAMPLES / "c" /
                        "rank.c"), str(common / "mtx.c"), str(ranker / "ranker.o"), *pkg("--libs"), "-lm"],
                       capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    check_run(exe_c, tmp_path)

    flags = clib("--cflags", "--libs").split()
    cflags = [f for f in flags if f.startswith("-I")]
    libs = [f for f in flags if not f.startswith("-I")]
    mtx_o = tmp_path / "mtx.o"
    subprocess.run([CC, *STRICT_C, *cflags, "-c", str(common / "mtx.c"), "-o", str(mtx_o)], check=True)
    exe_cpp = tmp_path / "rank_cpp"
    r = subprocess.run([CXX, *STRICT_CXX, *cflags, "-I", str(common), "-o", str(exe_cpp), str(EXAMPLES / "cpp" /
                        "rank.cpp"), str(mtx_o), str(ranker / "ranker.o"), *libs], capture_output=True, text=True,
                       check=False)
    assert r.returncode == 0, r.stderr[-3000:]
    check_run(exe_cpp, tmp_path)


@needs_cc
@pytest.mark.skipif(CMAKE is None, reason="no cmake on PATH")
def test_examples_with_cmake(tree, ranker, tmp_path):
    """examples/CMakeLists.txt: find_package(spmv 0.3) from the installed CMake package, the C and C++ examples
    built and run as above; the CUDA one too where a GPU is usable (its pick a GPU configuration, its product
    right; exit 77 would say there is no GPU)."""
    from pyspmv.cli.about import gpu
    build = tmp_path / "build"
    cuda = bool(_core.HAVE_NVCC) and gpu()["usable"]   # the cuda default's header takes a while to compile
    r = subprocess.run([CMAKE, "-S", str(EXAMPLES), "-B", str(build), f"-Dspmv_DIR={tree / 'lib' / 'cmake' / 'spmv'}",
                        f"-DSPMV_MODEL_DIR={ranker}", f"-DPYSPMV_PYTHON={sys.executable}",
                        "-DCMAKE_BUILD_TYPE=Release", "-DSPMV_EXAMPLES_WERROR=ON",
                        f"-DSPMV_EXAMPLES_CUDA={'ON' if cuda else 'OFF'}"], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout[-2000:] + r.stderr[-3000:]
    r = subprocess.run([CMAKE, "--build", str(build), "-j", "2"], capture_output=True, text=True, check=False)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    check_run(build / "rank_c", tmp_path)
    check_run(build / "rank_cpp", tmp_path)
    if cuda:
        for path, A in matrices(str(tmp_path)):
            r = subprocess.run([str(build / "rank_cuda"), *([str(path)] if path else [])], capture_output=True,
                               text=True, check=False, timeout=300)
            assert r.returncode == 0, r.stdout + r.stderr
            out = dict(line.split(" ", 1) for line in r.stdout.splitlines())
            assert out["matrix"] == f"{A.nrows} {A.ncols} {A.nnz}"
            assert pyspmv.config(out["pick"]).device == "cuda"
            assert float(out["max_rel_err"]) <= 1e-12
            x = 1.0 + 0.25 * (np.arange(A.ncols) % 7)
            assert float(out["ysum"]) == pytest.approx(float(np.sum(A.to_scipy() @ x)), rel=1e-9)


def test_cmake_version_file_refuses_another_minor(tree, tmp_path):
    """find_package(spmv X.Y) takes the package only for its own major.minor (the symbols' version)."""
    if CMAKE is None:
        pytest.skip("no cmake on PATH")
    major, minor = (int(v) for v in pyspmv.__version__.split(".")[:2])
    cm = tree / "lib" / "cmake" / "spmv"
    for want, found in ((f"{major}.{minor}", True), (f"{major}.{minor + 1}", False), (f"{major + 1}.0", False)):
        (tmp_path / "CMakeLists.txt").write_text(
            f"cmake_minimum_required(VERSION 3.18)\nproject(v LANGUAGES NONE)\nfind_package(spmv {want})\n"
            'message(STATUS "found=${spmv_FOUND}")\n')
        r = subprocess.run([CMAKE, "-S", str(tmp_path), "-B", str(tmp_path / f"b{want}"), f"-Dspmv_DIR={cm}"],
                           capture_output=True, text=True, check=False)
        assert r.returncode == 0, r.stderr
        assert f"found={'1' if found else '0'}" in r.stdout, (want, r.stdout)
