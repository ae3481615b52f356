"""Model files with a bounded cost (issue 33, item 7): what reading, ranking with and exporting a model may
take is checked before it is done, and refused with the figure and the limit; long model calls stop on
Ctrl-C. Each hang or blow-up of the issue is reproduced here at a size that keeps the test fast."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import errno
import json
import re
import shutil
import signal
import subprocess
import sys
import textwrap
import time
import tracemalloc
import zipfile

import numpy as np
import pytest

import pyspmv
from pyspmv import _core
from pyspmv.cli import main
from pyspmv.devices import machine
from pyspmv.matrices.configs import configs
from pyspmv.ranking import export, modelfile
from pyspmv.ranking.rank import reread_calibrated
from pyspmv.ranking.rankmodel import RankModel, Table
from pyspmv.ranking.spec import Spec, inputs

LIMIT = _core.MODEL_MAX_STEPS
CC = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")


def chain_model(depth: int, ntrees: int, ranked: int | None = None, spread: int = 1) -> RankModel:
    """A trees model of one group whose ``ntrees`` trees all start at node 0 of one chain of ``depth``
    nodes (every input goes on to the next), ranking the first ``ranked`` cpu configurations (None: all).
    ``spread`` > 1 places the chain's nodes at random increasing places among ``depth * spread`` nodes,
    so that each step of a walk misses the cache."""
    ids = [c.id for c in configs("cpu")]
    nnodes = depth * spread
    at = np.arange(depth, dtype=np.int32)
    if spread > 1:
        rest = np.random.default_rng(0).choice(np.arange(1, nnodes), depth - 1, replace=False)
        at = np.concatenate([[0], np.sort(rest)]).astype(np.int32)
    feature = np.full(nnodes, -1, np.int32)
    nxt = np.zeros(nnodes, np.int32)
    feature[at[:-1]] = 0
    nxt[at[:-1]] = at[1:]
    f = {"ngroups": 1, "ncols": _core.NCOLS, "ninputs": 1, "out_tf": 0, "out_col": -1, "out_lo": -np.inf,
         "rank_bytes_pow": 0.0, **inputs([0]),
         "trees.nout": 1, "trees.ntrees": ntrees, "trees.nnodes": nnodes, "trees.cast_f32": 0, "trees.scale": 1.0,
         "trees.tree_ptr": np.array([0, ntrees], np.int32), "trees.root": np.zeros(ntrees, np.int32),
         "trees.feature": feature, "trees.left": nxt, "trees.right": nxt.copy(),
         "trees.threshold": np.full(nnodes, 1e300), "trees.value": np.ones(nnodes), "trees.init": np.zeros(1)}
    group = np.zeros(len(ids), np.int32)
    if ranked is not None:
        group[ranked:] = -1
    return RankModel("cpu", {"float64": Table(ids, group, np.zeros((len(ids), 0)), Spec("trees", f))},
                     source="chain")


def test_a_chain_under_many_roots_is_refused_with_its_cost(tmp_path):
    """The issue's 84 KB file held 2e8 roots of one 1e5-node chain: 2e13 node walks (15 hours) in one
    C call. A tenth of a thousandth of it (2e4 roots: 2e9 walks, 4 s before) is refused at load."""
    path = pyspmv.save_model(chain_model(100_000, 20_000), tmp_path / "chain.pyspmv")
    t = time.perf_counter()
    with pytest.raises(ValueError, match=rf"up to 2000000003 steps .* past the limit of {LIMIT} "
                                         r"\(SPMV_MODEL_MAX_STEPS\)"):
        pyspmv.load_model(path)
    assert time.perf_counter() - t < 2


def test_the_cost_counts_every_configuration_ranked(tmp_path):
    """2e7 steps a row is allowed, but the CPU's 25 configurations make a ranking of 5e8: refused, saying so."""
    n = len(pyspmv.configs("cpu"))
    path = pyspmv.save_model(chain_model(100_000, 200), tmp_path / "chain.pyspmv")
    with pytest.raises(ValueError, match=rf"ranking one matrix takes up to {20_000_003 * n} steps .*20000003 per "
                                         rf"configuration x {n} configurations\), past the limit of {LIMIT}"):
        pyspmv.load_model(path)
    ok = pyspmv.load_model(pyspmv.save_model(chain_model(100_000, 100), tmp_path / "ok.pyspmv"))
    assert _core.model_cost(ok.capsule("float64")) == (10_000_003, n)


