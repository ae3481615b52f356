"""Calibration: matrix selection, the re-measure rule, the adaptation and its choice, resume, the
other-machine notice, and `pyspmv calibrate` end to end on a tiny budget."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import importlib
import time
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import pyspmv
from pyspmv.cli import main
from pyspmv.devices import machine
from pyspmv.ranking.precision import DEFAULT_PRECISION
from pyspmv.ranking.rank import reread_calibrated
from pyspmv.training import adapt
from pyspmv.training.calibrate import _measure, _pool, feature_space, noisy_rows, remeasure, repeatability, select

CALIBRATE = importlib.import_module("pyspmv.training.calibrate")   # the module; pyspmv.calibrate is the function

TINY = Path(__file__).resolve().parent / "data" / "tiny_cpu"


@pytest.fixture(scope="module")
def tiny():
    return pyspmv.datasets.load(TINY, dtype=None)


@pytest.fixture(scope="module")
def shipped():
    return pyspmv.default_model("cpu")


def _coverage(pool: pd.DataFrame, target: pd.DataFrame, chosen: list[int]) -> float:
    """Summed distance from each target matrix to its nearest chosen one."""
    from scipy.spatial.distance import cdist
    D = cdist(feature_space(target, target), feature_space(pool.iloc[chosen], target))
    return float(D.min(axis=1).sum())


def test_selection_covers_the_space_and_is_deterministic(tiny):
    F = tiny.features.reset_index(drop=True)
    cost = np.ones(len(F))
    order = select(F, F, cost)
    assert order == select(F, F, cost) and len(set(order)) == len(order) > 3
    rng = np.random.default_rng(0)
    for k in (2, 4, 6):
        ours = _coverage(F, F, order[:k])
        random = [_coverage(F, F, list(rng.choice(len(F), k, replace=False))) for _ in range(200)]
        assert ours <= np.quantile(random, 0.05), (k, ours, np.min(random))
    dear = order[0]                                     # the same matrix at 1000 times the cost: not first
    cost[dear] = 1e3
    assert select(F, F, cost)[0] != dear


def test_pool_is_deterministic_for_a_seed(tiny):
    a = _pool(tiny, "cpu", 2e4, 0, 0.001, 30, 3, 1)
    b = _pool(tiny, "cpu", 2e4, 0, 0.001, 30, 3, 1)
    c = _pool(tiny, "cpu", 2e4, 1, 0.001, 30, 3, 1)
    names = [[e.name for e in p[0]] for p in (a, b, c)]
    assert names[0] == names[1] != names[2]
    assert select(a[1], tiny.features, a[2]) == select(b[1], tiny.features, b[2])
    assert np.all(a[2] > 0) and np.all(a[1]["nnz"] <= 2e4 * 1.2)


def _timings(spreads: list[float]) -> pd.DataFrame:
    cfg = [c.id for c in pyspmv.configs("cpu")][:len(spreads)]
    return pd.DataFrame({"matrix": "m", "group": "g", "dtype": "float64", "device": "cpu", "config": cfg,
                         "median_ms": 1.0, "q25_ms": 1.0, "q75_ms": spreads, "min_ms": 0.9, "repeats": 30,
                         "convert_ms": 0.1, "upload_ms": np.nan, "status": "ok", "note": ""})


def test_the_remeasure_rule():
    t = _timings([1.1, 1.5, 1.29, 3.0])
    t.loc[3, "status"] = "not_applicable"
    assert noisy_rows(t, 1.3).tolist() == [1]
    assert noisy_rows(t, 1.05).tolist() == [0, 1, 2]
    A = pyspmv.generate("poisson2d", 30)
    A.name = "m"
    t = _timings([1.0, 50.0])
    out, done = remeasure(A, t, device="cpu", max_spread=1.3, retries=2, repeats=30, warmup=2, budget_s=0.002)
    assert [d["config"] for d in done] == [t.loc[1, "config"]] and done[0]["before"] == 50.0
    assert done[0]["after"] < 50.0 and out.loc[1, "q75_ms"] / out.loc[1, "q25_ms"] == pytest.approx(done[0]["after"])
    assert "re-measured by calibrate" in out.loc[1, "note"] and out.loc[0].equals(t.loc[0])


def test_repeatability_of_two_timings():
    """drift: median |t2/t1 - 1| over configurations ok in both; best_again: the first timing's fastest in the second."""
    a = pd.concat([_timings([1.0, 1.0, 1.0]).assign(matrix=m) for m in ("m1", "m2")], ignore_index=True)
    a["median_ms"] = [1.0, 2.0, 3.0, 1.0, 1.5, 9.0]
    b = a.copy()
    b["median_ms"] = [1.5, 1.0, 3.0, 1.1, 1.5, 9.0]          # m1: the first's best (1.0) is now 1.5 against 1.0
    b.loc[5, "status"] = "error"                                # not ok in both: left out
    r = repeatability(a, b)
    assert r["matrices"] == 2 and r["pairs"] == 5
    assert r["drift"] == pytest.approx(0.1)                   # |log| of 1.5, 0.5, 1, 1.1, 1: median log 1.1
    assert r["best_again"] == pytest.approx(np.sqrt(1.5 * 1.0))
    assert repeatability(a, b.assign(status="error"))["drift"] is None


