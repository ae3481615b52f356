"""The shipped default models, `pyspmv rank` / `pyspmv export`, and `pyspmv train-default`."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import pyspmv
from pyspmv.cli import main
from pyspmv.datasets.load import SUPPLEMENT_KEY
from pyspmv.matrices.features import FEATURE_NAMES

TINY = Path(__file__).resolve().parent / "data" / "tiny_cpu"


@pytest.mark.parametrize("device", ["cuda", "cpu"])
def test_default_models_rank_every_configuration(device):
    """The defaults load, rank every configuration they were trained on (no GPU needed), fastest first (the
    cuda default's near-ties by bytes moved: rank_bytes_pow), and carry their provenance and conversion-cost fit.
    Configurations registered after a default was trained (cidx's), or never measured in its data (JAD's value tables
    in the H200 default's table), are in configs() but not in its ranking."""
    m = pyspmv.default_model(device)
    assert m.device == device and "command" in m.meta and m.meta["convert_ms"]
    A = pyspmv.generate("poisson2d", 25)
    r = pyspmv.rank(A, device=device)
    ids = set(m.tables["float64"].ranked().config_ids)
    assert ids <= {c.id for c in pyspmv.configs(device)}
    assert {c for c, _ in r} == ids and len(r) == len(ids)
    ms = np.array([v for _, v in r])
    assert np.isfinite(ms[0]) and ms[0] > 0
    p = m.tables["float64"].spec.fields["rank_bytes_pow"]
    assert p == {"cuda": 0.05, "cpu": 0.0}[device]
    q = pyspmv.config_features(A, [c for c, _ in r], dtype="float64")["bytes_moved"].to_numpy(np.float64) / (8 * A.nnz)
    key = ms * np.where(np.isfinite(q) & (q > 0), q, 1.0) ** p
    assert np.all(key[:-1] <= key[1:] * (1 + 1e-12))


def test_cli_rank_and_export(tmp_path, capsys):
    assert main(["rank", "--generate", "poisson2d:20", "--device", "cpu", "--top", "3"]) == 0
    out = [ln.split() for ln in capsys.readouterr().out.splitlines() if not ln.startswith("#")]
    assert out[0] == ["rank", "config", "predicted_us", "vs_pick", "mark"] and len(out) == 4
    assert all(r[1].startswith("cpu/") for r in out[1:])
    assert main(["rank", "--generate", "banded:300", "--device", "cuda", "--json", "--deterministic"]) == 0
    (r,) = json.loads(capsys.readouterr().out)
    assert r["ranking"] and all(pyspmv.config(e["config"]).deterministic for e in r["ranking"])
    assert main(["export", "--default", "cpu", "--out", str(tmp_path / "cpu_model.h")]) == 0
    text = (tmp_path / "cpu_model.h").read_text()
    assert "cpu_model_NCONFIGS 25" in text and "\nint cpu_model_rank(int32_t nrows" in text  # declared first
    assert "#if defined(cpu_model_IMPLEMENTATION)" in text          # then, in one file, the implementation:
    assert "    int NAME##_rank(" in text                           # the core's csrc/exported.h, then the model's
    assert "\nSPMV_EXPORTED_RANK(cpu_model, 132, 2048, 32, 8)\n" in text   # one line that defines its functions
    assert main(["export", "--default", "cpu", "--out", str(tmp_path / "m.pyspmv")]) == 0
    capsys.readouterr()
    assert main(["rank", "--generate", "poisson2d:20", "--device", "cpu", "--model", str(tmp_path / "m.pyspmv"),
                 "--top", "1"]) == 0
    assert len([ln for ln in capsys.readouterr().out.splitlines() if ln.lstrip().startswith("1 ")]) == 1
    (tmp_path / "bad.pyspmv").write_text("junk")
    assert main(["rank", "--generate", "poisson2d:5", "--device", "cpu", "--model", str(tmp_path / "bad.pyspmv")]) == 2
    assert "not a pyspmv model file" in capsys.readouterr().err
    assert main(["rank", "--generate", "poisson2d:5", "--device", "cuda", "--model", str(tmp_path / "m.pyspmv")]) == 2
    assert "ranks 'cpu' configurations" in capsys.readouterr().err


def test_cli_exports_a_saved_estimator(tmp_path, capsys):
    """An estimator saved with pyspmv.save_model (as `pyspmv train --out` does); `pyspmv export --model` takes it."""
    ds = pyspmv.datasets.load(TINY, dtype="float64")
    m = pyspmv.models.LinearModel(select=False).fit(ds.X, ds.y, ds.groups)
    pyspmv.save_model(m, tmp_path / "m.pyspmv", device="cpu")
    assert main(["export", "--model", str(tmp_path / "m.pyspmv"), "--out", str(tmp_path / "lin.h")]) == 0
    assert "lin_NCONFIGS" in (tmp_path / "lin.h").read_text()


def test_train_default_reproduces_a_model(tmp_path):
    """The documented command on a dataset folder: the same model twice, conversion costs fitted."""
    outs = [tmp_path / "a.pyspmv", tmp_path / "b.pyspmv"]
    for out in outs:
        assert main(["train-default", "--dataset", str(TINY), "--model", "linear", "--out", str(out), "--quiet"]) == 0
    a, b = (pyspmv.load_model(p) for p in outs)
    assert a.meta["n_matrices"] == 18 and set(a.meta["convert_ms"]) >= {"csr", "ell", "sell"}
    assert a.meta["command"].startswith("pyspmv train-default --dataset")
    A = pyspmv.generate("random", 500, seed=3)
    assert pyspmv.rank(A, a, device="cpu") == pyspmv.rank(A, b, device="cpu")
    assert main(["train-default", "--dataset", str(TINY), "--model", "forest"]) == 2     # a folder needs --out


def test_train_default_adds_the_new_matrices_of_extra_datasets(tmp_path):
    """--extra: a further dataset's matrices join the training, those the first already has left out
    (their rows come from the first); another device's dataset is refused."""
    import pandas as pd
    feats, times = (pd.read_csv(TINY / f"{k}.csv.gz") for k in ("features", "timings"))
    new = set(sorted(feats["matrix"])[:5])
    for df in (feats, times):
        df["matrix"] = [f"{m}_b" if m in new else m for m in df["matrix"]]
    times["median_ms"] *= 3.0
    more = tmp_path / "more"
    more.mkdir()
    feats.to_csv(more / "features.csv.gz", index=False)
    times.to_csv(more / "timings.csv.gz", index=False)
    ds = pyspmv.datasets.combine(TINY, more, dtype="float64")
    base = pyspmv.datasets.load(TINY, dtype="float64")
    assert ds.groups.nunique() == 23 and ds.metadata["sources"] == [[str(TINY), 18], [str(more), 5]]
    assert np.array_equal(ds.y[: len(base.y)], base.y) and len(ds.X) == len(ds.y) == len(ds.groups)
    assert set(ds.table["matrix"]) == set(ds.groups) | set(base.table["matrix"])
    out = tmp_path / "m.pyspmv"
    assert main(["train-default", "--dataset", str(TINY), "--extra", str(more), "--model", "linear", "--out", str(out),
                 "--quiet"]) == 0
    m = pyspmv.load_model(out)
    assert m.meta["n_matrices"] == 23 and m.meta["extra"] == [[str(more), 5]]
    assert "--extra" in m.meta["command"]
    times["device"] = "cuda"
    times.to_csv(more / "timings.csv.gz", index=False)
    with pytest.raises(ValueError, match="mix devices"):
        pyspmv.training.train_default.train(str(TINY), "linear", extra=[str(more)], verbose=0)


def test_cli_rank_library(capsys):
    """--library: only those libraries' configurations, as rank(libraries=...) ranks them; repeatable or a comma list;
    the title, a note and the JSON say what was left out."""
    A = pyspmv.generate("powerlaw", 3000)
    want = pyspmv.rank(A, libraries="cusparse")
    assert main(["rank", "--generate", "powerlaw:3000", "--library", "cusparse", "--top", "all"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].endswith("; libraries cusparse only")
    table = [ln.split() for ln in out[1:] if not ln.startswith(("#", "rank "))]
    assert [r[1] for r in table] == [c for c, _ in want] and len(table) == 10
    assert any(ln.startswith("# only the cusparse configurations") and want.best_of_all[0] in ln for ln in out)
    assert main(["rank", "--generate", "powerlaw:3000", "--library", "cusparse", "--json", "--top", "all"]) == 0
    (r,) = json.loads(capsys.readouterr().out)
    assert r["libraries"] == ["cusparse"] and r["deterministic"] is False
    assert r["best_of_all"]["config"] == want.best_of_all[0]
    assert r["best_of_all"]["predicted_us"] == pytest.approx(want.best_of_all[1] * 1e3)
    assert r["order_only_beyond"] == pytest.approx(want.order_only_beyond)
    assert [e["config"] for e in r["ranking"]] == [c for c, _ in want] and r["configurations"] == 10
    for args in (["--library", "pyspmv,cusparse"], ["--library", "cusparse", "--library", "pyspmv"]):
        assert main(["rank", "--generate", "poisson2d:20", "--json", "--top", "all", *args]) == 0
        (r,) = json.loads(capsys.readouterr().out)
        assert r["libraries"] == ["pyspmv", "cusparse"] and r["best_of_all"] is None
        assert r["configurations"] == len(pyspmv.default_model("cuda").tables["float64"].ranked().config_ids)
    assert main(["rank", "--generate", "poisson2d:20", "--json"]) == 0
    (r,) = json.loads(capsys.readouterr().out)
    assert r["libraries"] is None and r["best_of_all"] is None and r["order_only_beyond"] == 1.5
    assert main(["rank", "--generate", "poisson2d:20", "--library", "cusparse", "--device", "cpu"]) == 2
    assert "--library cusparse: device cpu has configurations of cpu only" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["rank", "--generate", "poisson2d:20", "--library", "cusparse,mkl"])
    assert "argument --library: must be one of cpu, pyspmv, cusparse" in capsys.readouterr().err


def _supplement(tmp_path, feats, times, flag=True):
    """A supplement folder from the given tables (``metadata.json``'s ``supplement`` set unless ``flag`` is False)."""
    sup = tmp_path / "sup"
    sup.mkdir(exist_ok=True)
    feats.to_csv(sup / "features.csv.gz", index=False)
    times.to_csv(sup / "timings.csv.gz", index=False)
    (sup / "metadata.json").write_text(json.dumps({SUPPLEMENT_KEY: True} if flag else {}))
    return sup


def test_a_supplement_joins_the_rows_of_the_matrices_it_measured_again(tmp_path):
    """A dataset marked as a supplement adds its configurations to matrices a dataset before it holds, replacing
    the rows of the same matrix, value type and configuration (of any status): its times, with the first dataset's
    features; a matrix no dataset before it holds is left out."""
    import pandas as pd
    feats, times = (pd.read_csv(TINY / f"{k}.csv.gz") for k in ("features", "timings"))
    base = pyspmv.datasets.load(TINY, dtype="float64")
    mats = sorted(feats["matrix"])
    again, fresh = mats[:3], "not_in_tiny"
    cfg = sorted(times["config"].unique())[0]
    t = times[times["matrix"].isin(again) & (times["config"] == cfg)].copy()
    t["median_ms"] *= 7.0                                        # measured again: these replace the first's
    t2 = t.copy()
    t2["config"] = "cpu/cidx/bits=16"                            # a configuration registered after tiny was measured
    stray = t.iloc[:1].assign(matrix=fresh)
    f = feats[feats["matrix"].isin(again)].copy()
    f.loc[f.index[0], "nnz_mean"] *= 1 + 1e-12                   # the last bits of a sum taken in another order
    f = pd.concat([f, f.iloc[:1].assign(matrix=fresh)])
    assert "cpu/cidx/bits=16" not in set(times["config"])
    sup = _supplement(tmp_path, f, pd.concat([t, t2, stray]))
    ds = pyspmv.datasets.combine(TINY, sup, dtype="float64")
    assert ds.metadata["sources"] == [[str(TINY), 18], [str(sup), 3]] and fresh not in set(ds.groups)
    key = pd.MultiIndex.from_arrays([ds.groups, ds.X["config"]])
    assert not key.duplicated().any() and len(ds.X) == len(ds.y) == len(ds.groups) == len(ds.q25)
    y = pd.Series(ds.y.to_numpy(), index=key)
    y0 = pd.Series(base.y.to_numpy(), index=pd.MultiIndex.from_arrays([base.groups, base.X["config"]]))
    for m in again:
        assert y[(m, cfg)] == pytest.approx(7.0 * y0[(m, cfg)])
    untouched = [k for k in y0.index if k[1] != cfg or k[0] not in again]
    np.testing.assert_array_equal(y.loc[untouched].to_numpy(), y0.loc[untouched].to_numpy())
    rows = ds.X[ds.groups.isin(again).to_numpy()]
    first = base.X[base.groups.isin(again).to_numpy()]
    for c in FEATURE_NAMES:                                      # the first dataset's features, bit for bit
        assert set(rows[c]) == set(first[c])
    tab = ds.table.set_index(["matrix", "dtype", "config"])
    assert not tab.index.duplicated().any()
    assert len(ds.table) == len(base.table) + len(t2)
    new = ds.groups[(ds.X["config"] == "cpu/cidx/bits=16").to_numpy()]
    assert sorted(new) == sorted(t2.loc[t2["dtype"] == "float64", "matrix"])
    assert ds.metadata["supplements"] == [str(sup)] and "supplements" not in pyspmv.datasets.combine(TINY).metadata
    m = pyspmv.training.train_default.train(str(TINY), "forest", extra=[str(sup)], verbose=0)
    assert m.meta["unmeasured"] == "skip" and m.meta["extra"] == [[str(sup), 3]]
    assert "cpu/cidx/bits=16" in m.tables["float64"].ranked().config_ids
    assert "unmeasured" not in pyspmv.training.train_default.train(str(TINY), "forest", verbose=0).meta


def test_a_supplement_of_another_matrix_under_the_same_name_is_refused(tmp_path):
    import pandas as pd
    feats, times = (pd.read_csv(TINY / f"{k}.csv.gz") for k in ("features", "timings"))
    m = sorted(feats["matrix"])[0]
    f = feats[feats["matrix"] == m].copy()
    f["nnz"] += 1
    sup = _supplement(tmp_path, f, times[times["matrix"] == m])
    with pytest.raises(ValueError, match=f"matrix '{m}' with nnz"):
        pyspmv.datasets.combine(TINY, sup)
    plain = _supplement(tmp_path, f, times[times["matrix"] == m], flag=False)  # not marked: combine as before
    assert pyspmv.datasets.combine(TINY, plain).metadata["sources"][1] == [str(plain), 0]