def test_the_shipped_defaults_cost_a_fraction_of_the_limit():
    """Each shipped default costs at most a hundredth of the limit (the H200's, 234 configurations and trees of
    8,093 steps, 1.9e6; the H100's 6.7e5; the cpu's under 2e5)."""
    for target, most in (("cpu", 200_000), ("h100", 700_000), ("h200", 2_000_000)):
        for dtype in ("float32", "float64"):
            steps, n = _core.model_cost(pyspmv.default_model(target=target).capsule(dtype))
            assert steps * n <= most < LIMIT / 100, (target, dtype, steps, n)


def test_rank_and_export_refuse_a_costly_model_made_in_python(tmp_path):
    """A RankModel that never went through a file meets the same bound in rank() and export_c()."""
    rm = chain_model(100_000, 20_000)
    A = pyspmv.generate("random", 50, seed=1)
    with pytest.raises(ValueError, match="SPMV_MODEL_MAX_STEPS"):
        pyspmv.rank(A, model=rm)
    with pytest.raises(ValueError, match="SPMV_MODEL_MAX_STEPS"):
        pyspmv.export_c(rm, tmp_path / "chain.h")
    assert not (tmp_path / "chain.h").exists()


def test_a_member_past_the_array_limit_is_refused_before_it_is_decompressed(tmp_path, monkeypatch):
    """The 84 KB file decompressed to 0.8 GB and took 20 s and 1.7 GB to be refused. The sizes the archive
    declares are checked first (zipfile stops a member at its declared size): at 1 MiB, a chain file's
    2.4 MB of roots is refused without decompressing a byte."""
    path = pyspmv.save_model(chain_model(1000, 600_000), tmp_path / "bomb.pyspmv")
    assert path.stat().st_size < 100_000
    monkeypatch.setattr(modelfile, "MAX_MODEL_BYTES", 1 << 20)

    def no_decompressing(*args, **kwargs):
        raise AssertionError("a member was opened")
    monkeypatch.setattr(zipfile.ZipFile, "open", no_decompressing)
    with pytest.raises(ValueError, match=r"would decompress to \d+ bytes or more \(member "
                                         r"'float64/spec/trees.root.npy' declares 2400128\), past 1048576 bytes, "
                                         "pyspmv's limit MAX_MODEL_BYTES"):
        pyspmv.load_model(path)


def test_a_header_past_its_limit_is_refused_before_it_is_decompressed(tmp_path):
    """800 MB of spaces in header.json were read and parsed (2.5 GB at the peak); past 16 MiB they are
    refused from the archive's directory."""
    good = pyspmv.save_model(chain_model(10, 1), tmp_path / "good.pyspmv")
    with np.load(good) as z:
        arrays = {k: z[k] for k in z.files}
    text = bytes(arrays.pop("header.json")) + b" " * (modelfile.MAX_HEADER_BYTES + 65536)
    bad = tmp_path / "spaces.pyspmv"
    with open(bad, "wb") as fh:
        np.savez_compressed(fh, **{"header.json": np.frombuffer(text, np.uint8)}, **arrays)
    assert bad.stat().st_size < 1 << 20
    t = time.perf_counter()
    with pytest.raises(ValueError, match=rf"'header.json' would decompress to \d+ bytes; a model file's header "
                                         rf"holds at most {modelfile.MAX_HEADER_BYTES} \(MAX_HEADER_BYTES\)"):
        pyspmv.load_model(bad)
    assert time.perf_counter() - t < 0.5


def test_a_repeated_id_among_many_is_found_in_linear_time(tmp_path):
    """40,000 configuration ids, the last one repeated, took the duplicate check 22 s (names.count())."""
    n = 40_000
    ids = [f"c{i}" for i in range(n - 1)] + [f"c{n - 2}"]
    f = {"ngroups": 1, "ncols": 1, "ninputs": 0, "out_tf": 0, "out_col": -1, "out_lo": -np.inf,
         "rank_bytes_pow": 0.0, **inputs([]), "coef": np.zeros(0), "intercept": np.zeros(1)}
    arrays = {"float64/group": np.zeros(n, np.int32), "float64/extra": np.zeros((n, 0)),
              **{f"float64/spec/{k}": v for k, v in f.items() if isinstance(v, np.ndarray)}}
    scalars = {k: v for k, v in f.items() if not isinstance(v, np.ndarray)}
    header = {"format": "pyspmv-model", "version": 2, "pyspmv": pyspmv.__version__, "device": None, "source": "",
              "score": "ms", "gpu": {"sm_count": 132, "threads_per_sm": 2048, "warp_size": 32}, "meta": {},
              "feature_names": ["f"], "row_columns": [], "features": ["f"],
              "tables": {"float64": {"config_ids": ids, "spec": {"kind": "linear", "scalars": scalars, "subs": []}}}}
    path = tmp_path / "dup.pyspmv"
    with open(path, "wb") as fh:
        np.savez(fh, **{"header.json": np.frombuffer(json.dumps(header).encode(), np.uint8)}, **arrays)
    t = time.perf_counter()
    with pytest.raises(ValueError, match=f"lists configuration id 'c{n - 2}' twice"):
        pyspmv.load_model(path)
    assert time.perf_counter() - t < 2


