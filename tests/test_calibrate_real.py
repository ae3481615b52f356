"""Issue 39: the real matrices shipped for calibration, their scaled copies, folds that keep a matrix and its
copies together, and every matrix timed in interleaved rounds until the rounds agree."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import csv
import importlib
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pyspmv
from pyspmv.cli import main
from pyspmv.datasets.collect import measure
from pyspmv.datasets.corpus import REAL_FOLDER, base_matrix, is_real, real_corpus
from pyspmv.training import rounds

CALIBRATE = importlib.import_module("pyspmv.training.calibrate")
TINY = Path(__file__).resolve().parent / "data" / "tiny_cpu"


def test_the_shipped_real_matrices_are_what_their_manifest_says():
    """Each file is whole and of the size, shape and symmetry its manifest row gives; each names its
    licence and its name in the SuiteSparse collection."""
    with open(REAL_FOLDER / "MANIFEST.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 6 and len({r["kind"] for r in rows}) >= 5
    assert sum((REAL_FOLDER / f"{r['name']}.mtx.gz").stat().st_size for r in rows) < 5e6      # a few MB
    for r in rows:
        M = pyspmv.load(REAL_FOLDER / f"{r['name']}.mtx.gz")
        assert (M.nrows, M.ncols, M.nnz) == (int(r["rows"]), int(r["cols"]), int(r["nnz_full"])), r["name"]
        S = M.to_scipy()
        if r["symmetry"] == "symmetric":
            assert M.nrows == M.ncols and abs(S - S.T).max() == 0, r["name"]
        assert r["license"] == "CC-BY-4.0" and r["collection_name"]
    assert "CC BY 4.0" in (REAL_FOLDER / "README.md").read_text()


def test_real_corpus_covers_the_sizes_with_copies_of_real_structure():
    es = real_corpus(max_nnz=1e6)
    names = [e.name for e in es]
    assert len(names) == len(set(names)) and all(is_real(e.group) for e in es)
    originals = [e for e in es if base_matrix(e.name) == e.name]
    copies = [e for e in es if base_matrix(e.name) != e.name]
    assert len(originals) == 6 and len(copies) >= 8
    assert {base_matrix(e.name) for e in copies} <= {e.name for e in originals}
    assert all(e.group == "real:scaled_" + next(o.group for o in originals if o.name == base_matrix(e.name))[5:]
               for e in copies)
    assert all(e.nnz <= 1e6 for e in es) and max(e.nnz for e in copies) > 3e5
    small = real_corpus(max_nnz=2e4)
    assert all(e.nnz <= 2e4 for e in small) and len(small) < len(es)
    M = copies[0].build()
    assert M.nnz == pytest.approx(copies[0].nnz, rel=0.5) and M.name == copies[0].name   # nnz: an estimate
    assert base_matrix("bcspwr10_x6kron_r0") == "bcspwr10" and base_matrix("poisson2d_20") == "poisson2d_20"
    with pytest.raises(ValueError, match="'copies'"):
        real_corpus(copies=-1)


def _rounds(table: dict[int, dict[str, float]], matrix: str = "m", dtype: str = "float64") -> pd.DataFrame:
    return pd.DataFrame([{"matrix": matrix, "dtype": dtype, "config": c, "round": r, "median_ms": t}
                         for r, row in table.items() for c, t in row.items()], columns=list(rounds.COLUMNS))


def test_rounds_agree_or_not():
    agree = _rounds({0: {"a": 1.0, "b": 2.0}, 1: {"a": 1.01, "b": 1.9}})
    assert rounds.settled(agree) and np.allclose(rounds.again(np.array([[1.0, 2.0], [1.01, 1.9]])), 1.0)
    swap = _rounds({0: {"a": 1.0, "b": 1.2}, 1: {"a": 1.3, "b": 1.1}})
    assert not rounds.settled(swap)                 # each round's best is 1.09x / 1.18x slower in the other
    assert rounds.again(np.array([[1.0, 1.2], [1.3, 1.1]])) == pytest.approx([1.3 / 1.1, 1.2 / 1.0])
    n = rounds.noise(pd.concat([agree, _rounds({0: {"a": 1.0, "b": 1.2}, 1: {"a": 1.3, "b": 1.1}}, "m2")]))
    assert n["units"] == 2 and n["from"] == "rounds" and n["within<5%"] == pytest.approx(0.5)
    assert n["geomean_ratio"] == pytest.approx(np.exp(np.mean(np.log([1, 1, 1.3 / 1.1, 1.2]))) - 1)
    assert rounds.noise(_rounds({0: {"a": 1.0}})) is None            # one round shows no spread
    assert not rounds.settled(_rounds({0: {"a": 1.0, "b": 2.0}}))


def test_rounds_combine_into_the_median_and_widen_the_quartiles():
    cols = ["matrix", "group", "dtype", "device", "config", "median_ms", "q25_ms", "q75_ms", "min_ms", "repeats",
            "convert_ms", "upload_ms", "status", "note"]

    def table(med: list[float], status: tuple[str, ...] = ("ok", "ok")) -> pd.DataFrame:
        return pd.DataFrame([["m", "g", "float64", "cpu", c, t, 0.99 * t, 1.01 * t, 0.98 * t, 10, 0.1, np.nan, s, ""]
                             for c, t, s in zip(("a", "b"), med, status)], columns=cols)
    out = rounds.combine(table([1.0, 2.0]), [table([1.2, 2.0]), table([1.1, 2.0], ("ok", "failed"))])
    assert out.loc[0, "median_ms"] == pytest.approx(1.1) and out.loc[0, "repeats"] == 30
    assert out.loc[0, "q25_ms"] <= 1.05 and out.loc[0, "q75_ms"] >= 1.15 and out.loc[0, "min_ms"] == pytest.approx(0.98)
    assert "3 rounds" in out.loc[0, "note"] and "1.2" in out.loc[0, "note"]
    assert out.loc[1, "median_ms"] == 2.0 and "first round" in out.loc[1, "note"]        # not ok in round 3
    assert rounds.combine(table([1.0, 2.0]), []).equals(table([1.0, 2.0]))


def test_calibrate_times_in_rounds_and_judges_on_the_real_matrices(tmp_path, monkeypatch, capsys):
    """Without --matrices: the shipped real matrices are measured first and the choice is judged on
    them; every matrix is timed in at least two rounds, saved beside its timings; the noise comes from
    the rounds; cross-validation folds keep a real matrix and its copies together."""
    monkeypatch.setenv("PYSPMV_HOME", str(tmp_path))
    seen = {}
    real_cv = CALIBRATE.cross_validate

    def spy(*args, **kw):
        seen["folds_by"] = kw["folds_by"]
        return real_cv(*args, **kw)
    monkeypatch.setattr(CALIBRATE, "cross_validate", spy)
    argv = ["calibrate", "--dataset", str(TINY), "--max-nnz", "2e4", "--budget", "0.001", "--time-limit", "25",
            "--dtypes", "float64", "--quiet", "--max-drift", "1e6"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    rm = pyspmv.calibrated_model("cpu")
    j = rm.meta["calibration"]["judged"]
    assert j["on"] == "real" and j["matrices"]["real"] >= 3 and "judged on real-structured matrices" in out
    assert j["noise"]["timing"]["from"].startswith("rounds") and "rounds spread a median" in out
    folder = next((tmp_path / "calibration").iterdir())
    ds = pyspmv.datasets.load(folder, dtype=None)
    measured = set(ds.groups.astype(str))
    assert {"young1c", "bcspwr08", "jagmesh7"} <= measured           # the originals come first
    r = rounds.read(folder)
    assert set(r["matrix"]) == measured and (r.groupby("matrix")["round"].nunique() >= rounds.MIN_ROUNDS).all()
    assert (r.groupby("matrix")["round"].nunique() <= rounds.MAX_ROUNDS).all()
    by = dict(zip(ds.groups.astype(str), seen["folds_by"]))
    assert all(by[m] == base_matrix(m) for m in measured)
    assert ds.table["note"].str.contains("rounds").mean() > 0.5


def test_a_round_that_fails_leaves_the_first_standing(tmp_path, monkeypatch):
    """A later round that raises (a transient failure) ends the rounds: the first round's timings stand and
    the rounds file holds what was timed; nothing propagates."""
    M = pyspmv.generate("poisson2d", 10)
    entry = pyspmv.datasets.CorpusEntry("p10", "g", M.nnz, lambda: M)
    res = measure(entry, device="cpu", dtypes=("float64",), configs=None, repeats=3, warmup=1, budget_s=0.001)
    first = res["timings"].copy()

    def broken(*args, **kw):
        raise RuntimeError("a transient failure")
    monkeypatch.setattr(CALIBRATE, "benchmark", broken)
    CALIBRATE._in_rounds(M, res, tmp_path, device="cpu", dtypes=("float64",), repeats=3, warmup=1, budget_s=0.001)
    assert res["timings"].equals(first)
    r = rounds.read(tmp_path)
    assert set(r["round"]) == {0} and set(r["matrix"]) == {"p10"}
