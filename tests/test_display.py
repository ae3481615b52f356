"""Rich display in Jupyter (Matrix, FormatMatrix, Dataset, rank()'s Ranking) and the pyspmv.plot helpers."""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

import sys

import numpy as np
import pandas as pd
import pytest
import scipy.sparse as sp

import pyspmv


@pytest.fixture
def A() -> pyspmv.Matrix:
    return pyspmv.generate("poisson2d", 30)


@pytest.fixture
def plt():
    mpl = pytest.importorskip("matplotlib", reason="matplotlib is not installed: pip install 'pyspmv[plot]'")
    mpl.use("Agg")
    import matplotlib.pyplot as plt
    yield plt
    plt.close("all")


def test_matrix_html_names_shape_entries_dtype(A):
    html = A._repr_html_()
    assert "900 &times; 900" in html and f"{A.nnz:,}" in html and "float64" in html and A.name in html
    assert "<img" in html or "<svg" in html


def test_matrix_html_without_matplotlib_is_svg(A, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.image", None)
    html = A._repr_html_()
    assert "<svg" in html and "<img" not in html and "900 &times; 900" in html


def test_density_counts_every_entry_and_keeps_aspect():
    S = sp.random(300, 100, density=0.05, random_state=0, format="csr")
    M = pyspmv.Matrix(S)
    g = M.density(30)
    assert g.shape == (30, 10) and g.sum() == M.nnz
    assert pyspmv.Matrix(np.eye(3)).density(64).shape == (3, 3)
    with pytest.raises(ValueError, match="'bins' parameter"):
        M.density(0)


def test_density_samples_large_matrices(A, monkeypatch):
    monkeypatch.setattr(pyspmv.Matrix, "DENSITY_SAMPLE", 100)
    g = A.density(16)
    assert abs(g.sum() - A.nnz) <= A.nnz * 0.05 + 100    # a strided sample, scaled back


def test_format_matrix_html(A):
    html = pyspmv.convert(A, "sell", c=8, sigma=64)._repr_html_()
    for s in ("sell", "c=8", "sigma=64", "900 &times; 900", "bytes", "padding"):
        assert s in html


def test_dataset_html():
    ds = pyspmv.datasets.load("cpu", dtype="float64")
    html = ds._repr_html_()
    for s in ("AMD EPYC", "float64", f"{ds.groups.nunique():,}", f"{ds.X['config'].nunique():,}", f"{len(ds.X):,}",
              "median_ms", "<table"):
        assert s in html


def test_ranking_behaves_as_the_list_it_was(A):
    r = pyspmv.rank(A, device="cpu")
    pairs = list(r)
    assert isinstance(r, list) and isinstance(r, pyspmv.Ranking)
    assert r == pairs and pairs == r and len(r) == len(pairs) and r[0] == pairs[0]
    cid, ms = r[0]
    assert r.best == cid and isinstance(ms, float)
    assert dict(r)[cid] == ms and r[:3] == pairs[:3]
    df = r.to_frame()
    assert list(df.columns) == ["config", "predicted_ms"] and df.index[0] == 1 and len(df) == len(r)
    html = r._repr_html_()
    assert cid in html and "predicted_us" in html and f"{ms * 1e3:.3f}" in html and "cpu" in html
    assert pyspmv.Ranking().best is None


def test_plot_helpers_return_axes(A, plt):
    from matplotlib.axes import Axes
    df = pyspmv.benchmark(A, ["cpu/csr/rows", "cpu/ell", "cpu/dia"], repeats=3, warmup=1, budget_s=0.01)
    r = pyspmv.rank(A, device="cpu")
    per = pd.DataFrame({"bucket": ["<5%", "<5%", ">20%"]})
    axes = [pyspmv.plot.spy(A), pyspmv.plot.benchmark(df), pyspmv.plot.ranking(r, measured=df),
            pyspmv.plot.predicted_vs_measured([1.0, 2.0, 3.0], [1.1, 2.0, 2.5], hue=["a", "b", "a"]),
            pyspmv.plot.ranking_quality(per), pyspmv.plot.ranking_quality({"m1": per, "m2": per})]
    assert all(isinstance(ax, Axes) for ax in axes)
    _, ax = plt.subplots()
    assert pyspmv.plot.spy(A, ax=ax) is ax
    with pytest.raises(ValueError, match="same length"):
        pyspmv.plot.predicted_vs_measured([1.0], [1.0, 2.0])


def _overlap(a, b) -> bool:
    return a.x0 < b.x1 and b.x0 < a.x1 and a.y0 < b.y1 and b.y0 < a.y1


def test_plot_legends_clear_the_labels_and_points(A, plt):
    """Issue 35: the ranking-quality legend covered the x label (notebooks 03-06), the ranking legend a measured
    point and the predicted bars were invisible beside 10x longer measured times (notebook 01)."""
    per = pd.DataFrame({"bucket": ["<5%", "5-20%", ">20%"]})
    r = pyspmv.Ranking([("cpu/csr/rows", 0.01), ("cpu/ell", 0.02), ("cpu/coo", 0.03)], device="cpu")
    measured = {"cpu/csr/rows": 0.2, "cpu/ell": 0.15, "cpu/coo": 1.8}
    for ax in (pyspmv.plot.ranking_quality(per), pyspmv.plot.ranking_quality({"m1": per, "m2": per, "m3": per}),
               pyspmv.plot.ranking(r, measured=measured)):
        ax.figure.canvas.draw()
        renderer = ax.figure.canvas.get_renderer()
        legend = ax.get_legend().get_window_extent(renderer)
        covered = [ax.xaxis.label, *ax.get_xticklabels(), *ax.get_yticklabels()]
        assert not any(_overlap(legend, t.get_window_extent(renderer)) for t in covered if t.get_text())
        assert not _overlap(legend, ax.get_window_extent(renderer))          # beside the axes, over no data
    assert ax.get_xscale() == "log" and "log scale" in ax.get_xlabel()      # 0.01 to 1.8 ms
    assert pyspmv.plot.ranking(r, measured={"cpu/csr/rows": 0.012}).get_xscale() == "linear"
    assert pyspmv.plot.ranking(r, measured=measured, log=False).get_xscale() == "linear"


def test_plot_without_matplotlib_says_how_to_install(A, monkeypatch):
    for name in [m for m in sys.modules if m == "matplotlib" or m.startswith("matplotlib.")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    monkeypatch.setitem(sys.modules, "matplotlib.pyplot", None)
    with pytest.raises(ImportError, match=r"pip install matplotlib.*pyspmv\[plot\]"):
        pyspmv.plot.spy(A)