def test_a_model_that_ranks_no_configuration_says_so(tmp_path):
    """A file whose every group is -1 loaded, and then rank() and export_c() raised pandas' KeyError
    "None of [Index(['p_tpv', ...])] are in the [columns]"."""
    good = pyspmv.save_model(chain_model(10, 1), tmp_path / "good.pyspmv")
    with np.load(good) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["float64/group"][:] = -1
    path = tmp_path / "none.pyspmv"
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    with pytest.raises(ValueError, match=r"Model file .*none.pyspmv' \(float64\) ranks no configuration: its array "
                                         rf"'group' is -1 for all {len(pyspmv.configs('cpu'))} configuration ids"):
        pyspmv.load_model(path)
    rm = chain_model(10, 1)
    rm.tables["float64"].group[:] = -1
    with pytest.raises(ValueError, match=r"The model RankModel\(chain, .*\) ranks no configuration for float64"):
        pyspmv.rank(pyspmv.generate("random", 50, seed=1), model=rm)
    with pytest.raises(ValueError, match="ranks no configuration"):
        pyspmv.export_c(rm, tmp_path / "none.h")


@pytest.mark.parametrize("damage", ["truncated", "costly"])
def test_a_calibrated_model_that_fails_to_load_falls_back_to_the_default(damage, tmp_path, monkeypatch, capsys):
    """A damaged (or hostile) calibrated_cpu.pyspmv in $PYSPMV_HOME broke every rank() without a model,
    in every process, and said nothing of how to recover: now named, with how to remove it, once."""
    monkeypatch.setenv("PYSPMV_HOME", str(tmp_path))
    path = machine.calibrated_path("cpu")
    if damage == "truncated":
        path.write_bytes(pyspmv.save_model(chain_model(10, 1), tmp_path / "x.pyspmv").read_bytes()[:500])
    else:
        pyspmv.save_model(chain_model(100_000, 20_000), path)
    A = pyspmv.generate("random", 60, seed=2)
    want = pyspmv.rank(A, model=pyspmv.default_model("cpu"))
    reread_calibrated()
    try:
        with pytest.warns(pyspmv.CalibratedModelWarning,
                          match=rf"The calibrated model {re.escape(repr(str(path)))} cannot be used, so rank\(\) uses "
                                rf"the shipped default model instead: .* Remove it \(rm {re.escape(repr(str(path)))}\) "
                                r"or run `pyspmv calibrate --device cpu` again"):
            got = pyspmv.rank(A, device="cpu")
        assert got == want
        assert pyspmv.rank(A, device="cpu") == want          # once: warnings are errors here
        assert pyspmv.calibrated_model("cpu") is None
        reread_calibrated()
        assert main(["rank", "--generate", "random:60", "--device", "cpu", "--top", "1"]) == 0
        err = capsys.readouterr().err
        assert err.startswith(f"pyspmv: warning: The calibrated model {str(path)!r} cannot be used"), err
    finally:
        reread_calibrated()


def test_export_writes_in_pieces_within_a_few_mb(tmp_path):
    """export_c made the whole header as Python strings first: 16 times the model's array bytes (150 MB
    for the shipped cpu default's 9 MB; 23 GB at the old 1 GiB cap), with nothing checked."""
    rm = chain_model(100_000, 1)
    nbytes = sum(v.nbytes for v in rm.tables["float64"].spec.fields.values() if isinstance(v, np.ndarray))
    rm.capsule("float64")
    tracemalloc.start()
    try:
        pyspmv.export_c(rm, tmp_path / "chain.h")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert nbytes > 2_500_000 and peak < 12_000_000, (nbytes, peak)
    text = (tmp_path / "chain.h").read_text()
    assert text.count("static const double chain_m_trees_threshold[100000] = {") == 1
    assert "1e+300, 1e+300" in text and text.rstrip().endswith("#endif /* chain_IMPLEMENTATION */")


