"""pyspmv.collect: part files, kill and resume, failures, the Dask path, consolidation, and load()."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import functools
import json
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pyspmv
from pyspmv.datasets import X_COLUMNS, CorpusEntry, collect, consolidate, design_rows, load
from pyspmv.datasets.collect import TIMING_COLUMNS, read_table
from pyspmv.matrices import generators

#: Collections time configurations; whether this machine is busy meanwhile is not under test.

CFGS = ["cpu/csr/rows", "cpu/csr/nnz", "cpu/coo", "cpu/ell", "cpu/sell/c=8/sigma=64", "cpu/dia", "cpu/bsr/b=2"]
FAST = {"repeats": 3, "warmup": 1, "budget_s": 1.0, "progress": False}


def tiny(i: int) -> pyspmv.Matrix:
    return generators.row_lengths(60 + 20 * i, 3 + i, 1, seed=i)


def entries(n: int = 4) -> list[CorpusEntry]:
    return [CorpusEntry(f"m{i}", "tiny", 0, functools.partial(tiny, i)) for i in range(n)]


def broken() -> pyspmv.Matrix:
    raise RuntimeError("cannot build this one")


def read(out: Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    return read_table(out / "timings.csv.gz"), read_table(out / "features.csv.gz")


@pytest.fixture(scope="module")
def collected(tmp_path_factory):
    out = tmp_path_factory.mktemp("single")
    collect(entries(), out, configs=CFGS, **FAST)
    return out


def test_tables_have_the_schema(collected):
    t, f = read(collected)
    assert list(t.columns) == TIMING_COLUMNS
    assert list(f.columns) == ["matrix", "group", *pyspmv.FEATURE_NAMES]
    assert len(t) == 4 * 2 * len(CFGS) and not t.duplicated(["matrix", "dtype", "config"]).any()
    assert set(t.status) <= {"ok", "not_applicable", "wrong", "error"} and (t.status == "ok").sum() > len(t) / 2
    assert list(f.matrix) == ["m0", "m1", "m2", "m3"] and set(t.group) == {"tiny"}
    # configuration features are those of their dtype
    A = tiny(2)
    cf = pyspmv.config_features(A, CFGS, dtype="float32")
    got = t[(t.matrix == "m2") & (t.dtype == "float32")].set_index("config")
    np.testing.assert_array_equal(got.loc[CFGS, "bytes_moved"], cf.loc[CFGS, "bytes_moved"])
    meta = json.loads((collected / "metadata.json").read_text())
    assert meta["n_matrices"] == 4 and meta["collection"]["repeats"] == 3
    assert meta["device_info"]["device"] == "cpu" and meta["pyspmv_version"] == pyspmv.__version__


SCRIPT = textwrap.dedent("""
    import functools, sys, time
    from pyspmv.matrices import generators
    from pyspmv.datasets import CorpusEntry, collect

    def build(i, slow):
        if slow and i > 0:
            time.sleep(0.8)                     # room to kill it between matrices
        return generators.row_lengths(60 + 20 * i, 3 + i, 1, seed=i)

    slow = sys.argv[2] == "slow"
    es = [CorpusEntry(f"m{{i}}", "tiny", 0, functools.partial(build, i, slow)) for i in range(6)]
    collect(es, sys.argv[1], configs={cfgs!r}, repeats=3, warmup=1, budget_s=0.01, progress=False)
