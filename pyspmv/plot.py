"""Plotting helpers for notebooks: sparsity, benchmark times, predictions, rankings, ranking quality.

matplotlib is an optional dependency (``pip install 'pyspmv[plot]'``); each helper draws on the
Axes given (or on a new figure) and returns that Axes.
"""
# SPDX-License-Identifier: BSD-3-Clause
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pandas as pd

from .matrices.mmio import as_matrix

__all__ = ["benchmark", "predicted_vs_measured", "ranking", "ranking_quality", "spy"]

#: :func:`ranking` draws its times on a log axis where the largest is more than this many times the smallest.
LOG_SPAN = 10.0
#: The slowdown buckets of pyspmv.evaluate, in order, with the colour each is drawn in.
_BUCKETS = (("<5%", "within 5 %", "#2a9d8f"), ("5-20%", "5-20 %", "#e9c46a"), (">20%", "beyond 20 %", "#e76f51"))


def _pyplot() -> Any:
    try:
        import matplotlib.pyplot as plt
    except ImportError as exc:
        raise ImportError("pyspmv.plot needs matplotlib, which is not installed: "
                          "pip install matplotlib (or pip install 'pyspmv[plot]').") from exc
    return plt


def _axes(ax: Any, size: tuple[float, float]) -> Any:
    plt = _pyplot()
    if ax is None:
        _, ax = plt.subplots(figsize=size, layout="constrained")
    return ax


def spy(A: Any, ax: Any = None, bins: int = 256, title: str | None = None) -> Any:
    """The sparsity picture of ``A``: stored entries per cell of a ``bins`` x ``bins`` grid (log shade).

    ``A``: a Matrix, scipy.sparse matrix or Matrix Market path. Cheap on any size (see
    :meth:`pyspmv.Matrix.density`). Returns the Axes.
    """
    M = as_matrix(A)
    ax = _axes(ax, (4.0, 4.0))
    grid = M.density(bins)
    shown = np.ma.masked_equal(grid, 0.0)
    from matplotlib.colors import LogNorm
    im = ax.imshow(shown, cmap="Blues", norm=LogNorm(vmin=max(shown.min(), 1e-12), vmax=max(shown.max(), 1.0)),
                   extent=(0, M.ncols, M.nrows, 0), interpolation="nearest", aspect="equal")
    ax.figure.colorbar(im, ax=ax, shrink=0.7, label="entries per cell")
    ax.set_title(title if title is not None else f"{M.name or 'matrix'}: {M.nrows:,} x {M.ncols:,}, {M.nnz:,} entries")
    ax.set_xlabel("column")
    ax.set_ylabel("row")
    return ax