def test_a_correction_is_carried_by_the_portable_model(tiny, shipped, tmp_path):
    local = adapt.Local.of(tiny)
    f = adapt.correction_factors(shipped, local, "config")
    assert len(f) > 20 and all(v > 0 for v in f.values())
    cm = adapt.corrected(shipped, f, "config")
    assert cm.precision is None                     # its error was not measured (nor was it before models recorded it)
    want = shipped.predict(tiny.X) * adapt.factor_per_row(f, tiny.X, "config")
    assert np.allclose(cm.predict(tiny.X), want, rtol=1e-9)
    pyspmv.save_model(cm, tmp_path / "c.pyspmv")
    back = pyspmv.load_model(tmp_path / "c.pyspmv")
    assert np.allclose(back.predict(tiny.X), want, rtol=1e-9)
    A = pyspmv.generate("poisson2d", 20)
    r0, r1 = dict(pyspmv.rank(A, shipped, device="cpu")), dict(pyspmv.rank(A, back, device="cpu"))
    c = "cpu/csr/rows"
    assert r1[c] == pytest.approx(r0[c] * f["8|" + c], rel=1e-9)
    with pytest.raises(ValueError, match="already scales"):
        adapt.corrected(cm, f)


def test_the_choice_follows_cross_validation(tiny, shipped):
    """Local times that are the shipped model's predictions times a factor per configuration: the
    per-configuration correction ranks them exactly, and is chosen."""
    local = adapt.Local.of(tiny)
    rng = np.random.default_rng(1)
    k = {c: float(np.exp(rng.normal(0, 0.5))) for c in local.X["config"].unique()}
    local.y = shipped.predict(local.X) * local.X["config"].map(k).to_numpy()
    local.q25, local.q75 = local.y, local.y
    cv = adapt.cross_validate(shipped, local, adapt.Local.of(tiny), kind="forest", n_splits=3)
    assert set(adapt.CANDIDATES) <= set(cv.index) and "shipped" in cv.index
    assert cv.loc["correct/config", "geomean_ratio"] == pytest.approx(1.0)
    assert cv.loc["shipped", "geomean_ratio"] > 1.0
    assert adapt.best_candidate(cv) == "correct/config"
    flipped = cv.copy()
    flipped.loc["retrain/local", "geomean_ratio"] = 0.5
    assert adapt.best_candidate(flipped) == "retrain/local"
    rm = adapt.adapt("retrain/mixed", shipped, local, adapt.Local.of(tiny), seed=0)
    assert isinstance(rm, pyspmv.RankModel) and rm.device == "cpu"
    assert rm.precision == DEFAULT_PRECISION["cpu"]                         # a ForestModel's, as it states


def test_the_shipped_model_is_kept_where_it_ranks_best(tiny, shipped):
    """Local times that are the shipped model's own predictions: nothing ranks them better than the
    shipped model, which is chosen as it is (ties go to it), in its own copy for this machine."""
    local = adapt.Local.of(tiny)
    local.y = shipped.predict(local.X)
    local.q25, local.q75 = local.y, local.y
    cv = adapt.cross_validate(shipped, local, adapt.Local.of(tiny), kind="forest", n_splits=3)
    assert cv.loc["shipped", "geomean_ratio"] == pytest.approx(1.0)
    assert adapt.best_candidate(cv) == "shipped"
    rm = adapt.adapt("shipped", shipped, local)
    A = pyspmv.generate("poisson2d", 12)
    assert pyspmv.rank(A, rm, device="cpu") == pyspmv.rank(A, shipped, device="cpu")
    assert rm.precision == shipped.precision == DEFAULT_PRECISION["cpu"]        # its copy keeps the measured error
    rm.meta["fingerprint"] = {"device": "cpu", "processor": "elsewhere", "threads": 3}
    assert "fingerprint" not in shipped.meta or shipped.meta["fingerprint"] != rm.meta["fingerprint"]

