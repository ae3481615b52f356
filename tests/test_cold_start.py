"""A fast first call (issue 35): ``import pyspmv`` loads none of the heavy libraries, every public name
is still there, and the shipped models are read through an uncompressed copy that is trusted only
where it matches (pyspmv.ranking.cache). Times are benchmarks/cold_start.py's, not asserted here."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from importlib import resources
from pathlib import Path

import numpy as np
import pytest

import pyspmv
from pyspmv.ranking import cache, modelfile

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


# -- the uncompressed copies of the shipped models -------------------------------------------------

@pytest.fixture
def home(tmp_path, monkeypatch):
    monkeypatch.setenv("PYSPMV_HOME", str(tmp_path / "home"))
    return tmp_path / "home"


@pytest.fixture(scope="module")
def shipped(tmp_path_factory):
    """A copy of the shipped cpu default (LZMA) and the model load_model reads from it."""
    src = tmp_path_factory.mktemp("shipped") / "default_cpu.pyspmv"
    with resources.as_file(resources.files("pyspmv") / "data" / "default_cpu.pyspmv") as p:
        shutil.copyfile(p, src)
    return src, modelfile.load_model(src)


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


def _copies(home):
    return sorted((home / "cache").glob("default_cpu-*.pyspmv"))


def test_copy_is_written_once_and_ranks_as_the_source(shipped, home):
    src, want = shipped
    first = cache.load_shipped(src)
    [copy] = _copies(home)
    with zipfile.ZipFile(copy) as zc, zipfile.ZipFile(src) as zs:
        assert {i.compress_type for i in zc.infolist()} == {zipfile.ZIP_STORED}
        assert [(i.filename, i.CRC, i.file_size) for i in zc.infolist()] == \
               [(i.filename, i.CRC, i.file_size) for i in zs.infolist()]
        for i in zs.infolist():                              # byte for byte
            assert zc.read(i.filename) == zs.read(i.filename)
    mtime = copy.stat().st_mtime_ns
    again = cache.load_shipped(src)
    assert copy.stat().st_mtime_ns == mtime and _copies(home) == [copy]
    A = pyspmv.generate("powerlaw", 3000, seed=1)
    for rm in (first, again):
        _same(rm, want)
        for dtype in ("float64", "float32"):
            assert pyspmv.rank(A, rm, dtype=dtype) == pyspmv.rank(A, want, dtype=dtype)


def _damage(copy, how):
    raw = bytearray(copy.read_bytes())
    if how == "truncated":
        copy.write_bytes(raw[: len(raw) // 2])
    elif how == "flipped":                                  # a byte of an array's data: its CRC-32 fails
        with zipfile.ZipFile(copy) as zf:
            big = max(zf.infolist(), key=lambda i: i.file_size)
        at = big.header_offset + 30 + len(big.filename) + 200 + big.file_size // 2
        raw[at] ^= 0xFF
        copy.write_bytes(raw)
    elif how == "empty":
        copy.write_bytes(b"")


@pytest.mark.parametrize("how", ["truncated", "flipped", "empty"])
def test_damaged_copy_is_written_again(shipped, home, how):
    src, want = shipped
    cache.load_shipped(src)
    [copy] = _copies(home)
    _damage(copy, how)
    with zipfile.ZipFile(src) as zs:
        members = cache._members(zs.infolist())
    assert cache._read_copy(copy, members) is None            # refused, not fatal
    _same(cache.load_shipped(src), want)
    assert _copies(home) == [copy] and cache._read_copy(copy, members) is not None


def test_copy_of_another_model_is_not_trusted(shipped, home, tmp_path):
    """A readable model file under the copy's name that is not the source's copy (another model, or the
    right members with other bytes) is replaced, never used."""
    src, want = shipped
    cache.load_shipped(src)
    [copy] = _copies(home)
    with resources.as_file(resources.files("pyspmv") / "data" / "default_h100.pyspmv") as other:
        other_copy = cache.cache_dir() / "other.pyspmv"
        cache._write_copy(other, other_copy)
    shutil.copyfile(other_copy, copy)
    assert pyspmv.load_model(copy).device == "cuda"           # a good model file, but not this one
    _same(cache.load_shipped(src), want)
    # the same members, names and sizes, one value changed: the declared CRC-32 differs
    with zipfile.ZipFile(src) as zs:
        members = {i.filename: zs.read(i.filename) for i in zs.infolist()}
    key = next(k for k in members if k.endswith("extra.npy"))
    b = bytearray(members[key])
    b[-1] ^= 1
    members[key] = bytes(b)
    with zipfile.ZipFile(copy, "w") as zf:
        for k, v in members.items():
            zf.writestr(k, v)
    _same(cache.load_shipped(src), want)
    assert zipfile.ZipFile(copy).read(key) != members[key]


def test_threads_writing_the_copy_at_once(shipped, home):
    """The first rank() of a solver's helper thread and of the main thread may both write the copy."""
    from concurrent.futures import ThreadPoolExecutor
    src, want = shipped
    with ThreadPoolExecutor(4) as ex:
        got = list(ex.map(lambda _: cache.load_shipped(src), range(4)))
    for rm in got:
        _same(rm, want)
    assert len(_copies(home)) == 1 and not list((home / "cache").glob(".*.tmp"))


def test_unwritable_home_reads_the_source(shipped, tmp_path, monkeypatch):
    src, want = shipped
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    monkeypatch.setenv("PYSPMV_HOME", str(blocker))          # home/cache cannot be made under a file
    _same(cache.load_shipped(src), want)
    assert not list(tmp_path.glob(".*.tmp"))


def test_bounds_of_load_model_hold_for_the_copy(shipped, home, monkeypatch):
    """MAX_MODEL_BYTES (issue 33) refuses the copy as it refuses the source: nothing is copied past it,
    an existing copy is not read past it, and the error names the source."""
    src, _ = shipped
    monkeypatch.setattr(modelfile, "MAX_MODEL_BYTES", 1 << 20)
    with pytest.raises(ValueError, match="MAX_MODEL_BYTES") as e:
        cache.load_shipped(src)
    assert str(src) in str(e.value) and not _copies(home)
    monkeypatch.undo()
    monkeypatch.setenv("PYSPMV_HOME", str(home))
    cache.load_shipped(src)
    assert _copies(home)
    monkeypatch.setattr(modelfile, "MAX_HEADER_BYTES", 16)
    with pytest.raises(ValueError, match="MAX_HEADER_BYTES") as e:
        cache.load_shipped(src)
    assert str(src) in str(e.value)


def test_old_copies_are_pruned(shipped, home):
    src, _ = shipped
    (home / "cache").mkdir(parents=True)
    for i in range(5):
        (home / "cache" / f"default_cpu-{i:020d}.pyspmv").write_bytes(b"old")
    cache.load_shipped(src)
    assert len(_copies(home)) == cache.KEEP


def test_default_model_is_read_through_the_copy(home):
    """rank()'s default: a fresh process writes the copy, the next one reads it (same ranking)."""
    code = ("A = pyspmv.generate('banded', 2000, seed=0)\n"
            "print(json.dumps(pyspmv.rank(A, device='cpu')[:10]))")
    first = _fresh(code)
    assert len(_copies(home)) == 1
    assert _fresh(code) == first
