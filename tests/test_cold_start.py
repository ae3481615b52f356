"""A fast first call (issues 35 and 51): ``import pyspmv`` loads none of the heavy libraries, every public name
is still there, and the shipped models are stored uncompressed with their leaf vectors once each, read one value
type's table at a time and never copied anywhere (pyspmv.ranking.shipped). Times are benchmarks/cold_start.py's,
not asserted here."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import json
import subprocess
import sys
import threading
import zipfile
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

import pyspmv
from pyspmv.models.forest import forest_sums, share_leaf_vectors
from pyspmv.ranking import modelfile, shipped
from pyspmv.ranking.targets import DEFAULT_FILES

# Subprocesses start in tests/, not the checkout's root, where the source tree's pyspmv (without its
# compiled modules) would come first on sys.path and shadow the installed one.
HERE = Path(__file__).resolve().parent

HEAVY = ("pandas", "sklearn", "tqdm", "matplotlib", "threadpoolctl", "scipy.sparse", "scipy.sparse.linalg",
         "scipy.stats", "dask")


def _fresh(code: str) -> dict:
    """What ``code`` (run after ``import pyspmv`` in a new interpreter) prints as JSON."""
    out = subprocess.run([sys.executable, "-c", "import json, sys\nimport pyspmv\n" + code],
                         capture_output=True, text=True, check=True, cwd=HERE)
    return json.loads(out.stdout.strip().splitlines()[-1])


def test_import_loads_no_heavy_library():
    got = _fresh(f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))")
    assert got == [], f"import pyspmv imported {got}"


def test_first_rank_of_a_matrix_loads_no_pandas_or_sklearn():
    got = _fresh("A = pyspmv.Matrix.from_csr_arrays([0, 1, 2], [0, 1], [1.0, 2.0], (2, 2))\n"
                 "r = pyspmv.rank(A, device='cpu')\n"
                 "print(json.dumps([m for m in ('pandas', 'sklearn', 'tqdm', 'matplotlib') if m in sys.modules]))")
    assert got == []


def test_every_public_name_is_there_and_functions_stay_functions():
    """The lazy names resolve, dir() lists them, and importing the modules whose names functions shadow
    (cli imports calibrate and benchmark) leaves the functions in place."""
    got = _fresh("import pyspmv.cli, pyspmv.datasets, pyspmv.ranking.export\n"
                 "missing = [n for n in pyspmv.__all__ if not hasattr(pyspmv, n)]\n"
                 "kinds = {n: type(getattr(pyspmv, n)).__name__ for n in ('benchmark', 'calibrate', 'features', "
                 "'portable', 'rank', 'spmv', 'collect', 'load', 'load_model', 'generate')}\n"
                 "print(json.dumps([missing, sorted(set(pyspmv.__all__) - set(dir(pyspmv))), kinds,"
                 " type(pyspmv.datasets).__name__, type(pyspmv.models).__name__]))")
    missing, undir, kinds, ds, models = got
    assert missing == [] and undir == []
    assert set(kinds.values()) == {"function"}, kinds
    assert ds == models == "module"
    from pyspmv import collect, load, load_model  # noqa: F401 (from-imports of the lazy names)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        pyspmv.nope  # noqa: B018


@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("PYSPMV_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


def _same(a: pyspmv.RankModel, b: pyspmv.RankModel) -> None:
    assert (a.device, a.source, a.score, a.gpu, a.meta) == (b.device, b.source, b.score, b.gpu, b.meta)
    assert a.tables.keys() == b.tables.keys()
    for d, ta in a.tables.items():
        tb = b.tables[d]
        assert ta.config_ids == tb.config_ids
        assert np.array_equal(ta.group, tb.group) and np.array_equal(ta.extra, tb.extra)
        assert ta.spec.fields.keys() == tb.spec.fields.keys()
        for k, v in ta.spec.fields.items():
            assert np.array_equal(v, tb.spec.fields[k], equal_nan=True), k


# -- the shipped models: stored, leaf vectors once each, one table at a time ----------------------------------

def _forests(rm: pyspmv.RankModel):
    for dtype, t in rm.tables.items():
        if t.spec.kind == "forest":
            yield dtype, t.spec.fields


@pytest.mark.parametrize("target", list(DEFAULT_FILES))
def test_shipped_models_are_stored_with_each_leaf_vector_once(target):
    res = resources.files("pyspmv") / "data" / DEFAULT_FILES[target]
    with resources.as_file(res) as path, zipfile.ZipFile(path) as zf:
        # cpu's stored; the GPUs' deflated at level 1, to keep each committed file under 8 MiB (9.2 MB stored)
        want = zipfile.ZIP_STORED if target == "cpu" else zipfile.ZIP_DEFLATED
        assert {i.compress_type for i in zf.infolist()} == {want}
        rm = modelfile.load_model(path)
    assert sorted(rm.tables) == ["float32", "float64"]
    for dtype, f in _forests(rm):
        V = f["forest.value"].reshape(f["forest.nleaves"], f["forest.nout"])
        leaf = f["forest.feature"] < 0
        used = np.unique(f["forest.left"][leaf])
        assert len(np.unique(V.view(np.uint64), axis=0)) == len(V), dtype       # no vector twice
        assert np.array_equal(used, np.arange(len(V))), dtype                   # and every one used


def test_share_leaf_vectors_keeps_every_sum():
    """Leaves reached by the same matrices hold equal vectors: kept once, every walk adds the same bits (-0.0
    and 0.0 kept apart)."""
    rng = np.random.default_rng(3)
    base = rng.standard_normal((5, 4))
    base[1, 2] = -0.0
    base[2] = base[1]
    base[2, 2] = 0.0
    V = base[rng.integers(0, 5, 40)]                       # 40 leaf vectors, at most 5 different
    # a chain of 40 leaves: node 2k tests feature 0 at threshold k, its left child a leaf
    n = 79
    feature = np.full(n, -1, np.int32)
    left = np.full(n, -1, np.int32)
    right = np.full(n, -1, np.int32)
    thr = np.zeros(n)
    for k in range(39):
        feature[2 * k], thr[2 * k], left[2 * k], right[2 * k] = 0, k, 2 * k + 1, 2 * k + 2
        left[2 * k + 1] = k
    left[78] = 39
    tb = {"root": np.array([0], np.int32), "feature": feature, "left": left, "right": right, "threshold": thr,
          "value": V}
    new_left, W = share_leaf_vectors(feature, left, V)
    assert len(W) == len(np.unique(V.view(np.uint64), axis=0)) <= 5
    assert np.array_equal(new_left[feature >= 0], left[feature >= 0])
    Z = np.arange(-1.0, 41.0)[:, None]
    want = forest_sums(tb, Z)
    got = forest_sums({**tb, "left": new_left, "value": W}, Z)
    assert np.array_equal(want.view(np.uint64), got.view(np.uint64))


def test_one_table_is_read_as_the_whole_file_has_it(tmp_path):
    with resources.as_file(resources.files("pyspmv") / "data" / "default_cpu.pyspmv") as path:
        whole = modelfile.load_model(path)
        one = modelfile.load_model(path, dtypes=("float64",))
        assert list(one.tables) == ["float64"] and one.meta == whole.meta and one.source == whole.source
        a, b = one.tables["float64"], whole.tables["float64"]
        assert a.config_ids == b.config_ids and np.array_equal(a.group, b.group)
        for k, v in b.spec.fields.items():
            assert np.array_equal(a.spec.fields[k], v), k
        A = pyspmv.generate("powerlaw", 3000, seed=1)
        assert pyspmv.rank(A, one, dtype="float64") == pyspmv.rank(A, whole, dtype="float64")
        with pytest.raises(ValueError, match="float32"):
            pyspmv.rank(A, one, dtype="float32")
        small = pyspmv.save_model(one, tmp_path / "f64.pyspmv")
    with pytest.raises(ValueError, match=r"has no table for value type 'float32'; it has \['float64'\]"):
        modelfile.load_model(small, dtypes=("float64", "float32"))


def test_stored_model_files_are_checked_as_compressed_ones(tmp_path):
    """save_model(compress=False) reads back the same model; a damaged or cut stored member is refused, as
    zipfile refuses a compressed one."""
    with resources.as_file(resources.files("pyspmv") / "data" / "default_cpu.pyspmv") as path:
        rm = modelfile.load_model(path, dtypes=("float32",))
    packed = pyspmv.save_model(rm, tmp_path / "packed.pyspmv")
    stored = pyspmv.save_model(rm, tmp_path / "stored.pyspmv", compress=False)
    with zipfile.ZipFile(packed) as zp, zipfile.ZipFile(stored) as zs:
        assert {i.compress_type for i in zs.infolist()} == {zipfile.ZIP_STORED}
        assert zipfile.ZIP_STORED not in {i.compress_type for i in zp.infolist()}
        assert [(i.filename, i.CRC) for i in zp.infolist()] == [(i.filename, i.CRC) for i in zs.infolist()]
        big = max(zs.infolist(), key=lambda i: i.file_size)
    assert stored.stat().st_size > packed.stat().st_size
    _same(modelfile.load_model(stored), modelfile.load_model(packed))
    raw = bytearray(stored.read_bytes())
    flipped = bytearray(raw)
    flipped[big.header_offset + 30 + len(big.filename) + 200 + big.file_size // 2] ^= 0xFF
    (tmp_path / "flipped.pyspmv").write_bytes(bytes(flipped))
    with pytest.raises(ValueError, match="not a pyspmv model file or is corrupt: .*CRC-32"):
        modelfile.load_model(tmp_path / "flipped.pyspmv")
    (tmp_path / "cut.pyspmv").write_bytes(bytes(raw[: big.header_offset + big.file_size // 2]))
    with pytest.raises(ValueError, match="not a pyspmv model file or is corrupt"):
        modelfile.load_model(tmp_path / "cut.pyspmv")


def test_first_rank_reads_one_table_and_writes_nothing(home):
    """A fresh process's first rank() reads the table it ranks with, writes nothing to $PYSPMV_HOME, and ranks as
    the whole shipped default does; default_model() then completes the same object."""
    got = _fresh("from pyspmv.ranking import shipped\n"
                 "A = pyspmv.generate('banded', 2000, seed=0)\n"
                 "r = pyspmv.rank(A, device='cpu', dtype='float32')\n"
                 "first = shipped.default_for('cpu', 'float32')\n"
                 "read = sorted(first.tables)\n"
                 "whole = pyspmv.default_model('cpu')\n"
                 "print(json.dumps([read, sorted(whole.tables), whole is first, r[:10],\n"
                 "                  pyspmv.rank(A, whole, dtype='float32')[:10]]))")
    read, tables, same, ranked, again = got
    assert read == ["float32"] and tables == ["float32", "float64"] and same
    assert ranked == again
    assert not home.exists() or not any(home.rglob("*"))
    rm = modelfile.load_model(resources.files("pyspmv") / "data" / "default_cpu.pyspmv")
    A = pyspmv.generate("banded", 2000, seed=0)
    assert [list(x) for x in pyspmv.rank(A, rm, dtype="float32")[:10]] == ranked


def test_threads_ranking_at_once_share_one_model(monkeypatch):
    """The first rank() of a solver's helper thread and of the main thread: one read, one model object."""
    monkeypatch.setattr(shipped, "_MODELS", {})
    monkeypatch.setattr(shipped, "_WHOLE", set())
    from concurrent.futures import ThreadPoolExecutor
    start = threading.Barrier(4)

    def first(dtype):
        start.wait()
        return shipped.default_for("cpu", dtype)

    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(first, ["float64", "float32", "float64", "float32"]))
    assert len({id(rm) for rm in got}) == 1
    assert sorted(got[0].tables) == ["float32", "float64"]
    assert shipped.default_model("cpu") is got[0]