def test_an_interrupted_measurement_resumes(tiny, tmp_path, monkeypatch):
    collect_mod = importlib.import_module("pyspmv.datasets.collect")   # the module; pyspmv.datasets.collect is a function
    entries, F, est = _pool(tiny, "cpu", 2e4, 0, 0.001, 20, 2, 1)
    order = select(F, tiny.features, est)[:4]
    calls = []
    real = collect_mod.measure

    def flaky(e, **kw):
        calls.append(e.name)
        if len(calls) == 3:
            raise KeyboardInterrupt
        return real(e, **kw)
    monkeypatch.setattr(CALIBRATE, "measure", flaky)            # the name calibrate measures with
    kw = {"device": "cpu", "dtypes": ("float64",), "repeats": 20, "warmup": 2, "budget_s": 0.001,
          "max_spread": 1e9, "retries": 0, "progress": False}
    with pytest.raises(KeyboardInterrupt):
        _measure(entries, order, est, tmp_path, time.monotonic() + 60, **kw)
    saved = sorted(p.name for p in (tmp_path / "parts").glob("*.features.csv.gz"))
    assert len(saved) == 2
    calls.clear()
    new, _, first = _measure(entries, order, est, tmp_path, time.monotonic() + 60, **kw)
    assert new == 2 and calls == [entries[j].name for j in order[2:]]
    assert [j for j, _, _ in first] == order[2:]                     # what this run measured, for the repeat check
    assert len(list((tmp_path / "parts").glob("*.features.csv.gz"))) == 4


def test_one_slow_matrix_does_not_end_the_measuring(tiny, tmp_path, monkeypatch):
    """CI's failure after issue 45: the first matrix of a cold process (imports, cold caches) took many times
    its estimate, the run's estimate-to-actual ratio took that in, and every later matrix was skipped as not
    fitting: a 10 s calibration measured your matrices and no generated one."""
    collect_mod = importlib.import_module("pyspmv.datasets.collect")
    entries, F, est = _pool(tiny, "cpu", 2e4, 0, 0.001, 20, 2, 1)
    order = select(F, tiny.features, est)[:4]
    real, calls = collect_mod.measure, []

    def cold_first(e, **kw):
        calls.append(e.name)
        if len(calls) == 1:
            time.sleep(2.0)         # a cold start: far past any matrix's estimate here
        return real(e, **kw)
    monkeypatch.setattr(CALIBRATE, "measure", cold_first)
    est = np.full(len(est), 0.2)    # each of the rest fits the 20 s left many times over ...
    est[order[0]] = 0.001           # ... after a small first matrix (in CI: one of yours, the smallest)
    kw = {"device": "cpu", "dtypes": ("float64",), "repeats": 20, "warmup": 2, "budget_s": 0.001,
          "max_spread": 1e9, "retries": 0, "progress": False}
    new, _, _ = _measure(entries, order, est, tmp_path, time.monotonic() + 20, **kw)
    assert new == 4 and calls == [entries[j].name for j in order]


def _with_fingerprint(rm, **change):
    out = pyspmv.RankModel(rm.device, rm.tables, source=rm.source, gpu=rm.gpu, score=rm.score, meta=dict(rm.meta))
    out.meta["fingerprint"] = {**machine.fingerprint(rm.device), **change}
    return out


@pytest.mark.parametrize("policy", ["serial", "online"])
def test_a_solve_says_other_machine_against_the_callers_line(shipped, policy):
    A = pyspmv.generate("poisson2d", 30)
    other = _with_fingerprint(shipped, processor="Some Other CPU")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        pyspmv.solvers.cg(A, A @ np.ones(A.ncols), policy=policy, model=other, device="cpu", select_min_nnz=0,
                          select_patience=0)
    said = [x for x in w if x.category is pyspmv.OtherMachineWarning]
    assert len(said) == 1 and said[0].filename == __file__, [(x.filename, x.lineno) for x in said]


