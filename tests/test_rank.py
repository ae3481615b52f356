"""rank()'s Ranking as its tables show it: ties of the pick, order-only rows, the order in words."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest

import pyspmv
from pyspmv.ranking.rank import DEFAULT_PRECISION, Precision, Ranking

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


def test_without_a_measured_error_nothing_is_marked_a_tie():
    r = Ranking([("a", 1.0), ("b", 1.001), ("c", 9.0)])
    assert [x.mark for x in r.rows()] == ["pick", "", ""] and r.ties() == ["a"]
    assert r.order == "by predicted time, fastest first" and "no ties marked" in r.notes()[0]
    s = Ranking([("a", 0.1), ("b", 0.2)], score="score", precision=P)
    assert [(x.vs_pick, x.mark) for x in s.rows()] == [(None, "pick"), (None, "")] and "score" in s.order
    assert Ranking().rows() == [] and Ranking().ties() == []


def test_rank_carries_the_precision_of_its_model():
    """The shipped forests (and a ForestModel of the user's) get their device's measured figures; other kinds none."""
    A = pyspmv.generate("powerlaw", 2000)
    r = pyspmv.rank(A)
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
    for s in ("tie", "order only", "fewer bytes", "rank_table_h100.md", "predicted_ms"):
        assert s in html


@pytest.mark.parametrize("device, name", [("cuda", "h100"), ("cpu", "cpu")])
def test_the_figures_are_the_measured_ones(device, name):
    """DEFAULT_PRECISION holds what benchmarks/rank_table.py measured (its committed report)."""
    text = (RESULTS / f"rank_table_{name}.md").read_text(encoding="utf-8")
    tol = float(re.search(r"\*\*Tie tolerance: ([0-9.]+) %\*\*", text).group(1)) / 100
    gap = float(re.search(r"\*\*Predicted times read as times up to g_pred = ([0-9.]+)\*\*", text).group(1))
    p = DEFAULT_PRECISION[device]
    assert (p.tie_tol, p.max_gap) == (pytest.approx(tol), gap)
    assert f"rank_table_{name}.md" in p.source
