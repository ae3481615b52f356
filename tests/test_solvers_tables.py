"""Value-table variants beside a solve's ranking (pyspmv/ranking/tables.py) and the selection that converts them
(pyspmv/solvers/switching.py's ``select(tables=True)``): which variants, their predicted times, and a refusal that
takes no candidate's place. On the host: the GPU's ranking needs no GPU, and a conversion on the host refuses as
the device's does."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

import pyspmv
from pyspmv.ranking import tables
from pyspmv.solvers import switching

JAD = "pyspmv/jad/bs=256"
START = "cusparse/csr/default"


def with_values(values: np.ndarray) -> pyspmv.Matrix:
    """The first ``values.size`` entries (row by row) of a tridiagonal pattern, holding ``values``."""
    n = (values.size + 4) // 3
    T = sp.diags([np.ones(n - 1), np.ones(n), np.ones(n - 1)], [-1, 0, 1], format="csr").tocoo()
    order = np.lexsort((T.col, T.row))[:values.size]
    return pyspmv.Matrix(sp.csr_array((values, (T.row[order], T.col[order])), shape=T.shape))


def test_table_bits_counts_the_sample_by_bits():
    assert tables.table_bits(with_values(np.resize([1.0, 2.0, 3.0], 1000))) == (8, 16)
    assert tables.table_bits(with_values(np.arange(1.0, 301.0))) == (16,)
    assert tables.table_bits(with_values(np.arange(1.0, 70_001.0))) == ()
    # 0.0 and -0.0 are two entries of a table (to_csr() gives the bits back): 255 values and both zeros are 257
    v = np.concatenate([np.arange(1.0, 256.0), [0.0, 0.0]])
    assert tables.table_bits(with_values(v)) == (8, 16)
    v[-1] = -0.0
    assert tables.table_bits(with_values(v)) == (16,)
    assert tables.table_bits(pyspmv.Matrix(sp.csr_array((3, 3)))) == (8, 16)


def test_variants_are_the_registry_s():
    assert [c.id for c in tables.variants(pyspmv.config(JAD), (8, 16))] == ["pyspmv/jad/vals=8/bs=256",
                                                                             "pyspmv/jad/vals=16/bs=256"]
    assert [c.id for c in tables.variants(pyspmv.config("cpu/jad"), (16,))] == ["cpu/jad/vals=16"]
    assert tables.variants(pyspmv.config(START), (8, 16)) == []
    assert tables.variants(pyspmv.config("pyspmv/jad/vals=8/bs=256"), (8, 16)) == []


def test_variants_join_at_their_base_s_time_times_their_bytes():
    M = pyspmv.generate("poisson2d", 60)                 # two distinct values
    ranking = [(JAD, 0.010), ("pyspmv/jad/bs=64", 0.011), (START, 0.020)]
    merged, riders = tables.with_value_tables(M, ranking, "float64")
    assert riders == {"pyspmv/jad/vals=8/bs=256": (JAD, 0.010), "pyspmv/jad/vals=16/bs=256": (JAD, 0.010)}
    moved = pyspmv.config_features(M, [JAD, *sorted(riders)], dtype="float64")["bytes_moved"]
    assert merged[0] == ("pyspmv/jad/vals=8/bs=256", pytest.approx(0.010 * moved.iloc[2] / moved.iloc[0]))
    assert dict(merged)["pyspmv/jad/vals=16/bs=256"] == pytest.approx(0.010 * moved.iloc[1] / moved.iloc[0])
    assert [c for c, _ in merged if c not in riders] == [JAD, "pyspmv/jad/bs=64", START]
    assert all(a[1] <= b[1] for a, b in zip(merged, merged[1:]))
    # no table holds them, or no ranked format keeps one: the ranking as it was
    many = with_values(np.arange(1.0, 70_001.0))
    assert tables.with_value_tables(many, ranking, "float64") == (ranking, {})
    assert tables.with_value_tables(M, ranking[2:], "float64") == (ranking[2:], {})


def test_only_jad_s_tables_join_a_solve():
    """CSR's vector and adaptive kernels keep a table too, but a solve does not probe them (:data:`tables.NOT_PROBED`):
    CSR configurations ranked first, with or without variants of their own, are passed over for the fastest JAD."""
    M = pyspmv.generate("poisson2d", 60)
    assert tables.NOT_PROBED == ("csr",)
    assert tables.variants(pyspmv.config("pyspmv/csr/adaptive/bs=128"), (8,)) != []     # CSR's exist ...
    ranking = [(START, 0.008), ("pyspmv/csr/adaptive/bs=128", 0.009), ("pyspmv/csr/merge/bs=256", 0.010),
               (JAD, 0.012), ("pyspmv/csr/vector/tpv=8/bs=256", 0.013)]
    merged, riders = tables.with_value_tables(M, ranking, "float64")
    # ... not here: JAD's only
    assert riders == {"pyspmv/jad/vals=8/bs=256": (JAD, 0.012), "pyspmv/jad/vals=16/bs=256": (JAD, 0.012)}
    assert [c for c, _ in merged if c not in riders] == [c for c, _ in ranking]
    csr_only = [c for c in ranking if not c[0].startswith("pyspmv/jad")]
    assert tables.with_value_tables(M, csr_only, "float64") == (csr_only, {})


def fixed_rank(ranking):
    def rank(M, **kwargs):
        return list(ranking)
    return rank


def test_the_selection_converts_a_variant_and_a_refusal_takes_no_place(monkeypatch):
    monkeypatch.setattr(switching, "rank", fixed_rank([(JAD, 0.010), (START, 0.020)]))
    few = with_values(np.resize([1.0, 2.0, 3.0], 600))
    sel = switching.select(few, np.dtype(np.float64), "cuda", None, 100, 1, None, tables=True)
    assert [c.config.id for c in sel.candidates] == ["pyspmv/jad/vals=8/bs=256"] and not sel.failures
    x = np.random.default_rng(0).standard_normal(few.ncols)
    assert np.allclose(sel.candidates[0].matrix.to_csr().to_scipy() @ x, few.to_scipy() @ x, rtol=1e-14)
    # the sample (every 3rd value of 2e5) sees 3 values, the whole has 400: vals=8 is refused, vals=16 serves
    v = np.resize([1.0, 2.0, 3.0], 200_000)
    v[1:1201:3] = np.arange(4.0, 404.0)
    assert tables.table_bits(with_values(v)) == (8, 16)
    asked = []

    def gate(pick_ms, now_ms):
        asked.append(pick_ms)
        return None
    current = switching.prepare(few, pyspmv.config(START), np.dtype(np.float64))
    sel = switching.select(with_values(v), np.dtype(np.float64), "cuda", None, 100, 1, current, gate=gate,
                           tables=True)
    assert [c.config.id for c in sel.candidates] == ["pyspmv/jad/vals=16/bs=256"], sel
    assert len(sel.failures) == 1 and sel.failures[0].startswith("pyspmv/jad/vals=8/bs=256 does not apply ("), sel
    # each variant (its base is ahead of what runs): again for the next after the refusal
    assert len(asked) == 2 and asked[0] < asked[1] < 0.010, asked
    # without tables: the model's pick, as before
    sel = switching.select(few, np.dtype(np.float64), "cuda", None, 100, 1, None)
    assert [c.config.id for c in sel.candidates] == [JAD]


def test_a_gate_that_holds_a_variant_converts_nothing(monkeypatch):
    monkeypatch.setattr(switching, "rank", fixed_rank([(START, 0.020), (JAD, 0.019)]))
    few = with_values(np.resize([1.0, 2.0], 3000))
    current = switching.prepare(few, pyspmv.config(START), np.dtype(np.float64))
    sel = switching.select(few, np.dtype(np.float64), "cuda", None, 100, 1, current,
                           gate=lambda pick, now: f"{pick:.4f} against {now}", tables=True)
    assert sel.ranking[0][0] == "pyspmv/jad/vals=8/bs=256" and sel.candidates == [] and sel.held.endswith("0.02")


def test_a_variant_whose_base_is_not_ahead_is_passed_over(monkeypatch):
    """A table speeds up a layout the model puts ahead of what runs; where the variant's base is within ``tol`` (the
    model's error) of it, the variant is not converted however few bytes it moves, and the gate is asked of the next
    in the ranking."""
    monkeypatch.setattr(switching, "rank", fixed_rank([(JAD, 0.0190), (START, 0.0200)]))
    few = with_values(np.resize([1.0, 2.0], 3000))
    current = switching.prepare(few, pyspmv.config(START), np.dtype(np.float64))
    asked = []

    def gate(pick_ms, now_ms):
        asked.append(pick_ms)
        return None if pick_ms < 0.95 * now_ms else "not enough"
    sel = switching.select(few, np.dtype(np.float64), "cuda", None, 100, 1, current, gate=gate, tables=True, tol=0.06)
    assert sel.ranking[0][0] == "pyspmv/jad/vals=8/bs=256" and sel.candidates == []
    assert sel.held == f"{JAD}, next in the ranking: not enough"
    assert asked == [0.0190]                            # the base itself, not the variant
    sel = switching.select(few, np.dtype(np.float64), "cuda", None, 100, 1, current, gate=gate, tables=True, tol=0.04)
    assert [c.config.id for c in sel.candidates] == ["pyspmv/jad/vals=8/bs=256"]      # 1.9 * 1.04 < 2.0
    monkeypatch.setattr(switching, "rank", fixed_rank([(JAD, 0.0150), (START, 0.0200)]))
    sel = switching.select(few, np.dtype(np.float64), "cuda", None, 100, 1, current, gate=gate, tables=True, tol=0.06)
    assert [c.config.id for c in sel.candidates] == ["pyspmv/jad/vals=8/bs=256"]