def test_the_other_machine_notice(shipped, tmp_path, capsys):
    A = pyspmv.generate("poisson2d", 10)
    same = _with_fingerprint(shipped)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pyspmv.rank(A, same, device="cpu")
    other = _with_fingerprint(shipped, processor="Some Other CPU", threads=64)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        for _ in range(2):                              # once per model
            pyspmv.rank(A, other, device="cpu")
    assert [x.category for x in w] == [pyspmv.OtherMachineWarning]
    msg = str(w[0].message)
    assert "pyspmv calibrate" in msg and "Some Other CPU" in msg and "64" in msg
    pyspmv.save_model(other, tmp_path / "other.pyspmv")
    pyspmv.save_model(same, tmp_path / "same.pyspmv")
    assert main(["rank", "--generate", "poisson2d:10", "--model", str(tmp_path / "other.pyspmv")]) == 0
    err = capsys.readouterr().err
    assert err.startswith("pyspmv: note: ") and "pyspmv calibrate" in err and err.count("\n") == 1
    assert main(["rank", "--generate", "poisson2d:10", "--model", str(tmp_path / "same.pyspmv")]) == 0
    assert capsys.readouterr().err == ""
    fp = machine.fingerprint_of({"device": "cpu", "processor": "X", "omp_num_threads": "", "cpu_count": 4})
    assert fp["threads"] == 4 and machine.fingerprint_of({"omp_num_threads": "3,1"})["threads"] == 3


def test_rank_uses_the_calibrated_model(shipped, tmp_path, monkeypatch):
    monkeypatch.setenv("PYSPMV_HOME", str(tmp_path))
    A = pyspmv.generate("poisson2d", 10)
    assert pyspmv.calibrated_model("cpu") is None
    assert pyspmv.rank(A, device="cpu") == pyspmv.rank(A, shipped, device="cpu")
    f = {f"8|{c.id}": (0.01 if c.id == "cpu/jad" else 1.0) for c in pyspmv.configs("cpu")}
    pyspmv.save_model(_with_fingerprint(adapt.corrected(shipped, f)), machine.calibrated_path("cpu"))
    assert pyspmv.rank(A, device="cpu", dtype="float64").best != "cpu/jad"      # read once per process
    reread_calibrated()
    assert pyspmv.rank(A, device="cpu", dtype="float64").best == "cpu/jad"
    assert pyspmv.rank(A, device="cpu", dtype="float32") == pyspmv.rank(A, shipped, device="cpu", dtype="float32")