def benchmark(df: pd.DataFrame, ax: Any = None, top: int | None = None, title: str | None = None) -> Any:
    """Median time per configuration of a :func:`pyspmv.benchmark` table (rows with status ``ok``),
    fastest at the top, with the q25-q75 band as error bars; ``top`` keeps the fastest ``top``."""
    ok = df[df["status"] == "ok"] if "status" in df.columns else df
    ok = ok.sort_values("median_ms")
    if top is not None:
        ok = ok.head(top)
    ax = _axes(ax, (6.0, 0.6 + 0.22 * max(len(ok), 1)))
    y = np.arange(len(ok))
    med = ok["median_ms"].to_numpy(dtype=np.float64)
    err = None
    if {"q25_ms", "q75_ms"} <= set(ok.columns):
        err = np.vstack([med - ok["q25_ms"].to_numpy(dtype=np.float64), ok["q75_ms"].to_numpy(dtype=np.float64) - med])
        err = np.clip(err, 0.0, None)
    ax.barh(y, med, xerr=err, color="#457b9d", ecolor="#1d3557", capsize=2)
    ax.set_yticks(y, ok["config"].astype(str).tolist(), fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("median ms per product (bars: q25-q75)")
    if title is not None:
        ax.set_title(title)
    return ax


def predicted_vs_measured(pred: Any, meas: Any, ax: Any = None, hue: Any = None, title: str | None = None,
                          band: float = 0.2) -> Any:
    """Predicted against measured runtimes on log-log axes, with the diagonal and a +/- ``band``
    relative band; ``hue`` (e.g. the format of each row) colours the points by category."""
    p = np.asarray(pred, dtype=np.float64)
    m = np.asarray(meas, dtype=np.float64)
    if p.shape != m.shape:
        raise ValueError(f"The 'pred' and 'meas' parameters of predicted_vs_measured() must have the same length. "
                         f"Got {p.shape} and {m.shape} instead.")
    ok = np.isfinite(p) & np.isfinite(m) & (p > 0) & (m > 0)
    ax = _axes(ax, (4.5, 4.5))
    if hue is None:
        ax.scatter(m[ok], p[ok], s=4, alpha=0.4, color="#457b9d", linewidths=0)
    else:
        h = np.asarray(hue).astype(str)
        for k in sorted(set(h[ok])):
            sel = ok & (h == k)
            ax.scatter(m[sel], p[sel], s=4, alpha=0.5, label=k, linewidths=0)
        ax.legend(fontsize=7, markerscale=3, ncols=2)
    if ok.any():
        lo, hi = min(m[ok].min(), p[ok].min()), max(m[ok].max(), p[ok].max())
        line = np.array([lo, hi])
        ax.plot(line, line, color="k", lw=1)
        ax.fill_between(line, line * (1 - band), line * (1 + band), color="k", alpha=0.08, lw=0)
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("measured ms")
    ax.set_ylabel("predicted ms")
    if title is not None:
        ax.set_title(title)
    return ax


def ranking(r: Any, ax: Any = None, top: int = 20, measured: Any = None, title: str | None = None,
            log: bool | None = None) -> Any:
    """The ``top`` first configurations of a :func:`pyspmv.rank` result as bars of predicted time
    (configurations that cannot serve the matrix are left out); ``measured`` (a mapping or Series
    config -> ms, or a :func:`pyspmv.benchmark` table) adds the measured times as points. ``log``: a
    logarithmic time axis; None (default) where the times drawn span more than a factor of
    :data:`LOG_SPAN`, so that short bars stay visible beside long ones. The legend sits right of the axes."""
    pairs = [(c, float(v)) for c, v in r if np.isfinite(v)][:top]
    ax = _axes(ax, (6.0, 0.6 + 0.22 * max(len(pairs), 1)))
    y = np.arange(len(pairs))
    score = getattr(r, "score", "predicted_ms")
    shown = [v for _, v in pairs]
    ax.barh(y, shown, color="#a8dadc", label=score.replace("_", " "))
    if measured is not None:
        if isinstance(measured, pd.DataFrame):
            ok = measured[measured["status"] == "ok"] if "status" in measured.columns else measured
            measured = ok.set_index("config")["median_ms"]
        meas = dict(measured.items()) if isinstance(measured, Mapping | pd.Series) else dict(measured)
        pts = [(i, float(meas[c])) for i, (c, _) in enumerate(pairs) if c in meas]
        if pts:
            ax.scatter([v for _, v in pts], [i for i, _ in pts], color="#e63946", s=14, zorder=3, label="measured ms")
            shown += [v for _, v in pts]
    pos = [v for v in shown if np.isfinite(v) and v > 0]
    if log is None:
        log = score == "predicted_ms" and bool(pos) and max(pos) > LOG_SPAN * min(pos)
    if log and pos:
        ax.set_xscale("log")
        ax.set_xlim(min(pos) / 2, max(pos) * 2)          # bars start at the left edge
    ax.set_yticks(y, [c for c, _ in pairs], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel(("ms per product" + (" (log scale)" if log else "")) if score == "predicted_ms"
                  else "score (lower is better)")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)
    if title is not None:
        ax.set_title(title)
    return ax


def _bucket_shares(e: Any) -> list[float]:
    per = e.per_matrix if hasattr(e, "per_matrix") else e
    if isinstance(per, pd.DataFrame) and "bucket" in per.columns:
        return [float((per["bucket"] == b).mean()) if len(per) else np.nan for b, _, _ in _BUCKETS]
    s = e.summary if hasattr(e, "summary") else e
    return [float(s.get(f"within{b}", np.nan)) for b, _, _ in _BUCKETS]


def ranking_quality(evaluation: Any, ax: Any = None, title: str | None = None) -> Any:
    """Shares of test matrices whose pick is within 5 %, 5-20 % and beyond 20 % of the measured best,
    as stacked bars: one :class:`pyspmv.evaluate.Evaluation` (or its ``per_matrix`` table or
    ``summary``), or a mapping name -> one of those (one bar each)."""
    items = dict(evaluation) if isinstance(evaluation, Mapping) and not _is_summary(evaluation) \
        else {"model": evaluation}
    shares = np.array([_bucket_shares(e) for e in items.values()], dtype=np.float64)
    ax = _axes(ax, (6.0, max(1.4, 0.8 + 0.35 * len(items))))   # the legend's three entries fit beside one bar
    y = np.arange(len(items))
    left = np.zeros(len(items))
    for j, (_, label, colour) in enumerate(_BUCKETS):
        ax.barh(y, shares[:, j], left=left, color=colour, label=label)
        left += np.nan_to_num(shares[:, j])
    ax.set_yticks(y, list(items), fontsize=8)
    ax.invert_yaxis()
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of test matrices: pick against the measured best")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False)  # clear of the labels
    if title is not None:
        ax.set_title(title)
    return ax


def _is_summary(d: Mapping) -> bool:
    return any(str(k).startswith("within") for k in d)
