"""The pyspmv command: output a person and a script can read, errors as one line, pipes, model files."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import scipy.io
import scipy.sparse as sp

import pyspmv
from pyspmv import gpu
from pyspmv.cli import EXIT_BROKEN_PIPE, TOP_DEFAULT, main

TINY = Path(__file__).resolve().parent / "data" / "tiny_cpu"
H100 = "NVIDIA H100 80GB HBM3"          # the GPU datasets/h100, and so the shipped cuda default, was measured on


def _cli(*args: str, **kw) -> subprocess.CompletedProcess:
    # Not from the checkout's root: `python -m` puts the working directory first on sys.path, where the
    # source tree's pyspmv (without its compiled modules) would shadow the installed one.
    kw.setdefault("cwd", Path(__file__).parent)
    return subprocess.run([sys.executable, "-m", "pyspmv", *args], capture_output=True, text=True, timeout=120,
                          check=False, **kw)


def _rows(out: str) -> list[list[str]]:
    """The table rows of `pyspmv rank`'s output (not the '#' lines, not the column header)."""
    lines = [ln for ln in out.splitlines() if not ln.startswith("#")]
    assert lines[0].split() == ["rank", "config", "predicted_us"]
    return [ln.split() for ln in lines[1:]]


def test_features_of_a_file(tmp_path, capsys):
    scipy.io.mmwrite(tmp_path / "m.mtx", sp.random(20, 20, density=0.2, random_state=0))
    assert main(["features", str(tmp_path / "m.mtx"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["matrix"] == "m" and out["nrows"] == 20


def test_features_of_a_generated_matrix(capsys):
    assert main(["features", "--generate", "poisson2d:10"]) == 0
    assert "nnz_max" in capsys.readouterr().out


def test_bench_writes_csv(tmp_path, capsys):
    out = tmp_path / "b.csv"
    assert main(["bench", "--generate", "banded:200", "--config", "cpu/csr/rows", "--config", "cpu/ell",
                 "--repeats", "5", "--quiet", "--out", str(out)]) == 0
    assert "cpu/csr/rows" in capsys.readouterr().out
    assert out.read_text().count("\n") == 3


def test_bench_takes_the_device_of_its_config_ids(capsys):
    """No --device: a GPU id benchmarks on the GPU (or says there is none), never on the CPU."""
    status = main(["bench", "--generate", "poisson2d:5", "--config", "pyspmv/csr/scalar", "--repeats", "3",
                   "--quiet"])
    out, err = capsys.readouterr()
    if gpu.available():
        assert status == 0 and "pyspmv/csr/scalar" in out
    else:
        assert status == 2 and err.startswith("pyspmv: error:") and "not on device='cpu'" not in err
    assert main(["bench", "--generate", "poisson2d:5", "--config", "cpu/coo", "--config", "pyspmv/coo"]) == 2
    assert "several devices" in capsys.readouterr().err


def test_rank_prints_a_labelled_table(capsys):
    """Title (matrix, model, the GPU it was measured on, dtype, n_calls), a column header with the unit,
    the top 10 by default."""
    assert main(["rank", "--generate", "poisson2d:20"]) == 0
    out = capsys.readouterr().out
    title = out.splitlines()[0]
    for what in ("poisson2d_20", "default", H100, "float64", "--n-calls"):
        assert what in title
    assert "cuda" not in title.split("measured on")[1]
    rows = _rows(out)
    assert len(rows) == TOP_DEFAULT and [r[0] for r in rows] == [str(i) for i in range(1, 11)]
    us = [float(r[2]) for r in rows]
    assert us == sorted(us) and 0.5 < us[0] < 1e3          # microseconds, not ms
    r = pyspmv.rank(pyspmv.generate("poisson2d", 20))
    assert [row[1] for row in rows] == [c for c, _ in r[:TOP_DEFAULT]]
    assert us[0] == pytest.approx(r[0][1] * 1e3, abs=1e-3)


def test_rank_top_all_and_n(capsys):
    assert main(["rank", "--generate", "poisson2d:20", "--top", "all", "--n-calls", "20"]) == 0
    out = capsys.readouterr().out
    assert len(_rows(out)) == len(pyspmv.configs("cuda")) and "20 calls" in out.splitlines()[0]
    assert main(["rank", "--generate", "poisson2d:20", "--device", "cpu", "--top", "3"]) == 0
    rows = _rows(capsys.readouterr().out)
    assert len(rows) == 3 and all(r[1].startswith("cpu/") for r in rows)


@pytest.mark.parametrize("top", ["0", "-1", "ten"])
def test_rank_refuses_a_top_below_one(top, capsys):
    with pytest.raises(SystemExit) as e:
        main(["rank", "--generate", "poisson2d:20", "--top", top])
    assert e.value.code == 2
    assert "--top: must be a positive integer or 'all'" in capsys.readouterr().err


def test_rank_json_is_valid_with_configurations_that_cannot_serve(capsys):
    """ELL and DIA cannot serve a power-law matrix: their predicted time is null, not Infinity."""
    assert main(["rank", "--generate", "powerlaw:2000", "--top", "all", "--json"]) == 0

    def refuse(name: str) -> None:
        raise AssertionError(f"invalid JSON constant {name}")
    r = json.loads(capsys.readouterr().out, parse_constant=refuse)
    assert [e["rank"] for e in r] == list(range(1, len(r) + 1))
    missing = [e for e in r if e["predicted_ms"] is None]
    assert missing and all(e["config"].split("/")[1] in ("ell", "dia", "bsr") for e in missing)
    assert all(isinstance(e["predicted_ms"], float) for e in r if e not in missing)


def test_rank_takes_the_device_of_its_model(tmp_path, capsys):
    model = tmp_path / "cpu.pyspmv"
    assert main(["export", "--default", "cpu", "--out", str(model)]) == 0
    capsys.readouterr()
    assert main(["rank", "--generate", "poisson2d:20", "--model", str(model), "--top", "all"]) == 0
    out = capsys.readouterr().out
    assert "AMD" in out.splitlines()[0] or "cores" in out.splitlines()[0]
    assert {r[1] for r in _rows(out)} == {c.id for c in pyspmv.configs("cpu")}
    assert main(["rank", "--generate", "poisson2d:5", "--device", "cuda", "--model", str(model)]) == 2
    assert "ranks 'cpu' configurations" in capsys.readouterr().err


def test_a_closed_pipe_ends_quietly():
    """`pyspmv rank ... | head -1`: no 'Broken pipe', no traceback."""
    cmd = f"{sys.executable} -m pyspmv rank --generate poisson2d:20 --top all | head -1"
    p = subprocess.run(["bash", "-c", cmd], capture_output=True, text=True, timeout=120, cwd=Path(__file__).parent,
                       check=False)
    assert p.returncode == 0 and p.stdout.startswith("# matrix poisson2d_20")
    assert "Broken pipe" not in p.stderr and "Traceback" not in p.stderr, p.stderr
    # The reader gone before the first write, every time: the writer's status says so, quietly.
    proc = subprocess.Popen([sys.executable, "-m", "pyspmv", "rank", "--generate", "poisson2d:20", "--top", "all"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=Path(__file__).parent)
    proc.stdout.close()
    err = proc.stderr.read()
    proc.stderr.close()
    assert proc.wait(timeout=120) == EXIT_BROKEN_PIPE and err == b""


def test_version_and_python_m_pyspmv(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"pyspmv {pyspmv.__version__}"
    p = _cli("--version")
    assert p.returncode == 0 and p.stdout.strip() == f"pyspmv {pyspmv.__version__}"
    p = _cli("features", "--generate", "poisson2d:4", "--json")
    assert p.returncode == 0 and json.loads(p.stdout)["nrows"] == 16


@pytest.mark.parametrize("command, defaults", [
    ("rank", ["(default: 10)", "(default: float64)"]),
    ("bench", ["(default: 200)", "(default: 1.0)"]),
    ("train", ["(default: boosted)", "(default: 0.25)"]),
])
def test_help_shows_defaults(command, defaults, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = " ".join(capsys.readouterr().out.split())
    for d in defaults:
        assert d in out
    assert "(default: None)" not in out and "(default: False)" not in out


def test_train_saves_a_model_file_that_load_model_reads(tmp_path, capsys):
    """`train --out` writes pyspmv.save_model's npz (suffix added), with step lines on stderr; the
    file ranks through --model, n_calls included."""
    assert main(["train", str(TINY), "--model", "linear", "--out", str(tmp_path / "m")]) == 0
    out, err = capsys.readouterr()
    path = tmp_path / "m.pyspmv"
    assert str(path) in out and "held-out" in out
    for step in ("loading dataset", "evaluating linear", "fitting linear"):
        assert f"pyspmv: {step}" in err and "done in" in err
    with zipfile.ZipFile(path) as z:
        assert "header.json.npy" in z.namelist()
    m = pyspmv.load_model(path)
    assert m.device == "cpu" and m.meta["n_matrices"] == 18 and m.meta["convert_ms"]
    assert m.meta["command"].startswith("pyspmv train ")
    assert main(["rank", "--generate", "poisson2d:20", "--model", str(path), "--n-calls", "10", "--top", "2"]) == 0
    assert "AMD EPYC" in capsys.readouterr().out.splitlines()[0]


def test_train_refuses_a_pickle_name_before_the_work(capsys):
    assert main(["train", str(TINY), "--model", "linear", "--out", "m.pkl", "--quiet"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and "no pickle" in err and "m.pyspmv" in err


def test_model_files_are_never_unpickled(tmp_path, capsys):
    import pickle
    ds = pyspmv.datasets.load(TINY, dtype="float64")
    m = pyspmv.models.LinearModel(select=False).fit(ds.X, ds.y, ds.groups)
    (tmp_path / "m.pkl").write_bytes(pickle.dumps(m))
    for cmd in (["rank", "--generate", "poisson2d:5"], ["export", "--out", str(tmp_path / "m.h")]):
        assert main([*cmd, "--model", str(tmp_path / "m.pkl")]) == 2
        assert "not a pyspmv model file" in capsys.readouterr().err
    assert "import pickle" not in Path(pyspmv.cli.__file__).read_text()


@pytest.mark.parametrize("argv, says", [
    (["features", "/no/such.mtx"], "no such file"),
    (["features", "--generate", "poisson2d:x"], "--generate takes KIND:SIZE"),
    (["bench", "--generate", "poisson2d:5", "--config", "cpu/zzz"], "Unknown configuration id"),
    (["rank", "--generate", "poisson2d:5", "--model", "/no/such.pyspmv"], "such.pyspmv"),
    (["train", "/no/such/dataset"], "no folder"),
])
def test_errors_are_one_line_and_exit_2(argv, says, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert err[-1].startswith("pyspmv: error: ") and says in err[-1]
    assert [ln for ln in err if "error" in ln] == err[-1:] and "Traceback" not in " ".join(err)


def test_debug_shows_the_traceback():
    with pytest.raises(FileNotFoundError):
        main(["--debug", "features", "/no/such.mtx"])
    p = _cli("--debug", "features", "/no/such.mtx")
    assert p.returncode == 1 and "Traceback" in p.stderr
    p = _cli("features", "/no/such.mtx")
    assert p.returncode == 2 and "Traceback" not in p.stderr and p.stderr.count("\n") == 1


def test_train_shows_progress_unless_quiet(tmp_path):
    """Every step line and the estimator's own bar reach stderr; --quiet silences both."""
    out = tmp_path / "m"
    p = _cli("train", str(TINY), "--model", "linear", "--out", str(out))
    assert p.returncode == 0, p.stderr
    assert "fitting linear on all" in p.stderr and "LinearModel" in p.stderr
    q = _cli("train", str(TINY), "--model", "linear", "--out", str(out), "--quiet")
    assert q.returncode == 0 and q.stderr == ""