def test_cli_calibrate_on_a_tiny_budget(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("PYSPMV_HOME", str(tmp_path))
    # the drift check has its own test; on a shared CI machine the load moves these tiny timings by half
    argv = ["calibrate", "--dataset", str(TINY), "--max-nnz", "2e4", "--budget", "0.001", "--time-limit", "10",
            "--dtypes", "float64", "--quiet", "--max-drift", "1e6"]
    t0 = time.monotonic()
    assert main(argv) == 0
    assert time.monotonic() - t0 < 25
    out = capsys.readouterr().out
    assert "chosen" in out and "matrices measured" in out and "saved" in out and "timed again" in out
    rm = pyspmv.calibrated_model("cpu")
    assert rm is not None and rm.meta["fingerprint"] == machine.fingerprint("cpu")
    assert rm.meta["calibration"]["choice"] in adapt.CANDIDATES and set(rm.tables) == {"float64"}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pyspmv.rank(pyspmv.generate("poisson2d", 10), device="cpu", dtype="float64")
    parts = list((tmp_path / "calibration").glob("*/parts/*.features.csv.gz"))
    assert parts
    assert main([*argv, "--time-limit", "0.01"]) == 0          # nothing new fits: resumed from the saved ones
    out = capsys.readouterr().out
    assert f"{len(parts)} matrices measured (0 this run" in out and "this run measured nothing new" in out


def test_readapting_measurements_of_another_machine(tmp_path, monkeypatch, capsys):
    """`--no-measure` measures nothing and records the machine that measured the folder, not this one."""
    import json
    import shutil
    monkeypatch.setenv("PYSPMV_HOME", str(tmp_path / "home"))
    folder = tmp_path / "theirs"
    shutil.copytree(TINY, folder)
    meta = json.loads((folder / "metadata.json").read_text())
    meta["device_info"] = {**meta.get("device_info", {}), "device": "cpu", "processor": "Their CPU",
                           "omp_num_threads": "7"}
    (folder / "metadata.json").write_text(json.dumps(meta))
    before = sorted(p.name for p in folder.rglob("*"))
    out = tmp_path / "re.pyspmv"
    assert main(["calibrate", "--dataset", str(TINY), "--no-measure", "--folder", str(folder), "--out", str(out),
                 "--quiet"]) == 0
    assert "(0 this run" in capsys.readouterr().out
    assert sorted(p.name for p in folder.rglob("*")) == before          # nothing measured, nothing written there
    rm = pyspmv.load_model(out)
    assert rm.meta["fingerprint"] == {"device": "cpu", "processor": "Their CPU", "threads": 7}
    assert rm.meta["calibration"]["measured"] is False and rm.meta["calibration"]["choice"] in adapt.CANDIDATES
    with pytest.raises(ValueError, match="no measured matrix.*measure=True"):
        pyspmv.calibrate("cpu", dataset=TINY, measure=False, folder=tmp_path / "empty", out=out, progress=False)
    meta["device_info"]["device"] = "cuda"
    (folder / "metadata.json").write_text(json.dumps(meta))
    with pytest.raises(ValueError, match="of device 'cuda'"):
        pyspmv.calibrate("cpu", dataset=TINY, measure=False, folder=folder, out=out, progress=False)


def test_cross_validation_skips_retrains_foreseen_past_the_deadline(tiny, shipped):
    """With a deadline already passed, the first retrain still runs (it measures what a retrain costs) and
    the larger one is skipped and listed; the choice is among the candidates tried."""
    import time
    local = adapt.Local.of(tiny)
    cv = adapt.cross_validate(shipped, local, adapt.Local.of(tiny), kind="forest", n_splits=3,
                              deadline=time.monotonic() - 1.0)
    assert "retrain/local" in cv.index and "retrain/mixed" not in cv.index
    assert cv.attrs["skipped"] == ["retrain/mixed"]
    assert adapt.best_candidate(cv) in cv.index
    full = adapt.cross_validate(shipped, local, adapt.Local.of(tiny), kind="forest", n_splits=3,
                                deadline=time.monotonic() + 3600)
    assert set(full.index) == set(adapt.CANDIDATES) and full.attrs["skipped"] == []


# -- a busy machine, damaged parts and a full disk -----------------------------------------------
def test_a_calibration_under_load_refuses_to_save(tmp_path, monkeypatch, capsys):
    """Issue 33, item 10: with the matrices timed again 1000 times slower (the load came while measuring),
    calibrate printed the drift, then saved and switched to a model adapted to the load. It saves nothing
    now and says why and what to do, with a nonzero exit status."""
    collect_mod = importlib.import_module("pyspmv.datasets.collect")
    real, seen = collect_mod.measure, set()

    def loaded(e, **kw):
        res = real(e, **kw)
        if e.name in seen and res["timings"] is not None:      # the second timing of a matrix: under load
            res["timings"] = res["timings"].assign(median_ms=res["timings"]["median_ms"] * 1000.0)
        seen.add(e.name)
        return res
    monkeypatch.setattr(CALIBRATE, "measure", loaded)
    monkeypatch.setattr(CALIBRATE, "REPEAT_SHARE", 0.3)   # room to time again
    monkeypatch.setenv("PYSPMV_HOME", str(tmp_path))
    argv = ["calibrate", "--dataset", str(TINY), "--max-nnz", "2e4", "--budget", "0.001", "--time-limit", "10",
            "--dtypes", "float64", "--quiet"]
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "saved no model" in err and "moved by a median" in err and "--restart" in err and "--max-drift" in err, err
    assert pyspmv.calibrated_model("cpu") is None and not list(tmp_path.glob("*.pyspmv")) + list(tmp_path.glob(".*"))
    with pytest.raises(ValueError, match="'max_drift'"):
        pyspmv.calibrate("cpu", dataset=TINY, max_drift=0.0)


def test_a_damaged_part_of_a_calibration_is_measured_again(tiny, tmp_path):
    """Issue 33, item 9: a truncated part made every later calibrate fail with EOFError, and its matrix
    was never measured again."""
    entries, F, est = _pool(tiny, "cpu", 2e4, 0, 0.001, 20, 2, 1)
    order = select(F, tiny.features, est)[:2]
    kw = {"device": "cpu", "dtypes": ("float64",), "repeats": 20, "warmup": 2, "budget_s": 0.001,
          "max_spread": 1e9, "retries": 0, "progress": False}
    assert _measure(entries, order, est, tmp_path, time.monotonic() + 60, **kw)[0] == 2
    part = tmp_path / "parts" / f"{entries[order[0]].name}.csv.gz"
    part.write_bytes(part.read_bytes()[:40])
    with pytest.warns(UserWarning, match=f"{part.name} could not be read") as w:
        new, _, _ = _measure(entries, order, est, tmp_path, time.monotonic() + 60, **kw)
    assert new == 1 and w[0].category is pyspmv.datasets.DamagedPartWarning
    assert part.exists() and (tmp_path / "parts" / f"{part.name}.damaged").exists()


def test_a_full_disk_leaves_no_part_file(tmp_path, monkeypatch):
    """Issue 33, item 9: a model file that failed part-way (a full disk) stayed behind as its .part file."""
    import errno
    import shutil

    def full(model, path, **kwargs):
        Path(path).write_bytes(b"PK half")
        raise OSError(errno.ENOSPC, "No space left on device")
    monkeypatch.setattr(CALIBRATE, "save_model", full)
    folder = tmp_path / "measured"
    shutil.copytree(TINY, folder)
    out = tmp_path / "model" / "m.pyspmv"
    with pytest.raises(OSError, match="No space left"):
        pyspmv.calibrate("cpu", dataset=TINY, measure=False, folder=folder, out=out, progress=False)
    assert list(out.parent.iterdir()) == []


# -- your own matrices and a choice judged against the noise (issue 39) ------------------------------
def _your_folder(path: Path) -> Path:
    """Four small Matrix Market files written from pyspmv's generators, and four bad files (one named with
    an escape sequence)."""
    import scipy.io
    path.mkdir()
    for fam, n in (("poisson2d", 12), ("poisson2d", 20), ("banded", 300), ("powerlaw", 200)):
        scipy.io.mmwrite(path / f"mine_{fam}_{n}.mtx", pyspmv.generate(fam, n).to_scipy())
    (path / "short.mtx").write_text("%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1.0\n")
    (path / "empty.mtx").write_text("")
    (path / "notes.txt").write_text("not a matrix")
    (path / "\x1b[31mred.txt").write_text("not a matrix either")
    return path


def test_cli_calibrate_with_your_matrices(tmp_path, monkeypatch, capsys):
    """--matrices: each bad file skipped with a one-line reason, the rest measured and judged on first;
    the saved model records what it was judged on, and --report prints it later."""
    monkeypatch.setenv("PYSPMV_HOME", str(tmp_path / "home"))
    mats = _your_folder(tmp_path / "mats")
    assert main(["calibrate", "--report"]) == 0
    assert "no calibrated cpu model in use" in capsys.readouterr().out
    # 20 s: half of it measures (the rest adapts), your matrices and the real ones first; with 10 s a loaded
    # machine measured no generated matrix
    argv = ["calibrate", "--dataset", str(TINY), "--max-nnz", "2e4", "--budget", "0.001", "--time-limit", "20",
            "--dtypes", "float64", "--quiet", "--matrices", str(mats), "--max-drift", "1e6"]   # drift: its own test
    assert main(argv) == 0
    out = capsys.readouterr().out
    skipped = [line for line in out.splitlines() if line.startswith("# skipped")]
    assert len(skipped) == 4, out
    assert any("short.mtx: could not be read" in s and "entries" in s for s in skipped)
    assert any("empty.mtx: could not be read" in s for s in skipped)
    assert any("notes.txt: not a Matrix Market file" in s for s in skipped)
    # issue 45, item 7: file names printed escaped, never their escape sequences
    assert any("'\\x1b[31mred.txt': not a Matrix Market file" in s for s in skipped) and "\x1b" not in out
    assert "judged on your matrices: 4 of yours of 6 given" in out and "# decision: " in out and "noise" in out
    rm = pyspmv.calibrated_model("cpu")
    j = rm.meta["calibration"]["judged"]
    assert j["on"] == "yours" and j["matrices"]["yours"] == 4 and j["matrices"]["generated"] > 0
    assert j["matrices"]["real"] > 0          # the shipped real matrices are measured beside yours
    assert set(j["table"]["shipped"]) == {"yours", "real", "generated", "all"}
    assert j["table"]["shipped"]["yours"]["matrices"] == 4
    assert j["choice"] == rm.meta["calibration"]["choice"] and j["rule"] == adapt.RULE
    assert {"geomean_ratio", "within<5%", "timing", "bootstrap"} <= set(j["noise"])
    assert len(rm.meta["calibration"]["bad"]) == 4
    assert main(["calibrate", "--report"]) == 0
    report = capsys.readouterr().out
    assert "calibrated cpu model in use" in report and "your matrices" in report and j["decision"] in report
    assert report.count("# skipped") == 4 and "\x1b" not in report and "'\\x1b[31mred.txt'" in report
    # resumed: nothing new fits, only your matrices are judged again, the bad files still said
    assert main([*argv, "--only-matrices", "--time-limit", "0.01"]) == 0
    out = capsys.readouterr().out
    assert "(0 this run" in out and out.count("# skipped") == 4 and "4 of yours" in out
    with pytest.raises(ValueError, match="'only_matrices'"):
        pyspmv.calibrate("cpu", dataset=TINY, only_matrices=True)
    with pytest.raises(FileNotFoundError, match="not a folder"):
        pyspmv.calibrate("cpu", dataset=TINY, matrices=tmp_path / "nowhere")


def test_your_files_never_share_measurements(tmp_path, monkeypatch):
    """Issue 45, items 4, 5 and 7: files whose names gave one part file (``a b.mtx`` and ``a_b.mtx``, ``a;b``,
    non-ASCII letters, ``NAME.mtx`` and ``NAME.mtx.gz``) shared one measurement, the second never measured and
    nothing said; ``bcspwr08.mtx`` replaced the shipped real matrix; a name not UTF-8 or of 240 characters
    stopped every run at the same place with an error naming no file; and the message listing skipped files
    printed their escape sequences. Each is refused before anything is measured, naming the files."""
    import os

    import scipy.io
    monkeypatch.setenv("PYSPMV_HOME", str(tmp_path / "home"))
    kw = {"dataset": TINY, "max_nnz": 2e4, "budget_s": 0.001, "time_limit_s": 10, "dtypes": ("float64",),
          "progress": False, "max_drift": 1e6, "folder": tmp_path / "measured", "out": tmp_path / "m.pyspmv"}
    A = pyspmv.generate("poisson2d", 6).to_scipy()

    def refused(*names: str | bytes, only: bool = True) -> str:
        mats = tmp_path / f"mats{len(list(tmp_path.glob('mats*')))}"
        mats.mkdir()
        scipy.io.mmwrite(mats / "fine.mtx", A)
        for n in names:
            scipy.io.mmwrite(mats / "tmp.mtx", A)
            os.rename(mats / "tmp.mtx", os.fsencode(mats) + b"/" + (n if isinstance(n, bytes) else n.encode()))
        with pytest.raises(ValueError, match="The 'matrices' folder of calibrate\\(\\) must have unique names") as e:
            pyspmv.calibrate("cpu", matrices=mats, only_matrices=only, **kw)
        assert not (tmp_path / "measured").exists() and not (tmp_path / "m.pyspmv").exists()     # nothing measured
        assert "fine.mtx" not in str(e.value) and "rename" in str(e.value)
        return str(e.value)

    assert "sharing a file name: 'a b.mtx' and 'a;b.mtx' and 'a_b.mtx' (parts 'a_b')" in refused(
        "a b.mtx", "a_b.mtx", "a;b.mtx")
    assert "'aè.mtx' and 'aé.mtx'" in refused("aé.mtx", "aè.mtx")
    assert "'bcspwr08.mtx' and 'bcspwr08' (real:power)" in refused("bcspwr08.mtx", only=False)
    # past max_nnz, but an earlier run's measurement of it may be in the folder
    assert "'NotreDame_www.mtx' and 'NotreDame_www' (real:web)" in refused("NotreDame_www.mtx")
    msg = refused(b"c\xffd.mtx", "x" * 240 + ".mtx", "\x1b[31mred.mtx", "\x1b[31mred.mtx.gz")
    assert "'c\\udcffd.mtx' is not UTF-8 text" in msg and "'" + "x" * 240 + ".mtx' is too long" in msg
    assert "'\\x1b[31mred.mtx' and '\\x1b[31mred.mtx.gz'" in msg and "\x1b" not in msg
    only_bad = tmp_path / "bad"
    only_bad.mkdir()
    (only_bad / "\x1b[31mred.txt").write_text("not a matrix")
    with pytest.raises(ValueError, match="found no Matrix Market file") as e:
        pyspmv.calibrate("cpu", matrices=only_bad, **kw)
    assert "\x1b" not in str(e.value) and "'\\x1b[31mred.txt': not a Matrix Market file" in str(e.value)


def _perfect_for_a_correction(tiny, shipped):
    """Local times that are the shipped model's predictions times a factor per configuration: the
    per-configuration correction ranks them exactly, the shipped model does not."""
    local = adapt.Local.of(tiny)
    rng = np.random.default_rng(1)
    k = {c: float(np.exp(rng.normal(0, 0.5))) for c in local.X["config"].unique()}
    local.y = shipped.predict(local.X) * local.X["config"].map(k).to_numpy()
    local.q25, local.q75 = local.y, local.y
    return local


def test_a_candidate_within_the_noise_leaves_the_shipped_model(tiny, shipped):
    """The rule: the best candidate replaces the shipped model only when its geomean beats the shipped
    model's by more than the noise (and its share within 5 % is not worse by more than the noise)."""
    local = _perfect_for_a_correction(tiny, shipped)
    cv = adapt.cross_validate(shipped, local, None, kind="forest", n_splits=3, deadline=time.monotonic() - 1)
    quiet = adapt.judge(cv, {"geomean_ratio": 0.0, "within<5%": 0.0})
    assert quiet["on"] == "all" and quiet["best"] == "correct/config" == quiet["choice"]
    margin = quiet["margin"]["geomean_ratio"]
    assert margin > quiet["noise"]["geomean_ratio"] > 0 and quiet["decision"].startswith("replaced")
    noisy = adapt.judge(cv, {"geomean_ratio": margin + 1e-3, "within<5%": 0.0})
    assert noisy["best"] == "correct/config" and noisy["choice"] == "shipped"
    assert noisy["decision"].startswith("kept the shipped model: correct/config was") and "noise" in noisy["decision"]
    # judged on the user's matrices when there are enough of them, the others counted apart
    some = sorted(set(local.groups))[:4]
    mine = adapt.judge(cv, {"geomean_ratio": 0.0, "within<5%": 0.0}, set(some))
    assert mine["on"] == "yours" and mine["matrices"]["yours"] == 4
    assert mine["table"]["shipped"]["yours"]["matrices"] == 4
    assert mine["matrices"]["generated"] == len(set(local.groups)) - 4
    assert adapt.judge(cv, {"geomean_ratio": 0.0, "within<5%": 0.0}, set(some[:2]))["on"] == "all"
    # without enough of yours, on the real-structured ones (issue 39: generated ones did not predict real ones)
    five = sorted(set(local.groups))[:5]
    real = adapt.judge(cv, {"geomean_ratio": 0.0, "within<5%": 0.0}, set(five[:2]), real=set(five[2:]))
    assert real["on"] == "real" and real["matrices"] == {"yours": 2, "real": 3,
                                                          "generated": len(set(local.groups)) - 5}
    assert set(real["table"]["shipped"]) == {"yours", "real", "generated", "all"}
    assert real["table"]["shipped"]["real"]["matrices"] == 3 and "real-structured" in real["decision"]
    both = adapt.judge(cv, {"geomean_ratio": 0.0, "within<5%": 0.0}, set(some[:3]), real=set(some))
    assert both["on"] == "yours" and both["matrices"]["real"] == 1    # yours are not counted twice


def test_calibrate_keeps_the_shipped_model_when_the_noise_is_larger(tiny, shipped, tmp_path, monkeypatch):
    """End to end, with the measured noise forced above any margin: the calibrated model ranks as the
    shipped one, and records the decision, the numbers and the noise."""
    import shutil
    folder = tmp_path / "measured"
    shutil.copytree(TINY, folder)
    monkeypatch.setattr(CALIBRATE, "timing_noise", lambda repeat, local, in_rounds=None: {
        "geomean_ratio": 10.0, "within<5%": 1.0, "from": "test"})
    out = tmp_path / "m.pyspmv"
    c = pyspmv.calibrate("cpu", dataset=TINY, measure=False, folder=folder, out=out, progress=False)
    assert c.choice == "shipped" and c.judged["choice"] == "shipped" and c.judged["decision"].startswith("kept")
    back = pyspmv.load_model(out)
    j = back.meta["calibration"]["judged"]
    assert j["noise"]["geomean_ratio"] == 10.0 and j["noise"]["timing"]["from"] == "test" and j["on"] == "all"
    assert set(j["table"]) == set(c.cv.index) and j["matrices"] == {"yours": 0, "real": 0, "generated": tiny.groups.nunique()}
    A = pyspmv.generate("poisson2d", 15)
    assert pyspmv.rank(A, back, device="cpu", dtype="float64") == pyspmv.rank(A, shipped, device="cpu",
                                                                              dtype="float64")


def test_timing_noise_from_a_repeat_or_the_quartiles(tiny):
    t = CALIBRATE.timing_noise({"best_again": 1.04, "within5_again": 0.75}, None)
    assert t["geomean_ratio"] == pytest.approx(0.04) and t["within<5%"] == pytest.approx(0.25)
    q = CALIBRATE.timing_noise(None, adapt.Local.of(tiny))
    assert q["from"] == "quartiles" and q["geomean_ratio"] > 0 and 0 <= q["within<5%"] <= 1
