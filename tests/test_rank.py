"""rank()'s Ranking as its tables show it: ties of the pick, order-only rows, the order in words."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import math
import pickle
import re
from pathlib import Path

import numpy as np
import pytest

import pyspmv
from pyspmv.devices import gpu
from pyspmv.ranking.precision import TARGET_PRECISION
from pyspmv.ranking.rank import DEFAULT_PRECISION, Precision, Ranking
from pyspmv.ranking.rankmodel import RankModel, Table
from pyspmv.ranking.targets import target_for, target_gpu

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
TINY = Path(__file__).resolve().parent / "data" / "tiny_cpu"
P = Precision(0.02, 1.5, "a test")


def test_marks_follow_the_precision():
    """pick; tie within tie_tol (or predicted faster, ranked below for its bytes); a time up to max_gap;
    order only beyond; n/a for inf."""
    r = Ranking([("a", 1.0), ("b", 0.99), ("c", 1.02), ("d", 1.03), ("e", 1.5), ("f", 1.51), ("g", math.inf)],
                device="cuda", precision=P, bytes_pow=0.05)
    rows = r.rows()
    assert [x.mark for x in rows] == ["pick", "tie", "tie", "", "", "order only", "n/a"]
    assert [x.predicted for x in rows] == [1.0, 0.99, 1.02, 1.03, 1.5, None, None]
    assert rows[3].vs_pick == pytest.approx(1.03) and rows[5].vs_pick is None
    assert r.ties() == ["a", "b", "c"] and r.rows(2) == rows[:2]
    assert r == [("a", 1.0), ("b", 0.99), ("c", 1.02), ("d", 1.03), ("e", 1.5), ("f", 1.51), ("g", math.inf)]
    assert "fewer bytes" in r.order and "fastest first" not in r.order
    notes = r.notes()
    assert len(notes) == 3 and notes[0].startswith("tie: predicted at most 2.0% slower") and "a test" in notes[0]
    assert notes[1].startswith("order only: predicted more than 1.5x") and notes[2].startswith("n/a")
    assert [n.split(":")[0] for n in r.notes(r.rows(2))] == ["tie"]


def test_a_ranking_pickled_under_its_old_module_loads():
    """Rankings pickled before the result and the precision had files of their own name pyspmv.ranking.rank."""
    r = pyspmv.rank(pyspmv.generate("poisson2d", 12), device="cpu")
    new = pickle.dumps(r, protocol=0)
    assert b"pyspmv.ranking.result\nRanking\n" in new and b"pyspmv.ranking.precision\nPrecision\n" in new
    old = new.replace(b"pyspmv.ranking.result\n", b"pyspmv.ranking.rank\n").replace(
        b"pyspmv.ranking.precision\n", b"pyspmv.ranking.rank\n")
    back = pickle.loads(old)
    assert type(back) is Ranking and back == r and back.precision == r.precision and repr(back) == repr(r)


def test_without_a_measured_error_nothing_is_marked_a_tie():
    r = Ranking([("a", 1.0), ("b", 1.001), ("c", 9.0)])
    assert [x.mark for x in r.rows()] == ["pick", "", ""] and r.ties() == ["a"]
    assert r.order == "by predicted time, fastest first" and "no ties marked" in r.notes()[0]
    s = Ranking([("a", 0.1), ("b", 0.2)], score="score", precision=P)
    assert [(x.vs_pick, x.mark) for x in s.rows()] == [(None, "pick"), (None, "")] and "score" in s.order
    assert Ranking().rows() == [] and Ranking().ties() == []


def test_rank_carries_the_precision_of_its_model():
    """The shipped forests (and a ForestModel of the user's) get their target's or device's measured figures; other kinds
    none."""
    A = pyspmv.generate("powerlaw", 2000)
    assert pyspmv.rank(A).precision == TARGET_PRECISION["h200"]            # no GPU here: the newest, the H200's
    r = pyspmv.rank(A, target="h100")
    assert r.precision == DEFAULT_PRECISION["cuda"] and r.bytes_pow == 0.05
    assert pyspmv.rank(A, device="cpu").precision == DEFAULT_PRECISION["cpu"]
    ds = pyspmv.datasets.load(TINY, dtype="float64")
    lin = pyspmv.models.LinearModel(select=False).fit(ds.X, ds.y, ds.groups)
    assert pyspmv.rank(A, lin, device="cpu").precision is None
    ties = r.ties()
    assert 1 < len(ties) < len(r) and ties == [c for c, _ in r[:len(ties)]]
    first = r[0][1]
    assert all(ms <= first * (1 + r.precision.tie_tol) for c, ms in r if c in ties)
    html = r._repr_html_()
    for s in ("tie", "order only", "fewer bytes", "rank_table_h100.md", "predicted_us"):
        assert s in html


@pytest.mark.parametrize("p, name", [(DEFAULT_PRECISION["cuda"], "h100"), (DEFAULT_PRECISION["cpu"], "cpu"),
                                     (TARGET_PRECISION["h200"], "h200")])
def test_the_figures_are_the_measured_ones(p, name):
    """DEFAULT_PRECISION and TARGET_PRECISION hold what benchmarks/rank_table.py measured (its committed report)."""
    text = (RESULTS / f"rank_table_{name}.md").read_text(encoding="utf-8")
    tol = float(re.search(r"\*\*Tie tolerance: ([0-9.]+) %\*\*", text).group(1)) / 100
    gap = float(re.search(r"\*\*Predicted times read as times up to g_pred = ([0-9.]+)\*\*", text).group(1))
    assert (p.tie_tol, p.max_gap) == (pytest.approx(tol), gap)
    assert f"rank_table_{name}.md" in p.source


def _hex(pairs):
    return [(c, float(v).hex()) for c, v in pairs]


MATRICES = [("poisson2d", 30), ("powerlaw", 3000), ("banded", 2000), ("random", 1500)]


@pytest.mark.parametrize("device", ["cuda", "cpu"])
@pytest.mark.parametrize("dtype", ["float64", "float32"])
def test_libraries_keep_the_whole_rankings_order_and_predictions(device, dtype):
    """rank(libraries=...) is the whole ranking filtered to those libraries, bit for bit, for the shipped defaults,
    alone and with deterministic and n_calls; best_of_all is the whole ranking's first."""
    libs = {"cuda": ["cusparse", "pyspmv"], "cpu": ["cpu"]}[device]
    for kind, n in MATRICES:
        A = pyspmv.generate(kind, n)
        for kw in ({}, {"deterministic": True}, {"n_calls": 20}):
            full = pyspmv.rank(A, device=device, dtype=dtype, **{k: v for k, v in kw.items() if k != "deterministic"})
            for lib in libs:
                r = pyspmv.rank(A, device=device, dtype=dtype, libraries=(lib,), **kw)
                want = [(c, v) for c, v in full if pyspmv.config(c).library == lib
                        and (not kw.get("deterministic") or pyspmv.config(c).deterministic)]
                assert _hex(r) == _hex(want) and r, (kind, lib, kw)
                assert r.libraries == (lib,) and r.deterministic == bool(kw.get("deterministic"))
                if len(r) < len(full):
                    assert r.best_of_all == full[0] and r.best == want[0][0]
                else:                   # the cpu device: one library, every kernel deterministic, nothing left out
                    assert r.best_of_all is None and device == "cpu"
            if device == "cuda":                            # both libraries: the whole ranking, nothing left out
                both = pyspmv.rank(A, device=device, dtype=dtype, libraries=("cusparse", "pyspmv"),
                                   **{k: v for k, v in kw.items() if k != "deterministic"})
                assert _hex(both) == _hex(full) and both.best_of_all is None and both.libraries == ("pyspmv", "cusparse")


def test_libraries_arguments():
    A = pyspmv.generate("poisson2d", 20)
    r = pyspmv.rank(A, libraries="cusparse")
    assert r == pyspmv.rank(A, libraries=["cusparse"]) == pyspmv.rank(A, libraries=("cusparse", "cusparse"))
    assert {pyspmv.config(c).library for c, _ in r} == {"cusparse"} and len(r) == 10
    assert all(pyspmv.config(c).cusparse_alg.startswith("CUSPARSE_SPMV_") for c, _ in r)
    for bad in ((), ("cuSPARSE",), ("cusparse", 3), 3, ("mkl",), [None]):
        with pytest.raises(ValueError, match=r"The 'libraries' parameter of rank\(\) must be None or a non-empty "
                                             r"tuple of library names from \('cpu', 'pyspmv', 'cusparse'\)"):
            pyspmv.rank(A, libraries=bad)
    with pytest.raises(ValueError, match=r"names \['cpu'\], which have no configuration on device 'cuda': its "
                                         r"libraries are \('pyspmv', 'cusparse'\)"):
        pyspmv.rank(A, libraries=("cpu", "cusparse"))
    with pytest.raises(ValueError, match="on device 'cpu'"):
        pyspmv.rank(A, device="cpu", libraries="cusparse")
    d = pyspmv.default_model("cuda")
    t = d.tables["float64"]
    lib = np.array([pyspmv.config(c).library for c in t.config_ids])
    no_cusparse = RankModel("cuda", {"float64": Table(t.config_ids, np.where(lib == "cusparse", -1, t.group), t.extra,
                                                      t.spec)}, source=d.source, meta=d.meta)
    with pytest.raises(ValueError, match=r"asks for \('cusparse',\), of which the model ranks no configuration"):
        pyspmv.rank(A, no_cusparse, libraries="cusparse")
    assert {pyspmv.config(c).library for c, _ in pyspmv.rank(A, no_cusparse, libraries="pyspmv")} == {"pyspmv"}


def test_a_restricted_ranking_counts_order_only_from_the_best_of_all():
    """Ties from the pick; 'order only' beyond max_gap times best_of_all's prediction; a pick beyond it is said."""
    best = ("own", 1.0)
    r = Ranking([("a", 1.2), ("b", 1.21), ("c", 1.49), ("d", 1.51), ("e", math.inf)], device="cuda", precision=P,
                libraries=("cusparse",), best_of_all=best)
    rows = r.rows()
    assert [x.mark for x in rows] == ["pick", "tie", "", "order only", "n/a"]
    assert rows[2].vs_pick == pytest.approx(1.49 / 1.2) and r.order_only_beyond == pytest.approx(1.5 / 1.2)
    notes = r.notes()
    assert notes[0].startswith("only the cusparse configurations (libraries=('cusparse',)); the best of all the "
                               "device's configurations, own, is predicted to take 0.83x the pick's time")
    assert "order only: predicted more than 1.5x the time of the best of all, own (1.25x the pick's)" in notes[2]
    slow = Ranking([("a", 1.6), ("b", 1.61)], device="cuda", precision=P, deterministic=True, best_of_all=best)
    assert [(x.mark, x.predicted) for x in slow.rows()] == [("pick", 1.6), ("order only", None)]
    assert "only the deterministic configurations (deterministic=True)" in slow.notes()[0]
    assert "the pick's predicted time is an order only" in slow.notes()[0]
    same = Ranking([("own", 1.0), ("b", 1.01)], precision=P, deterministic=True, best_of_all=best)
    assert "the pick is also the best of all" in same.notes()[0] and [x.mark for x in same.rows()] == ["pick", "tie"]
    assert same.order_only_beyond == 1.5 == Ranking([("a", 1.0)], precision=P).order_only_beyond
    whole = Ranking([("a", 1.0), ("b", 1.6)], precision=P)
    assert whole.libraries is None and whole.best_of_all is None and not whole.deterministic
    assert not any(n.startswith("only") for n in whole.notes())


def test_a_ranking_says_what_it_is_for():
    """Issue 51: a ranking names its device, model and the machine the model was measured on, says whether this
    machine has that device, and gives the pick's predicted gain over cuSPARSE's CSR default (the CPU's
    row-parallel CSR on the CPU): in its repr, its notes above the table, and to_frame().attrs."""
    A = pyspmv.generate("poisson2d", 60)
    r = pyspmv.rank(A)
    target = target_for("cuda").target
    assert r.model == f"the shipped cuda default (default_{target}.pyspmv)" and r.measured_on == target_gpu(target).name
    if not gpu.available():
        assert r.here.startswith("no usable GPU here (") and "device='cpu'" in r.here
    b = r.baseline
    i = [c for c, _ in r].index("cusparse/csr/default")
    assert b.config == "cusparse/csr/default" and b.rank == i + 1 and b.predicted == r[i][1]
    assert b.gain == pytest.approx(r[i][1] / r[0][1])
    assert b.understated == (b.gain > r.order_only_beyond)
    assert target_gpu(target).name in repr(r) and f"{b.gain:.2f}x faster than 'cusparse/csr/default'" in repr(r)
    lines = r.purpose()
    assert lines[0].startswith(f"for: cuda as measured on {target_gpu(target).name}") and lines[-1].startswith("baseline cusparse")
    attrs = r.to_frame().attrs
    assert attrs["model"] == r.model and attrs["here"] == r.here and attrs["baseline"]["config"] == b.config
    assert "for: cuda" in r._repr_html_()
    c = pyspmv.rank(A, device="cpu")
    assert c.baseline.config == "cpu/csr/rows" and c.here and "cpu as measured on" in c.purpose()[0]
    assert pyspmv.rank(A, libraries=("pyspmv",)).baseline is None       # not among what it lists
    assert Ranking([("a", 1.0)]).here is None and Ranking([("a", 1.0)]).baseline is None


def test_a_model_file_ranks_under_its_path(tmp_path):
    path = tmp_path / "m.pyspmv"
    pyspmv.save_model(pyspmv.default_model("cpu"), path)
    r = pyspmv.rank(pyspmv.generate("poisson2d", 10), model=pyspmv.load_model(path))
    assert r.model == f"the model file {str(path)!r}"