def test_export_checks_the_disk_first_and_leaves_no_partial_header(tmp_path, monkeypatch):
    rm = chain_model(1000, 1)
    out = tmp_path / "m.h"
    out.write_text("kept")
    real = shutil.disk_usage
    monkeypatch.setattr(shutil, "disk_usage", lambda p: real(p)._replace(free=1000))
    with pytest.raises(OSError, match=r"export_c needs up to \d+ bytes of disk for .*m.h'; 1000 are free there") as e:
        pyspmv.export_c(rm, out)
    assert e.value.errno == errno.ENOSPC
    monkeypatch.setattr(shutil, "disk_usage", real)

    def fail(self, fh):
        fh.write("static const double half")
        raise OSError(errno.EIO, "the disk went away")
    monkeypatch.setattr(export._CArray, "write", fail)
    with pytest.raises(OSError, match="the disk went away"):
        pyspmv.export_c(rm, out)
    assert out.read_text() == "kept" and sorted(p.name for p in tmp_path.iterdir()) == ["m.h"]


@pytest.mark.skipif(CC is None, reason="needs a C compiler on PATH")
def test_headers_of_names_differing_only_in_case_can_both_be_included(tmp_path):
    """abc.h and ABC.h shared the include guard ABC_H: the second included defined nothing."""
    rm = chain_model(10, 1)
    for name in ("abc", "ABC"):
        pyspmv.export_c(rm, tmp_path / f"{name}_model.h", name=name)
    (tmp_path / "both.c").write_text(
        '#define abc_IMPLEMENTATION\n#define ABC_IMPLEMENTATION\n#include "abc_model.h"\n#include "ABC_model.h"\n'
        "int both(const int32_t *ip, const int32_t *ix, double *ms);\n"
        "int both(const int32_t *ip, const int32_t *ix, double *ms) {\n"
        "    return abc_predict(1, 1, ip, ix, ms) + ABC_predict(1, 1, ip, ix, ms);\n}\n")
    r = subprocess.run([CC, "-std=c99", "-Werror", "-Wall", "-c", "-o", str(tmp_path / "both.o"),
                        str(tmp_path / "both.c")], capture_output=True, text=True, check=False, cwd=tmp_path)
    assert r.returncode == 0, r.stderr[-2000:]


# A subprocess ranks with a model inside the limit whose walks miss the cache (4.5 s on the 2-core VM),
# or predicts many rows with one; the parent sends SIGINT half a second in. Before, the one C call held
# the GIL and ran to its end: Python's handler ran after it (and the file, after 15 hours).
_CHILD = textwrap.dedent("""
    import signal, sys, time
    import numpy as np
    import pyspmv
    # Python leaves SIGINT ignored where its parent ignored it (a job started in the background by a shell):
    # the handler under test is the one Python installs by default.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    sys.path.insert(0, {tests!r})
    from test_model_cost import chain_model
    what = sys.argv[1]
    if what == "rank":
        rm = chain_model(65_000, (1 << 28) // 65_000 - 2, ranked=1, spread=30)
        A = pyspmv.generate("random", 100, seed=1)
        call = lambda: pyspmv.rank(A, model=rm)
    else:                                   # 50 rows of distinct inputs, each walking 2e8 nodes
        rm = chain_model(100_000, 2_000, ranked=1)
        rows = np.zeros((50, pyspmv._core.NCOLS))
        rows[:, 0] = np.arange(50)
        call = lambda: pyspmv._core.model_predict(rm.capsule("float64"), rows.reshape(-1), rows.shape[1],
                                                   np.zeros(50, np.int32))
    rm.capsule("float64")
    print("go", flush=True)
    t0 = time.perf_counter()
    try:
        call()
        print("finished", time.perf_counter() - t0, flush=True)
    except KeyboardInterrupt:
        print("interrupted", time.perf_counter() - t0, flush=True)
""")


@pytest.mark.skipif(sys.platform == "win32", reason="SIGINT to a subprocess")
@pytest.mark.parametrize("what", ["rank", "predict"])
def test_ctrl_c_stops_a_long_model_call(what, tmp_path):
    from pathlib import Path
    script = tmp_path / "child.py"
    script.write_text(_CHILD.format(tests=str(Path(__file__).parent)))
    p = subprocess.Popen([sys.executable, str(script), what], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    try:
        assert p.stdout is not None
        line = p.stdout.readline()
        assert line.startswith("go"), line + p.stderr.read() if p.stderr else ""
        time.sleep(0.5)
        p.send_signal(signal.SIGINT)
        out, err = p.communicate(timeout=30)
    finally:
        p.kill()
    assert out.startswith("interrupted"), out + err
    assert float(out.split()[1]) < 1.5, out                 # 4.5 s (rank), 20 s (predict) to the end