""").format(cfgs=CFGS)


def run_script(script: Path, out: Path, mode: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(script), str(out), mode], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, cwd=script.parent)


def test_killed_collection_resumes_without_loss_or_duplicates(tmp_path):
    script = tmp_path / "run_collect.py"
    script.write_text(SCRIPT)
    out = tmp_path / "ds"
    proc = run_script(script, out, "slow")
    first = out / "parts" / "m0.csv.gz"
    deadline = time.monotonic() + 120
    while not first.exists():
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline, "no part file appeared"
        time.sleep(0.01)
    os.kill(proc.pid, signal.SIGKILL)
    proc.communicate()
    assert proc.returncode == -signal.SIGKILL
    done = sorted(p.name for p in (out / "parts").glob("m*.csv.gz") if ".features." not in p.name)
    assert 1 <= len(done) < 6 and not (out / "timings.csv.gz").exists()
    before = {n: (out / "parts" / n).read_bytes() for n in done}
    proc = run_script(script, out, "fast")
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err.decode()
    for n, b in before.items():                                   # finished matrices were not measured again
        assert (out / "parts" / n).read_bytes() == b
    t, f = read(out)
    keys = t[["matrix", "dtype", "config"]]
    assert not keys.duplicated().any()
    expected = pd.MultiIndex.from_product([[f"m{i}" for i in range(6)], ["float32", "float64"], CFGS])
    assert set(map(tuple, keys.to_numpy())) == set(expected)
    assert sorted(f.matrix) == [f"m{i}" for i in range(6)]
    assert not list((out / "parts").glob(".tmp-*"))
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["n_matrices"] == 6 and len(meta["runs"]) == 1     # the killed run never finished


def test_failures_are_recorded_and_skipped(tmp_path):
    es = [*entries(2), CorpusEntry("bad", "tiny", 0, broken)]
    collect(es, tmp_path, configs=CFGS[:2], **FAST)
    t, f = read(tmp_path)
    fails = pd.read_csv(tmp_path / "failures.csv.gz")
    assert list(fails.matrix) == ["bad"] and fails.stage[0] == "build" and "cannot build" in fails.error[0]
    assert sorted(set(t.matrix)) == ["m0", "m1"] and "bad" not in set(f.matrix)
    assert json.loads((tmp_path / "metadata.json").read_text())["n_failed_matrices"] == 1
    stamp = (tmp_path / "parts" / "m0.csv.gz").stat().st_mtime_ns
    collect(es, tmp_path, configs=CFGS[:2], **FAST)               # nothing left to do
    assert (tmp_path / "parts" / "m0.csv.gz").stat().st_mtime_ns == stamp


def test_matrices_and_paths_as_input(tmp_path):
    import scipy.io
    scipy.io.mmwrite(tmp_path / "fromfile.mtx", tiny(1).to_scipy())
    M = pyspmv.Matrix(tiny(0), name="given", group="mine")
    collect([M, tmp_path / "fromfile.mtx"], tmp_path / "ds", configs=CFGS[:1], dtypes=("float64",), **FAST)
    t, _ = read(tmp_path / "ds")
    assert sorted(set(t.matrix)) == ["fromfile", "given"] and len(t) == 2
    with pytest.raises(ValueError, match="unique names"):
        collect([M, M], tmp_path / "dup", configs=CFGS[:1])
    with pytest.raises(ValueError, match="named"):
        collect([pyspmv.Matrix(tiny(0).to_scipy())], tmp_path / "dup", configs=CFGS[:1])
    with pytest.raises(TypeError, match="dtypes"):
        collect([M], tmp_path / "dup", dtypes=("int8",))


def test_consolidate_removes_duplicates(collected, tmp_path):
    import shutil
    out = tmp_path / "c"
    shutil.copytree(collected, out)
    part = pd.read_csv(out / "parts" / "m1.csv.gz")
    part.to_csv(out / "parts" / "m1-copy.csv.gz", index=False)   # a stray copy of the same rows
    consolidate(out)
    t, _ = read(out)
    assert len(t) == 4 * 2 * len(CFGS)


def test_dask_path_gives_the_same_table(collected, tmp_path):
    distributed = pytest.importorskip("distributed")
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None) as cl, \
            distributed.Client(cl) as client:
        collect(entries(), tmp_path, configs=CFGS, client=client, **FAST)
    t1, f1 = read(collected)
    t2, f2 = read(tmp_path)
    for t in (t1, t2):  # an ok row's note is about its timing (budget cut, noisy), which differs run to run
        t.loc[t.status == "ok", "note"] = ""
    fixed = ["matrix", "group", "dtype", "device", "config", "repeats", "status", "note", "bytes_moved",
             "padding_ratio", "launches"]
    pd.testing.assert_frame_equal(t1[fixed], t2[fixed])
    pd.testing.assert_frame_equal(f1, f2)
    meta = json.loads((tmp_path / "metadata.json").read_text())
    assert meta["device_info"]["device"] == "cpu"
    # each worker named, with the matrices it measured: two processes, every matrix counted once
    workers = meta["workers"]
    assert 1 <= len(workers) <= 2 and sum(w["matrices"] for w in workers) == meta["n_matrices"]
    assert all(w["dask_worker"].startswith("tcp://") and w["host"] and w["seconds"] > 0 for w in workers)
    assert len({w["dask_worker"] for w in workers}) == len(workers)
    # without Dask: the one process, no worker address
    (solo,) = json.loads((collected / "metadata.json").read_text())["workers"]
    assert solo["dask_worker"] == "" and solo["matrices"] == meta["n_matrices"]


def test_load_returns_the_schema(collected):
    ds = load(collected, dtype="float64")
    t, _ = read(collected)
    ok = t[(t.status == "ok") & (t.dtype == "float64")].reset_index(drop=True)
    assert list(ds.X.columns) == list(X_COLUMNS)
    assert isinstance(ds.X.index, pd.RangeIndex) and len(ds.X) == len(ok)
    for c in (*pyspmv.FEATURE_NAMES, "p_tpv", "p_bs", "p_c", "p_sigma", "p_h", "p_bits", "p_b", "value_bytes",
              "bytes_moved", "padding_ratio", "launches"):
        assert ds.X[c].dtype == np.float64, c
    assert (ds.X.value_bytes == 8.0).all()
    assert ds.y.name == "median_ms" and ds.groups.name == "matrix"
    np.testing.assert_array_equal(ds.y.to_numpy(), ok.median_ms.to_numpy())
    np.testing.assert_array_equal(ds.groups.to_numpy(), ok.matrix.to_numpy())
    np.testing.assert_array_equal(ds.q25.to_numpy(), ok.q25_ms.to_numpy())
    np.testing.assert_array_equal(ds.X.config.to_numpy(), ok.config.to_numpy())
    row = ds.X[ds.X.config == "cpu/sell/c=8/sigma=64"].iloc[0]
    assert row.library == "cpu" and row.format == "sell" and row.kernel == "" and row.p_c == 8 and row.p_sigma == 64
    assert np.isnan(row.p_tpv)
    rows = ds.X[ds.X.config == "cpu/csr/rows"]
    assert (rows.kernel == "rows").all()
    f = pyspmv.features(tiny(1))
    got = ds.X[ds.groups == "m1"].iloc[0]
    assert all(got[k] == v for k, v in f.items())
    assert len(ds.table) == len(t) and len(ds.features) == 4 and ds.metadata["n_matrices"] == 4
    both = load(str(collected), dtype=None)
    assert set(both.X.value_bytes) == {4.0, 8.0} and len(both.X) == (t.status == "ok").sum()


def test_design_rows_match_load(collected):
    ds = load(collected, dtype="float32")
    A = tiny(3)
    sel = (ds.groups == "m3").to_numpy()
    cfgs = list(ds.X.config[sel])
    R = design_rows(pyspmv.features(A), cfgs, pyspmv.config_features(A, cfgs, dtype="float32"), 4.0)
    pd.testing.assert_frame_equal(R, ds.X[sel].reset_index(drop=True))
    with pytest.raises(ValueError, match="'value_bytes'"):
        design_rows(pyspmv.features(A), cfgs, pyspmv.config_features(A, cfgs), 2.0)


def test_load_errors(collected, tmp_path):
    with pytest.raises(ValueError, match="shipped dataset"):
        load("no_such_dataset")
    with pytest.raises(ValueError, match="'dtype'"):
        load(collected, dtype="float16")
    with pytest.raises(FileNotFoundError, match="no folder"):
        load(tmp_path / "absent")
    (tmp_path / "half").mkdir()
    (tmp_path / "half" / "timings.csv.gz").write_bytes((collected / "timings.csv.gz").read_bytes())
    with pytest.raises(FileNotFoundError, match="features.csv.gz"):
        load(tmp_path / "half")


def test_cli_collect(tmp_path, capsys):
    from pyspmv.cli import main
    argv = ["collect", "--limit", "2", "--out", str(tmp_path), "--repeats", "2", "--budget", "0.01", "--quiet",
            "--dtypes", "float64", "--config", "cpu/csr/rows", "--config", "cpu/ell"]
    assert main(argv) == 0
    assert "2 matrices, 4 rows" in capsys.readouterr().out
    f = read(tmp_path)[1]
    assert list(f.matrix) == sorted(e.name for e in pyspmv.datasets.standard_corpus()[:2])
    assert main([*argv[:2], "3", *argv[3:]]) == 0                 # resumes: one more matrix
    assert len(read(tmp_path)[1]) == 3
    assert main(["collect", "--out", str(tmp_path / "x"), "--corpus", str(tmp_path / "nowhere"), "--quiet"]) == 2
    assert "MANIFEST.csv" in capsys.readouterr().err


# -- names and damaged parts: every collection resumes ------------------------------------------
def test_names_that_look_like_part_files_keep_their_timings(tmp_path):
    """Issue 33, item 8: ``x.features``, ``.hidden``, ``y.failed`` and a dotfile path were measured,
    marked done and never consolidated (``y.failed`` made consolidate() raise KeyError on every run)."""
    import scipy.io
    scipy.io.mmwrite(tmp_path / ".dot.mtx", tiny(1).to_scipy())
    odd = ["x.features", ".hidden", "y.failed", ".tmp-z", "w.damaged", "m0"]
    es = [CorpusEntry(n, "tiny", 0, functools.partial(tiny, i)) for i, n in enumerate(odd)]
    kw = {"configs": CFGS[:1], "dtypes": ("float64",), **FAST}
    collect([*es, tmp_path / ".dot.mtx"], tmp_path / "ds", **kw)
    t, f = read(tmp_path / "ds")
    assert sorted(set(t.matrix)) == sorted([*odd, "dot"]) and sorted(f.matrix) == sorted([*odd, "dot"])
    stamps = {p.name: p.stat().st_mtime_ns for p in (tmp_path / "ds" / "parts").iterdir()}
    collect([*es, tmp_path / ".dot.mtx"], tmp_path / "ds", **kw)           # resumes: nothing measured again
    assert {p.name: p.stat().st_mtime_ns for p in (tmp_path / "ds" / "parts").iterdir()} == stamps
    assert len(read(tmp_path / "ds")[0]) == len(t)
    with pytest.raises(ValueError, match="needs a name for every matrix"):
        collect([CorpusEntry("", "tiny", 0, functools.partial(tiny, 0))], tmp_path / "empty", **kw)
    with pytest.raises(ValueError, match="sharing a file name: 'a/b' and 'a_b'"):
        collect([CorpusEntry(n, "tiny", 0, functools.partial(tiny, 0)) for n in ("a/b", "a_b")], tmp_path / "e", **kw)


def _named_file(folder: Path, name: bytes, A) -> Path:
    """``A`` written as Matrix Market to the file of ``folder`` named by these bytes (any bytes but / and NUL)."""
    import scipy.io
    scipy.io.mmwrite(folder / "tmp.mtx", A)
    path = Path(os.fsdecode(os.fsencode(folder) + b"/" + name))
    try:
        os.rename(folder / "tmp.mtx", path)
    except OSError as exc:                      # a file system that holds only UTF-8 names (APFS)
        pytest.skip(f"this file system refuses the name {name!r}: {exc}")
    return path


def test_names_without_part_files_of_their_own_are_refused_up_front(tmp_path):
    """Issue 45, item 5: a file name that is not UTF-8 (UnicodeEncodeError naming no file) or of 240
    characters (File name too long) stopped every run at the same place, after the matrices before it;
    later matrices were never measured. Such names, and names sharing their part files, are refused before
    anything is measured, each file named."""
    A = tiny(0).to_scipy()
    files = [_named_file(tmp_path, n, A) for n in (b"c\xffd.mtx", b"x" * 240 + b".mtx", b"a b.mtx", b"a;b.mtx",
                                                   b"ok.mtx")]
    kw = {"configs": CFGS[:1], "dtypes": ("float64",), **FAST}
    with pytest.raises(ValueError, match="unique names") as e:
        collect(files, tmp_path / "ds", **kw)
    msg = str(e.value)
    assert repr(str(files[0])) + " is not UTF-8 text" in msg and "\\udcff" in msg
    assert repr(str(files[1])) + " is too long: 240 characters" in msg
    assert f"sharing a file name: {str(files[2])!r} and {str(files[3])!r}" in msg and "rename" in msg
    assert "ok.mtx" not in msg and not (tmp_path / "ds").exists()          # nothing measured
    named = [pyspmv.Matrix(A, name=n) for n in ("\udcff", "y" * 232, "é", "è")]
    with pytest.raises(ValueError, match="unique names") as e:
        collect(named, tmp_path / "ds", **kw)
    msg = str(e.value)
    assert "'\\udcff' is not UTF-8" in msg and "232 characters" in msg and "'é' and 'è' (parts '_')" in msg
    collect([files[-1], pyspmv.Matrix(A, name="z" * 231)], tmp_path / "ds", **kw)      # the longest that fits
    assert sorted(read(tmp_path / "ds")[1].matrix) == ["ok", "z" * 231]


def test_names_are_printed_escaped(tmp_path, capsys):
    """Issue 45, item 7: a name's escape sequences reached the terminal through the progress bar."""
    M = pyspmv.Matrix(tiny(0), name="\x1b[31mred")
    collect([M], tmp_path, configs=CFGS[:1], dtypes=("float64",), **{**FAST, "progress": True})
    err = capsys.readouterr().err
    assert "\x1b[31m" not in err and "'\\x1b[31mred'" in err, err


