"""The pyspmv command: output a person and a script can read, errors as one line, pipes, model files."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import json
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import pandas as pd
import pytest
import scipy.io
import scipy.sparse as sp

import pyspmv
import pyspmv.training.train_default
from pyspmv.cli import EXIT_BROKEN_PIPE, TOP_DEFAULT, main
from pyspmv.devices import gpu
from pyspmv.ranking.targets import DEFAULT_FILES, target_for, target_gpu

TINY = Path(__file__).resolve().parent / "data" / "tiny_cpu"
H100 = "NVIDIA H100 80GB HBM3"          # the GPU datasets/h100, and so the shipped h100 default, was measured on
#: The shipped cuda default this machine ranks with (the GPU present's, else the newest: h200) and its GPU.
CUDA_TARGET = target_for("cuda").target
CUDA_GPU = target_gpu(CUDA_TARGET).name


def _cli(*args: str, **kw) -> subprocess.CompletedProcess:
    # Not from the checkout's root: `python -m` puts the working directory first on sys.path, where the
    # source tree's pyspmv (without its compiled modules) would shadow the installed one.
    kw.setdefault("cwd", Path(__file__).parent)
    return subprocess.run([sys.executable, "-m", "pyspmv", *args], capture_output=True, text=True, timeout=120,
                          check=False, **kw)


def _rows(out: str) -> list[list[str]]:
    """The table rows of `pyspmv rank`'s output for one matrix (not the '#' lines, not the column header):
    rank, config, predicted_us, vs_pick[, mark]."""
    lines = [ln for ln in out.splitlines() if ln and not ln.startswith("#")]
    assert lines[0].split() == ["rank", "config", "predicted_us", "vs_pick", "mark"]
    return [ln.split(maxsplit=4) for ln in lines[1:]]


def _tables(out: str) -> list[str]:
    """`pyspmv rank`'s output split into its tables, one per matrix (each from its '# matrix' line)."""
    parts = out.split("# matrix ")
    assert parts[0] == ""
    return ["# matrix " + p for p in parts[1:]]