def test_damaged_parts_are_set_aside_and_measured_again(tmp_path):
    """Issue 33, item 9: a truncated part (EOFError), an empty one ("No columns to parse from file") and
    a garbled metadata.json (a JSON error naming no file) stopped every later collect()."""
    kw = {"configs": CFGS[:1], "dtypes": ("float64",), **FAST}
    collect(entries(3), tmp_path, **kw)
    parts = tmp_path / "parts"
    whole = (parts / "m0.csv.gz").read_bytes()
    (parts / "m0.csv.gz").write_bytes(whole[:len(whole) // 2])
    (parts / "m1.features.csv.gz").write_bytes(b"")
    (tmp_path / "metadata.json").write_text('{"runs": [', encoding="utf-8")
    stamp = (parts / "m2.csv.gz").stat().st_mtime_ns
    with pytest.warns(UserWarning) as caught:
        collect(entries(3), tmp_path, **kw)
    # A loaded machine (CI's sanitizer run) may add timing warnings: they say nothing of the parts.
    w = [x for x in caught if not issubclass(x.category, pyspmv.NoisyTimingWarning)]
    assert w and all(x.category is pyspmv.datasets.DamagedPartWarning for x in w)
    said = "\n".join(str(x.message) for x in w)
    assert "m0.csv.gz could not be read (EOFError" in said and "m1.features.csv.gz could not be read" in said
    assert "metadata.json could not be read" in said and "copy what you need" in said, said
    t, f = read(tmp_path)
    assert sorted(set(t.matrix)) == sorted(f.matrix) == ["m0", "m1", "m2"] and len(t) == 3
    assert (parts / "m0.csv.gz.damaged").exists() and (parts / "m1.features.csv.gz.damaged").exists()
    assert (parts / "m2.csv.gz").stat().st_mtime_ns == stamp                  # the whole one was kept
    assert json.loads((tmp_path / "metadata.json").read_text())["n_matrices"] == 3
    (tmp_path / "metadata.json").write_text("{", encoding="utf-8")            # load() says which and what to do
    with pytest.raises(ValueError, match="metadata.json could not be read .*consolidate"):
        load(tmp_path)
    (tmp_path / "metadata.json").unlink()
    (parts / "m2.csv.gz").write_bytes(b"not gzip")                            # consolidate() alone: left out
    with pytest.warns(pyspmv.datasets.DamagedPartWarning, match="m2.csv.gz could not be read"):
        consolidate(tmp_path)
    assert sorted(set(read(tmp_path)[0].matrix)) == ["m0", "m1"]


def test_a_full_disk_leaves_no_temporary_file(tmp_path, monkeypatch):
    """A write that fails part-way (a full disk) removes its temporary file, for tables and JSON alike,
    and leaves the matrix to be measured by the next run."""
    import errno
    real_to_csv = pd.DataFrame.to_csv

    def full(self, path, *args, **kwargs):
        Path(path).write_bytes(b"\x1f\x8b half")
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(pd.DataFrame, "to_csv", full)
    kw = {"configs": CFGS[:1], "dtypes": ("float64",), **FAST}
    with pytest.raises(OSError, match="No space left"):
        collect(entries(1), tmp_path, **kw)
    assert sorted(p.name for p in (tmp_path / "parts").iterdir()) == []
    monkeypatch.setattr(pd.DataFrame, "to_csv", real_to_csv)

    def dump(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(json, "dump", dump)
    with pytest.raises(OSError, match="No space left"):
        collect(entries(1), tmp_path, **kw)
    assert sorted(p.name for p in (tmp_path / "parts").iterdir()) == ["m0.features.csv.gz"]
    assert not list(tmp_path.glob(".tmp-*"))
    monkeypatch.undo()
    collect(entries(1), tmp_path, **kw)
    assert list(read(tmp_path)[1].matrix) == ["m0"]