def test_features_of_a_file(tmp_path, capsys):
    scipy.io.mmwrite(tmp_path / "m.mtx", sp.random(20, 20, density=0.2, random_state=0))
    assert main(["features", str(tmp_path / "m.mtx"), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["matrix"] == "m" and out["nrows"] == 20


def test_features_of_a_generated_matrix(capsys):
    assert main(["features", "--generate", "poisson2d:10"]) == 0
    assert "nnz_max" in capsys.readouterr().out


def test_bench_writes_csv(tmp_path, capsys):
    """The table a person reads is in µs (issue 51: it was ms with 4 decimals, 0.0009); the CSV keeps benchmark()'s
    documented columns, median_ms and the others."""
    out = tmp_path / "b.csv"
    assert main(["bench", "--generate", "banded:200", "--config", "cpu/csr/rows", "--config", "cpu/ell",
                 "--repeats", "5", "--quiet", "--out", str(out)]) == 0
    text = capsys.readouterr().out
    assert "cpu/csr/rows" in text and "times in µs" in text.splitlines()[0]
    head = text.splitlines()[1].split()
    assert head == ["config", "median_us", "q25_us", "q75_us", "repeats", "convert_us"]
    assert out.read_text().count("\n") == 3
    csv = pd.read_csv(out).set_index("config")
    assert {"median_ms", "q25_ms", "q75_ms", "convert_ms"} <= set(csv.columns)
    shown = {ln.split()[0]: float(ln.split()[1]) for ln in text.splitlines()[2:]}
    for cfg, us in shown.items():
        assert us == pytest.approx(csv.loc[cfg, "median_ms"] * 1e3, abs=1e-3)


def test_warnings_are_one_line_without_a_path(monkeypatch, capsys):
    """Every command says a warning as `pyspmv: warning: ...` (a model of another machine: `pyspmv: note: ...`), with
    no file and line before it; one not of pyspmv's own names its category. Python's filters hold again after."""
    import warnings

    from pyspmv.cli import features

    def warns(args):
        warnings.warn("timings   spread\n  widely", pyspmv.NoisyTimingWarning, stacklevel=1)
        warnings.warn("measured elsewhere", pyspmv.OtherMachineWarning, stacklevel=1)
        warnings.warn("overflow in exp", RuntimeWarning, stacklevel=1)
        return 0

    monkeypatch.setattr(features, "run", warns)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", pyspmv.NoisyTimingWarning)   # said anyway: it is about the result printed
        warnings.simplefilter("default", RuntimeWarning)
        before = warnings.showwarning
        assert main(["features", "--generate", "poisson2d:5"]) == 0
        assert warnings.showwarning is before
    err = capsys.readouterr().err.splitlines()
    assert err == ["pyspmv: warning: timings spread widely", "pyspmv: note: measured elsewhere",
                   "pyspmv: warning: overflow in exp (RuntimeWarning)"]


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


def test_bench_back_to_back_is_passed_on_and_refused_on_the_cpu(capsys):
    """--back-to-back K reaches benchmark(): on the CPU anything but 1 is an error that names the parameter; with a GPU,
    a run of K products is timed."""
    assert main(["bench", "--generate", "poisson2d:5", "--config", "cpu/coo", "--back-to-back", "4", "--quiet"]) == 2
    assert "'back_to_back' parameter of benchmark() must be 1 on device='cpu'" in capsys.readouterr().err
    if gpu.available():
        assert main(["bench", "--generate", "poisson2d:5", "--config", "pyspmv/csr/scalar", "--back-to-back", "4",
                     "--repeats", "3", "--quiet"]) == 0
        assert "pyspmv/csr/scalar" in capsys.readouterr().out


def test_rank_prints_a_labelled_table(capsys):
    """Title (matrix, dtype, n_calls), what the ranking is for (the model, the GPU it was measured on, whether
    this machine has it, the pick's predicted gain over cuSPARSE's CSR default: issue 51), a column header with
    the unit, the top 10 by default, then what the order and the marks mean."""
    assert main(["rank", "--generate", "poisson2d:20"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    title, head = lines[0], lines[1:lines.index(next(ln for ln in lines if ln.startswith("rank ")))]
    for what in ("poisson2d_20", "float64", "--n-calls"):
        assert what in title
    assert head[0] == f"# for: cuda as measured on {CUDA_GPU}, by the shipped cuda default ({DEFAULT_FILES[CUDA_TARGET]})"
    if not gpu.available():
        assert head[1].startswith("# No usable GPU here (") and "--device cpu" in head[1]
    r = pyspmv.rank(pyspmv.generate("poisson2d", 20))
    b = r.baseline
    assert b is not None and b.config == "cusparse/csr/default" and b.gain > 1
    assert head[2].startswith(f"# baseline cusparse/csr/default: rank {b.rank} of {len(r)}, predicted "
                              f"{b.predicted * 1e3:.3f} µs; the pick is predicted ")
    assert f"{b.gain:.2f}x faster" in head[2]
    rows = _rows(out)
    assert len(rows) == TOP_DEFAULT and [r[0] for r in rows] == [str(i) for i in range(1, 11)]
    us = [float(r[2]) for r in rows]
    assert 0.5 < us[0] < 1e3                                # microseconds, not ms
    assert [row[1] for row in rows] == [c for c, _ in r[:TOP_DEFAULT]]
    assert us[0] == pytest.approx(r[0][1] * 1e3, abs=1e-3)
    assert rows[0][3:] == ["+0.0%", "pick"]
    notes = [ln for ln in out.splitlines() if ln.startswith("# ")][1 + len(head):]
    assert "fastest predicted first" not in out
    assert notes[1].startswith("# order: by predicted time, except that") and "bytes" in notes[1]


def test_rank_marks_ties_and_gives_the_tail_as_order_only(capsys):
    """The cuda default on a power-law matrix: block-size variants within the measured error of the pick are
    ties, predictions beyond its readable gap are printed without a time, each mark explained once below."""
    p = pyspmv.default_model("cuda").precision               # the shipped default's own record (the H200's here)
    assert main(["rank", "--generate", "powerlaw:2000", "--top", "all"]) == 0
    out = capsys.readouterr().out
    rows = _rows(out)
    marks = [r[4] if len(r) > 4 else "" for r in rows]
    assert marks[0] == "pick" and "tie" in marks and "order only" in marks and "n/a" in marks
    pick = float(rows[0][2])
    for r, m in zip(rows, marks, strict=True):
        if m == "tie":
            assert float(r[2]) <= pick * (1 + p.tie_tol) + 1e-3
        elif m == "order only":
            assert r[2] == "-" and r[3] == f">+{100 * (p.max_gap - 1):.0f}%"
        elif m == "":
            assert pick * (1 + p.tie_tol) < float(r[2]) <= pick * p.max_gap + 1e-3
    ties = [r[1] for r, m in zip(rows, marks, strict=True) if m in ("pick", "tie")]
    assert ties == pyspmv.rank(pyspmv.generate("powerlaw", 2000)).ties()
    for note in (f"# tie: predicted at most {100 * p.tie_tol:.1f}%", "# order only: predicted more than 1.5x",
                 "# n/a: cannot serve"):
        assert out.count(note) == 1
    assert re.search(r"rank_table_\w+\.md", p.source).group(0) in out


def test_rank_ranks_several_files(tmp_path, capsys):
    """FILE...: one table per file in the order given (after --generate), each with its own title."""
    for name, n in (("a", 30), ("b", 60)):
        scipy.io.mmwrite(tmp_path / f"{name}.mtx", sp.random(n, n, density=0.1, random_state=n, format="csr")
                         + sp.eye(n))
    files = [str(tmp_path / "a.mtx"), str(tmp_path / "b.mtx")]
    assert main(["rank", *files, "--device", "cpu", "--top", "3"]) == 0
    tables = _tables(capsys.readouterr().out)
    assert [t.splitlines()[0].split()[2] for t in tables] == files          # the file as given: two may share a name
    assert [len(_rows(t)) for t in tables] == [3, 3]
    assert main(["rank", "--generate", "poisson2d:10", *files, "--device", "cpu", "--top", "2"]) == 0
    assert [t.splitlines()[0].split()[2].rstrip(":") for t in _tables(capsys.readouterr().out)] == ["poisson2d_10",
                                                                                                      *files]


def test_rank_goes_on_past_a_file_it_cannot_read(tmp_path, capsys):
    """A missing file is one error line naming it and exit status 2; the other files are still ranked."""
    scipy.io.mmwrite(tmp_path / "a.mtx", sp.eye(20, format="csr"))
    assert main(["rank", str(tmp_path / "nope.mtx"), str(tmp_path / "a.mtx"), "--device", "cpu", "--top", "1"]) == 2
    out, err = capsys.readouterr()
    assert len(_tables(out)) == 1 and f"# matrix {tmp_path / 'a.mtx'} (a): " in out
    assert err.count("pyspmv: error:") == 1 and "nope.mtx" in err
    assert main(["rank", str(tmp_path / "nope.mtx"), str(tmp_path / "a.mtx"), "--device", "cpu", "--json"]) == 2
    r = json.loads(capsys.readouterr().out)
    assert r[0]["file"].endswith("nope.mtx") and "no such file" in r[0]["error"] and r[1]["matrix"] == "a"
    assert main(["rank", "--device", "cpu"]) == 2
    assert "give one or more Matrix Market FILEs" in capsys.readouterr().err


def test_rank_times_are_microseconds_in_text_and_json(capsys):
    """One unit everywhere, named in the header and the JSON field: the same predicted_us both ways."""
    assert main(["rank", "--generate", "poisson2d:20", "--device", "cpu", "--top", "all"]) == 0
    text = {r[1]: r[2] for r in _rows(capsys.readouterr().out)}
    assert main(["rank", "--generate", "poisson2d:20", "--device", "cpu", "--top", "all", "--json"]) == 0
    (obj,) = json.loads(capsys.readouterr().out)
    for e in obj["ranking"]:
        assert "predicted_ms" not in e
        shown = text[e["config"]]
        assert (shown in ("-", "n/a")) if e["predicted_us"] is None else float(shown) == pytest.approx(
            e["predicted_us"], abs=1e-3)
    ms = dict(pyspmv.rank(pyspmv.generate("poisson2d", 20), device="cpu"))
    first = obj["ranking"][0]
    assert first["predicted_us"] == pytest.approx(ms[first["config"]] * 1e3, rel=1e-12)


def test_rank_top_all_and_n(capsys):
    assert main(["rank", "--generate", "poisson2d:20", "--top", "all", "--n-calls", "20"]) == 0
    out = capsys.readouterr().out
    ranked = pyspmv.default_model("cuda").tables["float64"].ranked().config_ids     # what the shipped default ranks
    assert len(_rows(out)) == len(ranked) and "20 calls" in out.splitlines()[0]
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
    """ELL and DIA cannot serve a power-law matrix: their predicted time is null, not Infinity, and their
    mark says why; order-only rows have no time either."""
    assert main(["rank", "--generate", "powerlaw:2000", "--top", "all", "--json"]) == 0

    def refuse(name: str) -> None:
        raise AssertionError(f"invalid JSON constant {name}")
    (obj,) = json.loads(capsys.readouterr().out, parse_constant=refuse)
    assert obj["matrix"] == "powerlaw_2000" and obj["file"] is None and obj["device"] == "cuda"
    p = pyspmv.default_model("cuda").precision
    assert obj["tie_tol"] == p.tie_tol and obj["order_only_beyond"] == p.max_gap == 1.5 and "bytes" in obj["order"]
    r = obj["ranking"]
    assert [e["rank"] for e in r] == list(range(1, len(r) + 1)) == list(range(1, obj["configurations"] + 1))
    missing = [e for e in r if e["mark"] == "n/a"]
    assert missing and all(e["config"].split("/")[1] in ("ell", "dia", "bsr") for e in missing)
    assert all(e["predicted_us"] is None and e["vs_pick"] is None for e in r if e["mark"] in ("n/a", "order only"))
    assert all(isinstance(e["predicted_us"], float) for e in r if e["mark"] not in ("n/a", "order only"))


def test_rank_takes_the_device_of_its_model(tmp_path, capsys):
    model = tmp_path / "cpu.pyspmv"
    assert main(["export", "--default", "cpu", "--out", str(model)]) == 0
    capsys.readouterr()
    assert main(["rank", "--generate", "poisson2d:20", "--model", str(model), "--top", "all"]) == 0
    out = capsys.readouterr().out
    assert "AMD" in out.splitlines()[1] or "cores" in out.splitlines()[1]        # the "for:" line
    assert {r[1] for r in _rows(out)} == set(pyspmv.default_model("cpu").tables["float64"].config_ids)
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
    assert "AMD EPYC" in capsys.readouterr().out.splitlines()[1]


def test_train_prints_a_short_table_with_a_legend_and_json_has_every_metric(tmp_path, capsys):
    """Issue 51: `train` printed about 40 metric keys without a legend; now the metrics that matter in a table,
    the speedups and costs (µs), a legend, and every metric with --json."""
    assert main(["train", str(TINY), "--model", "linear", "--quiet"]) == 0
    out = capsys.readouterr().out.splitlines()
    rows = [ln.split()[0] for ln in out if ln and not ln.startswith("#")][1:]
    assert rows == ["matrices", "top-1", "top-3", "within", "beyond", "pick/best"]
    assert len(out) < 16 and not any("div_median_" in ln or "l2_" in ln for ln in out)
    legend = out[-1]
    assert legend.startswith("# top-1: the pick is the measured fastest") and "pick/best:" in legend
    assert any(ln.startswith("# cost: ranking a matrix ") and " µs " in ln for ln in out)
    assert main(["train", str(TINY), "--model", "linear", "--quiet", "--json", "--out", str(tmp_path / "m")]) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["model"] == "linear" and got["out"] == str(tmp_path / "m.pyspmv") and (tmp_path / "m.pyspmv").is_file()
    held = got["held_out"]
    assert {"top1", "top3", "within<5%", "geomean_ratio", "rank_ms", "div_median", "speedup_vs_baseline",
            "best_single_config", "notes"} <= set(held) and len(held) > 25


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


def test_info_says_what_is_built_seen_and_used(capsys):
    """Version, build (CUDA or not, its compute capabilities), threads, the GPU or why none, and per device the
    model rank() uses: shipped here (PYSPMV_HOME is empty in the tests), its file, measured where, its command."""
    from pyspmv import _core
    assert main(["info"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].startswith(f"pyspmv {pyspmv.__version__} (")
    build = next(ln for ln in lines if ln.startswith("build: "))
    if _core.HAVE_NVCC:
        assert ("CUDA kernels for compute capability" in build or "CUDA kernels as PTX of compute capability" in build) \
            and _core.GPU_ARCH
    else:
        assert "without CUDA" in build and _core.GPU_ARCH == ""
    assert f"threads: {_core.omp_threads()} for the CPU kernels" in out
    gpu_line = next(ln for ln in lines if ln.startswith("gpu: "))
    if gpu.available():
        assert gpu.device_info()["name"] in gpu_line and "compute capability" in gpu_line
    else:
        assert gpu_line == f"gpu: no usable GPU: {gpu.unavailable_reason()}"
    for device, file in (("cuda", DEFAULT_FILES[CUDA_TARGET]), ("cpu", "default_cpu.pyspmv")):
        block = out.split(f"model {device}: ")[1].split("\nmodel ")[0]
        assert block.startswith("shipped default, ForestModel") and file in block
        assert "command: pyspmv train-default" in block and "calibrated: none at" in block
    assert f"measured on: {CUDA_GPU}" in out


def test_info_json_and_a_calibrated_model(tmp_path, monkeypatch, capsys):
    """--json has the same facts; a calibrated model in $PYSPMV_HOME is reported as the one in use, an
    unreadable one with the reason rank() falls back to the shipped default."""
    import hashlib

    from pyspmv.ranking.rank import reread_calibrated
    monkeypatch.setenv("PYSPMV_HOME", str(tmp_path))
    assert main(["export", "--default", "cpu", "--out", str(tmp_path / "calibrated_cpu.pyspmv")]) == 0
    (tmp_path / "calibrated_cuda.pyspmv").write_text("junk")
    reread_calibrated()
    capsys.readouterr()
    try:
        assert main(["info", "--json"]) == 0
        a = json.loads(capsys.readouterr().out)
    finally:
        reread_calibrated()
    assert a["pyspmv"]["version"] == pyspmv.__version__ and a["home"] == {"path": str(tmp_path), "set_by": "PYSPMV_HOME"}
    assert a["build"]["cuda"] == bool(pyspmv._core.HAVE_NVCC) and a["gpu"]["usable"] == gpu.available()
    cpu, cuda = a["models"]["cpu"], a["models"]["cuda"]
    assert cpu["model"] == "calibrated for this machine" and cpu["path"] == str(tmp_path / "calibrated_cpu.pyspmv")
    assert cpu["sha256"] == hashlib.sha256((tmp_path / "calibrated_cpu.pyspmv").read_bytes()).hexdigest()[:12]
    assert cuda["model"] == "shipped default" and cuda["path"].endswith(DEFAULT_FILES[CUDA_TARGET])
    assert "not a pyspmv model file" in cuda["calibrated_problem"] and cuda["measured_on"] == CUDA_GPU
    assert cuda["command"].startswith("pyspmv train-default") and cuda["dataset"] == CUDA_TARGET
    p = pyspmv.default_model("cuda", target=CUDA_TARGET).precision
    assert (cuda["tie_tol"], cuda["max_gap"]) == (p.tie_tol, p.max_gap)


def test_configs_lists_every_id_with_its_parts(capsys):
    assert main(["configs", "--device", "cpu", "--json"]) == 0
    js = json.loads(capsys.readouterr().out)
    cs = pyspmv.configs("cpu")
    assert [e["id"] for e in js] == [c.id for c in cs]
    sell = next(e for e in js if e["id"] == "cpu/sell/c=8/sigma=64")
    assert sell == {"id": "cpu/sell/c=8/sigma=64", "device": "cpu", "library": "cpu", "format": "sell", "kernel": None,
                    "params": {"c": 8, "sigma": 64}, "deterministic": True, "launches": 0,
                    "cusparse_format": None, "cusparse_alg": None}
    assert main(["configs", "--device", "cpu"]) == 0     # no cuSPARSE configuration: no enumerator columns
    assert capsys.readouterr().out.splitlines()[0].split() == ["id", "device", "library", "format", "kernel",
                                                               "params", "deterministic"]
    assert main(["configs"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["id", "device", "library", "format", "kernel", "params", "deterministic",
                              "cusparse_format", "cusparse_alg"]
    ids = [ln.split()[0] for ln in out[1:-1]]
    assert ids == [c.id for c in pyspmv.configs("cpu")] + [c.id for c in pyspmv.configs("cuda")]
    n_cpu, n_cuda = len(pyspmv.configs("cpu")), len(pyspmv.configs("cuda"))
    assert out[-1].startswith(f"# {len(ids)} configurations ({n_cpu} cpu, {n_cuda} cuda)")
    row = next(ln for ln in out if ln.startswith("pyspmv/csr/vector/tpv=8/bs=256 "))
    det = "yes" if pyspmv.config("pyspmv/csr/vector/tpv=8/bs=256").deterministic else "no"
    assert row.split()[1:] == ["cuda", "pyspmv", "csr", "vector", "tpv=8", "bs=256", det, "-", "-"]
    row = next(ln for ln in out if ln.startswith("cusparse/sell/alg1/c=8 "))
    assert row.split()[1:] == ["cuda", "cusparse", "sell", "alg1", "c=8", "yes", "CUSPARSE_FORMAT_SLICED_ELLPACK",
                               "CUSPARSE_SPMV_SELL_ALG1"]
    assert main(["configs", "--device", "cuda", "--json"]) == 0
    js = {e["id"]: e for e in json.loads(capsys.readouterr().out)}
    assert (js["cusparse/bsr/b=4"]["cusparse_format"], js["cusparse/bsr/b=4"]["cusparse_alg"]) == (
        "CUSPARSE_FORMAT_BSR", "CUSPARSE_SPMV_BSR_ALG1")
    assert js["pyspmv/csr/scalar/bs=64"]["cusparse_alg"] is None


def test_train_default_never_writes_into_the_package(tmp_path, monkeypatch, capsys):
    """--out inside the installed package is refused before any training, by absolute or relative path, the
    shipped default's own file included; --into-package is the one way in, for the shipped datasets only."""
    pkg = Path(pyspmv.__file__).resolve().parent
    before = {p: p.stat().st_mtime_ns for p in (pkg / "data").iterdir()}
    called = []
    monkeypatch.setattr(pyspmv.training.train_default, "train", lambda *a, **k: called.append(a))
    for out in (pkg / "data" / "default_h100.pyspmv", pkg / "data" / "mine.pyspmv", pkg / "mine.pyspmv"):
        assert main(["train-default", "--dataset", "h100", "--out", str(out), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert "inside the installed pyspmv package" in err and "--into-package" in err
    monkeypatch.chdir(pkg.parent)
    assert main(["train-default", "--dataset", "cpu", "--out", "pyspmv/data/default_cpu.pyspmv"]) == 2
    assert "inside the installed pyspmv package" in capsys.readouterr().err
    assert main(["train-default", "--dataset", "cpu", "--into-package", "--out", str(tmp_path / "m.pyspmv")]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["train-default", "--dataset", str(TINY), "--into-package"]) == 2
    assert "shipped defaults only" in capsys.readouterr().err
    assert called == [] and {p: p.stat().st_mtime_ns for p in (pkg / "data").iterdir()} == before


def test_train_default_writes_to_pyspmv_home_by_default(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    monkeypatch.setenv("PYSPMV_HOME", str(home))
    real = pyspmv.training.train_default.train
    monkeypatch.setattr(pyspmv.training.train_default, "train",
                        lambda dataset, kind, seed, **kw: real(str(TINY), "linear", seed, **kw))
    assert main(["train-default", "--dataset", "cpu", "--quiet"]) == 0
    err = capsys.readouterr().err
    out = home / "default_cpu.pyspmv"
    assert out.is_file() and str(out) in err and "--model" in err
    meta = pyspmv.load_model(out).meta
    assert meta["command"] == "pyspmv train-default --dataset cpu --quiet"
    assert meta["model_version"].startswith(f"pyspmv {pyspmv.__version__}, trained 20")  # shown by pyspmv info
